"""The operator's status card in the settings read (H2b), the page and talk-tab views as the
host's page calls them (H2), and no ``null`` in any answer (G5), over real HTTP on the
reference app with the reference wiki as its host (seed 004 sections 9.1 and 12.2)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from pgworld import HOST_SCHEMA, SCHEMA
from test_admin_http import PROOF, SECRET, call
from webworld import T0, edit, make_wiki

from notify_pg.http.app import ADMIN_HEADER, USER_HEADER, build_app, make_http_server, open_pool
from notify_pg.http.identity import IdentityCheck
from notify_pg.inbox.fanout import InboxFanOut
from notify_pg.inbox.reads import emit
from notify_pg.mail.settings import audit_log
from notify_pg.ops.status import pipeline_status
from notify_reference_host.wiki import ReferenceWiki

Conn = psycopg.Connection[Any]
ADMIN = {ADMIN_HEADER: "root"}
ANA = {USER_HEADER: "ana"}
SETTINGS = "/notifications/admin/settings"


@pytest.fixture
def wiki(conn: Conn) -> ReferenceWiki:
    w = make_wiki(conn, readers=("ana", "bob"))
    with conn.transaction():
        w.set_settings(conn, mail_configured=True)
        w.add_group(conn, "talkers", [{"permission": "read_comments", "match": "all"}])
        for person in ("ana", "bob"):
            w.add_member(conn, "talkers", person)
    return w


@pytest.fixture
def server(db_dsn: str, wiki: ReferenceWiki) -> Iterator[tuple[str, int]]:
    pool = open_pool(db_dsn)
    identity = IdentityCheck(proxy_secret=SECRET.encode())
    app = build_app(pool, schema=SCHEMA, admin_host=wiki, identity=identity)
    httpd = make_http_server(app, "127.0.0.1", 0)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield ("127.0.0.1", httpd.server_port)
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(10)
        pool.close()


def comment(conn: Conn, wiki: ReferenceWiki, n: int = 1) -> None:
    """Bob comments on p1 (ana watches it): her ``watched_page_comment`` entry."""
    wiki.add_comment(conn, f"c{n}", "p1", author="bob", excerpt=f"hello {n}")
    emit(
        conn,
        "comment.created",
        {"comment": f"c{n}", "page": "p1"},
        actor="bob",
        occurred_at=T0 + timedelta(minutes=n),
        schema=SCHEMA,
    )
    InboxFanOut(wiki, schema=SCHEMA).drain(conn)


def test_h2b_the_settings_read_answers_the_status_card(
    server: tuple[str, int], conn: Conn, wiki: ReferenceWiki
) -> None:
    """The card of seed 004 section 12.2: the outbox backlog and the age of its oldest
    event, mails pending now and sent, failed and skipped over 24 hours, mail configured, the
    sites served over plain http; the same figures as ``notify db status``."""
    status, empty = call(server, "GET", SETTINGS, headers=ADMIN)
    assert status == 200
    card = empty["status"]
    assert card["outbox"] == {"backlog": 0}  # G5: no oldest_at without a backlog
    assert card["email"]["pending"] == 0 and card["email"]["skipped_24h"] == {}
    assert (card["mail_configured"], card["plain_http_sites"]) == (True, [])
    assert "warnings" not in card and "next_due_at" not in card["email"]
    edit(conn, wiki)  # ana and bob get an entry each, their mails pending
    with conn.transaction():  # one sent, one failed within the day; one skipped
        bob = conn.execute(
            f"SELECT id FROM {SCHEMA}.inbox_entries WHERE user_id = 'bob'"
        ).fetchone()
        assert bob is not None
        conn.execute(
            f"UPDATE {SCHEMA}.inbox_entries SET email_state = 'sent', emailed_at = now(), "
            "email_after = NULL WHERE id = %s",
            bob,
        )
        conn.execute(f"UPDATE {HOST_SCHEMA}.wiki_sites SET https = false WHERE id = 's1'")
    emit(conn, "page.edited", {"page": "p1"}, actor="editor", occurred_at=T0, schema=SCHEMA)
    status, full = call(server, "GET", SETTINGS, headers=ADMIN)
    assert status == 200
    card = full["status"]
    assert card["outbox"]["backlog"] == 1 and card["outbox"]["oldest_age_s"] >= 0
    assert (card["email"]["pending"], card["email"]["sent_24h"]) == (1, 1)
    assert card["email"]["failed_24h"] == 0 and "next_due_at" in card["email"]
    assert card["plain_http_sites"] == ["s1"]
    assert card["warnings"][0]["code"] == "plain_http"
    # The same figures as `notify db status` (its inbox object and its warnings).
    report = pipeline_status(
        conn,
        SCHEMA,
        mail_configured=lambda c: wiki.inbox_settings(c).mail_configured,
        plain_http=wiki.inbox_plain_http_sites,
    )
    assert {k: card[k] for k in report["inbox"]} == report["inbox"] | {
        "outbox": card["outbox"]  # its age moves with the clock between the two reads
    }
    assert card["outbox"]["oldest_at"] == report["inbox"]["outbox"]["oldest_at"]
    assert card["warnings"] == report["warnings"]
    # Read-only: a change of it is refused naming the member, and nothing is audited.
    status, error = call(server, "PATCH", SETTINGS, {"status": card}, headers=ADMIN)
    assert (status, error["error"]["code"], error["error"]["pointer"]) == (
        400,
        "read_only",
        "/status",
    )
    # A change answers the settings; the card stays with the read.
    status, changed = call(server, "PATCH", SETTINGS, {"mail_batch_size": 7}, headers=ADMIN)
    assert status == 200 and changed["mail_batch_size"] == 7
    assert len(audit_log(conn, schema=SCHEMA)) == 1
    # Behind the administrator's proof like the settings.
    assert call(server, "GET", SETTINGS, headers=ANA)[0] == 401
    assert call(server, "GET", SETTINGS, headers=ADMIN, proof={})[0] == 401
    assert PROOF  # the proxy secret the calls above carried


def test_h2_a_page_view_and_a_talk_tab_view_read_their_entries(
    server: tuple[str, int], conn: Conn, wiki: ReferenceWiki
) -> None:
    """Viewing a page reads its ``watched_page`` entry, its talk tab only the comment ones;
    an email-only entry is reached by the view (its pending mail cancelled), never by the
    inbox's reads; another person's entries and another site's inbox are untouched."""
    edit(conn, wiki)
    comment(conn, wiki)
    listed = call(server, "GET", "/sites/s1/notifications", headers=ANA)[1]["entries"]
    by_category = {e["category"]: e["id"] for e in listed}
    assert set(by_category) == {"watched_page", "watched_page_comment"}
    talk = "/sites/s1/notifications/pages/p1/talk"
    view = "/sites/s1/notifications/pages/p1/view"
    assert call(server, "PUT", "/sites/s2/notifications/pages/p1/talk", headers=ANA)[1] == {
        "read": []
    }
    assert call(server, "PUT", talk, headers=ANA) == (
        200,
        {"read": [by_category["watched_page_comment"]]},
    )
    assert call(server, "PUT", talk, headers=ANA) == (200, {"read": []})
    assert call(server, "PUT", view, headers=ANA) == (200, {"read": [by_category["watched_page"]]})
    unread = call(server, "GET", "/sites/s1/notifications?unread=1", headers=ANA)[1]
    assert unread == {"entries": []}
    # Bob's entry (the edit; the comment is his own) was not ana's to read by her views.
    bob = call(server, "GET", "/sites/s1/notifications?unread=1", headers={USER_HEADER: "bob"})
    assert [e["category"] for e in bob[1]["entries"]] == ["watched_page"]
    # An email-only entry: no inbox read reaches it, a view does and cancels its mail.
    with conn.transaction():
        conn.execute(
            f"UPDATE {SCHEMA}.inbox_entries SET in_app = false WHERE user_id = 'bob' "
            "AND category = 'watched_page'"
        )
    bob_headers = {USER_HEADER: "bob"}
    assert call(server, "PUT", "/sites/s1/notifications/read", {}, headers=bob_headers)[0] == 200
    row = conn.execute(
        f"SELECT id, read_at, email_state FROM {SCHEMA}.inbox_entries "
        "WHERE user_id = 'bob' AND category = 'watched_page'"
    ).fetchone()
    assert row is not None and row[1] is None and row[2] == "pending"
    assert call(server, "PUT", view, headers=bob_headers) == (200, {"read": [row[0]]})
    state = conn.execute(
        f"SELECT email_state FROM {SCHEMA}.inbox_entries WHERE id = %s", (row[0],)
    ).fetchone()
    assert state == ("skipped",)
    # The host's page calls them for its person: none, none read; other methods: 405.
    assert call(server, "PUT", view)[0] == 401
    assert call(server, "GET", view, headers=ANA)[0] == 405
    assert call(server, "PUT", "/sites/s1/notifications/pages/%00/view", headers=ANA)[0] == 400


