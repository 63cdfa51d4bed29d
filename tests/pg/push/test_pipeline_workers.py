"""Several workers on one database: each partition of the consumer runs one round at a time (its
cursor is taken with FOR UPDATE SKIP LOCKED; with two partitions two rounds run side by side),
due work is claimed with FOR UPDATE SKIP LOCKED, push sends under a lease: every hint once,
every push send once, nothing left behind."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from pgpipeline import FAR, Log, PgRun, lines_of
from pgworld import SCHEMA
from test_pipeline_crash import _policy, append_burst, replayed

from notify_core.events.log import parse_event
from notify_core.replay.run import policy_from_mapping
from notify_pg.push.providers import FakeProvider
from notify_pg.push.worker import Worker, WorkerConfig


def add_reader(log: Log, person: str, registration: str) -> None:
    """A reader of space ``s`` with an android phone, its push registration and level all on
    channel ``c``."""
    log.user(person)
    log.add("access.granted", {"user": person, "target": {"kind": "space", "id": "s"}})
    log.device(f"{person}-phone", person, "android")
    log.add(
        "push.registered",
        {"registration": registration, "device": f"{person}-phone", "provider": "fcm"},
    )
    log.pref(person, "channel", "c", "all")


def wide_burst() -> tuple[list[str], int]:
    """Eight more readers with level all on the channel; 30 messages in one window."""
    log = Log().team().pref("sam", "thread", "t", "all").pref("owner", "channel", "c", "all")
    for i in range(8):
        add_reader(log, f"reader{i}", f"r-reader{i}-phone")
    head = len(log.events)
    writers = ["alex", "sam", "owner", "reader0"]
    for i in range(30):
        extra: dict[str, Any] = {"mention_ids": ["robin", "alex"]} if i % 7 == 3 else {}
        log.at(60 + i).msg(f"m{i + 1}", writers[i % 4], seq=i + 1, **extra)
    return lines_of(log), head


@pytest.mark.parametrize("parts", [1, 2, 3], ids=lambda n: f"partitions{n}")
def test_two_workers_drain_one_database(
    parts: int,
    new_database: Callable[[str | None], str],
    pg_template: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Two workers (threads with their own connections) drain one database at once: exactly
    the hints of one consumer (a replay), compared as sorted lists of hint lines; with
    partitions their consumer rounds run side by side."""
    caplog.set_level(logging.INFO, logger="notify_pg.worker")
    lines, head = wide_burst()
    expected = sorted(replayed(lines))
    dsn = new_database(pg_template)
    with psycopg.connect(dsn, autocommit=True) as conn:
        config = WorkerConfig(batch_size=4, due_batch=3, send_batch=5, partitions=parts)
        run = PgRun(dsn, conn, policy_from_mapping(_policy()), config=config)
        run.feed_lines(lines[:head])
        burst = [parse_event(json.loads(line)) for line in lines[head:]]
        run.due(burst[0].occurred_at)
        append_burst(run, burst)
        run.clock.set(FAR)  # every window has ended; the pushes are long past max_age
        workers = two_workers(dsn, run, config)
        errors: list[BaseException] = []
        start = threading.Barrier(2)

        def settled() -> bool:
            with psycopg.connect(dsn, autocommit=True) as watch:
                row = watch.execute(
                    f"SELECT (SELECT max(seq) FROM {SCHEMA}.event_log) - coalesce((SELECT"
                    f" min(position) FROM {SCHEMA}.consumer_cursors), 0) + (SELECT count(*) FROM"
                    f" {SCHEMA}.windows) + (SELECT count(*) FROM {SCHEMA}.delayed_releases)"
                    f" + (SELECT count(*) FROM {SCHEMA}.push_sends)"
                ).fetchone()
            return row == (0,)

        def work(worker: Worker) -> None:
            try:
                start.wait()
                while not settled():
                    worker.run_once(max_batches=1)
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(w,)) for w in workers]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        for w in workers:
            w.close()
        assert not errors, errors
        got = run.hint_lines()
        left = conn.execute(
            f"SELECT (SELECT count(*) FROM {SCHEMA}.windows) + (SELECT count(*) FROM"
            f" {SCHEMA}.delayed_releases) + (SELECT count(*) FROM {SCHEMA}.push_sends)"
        ).fetchone()
        ids: list[Any] = conn.execute(
            "SELECT notification_id FROM public.sink_hints WHERE notification_id IS NOT NULL"
        ).fetchall()
        run.worker.close()
    # Rounds of both workers interleave (and write their hints in that order): compare sets.
    assert sorted(got) == expected
    assert left == (0,)
    assert len(ids) == len(set(ids))
    # The burst and the follow events the consumer appended for Alex, the Owner and reader0,
    # handled once by each partition: a round that took several free partitions at one
    # position (3 partitions: a worker's share is 2) handled its events for each of them.
    rounds = [
        r.fields  # type: ignore[attr-defined]
        for r in caplog.records
        if r.getMessage() == "consumer round" and r.threadName != threading.main_thread().name
    ]
    assert sum(f["events"] * f["taken"] for f in rounds) == parts * (len(burst) + 3)
    assert sum(f["events"] for f in rounds) == sum(w.stats.events for w in workers)
    assert sum(w.stats.partition_events for w in workers) == parts * (len(burst) + 3)


