"""Benchmark: the HTTP routes of `notify serve` under 200 keep-alive clients (issue 39 point 3).

Prints one JSON object. The database server is NOTIFY_BENCH_DSN (a role with CREATEDB; a
scratch database is created and dropped) or, without it, a throwaway pgserver instance.

    python bench/bench_serve.py [--clients 200] [--seconds 10] [--people 200] [--rounds 3]

In the same run, each behind the same uvicorn with httptools and each in its own process:

- ``bare``: a bare ASGI app that answers ``hello`` to every request (the baseline);
- ``summary_304``: ``notify serve``, the summary poll of seed 004 section 9.2 with the
  ``ETag`` the client has (``If-None-Match``): ``304``;
- ``list_200``: ``notify serve``, the first page of the inbox list (30 entries): ``200``.

The load generator is its own process (``--load``, asyncio over raw sockets): ``clients``
keep-alive connections, each one person's, each sending its next request as soon as the
previous answer is read, for ``seconds`` after a second of warm-up; ``rounds`` times, the
three targets in turn. Per target, medians over the rounds: requests per second, latency
p50/p99 in ms; answers other than the expected status (``errors``); the ratio of its
requests per second to the bare app's of the same round (each round's under ``rounds``).
The goal (issue 39): ``summary_304`` at least half the bare app's requests per second, p99
under 50 ms. The machine's load average (``uptime``) is printed with the figures: other work
on the machine moves them all.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
from scratch_pg import database, server

from notify_pg.inbox.fanout import InboxFanOut
from notify_pg.inbox.reads import emit
from notify_reference_host.wiki import ReferenceWiki

SCHEMA, HOST = "notify", "host"
T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
PAGES = 40  # entries per person: more than one page of the list

BARE_APP = """
import sys, uvicorn
async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    await receive()
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"text/plain"), (b"content-length", b"5")]})
    await send({"type": "http.response.body", "body": b"hello"})
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), http="httptools", lifespan="off",
            log_config=None, access_log=False, server_header=False, backlog=4096)
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def seed(dsn: str, people: int) -> None:
    """A site, ``PAGES`` pages every reader watches, each edited once: ``PAGES`` entries each."""
    wiki = ReferenceWiki(HOST)
    with psycopg.connect(dsn, autocommit=True) as conn:
        with conn.transaction():
            wiki.add_site(conn, "s1", host="wiki.example")
            wiki.add_group(conn, "readers", [{"permission": "read_pages", "match": "all"}])
            wiki.add_user(conn, "editor", email="editor@example.org", verified=True)
            for n in range(people):
                person = f"p{n:05d}"
                wiki.add_user(conn, person, email=f"{person}@example.org", verified=True)
                wiki.add_member(conn, "readers", person)
            for page in range(PAGES):
                wiki.add_page(conn, f"page{page}", "s1", f"/docs/{page}", title=f"Page {page}")
                for n in range(people):
                    wiki.watch(conn, f"page{page}", f"p{n:05d}")
        for page in range(PAGES):
            emit(
                conn,
                "page.edited",
                {"page": f"page{page}"},
                actor="editor",
                occurred_at=T0 + timedelta(seconds=page),
                schema=SCHEMA,
            )
        fanout = InboxFanOut(wiki, schema=SCHEMA)
        while fanout.drain(conn):
            pass


def wait_ready(port: int, proc: subprocess.Popen[bytes], path: str = "/") -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server on {port} ended ({proc.returncode})")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
                sock.sendall(
                    f"GET {path} HTTP/1.1\r\nHost: b\r\nConnection: close\r\n\r\n".encode()
                )
                if sock.recv(64).startswith(b"HTTP/1.1 200"):
                    return
        except OSError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"the server on {port} did not answer")


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


def load(spec: dict[str, Any]) -> dict[str, Any]:
    """Run the load generator in a new process on ``spec``; its figures."""
    done = subprocess.run(
        [sys.executable, __file__, "--load", json.dumps(spec)],
        capture_output=True,
        text=True,
        check=True,
    )
    figures: dict[str, Any] = json.loads(done.stdout)
    return figures


# --- the load generator (its own process) ------------------------------------------------


async def _one_client(
    port: int, requests: list[bytes], expect: int, until: float, warm: float, out: dict[str, Any]
) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    n = 0
    try:
        while True:
            started = time.perf_counter()
            if started >= until:
                return
            writer.write(requests[n % len(requests)])
            n += 1
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line[:15].lower() == b"content-length:":
                    length = int(line[15:])
            if length:
                await reader.readexactly(length)
            ended = time.perf_counter()
            if started >= warm:
                out["latencies"].append(ended - started)
                if int(head[9:12]) != expect:
                    out["errors"] += 1
    finally:
        writer.close()


