"""The framework-neutral HTTP handlers of notify_pg.http.handlers on real PostgreSQL (seed 004
sections 9.1 and 10.4; docs/rules.md U3, U4, H1, H2): values in, status, headers and body out."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from pgworld import HOST_SCHEMA, SCHEMA
from webworld import no_null

from notify_core.inbox.categories import CATEGORY_BY_KEY
from notify_core.mail import unsubscribe_token
from notify_pg import forget_person
from notify_pg import http as h
from notify_pg.inbox.fanout import InboxFanOut
from notify_pg.inbox.reads import InboxPreferences, emit
from notify_pg.mail.secret import unsubscribe_secret
from notify_pg.mail.unsubscribe import audited_unsubscribes
from notify_reference_host.wiki import ReferenceWiki

Conn = psycopg.Connection[Any]
T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
FORM = "application/x-www-form-urlencoded"
ONE_CLICK = b"List-Unsubscribe=One-Click"
READ_ALL = [
    {"permission": "read_pages", "match": "all"},
    {"permission": "read_comments", "match": "all"},
]


def prefs(conn: Conn, person: str = "ana") -> dict[tuple[str, str], bool]:
    return InboxPreferences(SCHEMA).rows(conn, [person]).get(person, {})


def post(conn: Conn, token: str | None, body: bytes = ONE_CLICK, **kwargs: Any) -> h.Response:
    secret = unsubscribe_secret(conn, schema=SCHEMA)
    query = "" if token is None else f"t={token}"
    return h.unsubscribe_post(
        conn,
        secret=secret,
        query=kwargs.pop("query", query),
        content_type=kwargs.pop("content_type", FORM),
        body=body,
        schema=SCHEMA,
        **kwargs,
    )


@pytest.fixture
def token(conn: Conn) -> str:
    """Ana's token for a digest of a mention and a watched page."""
    return unsubscribe_token(
        unsubscribe_secret(conn, schema=SCHEMA), "ana", ["watched_page", "mention"]
    )


def test_u3_one_click_turns_email_off_for_exactly_the_tokens_categories(
    conn: Conn, token: str
) -> None:
    store = InboxPreferences(SCHEMA)
    store.set(conn, "ana", "watched_page", "in_app", False)  # her own choice, kept
    store.set(conn, "ana", "page_created", "email", True)  # opted in, not in the token
    answer = post(conn, token, at=T0)
    assert (answer.status, answer.body) == (200, b"")
    assert prefs(conn) == {
        ("watched_page", "in_app"): False,
        ("watched_page", "email"): False,
        ("mention", "email"): False,
        ("page_created", "email"): True,
    }
    # Idempotent: the same answer and the same choices; both requests are audited, the second
    # with nothing changed.
    again = post(conn, token, at=T0 + timedelta(seconds=1))
    assert (again.status, again.body, again.headers) == (answer.status, answer.body, answer.headers)
    assert len(prefs(conn)) == 4
    first, second = audited_unsubscribes(conn, "ana", schema=SCHEMA)
    assert (first.scope, first.categories, first.changed) == (
        "token",
        ("mention", "watched_page"),
        ("mention", "watched_page"),
    )
    assert (second.token_categories, second.changed, second.at) == (
        ("mention", "watched_page"),
        (),
        T0 + timedelta(seconds=1),
    )
    assert audited_unsubscribes(conn, "bob", schema=SCHEMA) == []


def test_u3_scope_all_turns_every_email_off_and_in_app_stays(conn: Conn, token: str) -> None:
    InboxPreferences(SCHEMA).set(conn, "ana", "page_deleted", "email", True)
    answer = post(conn, token, body=ONE_CLICK + b"&scope=all")
    assert (answer.status, answer.body) == (200, b"")
    stored = prefs(conn)
    # Email off for every category: a stored row where the default is on, none where it is off.
    for key, category in CATEGORY_BY_KEY.items():
        assert stored.get((key, "email"), category.defaults.email) is False
        assert (key, "in_app") not in stored
    (audit,) = audited_unsubscribes(conn, "ana", schema=SCHEMA)
    assert audit.scope == "all"
    assert audit.categories == tuple(sorted(CATEGORY_BY_KEY))
    assert "page_deleted" in audit.changed and "page_created" not in audit.changed


