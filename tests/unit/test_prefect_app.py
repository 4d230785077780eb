"""The local Prefect server's wrapper: a write Prefect answers 503 (SQLite busy) is run again with its body, as
Prefect's own client would, and the browser sees the answer that is not busy; reads pass through untouched.

The application behind it is an ASGI app that answers as Prefect's does when SQLite is busy: its exception
handler sends 503 and then raises the error for the server to log.
"""

from __future__ import annotations

import asyncio

import pytest

from cli.prefect_app import RetryWhenBusy, own_origins, server_environment


class BusyThenFine:
    """Answers 503 (then raises, as Prefect's handler does) ``busy`` times, then 201 with the body it received."""

    def __init__(self, busy: int):
        self.busy, self.bodies = busy, []

    async def __call__(self, scope, receive, send):
        message = await receive()
        self.bodies.append(message["body"])
        if len(self.bodies) <= self.busy:
            await send({"type": "http.response.start", "status": 503, "headers": []})
            await send({"type": "http.response.body", "body": b'{"exception_message": "Service Unavailable"}'})
            raise RuntimeError("(sqlite3.OperationalError) database is locked")
        await send({"type": "http.response.start", "status": 201, "headers": []})
        await send({"type": "http.response.body", "body": message["body"]})


def call(app, method: str, body: bytes) -> tuple[list[dict], BaseException | None]:
    chunks = [{"type": "http.request", "body": body[:3], "more_body": True},
              {"type": "http.request", "body": body[3:], "more_body": False}]
    sent: list[dict] = []

    async def receive():
        return chunks.pop(0) if chunks else {"type": "http.disconnect"}

    async def send(message):
        sent.append(message)

    try:
        asyncio.run(app({"type": "http", "method": method, "path": "/api/variables/"}, receive, send))
    except RuntimeError as error:
        return sent, error
    return sent, None


def test_a_write_answered_busy_is_run_again_with_its_body_until_it_is_not():
    inner = BusyThenFine(busy=2)
    sent, raised = call(RetryWhenBusy(inner, pause_s=0), "POST", b'{"name": "x"}')
    assert inner.bodies == [b'{"name": "x"}'] * 3 and raised is None
    assert [m.get("status") for m in sent] == [201, None] and sent[1]["body"] == b'{"name": "x"}'


def test_a_write_still_busy_after_every_attempt_gets_the_503_and_the_error_is_raised_for_the_log():
    inner = BusyThenFine(busy=10)
    sent, raised = call(RetryWhenBusy(inner, attempts=3, pause_s=0), "DELETE", b"")
    assert len(inner.bodies) == 3 and sent[0]["status"] == 503 and "database is locked" in str(raised)


@pytest.mark.parametrize("method", ["GET", "OPTIONS"])
def test_a_read_passes_through_once(method):
    inner = BusyThenFine(busy=1)
    sent, _ = call(RetryWhenBusy(inner, pause_s=0), method, b"abcdef")
    assert inner.bodies == [b"abc"] and sent[0]["status"] == 503  # untouched: the app read what it read


def test_the_server_allows_its_own_origins_only_with_csrf_on():
    assert server_environment(4242) == {
        "PREFECT_SERVER_CORS_ALLOWED_ORIGINS": "http://127.0.0.1:4242,http://localhost:4242",
        "PREFECT_SERVER_CSRF_PROTECTION_ENABLED": "true"}
    assert own_origins(1) == ["http://127.0.0.1:1", "http://localhost:1"]


def test_a_retried_background_task_refused_by_a_locked_sqlite_is_not_logged_but_others_are(tmp_path):
    import logging
    import sqlite3

    import sqlalchemy as sa
    from prefect.settings import PREFECT_SERVER_LOG_RETRYABLE_ERRORS, temporary_settings

    from cli.prefect_app import RetriedLockFilter

    holder = sqlite3.connect(tmp_path / "db.sqlite", isolation_level=None)
    holder.execute("CREATE TABLE t (x INTEGER)")
    holder.execute("BEGIN EXCLUSIVE")  # another writer holds the database
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'db.sqlite'}", connect_args={"timeout": 0})
    with pytest.raises(sa.exc.OperationalError) as locked, engine.begin() as connection:
        connection.exec_driver_sql("INSERT INTO t VALUES (1)")
    assert "database is locked" in str(locked.value)  # SQLite's own refusal, as Prefect's server meets it

    def record(path: str, error: BaseException) -> logging.LogRecord:
        return logging.LogRecord("docket.dependencies", logging.ERROR, path, 120, "↩ [%s] %s",
                                 ("5ms", "mark_deployments_ready(...)"), (type(error), error, None))

    retry, perpetual = "/site-packages/docket/dependencies/_retry.py", "/site-packages/docket/dependencies/_perpetual.py"
    keep = RetriedLockFilter().filter
    assert not keep(record(retry, locked.value))  # retried half a second later: not an error worth a traceback
    assert keep(record(perpetual, locked.value))  # a periodic service's failed pass stays visible
    assert keep(record(retry, ValueError("a bug")))  # any other error of a retried task too
    with temporary_settings(updates={PREFECT_SERVER_LOG_RETRYABLE_ERRORS: True}):
        assert keep(record(retry, locked.value))  # Prefect's setting asks for them: logged
    holder.close()
