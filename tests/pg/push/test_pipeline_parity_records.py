"""One pipeline, two stores, with preference records (docs/architecture.md#one-pipeline-two-stores,
M1-M4, M6): logs whose people set, suspend and delete records between messages give the same
hints in a replay and on PostgreSQL, the record each push names included; the push deliveries
of a capped day are counted alike (``push_day_counts``) and the hints a record left with no
route are kept in ``push_holds``."""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner
from pgpipeline import PgRun, another_worker, assert_same_hints
from pgworld import SCHEMA

from notify_cli.main import cli
from notify_core.hints.decide import Policy
from notify_pg.push.worker import WorkerConfig
from tests.records_logs import Step, records_log

CAP = {"push": {"max_per_day": 2}}
PLANS: dict[str, list[Step]] = {
    "suspend_then_resume": [
        (0, ("set", "ana", {"push": {"enabled": True}})),
        (0, ("message", "ben", {"ana", "cai"})),
        (1, ("suspend", "ana")),
        (0, ("message", "ben", {"ana"})),
        (3, ("message", "cai", {"ana", "ben"})),
        (0, ("set", "ana", {"email": {"format": "plain"}})),
        (1, ("message", "ben", {"ana"})),
        (2, ("delete", "ana")),
        (0, ("message", "ben", {"ana"})),
    ],
    "push_off_and_a_cap": [
        (0, ("set", "ben", {"push": {"enabled": False}})),
        (0, ("set", "cai", CAP)),
        *[(n % 3, ("message", "ana", {"ben", "cai"})) for n in range(5)],
        (0, ("set", "ben", {"push": {"enabled": True, "max_per_day": 1}})),
        *[(1, ("message", "cai", {"ben", "ana"})) for _ in range(3)],
    ],
    "a_cap_over_a_local_midnight": [
        (0, ("set", "ana", CAP)),
        (0, ("set", "cai", {"push": {"max_per_day": 1}})),
        *[(40, ("message", "ben", {"ana", "cai"})) for _ in range(8)],
    ],
}


def chat_lines(lines: list[str]) -> list[str]:
    """The hint lines of a replay's output (not the inbox's entries and mails)."""
    keep = {"event", "flush", "release", "badge_sync"}
    return [line for line in lines if json.loads(line)["trigger"] in keep]


@pytest.mark.parametrize("parts", [1, 2], ids=lambda n: f"partitions{n}")
@pytest.mark.parametrize("name", sorted(PLANS))
def test_m6_replay_and_postgresql_give_the_same_hints_with_records(
    name: str,
    parts: int,
    tmp_path: Path,
    new_database: Callable[[str | None], str],
    pg_template: str,
) -> None:
    lines = records_log(PLANS[name])
    log = tmp_path / f"{name}.jsonl"
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    replay = CliRunner().invoke(cli, ["replay", str(log), "--include-skips"])
    assert replay.exit_code == 0, replay.output
    expected = chat_lines(replay.stdout.splitlines())
    assert any('"record"' in line for line in expected)  # pushes name their record (M6)
    assert any('"reason":"suspended"' in line or "record_channel_off" in line or
               "frequency_cap" in line for line in expected)  # fmt: skip

    dsn = new_database(pg_template)
    with (
        psycopg.connect(dsn, autocommit=True) as conn,
        another_worker(dsn) if parts > 1 else nullcontext(),
    ):
        run = PgRun(dsn, conn, Policy(), config=WorkerConfig(partitions=parts))
        run.feed_lines(lines)
        run.finish()
        got = run.hint_lines()
        run.worker.close()
        holds = conn.execute(
            f"SELECT recipient, at, reason, record FROM {SCHEMA}.push_holds ORDER BY 1, 2"
        ).fetchall()
    assert_same_hints(got, expected, parts)
    skips = sorted(
        (h["recipient"], h["at"], h["reason"])
        for h in map(json.loads, expected)
        if h.get("reason") in ("suspended", "record_channel_off", "frequency_cap")
    )
    assert [(r, _text(at), reason) for r, at, reason, _record in holds] == skips


def _text(at: Any) -> str:
    from notify_core.values.instants import format_instant

    return format_instant(at)
