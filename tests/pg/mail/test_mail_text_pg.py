"""What mails say on PostgreSQL (E6 as amended by issues 25 and 38), over generated wiki logs: the
wiki named by its site's name (else its host); the drain names people by display name read once
per round (a neutral word, "via storage sync", "created as a draft"), never by an id, links
from the site's templates, and each mail reads word for word as the replay's of the same log
(subject, unsubscribe header, both bodies)."""

from __future__ import annotations

import email
import email.message
import json
from datetime import timedelta
from email import policy
from typing import Any

import psycopg
import pytest
from mailpg import Clock, Recorder, Run, drain, smtp_server
from wiki_mail_logs import person_ids, wiki_mail_log

from notify_core.events.log import EventError, parse_event
from notify_core.inbox.drain import MailPlan
from notify_core.inbox.mailing import REPLAY_SECRET, line_mail
from notify_core.inbox.pipeline import MailLine
from notify_core.replay.run import Replay
from notify_core.values.instants import format_instant
from notify_pg.mail.smtp import Outgoing, mail_message

Rendered = tuple[str, str, str, str]


def rendered(message: email.message.EmailMessage) -> Rendered:
    text, html = message.get_body(("plain",)), message.get_body(("html",))
    assert text is not None and html is not None
    return (
        str(message["Subject"]),
        str(message["List-Unsubscribe"]),
        text.get_content(),
        html.get_content(),
    )


def parsed(content: bytes) -> email.message.EmailMessage:
    message = email.message_from_bytes(content, policy=policy.default)
    assert isinstance(message, email.message.EmailMessage)
    return message


def replay_mails(lines: list[str]) -> dict[tuple[str, str, str], Rendered]:
    """The replay's mails by (instant, recipient, site), as the bytes of a message read back."""
    run = Replay()
    out = {}
    for item in run.run(lines):
        assert not isinstance(item, EventError), item
        if type(item) is MailLine and item.decision == "send":
            found = line_mail(item, run.inbox.wiki)
            message = mail_message(
                found.mail, sender="n@example.org", to="x@example.org", date=item.at
            )
            key = (format_instant(item.at), item.recipient, item.site)
            out[key] = rendered(parsed(message.as_bytes()))
    return out


@pytest.mark.parametrize("seed", [7, 2026, 40961])
def test_e6_generated_wikis_mail_the_replay_s_words_and_no_user_id_on_postgresql(
    seed: int, conn: psycopg.Connection[Any]
) -> None:
    lines = wiki_mail_log(seed)
    expected = replay_mails(lines)
    assert len(expected) > 5
    server = smtp_server()
    handler, port = next(server)
    try:
        log = [parse_event(json.loads(text)) for text in lines]
        clock = Clock(log[0].occurred_at)
        sent: list[Outgoing] = []
        got: dict[tuple[str, str, str], Rendered] = {}

        def done(at: Any, plan: MailPlan, outcome: str) -> None:
            assert outcome != "failed"
            if outcome == "sent":
                key = (format_instant(at), plan.recipient, plan.site)
                got[key] = rendered(parsed(sent.pop().message.as_bytes()))

        mail_drain = drain(port, clock, secret=REPLAY_SECRET, on_sent=sent.append, on_done=done)
        run = Run(conn, mail_drain, clock)
        run.feed(log)
        run.until(log[-1].occurred_at + timedelta(days=1))
    finally:
        next(server, None)
    assert isinstance(handler, Recorder) and len(handler.received) == len(got)
    assert got == expected
    ids = person_ids(seed)
    # E6: the wiki is named by its site's name (reference host: wiki_sites.name), else its host.
    site = json.loads(lines[1])["payload"]
    for subject, _header, text, html in got.values():
        for person in ids:
            assert person not in subject + text + html
        assert subject.startswith(f"[{site.get('name') or site['host']}] ")
