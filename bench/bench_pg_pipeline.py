"""Benchmark: the pipeline on PostgreSQL end to end (consumer, due work, push sends).

Prints one JSON object. The database server is NOTIFY_BENCH_DSN (a role with CREATEDB; scratch
databases are created and dropped) or, without it, a throwaway pgserver instance.

    python bench/bench_pg_pipeline.py [--people 200] [--messages 1000] [--rate 40] [--duration 10]

Workload: one space with one channel and ``threads`` threads; ``people`` humans, each with a
phone and a push registration (provider ``apns``, answered by a `FakeProvider` that accepts
everything), all able to read the channel, half of them with level ``all`` on it. Messages
come from the humans in turn on random threads, one in ten mentions two people. Policy:
windows of 2 s, no mobile delay, badge syncs at most once a second.

Figures:
- ``end_to_end``: ``messages`` messages are appended first, then 1 or 2 worker processes run
  until the consumer is at the head and no due work or push send is left: hint decisions,
  sends and pushes per second of wall time.
- ``steady_stream``: a producer appends ``rate`` messages a second for ``duration`` seconds
  while one worker runs; the consumer's lag (events behind the head, and the age of the oldest
  unhandled event) sampled every 0.25 s.
- ``where_time_goes``: one worker in this process over the same backlog, with the time spent
  in SQL statements (the seam's calls, including the round trips) apart from the rest
  (Python: the pipeline, decisions, parsing) and the provider calls.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import shutil
import statistics
import tempfile
import threading
import time
import uuid
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import psycopg
from psycopg.conninfo import make_conninfo

from notify_core.decide import Policy
from notify_core.events import Event, parse_event
from notify_pg import EventLog, NewEvent, migrate
from notify_pg.push import FakeProvider
from notify_pg.reference_host import ReferenceHost, migrate_reference_host
from notify_pg.reference_host.world import WorldLoader
from notify_pg.seam import Seam
from notify_pg.worker import Worker, WorkerConfig

SCHEMA, HOST = "notify", "host"
POLICY = Policy(
    coalesce_window=timedelta(seconds=2),
    mobile_delay_when_desktop_active=timedelta(0),
    badge_sync_min_interval=timedelta(seconds=1),
)
CONFIG = WorkerConfig(poll_interval=timedelta(milliseconds=20), batch_size=200)


@contextmanager
def server() -> Iterator[str]:
    dsn = os.environ.get("NOTIFY_BENCH_DSN")
    if dsn:
        yield dsn
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pgserver
    tmp = tempfile.mkdtemp(prefix="notify-bench-")
    srv = pgserver.get_server(os.path.join(tmp, "data"), cleanup_mode="delete")
    uri = str(srv.get_uri())
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute("ALTER SYSTEM SET fsync = off")
        conn.execute("ALTER SYSTEM SET synchronous_commit = off")
        conn.execute("SELECT pg_reload_conf()")
    try:
        yield uri
    finally:
        srv.cleanup()
        shutil.rmtree(tmp, ignore_errors=True)


@contextmanager
def database(base: str) -> Iterator[str]:
    name = f"notify_bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(base, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"'.encode())
    dsn = make_conninfo(base, dbname=name)
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            migrate(conn, SCHEMA)
            migrate_reference_host(conn, HOST)
        yield dsn
    finally:
        with psycopg.connect(base, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'.encode())


class Stream:
    """Appends world and message events as a host would (world change and event together)."""

    def __init__(self, conn: psycopg.Connection[Any], people: int, threads: int) -> None:
        self.conn = conn
        self.loader = WorldLoader(SCHEMA, HOST)
        self.log = EventLog(SCHEMA)
        self.people = [f"u{i:04d}" for i in range(people)]
        self.threads = [f"t{i:03d}" for i in range(threads)]
        self.thread_seq = dict.fromkeys(self.threads, 0)
        self.random = random.Random(7)
        self.count = 0

    def add(self, type_: str, payload: dict[str, Any], **envelope: Any) -> None:
        self.count += 1
        obj = {
            "seq": self.count,
            "type": type_,
            "occurred_at": "2026-01-01T00:00:00Z",
            **envelope,
            "payload": payload,
        }
        event: Event = parse_event(obj)
        self.loader.apply(self.conn, event)
        self.log.append(
            self.conn,
            NewEvent(
                type=event.type,
                payload=dict(event.payload),
                actor=event.actor,
                audience=event.audience,
            ),
        )

    def world(self) -> None:
        with self.conn.transaction():
            self.add("space.created", {"space": "s"})
            self.add("channel.created", {"channel": "c", "space": "s", "kind": "text"})
            self.add("thread.created", {"thread": "c-main", "channel": "c", "main": True})
            for thread in self.threads:
                self.add("thread.created", {"thread": thread, "channel": "c", "main": False})
            for i, person in enumerate(self.people):
                self.add("user.created", {"user": person, "kind": "human"})
                grant = {"user": person, "target": {"kind": "space", "id": "s"}}
                self.add("access.granted", grant)
                device = {
                    "device": f"{person}-phone",
                    "user": person,
                    "platform": "ios",
                    "state": "active",
                }
                self.add("device.registered", device)
                registration = {
                    "registration": f"r-{person}",
                    "device": f"{person}-phone",
                    "provider": "apns",
                }
                self.add("push.registered", registration)
                if i % 2 == 0:
                    pref = {"target": {"kind": "channel", "id": "c"}, "level": "all", "version": 1}
                    self.add(
                        "notification_pref.updated",
                        {"preference": pref},
                        actor=person,
                        audience=person,
                    )

    def message(self) -> None:
        author = self.people[self.count % len(self.people)]
        thread = self.random.choice(self.threads)
        self.thread_seq[thread] += 1
        payload: dict[str, Any] = {
            "message": f"m{self.count}",
            "thread": thread,
            "thread_seq": self.thread_seq[thread],
            "author": author,
            "origin": "human",
            "kind": "text",
        }
        if self.random.random() < 0.1:
            payload["mention_ids"] = self.random.sample(self.people, 2)
        with self.conn.transaction():
            self.add("message.created", payload, actor=author)


def settled(conn: psycopg.Connection[Any]) -> bool:
    row = conn.execute(
        f"SELECT (SELECT coalesce(max(seq), 0) FROM {SCHEMA}.event_log)"
        f" - coalesce((SELECT position FROM {SCHEMA}.consumer_cursors WHERE name = 'push'), 0),"
        f" (SELECT count(*) FROM {SCHEMA}.windows) + (SELECT count(*) FROM"
        f" {SCHEMA}.delayed_releases) + (SELECT count(*) FROM {SCHEMA}.badge_syncs WHERE pending)"
        f" + (SELECT count(*) FROM {SCHEMA}.push_sends)"
    ).fetchone()
    assert row is not None
    return bool(row[0] == 0 and row[1] == 0)


def new_worker(dsn: str) -> Worker:
    return Worker(
        lambda: psycopg.connect(dsn, autocommit=True),
        ReferenceHost(HOST),
        schema=SCHEMA,
        policy=POLICY,
        config=CONFIG,
        providers=[FakeProvider("apns")],
    )


def _work(dsn: str, stop: Any, out: Any) -> None:
    worker = new_worker(dsn)
    while not stop.is_set():
        if not worker.run_once():
            stop.wait(CONFIG.poll_interval.total_seconds())
    worker.close()
    s = worker.stats
    out.put(
        {
            "events": s.events,
            "due": s.due,
            "decisions": dict(s.decisions),
            "push_sends": s.push_sends,
            "sent": dict(s.sent),
        }
    )


def run_workers(dsn: str, n: int, watch: Callable[[], bool], timeout: float) -> dict[str, Any]:
    ctx = mp.get_context("spawn")
    stop, out = ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_work, args=(dsn, stop, out)) for _ in range(n)]
    started = time.perf_counter()
    for p in procs:
        p.start()
    deadline = started + timeout
    while time.perf_counter() < deadline and not watch():
        time.sleep(0.05)
    elapsed = time.perf_counter() - started
    stop.set()
    results = [out.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(30)
    total: dict[str, Any] = {"events": 0, "due": 0, "push_sends": 0, "decisions": {}, "sent": {}}
    for r in results:
        for key in ("events", "due", "push_sends"):
            total[key] += r[key]
        for key in ("decisions", "sent"):
            for k, v in r[key].items():
                total[key][k] = total[key].get(k, 0) + v
    total["seconds"] = round(elapsed, 3)
    total["per_worker_events"] = [r["events"] for r in results]
    return total


def end_to_end(base: str, people: int, threads: int, messages: int, workers: int) -> dict[str, Any]:
    with database(base) as dsn, psycopg.connect(dsn, autocommit=True) as conn:
        stream = Stream(conn, people, threads)
        stream.world()
        for _ in range(messages):
            stream.message()
        result = run_workers(dsn, workers, lambda: settled(conn), timeout=600)
    decisions = sum(result["decisions"].values())
    seconds = result["seconds"]
    return {
        "workers": workers,
        "messages": messages,
        "seconds": seconds,
        "hint_decisions": decisions,
        "hint_decisions_per_s": round(decisions / seconds, 1),
        "sends_per_s": round(result["decisions"].get("send", 0) / seconds, 1),
        "pushes_per_s": round(sum(result["sent"].values()) / seconds, 1),
        "events_per_s": round(result["events"] / seconds, 1),
        "decisions": result["decisions"],
        "pushes": sum(result["sent"].values()),
        "per_worker_events": result["per_worker_events"],
    }


def steady(base: str, people: int, threads: int, rate: float, duration: float) -> dict[str, Any]:
    with database(base) as dsn, psycopg.connect(dsn, autocommit=True) as conn:
        stream = Stream(conn, people, threads)
        stream.world()
        ctx = mp.get_context("spawn")
        stop, out = ctx.Event(), ctx.Queue()
        proc = ctx.Process(target=_work, args=(dsn, stop, out))
        proc.start()
        deadline = time.perf_counter() + 300
        while time.perf_counter() < deadline and not settled(conn):
            time.sleep(0.1)  # the worker starts and handles the world first
        lags: list[int] = []
        ages: list[float] = []
        done = threading.Event()

        def sample() -> None:
            with psycopg.connect(dsn, autocommit=True) as watch:
                while not done.is_set():
                    row = watch.execute(
                        f"SELECT (SELECT coalesce(max(seq), 0) FROM {SCHEMA}.event_log)"
                        f" - c.position, extract(epoch FROM now() - (SELECT occurred_at"
                        f" FROM {SCHEMA}.event_log WHERE seq > c.position ORDER BY seq LIMIT 1))"
                        f" FROM {SCHEMA}.consumer_cursors c WHERE c.name = 'push'"
                    ).fetchone()
                    if row is not None:
                        lags.append(int(row[0]))
                        ages.append(float(row[1] or 0.0))
                    time.sleep(0.25)

        sampler = threading.Thread(target=sample)
        sampler.start()
        started = time.perf_counter()
        sent = 0
        while (elapsed := time.perf_counter() - started) < duration:
            target = int(elapsed * rate)
            while sent < target:
                stream.message()
                sent += 1
            time.sleep(0.005)
        produce_seconds = time.perf_counter() - started
        deadline = time.perf_counter() + 120
        while time.perf_counter() < deadline and not settled(conn):
            time.sleep(0.05)
        drain_seconds = time.perf_counter() - started - produce_seconds
        done.set()
        sampler.join()
        stop.set()
        out.get(timeout=60)
        proc.join(30)
    return {
        "rate_per_s": rate,
        "messages": sent,
        "produce_seconds": round(produce_seconds, 2),
        "settled_after_last_message_s": round(drain_seconds, 2),
        "lag_events": {
            "p50": int(statistics.median(lags)) if lags else 0,
            "max": max(lags, default=0),
        },
        "lag_age_s": {
            "p50": round(statistics.median(ages), 3) if ages else 0.0,
            "max": round(max(ages, default=0.0), 3),
        },
    }


def where_time_goes(base: str, people: int, threads: int, messages: int) -> dict[str, Any]:
    spent = {"sql": 0.0, "statements": 0}
    originals = {name: getattr(Seam, name) for name in ("all", "one", "run", "run_many")}

    def timed(name: str) -> Callable[..., Any]:
        original = originals[name]

        def wrapper(self: Seam, *args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return original(self, *args, **kwargs)
            finally:
                spent["sql"] += time.perf_counter() - started
                spent["statements"] += 1

        return wrapper

    with database(base) as dsn, psycopg.connect(dsn, autocommit=True) as conn:
        stream = Stream(conn, people, threads)
        stream.world()
        for _ in range(messages):
            stream.message()
        worker = new_worker(dsn)
        idle = 0.0
        for name in originals:
            setattr(Seam, name, timed(name))
        try:
            started = time.perf_counter()
            while not settled(conn):
                if not worker.run_once():
                    pause = time.perf_counter()
                    time.sleep(0.02)
                    idle += time.perf_counter() - pause
            total = time.perf_counter() - started
        finally:
            for name, original in originals.items():
                setattr(Seam, name, original)
            worker.close()
    provider = worker.stats.provider_seconds
    python = total - spent["sql"] - provider
    return {
        "seconds": round(total, 3),
        "sql_seconds": round(spent["sql"], 3),
        "sql_share": round(spent["sql"] / total, 3),
        "statements": spent["statements"],
        "statements_per_event": round(spent["statements"] / max(1, worker.stats.events), 1),
        "provider_seconds": round(provider, 3),
        "python_seconds": round(python - idle, 3),
        "python_share": round((python - idle) / total, 3),
        "idle_seconds": round(idle, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--people", type=int, default=200)
    parser.add_argument("--threads", type=int, default=20)
    parser.add_argument("--messages", type=int, default=1000)
    parser.add_argument("--rate", type=float, default=40.0)
    parser.add_argument("--duration", type=float, default=10.0)
    args = parser.parse_args()
    with server() as base:
        report = {
            "people": args.people,
            "threads": args.threads,
            "cores": os.cpu_count(),
            "end_to_end": [
                end_to_end(base, args.people, args.threads, args.messages, workers)
                for workers in (1, 2)
            ],
            "steady_stream": steady(base, args.people, args.threads, args.rate, args.duration),
            "where_time_goes": where_time_goes(base, args.people, args.threads, args.messages),
        }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
