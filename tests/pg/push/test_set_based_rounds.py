"""Set-based rounds (issue 15): the statements of a consumer round, a due-work round and a push
round do not grow with the people a fan-out reaches. The same three messages go to the readers
of a channel with 6 and with 24 readers (half of them with level all: sends, windows, flushes
and pushes); every kind of round runs the same number of statements."""

from __future__ import annotations

import importlib
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import attrs
import psycopg
import pytest

from notify_pg.db.seam import Seam
from notify_pg.push.providers import FakeProvider
from notify_pg.push.worker import Worker
from notify_reference_host import ReferenceHost

BENCH = Path(__file__).resolve().parents[3] / "bench"


@pytest.fixture
def bench(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.syspath_prepend(str(BENCH))
    return importlib.import_module("bench_pg_pipeline")


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """Counts every statement of the seam by the round (the worker's method) that runs it."""
    counts: Counter[str] = Counter()
    current = ["other"]
    for name in ("all", "one", "run", "run_many", "one_each"):
        original = getattr(Seam, name)

        def wrapper(seam: Seam, *args: Any, _original: Any = original, **kw: Any) -> Any:
            counts[current[0]] += 1
            return _original(seam, *args, **kw)

        monkeypatch.setattr(Seam, name, wrapper)
    for method in ("consume", "run_due", "send_pushes"):
        original = getattr(Worker, method)

        def round_(self: Worker, *args: Any, _original: Any = original, _name: str = method) -> Any:
            current[0] = _name
            try:
                return _original(self, *args)
            finally:
                current[0] = "other"

        monkeypatch.setattr(Worker, method, round_)
    yield counts


def statements(bench: Any, server: str, people: int, counts: Counter[str]) -> Counter[str]:
    with bench.database(server) as dsn, psycopg.connect(dsn, autocommit=True) as conn:
        stream = bench.Stream(conn, people, 2)
        stream.world()
        counts.clear()
        worker = Worker(
            lambda: psycopg.connect(dsn, autocommit=True),
            ReferenceHost(bench.HOST),
            schema=bench.SCHEMA,
            policy=bench.POLICY,
            config=attrs.evolve(bench.CONFIG, partitions=1, send_batch=1000, due_batch=1000),
            # Windows (2 s) end, pushes are not too old to go (max_age).
            clock=lambda: datetime.now(UTC) + timedelta(seconds=30),
            providers=[FakeProvider("apns")],
        )
        worker.run_once()  # the world
        before = worker.stats.decisions.total()
        for n in range(3):
            with conn.transaction():
                stream.add(
                    "message.created",
                    {
                        "message": f"m{n}",
                        "thread": stream.threads[n % 2],
                        "thread_seq": n + 1,
                        "author": stream.people[0],
                        "origin": "human",
                        "kind": "text",
                    },
                    actor=stream.people[0],
                )
        counts.clear()
        while worker.run_once():
            pass
        decided = worker.stats.decisions.total() - before
        pushed = worker.stats.sent.total()
        worker.close()
    assert decided >= 3 * (people - 1)  # every reader but the author, and the flushes
    assert pushed >= people // 2  # the readers with level all, at least
    return Counter(counts)


def test_rounds_run_as_many_statements_for_24_readers_as_for_6(
    bench: Any, pg_server: str, counted: Counter[str]
) -> None:
    few = statements(bench, pg_server, 6, counted)
    many = statements(bench, pg_server, 24, counted)
    assert many == few
