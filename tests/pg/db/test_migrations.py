"""Migrations, the schema file, forget_person and the query files (docs/postgresql.md, sections
"Schema and migrations" and "Repositories"; seed 000 note 2)."""

from __future__ import annotations

import importlib
import re
import threading
from collections.abc import Callable
from importlib import resources
from typing import Any

import attrs
import psycopg
import pytest
from pgworld import ALEX, SAM, SCHEMA, T, channel, events, thread

from notify_core.hints.levels import Preference
from notify_core.hints.quiet import QuietRule
from notify_pg import MigrationError, NotifyStore, forget_person, migrate, migrations
from notify_pg.db.migrate import render
from notify_pg.db.seam import load_queries, parse_queries

Connect = Callable[[], psycopg.Connection[Any]]


def catalog(conn: psycopg.Connection[Any], schema: str) -> dict[str, list[tuple[Any, ...]]]:
    """Columns, constraints, indexes and sequences of a schema, with the schema name removed."""

    def strip(text: str) -> str:
        return text.replace(f'"{schema}".', "").replace(f"{schema}.", "")

    columns = conn.execute(
        """SELECT table_name, ordinal_position, column_name, data_type, is_nullable,
                  column_default, collation_name, is_identity, identity_generation
           FROM information_schema.columns
           WHERE table_schema = %s AND table_name <> 'schema_migrations'
           ORDER BY table_name, ordinal_position""",
        [schema],
    ).fetchall()
    constraints = conn.execute(
        """SELECT c.relname, k.conname, k.contype, pg_get_constraintdef(k.oid)
           FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid
           JOIN pg_namespace n ON n.oid = c.relnamespace
           WHERE n.nspname = %s AND c.relname <> 'schema_migrations'
           ORDER BY 1, 2""",
        [schema],
    ).fetchall()
    indexes = conn.execute(
        """SELECT tablename, indexname, indexdef FROM pg_indexes
           WHERE schemaname = %s AND tablename <> 'schema_migrations' ORDER BY 1, 2""",
        [schema],
    ).fetchall()
    sequences = conn.execute(
        """SELECT sequence_name, data_type FROM information_schema.sequences
           WHERE sequence_schema = %s ORDER BY 1""",
        [schema],
    ).fetchall()
    functions = conn.execute(
        """SELECT p.proname, pg_get_function_identity_arguments(p.oid),
                  pg_get_function_result(p.oid), l.lanname, p.provolatile, p.proisstrict,
                  p.proparallel, p.prosrc
           FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
           JOIN pg_language l ON l.oid = p.prolang
           WHERE n.nspname = %s ORDER BY 1, 2""",
        [schema],
    ).fetchall()
    return {
        "columns": [tuple(strip(v) if isinstance(v, str) else v for v in r) for r in columns],
        "constraints": [tuple(strip(v) for v in r) for r in constraints],
        "indexes": [tuple(strip(v) for v in r) for r in indexes],
        "sequences": list(sequences),
        "functions": [tuple(strip(v) if isinstance(v, str) else v for v in r) for r in functions],
    }


def test_migrations_give_the_schema_file(new_database: Callable[[str | None], str]) -> None:
    """Applying all migrations gives the same schema as notify_pg/schema.sql."""
    with psycopg.connect(new_database(None), autocommit=True) as a:
        assert migrate(a, "notify") == [m.name for m in migrations()]
        migrated = catalog(a, "notify")
    with psycopg.connect(new_database(None), autocommit=True) as b:
        b.execute("CREATE SCHEMA notify")
        text = resources.files("notify_pg").joinpath("schema.sql").read_text("utf-8")
        b.execute(render(text, "notify"))
        from_file = catalog(b, "notify")
    assert migrated == from_file
    assert {t for t, *_ in migrated["columns"]} == {
        "notification_preferences",
        "quiet_hours",
        "quiet_hours_idempotency",
        "event_log",
        "preference_records",
        "push_registrations",
        "consumer_cursors",
        "windows",
        "delayed_releases",
        "badge_syncs",
        "push_sends",
        "consumer_failures",
        "inbox_outbox",
        "inbox_entries",
        "inbox_preferences",
        "unsubscribe_secret",
        "unsubscribe_audit",
        "inbox_audit",
        "forgotten_people",
        "inbox_categories",
        "push_deliveries",
        "push_holds",
        "push_day_counts",
    }
    assert [f[0] for f in migrated["functions"]] == [
        "inbox_emit",
        "inbox_live_send",
        "inbox_live_written",
        "partition_of",
        "preference_records_guard",
    ]


