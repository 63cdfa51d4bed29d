"""Smoke test of bench/bench_push_providers.py: a few pushes to each local server on both send
paths, every one counted once by its notification id at the server (no timings checked)."""

from __future__ import annotations

from tests.bench_script import load_bench


def test_bench_push_providers_counts_every_push_once() -> None:
    module = load_bench("bench_push_providers")
    figures = module.main(
        [
            *("--pushes", "60", "--latency", "0.005", "--concurrency", "1,8"),
            *("--batch", "25", "--repeat", "2"),
        ]
    )
    runs = figures["runs"]
    assert [(r["provider"], r["repeat"], r["concurrency"], r["path"]) for r in runs] == [
        (provider, repeat, limit, path)
        for provider in ("apns", "fcm")
        for repeat in (0, 1)
        for limit in (1, 8)
        for path in ("per_call", "batch")
    ]
    for case in figures["median"]:
        rates = [
            r["pushes_per_s"]
            for r in runs
            if (r["provider"], r["concurrency"], r["path"])
            == (case["provider"], case["concurrency"], case["path"])
        ]
        assert case["runs"] == 2 and case["pushes_per_s_range"] == [min(rates), max(rates)]
        assert case["lost"] == 0 and case["doubled"] == 0
    for run in runs:
        assert run["results"] == {"accepted": 60}
        assert run["lost"] == 0 and run["doubled"] == 0
        assert run["pushes_per_s"] > 0 and run["cpu_ms_per_push"] > 0
    assert set(figures["batch_over_per_call"]) == {"apns@1", "apns@8", "fcm@1", "fcm@8"}
