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
