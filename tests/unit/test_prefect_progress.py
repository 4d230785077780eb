"""Which progress updates reach a Prefect run's logs: each line's first and last, one per interval between."""

from __future__ import annotations

from runtime.flow_runs.progress import PrefectProgressHandler


def test_updates_are_passed_on_first_last_and_once_per_interval():
    now = [0.0]
    handler = PrefectProgressHandler(interval_s=10, clock=lambda: now[0])
    passed = []
    for second, final in [(0, False), (3, False), (9, False), (10, False), (15, False), (21, False), (22, True)]:
        now[0] = second
        if handler.due("generate base", final):
            passed.append(second)
    assert passed == [0, 10, 21, 22]  # 3 and 9 within 10 s of 0, 15 within 10 s of 10; the final always


def test_each_line_has_its_own_interval_and_a_final_line_restarts_it():
    now = [0.0]
    handler = PrefectProgressHandler(interval_s=10, clock=lambda: now[0])
    assert handler.due("sft", False) and handler.due("generate base", False)  # two lines, each its first
    now[0] = 1
    assert handler.due("sft", True)  # done
    assert handler.due("sft", False)  # a new run of the line starts over
    assert not handler.due("generate base", False)


def test_outside_a_prefect_run_nothing_is_logged(caplog):
    import logging

    handler = PrefectProgressHandler(interval_s=0)
    record = logging.LogRecord("polyreason.progress", logging.INFO, __file__, 1, "sft: step 1/2", None, None)
    handler.emit(record)  # no run context: a no-op, no error
    assert "sft: step 1/2" not in caplog.text


def test_a_refusal_drops_the_engine_traceback_of_its_own_failed_state_only():
    import logging

    from prefect.exceptions import FailedRun

    from runtime.flow_runs.plans import RefusalShown

    refusal = RefusalShown("profiles/x.yaml: 1 invalid setting(s)\n  - grpo.learning_rat: neither a field")

    def record(error):
        return logging.LogRecord("prefect.flow_runs", logging.ERROR, __file__, 1,
                                 "Engine execution exited with unexpected exception", None,
                                 (type(error), error, None))

    assert not refusal.filter(record(FailedRun(refusal.message)))  # Prefect repeating the refusal: dropped
    assert refusal.filter(record(FailedRun("another run failed")))  # any other failure keeps its traceback
    assert refusal.filter(record(RuntimeError(refusal.message)))


def test_prefect_made_up_run_names_are_replaced_and_typed_ones_stay():
    from runtime.flow_runs.names import is_generated

    assert [is_generated(n) for n in ("rare-scallop", "epsilon4-enif", "rho56-delos", "xi-aso")] == [True] * 4
    assert [is_generated(n) for n in ("lr 2e-5", "baseline-run-2", "My-Run", "sweep-lr2e5-b4", None)] == [False] * 5
