"""``notify db load``: an event log into the reference host and the event log as a host writes
it, with the consumer between events (the hints of `notify replay`), and shifted to end now
(the worker then sends its pushes instead of expiring them)."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner
from pgworld import SCHEMA

from notify_cli.main import cli
from notify_core.values.instants import parse_instant
from notify_reference_host.load import shift_to_end_now

ROOT = Path(__file__).resolve().parents[3]
SPEC = ROOT / "examples" / "spec-example.jsonl"
WIKI = ROOT / "examples" / "wiki-week.jsonl"
LOGS = [
    SPEC,
    ROOT / "tests" / "replay" / "badge_sync.jsonl",
    ROOT / "tests" / "replay" / "automatic_following.jsonl",
]


def policy_options(log: Path) -> list[str]:
    toml = log.with_suffix(".toml")
    return ["--policy", str(toml)] if toml.exists() else []


@pytest.mark.parametrize("log", LOGS, ids=[p.stem for p in LOGS])
def test_load_with_the_consumer_gives_the_hints_of_replay(
    log: Path, new_database: Callable[[str | None], str], pg_template: str, tmp_path: Path
) -> None:
    """--consume runs the pipeline between events on the log's clock, as the parity test
    does: its hints are `notify replay --include-skips` of the same file, byte for byte."""
    dsn = new_database(pg_template)
    runner = CliRunner()
    replay = runner.invoke(cli, ["replay", str(log), *policy_options(log), "--include-skips"])
    assert replay.exit_code == 0, replay.output
    hints = tmp_path / "hints.jsonl"
    args = ["db", "load", str(log), "--dsn", dsn, "--consume", "--include-skips"]
    result = runner.invoke(cli, [*args, *policy_options(log), "--hints", str(hints)])
    assert result.exit_code == 0, result.output
    assert hints.read_text() == replay.stdout
    assert replay.stdout  # every log gives hints
    events = sum(1 for line in log.read_text().splitlines() if line.strip())
    closing = result.stderr.splitlines()[-1]
    assert closing.startswith(f"{log}: loaded {events} events into {SCHEMA}.event_log")
    assert "the consumer handled them" in closing


def test_loaded_log_replays_from_postgresql_byte_for_byte(
    new_database: Callable[[str | None], str], pg_template: str
) -> None:
    """Without --consume only the host's writes happen: `notify replay --from-pg` then gives
    exactly what `notify replay` of the file gives."""
    dsn = new_database(pg_template)
    runner = CliRunner()
    result = runner.invoke(cli, ["db", "load", str(SPEC), "--dsn", dsn])
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines()[-1] == (
        f"{SPEC}: loaded 13 events into notify.event_log (seq 1-13) and the reference host host"
    )
    from_pg = runner.invoke(cli, ["replay", "--from-pg", dsn, "--include-skips"])
    from_file = runner.invoke(cli, ["replay", str(SPEC), "--include-skips"])
    assert from_pg.exit_code == 0 and from_file.exit_code == 0
    assert from_pg.stdout == from_file.stdout
    with psycopg.connect(dsn) as conn:
        # The world is in the reference host: the people of the log.
        users = conn.execute("SELECT count(*) FROM host.users").fetchone()
    assert users is not None and users[0] > 0


def test_loaded_wiki_log_replays_from_postgresql_byte_for_byte(
    new_database: Callable[[str | None], str], pg_template: str
) -> None:
    """A wiki log's events keep their top-level ``origin`` in event_log (absent: user), so
    `notify replay --from-pg` gives the entry and mail lines of `notify replay` of the file."""
    dsn = new_database(pg_template)
    runner = CliRunner()
    result = runner.invoke(cli, ["db", "load", str(WIKI), "--dsn", dsn])
    assert result.exit_code == 0, result.output
    from_pg = runner.invoke(cli, ["replay", "--from-pg", dsn, "--include-skips"])
    from_file = runner.invoke(cli, ["replay", str(WIKI), "--include-skips"])
    assert from_pg.exit_code == 0 and from_file.exit_code == 0, from_pg.output
    assert from_pg.stdout == from_file.stdout
    kinds = {json.loads(line)["trigger"] for line in from_pg.stdout.splitlines()}
    assert {"inbox", "mail"} <= kinds
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            f"SELECT origin, count(*) FROM {SCHEMA}.event_log GROUP BY origin ORDER BY origin"
        ).fetchall()
    # Only a non-user origin is stored: chat events and user edits keep a NULL column.
    assert rows == [("bulk", 2), ("import", 4), (None, len(WIKI.read_text().splitlines()) - 6)]


def test_end_now_lets_the_worker_send_the_pushes(
    new_database: Callable[[str | None], str], pg_template: str
) -> None:
    """The example lies in the past: loaded as it is, its pushes come out expired; shifted to
    end now, `notify worker --fake-provider` sends the one due now (a delayed release comes
    due a minute after the log's end)."""
    runner = CliRunner()
    outcomes = {}
    for shifted in (False, True):
        dsn = new_database(pg_template)
        load = ["db", "load", str(SPEC), "--dsn", dsn] + (["--end-now"] if shifted else [])
        result = runner.invoke(cli, load)
        assert result.exit_code == 0, result.output
        if shifted:
            assert "to end now" in result.stderr.splitlines()[-1]
            with psycopg.connect(dsn) as conn:
                row = conn.execute(f"SELECT max(occurred_at) FROM {SCHEMA}.event_log").fetchone()
            assert row is not None
            assert abs(datetime.now(UTC) - row[0]) < timedelta(minutes=1)
        worker = runner.invoke(cli, ["worker", "--dsn", dsn, "--once", "--fake-provider", "fcm"])
        assert worker.exit_code == 0, worker.output
        lines = [json.loads(line) for line in worker.stderr.splitlines()]
        outcomes[shifted] = sorted(
            line.get("outcome") or line["reason"]
            for line in lines
            if line["msg"] in ("push sent", "push skipped")
        )
    assert outcomes == {False: ["expired", "expired"], True: ["accepted"]}


def test_shift_moves_every_instant_by_one_span() -> None:
    objects = [
        {"seq": 1, "occurred_at": "2026-10-23T08:00:00Z", "payload": {}},
        {
            "seq": 2,
            "occurred_at": "2026-10-23T09:00:00Z",
            "payload": {
                "preference": {
                    "target": {"kind": "thread", "id": "t"},
                    "level": "mute",
                    "muted_until": "2026-10-23T10:00:00Z",
                    "version": 1,
                }
            },
        },
    ]
    now = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    span = shift_to_end_now(objects, now)
    assert span == now - datetime(2026, 10, 23, 9, 0, tzinfo=UTC)
    assert [parse_instant(o["occurred_at"]) for o in objects] == [now - timedelta(hours=1), now]
    preference = objects[1]["payload"]["preference"]  # type: ignore[index]
    assert parse_instant(preference["muted_until"]) == now + timedelta(hours=1)
    assert shift_to_end_now([], now) == timedelta(0)


def test_a_bad_line_loads_nothing(
    new_database: Callable[[str | None], str], pg_template: str, tmp_path: Path
) -> None:
    dsn = new_database(pg_template)
    lines = SPEC.read_text().splitlines()
    lines[4] = lines[4].replace('"occurred_at":"2026-10-23T08:00:00Z"', '"occurred_at":"yesterday"')
    log = tmp_path / "bad.jsonl"
    log.write_text("\n".join(lines) + "\n")
    runner = CliRunner()
    result = runner.invoke(cli, ["db", "load", str(log), "--dsn", dsn])
    assert result.exit_code == 2
    assert f"{log}:5: bad event at /occurred_at" in result.stderr
    assert result.stderr.splitlines()[-1] == f"notify: {log}: 1 bad line; nothing was loaded"
    assert "Traceback" not in result.output
    with psycopg.connect(dsn) as conn:
        assert conn.execute(f"SELECT count(*) FROM {SCHEMA}.event_log").fetchone() == (0,)
    for args in (
        ["db", "load", str(tmp_path / "missing.jsonl"), "--dsn", dsn],
        ["db", "load", str(SPEC), "--dsn", "host=/nonexistent dbname=x"],
        ["db", "load", str(SPEC), "--dsn", dsn, "--hints", "-"],
    ):
        result = runner.invoke(cli, args)
        assert result.exit_code == 2, (args, result.output)
        assert "Traceback" not in result.output


def test_a_log_longer_than_a_batch_loads_as_event_by_event_and_stops_at_a_bad_event(
    new_database: Callable[[str | None], str], pg_template: str, tmp_path: Path
) -> None:
    """`db load` writes 500 events a transaction: a log over three batches replays from
    PostgreSQL exactly as from the file; an event the host's write refuses in the second
    batch (a preference level no store takes) is named by its line, and the events before
    it stay loaded, as they did when each event was its own transaction."""
    from notify_cli.db import LOAD_BATCH

    runner = CliRunner()
    log = tmp_path / "synth.jsonl"
    made = runner.invoke(cli, ["synth", "--events", "1200", "--users", "20", "--out", str(log)])
    assert made.exit_code == 0, made.output
    dsn = new_database(pg_template)
    result = runner.invoke(cli, ["db", "load", str(log), "--dsn", dsn])
    assert result.exit_code == 0, result.output
    assert "loaded 1,200 events into notify.event_log (seq 1-1200)" in result.stderr
    from_pg = runner.invoke(cli, ["replay", "--from-pg", dsn, "--include-skips"])
    from_file = runner.invoke(cli, ["replay", str(log), "--include-skips"])
    assert from_pg.exit_code == 0 and from_file.exit_code == 0
    assert from_pg.stdout == from_file.stdout

    lines = log.read_text().splitlines()
    bad_line = LOAD_BATCH + 200
    event = json.loads(lines[bad_line - 1])
    lines[bad_line - 1] = json.dumps(
        {
            "seq": event["seq"],
            "type": "notification_pref.updated",
            "occurred_at": event["occurred_at"],
            "actor": "u-01",
            "audience": "u-01",
            "payload": {"preference": {"target": {"kind": "thread", "id": "t"}, "level": "loud"}},
        }
    )
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    dsn = new_database(pg_template)
    result = runner.invoke(cli, ["db", "load", str(bad), "--dsn", dsn])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"notify: db load: {bad}:{bad_line}: ")
    assert "Traceback" not in result.output
    with psycopg.connect(dsn) as conn:
        loaded = conn.execute(f"SELECT count(*), max(seq) FROM {SCHEMA}.event_log").fetchone()
    assert loaded == (bad_line - 1, bad_line - 1)


