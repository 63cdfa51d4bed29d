"""Start-up checks of the long-running and loading commands (``serve``, ``worker``, ``db load``).

Before a command binds a port, forks or reads a log, `require_schemas` checks that its
schemas are there and migrated (`notify_pg.db.migrate.schema_gap`): a missing schema, one not
migrated or behind the package, or a table gone is one line on stderr naming the schema and
the command that fixes it, and exit code 2 (`BadInput`), never a traceback, and never a
server that starts and then answers every request ``503``.
"""

from __future__ import annotations

import shlex
from typing import Final

from notify_cli.options import BadInput

__all__ = ["REFERENCE_HOST_PACKAGE", "require_schemas"]

#: The package whose migrations make the reference host's tables.
REFERENCE_HOST_PACKAGE: Final = "notify_reference_host"
#: The library's schema when ``--schema`` is not given.
_DEFAULT_SCHEMA: Final = "notify"


def require_schemas(
    dsn: str,
    schema: str,
    *,
    host_schema: str | None = None,
    host_migrated: bool = True,
    command: str,
) -> None:
    """Raise `BadInput` unless ``schema`` (and ``host_schema``) can be used as they stand.

    Args:
        dsn: the database (one short connection, closed here).
        schema: the library's schema (``--schema``).
        host_schema: the reference host's schema (``--host-schema``); ``None``: not checked.
        host_migrated: check the host schema's migrations and tables (the reference host's);
            ``False`` (a host's own ports, ``--inbox-host``): only that it exists.
        command: the command's name for the message (``serve``, ``worker``, ``db load``).

    Raises:
        BadInput: the database cannot be reached, or a schema is not ready (one line).
    """
    import psycopg

    from notify_core.values.errors import NotifyError
    from notify_pg.db.errors import translate
    from notify_pg.db.migrate import schema_gap

    try:
        with psycopg.connect(dsn, autocommit=True, connect_timeout=10) as conn:
            gap, fix = schema_gap(conn, schema), _migrate_command(schema)
            if gap is None and host_schema is not None:
                if host_migrated:
                    gap = schema_gap(conn, host_schema, package=REFERENCE_HOST_PACKAGE)
                    fix = _migrate_command(schema, host_schema)
                else:  # a host's own tables: their migrations are the host's
                    gap = schema_gap(conn, host_schema)
                    gap = gap if gap is not None and gap.kind == "missing" else None
                    fix = "create it with the host's tables"
    except psycopg.Error as exc:
        raise BadInput(f"--dsn: {translate(exc).message}") from None
    except NotifyError as exc:
        raise BadInput(f"--dsn: {exc.message}") from None
    if gap is None:
        return
    if gap.kind == "ahead":
        raise BadInput(f"{command}: {gap.message}: upgrade notify-engine")
    if fix.startswith("notify "):
        fix = f"run `{fix}`"
    raise BadInput(f"{command}: {gap.message}: {fix}")


def _migrate_command(schema: str, host_schema: str | None = None) -> str:
    """The ``notify db migrate`` line that makes ``schema`` (and the host's) ready."""
    words = ["notify", "db", "migrate"]
    if schema != _DEFAULT_SCHEMA:
        words += ["--schema", schema]
    if host_schema is not None:
        words += ["--reference-host", host_schema]
    return shlex.join(words)
