"""Speed of sending notification mails and of planning a drain, printed as JSON.

- ``send``: mails per second to an SMTP server (aiosmtpd) on loopback, over one reused
  connection (`notify_pg.smtp.SmtpSender.send_batch`) and with one connection per mail (the
  baseline of the same run), with and without a DKIM signature. Goal: >= 200 mails/s reused.
- ``plan``: the drain's plan (`notify_core.inbox.drain.plan_mails`, E4) of 100,000 due entries
  over 10,000 people, in entries per second, against a baseline loop that only groups the same
  entries by person. Goal: >= 200,000 entries/s.

The server runs in a thread of this process, so it shares the interpreter with the client:
the send figures are a floor. Compare ratios within one run, not figures across runs. Run:
``python bench/bench_mail_send.py``.
"""

from __future__ import annotations

import json
import socket
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from aiosmtpd.controller import Controller

from notify_core.inbox.coalesce import EmailState, EntryState
from notify_core.inbox.drain import plan_mails
from notify_core.inbox.fanout import PersonFacts
from notify_core.inbox.ports import Entry, EntryTarget
from notify_core.inbox.prefs import InboxSettings
from notify_core.mail import MailEntry, MailSite, compose_mail, unsubscribe_token
from notify_pg.smtp import DkimKey, Outgoing, SmtpConfig, SmtpSender, mail_message

AT = datetime(2026, 11, 30, 10, 3, tzinfo=UTC)
SITE = MailSite(name="Ops Wiki", host="wiki.example.org")
CATEGORIES = ("watched_page", "mention", "comment_reply", "watched_page_comment")


def best_of(fn: Callable[[], object], repeat: int) -> float:
    """Best wall time of ``repeat`` runs (the least disturbed one)."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


class _Sink:
    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        return "250 OK"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _outgoing(n: int) -> list[Outgoing]:
    out = []
    for i in range(n):
        person = f"u-{i}"
        mail = compose_mail(
            [MailEntry(category="watched_page", variant="edited", title=f"Page {i}", path="/p")],
            site=SITE,
            locale="en",
            token=unsubscribe_token(bytes(32), person, ["watched_page"]),
        )
        message = mail_message(
            mail, sender="notify@wiki.example.org", to=f"{person}@example.org", date=AT
        )
        out.append(
            Outgoing(
                sender="notify@wiki.example.org",
                recipients=(f"{person}@example.org",),
                message=message,
            )
        )
    return out


def _dkim_key() -> DkimKey | None:
    keys = Path(__file__).resolve().parents[1] / "tests" / "mail_keys.py"
    if not keys.exists():
        return None
    scope: dict[str, Any] = {}
    exec(compile(keys.read_text(), str(keys), "exec"), scope)
    return DkimKey(selector="notify", domain="wiki.example.org", private_key=scope["PRIVATE_KEY"])


def measure_send(n: int = 500, repeat: int = 3) -> dict[str, Any]:
    """Mails per second over one connection and one connection per mail."""
    port = _free_port()
    controller = Controller(_Sink(), hostname="127.0.0.1", port=port)
    controller.start()
    try:
        config = SmtpConfig.from_url(f"smtp://127.0.0.1:{port}")
        batch = _outgoing(n)
        key = _dkim_key()

        def reused(dkim: DkimKey | None = None) -> None:
            with SmtpSender(config, dkim_key=dkim) as smtp:
                results = smtp.send_batch(batch)
            assert all(r.sent for r in results)

        def per_mail() -> None:
            for outgoing in batch:
                with SmtpSender(config) as smtp:
                    smtp.send(outgoing)

        t_reused = best_of(reused, repeat)
        t_per_mail = best_of(per_mail, repeat)
        t_dkim = best_of(lambda: reused(key), repeat) if key is not None else None
    finally:
        controller.stop()
    report: dict[str, Any] = {
        "mails": n,
        "reused_connection_per_s": round(n / t_reused),
        "connection_per_mail_per_s": round(n / t_per_mail),
        "reused_vs_per_mail": round(t_per_mail / t_reused, 2),
        "goal_reused_per_s": 200,
    }
    if t_dkim is not None:
        report["reused_with_dkim_rsa2048_per_s"] = round(n / t_dkim)
    return report


def _due(entries: int, people: int) -> list[Entry]:
    out = []
    for i in range(entries):
        person = f"u-{i % people}"
        category = CATEGORIES[i % len(CATEGORIES)]
        state = EntryState(
            count=1 + i % 3,
            variant="edited",
            variants=("edited",),
            email=EmailState.PENDING,
            last_event=str(i),
            in_app=True,
            updated_at=AT - timedelta(seconds=i % 977),
            email_after=AT,
        )
        out.append(
            Entry(
                id=f"{person}:{category}:{i}",
                person=person,
                category=category,
                group_key=f"{category}:{i}",
                state=state,
                created_at=AT,
                target=EntryTarget(site=f"s{i % 2}", page=f"p{i}"),
            )
        )
    return out


def measure_plan(entries: int = 100_000, people: int = 10_000, repeat: int = 3) -> dict[str, Any]:
    """Entries per second of the drain's plan, and of a loop that only groups them."""
    due = _due(entries, people)
    facts = {
        f"u-{i}": PersonFacts(email=f"u-{i}@example.org", verified=True) for i in range(people)
    }
    settings = InboxSettings(mail_configured=True)

    def plan() -> None:
        plan_mails(due, site_on=lambda s: True, people=facts, settings=settings, first_site="s0")

    def baseline() -> None:
        groups: dict[tuple[str, str | None], list[Entry]] = {}
        for entry in due:
            groups.setdefault((entry.person, entry.target.site), []).append(entry)

    t_plan = best_of(plan, repeat)
    t_base = best_of(baseline, repeat)
    return {
        "entries": entries,
        "people": people,
        "plan_entries_per_s": round(entries / t_plan),
        "baseline_group_loop_entries_per_s": round(entries / t_base),
        "plan_vs_baseline": round(t_plan / t_base, 2),
        "goal_entries_per_s": 200_000,
    }


def measure(
    mails: int = 500, entries: int = 100_000, people: int = 10_000, repeat: int = 3
) -> dict[str, Any]:
    """Return every figure (smaller numbers for a smoke run)."""
    return {
        "python": sys.version.split()[0],
        "send": measure_send(mails, repeat),
        "plan": measure_plan(entries, people, repeat),
    }


if __name__ == "__main__":
    print(json.dumps(measure(), indent=2))
