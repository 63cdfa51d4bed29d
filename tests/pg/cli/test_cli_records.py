"""``notify records audit`` (seed 002 Check 2.1-2.2; docs/cli.md#exit-codes: data on stdout,
one line on stderr and exit code 2 for bad input, no traceback)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner
from pgworld import SCHEMA

from notify_cli.main import cli
from notify_core.values.instants import format_instant, parse_instant
from notify_pg.stores.records import SUPERSESSION_GAP_BOUND, PreferenceRecordRepository

Conn = psycopg.Connection[Any]
CHANNELS = ["email", "sms", "push", "in-app"]


@pytest.fixture
def history(conn: Conn) -> None:
    """user_u: pref_001 (superseded), pref_088 (suspended, then superseded), pref_141 (active)."""
    repo = PreferenceRecordRepository(SCHEMA)

    def t(text: str) -> datetime:
        return parse_instant(text)

    seam = dict(declared_channels=CHANNELS)
    repo.set(
        conn, "user_u", now=t("2026-03-01T09:00:00Z"), preference_id="pref_001",
        channel_preferences={"email": "digest", "sms": "opt-out"}, format="plain", **seam,
    )  # fmt: skip
    repo.set(
        conn, "user_u", now=t("2026-03-22T09:15:00Z"), preference_id="pref_088",
        channel_preferences={"sms": "urgent-only"}, frequency_limit={"per_day": 10},
        metadata={"form": "v2"}, **seam,
    )  # fmt: skip
    repo.suspend(conn, "pref_088", now=t("2026-04-01T08:00:00Z"))
    repo.set(
        conn, "user_u", now=t("2026-04-15T18:30:00Z"), preference_id="pref_141",
        channel_preferences={"sms": "urgent-only"}, frequency_limit={"per_day": 10}, **seam,
    )  # fmt: skip
    repo.set(
        conn, "User_U", now=t("2026-03-01T09:00:00Z"), preference_id="other", format="x", **seam
    )


def audit(db_dsn: str, *args: str) -> Any:
    runner = CliRunner(env={"COLUMNS": "220"})
    return runner.invoke(cli, ["records", "audit", "--dsn", db_dsn, "--principal", *args])


def test_json_history_and_the_record_in_effect(db_dsn: str, history: None) -> None:
    result = audit(db_dsn, "user_u", "--at", "2026-04-02T00:00:00+02:00", "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["principal_ref"] == "user_u" and out["at"] == "2026-04-01T22:00:00Z"
    assert [r["preference_id"] for r in out["records"]] == ["pref_001", "pref_088", "pref_141"]
    assert out["records"][1] == {
        "preference_id": "pref_088",
        "principal_ref": "user_u",
        "status": "deleted",
        "set_at": "2026-03-22T09:15:00Z",
        "suspended_at": "2026-04-01T08:00:00Z",
        "deleted_at": "2026-04-15T18:30:00Z",
        "declared_channels": ["email", "in-app", "push", "sms"],
        "channel_preferences": {"sms": "urgent-only"},
        "frequency_limit": {"per_day": 10},
        "metadata": {"form": "v2"},
    }
    assert out["in_effect"] == {"preference_id": "pref_088", "status_at": "suspended"}
    # Check 4.1: both supersessions of this history have no gap, within the default bound 0.
    assert out["gap_bound_s"] == 0
    assert out["supersessions"] == [
        {"prior": "pref_001", "successor": "pref_088", "gap_s": 0, "reading": "supersession"},
        {"prior": "pref_088", "successor": "pref_141", "gap_s": 0, "reading": "supersession"},
    ]
    assert out["stamps_out_of_order"] == []
    # Check 2.2: half-open, at the supersession instant the successor governs.
    at_supersession = audit(db_dsn, "user_u", "--at", "2026-03-22T09:15:00Z", "--json")
    assert json.loads(at_supersession.stdout)["in_effect"] == {
        "preference_id": "pref_088",
        "status_at": "active",
    }
    before = audit(db_dsn, "user_u", "--at", "2026-02-01T00:00:00Z", "--json")
    assert json.loads(before.stdout)["in_effect"] == {"none": True}


def test_default_instant_is_now(db_dsn: str, history: None) -> None:
    start = datetime.now(UTC).replace(microsecond=0)
    result = audit(db_dsn, "user_u", "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert parse_instant(out["at"]) >= start
    assert out["in_effect"] == {"preference_id": "pref_141", "status_at": "active"}


def test_table_on_stdout(db_dsn: str, history: None) -> None:
    result = audit(db_dsn, "user_u", "--at", "2026-03-10T00:00:00Z")
    assert result.exit_code == 0, result.output
    text = result.stdout
    for expected in ("pref_001", "pref_088", "pref_141", "suspended_at", '"per_day":10'):
        assert expected in text
    assert "other" not in text  # User_U is another principal (exact match)
    assert "…" not in text  # nothing truncated, long values fold
    assert '"metadata":{"form":"v2"}' in text.replace("│", "").replace("\n", "").replace(" ", "")
    assert text.rstrip().splitlines()[-1] == "in effect at 2026-03-10T00:00:00Z: pref_001 (active)"
    assert result.stderr == ""


@pytest.fixture
def gaps(conn: Conn) -> None:
    """user_g: g1 deleted at 10:00, g2 set at 10:00:30 (a delete, then a later set), deleted
    at 11:00; g3 set at 11:00 (a supersession); and, as a store written before stamps were
    taken under the lock, user_b's b1 set at 12:00 but deleted at 11:59 by b2 set at 11:59."""
    repo = PreferenceRecordRepository(SCHEMA)
    seam = dict(declared_channels=CHANNELS, format="plain")
    t = parse_instant
    repo.set(conn, "user_g", now=t("2026-05-01T09:00:00Z"), preference_id="g1", **seam)
    repo.delete(conn, "g1", now=t("2026-05-01T10:00:00Z"))
    repo.set(conn, "user_g", now=t("2026-05-01T10:00:30Z"), preference_id="g2", **seam)
    repo.set(conn, "user_g", now=t("2026-05-01T11:00:00Z"), preference_id="g3", **seam)
    conn.execute(
        f"INSERT INTO {SCHEMA}.preference_records (preference_id, principal_ref, "
        'declared_channels, set_at, status, "format", deleted_at) VALUES '
        "('b1', 'user_b', ARRAY['email'], '2026-05-01T12:00:00Z', 'deleted', '\"x\"', "
        "'2026-05-01T11:59:00Z'), "
        "('b2', 'user_b', ARRAY['email'], '2026-05-01T11:59:00Z', 'active', '\"x\"', NULL)"
    )


