"""A new project's Prefect database is a copy of a migrated template: at Prefect's migration head, and served.

The oracle for "migrated" is Alembic's own view of Prefect's migration scripts (the
head revision of the scripts Prefect ships), not anything ``cli.prefect_database``
computes; that the copy serves is checked by a real temporary server answering a
read of the block types it registers at start.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def prefect_heads() -> set[str]:
    """The head revisions of the SQLite migrations Prefect ships (Alembic reading Prefect's scripts)."""
    from alembic.script import ScriptDirectory

    import prefect.server.database as database
    from prefect.server.database.alembic_commands import alembic_config

    config = alembic_config()
    sqlite_scripts = Path(database.__file__).parent / "_migrations" / "versions" / "sqlite"
    config.set_main_option("version_locations", str(sqlite_scripts))
    return set(ScriptDirectory.from_config(config).get_heads())


def revision(path: Path) -> set[str]:
    with sqlite3.connect(path) as database:
        return {row[0] for row in database.execute("select version_num from alembic_version")}


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    for name in ("PREFECT_API_DATABASE_CONNECTION_URL", "PREFECT_SERVER_DATABASE_CONNECTION_URL"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path / "cache"


def test_a_fresh_home_gets_the_migrated_template_and_a_server_serves_it(cache, tmp_path):
    from cli.prefect_database import seed, template_path

    home = tmp_path / "project" / ".prefect"
    assert seed(home) is True
    assert template_path().parent == cache / "polyreason" / "prefect-db"
    assert revision(home / "prefect.db") == revision(template_path()) == prefect_heads()
    script = ("import sys; from pathlib import Path; from cli.prefect_server import start_temporary_server, "
              "stop_temporary_server; start_temporary_server(Path(sys.argv[1])); "
              "from prefect.client.orchestration import get_client\n"
              "with get_client(sync_client=True) as client: print(len(client.read_block_types()))\n"
              "stop_temporary_server()")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API_URL")}
    env.update(PREFECT_HOME=str(home), PYTHONPATH=str(REPO), PREFECT_SERVER_ANALYTICS_ENABLED="false")
    done = subprocess.run([sys.executable, "-c", script, str(home)], env=env, capture_output=True, text=True,
                          timeout=300, cwd=REPO)
    assert done.returncode == 0, done.stderr[-3000:]
    assert int(done.stdout.strip().splitlines()[-1]) > 0  # the server registered its blocks into the copy


def test_an_existing_database_or_a_configured_url_is_left_alone(cache, tmp_path, monkeypatch):
    from cli.prefect_database import seed

    home = tmp_path / "home"
    home.mkdir()
    (home / "prefect.db").write_bytes(b"kept")
    assert seed(home) is False and (home / "prefect.db").read_bytes() == b"kept"
    other = tmp_path / "elsewhere"
    monkeypatch.setenv("PREFECT_API_DATABASE_CONNECTION_URL", "postgresql+asyncpg://team@db/prefect")
    assert seed(other) is False and not other.exists() and not cache.exists()
