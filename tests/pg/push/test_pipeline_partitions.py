"""Recipient partitions on PostgreSQL (`notify_core.replay.partitions`, migration 0007): the SQL
partition function equals the Python one, a consumer's cursors per partition, the rules for
changing the count, due work that stays with its partition, and rounds of different
partitions that run side by side."""

from __future__ import annotations

import importlib
import json
import random
import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner
from pgpipeline import START, Log, PgRun, another_worker, assert_same_hints, lines_of
from pgworld import SCHEMA
from test_pipeline_crash import _policy, append_burst, replayed

from notify_cli.main import cli
from notify_core.events.log import Event, parse_event
from notify_core.replay.partitions import Partition, partition_of
from notify_core.replay.run import policy_from_mapping
from notify_core.values.errors import UsageError
from notify_pg import migrate, migrations
from notify_pg.db.errors import PartitionError
from notify_pg.db.seam import Seam
from notify_pg.push import PgWorld, Session
from notify_pg.push.worker import Worker, WorkerConfig

Connect = Callable[[], psycopg.Connection[Any]]


def cursors(conn: psycopg.Connection[Any]) -> list[tuple[str, int, int, int]]:
    rows = conn.execute(
        f"SELECT name, part, parts, position FROM {SCHEMA}.consumer_cursors ORDER BY name, part"
    ).fetchall()
    return [(str(n), int(p), int(ps), int(pos)) for n, p, ps, pos in rows]


def worker_for(run: PgRun, parts: int, **options: Any) -> Worker:
    """Another worker on the run's database, with its own connection and partition count."""
    return Worker(
        run.worker.connection.connect,
        run.host,
        schema=SCHEMA,
        policy=run.worker.push.policy,
        config=WorkerConfig(partitions=parts, **options),
        clock=run.clock,
        sink=run.sink,
    )


# --- the partition function ------------------------------------------------------------------


def random_keys(count: int, seed: int) -> list[str]:
    """Keys of ASCII, Latin-1, Greek, CJK, combining marks and astral characters (emoji);
    no NUL and no surrogates, which PostgreSQL text cannot hold."""
    ranges = [(0x20, 0x7E), (0xA0, 0xFF), (0x370, 0x3FF), (0x4E00, 0x9FFF), (0x300, 0x36F)]
    ranges.append((0x1F300, 0x1FAFF))
    rng = random.Random(seed)
    keys = []
    for _ in range(count):
        chars = []
        for _ in range(rng.randint(1, 24)):
            low, high = rng.choice(ranges)
            chars.append(chr(rng.randint(low, high)))
        keys.append("".join(chars))
    return keys


def test_sql_partition_of_equals_python(conn: psycopg.Connection[Any]) -> None:
    """`{schema}.partition_of(key, count)` gives the number `notify_core.replay.partitions.
    partition_of` gives, on unicode keys, the empty string and long keys, for many counts:
    a due-work filter in SQL and a pipeline in Python must agree on every recipient."""
    keys = ["", " ", "u1", "u-alex", "alex", "ü-ber", "e\u0301", "日本語", "😀", "a" * 5000]
    keys += [f"u{i}" for i in range(500)] + random_keys(2000, seed=11)
    counts = [1, 2, 3, 4, 7, 16, 1000, 2**31 - 1]
    rows = conn.execute(
        f"SELECT k.i, c, {SCHEMA}.partition_of(k.key, c)"
        " FROM unnest(%s::text[]) WITH ORDINALITY AS k(key, i), unnest(%s::int[]) AS c",
        [keys, counts],
    ).fetchall()
    assert len(rows) == len(keys) * len(counts)
    got = {(keys[int(i) - 1], int(c)): int(p) for i, c, p in rows}
    expected = {(k, c): partition_of(k, c) for k in keys for c in counts}
    assert got == expected
    # Not a constant: the keys spread over the partitions.
    assert {p for (_k, c), p in got.items() if c == 7} == set(range(7))