def test_u3_a_multipart_form_body_is_one_click_too(conn: Conn, token: str) -> None:
    """RFC 8058 lets the mail client send the body as multipart/form-data."""
    body = (
        b'--b0undary\r\nContent-Disposition: form-data; name="List-Unsubscribe"\r\n\r\n'
        b"One-Click\r\n--b0undary--\r\n"
    )
    answer = post(conn, token, body=body, content_type="multipart/form-data; boundary=b0undary")
    assert answer.status == 200
    assert prefs(conn)[("mention", "email")] is False


def _tampered(token: str) -> str:
    head, mac = token.split(".")
    flipped = "A" if mac[0] != "A" else "B"
    return f"{head}.{flipped}{mac[1:]}"


def _bad_requests(token: str) -> list[tuple[str, dict[str, Any]]]:
    other = unsubscribe_token(bytes(range(32)), "ana", ["mention"])
    head, mac = token.split(".")
    return [
        ("tampered mac", {"token": _tampered(token)}),
        ("another secret", {"token": other}),
        ("no token", {"token": None}),
        ("empty token", {"token": ""}),
        ("token twice", {"token": None, "query": f"t={token}&t={token}"}),
        ("token with padding", {"token": f"{head}=.{mac}"}),
        ("query not utf-8", {"token": None, "query": b"t=\xff"}),
        ("no body", {"token": token, "body": b""}),
        ("other value", {"token": token, "body": b"List-Unsubscribe=Yes"}),
        ("twice the field", {"token": token, "body": ONE_CLICK + b"&" + ONE_CLICK}),
        ("unknown scope", {"token": token, "body": ONE_CLICK + b"&scope=everything"}),
        ("body not utf-8", {"token": token, "body": b"List-Unsubscribe=One-Click&x=\xff"}),
        ("json body", {"token": token, "content_type": "application/json"}),
        ("body too large", {"token": token, "body": ONE_CLICK + b"&x=" + b"a" * 70_000}),
        (
            "broken multipart",
            {"token": token, "body": b"--x\r\nnonsense", "content_type": "multipart/form-data"},
        ),
    ]


def test_u3_an_invalid_request_gets_400_with_no_body_and_changes_nothing(
    conn: Conn, token: str
) -> None:
    answers = []
    for _name, case in _bad_requests(token):
        answers.append(post(conn, case.pop("token"), **case))
    # One answer for every fault: nothing says which part failed.
    assert {(a.status, a.body, a.headers) for a in answers} == {
        (400, b"", (("Cache-Control", "no-store"),))
    }
    assert prefs(conn) == {}
    assert audited_unsubscribes(conn, "ana", schema=SCHEMA) == []


def test_u4_get_redirects_to_the_hosts_page_and_changes_nothing(conn: Conn, token: str) -> None:
    answer = h.unsubscribe_get(query=f"t={token}", page="https://wiki.example/unsubscribe")
    assert answer.status == 303
    assert answer.header("Location") == f"https://wiki.example/unsubscribe?t={token}"
    assert answer.body == b""
    assert h.unsubscribe_get(query="").header("Location") == h.UNSUBSCRIBE_PAGE
    assert prefs(conn) == {}
    assert audited_unsubscribes(conn, "ana", schema=SCHEMA) == []


def test_u4_info_names_the_categories_and_nothing_about_whose_token(conn: Conn, token: str) -> None:
    secret = unsubscribe_secret(conn, schema=SCHEMA)
    answer = h.unsubscribe_info(secret=secret, query=f"t={token}")
    assert answer.status == 200
    assert json.loads(answer.body) == {"categories": ["mention", "watched_page"]}
    assert b"ana" not in answer.body
    for bad in (f"t={_tampered(token)}", "", "t="):
        refused = h.unsubscribe_info(secret=secret, query=bad)
        assert (refused.status, refused.body) == (400, b"")


def test_u3_forget_person_removes_the_audit(conn: Conn, token: str) -> None:
    post(conn, token)
    forget_person(conn, "ana", SCHEMA)
    assert audited_unsubscribes(conn, "ana", schema=SCHEMA) == []
    assert prefs(conn) == {}