def test_supersession_gaps_against_the_bound(db_dsn: str, gaps: None) -> None:
    """Check 4.1 (within the bound: a supersession) and 4.2 (beyond it: ambiguous)."""
    result = audit(db_dsn, "user_g", "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    # The default is the bound the PostgreSQL store declares (Capability requirement 5).
    assert out["gap_bound_s"] == SUPERSESSION_GAP_BOUND.total_seconds() == 0
    assert out["supersessions"] == [
        {"prior": "g1", "successor": "g2", "gap_s": 30, "reading": "ambiguous"},
        {"prior": "g2", "successor": "g3", "gap_s": 0, "reading": "supersession"},
    ]
    wide = json.loads(audit(db_dsn, "user_g", "--gap-bound", "30", "--json").stdout)
    assert wide["gap_bound_s"] == 30
    assert [g["reading"] for g in wide["supersessions"]] == ["supersession", "supersession"]
    narrow = json.loads(audit(db_dsn, "user_g", "--gap-bound", "29.5", "--json").stdout)
    assert [g["reading"] for g in narrow["supersessions"]] == ["ambiguous", "supersession"]
    table = audit(db_dsn, "user_g", "--at", "2026-05-01T10:00:10Z").stdout.rstrip().splitlines()
    assert table[-3:] == [
        "gap g1 -> g2: 30 s, ambiguous (bound 0 s)",
        "gap g2 -> g3: 0 s, supersession (bound 0 s)",
        "in effect at 2026-05-01T10:00:10Z: none",
    ]


def test_stamps_that_went_back_are_reported(db_dsn: str, gaps: None) -> None:
    """Temporal property 1-3: a record deleted before it was set (a host clock read before
    the lock, in a store written before stamps were taken under the lock) is named."""
    out = json.loads(audit(db_dsn, "user_b", "--json").stdout)
    assert out["stamps_out_of_order"] == ["b1"]
    assert out["supersessions"] == [
        {"prior": "b1", "successor": "b2", "gap_s": 0, "reading": "supersession"}
    ]
    table = audit(db_dsn, "user_b", "--at", "2026-05-01T12:30:00Z").stdout.rstrip().splitlines()
    assert "stamps out of order (a clock stepped back): b1" in table


def test_check_failures_of_rows_written_around_the_constraints(db_dsn: str, conn: Conn) -> None:
    """Check 3.1, 5.1 and 5.2 from the stored fields alone: a writer that dropped the
    schema's guards stored two records in effect, an undeclared key and an empty set."""
    conn.execute(
        f"DROP INDEX {SCHEMA}.preference_records_in_effect_idx; "
        f"ALTER TABLE {SCHEMA}.preference_records DISABLE TRIGGER preference_records_guard, "
        "DROP CONSTRAINT preference_records_declared_channels_check"
    )
    conn.execute(
        f"INSERT INTO {SCHEMA}.preference_records (preference_id, principal_ref, "
        'declared_channels, set_at, status, channel_preferences, "format") VALUES '
        "('x1', 'user_x', ARRAY['email'], '2026-05-01T09:00:00Z', 'active', "
        "'{\"email\": 1}', NULL), "
        "('x2', 'user_x', ARRAY['sms'], '2026-05-01T10:00:00Z', 'active', "
        '\'{"fax": 1, "sms": 2}\', NULL), '
        "('x3', 'user_x', ARRAY[]::text[], '2026-05-01T11:00:00Z', 'active', NULL, '1')"
    )
    out = json.loads(audit(db_dsn, "user_x", "--json").stdout)
    assert out["check_failures"] == [
        {"check": "3.1", "preference_ids": ["x1", "x2", "x3"]},
        {"check": "5.1", "preference_ids": ["x2"], "channel": "fax"},
        {"check": "5.2", "preference_ids": ["x3"]},
    ]
    table = audit(db_dsn, "user_x", "--at", "2026-05-01T12:00:00Z").stdout
    lines = table.rstrip().splitlines()
    assert lines[-4:-1] == [
        "check 3.1 failed: x1, x2, x3 (more than one record in effect)",
        "check 5.1 failed: x2 (channel 'fax' is not among the record's declared channels)",
        "check 5.2 failed: x3 (the record declares no channels)",
    ]
    clean = json.loads(audit(db_dsn, "user_u", "--json").stdout)
    assert clean["check_failures"] == []


@pytest.mark.parametrize("bound", ["-1", "nan", "inf", "soon", "1e300", ""])
def test_bad_gap_bound_exits_2(db_dsn: str, bound: str) -> None:
    result = audit(db_dsn, "user_u", "--gap-bound", bound)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and result.stdout == ""
    [line] = result.stderr.splitlines()
    assert line.startswith("notify: --gap-bound: ")


def test_unknown_principal_has_an_empty_history(db_dsn: str, history: None) -> None:
    result = audit(db_dsn, "[bold]nobody", "--json")
    assert result.exit_code == 0
    out = json.loads(result.stdout)
    assert out["records"] == [] and out["in_effect"] == {"none": True}
    table = audit(db_dsn, "[bold]nobody")
    assert "[bold]nobody" in table.stdout and table.stdout.rstrip().endswith(": none")


@pytest.mark.parametrize(
    "instant", ["yesterday", "2026-03-10T00:00:00", "2026-13-01T00:00:00Z", ""]
)
def test_bad_instant_exits_2(db_dsn: str, instant: str) -> None:
    result = audit(db_dsn, "user_u", "--at", instant)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and result.stdout == ""
    [line] = result.stderr.splitlines()
    assert line.startswith("notify: --at: ")


@pytest.mark.parametrize(
    "dsn", ["not a dsn at all", "postgresql://127.0.0.1:1/x?connect_timeout=2"]
)
def test_bad_dsn_exits_2(dsn: str) -> None:
    result = CliRunner().invoke(cli, ["records", "audit", "--dsn", dsn, "--principal", "u"])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and result.stdout == ""
    [line] = result.stderr.splitlines()
    assert line.startswith("notify: records audit: ")


def test_missing_schema_exits_2(db_dsn: str) -> None:
    result = audit(db_dsn, "u", "--schema", "nope")
    assert result.exit_code == 2
    [line] = result.stderr.splitlines()
    assert "schema_missing" in line and "notify db migrate" in line
    empty = audit(db_dsn, "u", "--schema", "")
    assert empty.exit_code == 2 and "--schema" in empty.stderr


def test_help_names_the_options() -> None:
    result = CliRunner().invoke(cli, ["records", "audit", "--help"])
    assert result.exit_code == 0
    for option in ("--dsn", "--principal", "--at", "--gap-bound", "--schema", "--json"):
        assert option in result.stdout
    assert format_instant(datetime(2026, 1, 1, tzinfo=UTC)) == "2026-01-01T00:00:00Z"
