"""Built but unguarded until issue 25, on PostgreSQL: reviewers per seed 004 section 4.3 (the
replay's own test: tests/core/inbox/test_inbox_reviewers.py), a comment's excerpt dropped from
entries
and mails once the comment is deleted (N11), access removed between an event and its fan-out
(N7, N8: the fan-out checks access at its own time), and `forget_person` removing the
person's entries."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import psycopg
from inbox_log import WikiLog
from mailpg import Clock, Recorder, Run, drain, smtp_server
from pgworld import HOST_SCHEMA, SCHEMA

from notify_core.events.log import Event, parse_event
from notify_pg.inbox.fanout import InboxFanOut, Written
from notify_pg.inbox.reads import InboxReads
from notify_pg.stores.store import forget_person
from notify_reference_host.wiki import ReferenceWiki
from notify_reference_host.wiki_load import WikiLoader
from tests.core.inbox.test_inbox_reviewers import review_lines, review_log

Conn = psycopg.Connection[Any]


def parsed(log: WikiLog) -> list[Event]:
    return [parse_event(json.loads(text)) for text in log.lines()]


def loader() -> WikiLoader:
    wiki = ReferenceWiki(HOST_SCHEMA)
    return WikiLoader(wiki, InboxFanOut(wiki, schema=SCHEMA), schema=SCHEMA)


def test_n1_reviewers_on_postgresql_as_in_the_replay(conn: Conn) -> None:
    """Seed 004 4.3: the replay's review entries (without its skip lines) are PostgreSQL's."""
    log = review_log()
    expected = [line for line in review_lines(log.lines()) if line[2] != "skip"]
    load = loader()
    got = []
    for event in parsed(log):
        before = len(load.written)
        load.feed(conn, event)
        got += [
            (
                event.seq,
                w.user_id,
                "new" if w.inserted else "coalesce",
                load.name_of(w.id),
                w.count,
            )
            for w in load.written[before:]
            if w.category == "review_requested"
        ]
    assert sorted(got) == sorted(expected)
    assert {line[1] for line in got} == {"rita", "sam"}  # never ana (admin) nor rolf


def test_n11_a_deleted_comment_s_excerpt_leaves_the_entries_and_the_mails(conn: Conn) -> None:
    log = WikiLog().user("ana", name="Ana").user("ben", name="Ben")
    log.page("p1", "ops/runbook").watch("p1", "ana")
    log.comment("c1", "p1", "ben", mentions=["ana"], excerpt="the secret plan")
    events = parsed(log)
    server = smtp_server()
    handler, port = next(server)
    try:
        clock = Clock(events[0].occurred_at)
        run = Run(conn, drain(port, clock), clock)
        run.feed(events)
        listed = InboxReads(SCHEMA).list_entries(conn, "ana").entries
        assert [e.excerpt for e in listed] == ["the secret plan"]
        # Deleted before the mail goes (it is due 180 s after the comment).
        log.tick(30).add("comment.deleted", {"comment": "c1"}, actor="ben")
        run.feed(parsed(log)[-1:])
        run.until(clock.now + timedelta(hours=1))
    finally:
        next(server, None)
    listed = InboxReads(SCHEMA).list_entries(conn, "ana").entries
    assert [e.excerpt for e in listed] == [None]
    assert isinstance(handler, Recorder) and len(handler.received) == 1
    content = handler.received[0][2].decode("ascii", "replace")
    assert "secret" not in content and "comment-c1" not in content
    assert "Ben mentioned you on p1" in content


class Held:
    """A fan-out that has not run yet: the emit wrote the outbox row, nothing more."""

    on_written: Any = None

    def drain(self, conn: Conn) -> int:
        return 0


def test_n8_access_removed_between_the_event_and_the_fan_out_reaches_no_one(conn: Conn) -> None:
    """The fan-out checks access when it runs (N7: "now"), not at the event: ben, removed
    from the only group that lets him read the page after the edit was emitted and before
    the fan-out round, gets no entry; ana, still a reader, gets hers."""
    log = WikiLog().user("ana").user("ben")
    log.page("p1", "ops/runbook", actor="cy").watch("p1", "ana", "ben")
    log.edit("p1", actor="cy")
    log.add("group.member_removed", {"group": "readers", "user": "ben"})
    wiki = ReferenceWiki(HOST_SCHEMA)
    held = WikiLoader(wiki, Held(), schema=SCHEMA)  # type: ignore[arg-type]
    for event in parsed(log):
        held.feed(conn, event)
    written: list[Written] = []

    def keep(rows: Sequence[Written]) -> None:
        written.extend(rows)

    fanout = InboxFanOut(wiki, schema=SCHEMA)
    fanout.on_written = keep
    fanout.drain(conn)
    assert [(w.user_id, w.category) for w in written] == [("ana", "watched_page")]


def test_forget_person_removes_the_person_s_entries_and_no_one_else_s(conn: Conn) -> None:
    log = WikiLog().user("ana").user("ben")
    log.page("p1", "ops/runbook", actor="cy").watch("p1", "ana", "ben")
    log.edit("p1", actor="cy").comment("c1", "p1", "cy", mentions=["ana", "ben"])
    load = loader()
    for event in parsed(log):
        load.feed(conn, event)

    def entries(person: str) -> int:
        row = conn.execute(
            f"SELECT count(*) FROM {SCHEMA}.inbox_entries WHERE user_id = %s", [person]
        ).fetchone()
        assert row is not None
        return int(row[0])

    assert (entries("ana"), entries("ben")) == (2, 2)
    forget_person(conn, "ana", SCHEMA)
    assert (entries("ana"), entries("ben")) == (0, 2)
    assert InboxReads(SCHEMA).list_entries(conn, "ana").entries == ()
