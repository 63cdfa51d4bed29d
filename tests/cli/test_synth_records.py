"""`notify synth --records` (M1-M6): record events among the synthetic log, every one a good
transition, and a replay of it that holds deliveries back and names records; the report
shows what was held back."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from click.testing import CliRunner

from notify_cli.main import cli
from notify_core.replay.report import report_data
from notify_core.replay.run import Replay


def _synth(tmp_path: Path, *extra: str) -> list[str]:
    out = tmp_path / "log.jsonl"
    args = ["synth", "--events", "6000", "--users", "60", "--seed", "3", "--out", str(out)]
    result = CliRunner().invoke(cli, [*args, *extra])
    assert result.exit_code == 0, result.output
    return out.read_text(encoding="utf-8").splitlines()


def test_m4_records_among_the_events_the_same_total_and_deterministic(tmp_path: Path) -> None:
    lines = _synth(tmp_path, "--records")
    assert len(lines) == 6000
    assert lines == _synth(tmp_path, "--records")
    events = [json.loads(line) for line in lines]
    assert [e["seq"] for e in events] == list(range(1, 6001))
    types = Counter(e["type"] for e in events)
    assert types["record.set"] > 5 and types["record.suspended"] > 0
    plain = [e for e in _synth(tmp_path) if '"record.' in e]
    assert plain == []


def test_m2_a_replay_of_it_holds_back_and_names_records(tmp_path: Path) -> None:
    replay = Replay()
    items = list(replay.run(_synth(tmp_path, "--records")))
    summary = replay.summary
    assert summary.bad_lines == 0
    assert summary.skips["frequency_cap"] > 0
    assert summary.skips["suspended"] + summary.skips["record_channel_off"] > 0
    assert any(getattr(getattr(i, "decision", None), "record", None) for i in items)
    held = report_data([("policy", summary)])["held_back"]
    assert isinstance(held, list)
    assert {"policy": "policy", "channel": "push", "reason": "frequency_cap",
            "deliveries": summary.skips["frequency_cap"]} in held  # fmt: skip