@pytest.fixture
def wiki(conn: Conn) -> ReferenceWiki:
    """A wiki with one page ana watches; ``mentions`` comments by bob mention her."""
    w = ReferenceWiki(HOST_SCHEMA)
    with conn.transaction():
        w.add_site(conn, "s1", host="wiki.example")
        w.add_group(conn, "readers", READ_ALL)
        for person in ("ana", "bob"):
            w.add_user(conn, person, email=f"{person}@example.org", verified=True)
            w.add_member(conn, "readers", person)
        w.add_page(conn, "p1", "s1", "/docs/start", title="Start")
        w.watch(conn, "p1", "ana")
    return w


def mention(conn: Conn, wiki: ReferenceWiki, count: int, start: int = 0) -> None:
    with conn.transaction():
        for n in range(start, start + count):
            wiki.add_comment(conn, f"c{n}", "p1", author="bob", mentions=["ana"])
            emit(
                conn,
                "comment.created",
                {"comment": f"c{n}", "page": "p1", "mentions": ["ana"], "excerpt": f"hi {n}"},
                actor="bob",
                occurred_at=T0 + timedelta(seconds=n),
                schema=SCHEMA,
            )
    InboxFanOut(wiki, schema=SCHEMA).drain(conn)


def body(answer: h.Response) -> Any:
    """The JSON of an answer, which holds no null (G5)."""
    assert answer.header("Content-Type") == "application/json"
    return no_null(json.loads(answer.body))


def test_h1_list_pages_by_cursor_and_summary_answers_not_modified(
    conn: Conn, wiki: ReferenceWiki
) -> None:
    mention(conn, wiki, 65)
    ids: list[int] = []
    query = ""
    pages = 0
    while True:
        page = body(h.inbox_list(conn, "ana", query=query, schema=SCHEMA))
        pages += 1
        ids.extend(e["id"] for e in page["entries"])
        if "next" not in page:  # G5: the last page omits it
            break
        query = f"cursor={page['next']}"
    assert (pages, len(ids), len(set(ids))) == (3, 65, 65)
    first = body(h.inbox_list(conn, "ana", schema=SCHEMA))["entries"][0]
    assert first["category"] == "mention" and first["excerpt"] == "hi 64"
    assert first["updated_at"] == "2026-11-30T09:01:04Z" and first["read"] is False
    summary = h.inbox_summary(conn, "ana", schema=SCHEMA)
    etag = summary.header("ETag")
    assert summary.status == 200 and etag is not None
    assert body(summary) == {"unread": 65, "badge": "65", "latest_at": "2026-11-30T09:01:04Z"}
    # A poll that finds nothing new: 304, no body, the same ETag (weak or in a list too).
    for sent in (etag, f"W/{etag}", f'"other", {etag}', "*"):
        same = h.inbox_summary(conn, "ana", if_none_match=sent, schema=SCHEMA)
        assert (same.status, same.body, same.header("ETag")) == (304, b"", etag)
    mention(conn, wiki, 1, start=65)
    moved = h.inbox_summary(conn, "ana", if_none_match=etag, schema=SCHEMA)
    assert moved.status == 200 and moved.header("ETag") != etag
    assert body(moved)["unread"] == 66


def test_g5_an_empty_inbox_answers_without_null(conn: Conn, wiki: ReferenceWiki) -> None:
    """G5 over H1: no entry gives no ``next`` and no ``latest_at``, omitted rather than null."""
    assert body(h.inbox_list(conn, "ana", schema=SCHEMA)) == {"entries": []}
    assert body(h.inbox_summary(conn, "ana", schema=SCHEMA)) == {"unread": 0, "badge": "0"}
    mention(conn, wiki, 1)
    assert "next" not in body(h.inbox_list(conn, "ana", schema=SCHEMA))
    assert body(h.inbox_summary(conn, "ana", schema=SCHEMA))["latest_at"] == "2026-11-30T09:00:00Z"


def test_h1_a_bad_cursor_is_a_clean_400(conn: Conn) -> None:
    for query in ("cursor=abc", "cursor=1.2.3", "cursor=", "cursor=1&cursor=2", b"cursor=\xff"):
        answer = h.inbox_list(conn, "ana", query=query, schema=SCHEMA)
        assert answer.status == 400
        assert body(answer)["error"]["code"] in ("invalid_cursor", "invalid_query")