def two_workers(dsn: str, run: PgRun, config: WorkerConfig) -> list[Worker]:
    """Two more workers on the run's database, each with its own connection."""
    providers = [FakeProvider("apns"), FakeProvider("fcm")]
    return [
        Worker(
            lambda: psycopg.connect(dsn, autocommit=True),
            run.host,
            schema=SCHEMA,
            policy=run.worker.push.policy,
            config=config,
            clock=run.clock,
            providers=providers,
            sink=run.sink,
        )
        for _ in range(2)
    ]


def consumer_cursors(conn: psycopg.Connection[Any]) -> list[tuple[int, int]]:
    """The consumer's cursors as (partition, position)."""
    rows = conn.execute(
        f"SELECT part, position FROM {SCHEMA}.consumer_cursors ORDER BY part"
    ).fetchall()
    return [(int(p), int(pos)) for p, pos in rows]


def test_a_round_before_the_other_worker_joins_reads_its_events_once(
    new_database: Callable[[str | None], str], pg_template: str
) -> None:
    """The interleaving that made test_two_workers_drain_one_database[partitions3] flaky, step
    by step: beside the run's worker, the first worker's round starts before the second joined
    (2 workers: share 2 of 3), takes two partitions at one position and reads each event once
    for both; the second worker's round then takes the third (share 1). A round of k of the 3
    partitions whose first page is full reads on to 3/k pages (6 events for two, 12 for one).
    Every partition still handles every event (the hints of a replay); the events counted are
    the events read."""
    lines, head = wide_burst()
    expected = sorted(replayed(lines))
    dsn = new_database(pg_template)
    with psycopg.connect(dsn, autocommit=True) as conn:
        config = WorkerConfig(batch_size=4, due_batch=3, send_batch=5, partitions=3)
        run = PgRun(dsn, conn, policy_from_mapping(_policy()), config=config)
        run.feed_lines(lines[:head])
        burst = [parse_event(json.loads(line)) for line in lines[head:]]
        run.due(burst[0].occurred_at)
        append_burst(run, burst)
        run.clock.set(FAR)
        start = consumer_cursors(conn)
        assert len({pos for _p, pos in start}) == 1
        position = start[0][1]
        first, second = two_workers(dsn, run, config)
        assert first.consume() == 6
        assert consumer_cursors(conn) == [(0, position + 6), (1, position + 6), (2, position)]
        assert first.stats.events == 6  # two partitions, each event read once
        assert first.stats.partition_events == 12
        assert second.consume() == 12  # it joins: 3 workers, one partition a round
        assert consumer_cursors(conn) == [(0, position + 6), (1, position + 6), (2, position + 12)]
        for _ in range(1_000):
            if first.run_once(max_batches=1) + second.run_once(max_batches=1) == 0:
                break
        log_head = conn.execute(f"SELECT max(seq) FROM {SCHEMA}.event_log").fetchone()
        assert log_head is not None
        assert consumer_cursors(conn) == [(p, log_head[0]) for p in range(3)]
        first.close()
        second.close()
        got = run.hint_lines()
        run.worker.close()
    assert sorted(got) == expected
    assert first.stats.failures == second.stats.failures == 0
    # Every partition handled every event; the first round read 6 of them for two partitions.
    assert first.stats.events + second.stats.events == 3 * (len(burst) + 3) - 6
    assert first.stats.partition_events + second.stats.partition_events == 3 * (len(burst) + 3)


