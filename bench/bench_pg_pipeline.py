"""Benchmark: the pipeline on PostgreSQL end to end (consumer, due work, push sends).

Prints one JSON object. The database server is NOTIFY_BENCH_DSN (a role with CREATEDB; scratch
databases are created and dropped) or, without it, a throwaway pgserver instance.

    python bench/bench_pg_pipeline.py [--people 200] [--messages 1000] [--partitions 2]
                                      [--rate 40] [--duration 10] [--repeat 1]
                                      [--baseline-src DIR] [--quiet-wait 0]

Workload: one space with one channel and ``threads`` threads; ``people`` humans, each with a
phone and a push registration (provider ``apns``, answered by a `FakeProvider` that accepts
everything), all able to read the channel, half of them with level ``all`` on it. Messages
come from the humans in turn on random threads, one in ten mentions two people. Policy:
windows of 2 s, no mobile delay, badge syncs at most once a second.

Figures:
- ``end_to_end``: the same backlog (the world, then ``messages`` messages) is generated into a
  fresh database for each configuration, then worker processes run until every partition of
  the consumer is at the head and no due work or push send is left: hint decisions, sends and
  pushes per second of wall time. Configurations: 1 worker with 1 partition (the baseline),
  1 worker with ``partitions`` partitions, 2 workers with 1 partition, 2 workers with
  ``partitions`` partitions; ``ratio`` is each one's hint decisions per second over the
  baseline's, measured in the same run. Each worker process also times its SQL statements
  (the seam's calls, round trips included): ``sql_share`` and ``python_share`` of its busy
  time (the rest: the pipeline, decisions, parsing; provider calls and idle pauses apart),
  and ``statements_per_event`` (all partitions' statements over the events of the log; every
  call of the seam counts once, a multi-row ``executemany`` too).
  With ``--repeat`` each configuration runs several times (one database each, round-robin
  over the configurations) and the median run by hint decisions per second is reported,
  with all rates listed. The machine's CPU time is split into ``cpu``: the workers, the
  PostgreSQL server, this script and ``other_s``, the rest of the machine.
  ``cpu_ms_per_event`` does not depend on the machine's load: the CPU time of the workers'
  loops (``process_time``, start-up apart) and of their own backends (``/proc``), over the
  events of the log. With ``--quiet-wait S`` the script waits up to S seconds for an idle
  machine before each run, and a run that other jobs disturbed (over 5 % of the cores) is
  repeated, up to three times (``disturbed`` marks the last one). Linux only
  (``/proc``). ``active_backend_samples`` counts what the workers' backends were doing when
  sampled every 50 ms (``cpu``, or a wait event such as ``Lock:transactionid``).
  ``--baseline-src DIR`` adds the configuration 1 worker with 1 partition run on another
  source tree of the library (for example ``git archive`` of an older commit unpacked in DIR:
  its worker processes import ``notify_core`` and ``notify_pg`` from there), alternating with
  the others, and ``baseline`` compares the two: hint decisions per second (best run of each)
  and statements per event. ``--quiet-wait 0`` (the default: a shared machine may never be
  idle) neither waits nor repeats disturbed runs.
- ``steady_stream``: a producer appends ``rate`` messages a second for ``duration`` seconds
  while one worker runs; the consumer's lag (events behind the head, and the age of the oldest
  unhandled event) sampled every 0.25 s (median, 99th percentile, maximum).
"""

from __future__ import annotations

import argparse
import importlib
import json
import multiprocessing as mp
import os
import random
import resource
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import attrs
import psycopg
from scratch_pg import database, process_cpu_seconds, server

from notify_core.events.log import Event, parse_event
from notify_core.hints.decide import Policy
from notify_pg import EventLog, NewEvent
from notify_pg.db.seam import Seam
from notify_pg.push.providers import FakeProvider
from notify_pg.push.worker import Worker, WorkerConfig
from notify_reference_host import ReferenceHost
from notify_reference_host.world import WorldLoader

