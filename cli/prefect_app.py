"""The local Prefect server, closed to other web pages: its own origin only, its own Host only, CSRF on.

A Prefect server on 127.0.0.1 is reachable from every page the user's browser
opens. Out of the box Prefect 3.7 answers a CORS preflight from any origin with
``access-control-allow-origin: *`` and needs no token for writes, so a page that
finds the port can read flow-run parameters and create objects. Both servers this
project starts (``polyreason up``'s and a command's temporary one) are therefore
run with:

* Prefect's own settings: ``PREFECT_SERVER_CORS_ALLOWED_ORIGINS`` set to the
  server's own origin (``http://127.0.0.1:PORT`` and ``http://localhost:PORT``,
  where its UI is served), ``PREFECT_SERVER_CSRF_PROTECTION_ENABLED`` on (Prefect's
  clients and its UI fetch a token from ``/api/csrf-token`` before a write; a
  cross-origin page cannot send the token header, since its preflight is refused);
* a Host check, which Prefect has no setting for: a page on ``evil.example``
  whose DNS name is rebound to 127.0.0.1 is same-origin for the browser, so
  CORS does not stop it, but its requests carry ``Host: evil.example``.
  ``create_app`` wraps Prefect's own application (``prefect.server.api.server.create_app``,
  which ``prefect server start`` runs too) in Starlette's ``TrustedHostMiddleware``,
  which answers any other Host with 400.

``uvicorn --factory cli.prefect_app:create_app`` serves it; ``server_environment``
gives the variables both launches set. A write Prefect answers 503 (SQLite busy) is
run again before the browser sees it (``RetryWhenBusy``): Prefect's UI, unlike its
Python client, does not retry. A background task's attempt that SQLite refused and pydocket retries is not
logged as an error with its traceback (``RetriedLockFilter``), as Prefect means for such errors.
"""

from __future__ import annotations

import logging

LOCAL_HOSTS = ("127.0.0.1", "localhost")  # the servers bind 127.0.0.1 only


def own_origins(port: int) -> list[str]:
    """The origins a browser shows the server's UI under.

    >>> own_origins(4200)
    ['http://127.0.0.1:4200', 'http://localhost:4200']
    """
    return [f"http://{host}:{port}" for host in LOCAL_HOSTS]


def server_environment(port: int) -> dict[str, str]:
    """Prefect's settings that close a local server on ``port`` to other origins (CORS, CSRF)."""
    return {"PREFECT_SERVER_CORS_ALLOWED_ORIGINS": ",".join(own_origins(port)),
            "PREFECT_SERVER_CSRF_PROTECTION_ENABLED": "true"}


def uvicorn_command(python: str, port: int, log_level: str) -> list[str]:
    """The command that serves Prefect's application behind the Host check on 127.0.0.1:``port``."""
    return [python, "-m", "uvicorn", "--factory", "cli.prefect_app:create_app", "--host", "127.0.0.1",
            "--port", str(port), "--log-level", log_level, "--lifespan", "on"]


class RetryWhenBusy:
    """A write Prefect answered 503 is run again, as Prefect's own Python client would, before the browser sees it.

    Prefect answers 503 ("errors clients can retry on") when SQLite was busy: a deferred transaction whose
    snapshot another writer changed is rolled back at once. Its Python client retries those; its UI does not, and
    with CSRF protection on (a token written for each client, checked on each write) the Run form's
    ``create_flow_run`` met one often enough under load to fail the form. Here a POST, PUT, PATCH or DELETE
    is replayed with its body up to ``attempts`` times while the answer is 503, with a short pause; its answer
    is held in memory until then (Prefect's answers are JSON documents). Starlette has no such middleware:
    written by hand.
    """

    METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})

    def __init__(self, app, attempts: int = 4, pause_s: float = 0.2):
        self.app, self.attempts, self.pause_s = app, attempts, pause_s

    async def __call__(self, scope, receive, send) -> None:
        import asyncio

        if scope["type"] != "http" or scope["method"] not in self.METHODS:
            await self.app(scope, receive, send)
            return
        body = await _whole_body(receive)
        for attempt in range(self.attempts):
            answer: list[dict] = []
            try:  # Prefect's handler sends the 503 and then raises the error, for the server to log it
                await self.app(dict(scope), _replaying(body, receive), _keeping(answer))
                raised = None
            except Exception as error:  # noqa: BLE001 - raised again below, after its answer is sent
                raised = error
            busy = any(m["type"] == "http.response.start" and m["status"] == 503 for m in answer)
            if not busy or attempt == self.attempts - 1:
                break
            await asyncio.sleep(self.pause_s * 2**attempt)
        for message in answer:
            await send(message)
        if raised is not None:
            raise raised


