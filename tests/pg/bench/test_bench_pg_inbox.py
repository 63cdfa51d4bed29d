"""Smoke test of bench/bench_pg_inbox.py: a small fan-out, a few emits and a small mail drain
on the test server (no timings checked), so the script keeps working."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[3] / "bench"


def test_the_inbox_benchmark_runs_a_small_fan_out_and_emits(
    pg_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(BENCH))
    bench = importlib.import_module("bench_pg_inbox")
    multi = bench.fan_out_once(pg_server, 1_200, 500)  # two keyset batches, three statements
    single = bench.fan_out_once(pg_server, 30, 1)
    assert multi["total_s"] >= multi["write_s"] > 0 and single["write_s"] > 0
    emits = bench.emit_once(pg_server, 5)
    assert emits["emit_us"] > 0 and emits["plain_insert_us"] > 0


def test_the_inbox_benchmark_drains_mails_both_ways(
    pg_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(BENCH))
    bench = importlib.import_module("bench_pg_inbox")
    key = bench.dkim_key()
    # E5: every watcher's mail is sent and marked, reused connection or one per mail
    # (drain_once asserts the count of sent rows and of received mails).
    for reused in (True, False):
        run = bench.drain_once(pg_server, 12, key, reused=reused)
        assert run["per_s"] > 0 and run["total_s"] > 0