SCHEMA, HOST = "notify", "host"
POLICY = Policy(
    coalesce_window=timedelta(seconds=2),
    mobile_delay_when_desktop_active=timedelta(0),
    badge_sync_min_interval=timedelta(seconds=1),
)
CONFIG = WorkerConfig(poll_interval=timedelta(milliseconds=20), batch_size=200)


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
        f"SELECT (SELECT coalesce(max(seq), 0) FROM {SCHEMA}.event_log) - coalesce((SELECT"
        f" min(position) FROM {SCHEMA}.consumer_cursors WHERE name = 'push'), 0),"
        f" (SELECT count(*) FROM {SCHEMA}.windows) + (SELECT count(*) FROM"
        f" {SCHEMA}.delayed_releases) + (SELECT count(*) FROM {SCHEMA}.badge_syncs WHERE pending)"
        f" + (SELECT count(*) FROM {SCHEMA}.push_sends)"
    ).fetchone()
    assert row is not None
    return bool(row[0] == 0 and row[1] == 0)


def new_worker(dsn: str, partitions: int = 1) -> Worker:
    return Worker(
        lambda: psycopg.connect(dsn, autocommit=True),
        ReferenceHost(HOST),
        schema=SCHEMA,
        policy=POLICY,
        config=attrs.evolve(CONFIG, partitions=partitions),
        providers=[FakeProvider("apns")],
    )


