"""Speed of sending notification mails and of planning a drain, printed as JSON.

- ``signing``: DKIM signatures per second of `notify_pg.mail.smtp.DkimKey.sign` (RSA-2048 and
  Ed25519, computed by ``cryptography``) against ``dkim.sign`` of dkimpy alone with the same
  RSA key (how they were signed before; its RSA is Python's own ``pow``).
- ``send``: mails per second to an SMTP server (aiosmtpd) on loopback, over one reused
  connection (`notify_pg.mail.smtp.SmtpSender.send_batch`) and with one connection per mail (the
  baseline of the same run), without DKIM, with an RSA-2048 and with an Ed25519 signature.
  Goal: >= 200 mails/s reused, DKIM-signed.
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

import dkim
from aiosmtpd.controller import Controller
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from notify_core.inbox.coalesce import EmailState, EntryState
from notify_core.inbox.drain import plan_mails
from notify_core.inbox.fanout import PersonFacts
from notify_core.inbox.ports import Entry, EntryTarget
from notify_core.inbox.prefs import InboxSettings
from notify_core.mail import MailEntry, MailSite, compose_mail, unsubscribe_token
from notify_pg.mail.smtp import (
    _POLICY,
    DKIM_SIGNED_HEADERS,
    DkimKey,
    Outgoing,
    SmtpConfig,
    SmtpSender,
    mail_message,
)

AT = datetime(2026, 11, 30, 10, 3, tzinfo=UTC)
SITE = MailSite(name="Ops Wiki", host="wiki.example.org")
CATEGORIES = ("watched_page", "mention", "comment_reply", "watched_page_comment")


def best_of(fn: Callable[[], object], repeat: int) -> float:
    """Best wall time of ``repeat`` runs (the least disturbed one)."""
    return best_times(fn, repeat)[0]


def best_times(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    """Best wall time and best CPU time of this process over ``repeat`` runs.

    On a machine shared with other work the CPU time shows what the code costs, the wall
    time what it got.
    """
    walls, cpus = [], []
    for _ in range(repeat):
        start, cpu = time.perf_counter(), time.process_time()
        fn()
        cpus.append(time.process_time() - cpu)
        walls.append(time.perf_counter() - start)
    return min(walls), min(cpus)


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


def _rsa_pem() -> bytes:
    keys = Path(__file__).resolve().parents[1] / "tests" / "mail_keys.py"
    scope: dict[str, Any] = {}
    exec(compile(keys.read_text(), str(keys), "exec"), scope)
    pem: bytes = scope["PRIVATE_KEY"]
    return pem


def _ed25519_pem() -> bytes:
    return Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def measure_signing(n: int = 200, repeat: int = 3) -> dict[str, Any]:
    """Signatures per second: `DkimKey.sign` against ``dkim.sign`` (dkimpy alone, how
    `DkimKey` signed before) on the same messages."""
    messages = [o.message.as_bytes(policy=_POLICY) for o in _outgoing(n)]
    pem = _rsa_pem()
    rsa = DkimKey(selector="notify", domain="wiki.example.org", private_key=pem)
    ed = DkimKey(selector="notify", domain="wiki.example.org", private_key=_ed25519_pem())
    headers = [h.encode() for h in DKIM_SIGNED_HEADERS]

    def dkimpy() -> None:
        for m in messages:
            dkim.sign(m, b"notify", b"wiki.example.org", pem, include_headers=headers)

    t_dkimpy = best_of(dkimpy, repeat)
    t_rsa = best_of(lambda: [rsa.sign(m) for m in messages], repeat)
    t_ed = best_of(lambda: [ed.sign(m) for m in messages], repeat)
    return {
        "messages": n,
        "dkimpy_rsa2048_per_s": round(n / t_dkimpy),
        "rsa2048_per_s": round(n / t_rsa),
        "ed25519_per_s": round(n / t_ed),
        "rsa2048_vs_dkimpy": round(t_dkimpy / t_rsa, 1),
    }


def measure_send(n: int = 500, repeat: int = 3) -> dict[str, Any]:
    """Mails per second over one connection and one connection per mail, with DKIM or not."""
    port = _free_port()
    controller = Controller(_Sink(), hostname="127.0.0.1", port=port)
    controller.start()
    try:
        config = SmtpConfig.from_url(f"smtp://127.0.0.1:{port}")
        batch = _outgoing(n)
        rsa = DkimKey(selector="notify", domain="wiki.example.org", private_key=_rsa_pem())
        ed = DkimKey(selector="notify", domain="wiki.example.org", private_key=_ed25519_pem())

        def reused(dkim_key: DkimKey | None = None) -> None:
            with SmtpSender(config, dkim_key=dkim_key) as smtp:
                results = smtp.send_batch(batch)
            assert all(r.sent for r in results)

        def composed_and_sent(dkim_key: DkimKey) -> None:
            with SmtpSender(config, dkim_key=dkim_key) as smtp:
                results = smtp.send_batch(_outgoing(n))
            assert all(r.sent for r in results)

        def per_mail(dkim_key: DkimKey | None = None) -> None:
            for outgoing in batch:
                with SmtpSender(config, dkim_key=dkim_key) as smtp:
                    smtp.send(outgoing)

        times = {
            "reused_connection": best_of(reused, repeat),
            "connection_per_mail": best_of(per_mail, repeat),
            "reused_with_dkim_rsa2048": best_of(lambda: reused(rsa), repeat),
            "connection_per_mail_with_dkim_rsa2048": best_of(lambda: per_mail(rsa), repeat),
            "reused_with_dkim_ed25519": best_of(lambda: reused(ed), repeat),
            # The drain's whole send loop: compose each mail, build its message, sign, send.
            "composed_and_sent_reused_with_dkim_rsa2048": best_of(
                lambda: composed_and_sent(rsa), repeat
            ),
        }
    finally:
        controller.stop()
    report: dict[str, Any] = {"mails": n}
    report.update({f"{name}_per_s": round(n / t) for name, t in times.items()})
    report["reused_vs_per_mail"] = round(
        times["connection_per_mail"] / times["reused_connection"], 2
    )
    report["reused_vs_per_mail_with_dkim_rsa2048"] = round(
        times["connection_per_mail_with_dkim_rsa2048"] / times["reused_with_dkim_rsa2048"], 2
    )
    report["goal_reused_per_s"] = 200
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

    t_plan, cpu_plan = best_times(plan, repeat)
    t_base, cpu_base = best_times(baseline, repeat)
    return {
        "entries": entries,
        "people": people,
        "plan_entries_per_s": round(entries / t_plan),
        "plan_entries_per_cpu_s": round(entries / max(cpu_plan, 1e-9)),
        "baseline_group_loop_entries_per_s": round(entries / t_base),
        "plan_vs_baseline": round(t_plan / t_base, 2),
        "plan_vs_baseline_cpu": round(cpu_plan / max(cpu_base, 1e-9), 2),
        "goal_entries_per_s": 200_000,
    }


def measure(
    mails: int = 500, entries: int = 100_000, people: int = 10_000, repeat: int = 3
) -> dict[str, Any]:
    """Return every figure (smaller numbers for a smoke run)."""
    return {
        "python": sys.version.split()[0],
        "signing": measure_signing(min(mails, 200), repeat),
        "send": measure_send(mails, repeat),
        "plan": measure_plan(entries, people, repeat),
    }


if __name__ == "__main__":
    print(json.dumps(measure(), indent=2))
