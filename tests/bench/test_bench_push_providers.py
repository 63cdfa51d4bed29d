"""Smoke test of bench/bench_push_providers.py: a few pushes to each local server on both send
paths, every one counted once by its notification id at the server (no timings checked)."""

from __future__ import annotations

from tests.bench_script import load_bench


def test_bench_push_providers_counts_every_push_once() -> None:
    module = load_bench("bench_push_providers")
    figures = module.main(
        ["--pushes", "60", "--latency", "0.005", "--concurrency", "1,8", "--batch", "25"]
    )
    runs = figures["runs"]
    assert [(r["provider"], r["concurrency"], r["path"]) for r in runs] == [
        (provider, limit, path)
        for provider in ("apns", "fcm")
        for limit in (1, 8)
        for path in ("per_call", "batch")
    ]
    for run in runs:
        assert run["results"] == {"accepted": 60}
        assert run["lost"] == 0 and run["doubled"] == 0
        assert run["pushes_per_s"] > 0 and run["cpu_ms_per_push"] > 0
    assert set(figures["batch_over_per_call"]) == {"apns@1", "apns@8", "fcm@1", "fcm@8"}
