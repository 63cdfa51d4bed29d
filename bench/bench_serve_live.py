"""Benchmark: live inbox updates of `notify serve` at 10,000 sockets (seed 004 section 9.3,
issue 28 point 4, issue 39 point 4).

Prints one JSON object. The database server is NOTIFY_BENCH_DSN (a role with CREATEDB; a
scratch database is created and dropped) or, without it, a throwaway pgserver instance.

    python bench/bench_serve_live.py [--sockets 10000] [--rounds 20] [--clients 2]
        [--baseline-src DIR]

With ``--baseline-src`` (a worktree of another commit: ``git worktree add /tmp/base b7adf12``)
the ``notify serve`` of that tree is measured first, in a database of its own, then this
tree's, and ``ratios`` gives this tree's serve CPU per round, memory per idle socket and p99
from the commit over the baseline's.

One ``notify serve`` process (a subprocess, as an operator runs it) holds ``sockets`` open
websockets on /notifications/live, one per person, every person watching one page; the
clients live in ``clients`` processes of their own (``bench/live_clients.py``, minimal
clients on asyncio), so that neither they nor this process share the server's event loop.
Each round the editor edits that page and `InboxFanOut.drain` writes (or coalesces) every
watcher's entry in its transactions (one a batch of 1,000); its triggers NOTIFY the people at
each commit, the server tells each socket "refresh".

- ``last_socket_ms``: per round, the time from the commit to the last socket's message,
  p50/p99/max over the rounds. The commit's time is when this benchmark's own LISTEN
  connection (same machine, same channel) receives the round's first notification: the
  moment PostgreSQL delivers it to every listener (or the first socket's message, when that
  one is read first). Times are ``time.monotonic``, one clock for every process.
- ``per_socket_ms``: the same for every socket's first message of every round, p50/p99.
- ``from_own_commit_ms``: every socket's first message of every round from the commit of its
  own entry (the drain commits a batch of 1,000 at a time; the time is when the notification
  naming the socket's person reaches this benchmark), p50/p99/max: issue 39's "from the
  commit", its goal a p99 under 1 s.
- ``fan_out_ms``: the drain's duration (claim, reads, decisions, writes, commits), p50.
- ``serve_cpu_ms_per_round``: the serve process's CPU time (user and system) over the rounds,
  per round: what telling every socket costs, whatever the machine's load (the sockets'
  keep-alive pings included); ``serve_cpu_ms_per_idle_s``: its CPU time per second over 5 s
  with every socket open and nothing told (uvicorn pings each socket every 20 s).
- ``memory``: the serve process's resident memory (``VmRSS``) before the sockets, with them
  open and idle, and after the rounds; ``per_idle_socket_kib`` is the idle difference over
  the sockets (the goal: under 50 KiB).
- ``machine``: the cores and the load average (1 minute) before and after: the machine may be
  shared, and the figures move with it.
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
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from scratch_pg import database, server

from notify_pg.inbox.fanout import InboxFanOut
from notify_pg.inbox.live import live_channel
from notify_pg.inbox.reads import emit
from notify_reference_host.wiki import ReferenceWiki

SCHEMA, HOST = "notify", "host"
IDLE_SECONDS = 5.0
#: The source tree this script belongs to: the ``notify serve`` measured, unless a baseline.
ROOT = Path(__file__).resolve().parents[1]
CLIENTS = Path(__file__).resolve().with_name("live_clients.py")
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


def cpu_ms(pid: int) -> float:
    """CPU time (user and system) a process of this machine used so far, in ms."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def start_serve(dsn: str, src: Path = ROOT) -> tuple[subprocess.Popen[str], int]:
    """``notify serve`` of the tree ``src`` on a free port; the process and its port."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "notify_cli", "serve", "--dsn", dsn, "--port", "0"],
        env=env,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stderr is not None
    while True:
        line = proc.stderr.readline()
        if not line:
            raise RuntimeError("notify serve ended before listening")
        if not line.startswith("{"):
            raise RuntimeError(f"notify serve of {src}: {line.strip()}")
        record = json.loads(line)
        if record.get("msg") == "listening":
            return proc, int(record["port"])


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def start_clients(port: int, people: int, processes: int) -> list[subprocess.Popen[str]]:
    """``processes`` client processes holding ``people`` sockets between them, all open."""
    share = -(-people // processes)
    clients = [
        subprocess.Popen(
            [sys.executable, str(CLIENTS), str(port), str(first), str(min(share, people - first))],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for first in range(0, people, share)
    ]
    for client in clients:
        assert client.stdout is not None
        if client.stdout.readline().strip() != "ready":
            raise RuntimeError("a client process could not open its sockets")
    return clients


def ask(client: subprocess.Popen[str], command: str) -> str:
    """One command to a client process, its one line of answer."""
    assert client.stdin is not None and client.stdout is not None
    client.stdin.write(command + "\n")
    client.stdin.flush()
    return client.stdout.readline()


async def measure(
    dsn: str, wiki: ReferenceWiki, people: int, rounds: int, clients: list[subprocess.Popen[str]]
) -> tuple[list[float], list[list[float]], list[float], list[float]]:
    """Run the rounds: each round's first commit, each socket's own commit and each round's
    start (``time.monotonic``), and the drains' durations."""
    commits: list[float] = [0.0] * rounds
    # Per round, per socket: when the notification naming its person reached this process.
    named = [[float("inf")] * people for _ in range(rounds)]
    current = [0]
    ear = await psycopg.AsyncConnection.connect(dsn, autocommit=True)
    await ear.execute(sql.SQL("LISTEN {}").format(sql.Identifier(live_channel(SCHEMA))))
    heard = asyncio.Event()

    async def listen() -> None:
        async for note in ear.notifies():
            now = time.monotonic()
            if not heard.is_set():
                commits[current[0]] = now
                heard.set()
            mine = named[current[0]]
            told = range(people) if note.payload == "*" else _numbers(note.payload)
            for n in told:
                mine[n] = min(mine[n], now)

    listening = asyncio.ensure_future(listen())
    drains: list[float] = []
    bounds: list[float] = []

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

    def told(since: float) -> int:
        return sum(int(ask(client, f"count {since!r}")) for client in clients)

    for n in range(rounds):
        current[0] = n
        heard.clear()
        before = time.monotonic()
        bounds.append(before)
        drains.append(await asyncio.to_thread(fan_out, n))
        deadline = time.monotonic() + 60
        while (done := await asyncio.to_thread(told, before)) < people:
            if time.monotonic() > deadline:
                raise RuntimeError(f"round {n}: {done} of {people} sockets told")
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.05)  # late duplicates land in this round, not the next
    listening.cancel()
    await ear.close()
    return commits, named, bounds, drains


