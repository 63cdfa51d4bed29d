"""Smoke test of bench/bench_replay.py: its functions run on a small log (no timings checked)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.bench_script import load_bench


def test_bench_functions_on_2000_events(tmp_path: Path) -> None:
    bench = load_bench("bench_replay")
    log = tmp_path / "synth.jsonl"
    made = bench.generate(log, events=2_000, users=200, seed=1, max_fanout=60)
    assert made["events"] == 2_000 and made["bytes"] > 0
    replayed = bench.replay(log, tmp_path)
    assert replayed["events"] == 2_000
    assert replayed["bad_lines"] == 0
    assert replayed["decisions"] > 0 and replayed["peak_rss_mib"] > 0
    libraries = bench.json_libraries(log, sample=500)
    assert libraries["json"]["dumps_identical"] and libraries["json"]["loads_identical"]
    if "orjson" in libraries:
        assert libraries["orjson"]["dumps_identical"]  # what notify_core relies on
    profiled = bench.profile(log, limit=2_000)
    if "skipped" not in profiled:
        assert 0 < sum(profiled["share_percent"].values()) <= 100.5
    json.dumps([made, replayed, libraries, profiled])  # all of it prints as JSON


def test_against_baseline_compares_two_trees(tmp_path: Path) -> None:
    bench = load_bench("bench_replay")
    log = tmp_path / "synth.jsonl"
    bench.generate(log, events=500, users=50, seed=2, max_fanout=20)
    # This tree against itself: the same bytes, both sides measured.
    compared = bench.against_baseline(log, tmp_path, bench.HERE, rounds=1)
    assert compared["byte_identical"]
    assert compared["baseline"]["decisions"] == compared["new"]["decisions"] > 0
    assert compared["baseline"]["peak_rss_mib"] > 0 and compared["ratio_best"] > 0
    json.dumps(compared)
