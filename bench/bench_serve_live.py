"""Benchmark: live inbox updates of `notify serve` (seed 004 section 9.3, issue 28 point 4).

Prints one JSON object. The database server is NOTIFY_BENCH_DSN (a role with CREATEDB; a
scratch database is created and dropped) or, without it, a throwaway pgserver instance.

    python bench/bench_serve_live.py [--sockets 1000] [--rounds 20]

One ``notify serve`` process (a subprocess, as an operator runs it) holds ``sockets`` open
websockets on /notifications/live, one per person, every person watching one page. Each round
the editor edits that page and `InboxFanOut.drain` writes (or coalesces) every watcher's entry
in its transaction; its triggers NOTIFY the people at commit, the server tells each socket
"refresh".

- ``last_socket_ms``: per round, the time from the commit to the last socket's message,
  p50/p99/max over the rounds. The commit's time is when this benchmark's own LISTEN
  connection (same machine, same channel) receives the round's first notification: the
  moment PostgreSQL delivers it to every listener (or the first socket's message, when the
  event loop reads that one first).
- ``per_socket_ms``: the same for every socket's message of every round, p50/p99.
- ``fan_out_ms``: the drain's duration (claim, reads, decisions, writes, commit), p50.
- ``memory``: the serve process's resident memory (``VmRSS``) before the sockets and with
  them open; ``per_socket_kib`` is the difference over the sockets.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
from psycopg import sql
from scratch_pg import database, server
from websockets.asyncio.client import ClientConnection, connect

from notify_pg.inbox.fanout import InboxFanOut
from notify_pg.inbox.live import live_channel
from notify_pg.inbox.reads import emit
from notify_reference_host.wiki import ReferenceWiki

SCHEMA, HOST = "notify", "host"
T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def seed(dsn: str, people: int) -> ReferenceWiki:
    """A site, one page, ``people`` readers who all watch it, and an editor."""
    wiki = ReferenceWiki(HOST)
    with psycopg.connect(dsn) as conn:
        wiki.add_site(conn, "s1", host="wiki.example")
        wiki.add_group(conn, "readers", [{"permission": "read_pages", "match": "all"}])
        wiki.add_user(conn, "editor", email="editor@example.org", verified=True)
        wiki.add_page(conn, "p1", "s1", "/docs/start", title="Start")
        for n in range(people):
            person = f"w{n:05d}"
            wiki.add_user(conn, person, email=f"{person}@example.org", verified=True)
            wiki.add_member(conn, "readers", person)
            wiki.watch(conn, "p1", person)
    return wiki


def rss_kib(pid: int) -> int:
    """Resident memory of a process of this machine, in KiB (Linux ``/proc``)."""
    with open(f"/proc/{pid}/status", encoding="ascii") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def start_serve(dsn: str) -> tuple[subprocess.Popen[str], int]:
    """``notify serve`` on a free port; the process and its port."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "notify_cli", "serve", "--dsn", dsn, "--port", "0"],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stderr is not None
    while True:
        line = proc.stderr.readline()
        if not line:
            raise RuntimeError("notify serve ended before listening")
        record = json.loads(line)
        if record.get("msg") == "listening":
            return proc, int(record["port"])


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