def _numbers(payload: str) -> list[int]:
    """The sockets of the people a notification names (``w00042`` is socket 42)."""
    return [int(p[1:]) for p in json.loads(payload) if p.startswith("w")]


def run(dsn: str, people: int, rounds: int, processes: int = 2, src: Path = ROOT) -> dict[str, Any]:
    """One serve process (of the tree ``src``), ``people`` sockets held by ``processes``
    client processes, ``rounds`` fan-outs; the figures."""
    wiki = seed(dsn, people)
    proc, port = start_serve(dsn, src)
    clients: list[subprocess.Popen[str]] = []
    try:
        time.sleep(0.5)
        before = rss_kib(proc.pid)
        clients = start_clients(port, people, processes)
        time.sleep(2.0)  # every socket registered with the server's hub, the heap settled
        idle = rss_kib(proc.pid)
        quiet = cpu_ms(proc.pid)
        time.sleep(IDLE_SECONDS)  # nothing told: the sockets' keep-alive pings only
        quiet = (cpu_ms(proc.pid) - quiet) / IDLE_SECONDS
        cpu_before = cpu_ms(proc.pid)
        commits, named, bounds, drains = asyncio.run(measure(dsn, wiki, people, rounds, clients))
        serve_cpu = (cpu_ms(proc.pid) - cpu_before) / rounds
        after = rss_kib(proc.pid)
        arrivals = [times for client in clients for times in json.loads(ask(client, "dump"))]
    finally:
        for client in clients:
            client.kill()
            client.wait(30)
        proc.terminate()
        proc.wait(30)
    last: list[float] = []
    every: list[float] = []
    own: list[float] = []
    for n, commit in enumerate(commits):
        until = bounds[n + 1] if n + 1 < rounds else float("inf")
        # The first arrival of each socket in the round (a late duplicate is not counted).
        # A socket's message can be read a moment before the bench's own notification (other
        # processes, other schedulers): the round starts at the earlier of the two.
        round_ = [min(t for t in times if bounds[n] <= t < until) for times in arrivals]
        start = min(commit, *round_)
        every += [(t - start) * 1000 for t in round_]
        # From the commit that wrote the socket's own entry (the fan-out commits in batches).
        own += [max(0.0, t - c) * 1000 for t, c in zip(round_, named[n], strict=True)]
        last.append((max(round_) - start) * 1000)
    return {
        "sockets": people,
        "client_processes": len(clients),
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
        "from_own_commit_ms": {
            "p50": round(percentile(own, 0.5), 2),
            "p99": round(percentile(own, 0.99), 2),
            "max": round(max(own), 2),
        },
        "fan_out_ms": {"p50": round(statistics.median(drains) * 1000, 2)},
        "serve_cpu_ms_per_round": round(serve_cpu, 1),
        "serve_cpu_ms_per_idle_s": round(quiet, 1),
        "memory": {
            "rss_before_kib": before,
            "rss_with_sockets_kib": idle,
            "rss_after_rounds_kib": after,
            "per_idle_socket_kib": round((idle - before) / people, 1),
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sockets", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--clients", type=int, default=2, help="client processes")
    parser.add_argument("--baseline-src", type=Path, help="another tree, measured first")
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = min(hard, max(soft, args.sockets + 256))  # the clients' share each, inherited
    if wanted < args.sockets // args.clients + 256:
        sys.exit(f"open files limited to {hard}: raise it (ulimit -Hn) or use more --clients")
    resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    load_before = os.getloadavg()[0]
    trees = {"this": ROOT} if args.baseline_src is None else {"baseline": args.baseline_src}
    trees["this"] = ROOT
    figures: dict[str, Any] = {}
    with server() as base:
        for name, src in trees.items():
            with database(base, SCHEMA, HOST) as dsn:
                figures[name] = run(dsn, args.sockets, args.rounds, args.clients, src)
    if args.baseline_src is not None:
        this, baseline = figures["this"], figures["baseline"]

        def ratio(a: float, b: float) -> float | None:
            return round(a / b, 3) if b else None

        figures["ratios"] = {
            "serve_cpu_per_round": ratio(
                this["serve_cpu_ms_per_round"], baseline["serve_cpu_ms_per_round"]
            ),
            "per_idle_socket_memory": ratio(
                this["memory"]["per_idle_socket_kib"], baseline["memory"]["per_idle_socket_kib"]
            ),
            "from_own_commit_p99": ratio(
                this["from_own_commit_ms"]["p99"], baseline["from_own_commit_ms"]["p99"]
            ),
        }
    figures["machine"] = {
        "cores": os.cpu_count(),
        "load_before": load_before,
        "load_after": os.getloadavg()[0],
    }
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
