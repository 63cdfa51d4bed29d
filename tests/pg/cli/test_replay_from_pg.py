"""``notify replay --from-pg``: the log in ``event_log`` replays exactly like the same file."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
from click.testing import CliRunner
from pgworld import SCHEMA

from notify_cli.main import cli
from notify_core.values.instants import parse_instant
from notify_pg import EventLog, NewEvent

ROOT = Path(__file__).resolve().parents[3]
LOGS = [ROOT / "examples" / "spec-example.jsonl", ROOT / "tests" / "replay" / "run_completed.jsonl"]


def append_file(conn: psycopg.Connection[Any], log: Path) -> None:
    events = []
    for line in log.read_text().splitlines():
        obj = json.loads(line)
        events.append(
            NewEvent(
                type=obj["type"],
                payload=obj["payload"],
                actor=obj.get("actor"),
                audience=obj.get("audience"),
                scope=obj.get("scope"),
                occurred_at=parse_instant(obj["occurred_at"]),
            )
        )
    with conn.transaction():
        EventLog(SCHEMA).append_many(conn, events)


def test_replay_from_pg_equals_the_file(conn: psycopg.Connection[Any], db_dsn: str) -> None:
    for log in LOGS:
        conn.execute(f"TRUNCATE {SCHEMA}.event_log RESTART IDENTITY".encode())
        append_file(conn, log)
        runner = CliRunner()
        from_file = runner.invoke(cli, ["replay", str(log), "--include-skips"])
        from_pg = runner.invoke(cli, ["replay", "--from-pg", db_dsn, "--include-skips"])
        assert from_file.exit_code == from_pg.exit_code == 0, from_pg.output
        assert from_pg.stdout == from_file.stdout
        assert from_pg.stdout  # the logs do give hints


def test_replay_from_pg_bad_dsn_is_exit_2() -> None:
    result = CliRunner().invoke(cli, ["replay", "--from-pg", "host=/nonexistent dbname=x"])
    assert result.exit_code == 2
    assert "cannot read notify.event_log" in result.stderr


def test_replay_from_pg_without_the_schema_is_one_line(
    new_database: Callable[[str | None], str],
) -> None:
    empty = new_database(None)
    result = CliRunner().invoke(cli, ["replay", "--from-pg", empty, "--include-skips"])
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    (line,) = result.stderr.splitlines()
    assert line.startswith("notify: cannot read notify.event_log: ")
    assert "Traceback" not in result.output