def test_tables_as_specified(conn: psycopg.Connection[Any]) -> None:
    """Seed 000 note 2: keys, checks, indexes; no foreign key into the host (docs/postgresql.md)."""
    cat = catalog(conn, SCHEMA)
    defs = {name: d for _t, name, _k, d in cat["constraints"]}
    assert defs["notification_preferences_pkey"] == "PRIMARY KEY (user_id, target_kind, target_id)"
    assert (
        "'space'::text, 'channel'::text, 'thread'::text"
        in defs["notification_preferences_target_kind_check"]
    )
    assert (
        "'all'::text, 'mentions'::text, 'mute'::text"
        in defs["notification_preferences_level_check"]
    )
    assert defs["quiet_hours_pkey"] == "PRIMARY KEY (id)"
    assert defs["quiet_hours_weekdays_check"] == ("CHECK (((weekdays >= 1) AND (weekdays <= 127)))")
    assert defs["quiet_hours_idempotency_pkey"] == "PRIMARY KEY (user_id, idempotency_key)"
    assert not [k for _t, _n, k, _d in cat["constraints"] if k == "f"]
    indexes = {name: d for _t, name, d in cat["indexes"]}
    assert indexes["notification_preferences_target_idx"].endswith("(target_kind, target_id)")
    assert indexes["quiet_hours_user_enabled_idx"].endswith("(user_id) WHERE enabled")
    columns = {(t, c): (dt, null) for t, _p, c, dt, null, *_ in cat["columns"]}
    assert columns["notification_preferences", "muted_until"] == (
        "timestamp with time zone",
        "YES",
    )
    assert columns["quiet_hours", "start_local"] == ("time without time zone", "NO")
    assert columns["event_log", "payload"] == ("jsonb", "NO")
    assert columns["event_log", "scope"] == ("jsonb", "YES")
    assert columns["event_log", "origin"] == ("text", "YES")
    assert "'import'::text, 'bulk'::text" in defs["event_log_origin_check"]


def test_migrate_twice_changes_nothing(conn: psycopg.Connection[Any]) -> None:
    """Applying twice changes nothing."""
    before = catalog(conn, SCHEMA)
    applied = conn.execute(f"SELECT * FROM {SCHEMA}.schema_migrations ORDER BY 1").fetchall()
    assert migrate(conn, SCHEMA) == []
    assert catalog(conn, SCHEMA) == before
    assert conn.execute(f"SELECT * FROM {SCHEMA}.schema_migrations ORDER BY 1").fetchall() == (
        applied
    )


