"""Smoke test of bench/bench_serve.py: a few clients for half a second on the test server (no
timings checked), so the script keeps working and every answer is the expected one."""

from __future__ import annotations

import pytest

from tests.bench_script import BENCH, load_bench


def test_the_serve_benchmark_loads_the_bare_app_the_poll_and_the_list(
    pg_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(BENCH))  # its sibling scratch_pg
    bench = load_bench("bench_serve")
    with bench.database(pg_server, bench.SCHEMA, bench.HOST) as dsn:
        bench.seed(dsn, 3)
        figures = bench.run(dsn, clients=4, seconds=0.5, people=3, threads=2, rounds=1)
    for name in ("bare", "summary_304", "list_200"):
        assert figures[name]["requests"] > 0 and figures[name]["errors"] == 0, name
        assert 0 < figures[name]["p50_ms"] <= figures[name]["p99_ms"], name
    assert (
        figures["summary_304"]["ratio_to_bare"] > 0 and "load average" in figures["uptime_before"]
    )
