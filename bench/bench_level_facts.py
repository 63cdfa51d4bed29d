"""Benchmark: level_facts for 10,000 candidates in one batch vs one person at a time.

Prints one JSON object. The database is NOTIFY_BENCH_DSN (a role with CREATEDB; a scratch
database is created and dropped) or, without it, a throwaway pgserver instance.

    python bench/bench_level_facts.py [--candidates 10000] [--repeat 5]

Baselines, on the same database and connection:
- ``per_person_call``: ``level_facts(thread, [one person])`` per candidate (3 statements each);
- ``per_person_queries``: the thread's path once, then one preference query and one settings
  query per candidate (2 statements each) - the cheapest per-person loop.
The goal (issue "PostgreSQL adapter, part 1") is a ratio >= 50 against the per-person loop.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

import psycopg
from scratch_pg import database, server

from notify_core.hints.levels import LevelFacts, Preference, Target, TargetKind
from notify_pg import DEFAULT_LEVEL_KEY, NotifyStore
from notify_pg.db.seam import Seam
from notify_reference_host import ReferenceHost

THREAD, CHANNEL, SPACE = "t-bench", "c-bench", "s-bench"


def populate(
    conn: psycopg.Connection[Any], host: ReferenceHost, store: NotifyStore, n: int
) -> list[str]:
    users = [f"u-{i:06d}" for i in range(n)]
    host.add_space(conn, SPACE)
    host.add_channel(conn, CHANNEL, SPACE)
    host.add_thread(conn, THREAD, CHANNEL)
    with conn.cursor().copy("COPY host.users (id) FROM STDIN") as copy:
        for u in users:
            copy.write_row([u])
    with conn.cursor().copy("COPY host.user_settings (user_id, key, value) FROM STDIN") as copy:
        for u in users[::5]:
            copy.write_row([u, DEFAULT_LEVEL_KEY, '"all"'])
    levels = ["all", "mentions", "mute"]
    with conn.transaction():
        for i, u in enumerate(users):
            target = None
            if i % 10 == 1:
                target = Target(kind=TargetKind.THREAD, id=THREAD)
            elif i % 10 == 2:
                target = Target(kind=TargetKind.CHANNEL, id=CHANNEL)
            elif i % 20 == 3:
                target = Target(kind=TargetKind.SPACE, id=SPACE)
            if target is not None:
                store.preferences.upsert(conn, u, target, Preference(level=levels[i % 3]))
    conn.execute("ANALYZE")
    return users


def timed(fn: Callable[[], object], repeat: int) -> tuple[float, object]:
    samples = []
    result: object = None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1000, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidates", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with server() as base, database(base) as dsn, psycopg.connect(dsn, autocommit=True) as conn:
        host = ReferenceHost("host")
        store = NotifyStore(host, schema="notify")
        users = populate(conn, host, store, args.candidates)
        seam = Seam("notify_pg", "notify")

        def batched() -> dict[str, LevelFacts]:
            return store.level_facts(conn, THREAD, users)

        def per_person_call() -> dict[str, LevelFacts]:
            out: dict[str, LevelFacts] = {}
            for u in users:
                out.update(store.level_facts(conn, THREAD, [u]))
            return out

        def per_person_queries() -> int:
            path = host.notification_path(conn, Target(kind=TargetKind.THREAD, id=THREAD))
            assert path is not None
            rows = 0
            for u in users:
                rows += len(
                    seam.all(
                        conn,
                        "level_rows",
                        {
                            "user_ids": [u],
                            "thread": THREAD,
                            "channel": path.channel_id,
                            "space": path.space_id,
                        },
                    )
                )
                host.settings(conn, [u], [DEFAULT_LEVEL_KEY])
            return rows

        batched_ms, facts = timed(batched, args.repeat)
        loop_ms, loop_facts = timed(per_person_call, max(1, args.repeat // 2))
        queries_ms, _ = timed(per_person_queries, max(1, args.repeat // 2))
        assert facts == loop_facts
        version = conn.execute("SHOW server_version").fetchone()
    print(
        json.dumps(
            {
                "benchmark": "level_facts",
                "candidates": args.candidates,
                "server_version": version[0] if version else "unknown",
                "batched_ms": round(batched_ms, 2),
                "per_person_call_ms": round(loop_ms, 2),
                "per_person_queries_ms": round(queries_ms, 2),
                "ratio_vs_per_person_call": round(loop_ms / batched_ms, 1),
                "ratio_vs_per_person_queries": round(queries_ms / batched_ms, 1),
                "goal_ratio": 50,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
