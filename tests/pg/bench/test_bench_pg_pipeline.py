"""Smoke test of bench/bench_pg_pipeline.py: one small end-to-end run with two worker
processes and two partitions on the test server (no timings checked), so the script keeps
working."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[3] / "bench"


def test_two_workers_with_two_partitions_drain_a_small_backlog(
    pg_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Importable by name: the worker processes (spawned) import the script to run _work.
    monkeypatch.syspath_prepend(str(BENCH))
    bench = importlib.import_module("bench_pg_pipeline")
    monkeypatch.setattr(bench, "wait_for_quiet", lambda: 0.0)  # the test run is not idle
    run = bench.end_to_end(pg_server, people=8, threads=2, messages=6, workers=2, partitions=2)
    assert (run["workers"], run["partitions"]) == (2, 2)
    # Every message is decided for every reader but its author, by exactly one partition.
    assert run["hint_decisions"] >= 6 * 7
    assert run["per_worker_events"] and sum(run["per_worker_events"]) > 0
    assert 0 < run["sql_share"] < 1 and run["statements_per_event"] > 0
    assert set(run["cpu"]) == {"workers_s", "server_s", "bench_s", "other_s", "cores_busy"}
    # CPU per event of the log: the workers' loops and their own backends (0 when remote).
    per_event = run["cpu_ms_per_event"]
    assert per_event["worker"] > 0 and per_event["backend"] >= 0
    assert per_event["total"] == pytest.approx(
        per_event["worker"] + per_event["backend"], abs=0.002
    )


def test_steady_stream_with_two_workers_reports_the_lowest_cursors_lag(
    pg_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(BENCH))
    bench = importlib.import_module("bench_pg_pipeline")
    run = bench.steady(pg_server, 8, 2, rate=6.0, duration=1.0, workers=2, partitions=2)
    assert (run["workers"], run["partitions"]) == (2, 2)
    assert run["messages"] >= 3
    assert run["lag_events"]["max"] >= run["lag_events"]["p50"] >= 0
    assert run["settled_after_last_message_s"] >= 0
