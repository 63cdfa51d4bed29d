"""Preference records on PostgreSQL (rules.md#records, section 8, seed 002).

The repository must answer what the pure core store answers: the decision tables of
``tests/tables/records.jsonl`` run unchanged through it, and random operation sequences run
through both side by side with equal outcomes and equal records. The rest proves what only the
database can break: the schema (partial unique index, trigger), storage failures, transactions.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from importlib import resources
from pathlib import Path
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pgworld import SCHEMA
from strategies_records import (
    T0,
    clock_steps,
    declared_sets,
    degenerate_sets,
    principals,
    set_requests,
)

import notify_core.records.tables as records_tables
from notify_core.records import (
    DegenerateChannelSet,
    InvalidPreferenceId,
    Ok,
    PreferenceRecord,
    PreferenceStore,
    Refusal,
    Refused,
    Status,
)
from notify_core.records.tables import record_to_json, records_lifecycle
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


class PgStore:
    """The repository dressed as a `PreferenceStore` value, so the core's table runner and the
    side-by-side comparison drive it unchanged: a write answers ``(self, outcome)``."""

    def __init__(self, conn: Conn, id_prefix: str = "") -> None:
        self.conn = conn
        self.repo = PreferenceRecordRepository(SCHEMA)
        self.id_prefix = id_prefix

    def set(self, principal_ref: str, **kwargs: Any) -> tuple[PgStore, Any]:
        return self, self.repo.set(self.conn, principal_ref, **kwargs)

    def suspend(self, preference_id: str, *, now: datetime) -> tuple[PgStore, Any]:
        return self, self.repo.suspend(self.conn, preference_id, now=now)

    def delete(self, preference_id: str, *, now: datetime) -> tuple[PgStore, Any]:
        return self, self.repo.delete(self.conn, preference_id, now=now)

    def current_for(self, principal_ref: str) -> PreferenceRecord | None:
        return self.repo.current_for(self.conn, principal_ref)

    def read(self, preference_id: str) -> PreferenceRecord | None:
        return self.repo.read(self.conn, preference_id)

    def in_effect_at(self, principal_ref: str, instant: datetime) -> PreferenceRecord | None:
        return self.repo.in_effect_at(self.conn, principal_ref, instant)

    @property
    def records(self) -> dict[str, PreferenceRecord]:
        return {r.preference_id: r for r in all_records(self.conn, self.id_prefix)}


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


# -- the core's tables and the core side by side ----------------------------------------------


def lifecycle_cases() -> list[dict[str, Any]]:
    cases = []
    for line in TABLE.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            case = json.loads(line)
            if case["function"] == "records_lifecycle":
                cases.append(case)
    return cases


LIFECYCLES = lifecycle_cases()


@pytest.mark.parametrize("case", LIFECYCLES, ids=[c["id"] for c in LIFECYCLES])
def test_table_case_through_postgresql(
    case: dict[str, Any], conn: Conn, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every records_lifecycle case of the core's decision table, with the repository as the
    store: the same answers, records, refusals and errors (pointers included)."""
    monkeypatch.setattr(records_tables, "PreferenceStore", lambda: PgStore(conn))
    try:
        got: dict[str, object] = records_lifecycle(case["input"])
    except NotifyError as err:
        got = {"error": err.as_json()}
    assert got == case["expect"]