def test_sql_partition_of_is_immutable_and_strict(conn: psycopg.Connection[Any]) -> None:
    """IMMUTABLE (the planner may inline it and evaluate it once per row), STRICT (NULL in,
    NULL out)."""
    row = conn.execute(
        "SELECT p.provolatile, p.proisstrict FROM pg_proc p"
        " JOIN pg_namespace n ON n.oid = p.pronamespace"
        " WHERE n.nspname = %s AND p.proname = 'partition_of'",
        [SCHEMA],
    ).fetchone()
    assert row == ("i", True)
    null = conn.execute(f"SELECT {SCHEMA}.partition_of(NULL, 2)").fetchone()
    assert null == (None,)


# --- cursors and the partition count ---------------------------------------------------------


def test_migration_0007_keeps_a_cursor_as_partition_0_of_1(
    new_database: Callable[[str | None], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A consumer of before partitions keeps its position as partition 0 of 1; a worker with
    two partitions then takes over from there (one cursor always stands at one position)."""
    shipped = migrations()
    before = tuple(m for m in shipped if m.version < 7)
    module = importlib.import_module("notify_pg.db.migrate")
    dsn = new_database(None)
    with psycopg.connect(dsn, autocommit=True) as conn:
        monkeypatch.setattr(module, "migrations", lambda package: before)
        migrate(conn, SCHEMA)
        conn.execute(f"INSERT INTO {SCHEMA}.consumer_cursors (name, position) VALUES ('push', 42)")
        monkeypatch.undo()
        assert migrate(conn, SCHEMA) == [m.name for m in shipped if m.version >= 7]
        assert cursors(conn) == [("push", 0, 1, 42)]
        from notify_reference_host import ReferenceHost

        worker = Worker(
            lambda: psycopg.connect(dsn, autocommit=True),
            ReferenceHost("host"),
            schema=SCHEMA,
            config=WorkerConfig(partitions=2),
        )
        worker.prepare()
        worker.close()
        assert cursors(conn) == [("push", 0, 2, 42), ("push", 1, 2, 42)]


def test_a_new_consumer_gets_one_cursor_per_partition(
    db_dsn: str, conn: psycopg.Connection[Any]
) -> None:
    run = PgRun(db_dsn, conn, config=WorkerConfig(partitions=3))
    assert run.worker.consume() == 0  # an empty log; the cursors are created
    run.worker.close()
    assert cursors(conn) == [("push", p, 3, 0) for p in range(3)]


def seeded_lines() -> list[str]:
    """The log of `seeded_run`."""
    return lines_of(
        Log()
        .team()
        .pref("sam", "thread", "t", "all")
        .at(60)
        .msg("m1", "owner", seq=1)
        .at(70)
        .msg("m2", "sam", seq=2)
    )


def test_a_lone_worker_takes_the_free_partitions_at_its_position_in_one_round(
    db_dsn: str, conn: psycopg.Connection[Any]
) -> None:
    """With 3 partitions a lone worker's round handles the backlog for all of them at once
    (one round decides for everybody, as with 1 partition): the hints of a replay."""
    run = seeded_run(db_dsn, conn, 3)
    head = conn.execute(f"SELECT max(seq) FROM {SCHEMA}.event_log").fetchone()
    assert head is not None
    assert run.worker.consume() == head[0]
    assert cursors(conn) == [("push", p, 3, head[0]) for p in range(3)]
    run.finish()
    got = run.hint_lines()
    run.worker.close()
    assert_same_hints(got, replayed(seeded_lines()), 3)


def test_a_worker_takes_its_share_of_the_partitions_beside_another(
    db_dsn: str, conn: psycopg.Connection[Any], connect: Connect
) -> None:
    """While another worker counts with the consumer, a round takes the worker's share of
    the 3 partitions (2), never one that another round holds; the next round the third."""
    run = seeded_run(db_dsn, conn, 3)
    head = conn.execute(f"SELECT max(seq) FROM {SCHEMA}.event_log").fetchone()
    assert head is not None
    with another_worker(db_dsn):
        run.worker.prepare()  # the cursors, and the worker counts with the consumer
        other = connect()
        with other.transaction():
            other.execute(f"SELECT 1 FROM {SCHEMA}.consumer_cursors WHERE part = 0 FOR UPDATE")
            assert run.worker.consume() == head[0]
            assert cursors(conn) == [("push", 0, 3, 0)] + [("push", p, 3, head[0]) for p in (1, 2)]
            while run.worker.consume():  # the follow events that round appended (S5)
                pass
            assert cursors(conn)[0] == ("push", 0, 3, 0)  # partition 0 is busy
        assert run.worker.consume() > 0  # partition 0 alone
        while run.worker.consume():
            pass
        assert len({pos for *_, pos in cursors(conn)}) == 1
        other.close()
    run.finish()
    got = run.hint_lines()
    run.worker.close()
    assert_same_hints(got, replayed(seeded_lines()), 3)


def test_bad_partition_counts_are_refused() -> None:
    for bad in (0, -1, True, 1.5):
        with pytest.raises(UsageError, match="partitions"):
            WorkerConfig(partitions=bad)  # type: ignore[arg-type]


def seeded_run(dsn: str, conn: psycopg.Connection[Any], parts: int, **options: Any) -> PgRun:
    """The team and twelve messages, appended but not consumed yet."""
    lines = lines_of(
        Log()
        .team()
        .pref("sam", "thread", "t", "all")
        .at(60)
        .msg("m1", "owner", seq=1)
        .at(70)
        .msg("m2", "sam", seq=2)
    )
    run = PgRun(
        dsn,
        conn,
        policy_from_mapping(_policy()),
        config=WorkerConfig(partitions=parts, **options),
    )
    append_burst(run, [parse_event(json.loads(line)) for line in lines])
    return run


def test_the_count_changes_when_all_cursors_stand_at_one_position(
    db_dsn: str, conn: psycopg.Connection[Any]
) -> None:
    """Workers with two partitions reach the head; a worker with three replaces the cursors at
    the head; a worker still running with two then stops its rounds with
    partition_count_changed, and none of its rounds decides with the wrong count."""
    run = seeded_run(db_dsn, conn, 2)
    run.drain()
    head = cursors(conn)[0][3]
    assert cursors(conn) == [("push", 0, 2, head), ("push", 1, 2, head)]
    three = worker_for(run, 3)
    three.prepare()
    assert cursors(conn) == [("push", p, 3, head) for p in range(3)]
    with pytest.raises(PartitionError) as info:
        run.worker.consume()
    assert info.value.code == "partition_count_changed"
    assert cursors(conn) == [("push", p, 3, head) for p in range(3)]
    # Back to two partitions: all three stand at the head.
    three.close()
    run.worker.close()
    again = worker_for(run, 2)
    again.prepare()
    again.close()
    assert cursors(conn) == [("push", 0, 2, head), ("push", 1, 2, head)]


def test_the_count_cannot_change_while_cursors_stand_apart(
    db_dsn: str, conn: psycopg.Connection[Any], connect: Connect
) -> None:
    """One partition of three has handled more events than the others: another count cannot
    take over (the events between were decided for some recipients and not for others), so
    the change is refused with the positions named, in Python and on the command line
    (exit 2, one line, no traceback); the cursors stay as they were."""
    run = seeded_run(db_dsn, conn, 3, batch_size=5)
    run.worker.prepare()
    other = connect()
    with other.transaction():  # other workers' rounds hold partitions 1 and 2
        other.execute(f"SELECT 1 FROM {SCHEMA}.consumer_cursors WHERE part > 0 FOR UPDATE")
        # Partition 0 alone: a full first page, read on to three pages (a third of the people).
        assert run.worker.consume() == 15
    other.close()
    before = cursors(conn)
    assert [c[3] for c in before] == [15, 0, 0]
    two = worker_for(run, 2)
    with pytest.raises(PartitionError) as info:
        two.prepare()
    two.close()
    assert info.value.code == "partition_change_refused"
    message = str(info.value)
    for text in ("partition 0 of 3 at 15", "partition 1 of 3 at 0", "partition 2 of 3 at 0"):
        assert text in message
    assert cursors(conn) == before
    result = CliRunner().invoke(
        cli, ["worker", "--dsn", db_dsn, "--once", "--partitions", "2", "--log-level", "error"]
    )
    assert result.exit_code == 2, result.output
    assert "partition 0 of 3 at 15" in result.stderr
    assert "Traceback" not in result.output
    assert len(result.stderr.strip().splitlines()) == 1
    assert cursors(conn) == before
    # The old count goes on where it stood and reaches the head.
    run.drain()
    run.worker.close()
    assert len({c[3] for c in cursors(conn)}) == 1


def test_the_worker_command_refuses_a_bad_partition_count(db_dsn: str) -> None:
    for bad in ("0", "-2", "two"):
        result = CliRunner().invoke(cli, ["worker", "--dsn", db_dsn, "--once", "--partitions", bad])
        assert result.exit_code == 2, result.output
        assert "--partitions" in result.output
        assert "Traceback" not in result.output


# --- due work stays with its partition ---------------------------------------------------------


def test_a_partition_never_runs_the_due_work_of_another(
    db_dsn: str, conn: psycopg.Connection[Any], connect: Connect
) -> None:
    """D6, D8: Alex (partition 0 of 2) and Sam (partition 1) each have a window on t with a
    collected message, ending at 120 s. A message at 200 s (in the channel's main thread) is
    handled by partition 0 while
    partition 1 is held by another worker: partition 0 flushes Alex's window first, and leaves
    Sam's window to partition 1, whose consumer flushes it before deciding the message for
    Sam. Together: the hints of a replay."""
    assert (partition_of("alex", 2), partition_of("sam", 2)) == (0, 1)
    log = Log().team().pref("sam", "thread", "t", "all").pref("alex", "thread", "t", "all")
    log.at(60).msg("m1", "owner", seq=1).at(70).msg("m2", "owner", seq=2)
    head = len(log.events)
    # In another thread: the flushes read the facts of t, which the host has moved on to when
    # a consumer runs them late (a lagging consumer decides with the facts of its time).
    log.at(200).msg("m3", "owner", thread="c-main", seq=1)
    lines = lines_of(log)
    expected = replayed(lines)
    run = PgRun(db_dsn, conn, policy_from_mapping(_policy()), config=WorkerConfig(partitions=2))
    run.feed_lines(lines[:head])
    windows = conn.execute(
        f"SELECT recipient, collected FROM {SCHEMA}.windows ORDER BY recipient"
    ).fetchall()
    assert windows == [("alex", 1), ("sam", 1)]
    append_burst(run, [parse_event(json.loads(lines[head]))])
    run.clock.set(parse_event(json.loads(lines[head])).occurred_at)
    before = len(run.hint_lines())

    other = connect()
    with other.transaction():
        other.execute(f"SELECT 1 FROM {SCHEMA}.consumer_cursors WHERE part = 1 FOR UPDATE")
        assert run.worker.consume() == 1  # partition 0
        assert run.worker.consume() == 0  # partition 1 is busy
        left = conn.execute(
            f"SELECT recipient, end_at FROM {SCHEMA}.windows ORDER BY recipient"
        ).fetchall()
        assert left == [("sam", START + timedelta(seconds=120))]  # Alex's went, Sam's stays
        round_hints = [json.loads(h) for h in run.hint_lines()[before:]]
        assert [h["recipient"] for h in round_hints if h["trigger"] == "flush"] == ["alex"]
        assert {h["recipient"] for h in round_hints} <= {"alex", "owner", "robin"}
    assert run.worker.consume() == 1  # partition 1: Sam's flush, then the message
    run.finish()
    got = run.hint_lines()
    run.worker.close()
    assert_same_hints(got, expected, 2)
    assert sum('"trigger":"flush"' in h for h in got) == 2


# --- rounds of different partitions run side by side ----------------------------------------


def test_rounds_of_different_partitions_run_side_by_side(
    db_dsn: str, conn: psycopg.Connection[Any]
) -> None:
    """Two workers with two partitions: each holds one partition's round open until the other
    is inside its own round too (a barrier in the round's event hook), which can only pass if
    the rounds run at the same time; meanwhile a third worker finds no free partition."""
    run = seeded_run(db_dsn, conn, 2)
    meet, done = threading.Barrier(3, timeout=30), threading.Barrier(3, timeout=30)
    parts_seen: list[int] = []
    errors: list[BaseException] = []

    def hook(round_conn: psycopg.Connection[Any], event: Event | None) -> None:
        if event is not None and event.seq == 1:
            meet.wait()
            done.wait()

    def make() -> Worker:
        return Worker(
            run.worker.connection.connect,
            run.host,
            schema=SCHEMA,
            policy=run.worker.push.policy,
            config=WorkerConfig(partitions=2, batch_size=1000),
            clock=run.clock,
            sink=run.sink,
            on_event=hook,
        )

    workers = [make(), make()]
    for w in workers:
        w.prepare()

    def work(worker: Worker) -> None:
        try:
            assert worker.consume() > 0
            parts_seen.append(1)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(w,)) for w in workers]
    for t in threads:
        t.start()
    third = worker_for(run, 2)
    try:
        meet.wait()  # both rounds are inside their first event
        assert third.consume() == 0
    finally:
        done.wait()
        third.close()
    for t in threads:
        t.join(60)
    for w in workers:
        w.close()
    assert not errors, errors
    assert len(parts_seen) == 2
    head = conn.execute(f"SELECT max(seq) FROM {SCHEMA}.event_log").fetchone()
    assert head is not None
    # Each partition's round handled the log up to the head it saw: both moved.
    assert all(position > 0 for _n, _p, _ps, position in cursors(conn))


def _statement_names(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Names of the seam's statements run from now on, in order."""
    names: list[str] = []
    for method in ("all", "one", "run", "run_many", "one_each"):
        original = getattr(Seam, method)

        def wrapper(seam: Seam, conn: Any, name: str, *a: Any, _o: Any = original, **k: Any) -> Any:
            names.append(name)
            return _o(seam, conn, name, *a, **k)

        monkeypatch.setattr(Seam, method, wrapper)
    return names


@pytest.mark.parametrize("parts", [1, 2])
def test_a_poll_at_the_head_costs_the_same_with_any_partition_count(
    parts: int, db_dsn: str, conn: psycopg.Connection[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lone worker polling at the head runs two statements (its cursor, an empty page),
    whatever the count: the other partitions are taken only by a round with events."""
    run = seeded_run(db_dsn, conn, parts)
    while run.worker.consume():
        pass
    names = _statement_names(monkeypatch)
    assert run.worker.consume() == 0
    run.worker.close()
    assert names == ["lock_cursor", "read_events_page"]


def test_a_partitions_round_reads_only_its_own_readers(
    db_dsn: str, conn: psycopg.Connection[Any]
) -> None:
    """`PgWorld.readers` of a partitioned round answers the partition's people only (the
    fan-out keeps only them), in the same order: the other partitions' people are not
    loaded."""
    run = seeded_run(db_dsn, conn, 2)
    run.worker.close()
    everyone = list(PgWorld(Session(conn), run.host, SCHEMA).readers("c"))
    assert len(everyone) >= 3
    for part in (0, 1):
        session = Session(conn)
        mine = PgWorld(session, run.host, SCHEMA, owns=Partition(part, 2)).readers("c")
        assert list(mine) == [p for p in everyone if partition_of(p, 2) == part]
        assert set(mine) <= set(session.users)
        assert all(partition_of(p, 2) == part for p in session.users)
