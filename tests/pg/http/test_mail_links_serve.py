"""A site's link templates on PostgreSQL, end to end (E6, U3, U4): a wiki that mounts its
routes where seed 004 puts them (``/_api/notifications/unsubscribe``,
``/_profile/notifications``, its own review page) sets templates in its site row and writes
no code. The drain's mails link there, every action button goes to its target (the page, the
comment on the talk tab, the review), and the one-click POST of a received mail's
List-Unsubscribe URL works over real HTTP against `notify serve --host-schema`.
"""

from __future__ import annotations

import email
import email.message
import json
import os
import signal
import subprocess
import sys
import urllib.parse
from collections.abc import Iterator
from email import policy
from typing import Any

import psycopg
import pytest
from mailpg import Clock, Recorder, Run, at, drain, events, smtp_server
from pgworld import HOST_SCHEMA, SCHEMA
from test_serve import ONE_CLICK, call, email_choices

from notify_pg.mail.secret import unsubscribe_secret

T = "2026-11-30T08:00:00Z"
READ_ALL = [
    {"permission": "read_pages", "match": "all"},
    {"permission": "read_comments", "match": "all"},
]
LINKS = {
    "unsubscribe": "/_api/notifications/unsubscribe?t={token}",
    "manage": "/_profile/notifications",
    "inbox": "https://{host}/_inbox",
    "comment": "{path}?tab=talk#comment-{comment}",
    "review": "/_inbox/review/{submission}",
}


@pytest.fixture
def smtp() -> Iterator[tuple[Recorder, int]]:
    yield from smtp_server()


def log() -> list[dict[str, Any]]:
    """Alice watches Runbook and reviews; Bob edits it, Carol mentions her on it, Dan (a
    person with no name) suggests a change to it."""
    lines: list[dict[str, Any]] = [
        {
            "type": "notifications.settings",
            "occurred_at": T,
            "payload": {"mail_configured": True, "email_delay_s": 180},
        },
        {
            "type": "site.created",
            "occurred_at": T,
            "payload": {"site": "s1", "host": "wiki.example.org", "https": True, "links": LINKS},
        },
        {"type": "group.created", "occurred_at": T, "payload": {"group": "all", "rules": READ_ALL}},
        {"type": "group.created", "occurred_at": T, "payload": {"group": "rev", "rules": []}},
        {
            "type": "review_rule.set",
            "occurred_at": T,
            "payload": {
                "rule": "r1",
                "site": "s1",
                "match": "all",
                "reviewer_groups": ["rev"],
                "enabled": True,
            },
        },
    ]
    for person, name in (
        ("alice", "Alice A."),
        ("bob", "Bob B."),
        ("carol", "Carol C."),
        ("dan", None),
    ):
        user: dict[str, Any] = {
            "user": person,
            "kind": "human",
            "email": f"{person}@example.org",
            "verified": True,
            "locale": "en",
        }
        if name is not None:
            user["name"] = name
        lines.append({"type": "user.created", "occurred_at": T, "payload": user})
        lines.append(
            {
                "type": "group.member_added",
                "occurred_at": T,
                "payload": {"group": "all", "user": person},
            }
        )
    lines += [
        {
            "type": "group.member_added",
            "occurred_at": T,
            "payload": {"group": "rev", "user": "alice"},
        },
        {
            "type": "page.created",
            "occurred_at": T,
            "actor": "bob",
            "payload": {
                "page": "p1",
                "site": "s1",
                "path": "ops/run book",
                "locale": "en",
                "title": "Runbook",
            },
        },
        {"type": "page.watched", "occurred_at": T, "payload": {"page": "p1", "user": "alice"}},
        {
            "type": "page.edited",
            "occurred_at": "2026-11-30T10:00:00Z",
            "actor": "bob",
            "payload": {"page": "p1"},
        },
        {
            "type": "comment.created",
            "occurred_at": "2026-11-30T11:00:00Z",
            "actor": "carol",
            "payload": {"comment": "c 1", "page": "p1", "mentions": ["alice"], "excerpt": "look"},
        },
        {
            "type": "submission.created",
            "occurred_at": "2026-11-30T12:00:00Z",
            "actor": "dan",
            "payload": {"submission": "s-9", "page": "p1"},
        },
    ]
    return lines


def received(handler: Recorder) -> list[email.message.EmailMessage]:
    out = []
    for _from, _to, content in handler.received:
        message = email.message_from_bytes(content, policy=policy.default)
        assert isinstance(message, email.message.EmailMessage)
        out.append(message)
    return out


def body(message: email.message.EmailMessage) -> str:
    text, html = message.get_body(("plain",)), message.get_body(("html",))
    assert text is not None and html is not None
    return str(text.get_content()) + str(html.get_content())


def test_e6_a_site_s_link_templates_shape_every_link_and_the_one_click_post_works_over_http(
    db_dsn: str, conn: psycopg.Connection[Any], smtp: tuple[Recorder, int]
) -> None:
    handler, port = smtp
    secret = unsubscribe_secret(conn, schema=SCHEMA)  # what `notify serve` verifies with
    clock = Clock(at(T))
    run = Run(conn, drain(port, clock, secret=secret), clock)
    run.feed(events(log()))
    run.until(at("2026-11-30T14:00:00Z"))

    edit, mention, review = received(handler)
    assert str(edit["Subject"]) == "[wiki.example.org] Bob B. edited Runbook"
    assert str(mention["Subject"]) == "[wiki.example.org] Carol C. mentioned you on Runbook"
    # Dan has no display name: the neutral word, never his id.
    assert str(review["Subject"]) == "[wiki.example.org] Someone asks for your review of Runbook"
    for message in (edit, mention, review):
        text = body(message)
        assert "https://wiki.example.org/_profile/notifications" in text
        assert "/notifications/settings" not in text
        for person in ("bob", "carol", "dan"):
            assert person not in str(message["Subject"]) + text
    # Every button goes to its target: the page, the comment on the talk tab, the review.
    assert "https://wiki.example.org/ops/run%20book" in body(edit)
    assert "https://wiki.example.org/ops/run%20book?tab=talk#comment-c%201" in body(mention)
    assert "https://wiki.example.org/_inbox/review/s-9" in body(review)

    url = urllib.parse.urlsplit(str(edit["List-Unsubscribe"]).strip("<>"))
    assert (url.scheme, url.netloc, url.path) == (
        "https",
        "wiki.example.org",
        "/_api/notifications/unsubscribe",
    )
    assert f"{url.scheme}://{url.netloc}{url.path}?{url.query}" in body(edit)
    target = f"{url.path}?{url.query}"

    env = {**os.environ, "NOTIFY_DSN": db_dsn}
    args = ["serve", "--schema", SCHEMA, "--port", "0", "--host-schema", HOST_SCHEMA]
    proc = subprocess.Popen(
        [sys.executable, "-m", "notify_cli", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        line = json.loads(proc.stderr.readline())
        assert line["msg"] == "listening"
        base = ("127.0.0.1", int(line["port"]))
        # U4: a GET on the templated URL changes nothing and redirects.
        got = call(base, "GET", target)
        assert got.status == 303
        assert email_choices(conn, "alice") == {}
        # U3: the one-click POST on the templated URL, as a mail client sends it.
        answer = call(base, "POST", target, b"List-Unsubscribe=One-Click", ONE_CLICK)
        assert (answer.status, answer.body) == (200, b"")
        info = call(base, "GET", f"{url.path}/info?{url.query}")
        assert info.status == 200 and "watched_page" in info.body.decode()
    finally:
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert email_choices(conn, "alice") == {("watched_page", "email"): False}
