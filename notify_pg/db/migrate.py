"""Numbered SQL migrations with a checksum per applied file.

A migration set is the folder ``migrations`` of a package: files ``NNNN_slug.sql`` applied in
number order inside one schema, each recorded in ``<schema>.schema_migrations`` with the
SHA-256 of its text. `migrate` applies what is missing in one transaction under an advisory
lock, so two runs at once apply each file once; a run on an up-to-date schema changes nothing.
A file whose text differs from the applied one, or an applied number the package does not
ship, is refused with `MigrationError` before anything runs.
"""

from __future__ import annotations

import hashlib
import re
from importlib import resources

import attrs
import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict

from notify_pg.db.errors import MigrationError, translate
from notify_pg.db.seam import Conn, Seam, trusted_sql

__all__ = [
    "DEFAULT_SCHEMA",
    "Migration",
    "SchemaGap",
    "migrate",
    "migrations",
    "render",
    "schema_gap",
]

#: The schema the library owns unless the host names another.
DEFAULT_SCHEMA = "notify"

_CONNECT_TIMEOUT_S = 10
_FILE = re.compile(r"(\d{4})_([a-z0-9_]+)\.sql")
#: A table a migration creates (every shipped migration names it as ``{schema}.NAME``).
_CREATED_TABLE = re.compile(
    r"\bCREATE\s+(?:UNLOGGED\s+)?TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?\{schema\}\.(\w+)", re.IGNORECASE
)


@attrs.frozen(kw_only=True)
class Migration:
    """One numbered migration file.

    Args:
        version: the number of the file (``0001`` is 1).
        name: the file name without ``.sql``.
        text: the SQL text, with ``{schema}`` for the schema name.
        checksum: hex SHA-256 of the UTF-8 text.
    """

    version: int
    name: str
    text: str
    checksum: str


def migrations(package: str = "notify_pg") -> tuple[Migration, ...]:
    """Return the migrations shipped in ``package/migrations``, in number order.

    Raises:
        ValueError: a ``.sql`` file with a malformed name, or two files with one number.
    """
    found: dict[int, Migration] = {}
    for entry in resources.files(package).joinpath("migrations").iterdir():
        if not entry.name.endswith(".sql"):
            continue
        m = _FILE.fullmatch(entry.name)
        if m is None:
            raise ValueError(f"migration file name is not NNNN_slug.sql: {entry.name}")
        version = int(m[1])
        if version in found:
            raise ValueError(f"two migrations numbered {version}")
        text = entry.read_text("utf-8")
        found[version] = Migration(
            version=version,
            name=entry.name.removesuffix(".sql"),
            text=text,
            checksum=hashlib.sha256(text.encode()).hexdigest(),
        )
    return tuple(found[v] for v in sorted(found))


def render(text: str, schema: str) -> sql.Composed:
    """Return a shipped SQL text with ``{schema}`` replaced by the quoted schema identifier."""
    return sql.SQL(trusted_sql(text)).format(schema=sql.Identifier(schema))


def migrate(
    conn_or_dsn: Conn | str, schema: str = DEFAULT_SCHEMA, *, package: str = "notify_pg"
) -> list[str]:
    """Apply the missing migrations of ``package`` to ``schema`` and return their names.

    Args:
        conn_or_dsn: an open connection (the migrations run in a transaction of it, or in a
            savepoint when the caller has one open) or a libpq connection string.
        schema: the schema to create and migrate (any name; quoted as an identifier).
        package: the package whose ``migrations`` folder to apply (the reference host ships
            its own).

    Returns:
        The names of the files applied now, in order; empty when the schema was up to date.

    Raises:
        MigrationError: an applied file changed (``migration_changed``) or the database has a
            migration this package does not ship (``migration_unknown``); nothing is applied.
        StorageError: PostgreSQL is unreachable or refused a statement.

    Example:
        >>> migrate("postgresql://localhost/app", schema="notify")  # doctest: +SKIP
        ['0001_notification_preferences', '0002_quiet_hours', '0003_event_log']
    """
    if isinstance(conn_or_dsn, str):
        try:
            # A wrong host must not hang a deploy: give up after a while unless the DSN says.
            if "connect_timeout" in conninfo_to_dict(conn_or_dsn):
                conn = psycopg.connect(conn_or_dsn)
            else:
                conn = psycopg.connect(conn_or_dsn, connect_timeout=_CONNECT_TIMEOUT_S)
        except psycopg.Error as exc:
            raise translate(exc) from exc
        with conn:
            return _migrate(conn, schema, package)
    return _migrate(conn_or_dsn, schema, package)