OPS = st.one_of(
    st.tuples(st.just("set"), principals, set_requests(), declared_sets, clock_steps),
    st.tuples(st.just("set_degenerate"), principals, set_requests(), degenerate_sets),
    st.tuples(st.just("set_reused"), principals, set_requests()),
    st.tuples(st.sampled_from(["suspend", "delete"]), st.integers(-1, 12), clock_steps),
    st.tuples(st.just("current_for"), principals),
    st.tuples(st.just("read"), st.integers(-1, 12)),
    st.tuples(st.just("in_effect_at"), principals, st.timedeltas(timedelta(0), timedelta(days=9))),
)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=st.lists(OPS, min_size=1, max_size=25))
def test_core_and_postgresql_agree(conn: Conn, ops: list[tuple[Any, ...]]) -> None:
    """The same operation sequences through the core store and the repository: equal
    outcomes, equal raised errors, equal reads and equal records at the end."""
    token = uuid.uuid4().hex[:8]  # one database for all examples: ids and principals apart

    def principal(p: str) -> str:
        return p if p == "" else f"{token}:{p}"

    def pid(i: int) -> str:
        return "" if i < 0 else f"{token}-p{i}"

    core = PreferenceStore()
    pg = PgStore(conn, f"{token}-")
    now = T0
    made = 0

    def both(call: Callable[[Any], Any]) -> None:
        nonlocal core
        try:
            expected: Any = call(core)
        except NotifyError as err:
            with pytest.raises(type(err)) as info:
                call(pg)
            assert info.value.as_json() == err.as_json()
            return
        got = call(pg)
        if isinstance(expected, tuple):
            core, expected = expected
            got = got[1]
        assert got == expected

    for op in ops:
        kind = op[0]
        if kind in ("set", "set_degenerate", "set_reused"):
            if kind == "set":
                now += op[4]
            new_id = pid(max(made - 1, 0)) if kind == "set_reused" and made else pid(made)
            declared = op[3] if kind != "set_reused" else CHANNELS
            args = dict(op[2], now=now, preference_id=new_id, declared_channels=declared)
            who = principal(op[1])
            before = len(core.records)
            both(lambda s, p=who, a=args: s.set(p, **a))
            made += len(core.records) - before
        elif kind in ("suspend", "delete"):
            now += op[2]
            target = pid(op[1])
            both(lambda s, k=kind, i=target, t=now: getattr(s, k)(i, now=t))
        elif kind == "current_for":
            who = principal(op[1])
            both(lambda s, p=who: s.current_for(p))
        elif kind == "read":
            target = pid(op[1])
            both(lambda s, i=target: s.read(i))
        else:
            who = principal(op[1])
            both(lambda s, p=who, t=T0 + op[2]: s.in_effect_at(p, t))
    assert list(pg.records.values()) == list(core.records.values())
    assert [record_to_json(r) for r in pg.records.values()] == [
        record_to_json(r) for r in core.records.values()
    ]


# -- the seed's scenarios ----------------------------------------------------------------------


def test_seed_lifecycle_onboarding_vacation_closure(
    conn: Conn, repo: PreferenceRecordRepository
) -> None:
    """Seed 002 Examples: pref_001 -> pref_088 -> pref_141, all kept (Invariant 9)."""
    first = {"email": "digest", "push": "real-time", "sms": "opt-out"}
    assert repo.set(
        conn,
        "user_u",
        now=at(1),
        preference_id="pref_001",
        declared_channels=CHANNELS,
        channel_preferences=first,
        format="plain",
    ) == Ok(preference_id="pref_001")
    second = {"email": "digest", "push": "real-time", "sms": "urgent-only"}
    update = dict(channel_preferences=second, frequency_limit={"per_day": 10}, format="plain")
    out = repo.set(
        conn, "user_u", now=at(22), preference_id="pref_088", declared_channels=CHANNELS, **update
    )
    assert out == Ok(preference_id="pref_088")
    current = repo.current_for(conn, "user_u")
    assert current is not None and current.preference_id == "pref_088"
    prior = repo.read(conn, "pref_001")
    assert prior is not None and prior.status is Status.DELETED and prior.deleted_at == at(22)
    assert repo.suspend(conn, "pref_088", now=at(25)) == Ok(preference_id="pref_088")
    suspended = repo.current_for(conn, "user_u")
    assert suspended is not None and suspended.status is Status.SUSPENDED
    assert suspended.channel_preferences == second  # Invariant 6: values kept
    assert repo.suspend(conn, "pref_001", now=at(26)) == Refused(refusal=Refusal.NOT_ACTIVE)
    # Resumption is a fresh set that replays the suspended values.
    assert repo.set(
        conn, "user_u", now=at(28), preference_id="pref_141", declared_channels=CHANNELS, **update
    ) == Ok(preference_id="pref_141")
    replaced = repo.read(conn, "pref_088")
    assert replaced is not None and replaced.status is Status.DELETED
    assert replaced.suspended_at == at(25) and replaced.set_at == at(22)
    assert repo.delete(conn, "pref_141", now=at(30)) == Ok(preference_id="pref_141")
    assert repo.delete(conn, "pref_141", now=at(31)) == Refused(refusal=Refusal.ALREADY_DELETED)
    assert repo.current_for(conn, "user_u") is None
    history = repo.history(conn, "user_u")
    assert [r.preference_id for r in history] == ["pref_001", "pref_088", "pref_141"]
    assert all(r.status is Status.DELETED for r in history)
    # Check 2.1-2.2: half-open currency intervals, reconstructed from the stamps.
    governing = repo.in_effect_at(conn, "user_u", at(22))
    assert governing is not None and governing.preference_id == "pref_088"
    governing = repo.in_effect_at(conn, "user_u", at(26))
    assert governing is not None and governing.status_at(at(26)) is Status.SUSPENDED
    assert repo.in_effect_at(conn, "user_u", at(30)) is None