async def measure(
    dsn: str, port: int, wiki: ReferenceWiki, people: int, rounds: int, pid: int
) -> Any:
    """Open the sockets, run the rounds: the latencies, the drains' durations and the serve
    process's memory with every socket open."""
    arrivals: list[list[float]] = [[] for _ in range(rounds)]
    commits: list[float] = [0.0] * rounds
    current = [0]

    async def reader(ws: ClientConnection) -> None:
        async for message in ws:
            if message == "refresh":
                arrivals[current[0]].append(time.perf_counter())

    sockets = []
    for start in range(0, people, 100):  # in steps: a connect storm is not what is measured
        batch = [
            connect(
                f"ws://127.0.0.1:{port}/notifications/live",
                additional_headers={"X-Notify-User": f"w{n:05d}"},
                open_timeout=60,
                max_queue=4,
            )
            for n in range(start, min(start + 100, people))
        ]
        sockets += await asyncio.gather(*batch)
    readers = [asyncio.ensure_future(reader(ws)) for ws in sockets]
    await asyncio.sleep(1.0)  # every socket registered with the server's hub
    rss_open = rss_kib(pid)

    ear = await psycopg.AsyncConnection.connect(dsn, autocommit=True)
    await ear.execute(sql.SQL("LISTEN {}").format(sql.Identifier(live_channel(SCHEMA))))
    heard = asyncio.Event()

    async def listen() -> None:
        async for _note in ear.notifies():
            if not heard.is_set():
                commits[current[0]] = time.perf_counter()
                heard.set()

    listening = asyncio.ensure_future(listen())
    drains: list[float] = []

    def fan_out(n: int) -> float:
        with psycopg.connect(dsn, autocommit=True) as conn:
            emit(
                conn,
                "page.edited",
                {"page": "p1"},
                actor="editor",
                occurred_at=T0 + timedelta(seconds=n),
                schema=SCHEMA,
            )
            started = time.perf_counter()
            InboxFanOut(wiki, schema=SCHEMA).drain(conn)
            return time.perf_counter() - started

    for n in range(rounds):
        current[0] = n
        heard.clear()
        drains.append(await asyncio.to_thread(fan_out, n))
        deadline = time.perf_counter() + 30
        while len(arrivals[n]) < people and time.perf_counter() < deadline:
            await asyncio.sleep(0.005)
        if len(arrivals[n]) < people:
            raise RuntimeError(f"round {n}: {len(arrivals[n])} of {people} sockets told")
        await asyncio.sleep(0.05)  # late duplicates land in this round, not the next
    listening.cancel()
    await ear.close()
    for task in readers:
        task.cancel()
    await asyncio.gather(*(ws.close() for ws in sockets), return_exceptions=True)
    return arrivals, commits, drains, rss_open


def run(dsn: str, people: int, rounds: int) -> dict[str, Any]:
    """One serve process, ``people`` sockets, ``rounds`` fan-outs; the figures."""
    wiki = seed(dsn, people)
    proc, port = start_serve(dsn)
    try:
        time.sleep(0.5)
        before = rss_kib(proc.pid)
        arrivals, commits, drains, after = asyncio.run(
            measure(dsn, port, wiki, people, rounds, proc.pid)
        )
    finally:
        proc.terminate()
        proc.wait(30)
    # The bench's listener and the sockets' readers share one event loop: a socket's message
    # can be read a moment before the listener's notification, so a round starts at the
    # earlier of the two (never a negative delay).
    starts = [min(c, *a) for a, c in zip(arrivals, commits, strict=True)]
    last = [(max(a) - c) * 1000 for a, c in zip(arrivals, starts, strict=True)]
    every = [(t - c) * 1000 for a, c in zip(arrivals, starts, strict=True) for t in a]
    return {
        "sockets": people,
        "rounds": rounds,
        "last_socket_ms": {
            "p50": round(percentile(last, 0.5), 2),
            "p99": round(percentile(last, 0.99), 2),
            "max": round(max(last), 2),
        },
        "per_socket_ms": {
            "p50": round(percentile(every, 0.5), 2),
            "p99": round(percentile(every, 0.99), 2),
        },
        "fan_out_ms": {"p50": round(statistics.median(drains) * 1000, 2)},
        "memory": {
            "rss_before_kib": before,
            "rss_with_sockets_kib": after,
            "per_socket_kib": round((after - before) / people, 1),
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sockets", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = min(hard, max(soft, 4 * args.sockets + 256))
    resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    with server() as base, database(base, SCHEMA, HOST) as dsn:
        figures = run(dsn, args.sockets, args.rounds)
    figures["machine"] = {"cores": os.cpu_count(), "load": os.getloadavg()[0]}
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
