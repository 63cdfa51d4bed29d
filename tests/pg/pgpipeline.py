"""Running event logs through the pipeline on PostgreSQL, step by step, with a fake clock.

`PgRun` feeds formats.md events the way a host and a worker would meet them: due work up to
the event's time runs first (with the world as it was before the event), then the host applies
the event's world change and appends the event in one transaction (`WorldLoader`), then the
worker's consumer handles it. A `TableSink` records every hint in the round's transaction, so
only committed hints are seen.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
from pgworld import HOST_SCHEMA, SCHEMA

from notify_core.events.log import Event, parse_event
from notify_core.hints.decide import Policy, Skip, SkipReason
from notify_core.hints.pipeline import Hint, Trigger
from notify_core.replay.lines import hint_to_json
from notify_core.replay.partitions import partition_of
from notify_pg import EventLog
from notify_pg.db.seam import Conn, Seam
from notify_pg.push.providers import PushProvider
from notify_pg.push.worker import Worker, WorkerConfig
from notify_reference_host import ReferenceHost
from notify_reference_host.load import LogLoader, SettableClock
from notify_reference_host.world import WorldLoader

FAR = datetime(2100, 1, 1, tzinfo=UTC)
START = datetime(2026, 10, 23, 9, 0, tzinfo=UTC)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "replay"))
from build import POLICY, Log  # noqa: E402

__all__ = [
    "FAR",
    "POLICY",
    "START",
    "FakeClock",
    "Log",
    "PgRun",
    "TableSink",
    "assert_same_hints",
    "lines_of",
]


def lines_of(log: Log) -> list[str]:
    """The JSON lines of a built log."""
    return [json.dumps(e, separators=(",", ":")) for e in log.events]


def assert_same_hints(got: Sequence[str], expected: Sequence[str], parts: int) -> None:
    """Partitioned consumers give exactly the hints of one consumer
    (`notify_core.replay.partitions`).

    One partition: the same lines in the same order. Several: the same lines, and for each
    partition its recipients' lines in the replay's order (the rounds of different partitions
    interleave, so only the order across partitions may differ).
    """
    if parts == 1:
        assert list(got) == list(expected)
        return
    missing = sorted(set(expected) - set(got))
    extra = sorted(set(got) - set(expected))
    assert sorted(got) == sorted(expected), {"missing": missing, "extra": extra}

    def of(lines: Sequence[str], part: int) -> list[str]:
        return [
            line for line in lines if partition_of(json.loads(line)["recipient"], parts) == part
        ]

    for part in range(parts):
        assert of(got, part) == of(expected, part), f"partition {part} of {parts}"


@contextmanager
def another_worker(dsn: str, consumer: str = "push") -> Iterator[None]:
    """A session that counts as one more worker of the consumer while the block runs (as
    `Worker.prepare` joins it), so a worker's rounds take only its share of the partitions."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        Seam("notify_pg", SCHEMA).one(conn, "join_consumer", {"schema": SCHEMA, "name": consumer})
        yield


#: A clock the test moves (the loader's clock).
FakeClock = SettableClock


class TableSink:
    """Records every hint in the round's transaction (table public.sink_hints)."""

    def __init__(self, conn: Conn) -> None:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS public.sink_hints ("
            " n bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
            " hint text NOT NULL, notification_id text, not_allowed_event boolean NOT NULL)"
        )

    def __call__(self, conn: Conn, hint: Hint, notification_id: str | None) -> None:
        hidden = (
            isinstance(hint.decision, Skip)
            and hint.decision.reason is SkipReason.NOT_ALLOWED
            and hint.trigger is Trigger.EVENT
        )
        conn.execute(
            "INSERT INTO public.sink_hints (hint, notification_id, not_allowed_event)"
            " VALUES (%s, %s, %s)",
            [json.dumps(hint_to_json(hint)), notification_id, hidden],
        )