def test_principals_match_exactly(conn: Conn, repo: PreferenceRecordRepository) -> None:
    """Identity 8-10: no case folding, no trimming; each is its own principal."""
    for i, principal in enumerate(["user_u", "User_U", "user_u ", "usér_u"]):
        out = repo.set(
            conn, principal, now=at(1), preference_id=f"p{i}", declared_channels=CHANNELS,
            format="plain",
        )  # fmt: skip
        assert out == Ok(preference_id=f"p{i}")
    assert in_effect_count(conn, "user_u") == 1
    current = repo.current_for(conn, "User_U")
    assert current is not None and current.preference_id == "p1"
    assert repo.current_for(conn, "") is None and repo.read(conn, "") is None


def test_opaque_values_come_back_unchanged(conn: Conn, repo: PreferenceRecordRepository) -> None:
    """Operation 10-11: stored as given, member order, number types and escapes included."""
    quiet = {"start": "22:00", "end": "07:00", "timezone": "America/Los_Angeles"}
    metadata = {"z": 1e16, "a": [0.1, -0.0, 5e-324, 10**30], "nul": "a\x00b", "ü": "✓"}
    out = repo.set(
        conn, "user_v", now=at(1), preference_id="p1", declared_channels=CHANNELS,
        channel_preferences={"sms": "urgent-only", "email": "opt-out"}, quiet_hours=quiet,
        metadata=metadata,
    )  # fmt: skip
    assert out == Ok(preference_id="p1")
    record = repo.read(conn, "p1")
    assert record is not None
    assert list(record.channel_preferences or {}) == ["sms", "email"]
    assert record_to_json(record)["metadata"] == metadata
    assert json.dumps(record_to_json(record)["metadata"]) == json.dumps(metadata)
    assert record.declared_channels == frozenset(CHANNELS)


def test_a_generator_of_channel_names_is_read_once(
    conn: Conn, repo: PreferenceRecordRepository
) -> None:
    out = repo.set(
        conn, "u", now=at(1), preference_id="p1", declared_channels=(c for c in CHANNELS),
        channel_preferences={"push": "all"},
    )  # fmt: skip
    assert out == Ok(preference_id="p1")
    record = repo.read(conn, "p1")
    assert record is not None and record.declared_channels == frozenset(CHANNELS)


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


def test_unknown_ids_and_nul(conn: Conn, repo: PreferenceRecordRepository) -> None:
    not_known = Refused(refusal=Refusal.NOT_KNOWN)
    for pid in ("nope", "", "a\x00b"):
        assert repo.suspend(conn, pid, now=at(1)) == not_known
        assert repo.delete(conn, pid, now=at(1)) == not_known
        assert repo.read(conn, pid) is None
    assert repo.current_for(conn, "u\x00") is None and repo.history(conn, "u\x00") == ()
    # PostgreSQL text cannot hold NUL: the database refuses such a set.
    out = repo.set(
        conn, "u\x00", now=at(1), preference_id="p1", declared_channels=CHANNELS, format="x"
    )
    assert out == STORAGE_FAILURE


def test_preference_id_of_another_principal_is_not_reused(
    conn: Conn, repo: PreferenceRecordRepository
) -> None:
    """Identity 4, Invariant 8.1: ids are unique over the table, not per principal."""
    seam = dict(now=at(1), declared_channels=CHANNELS, format="plain")
    assert repo.set(conn, "u", preference_id="p1", **seam) == Ok(preference_id="p1")
    with pytest.raises(InvalidPreferenceId) as info:
        repo.set(conn, "v", preference_id="p1", **seam)
    assert info.value.as_json() == {"code": "preference_id_reused", "pointer": "/preference_id"}
    assert repo.history(conn, "v") == ()


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
