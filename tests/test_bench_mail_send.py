"""Smoke test of bench/bench_mail_send.py: it measures every part on a few mails (no timings
checked)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "bench" / "bench_mail_send.py"


def test_bench_mail_send_measures_every_part() -> None:
    spec = importlib.util.spec_from_file_location("bench_mail_send", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
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
