"""Smoke test of bench/bench_core.py's Synapse comparison, with a stand-in peer (no timings)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from notify_core import EventFacts, Policy
from tests.bench_script import load_bench

# Prints what synapse_push_bench.py prints, and records the arguments of every run.
FAKE_PEER = """
import json, sys, time
assert (time.perf_counter is time.thread_time) == (CLOCK == "cpu")
with open(sys.argv[0] + ".calls", "a") as calls:
    calls.write(json.dumps(sys.argv[1:]) + "\\n")
best = 0.05 if "--gc" in sys.argv else 0.04
print(json.dumps({"peer": "synapse", "version": "0.0-fake", "n": 10000, "recipients": 9999,
                  "mentioned": 10, "best_s": best, "median_s": 0.06}))
"""


@pytest.mark.parametrize("clock", ["wall", "cpu"])
def test_against_synapse_alternates_gc_off_and_on_and_reports_ratios(
    tmp_path: Path, clock: str
) -> None:
    bench = load_bench("bench_core")
    peer = tmp_path / "peer.py"
    peer.write_text(FAKE_PEER.replace("CLOCK", repr(clock)), encoding="utf-8")
    event = EventFacts(now=bench.NOW, kind="message", thread="t-1", policy=Policy())
    report = bench.against_synapse(
        event, sys.executable, peer, rounds=2, reps=1, n=300, clock=clock
    )
    assert report["clock"] == clock
    calls = [json.loads(line) for line in (tmp_path / "peer.py.calls").read_text().splitlines()]
    assert ["--gc" in call for call in calls] == [False, True, False, True]
    assert all(call[:4] == ["--n", "10000", "--mention-fraction", "0.001"] for call in calls)
    assert report["synapse_version"] == "0.0-fake"
    assert report["mentioned"] == 10
    for key, best_s in (("gc_off", 0.04), ("gc_on", 0.05)):
        side = report[key]
        assert side["synapse_per_s"] == round(9999 / best_s)
        assert abs(side["ratio"] - side["ours_per_s"] / side["synapse_per_s"]) < 0.006
        assert side["ours_per_s"] > 0