def test_changed_migration_is_refused(
    conn: psycopg.Connection[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A changed applied file is refused with a clear error, nothing applied."""
    shipped = migrations()
    changed = attrs.evolve(shipped[0], checksum="0" * 64)
    module = importlib.import_module("notify_pg.db.migrate")
    monkeypatch.setattr(module, "migrations", lambda package: (changed, *shipped[1:]))
    with pytest.raises(MigrationError) as info:
        migrate(conn, SCHEMA)
    assert info.value.code == "migration_changed"
    assert shipped[0].name in str(info.value)


def test_unknown_applied_migration_is_refused(conn: psycopg.Connection[Any]) -> None:
    conn.execute(
        f"INSERT INTO {SCHEMA}.schema_migrations (version, name, checksum) "
        "VALUES (9999, '9999_future', 'x')"
    )
    with pytest.raises(MigrationError) as info:
        migrate(conn, SCHEMA)
    assert info.value.code == "migration_unknown"


#: The demo host's migrations as a database recorded them while the demo host was
#: ``notify_pg.reference_host`` (before issue 35 moved it to ``notify_reference_host``): a row of
#: ``<schema>.schema_migrations`` holds the version, the file's name and its checksum, nothing of
#: the package's path. The texts moved unchanged (the stale package name in 0001's comment
#: included: an applied migration is never edited, ``migration_changed``).
HOST_MIGRATIONS_BEFORE_THE_MOVE = (
    (1, "0001_reference_host", "23eecd6f873b2c8545a7934c35911ea7607d74c84fb600e83ba134c4d6e343c1"),
    (2, "0002_pipeline_world", "fec8679e6dd1c9235bdeffe614035d8e392d91d37ef9b99f10d56f7c8867f0f7"),
    (3, "0003_wiki", "6e172dc58932b85ccbb6ebf2e06ca9fe0181564a84001d54968dcdfc77e4d1d0"),
    (4, "0004_wiki_site_order", "c2c7dbd285fcf8e4ac57183fb238f99ecb0d69d1bf87fcdcf60fcd6b37660544"),
    (5, "0005_channel_access", "b1884f974143eda5a12822806e25ed0cebf6c97f5dba4876899ae3ed174b1606"),
    (6, "0006_wiki_mail_batch", "18bf1b1435512fb33a158d76246de7de05f1486bcb83301f8e11f9a7f15c9936"),
    (7, "0007_loaded_events", "2ffc162ca128c43c82460754399dd00616af56a30a59a9f444b560b2cd9529ea"),
    (
        8,
        "0008_wiki_names_links",
        "5fd194757208f2c56ee426c5d10e59169eb3a253581329ec373284fff408f3f3",
    ),
    (
        9,
        "0009_channel_access_grants",
        "a62ba83806df91cbe95993eae605b0ba4b873f381ee6853b927e990a435d1bbe",
    ),
)


def test_the_demo_host_ships_what_a_database_recorded_before_its_move() -> None:
    shipped = [(m.version, m.name, m.checksum) for m in migrations("notify_reference_host")]
    assert tuple(shipped[: len(HOST_MIGRATIONS_BEFORE_THE_MOVE)]) == (
        HOST_MIGRATIONS_BEFORE_THE_MOVE
    )


def test_a_demo_host_migrated_before_its_move_is_up_to_date_after_it(
    new_database: Callable[[str | None], str],
) -> None:
    """``notify db migrate --reference-host`` on a database migrated before issue 35 applies
    nothing it applied then, and the demo host reads and writes its tables."""
    from click.testing import CliRunner

    from notify_cli.main import cli
    from notify_reference_host import ReferenceHost, migrate_reference_host

    dsn = new_database(None)
    with psycopg.connect(dsn, autocommit=True) as conn:
        migrate(conn, "notify")
        # The host's tables as those files made them, and the record the old package left.
        migrate_reference_host(conn, "host")
        conn.execute("DELETE FROM host.schema_migrations")
        for row in HOST_MIGRATIONS_BEFORE_THE_MOVE:
            conn.execute(
                "INSERT INTO host.schema_migrations (version, name, checksum) VALUES (%s, %s, %s)",
                row,
            )
    result = CliRunner().invoke(cli, ["db", "migrate", "--dsn", dsn, "--reference-host", "host"])
    assert result.exit_code == 0, result.output
    newer = migrations("notify_reference_host")[len(HOST_MIGRATIONS_BEFORE_THE_MOVE) :]
    assert result.stdout.splitlines() == [f"host: applied {m.name}" for m in newer]
    with psycopg.connect(dsn, autocommit=True) as conn:
        ReferenceHost("host").add_user(conn, ALEX)
        assert ReferenceHost("host").users(conn, [ALEX])[ALEX].active


def test_parallel_migrations_apply_each_file_once(
    new_database: Callable[[str | None], str],
) -> None:
    """Two hosts starting at once: the advisory lock lets one apply, the other sees it done."""
    dsn = new_database(None)
    results: list[list[str]] = []
    barrier = threading.Barrier(3)

    def run() -> None:
        barrier.wait()
        results.append(migrate(dsn, "notify"))

    workers = [threading.Thread(target=run) for _ in range(3)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert sorted(results, key=len) == [[], [], [m.name for m in migrations()]]


def test_any_schema_name_is_quoted(
    new_database: Callable[[str | None], str], pg_template: str
) -> None:
    """The schema is configurable and only ever an identifier."""
    from notify_reference_host import ReferenceHost

    odd = 'Notify "Test"; DROP'
    with psycopg.connect(new_database(pg_template), autocommit=True) as conn:
        migrate(conn, odd)
        host = ReferenceHost("host")
        host.add_user(conn, ALEX)
        host.add_space(conn, "s")
        host.add_channel(conn, "c", "s")
        host.grant(conn, ALEX, channel("c"))
        store = NotifyStore(host, schema=odd)
        assert store.preferences.put(conn, ALEX, channel("c"), Preference(level="all")).changed
        count = conn.execute(
            f'SELECT count(*) FROM "{odd.replace(chr(34), 2 * chr(34))}".event_log'
        )
        assert count.fetchone() == (1,)


def test_forget_person_removes_the_persons_rows(
    conn: psycopg.Connection[Any], store: NotifyStore, world: None
) -> None:
    """Documented in docs/postgresql.md: no foreign keys, so the host calls forget_person."""
    store.preferences.put(conn, ALEX, thread(T), Preference(level="mute"))
    store.preferences.put(conn, SAM, thread(T), Preference(level="all"))
    rule = QuietRule(weekdays=1, start_local="22:00", end_local="07:00")
    store.quiet_hours.create(conn, ALEX, rule)
    store.quiet_hours.create(conn, SAM, rule)
    forget_person(conn, ALEX, SCHEMA)
    assert store.preferences.list(conn, ALEX) == []
    assert store.quiet_hours.list(conn, ALEX) == []
    assert [p.user_id for p in store.preferences.list(conn, SAM)] == [SAM]
    assert len(store.quiet_hours.list(conn, SAM)) == 1
    assert {e.get("audience") for e in events(conn)} == {SAM}


def test_host_deleting_a_person_forgets_them(
    conn: psycopg.Connection[Any], store: NotifyStore, world: None
) -> None:
    """Seed 000 TestMigrationNotifyTables, last clause: deleting a users row removes the
    person's rows (here through forget_person in the host's transaction, not a foreign key)."""
    from notify_reference_host import ReferenceHost

    store.preferences.put(conn, SAM, thread(T), Preference(level="all"))
    ReferenceHost("host").delete_user(conn, SAM, store)
    assert conn.execute(f"SELECT count(*) FROM {SCHEMA}.notification_preferences").fetchone() == (
        0,
    )
    assert events(conn) == []


def test_query_files_are_named_and_described() -> None:
    """One named block per query with a one-line description; schema as identifier."""
    for package in ("notify_pg", "notify_reference_host"):
        queries = load_queries(package)
        assert queries
        for name, text in queries.items():
            # Session settings name no table: the worker's timeouts, a read-write transaction;
            # nor does the count of a consumer's workers (their advisory locks in pg_locks), nor
            # the start-up checks of a schema and its tables (the name is a value of the catalog).
            sessionwide = name in {
                "lock_migrations",
                "worker_session",
                "read_write",
                "consumer_workers",
                "schema_exists",
                "schema_tables",
            }
            assert "{schema}" in text or sessionwide or "pg_advisory" in text, name
            # Values are parameters: no quoted literal other than fixed kinds, levels and keys.
            for literal in re.findall(r"'([^']*)'", text):
                assert re.fullmatch(r"[a-z_.:-]*|-infinity", literal), (name, literal)
    with pytest.raises(ValueError, match="description"):
        parse_queries("-- name: x\nSELECT 1\n")
    with pytest.raises(ValueError, match="twice"):
        parse_queries("-- name: x\n-- d\nSELECT 1\n-- name: x\n-- d\nSELECT 2\n")


def test_a_query_block_extends_an_earlier_block_of_its_file() -> None:
    """One statement held once; its extended form is its text and the block's body."""
    text = (
        "-- name: x\n-- d\nSELECT 1 FROM t\n-- tail\nWHERE a;\n\n"
        "-- name: y\n-- e\n-- extends: x\nLIMIT 1;\n"
    )
    assert parse_queries(text) == {
        "x": "SELECT 1 FROM t\n-- tail\nWHERE a",
        "y": "SELECT 1 FROM t\n-- tail\nWHERE a\nLIMIT 1",
    }
    with pytest.raises(ValueError, match="not defined before"):
        parse_queries("-- name: y\n-- e\n-- extends: x\nLIMIT 1\n-- name: x\n-- d\nSELECT 1\n")
    with pytest.raises(ValueError, match="body after its extends"):
        parse_queries("-- name: x\n-- d\nSELECT 1\n-- name: y\n-- e\n-- extends: x\n")
