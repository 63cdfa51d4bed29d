"""Smoke test of bench/bench_inbox.py: its stages run on a small world (no timings checked)."""

from __future__ import annotations

import contextlib
import io

from tests.bench_script import load_bench


def test_bench_stages_on_120_watchers() -> None:
    bench = load_bench("bench_inbox")
    with contextlib.redirect_stdout(io.StringIO()):
        figures = bench.main(["--watchers", "120", "--repeat", "1"])
    # Six group sets, two without access: a third of the watchers are skipped, every
    # stage decides for every watcher.
    for stage in ("baseline", "fan_out", "pipeline_new", "pipeline_coalesce"):
        assert figures[stage]["decisions"] == 120, stage
    assert figures["fan_out"]["over_baseline"] > 0
    for stage in ("pipeline_new", "pipeline_coalesce"):
        assert figures[stage]["over_fan_out"] > 0, stage
        assert isinstance(figures[stage]["goal_met"], bool), stage


def test_baseline_src_runs_both_trees_in_children() -> None:
    """``--baseline-src``: the workload in a child per tree and round (here this tree twice),
    both medians, their ratio and the load average (no timings checked)."""
    bench = load_bench("bench_inbox")
    with contextlib.redirect_stdout(io.StringIO()):
        figures = bench.main(
            [
                "--watchers",
                "60",
                "--repeat",
                "1",
                "--rounds",
                "1",
                "--baseline-src",
                str(bench.OWN_SRC),
            ]
        )
    assert figures["base_src"] == figures["new_src"] == str(bench.OWN_SRC)
    for stage in bench.STAGES:
        assert figures["base"][stage] > 0 and figures["new"][stage] > 0, stage
        assert figures["ratio"][stage] > 0, stage
        assert len(figures["per_round"]["base"][stage]) == 1, stage
    assert len(figures["load_average"]["before"]) == 3