def test_g5_no_answer_of_the_inbox_or_the_settings_holds_null(
    server: tuple[str, int], conn: Conn, wiki: ReferenceWiki
) -> None:
    """G5: an absent value is an omitted member. ``call`` fails on any null; here each
    member that may be absent is checked absent where it has no value: the last page's
    ``next``, an empty inbox's ``latest_at``, an entry's ``actor``, ``comment`` and
    ``excerpt``, the card's ``oldest_at`` and ``next_due_at``."""
    status, summary = call(server, "GET", "/sites/s1/notifications/summary", headers=ANA)
    assert status == 200 and "latest_at" not in summary and summary["unread"] == 0
    assert call(server, "GET", "/sites/s1/notifications", headers=ANA)[1] == {"entries": []}
    emit(conn, "page.edited", {"page": "p1"}, occurred_at=T0, schema=SCHEMA)  # no actor
    InboxFanOut(wiki, schema=SCHEMA).drain(conn)
    (entry,) = call(server, "GET", "/sites/s1/notifications", headers=ANA)[1]["entries"]
    assert not {"actor", "comment", "excerpt", "next"} & set(entry)
    card = call(server, "GET", SETTINGS, headers=ADMIN)[1]["status"]
    assert "oldest_at" not in card["outbox"]
    for answer in (
        call(server, "GET", "/notifications/preferences", headers=ANA)[1],
        call(server, "PUT", "/sites/s1/notifications/read", {}, headers=ANA)[1],
        call(server, "GET", "/sites/s1/notifications/summary", headers=ANA)[1],
    ):
        assert answer  # each went through call's null check
