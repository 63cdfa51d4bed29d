"""Smoke test of bench/bench_replay_dask.py: its stages run on a small log (no timings checked)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.bench_script import load_bench


def test_bench_stages_on_a_small_log(tmp_path: Path, dask_scheduler: str) -> None:
    bench = load_bench("bench_replay_dask")
    log = tmp_path / "synth.jsonl"
    bench.run_child(
        bench.notify("synth", "--events=1500", "--users=100", "--max-fanout=40", f"--out={log}")
    )
    single = bench.single(log, tmp_path / "single.jsonl", tmp_path / "single.json")
    assert single["wall_s"] > 0 and single["peak_mib"] > 0
    dask = bench.dask(log, tmp_path / "dask.jsonl", tmp_path / "dask.json", 2, dask_scheduler)
    assert dask["lines"] > 0 and len(dask["worker_peak_mib"]) == 2
    for ext in ("jsonl", "json"):
        assert (tmp_path / f"single.{ext}").read_bytes() == (tmp_path / f"dask.{ext}").read_bytes()
    json.dumps([single, dask])
