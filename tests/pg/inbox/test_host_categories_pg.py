"""Host categories on PostgreSQL (rule N13): declared through the host's emit path, their
events fanned out by the worker, offered in the grid to those holding ``visible_to``, and
named in unsubscribe tokens (the parity of a whole log: tests/pg/inbox/test_inbox_parity.py)."""

from __future__ import annotations

import json
import logging
from typing import Any

import psycopg
import pytest
from inbox_log import START
from pgworld import HOST_SCHEMA, SCHEMA

from notify_core.mail.tokens import unsubscribe_token
from notify_core.values.errors import InvalidInput
from notify_pg.http.handlers import inbox_list, unsubscribe_info, unsubscribe_post
from notify_pg.inbox.fanout import InboxFanOut
from notify_pg.inbox.host_categories import declare_category, host_registry
from notify_pg.inbox.reads import InboxPreferences, emit
from notify_pg.mail.settings import change_preferences, preferences
from notify_reference_host.wiki import ReferenceWiki

STORAGE: dict[str, Any] = {
    "category": "storage_sync_failed",
    "section": "storage",
    "scope": "site",
    "defaults": {"in_app": True, "email": True},
    "priority": 50,
    "visible_to": "manage_storage",
    "candidates": {"permission": "manage_storage"},
    "group_key": ["target"],
    "strings": {"en": {"name": "Storage sync failed", "subject": "s", "line": "{target}"}},
}
LOGIN: dict[str, Any] = {
    "category": "failed_login",
    "section": "account",
    "scope": "instance",
    "origins": ["user"],
    "defaults": {"in_app": True, "email": False},
    "priority": 60,
    "candidates": {"named": True},
    "group_key": ["target"],
    "strings": {
        "en": {"name": "Failed sign-in", "subject": "s", "line": "Failed sign-in as {target}"}
    },
}


def world(conn: psycopg.Connection[Any]) -> ReferenceWiki:
    wiki = ReferenceWiki(HOST_SCHEMA)
    with conn.transaction():
        wiki.add_site(conn, "s1", host="wiki.example")
        wiki.add_group(conn, "storage", [], permissions=["manage_storage"])
        wiki.add_group(conn, "admins", [], manage_system=True)
        wiki.add_group(conn, "readers", [{"permission": "read_pages", "match": "all"}])
        for person in ("ana", "bob", "cy"):
            wiki.add_user(conn, person, email=f"{person}@example.org", verified=True)
        wiki.add_member(conn, "storage", "ana")
        wiki.add_member(conn, "admins", "bob")
        wiki.add_member(conn, "readers", "cy")
    return wiki


def entries(conn: psycopg.Connection[Any]) -> list[tuple[Any, ...]]:
    return conn.execute(
        "SELECT user_id, site_id, category, group_key, count, page_id, title, members"
        " FROM notify.inbox_entries ORDER BY user_id, group_key"
    ).fetchall()


def test_n13_declared_through_emit_and_fanned_out_by_the_worker(
    conn: psycopg.Connection[Any],
) -> None:
    wiki = world(conn)
    with conn.transaction():
        assert emit(conn, "category.declared", STORAGE, occurred_at=START, schema=SCHEMA) is None
        assert emit(conn, "category.declared", LOGIN, occurred_at=START, schema=SCHEMA) is None
        for n in range(3):  # a target failing again and again: one entry each
            emit(
                conn,
                "category.event",
                {"category": "storage_sync_failed", "site": "s1", "target": "git", "n": n},
                origin="import",
                occurred_at=START,
                schema=SCHEMA,
            )
        emit(
            conn,
            "category.event",
            {"category": "failed_login", "target": "cy", "people": ["cy"]},
            occurred_at=START,
            schema=SCHEMA,
        )
        emit(  # failed_login fires for user events only (N6)
            conn,
            "category.event",
            {"category": "failed_login", "target": "cy", "people": ["cy"]},
            origin="import",
            occurred_at=START,
            schema=SCHEMA,
        )
    assert set(host_registry(conn, schema=SCHEMA)) >= {"storage_sync_failed", "failed_login"}
    worker = InboxFanOut(wiki, schema=SCHEMA)
    assert worker.drain(conn) == 5
    assert entries(conn) == [
        ("ana", "s1", "storage_sync_failed", "storage_sync_failed:git", 3, None, "git",
         {"n": "2", "site": "s1", "target": "git"}),
        ("bob", "s1", "storage_sync_failed", "storage_sync_failed:git", 3, None, "git",
         {"n": "2", "site": "s1", "target": "git"}),
        ("cy", None, "failed_login", "failed_login:cy", 1, None, "cy", {"target": "cy"}),
    ]  # fmt: skip


