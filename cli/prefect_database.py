"""A fresh project's Prefect database starts as a copy of one already migrated, not as ~100 migrations.

A Prefect server (a command's temporary one, or ``polyreason up``'s) on an empty
SQLite file first runs every Alembic migration of its version: about 4.5 s of CPU
of the ~10 s a first start takes on a 2-core machine, paid again by every new
project and every test that starts one. The schema those migrations leave depends
only on the installed Prefect, so ``seed`` builds it once per Prefect version (Prefect's
own ``create_db``, in a child process pointed at a scratch file), keeps it in the
user's cache (``$XDG_CACHE_HOME/polyreason/prefect-db/``), and copies it to where a
project's database will be when that file does not exist yet. The server then finds
its schema at head and runs only the checks it always runs (blocks, services).

Only the default SQLite database under ``PREFECT_HOME`` is seeded: a connection URL
set by the user (a shared Postgres) is left alone. A template that cannot be built or
copied costs nothing but the time: the server migrates as before. The copy is written
beside its target and renamed into place, and the template likewise, so a reader never
sees half a file.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

URL_VARIABLES = ("PREFECT_API_DATABASE_CONNECTION_URL", "PREFECT_SERVER_DATABASE_CONNECTION_URL")
BUILD_TIMEOUT_S = 300


def template_path() -> Path:
    """Where this Prefect version's migrated database is kept."""
    import prefect

    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "polyreason" / "prefect-db" / f"prefect-{prefect.__version__}.db"


def default_database(prefect_home: Path) -> Path | None:
    """The SQLite file a server started with this ``PREFECT_HOME`` will use, or ``None`` when a URL is set."""
    if any(os.environ.get(name) for name in URL_VARIABLES):
        return None
    return Path(prefect_home) / "prefect.db"


def seed(prefect_home: Path) -> bool:
    """Copy the migrated template to the home's database when it does not exist yet; whether it did."""
    target = default_database(prefect_home)
    if target is None or target.exists():
        return False
    template = template_path()
    if not template.is_file() and not build_template(template):
        return False
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(template, partial)
        os.replace(partial, target)
    except OSError:
        partial.unlink(missing_ok=True)
        return False
    return True


def build_template(template: Path) -> bool:
    """Migrate a scratch SQLite file with Prefect's ``create_db`` in a child process; rename it into place."""
    template.parent.mkdir(parents=True, exist_ok=True)
    scratch = template.with_name(f".{template.name}.{os.getpid()}.partial")
    scratch.unlink(missing_ok=True)
    env = {**os.environ, "PREFECT_API_DATABASE_CONNECTION_URL": f"sqlite+aiosqlite:///{scratch}"}
    env.pop("PREFECT_SERVER_DATABASE_CONNECTION_URL", None)
    try:
        done = subprocess.run([sys.executable, "-m", "cli.prefect_database"], env=env, capture_output=True,
                              text=True, timeout=BUILD_TIMEOUT_S)
        if done.returncode != 0 or not scratch.is_file():
            return False
        with closing(sqlite3.connect(scratch)) as database:  # fold any write-ahead log into the file itself
            database.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        os.replace(scratch, template)
        return True
    except (OSError, sqlite3.Error, subprocess.SubprocessError):
        return False
    finally:
        for leftover in (scratch, scratch.with_name(scratch.name + "-wal"), scratch.with_name(scratch.name + "-shm")):
            leftover.unlink(missing_ok=True)


def _migrate() -> None:
    """Run Prefect's own schema creation on ``PREFECT_API_DATABASE_CONNECTION_URL``; close it (no WAL left)."""
    import asyncio

    from prefect.server.database import provide_database_interface

    async def create() -> None:
        database = provide_database_interface()
        await database.create_db()
        await (await database.engine()).dispose()

    asyncio.run(create())


if __name__ == "__main__":
    _migrate()