async def _generate(spec: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"latencies": [], "errors": 0}
    start = time.perf_counter()
    warm = start + 1.0
    until = warm + float(spec["seconds"])
    clients = [
        _one_client(
            spec["port"],
            [r.encode("latin-1") for r in spec["requests"][i % len(spec["requests"])]],
            spec["expect"],
            until,
            warm,
            out,
        )
        for i in range(spec["clients"])
    ]
    await asyncio.gather(*clients)
    latencies = sorted(out["latencies"])
    count = len(latencies)
    return {
        "requests": count,
        "rps": round(count / float(spec["seconds"])),
        "p50_ms": round(latencies[count // 2] * 1000, 2) if count else None,
        "p99_ms": round(latencies[min(count - 1, int(count * 0.99))] * 1000, 2) if count else None,
        "errors": out["errors"],
    }


def _request(path: str, headers: dict[str, str]) -> str:
    lines = [f"GET {path} HTTP/1.1", "Host: bench"] + [f"{k}: {v}" for k, v in headers.items()]
    return "\r\n".join(lines) + "\r\n\r\n"


def _etag(port: int, person: str) -> str:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(
            _request(
                "/sites/s1/notifications/summary",
                {"X-Notify-User": person, "Connection": "close"},
            ).encode()
        )
        got = b""
        while chunk := sock.recv(65536):
            got += chunk
    for line in got.split(b"\r\n"):
        if line.lower().startswith(b"etag:"):
            return line.split(b":", 1)[1].strip().decode()
    raise RuntimeError(f"no ETag for {person}: {got[:200]!r}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--people", type=int, default=200)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--load", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.load:
        print(json.dumps(asyncio.run(_generate(json.loads(args.load)))))
        return
    with server() as found, database(found) as dsn:
        seed(dsn, args.people)
        results = run(dsn, args.clients, args.seconds, args.people, args.threads, args.rounds)
    print(json.dumps(results, indent=2))


def run(
    dsn: str, clients: int, seconds: float, people: int, threads: int, rounds: int = 3
) -> dict[str, Any]:
    """Serve the bare app and ``notify serve`` on the seeded ``dsn`` and load each, ``rounds``
    times in turn; the medians over the rounds (see the module's docstring)."""
    names = [f"p{n:05d}" for n in range(people)]
    results: dict[str, Any] = {"clients": clients, "seconds": seconds, "rounds": {}}
    results["uptime_before"] = uptime()
    bare_port, notify_port = free_port(), free_port()
    bare = subprocess.Popen([sys.executable, "-c", BARE_APP, str(bare_port)])
    notify = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "notify_cli",
            "serve",
            "--dsn",
            dsn,
            "--port",
            str(notify_port),
            "--threads",
            str(threads),
            "--log-level",
            "warning",
        ],
    )
    try:
        wait_ready(bare_port, bare)
        wait_ready(notify_port, notify, "/healthz")
        time.sleep(1.0)  # the live listener is up: the summaries can be kept
        etags = {p: _etag(notify_port, p) for p in names}
        common = {"clients": clients, "seconds": seconds}
        polls = [
            [
                _request(
                    "/sites/s1/notifications/summary",
                    {"X-Notify-User": p, "If-None-Match": etags[p]},
                )
            ]
            for p in names
        ]
        lists = [[_request("/sites/s1/notifications", {"X-Notify-User": p})] for p in names]
        specs = {
            "bare": {"port": bare_port, "expect": 200, "requests": [[_request("/", {})]]},
            "summary_304": {"port": notify_port, "expect": 304, "requests": polls},
            "list_200": {"port": notify_port, "expect": 200, "requests": lists},
        }
        # Round by round, one target after the other: a change of the machine's load meets
        # every target of a round, and the ratios are taken within each round.
        for _ in range(rounds):
            for name, spec in specs.items():
                results["rounds"].setdefault(name, []).append(load({**common, **spec}))
    finally:
        for proc in (bare, notify):
            proc.terminate()
            proc.wait(10)
    results["uptime_after"] = uptime()
    for name, runs in results["rounds"].items():
        results[name] = {
            "rps": statistics.median(r["rps"] for r in runs),
            "p50_ms": statistics.median(r["p50_ms"] for r in runs),
            "p99_ms": statistics.median(r["p99_ms"] for r in runs),
            "errors": sum(r["errors"] for r in runs),
            "requests": sum(r["requests"] for r in runs),
        }
        if name != "bare":
            ratios = [
                r["rps"] / max(1, b["rps"])
                for r, b in zip(runs, results["rounds"]["bare"], strict=True)
            ]
            results[name]["ratio_to_bare"] = round(statistics.median(ratios), 3)
            results[name]["ratios_by_round"] = [round(x, 3) for x in ratios]
    summary = results["summary_304"]
    results["goal_met"] = summary["ratio_to_bare"] >= 0.5 and summary["p99_ms"] < 50
    return results


if __name__ == "__main__":
    main()