class SqlTimer:
    """Times every statement of the seam (each of its ways to run one) in this process."""

    NAMES = ("all", "one", "run", "run_many", "one_each")

    def __init__(self, seam: type[Seam] = Seam) -> None:
        self.seconds = 0.0
        self.statements = 0
        self._seam = seam
        # A baseline tree's seam may lack the newer ways (``--baseline-src``).
        self._originals = {name: getattr(seam, name) for name in self.NAMES if hasattr(seam, name)}

    def __enter__(self) -> SqlTimer:
        for name, original in self._originals.items():
            setattr(self._seam, name, self._timed(original))
        return self

    def __exit__(self, *exc: object) -> None:
        for name, original in self._originals.items():
            setattr(self._seam, name, original)

    def _timed(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(seam: Seam, *args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return original(seam, *args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - started
                self.statements += 1

        return wrapper


def _library(src: str) -> tuple[Any, type[Seam]]:
    """A worker factory and the seam class of the library in ``src`` (a baseline tree): the
    library this process imported is dropped and imported again from there (a spawned
    process starts with its parent's ``sys.path``, so ``PYTHONPATH`` alone would not do)."""
    # The reference host too: this tree's host on the baseline's seam would run its queries
    # uncounted (and a host of another time may not fit the baseline's worker at all).
    library = ("notify_core", "notify_pg", "notify_cli", "notify_reference_host")
    for name in list(sys.modules):
        if name.split(".")[0] in library:
            del sys.modules[name]
    sys.path.insert(0, os.path.abspath(src))
    decide = importlib.import_module("notify_core.hints.decide")
    worker = importlib.import_module("notify_pg.push.worker")
    push = importlib.import_module("notify_pg.push.providers")
    host = importlib.import_module("notify_reference_host")
    seam = importlib.import_module("notify_pg.db.seam")
    assert worker.__file__ is not None and worker.__file__.startswith(os.path.abspath(src))
    policy = decide.Policy(**attrs.asdict(POLICY, recurse=False))
    config = worker.WorkerConfig(
        poll_interval=CONFIG.poll_interval, batch_size=CONFIG.batch_size, partitions=1
    )

    def make(dsn: str, partitions: int) -> Any:
        return worker.Worker(
            lambda: psycopg.connect(dsn, autocommit=True),
            host.ReferenceHost(HOST),
            schema=SCHEMA,
            policy=policy,
            config=attrs.evolve(config, partitions=partitions),
            providers=[push.FakeProvider("apns")],
        )

    return make, seam.Seam


def _backend_pid(worker: Any) -> int | None:
    # A baseline tree from before the loop (issue 24) holds its connection as ``_conn``.
    connection = getattr(worker, "connection", None)
    conn = connection.conn if connection is not None else getattr(worker, "_conn", None)
    if conn is None or conn.closed:
        return None
    return int(conn.info.backend_pid)


def _work(dsn: str, partitions: int, stop: Any, out: Any, src: str | None = None) -> None:
    make, seam = (new_worker, Seam) if src is None else _library(src)
    worker = make(dsn, partitions)
    idle = 0.0
    # CPU of the worker's loop (the process's threads, start-up and imports apart) and of its
    # own backend (the server's work for it, from /proc: no other database's load counts).
    backends: dict[int, float] = {}
    with SqlTimer(seam) as sql:
        started, cpu_started = time.perf_counter(), time.process_time()
        while not stop.is_set():
            pid = _backend_pid(worker)
            if not worker.run_once():
                pause = time.perf_counter()
                stop.wait(CONFIG.poll_interval.total_seconds())
                idle += time.perf_counter() - pause
            now = _backend_pid(worker)
            for ident in {pid, now} - {None}:
                assert ident is not None
                backends[ident] = max(backends.get(ident, 0.0), process_cpu_seconds(ident))
        total = time.perf_counter() - started
        loop_cpu = time.process_time() - cpu_started
    worker.close()
    s = worker.stats
    usage = resource.getrusage(resource.RUSAGE_SELF)
    out.put(
        {
            "cpu_seconds": usage.ru_utime + usage.ru_stime,
            "loop_cpu_seconds": loop_cpu,
            "backend_cpu_seconds": sum(backends.values()),
            "events": s.events,
            "due": s.due,
            "decisions": dict(s.decisions),
            "push_sends": s.push_sends,
            "sent": dict(s.sent),
            "seconds": total,
            "idle_seconds": idle,
            "sql_seconds": sql.seconds,
            "statements": sql.statements,
            "provider_seconds": s.provider_seconds,
        }
    )


def _ticks(fields: list[str]) -> int:
    # /proc/<pid>/stat after the command: utime, stime, cutime, cstime are fields 14-17.
    return sum(int(v) for v in fields[11:15])


def server_cpu_seconds() -> float:
    """CPU of every PostgreSQL process of this machine (Linux), including the backends that
    already ended (their time is counted in the postmaster's cutime and cstime)."""
    ticks = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii") as handle:
                text = handle.read()
        except OSError:
            continue
        name = text[text.index("(") + 1 : text.rindex(")")]
        if name == "postgres" or name.startswith("postgres:"):
            ticks += _ticks(text[text.rindex(")") + 2 :].split())
    return ticks / os.sysconf("SC_CLK_TCK")


def machine_busy_seconds() -> float:
    """CPU time all cores spent outside idle and iowait since boot (Linux /proc/stat)."""
    with open("/proc/stat", encoding="ascii") as handle:
        values = [int(v) for v in handle.readline().split()[1:]]
    return (sum(values) - values[3] - values[4]) / os.sysconf("SC_CLK_TCK")


def sample_waits(conn: psycopg.Connection[Any], waits: dict[str, int]) -> None:
    """Count what the database's active backends wait for right now (lock contention)."""
    rows = conn.execute(
        "SELECT coalesce(wait_event_type || ':' || wait_event, 'cpu') FROM pg_stat_activity"
        " WHERE datname = current_database() AND pid <> pg_backend_pid() AND state = 'active'"
    ).fetchall()
    for (what,) in rows:
        waits[what] = waits.get(what, 0) + 1


def run_workers(
    dsn: str,
    n: int,
    partitions: int,
    watch: Callable[[], bool],
    timeout: float,
    src: str | None = None,
) -> dict[str, Any]:
    ctx = mp.get_context("spawn")
    stop, out = ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_work, args=(dsn, partitions, stop, out, src)) for _ in range(n)]
    waits: dict[str, int] = {}
    server_before, busy_before = server_cpu_seconds(), machine_busy_seconds()
    self_before = time.process_time()
    started = time.perf_counter()
    for p in procs:
        p.start()
    deadline = started + timeout
    with psycopg.connect(dsn, autocommit=True) as probe:
        while time.perf_counter() < deadline and not watch():
            sample_waits(probe, waits)
            time.sleep(0.05)
    elapsed = time.perf_counter() - started
    stop.set()
    results = [out.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(30)
    server = server_cpu_seconds() - server_before
    busy = machine_busy_seconds() - busy_before
    workers_cpu = sum(r["cpu_seconds"] for r in results)
    mine = time.process_time() - self_before
    sums = ("events", "due", "push_sends", "statements")
    times = (
        "seconds",
        "idle_seconds",
        "sql_seconds",
        "provider_seconds",
        "loop_cpu_seconds",
        "backend_cpu_seconds",
    )
    total: dict[str, Any] = {key: 0 for key in (*sums, *times)}
    total.update(decisions={}, sent={})
    for r in results:
        for key in (*sums, *times):
            total[key] += r[key]
        for key in ("decisions", "sent"):
            for k, v in r[key].items():
                total[key][k] = total[key].get(k, 0) + v
    total["wall_seconds"] = round(elapsed, 3)
    total["per_worker_events"] = [r["events"] for r in results]
    # The two cores' time: workers (their whole processes, start-up included), the server,
    # this script (the watcher), and the rest of the machine (other jobs disturb the figures).
    total["cpu"] = {
        "workers_s": round(workers_cpu, 2),
        "server_s": round(server, 2),
        "bench_s": round(mine, 2),
        "other_s": round(max(0.0, busy - workers_cpu - server - mine), 2),
        "cores_busy": round(busy / elapsed, 2),
    }
    total["waits"] = dict(sorted(waits.items(), key=lambda kv: -kv[1]))
    return total


@contextmanager
def backlog(base: str, people: int, threads: int, messages: int) -> Iterator[str]:
    """A fresh database with the world and ``messages`` messages appended (the same each time:
    the stream is seeded)."""
    with database(base) as dsn:
        with psycopg.connect(dsn, autocommit=True) as conn:
            stream = Stream(conn, people, threads)
            stream.world()
            for _ in range(messages):
                stream.message()
        yield dsn


#: The longest `wait_for_quiet` waits (``--quiet-wait``); 0: no wait, no repeated runs.
QUIET_WAIT = [0.0]


def wait_for_quiet(limit: float | None = None) -> float:
    """Wait until the machine is idle (under 0.2 cores busy over 2 s, e.g. no other benchmark
    or test run on the shared machine); return the seconds waited (``limit`` at most)."""
    limit = QUIET_WAIT[0] if limit is None else limit
    started = time.perf_counter()
    while time.perf_counter() - started < limit:
        before = machine_busy_seconds()
        time.sleep(2.0)
        if (machine_busy_seconds() - before) / 2.0 < 0.2:
            break
    return round(time.perf_counter() - started, 1)


def end_to_end(
    base: str,
    people: int,
    threads: int,
    messages: int,
    workers: int,
    partitions: int,
    src: str | None = None,
) -> dict[str, Any]:
    with (
        backlog(base, people, threads, messages) as dsn,
        psycopg.connect(dsn, autocommit=True) as conn,
    ):
        head = conn.execute(f"SELECT max(seq) FROM {SCHEMA}.event_log").fetchone()
        waited = wait_for_quiet()
        result = run_workers(dsn, workers, partitions, lambda: settled(conn), 900, src)
    decisions = sum(result["decisions"].values())
    seconds = result["wall_seconds"]
    busy = result["seconds"] - result["idle_seconds"]
    python = busy - result["sql_seconds"] - result["provider_seconds"]
    log_events = int(head[0]) if head is not None else 0
    return {
        "workers": workers,
        "partitions": partitions,
        **({"source": src} if src is not None else {}),
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
        "statements_per_event": round(result["statements"] / max(1, log_events), 1),
        "sql_share": round(result["sql_seconds"] / busy, 3) if busy else 0.0,
        "python_share": round(python / busy, 3) if busy else 0.0,
        "worker_busy_seconds": round(busy, 3),
        # Load-independent: CPU per event of the log, the workers' loops and their backends.
        "cpu_ms_per_event": {
            "worker": round(1000 * result["loop_cpu_seconds"] / max(1, log_events), 3),
            "backend": round(1000 * result["backend_cpu_seconds"] / max(1, log_events), 3),
            "total": round(
                1000
                * (result["loop_cpu_seconds"] + result["backend_cpu_seconds"])
                / max(1, log_events),
                3,
            ),
        },
        "cpu": result["cpu"],
        "active_backend_samples": result["waits"],
        "waited_for_quiet_s": waited,
    }


def undisturbed(
    base: str,
    people: int,
    threads: int,
    messages: int,
    workers: int,
    partitions: int,
    src: str | None = None,
) -> dict[str, Any]:
    """One run; again (up to three times) when other jobs took more than 5 % of the cores
    (never with ``--quiet-wait 0``)."""
    for attempt in range(1, 4):
        run = end_to_end(base, people, threads, messages, workers, partitions, src)
        allowed = 0.05 * run["seconds"] * (os.cpu_count() or 1)
        run["attempts"] = attempt
        run["disturbed"] = run["cpu"]["other_s"] > allowed
        if not run["disturbed"] or QUIET_WAIT[0] <= 0:
            break
    return run


Config = tuple[int, int, str | None]


def compare(
    base: str,
    people: int,
    threads: int,
    messages: int,
    partitions: int,
    repeat: int,
    baseline_src: str | None = None,
) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """Every configuration on the same backlog; ratios against 1 worker with 1 partition.

    With ``baseline_src``, also 1 worker with 1 partition on that source tree, and the
    comparison of the two (best run of each by hint decisions per second).
    """
    configs: list[Config] = [
        (1, 1, None),
        (1, partitions, None),
        (2, 1, None),
        (2, partitions, None),
    ]
    configs = list(dict.fromkeys(configs))  # --partitions 1 measures two configurations
    if baseline_src is not None:
        configs.insert(0, (1, 1, baseline_src))
    runs: dict[Config, list[dict[str, Any]]] = {c: [] for c in configs}
    # Round-robin over the configurations, so that a drift of the machine hits all alike.
    for _ in range(repeat):
        for config in configs:
            runs[config].append(undisturbed(base, people, threads, messages, *config))
    versus = None
    if baseline_src is not None:
        old = max(runs[configs[0]], key=lambda r: r["hint_decisions_per_s"])
        new = max(runs[1, 1, None], key=lambda r: r["hint_decisions_per_s"])
        versus = {
            "source": baseline_src,
            "runs": repeat,
            "hint_decisions_per_s": {
                "baseline_best": old["hint_decisions_per_s"],
                "this_tree_best": new["hint_decisions_per_s"],
                "ratio": round(new["hint_decisions_per_s"] / old["hint_decisions_per_s"], 2),
                "baseline_runs": [r["hint_decisions_per_s"] for r in runs[configs[0]]],
                "this_tree_runs": [r["hint_decisions_per_s"] for r in runs[1, 1, None]],
            },
            "statements_per_event": {
                "baseline": old["statements_per_event"],
                "this_tree": new["statements_per_event"],
            },
            "sql_share": {"baseline": old["sql_share"], "this_tree": new["sql_share"]},
            # The same work, or the figures compare nothing: a baseline whose worker sent no
            # push (a host that does not fit it) looks faster than it is.
            "same_work": {
                "baseline": [old["decisions"], old["pushes"]],
                "this_tree": [new["decisions"], new["pushes"]],
                "equal": old["decisions"] == new["decisions"] and old["pushes"] == new["pushes"],
            },
            # Load-independent: every run's CPU per event (worker + backend), in run order.
            "cpu_ms_per_event": {
                "baseline_runs": [r["cpu_ms_per_event"]["total"] for r in runs[configs[0]]],
                "this_tree_runs": [r["cpu_ms_per_event"]["total"] for r in runs[1, 1, None]],
            },
        }
        configs.pop(0)
    out = []
    first = runs[configs[0]]
    for config in configs:
        mine = runs[config]
        median = sorted(mine, key=lambda r: r["hint_decisions_per_s"])[len(mine) // 2]
        if repeat > 1:
            # In run order, and each over the baseline's run of the same round.
            median["runs_hint_decisions_per_s"] = [r["hint_decisions_per_s"] for r in mine]
            # The load-independent figures of every run (the median run is chosen by rate).
            median["runs_cpu_ms_per_event"] = [r["cpu_ms_per_event"]["total"] for r in mine]
            median["runs_statements_per_event"] = [r["statements_per_event"] for r in mine]
            median["ratio_per_round"] = [
                round(r["hint_decisions_per_s"] / b["hint_decisions_per_s"], 2)
                for r, b in zip(mine, first, strict=True)
            ]
        out.append(median)
    baseline = out[0]
    for row in out:
        row["ratio"] = {
            key: round(row[key] / baseline[key], 2) if baseline[key] else None
            for key in ("hint_decisions_per_s", "pushes_per_s")
        }
    return out, versus


def percentile(values: list[float] | list[int], q: float) -> float:
    """The ``q`` quantile of the samples (nearest rank); 0 without samples."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return float(ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))])


def steady(
    base: str,
    people: int,
    threads: int,
    rate: float,
    duration: float,
    workers: int = 1,
    partitions: int = 1,
) -> dict[str, Any]:
    """A producer appends messages at ``rate`` for ``duration`` seconds while ``workers``
    processes with ``partitions`` consume; the lag is that of the lowest cursor (the events
    not yet handled for everybody) and the age of the first of them."""
    with database(base) as dsn, psycopg.connect(dsn, autocommit=True) as conn:
        stream = Stream(conn, people, threads)
        stream.world()
        ctx = mp.get_context("spawn")
        stop, out = ctx.Event(), ctx.Queue()
        procs = [
            ctx.Process(target=_work, args=(dsn, partitions, stop, out)) for _ in range(workers)
        ]
        for proc in procs:
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
                        f" - c.low, extract(epoch FROM now() - (SELECT occurred_at"
                        f" FROM {SCHEMA}.event_log WHERE seq > c.low ORDER BY seq LIMIT 1))"
                        f" FROM (SELECT min(position) AS low FROM {SCHEMA}.consumer_cursors"
                        f" WHERE name = 'push') c"
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
        for _ in procs:
            out.get(timeout=60)
        for proc in procs:
            proc.join(30)
    return {
        "workers": workers,
        "partitions": partitions,
        "rate_per_s": rate,
        "messages": sent,
        "produce_seconds": round(produce_seconds, 2),
        "settled_after_last_message_s": round(drain_seconds, 2),
        "lag_events": {
            "p50": int(statistics.median(lags)) if lags else 0,
            "p99": int(percentile(lags, 0.99)),
            "max": max(lags, default=0),
        },
        "lag_age_s": {
            "p50": round(statistics.median(ages), 3) if ages else 0.0,
            "p99": round(percentile(ages, 0.99), 3),
            "max": round(max(ages, default=0.0), 3),
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--people", type=int, default=200)
    parser.add_argument("--threads", type=int, default=20)
    parser.add_argument("--messages", type=int, default=1000)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--rate", type=float, default=40.0)
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument(
        "--baseline-src",
        help="a source tree of the library to compare 1 worker with 1 partition against",
    )
    parser.add_argument(
        "--quiet-wait",
        type=float,
        default=0.0,
        help="the longest wait for an idle machine per run (seconds; on a shared machine it"
        " may never be idle); 0, the default: no wait, no repeated runs",
    )
    parser.add_argument("--no-steady", action="store_true", help="skip the steady stream")
    parser.add_argument(
        "--steady-only", action="store_true", help="skip the backlog runs (end_to_end)"
    )
    args = parser.parse_args()
    if args.partitions < 1 or args.repeat < 1:
        parser.error("--partitions and --repeat must be at least 1")
    if args.baseline_src is not None and not os.path.isdir(
        os.path.join(args.baseline_src, "notify_pg")
    ):
        parser.error(f"--baseline-src {args.baseline_src}: no notify_pg package in it")
    QUIET_WAIT[0] = args.quiet_wait
    with server() as base:
        report: dict[str, Any] = {
            "people": args.people,
            "threads": args.threads,
            "cores": os.cpu_count(),
        }
        if not args.steady_only:
            report["end_to_end"], versus = compare(
                base,
                args.people,
                args.threads,
                args.messages,
                args.partitions,
                args.repeat,
                args.baseline_src,
            )
            if versus is not None:
                report["baseline"] = versus
        if not args.no_steady:
            # The baseline (1 worker, 1 partition) and the default deployment, same stream.
            report["steady_stream"] = [
                steady(base, args.people, args.threads, args.rate, args.duration, w, n)
                for w, n in ((1, 1), (2, args.partitions))
            ]
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
