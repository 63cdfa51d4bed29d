"""Smoke test of bench/bench_mail.py: its measurement runs on a few people (no timings checked)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "bench" / "bench_mail.py"


def test_bench_mail_measures_every_part() -> None:
    spec = importlib.util.spec_from_file_location("bench_mail", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    report = module.measure(n=50, repeat=1)
    assert set(report["email_after_for"]) >= {"immediate", "hourly", "daily"}
    assert report["tokens"]["verify_per_s"] > 0
    assert report["compose_mail"]["digest_of_50_per_s"] > 0