def test_h2_read_one_read_by_filter_and_dismiss(conn: Conn, wiki: ReferenceWiki) -> None:
    mention(conn, wiki, 3)
    ids = sorted(e["id"] for e in body(h.inbox_list(conn, "ana", schema=SCHEMA))["entries"])
    assert body(h.inbox_read_one(conn, "bob", str(ids[0]), schema=SCHEMA)) == {"read": []}
    assert body(h.inbox_read_one(conn, "ana", str(ids[0]), schema=SCHEMA)) == {"read": [ids[0]]}
    assert body(h.inbox_read_one(conn, "ana", str(ids[0]), schema=SCHEMA)) == {"read": []}
    filtered = h.inbox_read(
        conn,
        "ana",
        content_type="application/json",
        body=json.dumps({"ids": ids, "categories": ["watched_page"]}).encode(),
        schema=SCHEMA,
    )
    assert body(filtered) == {"read": []}
    rest = h.inbox_read(conn, "ana", content_type=None, body=b"", schema=SCHEMA)
    assert body(rest) == {"read": ids[1:]}
    assert body(h.inbox_summary(conn, "ana", schema=SCHEMA))["unread"] == 0
    gone = h.inbox_dismiss(conn, "ana", str(ids[2]), schema=SCHEMA)
    assert (gone.status, gone.body) == (204, b"")
    assert h.inbox_dismiss(conn, "ana", str(ids[2]), schema=SCHEMA).status == 404
    assert h.inbox_dismiss(conn, "bob", str(ids[1]), schema=SCHEMA).status == 404
    listed = [e["id"] for e in body(h.inbox_list(conn, "ana", schema=SCHEMA))["entries"]]
    assert sorted(listed) == ids[:2]


@pytest.mark.parametrize(
    ("payload", "code"),
    [
        (b"{", "invalid_json"),
        (b"[]", "invalid_json"),
        (b"\xff", "invalid_json"),
        (b'{"ids": [1, "2"]}', "invalid_ids"),
        (b'{"ids": [0]}', "invalid_ids"),
        (b'{"ids": [true]}', "invalid_ids"),
        (b'{"ids": [99999999999999999999]}', "invalid_ids"),
        (b'{"page": 5}', "invalid_page"),
        (b'{"categories": "mention"}', "invalid_categories"),
        (b'{"categories": ["nope"]}', "unknown_category"),
        (b'{"id": 1}', "unknown_member"),
        (b"[" * 100_000, "body_too_large"),
    ],
)
def test_h2_a_malformed_read_is_a_clean_400(conn: Conn, payload: bytes, code: str) -> None:
    answer = h.inbox_read(conn, "ana", content_type="application/json", body=payload, schema=SCHEMA)
    assert answer.status == 400
    assert body(answer)["error"]["code"] == code


def test_h2_bad_entry_ids_are_a_clean_400(conn: Conn) -> None:
    call: Callable[..., h.Response]
    for call in (h.inbox_read_one, h.inbox_dismiss):
        for bad in ("0", "-1", "abc", "1.5", "01", "99999999999999999999", ""):
            answer = call(conn, "ana", bad, schema=SCHEMA)
            assert answer.status == 400
            assert body(answer)["error"] == {
                "code": "invalid_id",
                "message": "an entry id is a positive integer",
                "pointer": "/id",
            }


def test_u3_two_clicks_at_once_change_once_and_both_get_200(
    connect: Callable[[], Conn], token: str
) -> None:
    """A mail client and the person clicking at the same moment: one audit names the change."""
    holder, watcher = connect(), connect()
    answers: list[int] = []

    def click() -> None:
        answers.append(post(connect(), token).status)

    with holder.transaction():
        # Hold the person's unsubscribe lock so that both requests queue behind it.
        holder.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended('notify.unsubscribe:' || %s, 0))",
            ["ana"],
        )
        clicks = [threading.Thread(target=click) for _ in range(2)]
        for thread in clicks:
            thread.start()
        deadline = time.monotonic() + 20
        while True:
            waiting = watcher.execute(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
            ).fetchone()
            if waiting == (2,):
                break
            assert time.monotonic() < deadline, "the clicks never waited for the person's lock"
            time.sleep(0.01)
    for thread in clicks:
        thread.join(20)
    assert answers == [200, 200]
    changed = [a.changed for a in audited_unsubscribes(watcher, "ana", schema=SCHEMA)]
    assert sorted(changed) == [(), ("mention", "watched_page")]
