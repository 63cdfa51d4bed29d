"""Issue 25 on real PostgreSQL: a deletion that does not depend on the host's rows (N9), the
drain's check of the person at its own instant with its skips in `notify db status` (E4), one
inbox per site over HTTP (H1) and what reads reach (H2)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner
from inbox_log import START, WikiLog
from mailpg import Clock, Recorder, drain, events, run_loader, smtp_server
from pgworld import HOST_SCHEMA, SCHEMA

from notify_cli.main import cli
from notify_pg.inbox.fanout import InboxFanOut
from notify_pg.inbox.reads import InboxReads, emit
from notify_reference_host.wiki import ReferenceWiki


@pytest.fixture
def server() -> Iterator[tuple[Recorder, int]]:
    yield from smtp_server()


def test_n9_the_host_really_deletes_its_page_row_and_the_notification_still_goes(
    conn: psycopg.Connection[Any],
) -> None:
    """N9: the emit carries the page as it was; the host then removes the row altogether (no
    tombstone). The fan-out checks access against the carried path and tags (a tag rule) and
    takes the snapshot from them."""
    wiki = ReferenceWiki(HOST_SCHEMA)
    tagged = [{"permission": "read_pages", "match": "tag", "value": "ops"}]
    with conn.transaction():
        wiki.add_site(conn, "s1", host="wiki.example")
        wiki.add_group(conn, "ops", tagged)
        for person in ("ana", "bob", "cy"):
            wiki.add_user(conn, person, email=f"{person}@example.org", verified=True)
        wiki.add_member(conn, "ops", "ana")  # cy is in no group: no access
        wiki.add_page(conn, "p1", "s1", "/ops/runbook", title="Runbook", tags=["ops"])
        wiki.watch(conn, "p1", "ana")
        wiki.watch(conn, "p1", "cy")
        page = wiki.inbox_page(conn, "p1")
        emit(
            conn,
            "page.deleted",
            {"page": "p1"},
            actor="bob",
            occurred_at=START,
            capture_watchers=wiki.watchers_query("p1"),
            page_as_was=page,
            schema=SCHEMA,
        )
        conn.execute("DELETE FROM host.wiki_pages WHERE id = 'p1'")
    assert wiki.inbox_page(conn, "p1") is None
    worker = InboxFanOut(wiki, schema=SCHEMA)
    assert worker.drain(conn) == 1
    rows = conn.execute(
        "SELECT user_id, variant, site_id, path, title FROM notify.inbox_entries"
    ).fetchall()
    assert rows == [("ana", "deleted", "s1", "/ops/runbook", "Runbook")]
    assert worker.stats.skips == {"no_access": 1} and worker.stats.dropped == {}


def test_n9_a_delete_that_failed_after_its_emit_with_its_page_gives_nothing(
    conn: psycopg.Connection[Any],
) -> None:
    """page_exists still holds when the emit carries the page: the row is there, not deleted."""
    wiki = ReferenceWiki(HOST_SCHEMA)
    with conn.transaction():
        wiki.add_site(conn, "s1", host="wiki.example")
        wiki.add_user(conn, "ana")
        wiki.add_page(conn, "p1", "s1", "/a")
        wiki.watch(conn, "p1", "ana")
        emit(
            conn,
            "page.deleted",
            {"page": "p1"},
            actor="bob",
            page_as_was=wiki.inbox_page(conn, "p1"),
            schema=SCHEMA,
        )
    worker = InboxFanOut(wiki, schema=SCHEMA)
    worker.drain(conn)
    assert worker.stats.dropped == {"page_exists": 1}


def e4_log() -> WikiLog:
    log = WikiLog()
    for person in ("ana", "ben", "cy", "dan"):
        log.user(person)
    log.page("p1", "ops/runbook").watch("p1", "ana", "cy", "dan").edit("p1")
    log.tick(30).add("user.updated", {"user": "cy", "active": False})
    log.add("group.member_removed", {"group": "readers", "user": "dan"})
    return log


def test_e4_postgresql_drain_skips_the_deactivated_and_the_no_longer_allowed_status_counts(
    conn: psycopg.Connection[Any], db_dsn: str, server: tuple[Recorder, int]
) -> None:
    """E4: 30 s after the edit cy is deactivated and dan leaves the readers; at +3 min ana is
    mailed, cy's entry is skipped as inactive and dan's as no_access; `notify db status`
    counts the skips of the last 24 hours by reason."""
    handler, port = server
    log = e4_log()
    run_loader(conn)(events([{k: v for k, v in e.items() if k != "seq"} for e in log.events]))
    clock = Clock(log.now + timedelta(minutes=5))
    outcomes: list[tuple[str, str | None, str]] = []
    mail = drain(
        port,
        clock,
        on_done=lambda at, plan, outcome: outcomes.append(
            (plan.recipient, None if plan.skip is None else plan.skip.value, outcome)
        ),
    )
    mail.drain_once(conn)
    assert sorted(outcomes) == [
        ("ana", None, "sent"),
        ("cy", "inactive", "skipped"),
        ("dan", "no_access", "skipped"),
    ]
    assert len(handler.received) == 1
    rows = conn.execute(
        "SELECT user_id, email_state, email_skip FROM notify.inbox_entries ORDER BY user_id"
    ).fetchall()
    assert rows == [
        ("ana", "sent", None),
        ("cy", "skipped", "inactive"),
        ("dan", "skipped", "no_access"),
    ]
    # The log's instants are in the past of the database's clock: move the skips into the
    # last 24 hours as a live drain would have stamped them.
    conn.execute(
        "UPDATE notify.inbox_entries SET email_skipped_at = now() WHERE email_skip IS NOT NULL"
    )
    result = CliRunner().invoke(cli, ["db", "status", "--dsn", db_dsn])
    email = json.loads(result.stdout)["inbox"]["email"]
    assert email["skipped_24h"] == {"inactive": 1, "no_access": 1}


def test_h1_h2_one_inbox_per_site_and_reads_never_reach_email_only_entries(
    conn: psycopg.Connection[Any],
) -> None:
    """H1: the list and summary of a site hold its entries and those with no site; unread
    only on demand. H2: an inbox read or a dismissal never reaches an email-only entry, a page
    view does (and cancels its pending email)."""
    log = WikiLog()
    log.add("site.created", {"site": "s2", "host": "docs.example.org", "https": True})
    for person in ("ana", "ben", "gus"):
        log.user(person)
    log.page("p1", "a").page("p2", "b", site="s2").page("p3", "c")
    log.watch("p1", "ana", "gus").watch("p2", "ana").watch("p3", "ana")
    log.add(
        "inbox_pref.updated",
        {"category": "watched_page", "channel": "in_app", "enabled": False},
        audience="gus",
    )
    log.edit("p1").edit("p2").edit("p3")
    loader = run_loader(conn)(
        events([{k: v for k, v in e.items() if k != "seq"} for e in log.events])
    )
    reads = InboxReads(SCHEMA)
    names = lambda page: [loader.name_of(e.id) for e in page.entries]  # noqa: E731
    assert names(reads.list_entries(conn, "ana", site="s1")) == [
        "ana:watched_page:p3:1",
        "ana:watched_page:p1:1",
    ]
    assert names(reads.list_entries(conn, "ana", site="s2")) == ["ana:watched_page:p2:1"]
    assert reads.summary(conn, "ana", site="s1").unread == 2
    assert reads.summary(conn, "ana", site="s2").unread == 1
    first = reads.list_entries(conn, "ana", site="s1").entries[0]
    assert reads.read(conn, "ana", ids=[first.id], site="s1") == [first.id]
    assert names(reads.list_entries(conn, "ana", site="s1", unread_only=True)) == [
        "ana:watched_page:p1:1"
    ]
    # Reading s2's inbox reads nothing of s1.
    assert (
        reads.read(conn, "ana", site="s2") != []
        and reads.summary(conn, "ana", site="s1").unread == 1
    )
    # gus: an email-only entry, out of reach of inbox reads and dismissals.
    (gus_id,) = [tid for name, (_p, tid) in loader.ids.items() if name.startswith("gus:")]
    assert reads.read(conn, "gus", site="s1") == []
    assert reads.dismiss(conn, "gus", gus_id, site="s1") is False
    state = conn.execute(
        "SELECT email_state, read_at IS NULL FROM notify.inbox_entries WHERE id = %s", [gus_id]
    ).fetchone()
    assert state == ("pending", True)
    assert reads.read_on_view(conn, "gus", "p1") == [gus_id]
    state = conn.execute(
        "SELECT email_state, read_at IS NULL FROM notify.inbox_entries WHERE id = %s", [gus_id]
    ).fetchone()
    assert state == ("skipped", False)
