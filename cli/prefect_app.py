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
gives the variables both launches set.
"""

from __future__ import annotations

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


def create_app():
    """Prefect's server application (API, UI and services as its settings say) behind Starlette's Host check."""
    from prefect.server.api.server import create_app as prefect_app
    from starlette.middleware.trustedhost import TrustedHostMiddleware

    app = prefect_app()
    app.add_middleware(TrustedHostMiddleware, allowed_hosts=list(LOCAL_HOSTS), www_redirect=False)
    return app
