"""Smoke test of bench/bench_mail_send.py: it measures every part on a few mails (no timings
checked)."""

from __future__ import annotations

from tests.bench_script import load_bench


def test_bench_mail_send_measures_every_part() -> None:
    module = load_bench("bench_mail_send")
    report = module.measure(mails=5, entries=200, people=20, repeat=1)
    assert report["send"]["reused_connection_per_s"] > 0
    assert report["send"]["connection_per_mail_per_s"] > 0
    assert report["send"]["reused_with_dkim_rsa2048_per_s"] > 0
    assert report["send"]["connection_per_mail_with_dkim_rsa2048_per_s"] > 0
    assert report["send"]["reused_with_dkim_ed25519_per_s"] > 0
    assert report["signing"]["rsa2048_per_s"] > 0 < report["signing"]["dkimpy_rsa2048_per_s"]
    assert report["plan"]["plan_entries_per_s"] > 0 < report["plan"]["plan_entries_per_cpu_s"]
    assert report["plan"]["plan_vs_baseline_cpu"] > 0
    assert report["send"]["composed_and_sent_reused_with_dkim_rsa2048_per_s"] > 0
