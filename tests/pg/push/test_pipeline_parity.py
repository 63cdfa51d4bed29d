"""One pipeline, two stores (docs/architecture.md#one-pipeline-two-stores): the same log gives
the same hints in a replay (in memory) and on PostgreSQL (the worker with a fake clock). Any
difference fails."""

from __future__ import annotations

import json
import tomllib
from collections.abc import Callable
from contextlib import nullcontext
from datetime import timedelta
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner
from pgpipeline import PgRun, another_worker, assert_same_hints
from pgworld import SCHEMA

from notify_cli.main import cli
from notify_core.events.log import parse_event
from notify_core.hints.decide import Policy
from notify_core.replay.partitions import partition_of
from notify_core.replay.run import policy_from_mapping
from notify_pg import NewEvent
from notify_pg.push.worker import WorkerConfig

ROOT = Path(__file__).resolve().parents[3]
GOLDENS = sorted(
    p for p in (ROOT / "tests" / "replay").glob("*.jsonl") if not p.name.endswith(".expected.jsonl")
)
LOGS = [*GOLDENS, ROOT / "examples" / "spec-example.jsonl"]


def policy_of(log: Path) -> tuple[Policy, list[str]]:
    toml = log.with_suffix(".toml")
    if toml.exists():
        return policy_from_mapping(tomllib.loads(toml.read_text())), ["--policy", str(toml)]
    return Policy(), []


@pytest.mark.parametrize("parts", [1, 2, 3], ids=lambda n: f"partitions{n}")
@pytest.mark.parametrize("log", LOGS, ids=[p.stem for p in LOGS])
def test_replay_and_postgresql_give_the_same_hints(
    log: Path,
    parts: int,
    new_database: Callable[[str | None], str],
    pg_template: str,
) -> None:
    """One pipeline, two stores; with 2 or 3 recipient partitions the consumer's rounds of
    the partitions together give the same hints (D1-D11, S1-S5, B2 hold per recipient).
    Another worker counts with the consumer then, so the worker's rounds take one partition
    (of 2) or two together (of 3), not all of them at once as a lone worker does."""
    policy, options = policy_of(log)
    replay = CliRunner().invoke(cli, ["replay", str(log), *options, "--include-skips"])
    assert replay.exit_code == 0, replay.output
    expected = replay.stdout.splitlines()

    dsn = new_database(pg_template)
    with (
        psycopg.connect(dsn, autocommit=True) as conn,
        another_worker(dsn) if parts > 1 else nullcontext(),
    ):
        run = PgRun(dsn, conn, policy, config=WorkerConfig(partitions=parts))
        run.feed_lines(log.read_text().splitlines())
        run.finish()
        got = run.hint_lines()
        run.worker.close()
        cursors = conn.execute(
            f"SELECT part, parts FROM {SCHEMA}.consumer_cursors ORDER BY part"
        ).fetchall()
    assert_same_hints(got, expected, parts)
    assert expected  # every log gives hints
    assert cursors == [(p, parts) for p in range(parts)]


@pytest.mark.parametrize("parts", [1, 2], ids=lambda n: f"partitions{n}")
def test_parity_holds_with_a_lagging_consumer(
    parts: int, new_database: Callable[[str | None], str], pg_template: str
) -> None:
    """The consumer may lag: ten messages are appended in a burst and a due-work round runs at
    the clock's time first; it must not flush the window past the first unhandled message
    (D6, D8), of any partition: with two partitions one of them has handled the burst and the
    other has not."""
    log = ROOT / "tests" / "replay" / "ten_messages.jsonl"
    policy, options = policy_of(log)
    replay = CliRunner().invoke(cli, ["replay", str(log), *options, "--include-skips"])
    lines = log.read_text().splitlines()
    head, burst = lines[:20], [parse_event(json.loads(line)) for line in lines[20:]]
    assert {e.type for e in burst} == {"message.created"}
    dsn = new_database(pg_template)
    with psycopg.connect(dsn, autocommit=True) as conn:
        run = PgRun(dsn, conn, policy, config=WorkerConfig(partitions=parts))
        run.feed_lines(head)
        run.due(burst[0].occurred_at)
        for event in burst:
            with conn.transaction():
                run.loader.apply(conn, event)
                seq = run.log.append(
                    conn,
                    NewEvent(
                        type=event.type,
                        payload=dict(event.payload),
                        actor=event.actor,
                        occurred_at=event.occurred_at,
                    ),
                )
            run.seq_map[seq] = event.seq
        run.clock.set(burst[-1].occurred_at + timedelta(minutes=5))
        if parts > 1:
            # The partition that owns the window's person reaches the head; the other lags.
            owner = partition_of("alex", parts)
            with conn.transaction():
                conn.execute(
                    f"SELECT 1 FROM {SCHEMA}.consumer_cursors WHERE part <> %s FOR UPDATE",
                    [owner],
                )
                while run.worker.consume():
                    pass
            rows = conn.execute(f"SELECT part, position FROM {SCHEMA}.consumer_cursors")
            positions: dict[int, int] = dict(rows.fetchall())
            assert positions[owner] > min(positions.values())
        assert run.worker.run_due() == 0  # the window's end lies after the first unhandled event
        run.finish()
        got = run.hint_lines()
        run.worker.close()
    assert_same_hints(got, replay.stdout.splitlines(), parts)
    assert sum('"count":10' in line for line in got) == 1