def _clock_line(stderr: str) -> str:
    return next(line for line in stderr.splitlines() if "(clock_went_back)" in line)


def test_a_clock_going_back_is_refused_as_replay_refuses_it(
    new_database: Callable[[str | None], str], pg_template: str, tmp_path: Path
) -> None:
    """formats.md section 2: ``occurred_at`` never decreases. Within one log `db load`
    prints `notify replay`'s line for it; after events the database holds already, an event
    dated before them is refused with the same line (file, line, the instant it goes back
    from), exit 2, and nothing of that log is written (the log would raise it silently)."""
    runner = CliRunner()
    dsn = new_database(pg_template)
    back = tmp_path / "back.jsonl"
    back.write_text(
        '{"seq":1,"type":"user.created","occurred_at":"2026-10-19T08:00:00Z",'
        '"payload":{"user":"u-a","kind":"human"}}\n'
        '{"seq":2,"type":"user.created","occurred_at":"2020-10-19T08:00:00Z",'
        '"payload":{"user":"u-b","kind":"human"}}\n'
    )
    replay = runner.invoke(cli, ["replay", str(back)])
    loaded = runner.invoke(cli, ["db", "load", str(back), "--dsn", dsn])
    assert replay.exit_code == loaded.exit_code == 2
    expected = (
        f"{back}:2: bad event at /occurred_at: occurred_at goes back from "
        "2026-10-19T08:00:00+00:00 (clock_went_back)"
    )
    assert _clock_line(replay.stderr) == _clock_line(loaded.stderr) == expected

    first = runner.invoke(cli, ["db", "load", str(SPEC), "--dsn", dsn])
    assert first.exit_code == 0, first.output
    old = tmp_path / "old.jsonl"
    old.write_text(
        '{"seq":1,"type":"user.created","occurred_at":"2020-10-19T08:00:00Z",'
        '"payload":{"user":"u-a","kind":"human"}}\n'
        '{"seq":2,"type":"user.created","occurred_at":"2030-10-19T08:00:00Z",'
        '"payload":{"user":"u-b","kind":"human"}}\n'
    )
    for consume in ([], ["--consume"]):
        result = runner.invoke(cli, ["db", "load", str(old), "--dsn", dsn, *consume])
        assert result.exit_code == 2, result.output
        assert "Traceback" not in result.output
        assert _clock_line(result.stderr) == (
            f"{old}:1: bad event at /occurred_at: occurred_at goes back from "
            "2026-10-23T09:00:20+00:00 (clock_went_back)"
        )
        assert result.stderr.splitlines()[-1] == (
            f"notify: {old}: 1 bad line: the database's event log ({SCHEMA}.event_log) "
            "already ends at 2026-10-23T09:00:20Z; nothing was loaded"
        )
    with psycopg.connect(dsn) as conn:
        count = conn.execute(f"SELECT count(*) FROM {SCHEMA}.event_log").fetchone()
    assert count == (13,)
    again = runner.invoke(cli, ["db", "load", str(SPEC), "--dsn", dsn])
    assert again.exit_code == 0, again.output  # loaded before: skipped, nothing goes back
    assert "13 loaded before, skipped" in again.stderr
