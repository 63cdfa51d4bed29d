"""``notify db load`` takes every event of formats.md (issue 27, points 1, 2 and 8): a chat and
a wiki log mixed in one file write both worlds and emit the wiki's activities as a host would
(the inbox then holds the entries of the replay), a type the reference host does not know is
named, a log loaded again is recognised event by event and written once, and a taken key of a
second log is named."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
from click.testing import CliRunner
from pgworld import HOST_SCHEMA, SCHEMA

from notify_cli.main import cli
from notify_core.values.instants import parse_instant

ROOT = Path(__file__).resolve().parents[3]
SPEC = ROOT / "examples" / "spec-example.jsonl"
WIKI = ROOT / "examples" / "wiki-week.jsonl"


def mixed_log(path: Path, extra: list[dict[str, Any]] | None = None) -> Path:
    """The chat example (October) then the wiki week (December), renumbered: one log."""
    objects = [json.loads(line) for f in (SPEC, WIKI) for line in f.read_text().splitlines()]
    objects += extra or []
    for seq, obj in enumerate(objects, start=1):
        obj["seq"] = seq
    path.write_text("".join(json.dumps(obj) + "\n" for obj in objects))
    return path


def count(dsn: str, query: str) -> Any:
    with psycopg.connect(dsn) as conn:
        row = conn.execute(query).fetchone()
    assert row is not None
    return row[0]


def entries(dsn: str) -> Counter[tuple[str, str, str]]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            f"SELECT user_id, category, group_key FROM {SCHEMA}.inbox_entries"
        ).fetchall()
    return Counter((str(a), str(b), str(c)) for a, b, c in rows)


def replay_entries(log: Path) -> Counter[tuple[str, str, str]]:
    result = CliRunner().invoke(cli, ["replay", str(log)])
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    return Counter(
        (o["recipient"], o["category"], o["group_key"])
        for o in lines
        if o["trigger"] == "inbox" and o["decision"] == "new"
    )


def test_a_mixed_log_writes_both_worlds_and_the_inbox_of_the_replay(
    new_database: Callable[[str | None], str], pg_template: str, tmp_path: Path
) -> None:
    log = mixed_log(
        tmp_path / "mixed.jsonl",
        [
            {"type": "poll.created", "occurred_at": "2026-12-20T00:00:00Z", "payload": {}},
        ],
    )
    dsn = new_database(pg_template)
    runner = CliRunner()
    result = runner.invoke(cli, ["db", "load", str(log), "--dsn", dsn])
    assert result.exit_code == 0, result.output
    closing = result.stderr.splitlines()[-1]
    assert closing.startswith(f"{log}: loaded 341 events into {SCHEMA}.event_log (seq 1-341)")
    assert closing.endswith(
        "; types the reference host does not know, in the event log only: poll.created (1)"
    )
    # The chat world and the wiki's world, users in both.
    assert count(dsn, f"SELECT count(*) FROM {HOST_SCHEMA}.threads") > 0
    for table in ("wiki_users", "wiki_pages", "wiki_watchers", "wiki_sites"):
        assert count(dsn, f"SELECT count(*) FROM {HOST_SCHEMA}.{table}") > 0, table
    # Each activity was emitted and fanned out: the inbox holds the replay's new entries.
    expected = replay_entries(log)
    assert expected and entries(dsn) == expected
    from_pg = runner.invoke(cli, ["replay", "--from-pg", dsn, "--include-skips"])
    from_file = runner.invoke(cli, ["replay", str(log), "--include-skips"])
    assert from_pg.exit_code == 0 and from_pg.stdout == from_file.stdout


def test_a_log_loaded_again_is_written_once(
    new_database: Callable[[str | None], str], pg_template: str, tmp_path: Path
) -> None:
    """Half a wiki log, then the whole (to end now): the second load skips the first half
    and writes the rest; a third writes nothing. The database ends as one load of the whole
    log leaves it (the inbox of the replay), even though --end-now moved the instants: the
    rest keeps the span the first half was moved by (ending now would take it back in time
    from the first half, which formats.md section 2 refuses)."""
    lines = WIKI.read_text().splitlines(keepends=True)
    half = tmp_path / "half.jsonl"
    half.write_text("".join(lines[:150]))
    dsn = new_database(pg_template)
    runner = CliRunner()
    first = runner.invoke(cli, ["db", "load", str(half), "--dsn", dsn, "--end-now"])
    assert first.exit_code == 0, first.output
    second = runner.invoke(cli, ["db", "load", str(WIKI), "--dsn", dsn, "--end-now"])
    assert second.exit_code == 0, second.output
    assert f"loaded {len(lines) - 150} events" in second.stderr
    assert "; 150 loaded before, skipped" in second.stderr
    third = runner.invoke(cli, ["db", "load", str(WIKI), "--dsn", dsn])
    assert third.exit_code == 0, third.output
    assert third.stderr.splitlines()[-1] == (
        f"{WIKI}: loaded 0 events into {SCHEMA}.event_log and the reference host "
        f"{HOST_SCHEMA}; {len(lines)} loaded before, skipped"
    )
    assert count(dsn, f"SELECT count(*) FROM {SCHEMA}.event_log") == len(lines)
    assert count(dsn, f"SELECT count(*) FROM {SCHEMA}.inbox_outbox") >= 0
    assert entries(dsn) == replay_entries(WIKI)
    # --end-now shifted the half to end just now, and the rest by the same span.
    assert " as its events loaded before;" in second.stderr
    at = {
        seq: count(dsn, f"SELECT occurred_at FROM {SCHEMA}.event_log WHERE seq = {seq}")
        for seq in (150, len(lines))
    }
    assert abs(datetime.now(UTC) - at[150]) < timedelta(minutes=5)
    logged = [parse_instant(json.loads(lines[i])["occurred_at"]) for i in (149, len(lines) - 1)]
    assert at[len(lines)] - at[150] == logged[1] - logged[0] > timedelta(0)


def test_with_the_consumer_a_second_load_skips_what_is_loaded(
    new_database: Callable[[str | None], str], pg_template: str
) -> None:
    dsn = new_database(pg_template)
    runner = CliRunner()
    heads = []
    for _ in range(2):
        result = runner.invoke(cli, ["db", "load", str(SPEC), "--dsn", dsn, "--consume"])
        assert result.exit_code == 0, result.output
        heads.append(count(dsn, f"SELECT count(*) FROM {SCHEMA}.event_log"))
    assert "; 13 loaded before, skipped" in result.stderr
    # The consumer may append events of its own (automatic following); the log's are once.
    assert heads[0] == heads[1] >= 13


def test_a_taken_key_of_a_second_log_is_named(
    new_database: Callable[[str | None], str], pg_template: str, tmp_path: Path
) -> None:
    def log(name: str, user: str, device: str, minute: int) -> Path:
        # The second log comes later: one dated before the first is refused (formats.md 2).
        at = f"2026-10-23T08:0{minute}:0{{}}Z"
        objects = [
            {"type": "user.created", "payload": {"user": user, "kind": "human"}},
            {
                "type": "device.registered",
                "payload": {"device": device, "user": user, "platform": "ios", "state": "active"},
            },
            {
                "type": "push.registered",
                "payload": {"registration": "r-1", "device": device, "provider": "apns"},
            },
        ]
        path = tmp_path / name
        path.write_text(
            "".join(
                json.dumps({"seq": n, "occurred_at": at.format(n), **obj}) + "\n"
                for n, obj in enumerate(objects, start=1)
            )
        )
        return path

    dsn = new_database(pg_template)
    runner = CliRunner()
    assert (
        runner.invoke(
            cli, ["db", "load", str(log("a.jsonl", "u-a", "d-a", 0)), "--dsn", dsn]
        ).exit_code
        == 0
    )
    second = log("b.jsonl", "u-b", "d-b", 1)
    result = runner.invoke(cli, ["db", "load", str(second), "--dsn", dsn])
    assert result.exit_code == 2
    assert result.stderr == (
        f"notify: db load: {second}:3: push.registered registration=r-1 device=d-b: the key "
        "exists already (23505: push_registrations_pkey of table push_registrations) "
        "(already_exists)\n"
    )