def test_n13_a_bad_declaration_is_refused_and_never_fails_the_hosts_transaction(
    conn: psycopg.Connection[Any], caplog: pytest.LogCaptureFixture
) -> None:
    world(conn)
    with caplog.at_level(logging.ERROR, "notify_pg.inbox"), conn.transaction():
        emit(conn, "category.declared", {**STORAGE, "category": "mention"}, schema=SCHEMA)
        emit(conn, "category.declared", {**STORAGE, "scope": "page"}, schema=SCHEMA)
        conn.execute("SELECT 1")  # the host's transaction goes on
    assert [r.fields["reason"] for r in caplog.records] == [  # type: ignore[attr-defined]
        "builtin_category",
        "invalid_member",
    ]
    assert "storage_sync_failed" not in host_registry(conn, schema=SCHEMA)
    with pytest.raises(InvalidInput) as info:
        declare_category(conn, {**STORAGE, "strings": {}}, schema=SCHEMA)
    assert info.value.pointer == "/payload/strings"


def test_n13_the_grid_shows_a_host_category_to_those_holding_visible_to(
    conn: psycopg.Connection[Any],
) -> None:
    wiki = world(conn)
    with conn.transaction():
        declare_category(conn, STORAGE, schema=SCHEMA)
        declare_category(conn, LOGIN, schema=SCHEMA)

    def keys(person: str) -> list[str]:
        grid = preferences(conn, wiki, person, schema=SCHEMA)
        return [row["category"] for row in grid["categories"]]

    assert keys("ana")[-2:] == ["failed_login", "storage_sync_failed"]
    assert keys("bob")[-1] == "storage_sync_failed"  # manage_system holds it (N8)
    assert keys("cy")[-1] == "failed_login"
    grid = change_preferences(
        conn, wiki, "cy", {"categories": {"failed_login": {"email": True}}}, schema=SCHEMA
    )
    row = next(r for r in grid["categories"] if r["category"] == "failed_login")
    assert row["email"]["own"] and row["names"] == {"en": "Failed sign-in"}
    assert InboxPreferences(SCHEMA).rows(conn, ["cy"]) == {"cy": {("failed_login", "email"): True}}


def test_n13_a_token_may_name_a_host_category(conn: psycopg.Connection[Any]) -> None:
    world(conn)
    with conn.transaction():
        declare_category(conn, STORAGE, schema=SCHEMA)
    secret = bytes(range(32))
    token = unsubscribe_token(secret, "ana", ["storage_sync_failed"])
    info = unsubscribe_info(secret=secret, query=f"t={token}", conn=conn, schema=SCHEMA)
    assert info.status == 200
    answer = unsubscribe_post(
        conn,
        secret=secret,
        query=f"t={token}",
        content_type="application/x-www-form-urlencoded",
        body=b"List-Unsubscribe=One-Click",
        schema=SCHEMA,
    )
    assert answer.status == 200
    rows = InboxPreferences(SCHEMA).rows(conn, ["ana"])
    assert rows == {"ana": {("storage_sync_failed", "email"): False}}


def test_h1_the_inbox_lists_a_host_entry_by_its_own_strings_and_links_to_the_inbox(
    conn: psycopg.Connection[Any],
) -> None:
    wiki = world(conn)
    with conn.transaction():
        declare_category(conn, LOGIN, schema=SCHEMA)
        for _ in range(2):
            emit(
                conn,
                "category.event",
                {"category": "failed_login", "target": "cy", "people": ["cy"]},
                occurred_at=START,
                schema=SCHEMA,
            )
    InboxFanOut(wiki, schema=SCHEMA).drain(conn)
    for host in (wiki, None):
        answer = inbox_list(conn, "cy", site="s1", schema=SCHEMA, host=host)
        assert answer.status == 200
        (entry,) = json.loads(answer.body)["entries"]
        assert entry["category"] == "failed_login" and entry["count"] == 2
        assert entry["text"] == "Failed sign-in as cy (2 times)"
        assert entry["link"].endswith("/notifications")
