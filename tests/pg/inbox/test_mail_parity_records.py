"""The mail drain with preference records, two stores (M1-M6 at the drain): logs whose people
suspend, turn email off, cap it and ask for plain mails between comments that mention them give
the same mails in a replay and on PostgreSQL, at the same instants, skipped or held for the
same reasons, each mail sent naming the same record (``inbox_entries.email_record``)."""

from __future__ import annotations

import email
import json
from datetime import timedelta
from email import policy
from pathlib import Path
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner
from pgworld import HOST_SCHEMA, SCHEMA

from notify_cli.main import cli
from notify_core.events.log import parse_event
from notify_core.inbox.drain import MailPlan
from notify_core.inbox.mailing import REPLAY_SECRET
from notify_core.values.instants import format_instant
from notify_pg.inbox.fanout import InboxFanOut
from notify_pg.mail.smtp import Outgoing
from notify_pg.stores.records import PreferenceRecordRepository
from notify_reference_host.records_load import RECORD_EVENTS, apply_record_event
from notify_reference_host.wiki import ReferenceWiki
from notify_reference_host.wiki_load import WikiLoader
from tests.records_logs import Step, records_log

Line = tuple[Any, ...]

PLANS: dict[str, list[Step]] = {
    "suspend_off_and_resume": [
        (0, ("set", "ana", {"email": {"enabled": True}})),
        (0, ("comment", "ben", {"ana", "cai"})),
        (3, ("suspend", "ana")),
        (0, ("comment", "ben", {"ana"})),
        (3, ("set", "cai", {"email": {"enabled": False}})),
        (0, ("comment", "ana", {"cai", "ben"})),
        (3, ("set", "ana", {"email": {"format": "plain"}})),
        (0, ("comment", "cai", {"ana"})),
        (3, ("delete", "cai")),
        (0, ("comment", "ana", {"cai"})),
    ],
    "a_cap_waits_to_the_local_midnight": [
        (0, ("set", "ben", {"email": {"max_per_day": 1}})),
        (0, ("set", "cai", {"email": {"max_per_day": 2, "format": "plain"}})),
        *[(50, ("comment", "ana", {"ben", "cai"})) for _ in range(7)],
    ],
}


def replay(log: Path) -> tuple[list[Line], set[Line], int]:
    """The replay's mail lines, its sent mails with their records, and how many are plain."""
    mail_dir = log.parent / "mails"
    mail_dir.mkdir()
    args = ["replay", str(log), "--include-skips", "--mail-dir", str(mail_dir)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    mails, records = [], set()
    for text in result.stdout.splitlines():
        obj = json.loads(text)
        if obj.get("trigger") != "mail":
            continue
        entries = tuple((e["category"], e["variant"], e["count"]) for e in obj["entries"])
        mails.append((obj["at"], obj["recipient"], obj["site"], obj["decision"], obj.get("reason"),
                      entries))  # fmt: skip
        if obj["decision"] == "send":
            records.add((obj["at"], obj["recipient"], obj["site"], obj.get("record")))
    plain = sum(1 for path in mail_dir.iterdir() if _plain(path.read_bytes()))
    return mails, records, plain


def _plain(content: bytes) -> bool:
    message = email.message_from_bytes(content, policy=policy.default)
    return not message.is_multipart()


@pytest.mark.parametrize("name", sorted(PLANS))
def test_m6_the_drain_gives_the_replay_s_mails_with_records_on_postgresql(
    name: str, db_dsn: str, conn: psycopg.Connection[Any], tmp_path: Path
) -> None:
    from mailpg import NO_STOP, Clock, drain, mail_round_on, smtp_server

    lines = records_log(PLANS[name])
    log = tmp_path / f"{name}.jsonl"
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    expected, expected_records, expected_plain = replay(log)
    assert any(m[3] == "send" for m in expected)
    assert any(m[4] in ("suspended", "record_channel_off", "frequency_cap") for m in expected)

    server = smtp_server()
    handler, port = next(server)
    try:
        wiki = ReferenceWiki(HOST_SCHEMA)
        loader = WikiLoader(wiki, InboxFanOut(wiki, schema=SCHEMA), schema=SCHEMA)
        repo = PreferenceRecordRepository(SCHEMA)
        mails: list[Line] = []
        sent: list[Outgoing] = []

        def on_done(at: Any, plan: MailPlan, outcome: str) -> None:
            assert outcome != "failed"
            entries = tuple((e.category, e.state.variant, e.state.count) for e in plan.entries)
            decision = "send" if plan.skip is None else "skip"
            reason = None if plan.skip is None else plan.skip.value
            mails.append((format_instant(at), plan.recipient, plan.site, decision, reason,
                          entries))  # fmt: skip

        events = [parse_event(json.loads(text)) for text in lines]
        clock = Clock(events[0].occurred_at)
        mail_round = mail_round_on(
            conn,
            drain(port, clock, on_done=on_done, on_sent=sent.append, secret=REPLAY_SECRET),
            poll=timedelta(days=30),
        )

        def mail_until(until: Any) -> None:
            while True:
                wake = mail_round.next_wake() or clock.now
                if wake > until:
                    return
                clock.now = max(clock.now, wake)
                mail_round.run(NO_STOP)

        for event in events:
            mail_until(event.occurred_at)
            clock.now = max(clock.now, event.occurred_at)
            if event.type in RECORD_EVENTS:
                apply_record_event(repo, conn, event)
                continue
            before = len(loader.written)
            loader.feed(conn, event)
            mail_round.notice([w.email_after for w in loader.written[before:]])
        mail_until(events[-1].occurred_at + timedelta(days=3))
        got_records = {
            (format_instant(at), user, site, record)
            for at, user, site, record in conn.execute(
                f"SELECT DISTINCT emailed_at, user_id, site_id, email_record"
                f" FROM {SCHEMA}.inbox_entries WHERE email_state = 'sent'"
            ).fetchall()
        }
        held = conn.execute(
            f"SELECT count(*) FROM {SCHEMA}.inbox_entries WHERE email_skip = 'frequency_cap'"
        ).fetchone()
    finally:
        next(server, None)

    def order(m: Line) -> tuple[Any, ...]:
        return (m[0], m[1], m[2], m[3] != "send", m[4] or "")

    assert sorted(mails, key=order) == sorted(expected, key=order)
    assert got_records == expected_records  # M6: each mail names the same record
    assert sum(1 for o in sent if not o.message.is_multipart()) == expected_plain  # M5
    assert len(handler.received) == len(expected_records)
    # M4: the entries a cap held to a local midnight keep the hold (`notify db status`).
    assert held == (sum(len(m[5]) for m in expected if m[4] == "frequency_cap"),)