class PgRun:
    """One log on one test database: the host, the event log and a worker with a fake clock."""

    def __init__(
        self,
        dsn: str,
        conn: psycopg.Connection[Any],
        policy: Policy | None = None,
        *,
        providers: Sequence[PushProvider] = (),
        config: WorkerConfig | None = None,
        start: datetime = datetime(2026, 10, 23, 9, 0, tzinfo=UTC),
        jitter: float | None = 1.0,
        **worker_options: Any,
    ) -> None:
        self.conn = conn
        self.dsn = dsn
        self.clock = FakeClock(start)
        self.sink = TableSink(conn)
        self.loader = WorldLoader(SCHEMA, HOST_SCHEMA)
        self.log = EventLog(SCHEMA)
        self.host = ReferenceHost(HOST_SCHEMA)
        self.worker = Worker(
            lambda: psycopg.connect(dsn, autocommit=True),
            self.host,
            schema=SCHEMA,
            policy=policy or Policy(),
            config=config,
            clock=self.clock,
            providers=providers,
            sink=self.sink,
            jitter=None if jitter is None else (lambda: jitter),
            **worker_options,
        )
        self.load = LogLoader(
            conn, schema=SCHEMA, host_schema=HOST_SCHEMA, worker=self.worker, clock=self.clock
        )
        self.seq_map = self.load.seq_map
        self._next_seq = 1

    # --- driving ---------------------------------------------------------------------------

    def drain(self) -> None:
        """Let the consumer reach the head of the log."""
        self.load.drain()

    def due(self, until: datetime) -> None:
        """Run every piece of due work at or before ``until``."""
        self.load.due(until)

    def feed(self, obj: dict[str, Any] | Event, *, push: bool = False) -> int:
        """Feed one event: due work first, then the host's write with the append, then the
        consumer; with ``push`` the push rounds run after the due work and after the event.
        Returns the event's seq in the database."""
        event = obj if isinstance(obj, Event) else parse_event(obj)
        self.clock.set(event.occurred_at)
        self.due(event.occurred_at)
        if push:
            self.push()
        seq = self.load.append(event)
        self.drain()
        if push:
            self.push()
        return seq

    def event(self, type_: str, payload: dict[str, Any], **envelope: Any) -> int:
        """Feed an event given by its members, at the clock's time unless ``at`` is given."""
        at = envelope.pop("at", self.clock.now)
        obj = {
            "seq": self._next_seq,
            "type": type_,
            "occurred_at": at.isoformat(),
            **envelope,
            "payload": payload,
        }
        self._next_seq += 1
        return self.feed(obj)

    def feed_lines(self, lines: Iterable[str], *, push: bool = False) -> None:
        """Feed log lines; with ``push``, run the push rounds after each event."""
        for line in lines:
            if line.strip() and not line.startswith("#"):
                obj = json.loads(line)
                self._next_seq = max(self._next_seq, int(obj["seq"]) + 1)
                self.feed(obj, push=push)

    def settle(self, until: datetime = FAR) -> None:
        """Move the clock from one pending piece of work to the next (due work and push
        sends), running it, until nothing is pending up to ``until``."""
        for _ in range(10_000):
            self.drain()
            row = self.conn.execute(
                f"SELECT min(t) FROM (SELECT min(end_at) t FROM {SCHEMA}.windows"
                f" UNION ALL SELECT min(due_at) FROM {SCHEMA}.delayed_releases"
                f" UNION ALL SELECT min(due_at) FROM {SCHEMA}.badge_syncs WHERE pending"
                f" UNION ALL SELECT min(next_at) FROM {SCHEMA}.push_sends) d"
            ).fetchone()
            pending = None if row is None else row[0]
            if pending is None or pending > until:
                return
            self.at(max(pending, self.clock.now))
            self.push()
        raise AssertionError("settle: work keeps coming due")

    def finish(self, until: datetime = FAR) -> None:
        """The log ends: let the clock run on until nothing is pending."""
        self.due(until)

    def at(self, now: datetime) -> None:
        """Move the clock (due work up to then runs)."""
        self.clock.set(now)
        self.due(now)

    def later(self, seconds: float) -> datetime:
        self.at(self.clock.now + timedelta(seconds=seconds))
        return self.clock.now

    def push(self) -> int:
        """Run push rounds at the clock's time until none is due."""
        total = 0
        while n := self.worker.send_pushes():
            total += n
        return total

    # --- reading ---------------------------------------------------------------------------

    def hints(self, include_hidden: bool = False) -> list[dict[str, Any]]:
        """The committed hints in order, with seqs of the fed log (as a replay prints them)."""
        rows = self.conn.execute(
            "SELECT hint, not_allowed_event FROM public.sink_hints ORDER BY n"
        ).fetchall()
        out = []
        for text, hidden in rows:
            hint = json.loads(text)
            if hidden and not include_hidden:
                continue
            if "seq" in hint:
                hint["seq"] = self.seq_map.get(hint["seq"], -hint["seq"])
            out.append(hint)
        return out

    def hint_lines(self) -> list[str]:
        """The hints as `notify replay --include-skips` writes them (members in order)."""
        return [json.dumps(h, ensure_ascii=False, separators=(",", ":")) for h in self.hints()]

    def push_sends(self) -> list[dict[str, Any]]:
        cur = self.conn.execute(
            f"SELECT notification_id, registration_id, recipient, kind, thread, message, target,"
            f" quiet, count, cleared, due_at, attempt, next_at FROM {SCHEMA}.push_sends ORDER BY id"
        )
        names = [d.name for d in cur.description or []]
        return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]
