"""Smoke test of bench/bench_inbox.py: its stages run on a small world (no timings checked)."""

from __future__ import annotations

import contextlib
import importlib.util
import io
from pathlib import Path
from types import ModuleType

SCRIPT = Path(__file__).resolve().parents[1] / "bench" / "bench_inbox.py"


def load_bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_inbox", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bench_stages_on_120_watchers() -> None:
    bench = load_bench()
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
