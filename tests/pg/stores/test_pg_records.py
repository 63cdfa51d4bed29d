"""Preference records on PostgreSQL (rules.md#records, section 8, seed 002).

What the repository answers as the pure core store does (the decision table, random
operation sequences side by side, the seed's scenarios, refusals and faults) is the records
contract, run on both (tests/pg/contracts/test_records_contract.py). This file proves what only
the database can break: the schema (partial unique index, trigger), storage failures,
transactions.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

import psycopg
import pytest
from pgworld import SCHEMA

from notify_core.records import (
    DegenerateChannelSet,
    InvalidPreferenceId,
    Ok,
    PreferenceRecord,
    Refusal,
    Refused,
    Status,
)
from notify_core.values.errors import NotifyError, UsageError
from notify_pg import migrate, migrations
from notify_pg.db.migrate import render
from notify_pg.db.seam import parse_queries
from notify_pg.stores.records import PreferenceRecordRepository

Conn = psycopg.Connection[Any]
TABLE = Path(__file__).parents[1].parent / "tables" / "records.jsonl"
CHANNELS = ["email", "sms", "push", "in-app"]
STORAGE_FAILURE = Refused(refusal=Refusal.STORAGE_FAILURE)


@pytest.fixture
def repo() -> PreferenceRecordRepository:
    return PreferenceRecordRepository(SCHEMA)


def at(day: int, hour: int = 9) -> datetime:
    return datetime(2026, 3, day, hour, tzinfo=UTC)


def all_records(conn: Conn, id_prefix: str = "") -> list[PreferenceRecord]:
    """Every stored record (or those whose id starts with the prefix) in recording order."""
    repo = PreferenceRecordRepository(SCHEMA)
    rows = conn.execute(
        f"SELECT preference_id FROM {SCHEMA}.preference_records "
        "WHERE starts_with(preference_id, %s) ORDER BY seq",
        [id_prefix],
    ).fetchall()
    out = []
    for (pid,) in rows:
        record = repo.read(conn, pid)
        assert record is not None
        out.append(record)
    return out


def in_effect_count(conn: Conn, principal: str) -> int:
    row = conn.execute(
        f"SELECT count(*) FROM {SCHEMA}.preference_records "
        "WHERE principal_ref = %s AND status <> 'deleted'",
        [principal],
    ).fetchone()
    assert row is not None
    return int(row[0])


# -- schema ------------------------------------------------------------------------------------


def routines(conn: Conn, schema: str) -> dict[str, list[str]]:
    """Triggers and functions of a schema, the parts the shared catalog test does not compare."""
    triggers = conn.execute(
        """SELECT pg_get_triggerdef(t.oid) FROM pg_trigger t
           JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
           WHERE n.nspname = %s AND NOT t.tgisinternal ORDER BY t.tgname""",
        [schema],
    ).fetchall()
    functions = conn.execute(
        """SELECT pg_get_functiondef(p.oid) FROM pg_proc p
           JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = %s
           ORDER BY p.proname""",
        [schema],
    ).fetchall()
    return {"triggers": [t for (t,) in triggers], "functions": [f for (f,) in functions]}


def test_schema_file_has_the_trigger_and_function_of_the_migrations(
    new_database: Callable[[str | None], str],
) -> None:
    """schema.sql equals the migrations, also in what the catalog test skips."""
    with psycopg.connect(new_database(None), autocommit=True) as a:
        migrate(a, "notify")
        migrated = routines(a, "notify")
    with psycopg.connect(new_database(None), autocommit=True) as b:
        b.execute("CREATE SCHEMA notify")
        text = resources.files("notify_pg").joinpath("schema.sql").read_text("utf-8")
        b.execute(render(text, "notify"))
        from_file = routines(b, "notify")
    assert migrated == from_file
    assert len(migrated["triggers"]) >= 1 and len(migrated["functions"]) >= 1
    assert "0004_preference_records" in [m.name for m in migrations()]


def test_table_as_specified(conn: Conn) -> None:
    """Invariant 3 as a partial unique index; the checks of State 6-8 and 13, Operation 5."""
    indexes = dict(
        conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = %s "
            "AND tablename = 'preference_records'",
            [SCHEMA],
        ).fetchall()
    )
    assert indexes["preference_records_in_effect_idx"].startswith("CREATE UNIQUE INDEX")
    assert indexes["preference_records_in_effect_idx"].endswith(
        "(principal_ref) WHERE (status <> 'deleted'::text)"
    )
    constraints = {
        name
        for (name,) in conn.execute(
            "SELECT conname FROM pg_constraint WHERE conrelid = %s::regclass",
            [f"{SCHEMA}.preference_records"],
        ).fetchall()
    }
    assert {
        "preference_records_pkey",
        "preference_records_status_check",
        "preference_records_stamps_check",
        "preference_records_field_check",
        "preference_records_declared_channels_check",
    } <= constraints


# -- host faults and refusals that need no database --------------------------------------------


def test_request_refusals_and_host_faults_touch_no_database(
    connect: Callable[[], Conn], repo: PreferenceRecordRepository
) -> None:
    """Operation 4-9 answer and Instance 13-16 fail-stop before any statement: a closed
    connection is never used."""
    closed = connect()
    closed.close()
    seam = dict(now=at(1), preference_id="p1", declared_channels=CHANNELS)
    assert repo.set(closed, "", format="plain", **seam) == Refused(
        refusal=Refusal.INVALID_REQUEST, pointer="/principal_ref"
    )
    assert repo.set(closed, "u", metadata={"v": 1}, **seam) == Refused(
        refusal=Refusal.INVALID_REQUEST
    )
    assert repo.set(closed, "u", channel_preferences={}, **seam) == Refused(
        refusal=Refusal.INVALID_REQUEST
    )
    assert repo.set(closed, "u", channel_preferences={"carrier-pigeon": "x"}, **seam) == Refused(
        refusal=Refusal.UNDECLARED_CHANNEL, pointer="/channel_preferences/carrier-pigeon"
    )
    for degenerate in ([], ["email", "email"], ["email", ""]):
        with pytest.raises(DegenerateChannelSet):
            repo.set(
                closed, "", now=at(1), preference_id="p1", declared_channels=degenerate,
                format="plain",
            )  # fmt: skip
    with pytest.raises(InvalidPreferenceId):
        repo.set(closed, "u", now=at(1), preference_id="", declared_channels=CHANNELS, format="x")
    with pytest.raises(NotifyError, match="naive"):
        repo.suspend(closed, "p1", now=datetime(2026, 3, 1))
    with pytest.raises(UsageError):
        repo.read(closed, 7)  # type: ignore[arg-type]
    with pytest.raises(UsageError):
        repo.current_for(closed, None)  # type: ignore[arg-type]


def test_a_principal_holding_nul_is_a_storage_failure(
    conn: Conn, repo: PreferenceRecordRepository
) -> None:
    """PostgreSQL text cannot hold NUL: the database refuses such a set (Operation 16); reads
    and writes of unknown ids, NUL included, are the contract's
    (tests/pg/contracts/test_records_contract.py)."""
    out = repo.set(
        conn, "u\x00", now=at(1), preference_id="p1", declared_channels=CHANNELS, format="x"
    )
    assert out == STORAGE_FAILURE
    assert repo.history(conn, "u\x00") == ()


# -- what the database enforces whoever writes -------------------------------------------------


@pytest.fixture
def stored(conn: Conn, repo: PreferenceRecordRepository) -> Conn:
    """pref_a active, pref_s suspended, pref_d deleted (three principals)."""
    for principal, pid in (("ua", "pref_a"), ("us", "pref_s"), ("ud", "pref_d")):
        repo.set(
            conn, principal, now=at(1), preference_id=pid, declared_channels=CHANNELS,
            channel_preferences={"email": "digest"}, frequency_limit={"per_day": 5},
            quiet_hours={"start": "22:00"}, format="plain", metadata={"form": 1},
        )  # fmt: skip
    assert repo.suspend(conn, "pref_s", now=at(2)) == Ok(preference_id="pref_s")
    assert repo.delete(conn, "pref_d", now=at(2)) == Ok(preference_id="pref_d")
    return conn


@pytest.mark.parametrize(
    ("column", "value"),
    [
        ("channel_preferences", """'{"email": "never"}'::json"""),
        ("frequency_limit", """'{"per_day": 50}'::json"""),
        ("quiet_hours", "NULL"),
        ("format", """'"rich"'::json"""),
        ("metadata", """'{"form": 2}'::json"""),
        ("principal_ref", "'ub'"),
        ("preference_id", "'pref_x'"),
        ("declared_channels", "ARRAY['email']"),
        ("set_at", "set_at - interval '1 day'"),
        ("seq", "DEFAULT"),
    ],
)
def test_direct_update_of_a_preference_field_is_refused(
    stored: Conn, column: str, value: str
) -> None:
    """Invariant 1: the trigger refuses an UPDATE of anything but status and the instants."""
    with pytest.raises(psycopg.errors.CheckViolation, match="only status"):
        stored.execute(
            f"UPDATE {SCHEMA}.preference_records SET {column} = {value} "
            "WHERE preference_id = 'pref_a'"
        )
    record = PreferenceRecordRepository(SCHEMA).read(stored, "pref_a")
    assert record is not None and record.format == "plain" and record.principal_ref == "ua"


@pytest.mark.parametrize(
    ("pid", "assignment", "message"),
    [
        ("pref_s", "status = 'active', suspended_at = NULL", "suspended_at is stamped once"),
        ("pref_d", "status = 'active', deleted_at = NULL", "deleted_at is stamped once"),
        ("pref_d", "status = 'suspended', deleted_at = NULL", "deleted_at is stamped once"),
        ("pref_s", "suspended_at = now()", "suspended_at is stamped once"),
        ("pref_d", "deleted_at = now()", "deleted_at is stamped once"),
        ("pref_d", "suspended_at = now()", "suspended_at is stamped once"),
        ("pref_a", "status = 'deleted', deleted_at = now(), suspended_at = now()", "suspended_at"),
    ],
)
def test_direct_update_of_status_only_forward(
    stored: Conn, pid: str, assignment: str, message: str
) -> None:
    """Invariant 2 and 1.5-1.6 in the trigger; State 6-8 in a check."""
    with pytest.raises(psycopg.errors.CheckViolation, match=message):
        stored.execute(
            f"UPDATE {SCHEMA}.preference_records SET {assignment} WHERE preference_id = %s",
            [pid],
        )


def test_direct_writes_that_the_schema_refuses(stored: Conn) -> None:
    """Invariant 3 (second record in effect), 5.1, 10.2, Operation 5 and 7, State 8."""
    table = f"{SCHEMA}.preference_records"
    columns = "(preference_id, principal_ref, declared_channels, set_at, channel_preferences)"
    bad = [
        ("'p2', 'ua', ARRAY['email'], now(), '{\"email\": 1}'", psycopg.errors.UniqueViolation),
        ("'p2', 'ub', ARRAY['email'], now(), '{\"sms\": 1}'", psycopg.errors.CheckViolation),
        ("'p2', 'ub', ARRAY['email'], now(), '{}'", psycopg.errors.CheckViolation),
        ("'p2', 'ub', ARRAY['email', 'email'], now(), '{\"email\": 1}'",
         psycopg.errors.CheckViolation),
        ("'p2', 'ub', ARRAY[]::text[], now(), '{\"email\": 1}'", psycopg.errors.CheckViolation),
        ("'p2', 'ub', ARRAY[''], now(), '{\"email\": 1}'", psycopg.errors.CheckViolation),
        ("'p2', 'ub', ARRAY['email'], now(), NULL", psycopg.errors.CheckViolation),
        ("'p2', '', ARRAY['email'], now(), '{\"email\": 1}'", psycopg.errors.CheckViolation),
    ]  # fmt: skip
    for values, error in bad:
        with pytest.raises(error):
            stored.execute(f"INSERT INTO {table} {columns} VALUES ({values})")
    # NUL: PostgreSQL's JSON functions cannot unescape \u0000, the trigger reads keys anyway.
    nul_key = r"""'p2', 'ub', ARRAY['email'], now(), '{"email": 1, "e\u0000": 2}'"""
    with pytest.raises(psycopg.errors.CheckViolation, match="not declared"):
        stored.execute(f"INSERT INTO {table} {columns} VALUES ({nul_key})")
    accepted = [
        r"""'p3', 'uc', ARRAY['email'], now(), '{"email": "\u0000\\u0000"}'""",
        r"""'p4', 'ud2', ARRAY['e\u0000'], now(), '{"e\\u0000": "\\\u0000"}'""",
    ]
    for values in accepted:
        stored.execute(f"INSERT INTO {table} {columns} VALUES ({values})")
    with pytest.raises(psycopg.errors.CheckViolation):
        stored.execute(f"UPDATE {table} SET status = 'deleted' WHERE preference_id = 'pref_a'")
    # What the library itself does passes: a forward move with its stamp.
    stored.execute(
        f"UPDATE {table} SET status = 'deleted', deleted_at = now() WHERE preference_id = 'pref_s'"
    )


def test_the_library_never_deletes(stored: Conn, repo: PreferenceRecordRepository) -> None:
    """Invariant 9.1: no query of records.sql removes a row; delete is a status."""
    text = resources.files("notify_pg").joinpath("queries/records.sql").read_text("utf-8")
    queries = parse_queries(text)
    assert queries
    assert not [n for n, q in queries.items() if re.search(r"\b(DELETE|TRUNCATE)\b", q.upper())]
    for name, query in queries.items():
        if query.lstrip().upper().startswith("UPDATE"):
            assigned = query.upper().split("SET", 1)[1].split("WHERE", 1)[0]
            assert "FORMAT" not in assigned and "PREFERENCES" not in assigned, name
    assert not hasattr(repo, "remove")
    count = stored.execute(f"SELECT count(*) FROM {SCHEMA}.preference_records").fetchone()
    assert count == (3,)  # pref_d, deleted, is still there


# -- storage failure ---------------------------------------------------------------------------


def refuse(conn: Conn, event: str) -> None:
    """Make the database refuse every INSERT or UPDATE of preference_records."""
    conn.execute(
        f"""CREATE FUNCTION {SCHEMA}.refuse() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN RAISE EXCEPTION 'refused by the test'; END $$"""
    )
    conn.execute(
        f"CREATE TRIGGER refuse BEFORE {event} ON {SCHEMA}.preference_records "
        f"FOR EACH ROW EXECUTE FUNCTION {SCHEMA}.refuse()"
    )


def test_refused_supersession_leaves_the_prior_in_effect(
    stored: Conn, repo: PreferenceRecordRepository
) -> None:
    """Operation 16, Invariant 4.3-4.4: neither half of the supersession lands."""
    refuse(stored, "INSERT")
    out = repo.set(
        stored, "ua", now=at(3), preference_id="pref_n", declared_channels=CHANNELS, format="x"
    )
    assert out == STORAGE_FAILURE
    current = repo.current_for(stored, "ua")
    assert current is not None and current.preference_id == "pref_a"
    assert current.status is Status.ACTIVE and current.deleted_at is None
    assert repo.read(stored, "pref_n") is None


def test_refused_suspend_and_delete_move_nothing(
    stored: Conn, repo: PreferenceRecordRepository
) -> None:
    """Operation 23, 29, 30."""
    before = all_records(stored)
    refuse(stored, "UPDATE")
    assert repo.suspend(stored, "pref_a", now=at(3)) == STORAGE_FAILURE
    assert repo.delete(stored, "pref_s", now=at(3)) == STORAGE_FAILURE
    # The preconditions are the core's and still answer before any write.
    assert repo.delete(stored, "pref_d", now=at(3)) == Refused(refusal=Refusal.ALREADY_DELETED)
    assert all_records(stored) == before


def test_lock_timeout_and_lost_connection_are_storage_failures(
    connect: Callable[[], Conn], repo: PreferenceRecordRepository
) -> None:
    holder, writer = connect(), connect()
    seam = dict(now=at(1), declared_channels=CHANNELS, format="plain")
    with holder.transaction():
        holder.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended("
            "'notify.preference_records:' || %s || ':' || %s, 0))",
            [SCHEMA, "u"],
        )
        writer.execute("SET lock_timeout = '100ms'")
        assert repo.set(writer, "u", preference_id="p1", **seam) == STORAGE_FAILURE
    assert repo.set(writer, "u", preference_id="p1", **seam) == Ok(preference_id="p1")
    writer.close()
    assert repo.set(writer, "u", preference_id="p2", **seam) == STORAGE_FAILURE
    assert repo.suspend(writer, "p1", now=at(2)) == STORAGE_FAILURE


def test_writes_join_the_callers_transaction(
    connect: Callable[[], Conn], repo: PreferenceRecordRepository
) -> None:
    """A write inside the caller's transaction is a savepoint: a refused one leaves the
    transaction usable; a rollback of the caller takes every write back."""
    conn = connect()
    seam = dict(declared_channels=CHANNELS, format="plain")
    with conn.transaction():
        assert repo.set(conn, "u", now=at(1), preference_id="p1", **seam) == Ok(preference_id="p1")
        out = repo.set(conn, "u\x00", now=at(1), preference_id="p2", **seam)
        assert out == STORAGE_FAILURE
        assert repo.set(conn, "u", now=at(2), preference_id="p3", **seam) == Ok(preference_id="p3")
    assert [r.preference_id for r in repo.history(conn, "u")] == ["p1", "p3"]
    with pytest.raises(RuntimeError), conn.transaction():
        repo.set(conn, "u", now=at(3), preference_id="p4", **seam)
        raise RuntimeError("the host's transaction fails")
    current = repo.current_for(conn, "u")
    assert current is not None and current.preference_id == "p3"


def test_reads_raise_when_the_schema_is_missing(conn: Conn) -> None:
    repo = PreferenceRecordRepository("no_such_schema")
    with pytest.raises(NotifyError) as info:
        repo.current_for(conn, "u")
    assert info.value.code == "schema_missing"
    out = repo.set(conn, "u", now=at(1), preference_id="p", declared_channels=CHANNELS, format="x")
    assert out == STORAGE_FAILURE