def _migrate(conn: Conn, schema: str, package: str) -> list[str]:
    seam = Seam("notify_pg", schema)
    shipped = migrations(package)
    by_version = {m.version: m for m in shipped}
    applied_now: list[str] = []
    with seam.transaction(conn):
        seam.one(conn, "lock_migrations", {"schema": schema})
        seam.run(conn, "create_schema")
        seam.run(conn, "create_migrations_table")
        applied = seam.all(conn, "applied_migrations")
        done: set[int] = set()
        for version, name, checksum in applied:
            mine = by_version.get(version)
            if mine is None:
                raise MigrationError(
                    "migration_unknown",
                    f"schema {schema!r} has migration {name} that this package does not ship "
                    "(was it migrated by a newer version?)",
                )
            if mine.checksum != checksum:
                raise MigrationError(
                    "migration_changed",
                    f"migration {mine.name} was changed after it was applied to schema "
                    f"{schema!r} (checksum differs); never edit an applied migration, "
                    "add a new one",
                )
            done.add(version)
        for m in shipped:
            if m.version in done:
                continue
            with seam.translated():
                conn.execute(render(m.text, schema))
            seam.run(
                conn,
                "record_migration",
                {"version": m.version, "name": m.name, "checksum": m.checksum},
            )
            applied_now.append(m.name)
    return applied_now


@attrs.frozen(kw_only=True)
class SchemaGap:
    """What keeps a schema from being used as it stands (`schema_gap`).

    Args:
        schema: the schema checked.
        kind: ``missing`` (no such schema), ``unmigrated`` (no migration applied),
            ``behind`` (migrations the package ships are not applied), ``ahead`` (the
            database has a migration the package does not ship: a newer version migrated
            it), ``missing_table`` (a migration's table is gone).
        detail: one phrase naming what is missing (migrations or tables), or empty.
    """

    schema: str
    kind: str
    detail: str = ""

    @property
    def message(self) -> str:
        """One sentence naming the schema and what is wrong with it (no command)."""
        name = f'schema "{self.schema}"'
        return {
            "missing": f"{name} does not exist",
            "unmigrated": f"{name} is not migrated",
            "behind": f"{name} lacks migrations {self.detail}",
            "ahead": f"{name} has migrations this version does not ship ({self.detail})",
            "missing_table": f"{name} lacks tables {self.detail}",
        }[self.kind]


def schema_gap(conn: Conn, schema: str, *, package: str = "notify_pg") -> SchemaGap | None:
    """Return what keeps ``schema`` from serving ``package``'s queries, or ``None`` when ready.

    Read only, in the caller's connection: the schema exists, every shipped migration is
    applied (and no other), and every table a migration creates is there. A command checks
    this at start, so that an unmigrated database is one line naming the schema and the
    command to run, not a traceback or a ``503`` to every request.

    Raises:
        StorageError: PostgreSQL failed.
    """
    seam = Seam("notify_pg", schema)
    row = seam.one(conn, "schema_exists", {"schema": schema})
    if row is None or not row[0]:
        return SchemaGap(schema=schema, kind="missing")
    tables = {str(r[0]) for r in seam.all(conn, "schema_tables", {"schema": schema})}
    if "schema_migrations" not in tables:
        return SchemaGap(schema=schema, kind="unmigrated")
    shipped = migrations(package)
    applied = {int(r[0]): str(r[1]) for r in seam.all(conn, "applied_migrations")}
    if not applied:
        return SchemaGap(schema=schema, kind="unmigrated")
    unknown = sorted(set(applied) - {m.version for m in shipped})
    if unknown:
        return SchemaGap(schema=schema, kind="ahead", detail=_names([applied[v] for v in unknown]))
    lacking = [m.name for m in shipped if m.version not in applied]
    if lacking:
        return SchemaGap(schema=schema, kind="behind", detail=_names(lacking))
    created = {t for m in shipped for t in _CREATED_TABLE.findall(m.text)}
    gone = sorted(created - tables)
    if gone:
        return SchemaGap(schema=schema, kind="missing_table", detail=_names(gone))
    return None


def _names(names: list[str]) -> str:
    """At most three names, then how many more: the line stays one line."""
    shown = ", ".join(names[:3])
    return shown if len(names) <= 3 else f"{shown} and {len(names) - 3} more"
