"""Speed of notify_core.mail, printed as JSON.

- ``email_after_for``: one event's due times for N people (a fan-out calls it once per new
  entry), per schedule: ``immediate``, ``hourly``, ``daily`` in a few zones.
- tokens: ``unsubscribe_token`` and ``verify_unsubscribe_token`` (one per mail and per click).
- ``compose_mail``: a single mail and a digest of 50 entries.

Every figure comes with a baseline measured in the same process (the same loop calling a
trivial function), so the ratio survives a noisy machine. Run: ``python bench/bench_mail.py``.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from notify_core.inbox.categories import CATEGORY_BY_KEY
from notify_core.mail import (
    EmailSchedule,
    MailEntry,
    MailSite,
    compose_mail,
    email_after_for,
    unsubscribe_token,
    verify_unsubscribe_token,
)

NOW = datetime(2026, 10, 24, 23, 30, tzinfo=UTC)  # the night Europe's clocks go back
ZONES = ["Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Asia/Tokyo", None]
SECRET = bytes(range(32))
KNOWN = frozenset(CATEGORY_BY_KEY)
SITE = MailSite(name="Ops Wiki", host="wiki.example")


def best_of(fn: Callable[[], object], repeat: int = 5) -> float:
    """Best wall time of ``repeat`` runs (the least disturbed one)."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def trivial(*args: object, **kwargs: object) -> object:
    return args


def measure(n: int = 10_000, repeat: int = 5) -> dict[str, Any]:
    """Return the figures for ``n`` people (a smaller ``n`` for a smoke run)."""
    people = [f"u-{i}" for i in range(n)]
    zones = [ZONES[i % len(ZONES)] for i in range(n)]
    schedules = {
        "immediate": EmailSchedule(),
        "hourly": EmailSchedule(schedule="hourly"),
        "daily": EmailSchedule(schedule="daily", daily_hour=2),
    }

    def run(schedule: EmailSchedule, fn: Callable[..., object] = email_after_for) -> None:
        for person, zone in zip(people, zones, strict=True):
            fn(schedule, NOW, person=person, digest=True, time_zone=zone)

    base = best_of(lambda: run(schedules["immediate"], trivial), repeat)
    cadence = {}
    for name, schedule in schedules.items():
        t = best_of(lambda schedule=schedule: run(schedule), repeat)
        cadence[name] = {
            "per_s": round(n / t),
            "us_each": round(t / n * 1e6, 2),
            "ratio_to_baseline": round(t / base, 1),
        }

    m = max(n // 5, 10)
    token = unsubscribe_token(SECRET, "u-1", ["watched_page", "mention"])
    t_make = best_of(lambda: [unsubscribe_token(SECRET, p, ["watched_page"]) for p in people[:m]])
    t_check = best_of(
        lambda: [verify_unsubscribe_token(SECRET, token, known_categories=KNOWN) for _ in range(m)]
    )
    t_tbase = best_of(lambda: [trivial(SECRET, token) for _ in range(m)])

    entry = MailEntry(
        category="watched_page", variant="edited", title="Runbook", path="/ops/runbook", actor="B"
    )
    digest = [entry] * 50
    k = max(n // 50, 5)
    t_single = best_of(
        lambda: [compose_mail([entry], site=SITE, locale="de", token=token) for _ in range(k)]
    )
    t_digest = best_of(
        lambda: [compose_mail(digest, site=SITE, locale="en", token=token) for _ in range(k)]
    )
    return {
        "python": sys.version.split()[0],
        "people": n,
        "email_after_for": {
            **cadence,
            "baseline_trivial_per_s": round(n / base),
        },
        "tokens": {
            "make_per_s": round(m / t_make),
            "verify_per_s": round(m / t_check),
            "baseline_trivial_per_s": round(m / t_tbase),
            "ratio_verify_to_baseline": round(t_check / t_tbase, 1),
        },
        "compose_mail": {
            "single_per_s": round(k / t_single),
            "digest_of_50_per_s": round(k / t_digest),
        },
    }


def main() -> None:
    json.dump(measure(), sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
