"""One-click unsubscribe end to end (seed 004 sections 10.2 and 10.4; docs/rules.md U1, U3, E4,
H2): the mail drain sends the seed's mails to a real SMTP server on loopback, signed with the
instance's stored secret; the List-Unsubscribe URL of a received mail is POSTed over real HTTP
to the reference app; later mails follow the new choice."""

from __future__ import annotations

import email
import http.client
import threading
import urllib.parse
from collections.abc import Iterator
from email import policy
from typing import Any

import psycopg
import pytest
from mailpg import SENDER, Clock, Recorder, Run, at, events, smtp_server
from pgworld import HOST_SCHEMA, SCHEMA

from notify_pg.http.app import USER_HEADER, build_app, make_http_server, open_pool
from notify_pg.inbox.reads import InboxPreferences
from notify_pg.mail.drain import MailDrain, MailDrainConfig
from notify_pg.mail.secret import unsubscribe_secret
from notify_pg.mail.smtp import SmtpConfig, SmtpSender
from notify_reference_host.wiki import ReferenceWiki

READ_ALL = [
    {"permission": "read_pages", "match": "all"},
    {"permission": "read_comments", "match": "all"},
]
T = "2026-11-30T08:00:00Z"


@pytest.fixture
def smtp() -> Iterator[tuple[Recorder, int]]:
    yield from smtp_server()


@pytest.fixture
def web(db_dsn: str) -> Iterator[tuple[str, int]]:
    pool = open_pool(db_dsn)
    httpd = make_http_server(build_app(pool, schema=SCHEMA), "127.0.0.1", 0)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield ("127.0.0.1", httpd.server_port)
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(10)
        pool.close()


def request(
    base: tuple[str, int], method: str, target: str, body: bytes = b"", **headers: str
) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection(*base, timeout=30)
    try:
        conn.request(method, target, body=body, headers=headers)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def seed_world() -> list[dict[str, Any]]:
    """Seed 004 10.2: Alice watches Runbook; Bob edits it; Carol mentions Alice elsewhere."""
    lines: list[dict[str, Any]] = [
        {
            "type": "notifications.settings",
            "occurred_at": T,
            "payload": {"mail_configured": True, "email_delay_s": 180},
        },
        {
            "type": "site.created",
            "occurred_at": T,
            "payload": {"site": "s1", "host": "wiki.example.org", "https": True},
        },
        {"type": "group.created", "occurred_at": T, "payload": {"group": "all", "rules": READ_ALL}},
    ]
    for person in ("alice", "bob", "carol"):
        user = {
            "user": person,
            "kind": "human",
            "email": f"{person}@example.org",
            "verified": True,
            "locale": "en",
        }
        lines.append({"type": "user.created", "occurred_at": T, "payload": user})
        lines.append(
            {
                "type": "group.member_added",
                "occurred_at": T,
                "payload": {"group": "all", "user": person},
            }
        )
    for page, title in (("p1", "Runbook"), ("p2", "Deploy notes")):
        lines.append(
            {
                "type": "page.created",
                "occurred_at": T,
                "actor": "bob",
                "payload": {
                    "page": page,
                    "site": "s1",
                    "path": f"ops/{page}",
                    "locale": "en",
                    "title": title,
                },
            }
        )
    lines.append(
        {"type": "page.watched", "occurred_at": T, "payload": {"page": "p1", "user": "alice"}}
    )
    return lines


def activity(edit_at: str, mention_at: str, comment: str) -> list[dict[str, Any]]:
    return [
        {"type": "page.edited", "occurred_at": edit_at, "actor": "bob", "payload": {"page": "p1"}},
        {
            "type": "comment.created",
            "occurred_at": mention_at,
            "actor": "carol",
            "payload": {"comment": comment, "page": "p2", "mentions": ["alice"], "excerpt": "hi"},
        },
    ]


def received(handler: Recorder) -> list[email.message.EmailMessage]:
    out = []
    for _sender, _rcpts, content in handler.received:
        message = email.message_from_bytes(content, policy=policy.default)
        assert isinstance(message, email.message.EmailMessage)
        out.append(message)
    return out


def test_u3_the_drains_mail_unsubscribes_over_http_and_later_mails_follow(
    conn: psycopg.Connection[Any], smtp: tuple[Recorder, int], web: tuple[str, int]
) -> None:
    handler, port = smtp
    clock = Clock(at(T))
    config = SmtpConfig.from_url(f"smtp://127.0.0.1:{port}?timeout=10")
    drain = MailDrain(
        ReferenceWiki(HOST_SCHEMA),
        lambda: SmtpSender(config),
        # U1: the instance's stored secret, as `notify worker` and `notify serve` read it.
        secret=lambda c: unsubscribe_secret(c, schema=SCHEMA),
        config=MailDrainConfig(sender=SENDER),
        schema=SCHEMA,
        clock=clock,
    )
    run = Run(conn, drain, clock)
    log = events(
        seed_world()
        + activity("2026-11-30T10:00:00Z", "2026-11-30T10:05:00Z", "c1")
        + activity("2026-11-30T12:30:00Z", "2026-11-30T12:31:00Z", "c2")
    )
    run.feed(log[:-2])
    run.until(at("2026-11-30T12:00:00Z"))
    runbook, mention = received(handler)
    assert "Runbook" in runbook["Subject"] and "Deploy notes" in mention["Subject"]

    # The mail client's one-click: the URL of the Runbook mail, the RFC 8058 body, no cookie.
    assert runbook["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    url = urllib.parse.urlsplit(str(runbook["List-Unsubscribe"]).strip("<>"))
    target = f"{url.path}?{url.query}"
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    assert request(web, "POST", target, b"List-Unsubscribe=One-Click", **form) == (200, b"")
    assert request(web, "POST", target, b"List-Unsubscribe=One-Click", **form) == (200, b"")
    # Email off for exactly the mail's category; in-app and the mention's email untouched.
    stored = InboxPreferences(SCHEMA).rows(conn, ["alice"])
    assert stored == {"alice": {("watched_page", "email"): False}}

    # Alice reads her inbox; then Runbook is edited and she is mentioned again: the edit
    # reaches her in the app only, the mention by mail too.
    status, _ = request(web, "PUT", "/sites/s1/notifications/read", **{USER_HEADER: "alice"})
    assert status == 200
    run.feed(log[-2:])
    run.until(at("2026-11-30T14:00:00Z"))
    messages = received(handler)
    assert len(messages) == 3 and "Deploy notes" in messages[2]["Subject"]
    rows = conn.execute(
        "SELECT category, in_app, email_state FROM notify.inbox_entries "
        "WHERE user_id = 'alice' AND read_at IS NULL ORDER BY id"
    ).fetchall()
    assert rows == [("watched_page", True, "none"), ("mention", True, "sent")]
