"""One pipeline, two stores (architecture.md): the same log gives the same hints in a replay
(in memory) and on PostgreSQL (the worker with a fake clock). Any difference fails."""

from __future__ import annotations

import json
import tomllib
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner
from pgpipeline import PgRun

from notify_cli.main import cli
from notify_core.decide import Policy
from notify_core.events import parse_event
from notify_core.replay import policy_from_mapping
from notify_pg import NewEvent

ROOT = Path(__file__).resolve().parents[2]
GOLDENS = sorted(
    p for p in (ROOT / "tests" / "replay").glob("*.jsonl") if not p.name.endswith(".expected.jsonl")
)
LOGS = [*GOLDENS, ROOT / "examples" / "spec-example.jsonl"]


def policy_of(log: Path) -> tuple[Policy, list[str]]:
    toml = log.with_suffix(".toml")
    if toml.exists():
        return policy_from_mapping(tomllib.loads(toml.read_text())), ["--policy", str(toml)]
    return Policy(), []


@pytest.mark.parametrize("log", LOGS, ids=[p.stem for p in LOGS])
def test_replay_and_postgresql_give_the_same_hints(
    log: Path,
    new_database: Callable[[str | None], str],
    pg_template: str,
) -> None:
    policy, options = policy_of(log)
    replay = CliRunner().invoke(cli, ["replay", str(log), *options, "--include-skips"])
    assert replay.exit_code == 0, replay.output
    expected = replay.stdout.splitlines()

    dsn = new_database(pg_template)
    with psycopg.connect(dsn, autocommit=True) as conn:
        run = PgRun(dsn, conn, policy)
        run.feed_lines(log.read_text().splitlines())
        run.finish()
        got = run.hint_lines()
        run.worker.close()
    assert got == expected
    assert expected  # every log gives hints


def test_parity_holds_with_a_lagging_consumer(
    new_database: Callable[[str | None], str], pg_template: str
) -> None:
    """The consumer may lag: ten messages are appended in a burst and a due-work round runs at
    the clock's time first; it must not flush the window past the first unhandled message."""
    log = ROOT / "tests" / "replay" / "ten_messages.jsonl"
    policy, options = policy_of(log)
    replay = CliRunner().invoke(cli, ["replay", str(log), *options, "--include-skips"])
    lines = log.read_text().splitlines()
    head, burst = lines[:20], [parse_event(json.loads(line)) for line in lines[20:]]
    assert {e.type for e in burst} == {"message.created"}
    dsn = new_database(pg_template)
    with psycopg.connect(dsn, autocommit=True) as conn:
        run = PgRun(dsn, conn, policy)
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
        assert run.worker.run_due() == 0  # the window's end lies after the first unhandled event
        run.finish()
        got = run.hint_lines()
        run.worker.close()
    assert got == replay.stdout.splitlines()
    assert sum('"count":10' in line for line in got) == 1
