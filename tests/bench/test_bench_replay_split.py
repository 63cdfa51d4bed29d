"""Smoke test of bench/bench_replay_split.py: its stages run on a small log (no timings checked)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from notify_cli.main import cli
from tests.bench_script import load_bench


def test_split_bench_runs_every_stage_in_a_child(tmp_path: Path) -> None:
    log = tmp_path / "synth.jsonl"
    made = CliRunner().invoke(
        cli, ["synth", "--events=1500", "--users=60", "--max-fanout=30", f"--out={log}"]
    )
    assert made.exit_code == 0, made.output
    report = load_bench("bench_replay_split").main(
        ["--log", str(log), "--rounds", "1", "--partitions", "2"]
    )
    assert set(report["best_cpu_s"]) == {"single", "task0", "task1", "shared"}
    assert all(seconds > 0 for seconds in report["best_cpu_s"].values())
    assert report["tasks_over_single"] == round(
        (report["best_cpu_s"]["task0"] + report["best_cpu_s"]["task1"])
        / report["best_cpu_s"]["single"],
        3,
    )
    assert "instructions" not in report


def test_instruction_count_is_read_from_cachegrind_report() -> None:
    bench = load_bench("bench_replay_split")
    report = "==1== \n==1== I   refs:      40,064,341,432\n==1== \n"
    assert bench.instructions(report) == 40_064_341_432
    with pytest.raises(RuntimeError, match="no instruction count"):
        bench.instructions("valgrind: command not found")