def test_a_worker_idle_longer_than_the_takeover_does_not_count_in_the_share(
    new_database: Callable[[str | None], str], pg_template: str
) -> None:
    """A joined worker whose session has been idle for longer than ``partition_takeover``
    (paused, busy in a long mail round) leaves the partitions to the working one: its round
    takes both at one position. Once it runs a statement again it counts: its own round then
    takes its share, one partition, and reads on to two pages (it decides for half of the
    recipients)."""
    lines, head = wide_burst()
    dsn = new_database(pg_template)
    with psycopg.connect(dsn, autocommit=True) as conn:
        config = WorkerConfig(
            batch_size=4, partitions=2, partition_takeover=timedelta(milliseconds=500)
        )
        run = PgRun(dsn, conn, policy_from_mapping(_policy()), config=config)
        run.feed_lines(lines[:head])
        burst = [parse_event(json.loads(line)) for line in lines[head:]]
        run.due(burst[0].occurred_at)
        append_burst(run, burst)
        run.clock.set(FAR)
        position = consumer_cursors(conn)[0][1]
        first, second = two_workers(dsn, run, config)
        first.prepare()
        second.prepare()  # joined: with the run's worker, three sessions hold the lock
        time.sleep(0.7)
        assert first.consume() == 4
        assert consumer_cursors(conn) == [(0, position + 4), (1, position + 4)]
        assert (first.stats.events, first.stats.partition_events) == (4, 8)
        # The first worker's session was just seen: two workers, a share of one partition.
        assert second.consume() == 8
        assert sorted(pos for _p, pos in consumer_cursors(conn)) == [position + 4, position + 12]
        assert (second.stats.events, second.stats.partition_events) == (8, 8)
        first.close()
        second.close()
        run.worker.close()


def test_a_fan_out_costs_a_constant_number_of_statements(
    new_database: Callable[[str | None], str],
    pg_template: str,
    monkeypatch: Any,
) -> None:
    """Seed 001 TestGather_OneCallPerPortPerEvent: the facts of all candidates of an event are
    read in batches, so a message to 40 readers costs as many statements as one to 5."""
    from notify_pg.db.seam import Seam

    counts: dict[int, int] = {}
    for readers in (5, 40):
        log = Log().team()
        for i in range(readers):
            add_reader(log, f"reader{i:02d}", f"r-reader{i:02d}")
        log.at(10).msg("m1", "owner", seq=1)
        lines = lines_of(log)
        dsn = new_database(pg_template)
        with psycopg.connect(dsn, autocommit=True) as conn:
            # One partition: one round decides the message for every reader.
            one = WorkerConfig(partitions=1)
            run = PgRun(dsn, conn, policy_from_mapping(_policy()), config=one)
            run.feed_lines(lines[:-1])
            event = parse_event(json.loads(lines[-1]))
            run.due(event.occurred_at)
            append_burst(run, [event])
            statements = 0
            for name in ("all", "one", "run", "run_many"):
                original = getattr(Seam, name)

                def counted(self: Seam, *args: Any, _original: Any = original, **kw: Any) -> Any:
                    nonlocal statements
                    statements += 1
                    return _original(self, *args, **kw)

                monkeypatch.setattr(Seam, name, counted)
            assert run.worker.consume() == 1
            monkeypatch.undo()
            sends = len(run.push_sends())
            run.worker.close()
        assert sends == readers  # each reader got the message at once
        counts[readers] = statements
    assert counts[5] == counts[40], counts
