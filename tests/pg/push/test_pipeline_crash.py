"""Seed 001 requirement 1, TestRestartMidRound_NoDuplicateNoLoss: a consumer round inserts its
due work and push sends and moves its cursor in one transaction, so a crash in the middle of a
round (its backend terminated, a handler error, a cancelled query) neither doubles nor loses a
hint: a fresh worker reaches the head and the hints equal a replay of the same log. With
recipient partitions the crashing round is one partition's, while another partition has
already handled the whole burst: the same holds."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from pgpipeline import PgRun, assert_same_hints
from pgworld import SCHEMA

from notify_core.events.log import Event, parse_event
from notify_core.replay.lines import dumps_hint
from notify_core.replay.run import Replay, policy_from_mapping
from notify_pg import NewEvent
from notify_pg.db.errors import StorageError
from notify_pg.push.worker import Worker, WorkerConfig

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "replay"))
from build import POLICY, Log

CRASH_AT = 5  # events handled in the round before it fails


def burst_log() -> tuple[list[str], int]:
    """The team; Sam follows t with all, the Owner reads c with all; then twelve messages in
    one window from three writers, two with mentions. Returns the lines and the burst's start."""
    log = Log().team().pref("sam", "thread", "t", "all").pref("owner", "channel", "c", "all")
    head = len(log.events)
    writers = ["alex", "sam", "owner"]
    for i in range(12):
        extra: dict[str, Any] = {}
        if i in (4, 9):
            extra["mention_ids"] = ["alex", "sam"]
        log.at(60 + i * 4).msg(f"m{i + 1}", writers[i % 3], seq=i + 1, **extra)
    return [json.dumps(e, separators=(",", ":")) for e in log.events], head


def replayed(lines: list[str]) -> list[str]:
    replay = Replay(policy=policy_from_mapping(_policy()), include_skips=True)
    return [dumps_hint(h) for h in replay.run(lines)]  # type: ignore[arg-type]


def _policy() -> dict[str, Any]:
    import tomllib

    return tomllib.loads(POLICY)


def append_burst(run: PgRun, events: list[Event]) -> None:
    for event in events:
        with run.conn.transaction():
            run.loader.apply(run.conn, event)
            seq = run.log.append(
                run.conn,
                NewEvent(
                    type=event.type,
                    payload=dict(event.payload),
                    actor=event.actor,
                    occurred_at=event.occurred_at,
                ),
            )
        run.seq_map[seq] = event.seq


def terminate(dsn: str) -> Callable[[psycopg.Connection[Any]], None]:
    def crash(conn: psycopg.Connection[Any]) -> None:
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", [conn.info.backend_pid])
        conn.execute("SELECT 1")  # the round's backend is gone

    return crash


def handler_error(dsn: str) -> Callable[[psycopg.Connection[Any]], None]:
    def crash(conn: psycopg.Connection[Any]) -> None:
        raise RuntimeError("a bug in a handler")

    return crash


def cancel(dsn: str) -> Callable[[psycopg.Connection[Any]], None]:
    def crash(conn: psycopg.Connection[Any]) -> None:
        threading.Timer(0.2, conn.cancel_safe).start()
        conn.execute("SELECT pg_sleep(30)")

    return crash


@pytest.mark.parametrize("parts", [1, 2], ids=lambda n: f"partitions{n}")
@pytest.mark.parametrize("how", [terminate, handler_error, cancel], ids=lambda f: f.__name__)
def test_restart_mid_round_no_duplicate_no_loss(
    how: Callable[[str], Callable[[psycopg.Connection[Any]], None]],
    parts: int,
    new_database: Callable[[str | None], str],
    pg_template: str,
) -> None:
    lines, head = burst_log()
    expected = replayed(lines)
    dsn = new_database(pg_template)
    with psycopg.connect(dsn, autocommit=True) as conn:
        config = WorkerConfig(partitions=parts)
        run = PgRun(dsn, conn, policy_from_mapping(_policy()), config=config)
        run.feed_lines(lines[:head])
        burst = [parse_event(json.loads(line)) for line in lines[head:]]
        run.due(burst[0].occurred_at)
        append_burst(run, burst)
        if parts > 1:
            # Partition 1 handles the whole burst first; the crash hits partition 0's round.
            with conn.transaction():
                conn.execute(f"SELECT 1 FROM {SCHEMA}.consumer_cursors WHERE part = 0 FOR UPDATE")
                assert run.worker.consume() == len(burst)
        cursor_rows = f"SELECT part, position FROM {SCHEMA}.consumer_cursors ORDER BY part"
        before = conn.execute(cursor_rows).fetchall()
        sends_before = conn.execute(f"SELECT count(*) FROM {SCHEMA}.push_sends").fetchone()
        hints_before = conn.execute("SELECT count(*) FROM public.sink_hints").fetchone()

        handled = 0
        crash = how(dsn)

        def hook(round_conn: psycopg.Connection[Any], event: Event | None) -> None:
            nonlocal handled
            handled += 1
            if handled == CRASH_AT:
                crash(round_conn)

        crashing = Worker(
            run.worker.connection.connect,
            run.host,
            schema=SCHEMA,
            policy=run.worker.push.policy,
            config=config,
            clock=run.clock,
            sink=run.sink,
            on_event=hook,
        )
        with pytest.raises((StorageError, RuntimeError)):
            crashing.consume()
        crashing.close()
        assert handled == CRASH_AT
        # Nothing of the round stayed: cursor, push sends, hints.
        assert conn.execute(cursor_rows).fetchall() == before
        assert conn.execute(f"SELECT count(*) FROM {SCHEMA}.push_sends").fetchone() == sends_before
        assert conn.execute("SELECT count(*) FROM public.sink_hints").fetchone() == hints_before

        # A fresh worker reaches the head and finishes: the same hints as a replay.
        run.finish()
        got = run.hint_lines()
        sends = run.push_sends()
        run.worker.close()
    assert_same_hints(got, expected, parts)
    # Exactly one push send per hint and routed registration, one notification id per hint.
    routed = [
        (json.loads(line)["recipient"], route["device"])
        for line in got
        for route in json.loads(line).get("routes", [])
        if route["via"] == "push"
    ]
    assert len(sends) == len(routed)
    by_hint: dict[str, set[str]] = {}
    for send in sends:
        assert send["registration_id"] not in by_hint.setdefault(send["notification_id"], set())
        by_hint[send["notification_id"]].add(send["registration_id"])
    assert len(by_hint) == sum(
        1 for line in got if json.loads(line)["decision"] == "send" and '"via":"push"' in line
    )