async def _whole_body(receive) -> bytes:
    chunks, more = [], True
    while more:
        message = await receive()
        chunks.append(message.get("body", b""))
        more = message.get("more_body", False) and message["type"] == "http.request"
    return b"".join(chunks)


def _replaying(body: bytes, receive):
    """A ``receive`` that gives ``body`` once, then waits on the client's own (a disconnect)."""
    given = []

    async def replay() -> dict:
        if not given:
            given.append(True)
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def _keeping(answer: list[dict]):
    async def keep(message: dict) -> None:
        answer.append(message)

    return keep


class RetriedLockFilter(logging.Filter):
    """Leaves out pydocket's record of a background task it retries because SQLite refused a write.

    Each worker's poll makes Prefect 3.7 run ``mark_deployments_ready`` in the background, which reads in a
    deferred SQLite transaction and then writes; when another write committed in between, SQLite refuses it at
    once (no busy timeout waits it out) and pydocket's ``Retry`` runs it again half a second later, logging the
    attempt as an error with its traceback (``↩``) on ``docket.dependencies``: 296 of the 304 ``database is
    locked`` tracebacks of one cockpit test. Prefect drops such retryable errors from its log unless
    ``PREFECT_SERVER_LOG_RETRYABLE_ERRORS`` is set, but on uvicorn's and ``docket.worker``'s loggers, not on
    this one. Only records of the ``Retry`` dependency (module ``_retry``) with SQLite's busy error are left
    out, as Prefect's setting says; a task whose attempts run out is still logged (by the worker), as is a
    periodic service's failed pass (``Perpetual``, same logger, another module).
    """

    def filter(self, record: logging.LogRecord) -> bool:
        from prefect.settings import get_current_settings

        if record.module != "_retry" or not sqlite_busy(record.exc_info[1] if record.exc_info else None):
            return True
        return get_current_settings().server.log_retryable_errors


def sqlite_busy(error: BaseException | None) -> bool:
    """Whether ``error`` is SQLAlchemy's wrapper of SQLite's "database is locked" (busy) error."""
    import sqlite3

    import sqlalchemy.exc

    cause = getattr(error, "orig", None)
    return isinstance(error, sqlalchemy.exc.OperationalError) and isinstance(cause, sqlite3.OperationalError) and (
        getattr(cause, "sqlite_errorname", None) in {"SQLITE_BUSY", "SQLITE_BUSY_SNAPSHOT"}
        or "database is locked" in str(cause))


def create_app():
    """Prefect's server application (API, UI and services as its settings say) behind Starlette's Host check,
    its writes run again while SQLite is busy (``RetryWhenBusy``)."""
    from prefect.server.api.server import create_app as prefect_app
    from starlette.middleware.trustedhost import TrustedHostMiddleware

    app = prefect_app()
    logging.getLogger("docket.dependencies").addFilter(RetriedLockFilter())
    app.add_middleware(RetryWhenBusy)
    app.add_middleware(TrustedHostMiddleware, allowed_hosts=list(LOCAL_HOSTS), www_redirect=False)
    return app
