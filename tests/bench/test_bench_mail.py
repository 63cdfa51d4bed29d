"""Smoke test of bench/bench_mail.py: its measurement runs on a few people (no timings checked)."""

from __future__ import annotations

from tests.bench_script import load_bench


def test_bench_mail_measures_every_part() -> None:
    module = load_bench("bench_mail")
    report = module.measure(n=50, repeat=1)
    assert set(report["email_after_for"]) >= {"immediate", "hourly", "daily"}
    assert report["tokens"]["verify_per_s"] > 0
    assert report["compose_mail"]["digest_of_50_per_s"] > 0
