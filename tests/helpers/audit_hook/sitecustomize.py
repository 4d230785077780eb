"""Records what each Prefect task run of this process touched, without asking the project what it reaches.

Put this folder on ``PYTHONPATH`` and set ``POLYREASON_AUDIT_LOG`` to a directory:
the interpreter imports this file at start-up (``site``'s ``sitecustomize`` hook) and

* ``sys.addaudithook`` sees every ``open`` (the path) and ``import`` (the module
  name) the interpreter performs, and ``subprocess.Popen`` to hand the task's
  name to the processes a task starts (a trainer launched by accelerate);
* a global trace function (``sys.settrace``/``threading.settrace``, call events
  only, no line tracing) sees every function of the project that runs, so a
  module imported earlier by another task still counts for each task that runs it
  (in the audited process only: a child's project code is what it imported, see ``_dump``).

Each event is attributed to the Prefect task run current in its thread (Prefect's
``TaskRunContext``, a context variable), or in a child process to the task named
by ``POLYREASON_AUDIT_TASK`` (other processes, such as Prefect's temporary server, are
not watched: ``POLYREASON_AUDIT_MAIN`` marks the audited process and is not inherited). At exit the process writes
``<log>/<pid>.json``: per task run, its task name, the files it opened, the
modules it imported, the project files whose code ran, and the ingredients its
cache key recorded (``runtime.cache.policy.code_of`` + ``inputs_read`` of the run's
parameters) for the oracle to compare.
"""

import atexit
import json
import os
import sys
import threading

LOG = os.environ.get("POLYREASON_AUDIT_LOG")
REPO = os.environ.get("POLYREASON_AUDIT_REPO", "")
PACKAGES = ("components", "runtime", "tasks", "flows", "cli")
MAIN = os.environ.pop("POLYREASON_AUDIT_MAIN", None)  # the audited process itself; its servers are not watched

if LOG and REPO and (MAIN or os.environ.get("POLYREASON_AUDIT_TASK")):
    _PREFIXES = tuple(os.path.join(REPO, package) + os.sep for package in PACKAGES)
    _CHILD_TASK = os.environ.get("POLYREASON_AUDIT_TASK")
    _state = threading.local()
    _runs = {}  # run id -> {"task", "opened", "imported", "ran"}
    _params = {}  # run id -> (task object, parameters), for the ingredients at exit

    def _current():
        """(run id, task name, context) of the task run in this thread, or of the task that started this process."""
        context_module = sys.modules.get("prefect.context")
        context_type = getattr(context_module, "TaskRunContext", None)  # None while prefect.context is importing
        if context_type is not None:
            ctx = context_type.get()
            if ctx is not None:
                return str(ctx.task_run.id), ctx.task.name, ctx
        if _CHILD_TASK:
            return f"child-{os.getpid()}", _CHILD_TASK, None
        return None, None, None

    def _record(kind, value):
        if getattr(_state, "busy", False):
            return
        _state.busy = True
        try:
            run_id, name, ctx = _current()
            if run_id is None:
                return
            entry = _runs.get(run_id)
            if entry is None:
                entry = _runs[run_id] = {"task": name, "opened": set(), "imported": set(), "ran": set(),
                                         "child": ctx is None}
                if ctx is not None:
                    _params[run_id] = (ctx.task, ctx.parameters)
            entry[kind].add(value)
        finally:
            _state.busy = False

    def _hook(event, args):
        if event == "open":
            path = args[0]
            if isinstance(path, (str, bytes, os.PathLike)) and not isinstance(path, int):
                path = os.fsdecode(path)
                mode = args[1] if len(args) > 1 and isinstance(args[1], str) else "r"
                if "w" not in mode and "a" not in mode and "x" not in mode:
                    _record("opened", os.path.abspath(path))
        elif event == "import":
            _record("imported", args[0])
        elif event == "subprocess.Popen":
            if getattr(_state, "busy", False):
                return
            run_id, name, _ = _current()
            if name is not None:
                env = args[3]
                target = os.environ if env is None else env
                if isinstance(target, dict) or env is None:
                    target["POLYREASON_AUDIT_TASK"] = name

    def _tracer(frame, event, arg):
        filename = frame.f_code.co_filename
        if filename.startswith(_PREFIXES):
            _record("ran", filename)
        return None

    def _ingredients(ingredients):
        """What each cached task run's key covered; a key that names no files (an older project) covers none."""
        try:
            from runtime.cache import policy as caching
        except Exception as error:  # the oracle reports runs without ingredients as failures
            ingredients["error"] = repr(error)
            return
        read = getattr(caching, "inputs_read", lambda parameters: {"files": {}, "revisions": {}})
        for run_id, (task, parameters) in _params.items():
            if not isinstance(task.cache_policy, caching.CheckedArtifacts):
                continue  # not cached: no key to check
            try:
                code = caching.code_of(task)
                ingredients[run_id] = {"modules": sorted(code.modules), "data": sorted(getattr(code, "data", {})),
                                       "module": task.fn.__module__, **read(parameters)}
            except Exception as error:
                ingredients[run_id] = {"error": repr(error)}

    def _dump():
        sys.settrace(None)
        threading.settrace(None)
        main_file = getattr(sys.modules.get("__main__"), "__file__", None)
        if _CHILD_TASK and main_file and os.path.abspath(main_file).startswith(_PREFIXES):
            _record("ran", os.path.abspath(main_file))  # ``-m package``'s entry runs without an import event
        _state.busy = True
        ingredients = {}
        if _params:
            _ingredients(ingredients)
        out = {run_id: {key: sorted(value) if isinstance(value, set) else value for key, value in entry.items()}
               for run_id, entry in _runs.items()}
        for run_id, entry in out.items():
            entry["key"] = ingredients.get(run_id)
            entry["cached"] = run_id in ingredients or entry["child"]
        with open(os.path.join(LOG, f"{os.getpid()}.json"), "w", encoding="utf-8") as handle:
            json.dump({"runs": out, "error": ingredients.get("error")}, handle)

    sys.addaudithook(_hook)
    if not _CHILD_TASK:
        # A child a task started is a fresh interpreter whose every event belongs to that task, so each project
        # module whose code runs in it was loaded in it (an ``import`` event, recorded) but its ``-m`` entry
        # (recorded at exit): the tracer, which doubles a trainer's Python time, would add nothing there
        sys.settrace(_tracer)
        threading.settrace(_tracer)
    atexit.register(_dump)
