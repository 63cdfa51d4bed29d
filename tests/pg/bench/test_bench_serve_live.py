"""Smoke test of bench/bench_serve_live.py: a few sockets and rounds on the test server (no
timings checked), so the script keeps working."""

from __future__ import annotations

import pytest

from tests.bench_script import BENCH, load_bench


def test_the_live_benchmark_tells_every_socket_each_round(
    pg_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(BENCH))  # its sibling scratch_pg
    bench = load_bench("bench_serve_live")
    with bench.database(pg_server, bench.SCHEMA, bench.HOST) as dsn:
        figures = bench.run(dsn, 12, 2)  # raises unless every socket was told every round
    last = figures["last_socket_ms"]
    assert figures["sockets"] == 12 and 0 <= last["p50"] <= last["p99"] <= last["max"]
    assert figures["memory"]["rss_with_sockets_kib"] > 0
