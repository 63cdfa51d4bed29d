"""The inbox store's contract (N5-N12, H1-H2, E1-E3), on the in-memory twin and on PostgreSQL.

Each test feeds one wiki log (`inbox_log.WikiLog`) to a twin (`wikitwins`): in memory the
replay's `InboxPipeline` over `EntryMemory` and `WikiMemory`; on PostgreSQL the reference
host's wiki, ``emit`` and the fan-out round, and `InboxReads`. Both must answer the same
entries (saves, coalescing keys, counts, email states and due times), the same unread counts
and the same reads. Whole logs are compared by the parity test
(tests/pg/inbox/test_inbox_parity.py); these are the port's cases one by one.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from inbox_log import WikiLog
from wikitwins import TWINS, InboxTwin, Row, twin_fixture

DELAY = timedelta(seconds=180)


@pytest.fixture(params=TWINS)
def twin(request: pytest.FixtureRequest) -> Iterator[InboxTwin]:
    yield from twin_fixture(request)


def watched(mail: bool = False) -> WikiLog:
    """ana and cy watch p1, which ben edits (the actor: N7)."""
    log = WikiLog(mail=mail).user("ana").user("ben").user("cy")
    return log.page("p1", "ops/runbook").watch("p1", "ana", "cy")


def brief(rows: list[Row]) -> list[tuple[object, ...]]:
    return [(r.name, r.count, r.variants, r.read) for r in rows]


def test_n10_n7_edits_coalesce_into_one_unread_entry_per_person_and_key(twin: InboxTwin) -> None:
    """N10: three edits give each watcher one entry of count 3 on ``watched_page:p1``; N7:
    the actor gets none."""
    log = watched().edit("p1").edit("p1").edit("p1", variant="published")
    twin.feed(log)
    both = ("edited", "published")
    assert [
        (r.name, r.person, r.category, r.group_key, r.count, r.variants) for r in twin.rows()
    ] == [
        ("ana:watched_page:p1:1", "ana", "watched_page", "watched_page:p1", 3, both),
        ("cy:watched_page:p1:1", "cy", "watched_page", "watched_page:p1", 3, both),
    ]
    assert [twin.unread(p) for p in ("ana", "ben", "cy")] == [1, 0, 1]


def test_n10_keys_are_per_category_and_target(twin: InboxTwin) -> None:
    """N10: an edit and a comment on one page, and an edit of another, are three keys."""
    log = watched().page("p2", "ops/other").watch("p2", "ana")
    log.edit("p1").comment("c1", "p1", "ben").edit("p2").edit("p1")
    twin.feed(log)
    ana = [(r.group_key, r.count) for r in twin.rows() if r.person == "ana"]
    assert ana == [
        ("watched_comment:p1", 1),
        ("watched_page:p1", 2),
        ("watched_page:p2", 1),
    ]
    assert twin.unread("ana") == 3


def test_n10_h2_a_read_entry_gives_up_its_key_and_the_next_event_starts_a_new_one(
    twin: InboxTwin,
) -> None:
    """H2: a page view reads the watched_page entry; the next edit starts entry 2 (N10)."""
    log = watched().edit("p1").edit("p1")
    log.tick().add("page.viewed", {"page": "p1"}, audience="ana")
    log.edit("p1")
    twin.feed(log)
    assert brief(twin.rows()) == [
        ("ana:watched_page:p1:1", 2, ("edited",), True),
        ("ana:watched_page:p1:2", 1, ("edited",), False),
        ("cy:watched_page:p1:1", 3, ("edited",), False),
    ]
    assert [twin.unread("ana"), twin.unread("cy")] == [1, 1]


def test_h2_the_talk_tab_reads_comment_entries_only(twin: InboxTwin) -> None:
    """H2: a talk-tab view reads the comment categories, not the page's edits."""
    log = watched().edit("p1").comment("c1", "p1", "ben")
    log.tick().add("page.viewed", {"page": "p1", "talk": True}, audience="ana")
    twin.feed(log)
    ana = [(r.category, r.read) for r in twin.rows() if r.person == "ana"]
    assert ana == [("watched_page_comment", True), ("watched_page", False)]
    assert twin.unread("ana") == 1


def test_h2_reads_by_id_category_and_page_touch_only_ones_own_entries(twin: InboxTwin) -> None:
    """H2: ``inbox.read`` by ids, by categories, by page, or all; another's ids are not
    reached."""
    log = watched().page("p2", "ops/other").watch("p2", "ana", "cy")
    log.edit("p1").edit("p2").comment("c1", "p1", "ben")
    log.tick().add("inbox.read", {"ids": ["ana:watched_page:p1:1", "cy:watched_page:p2:1"]},
                   audience="ana")  # fmt: skip
    twin.feed(log)
    assert [twin.unread("ana"), twin.unread("cy")] == [2, 3]
    log.tick().add("inbox.read", {"categories": ["watched_page_comment"]}, audience="cy")
    log.tick().add("inbox.read", {"page": "p2"}, audience="ana")
    twin.feed(log)
    assert [twin.unread("ana"), twin.unread("cy")] == [1, 2]
    log.tick().add("inbox.read", {}, audience="cy")
    twin.feed(log)
    assert [twin.unread("ana"), twin.unread("cy")] == [1, 0]
    assert [r.name for r in twin.rows() if not r.read] == ["ana:watched_comment:p1:1"]


def test_h2_a_dismissal_deletes_ones_own_entry_and_frees_its_key(twin: InboxTwin) -> None:
    """H2: ``inbox.dismissed`` of another's entry does nothing; of one's own deletes it, and
    the next edit starts a new entry (N10)."""
    log = watched().edit("p1")
    log.tick().add("inbox.dismissed", {"id": "cy:watched_page:p1:1"}, audience="ana")
    log.tick().add("inbox.dismissed", {"id": "ana:watched_page:p1:1"}, audience="ana")
    twin.feed(log)
    assert [r.name for r in twin.rows()] == ["cy:watched_page:p1:1"]
    assert twin.unread("ana") == 0
    twin.feed(log.edit("p1"))
    assert brief(twin.rows()) == [
        ("ana:watched_page:p1:2", 1, ("edited",), False),
        ("cy:watched_page:p1:1", 2, ("edited",), False),
    ]


def test_n12_e1_with_mail_configured_a_new_entry_is_pending_after_the_delay(
    twin: InboxTwin,
) -> None:
    """N12, E1, E2: email on by default, ``pending`` at ``now + email_delay``; a coalesce keeps
    the due time (the event joins the mail already due); without mail configured, ``none``."""
    log = watched(mail=True).edit("p1")
    first = log.now
    log.edit("p1")
    twin.feed(log)
    assert {(r.person, r.email, r.email_after, r.count) for r in twin.rows()} == {
        ("ana", "pending", first + DELAY, 2),
        ("cy", "pending", first + DELAY, 2),
    }
    assert twin.next_due() == first + DELAY


def test_n4_without_mail_configured_entries_have_no_email(twin: InboxTwin) -> None:
    """N4: mail never configured: in-app only, nothing due."""
    twin.feed(watched(mail=False).edit("p1"))
    assert {(r.email, r.email_after, r.in_app) for r in twin.rows()} == {("none", None, True)}
    assert twin.next_due() is None


def test_e1_reading_an_entry_before_its_email_goes_cancels_it(twin: InboxTwin) -> None:
    """E1: read before the drain, the pending email is ``skipped``; the other's stays due."""
    log = watched(mail=True).edit("p1")
    log.tick().add("page.viewed", {"page": "p1"}, audience="ana")
    twin.feed(log)
    assert [(r.person, r.email, r.read) for r in twin.rows()] == [
        ("ana", "skipped", True),
        ("cy", "pending", False),
    ]


def test_n12_an_email_only_entry_is_in_no_inbox_but_a_view_reads_it(twin: InboxTwin) -> None:
    """N12, H1, H2: with in_app off an entry is email-only: no unread count, not reached by an
    inbox read, read (and its email cancelled) by a page view."""
    log = watched(mail=True)
    log.add("inbox_pref.updated", {"category": "watched_page", "channel": "in_app",
                                   "enabled": False}, audience="ana")  # fmt: skip
    log.edit("p1").tick().add("inbox.read", {}, audience="ana")
    twin.feed(log)
    ana = [(r.in_app, r.email, r.read) for r in twin.rows() if r.person == "ana"]
    assert ana == [(False, "pending", False)]
    assert twin.unread("ana") == 0
    twin.feed(log.tick().add("page.viewed", {"page": "p1"}, audience="ana"))
    ana = [(r.in_app, r.email, r.read) for r in twin.rows() if r.person == "ana"]
    assert ana == [(False, "skipped", True)]


def test_n5_h1_a_switched_off_site_writes_no_entry_and_hides_its_own(twin: InboxTwin) -> None:
    """N5: no entry while the site is off; H1: entries written before are kept but not
    counted while it is off."""
    log = watched().edit("p1")
    log.add("site.updated", {"site": "s1", "notifications": False})
    log.edit("p1")
    twin.feed(log)
    assert brief(twin.rows()) == [
        ("ana:watched_page:p1:1", 1, ("edited",), False),
        ("cy:watched_page:p1:1", 1, ("edited",), False),
    ]
    assert twin.unread("ana") == 0
    twin.feed(log.add("site.updated", {"site": "s1", "notifications": True}))
    assert twin.unread("ana") == 1


def test_h1_each_site_counts_its_own_entries(twin: InboxTwin) -> None:
    """H1: the inbox of a site counts its entries (and those with no site), not another's."""
    log = watched().add("site.created", {"site": "s2", "host": "two.example.org", "https": True})
    log.add("page.created", {"page": "q1", "site": "s2", "path": "a", "locale": "en",
                             "title": "q1"}, actor="ben")  # fmt: skip
    log.watch("q1", "ana").edit("p1").edit("q1")
    twin.feed(log)
    assert [twin.unread("ana", "s1"), twin.unread("ana", "s2"), twin.unread("cy", "s2")] == [
        1,
        1,
        0,
    ]


def test_n2_n6_opted_in_people_get_page_created_and_an_import_reaches_no_one(
    twin: InboxTwin,
) -> None:
    """N2: ``page_created`` is off by default and reaches those who turned it on; N6: an
    import is not an origin it fires for."""
    log = WikiLog().user("ana").user("ben").user("cy")
    log.add("inbox_pref.updated", {"category": "page_created", "channel": "in_app",
                                   "enabled": True}, audience="cy")  # fmt: skip
    log.tick().page("p1", "ops/new").tick()
    imported = {"page": "p2", "site": "s1", "path": "ops/imported", "locale": "en", "title": "I"}
    log.add("page.created", imported, origin="import")
    twin.feed(log)
    assert [(r.name, r.in_app, r.email) for r in twin.rows()] == [
        ("cy:page_created:p1:1", True, "none")
    ]


def test_n9_a_deletion_reaches_the_watchers_of_the_moment(twin: InboxTwin) -> None:
    """N9: the deletion's entry goes to who watched the page when it was deleted; the edit
    after a restore reaches no one (the watch rows went with the page)."""
    log = watched().tick().add("page.deleted", {"page": "p1"}, actor="ben")
    log.tick().add("page.restored", {"page": "p1"}, actor="ben").edit("p1")
    twin.feed(log)
    assert [(r.name, r.variants) for r in twin.rows()] == [
        ("ana:watched_page:p1:1", ("deleted",)),
        ("cy:watched_page:p1:1", ("deleted",)),
    ]


def test_n1_n10_one_entry_per_person_and_event_the_category_of_highest_priority(
    twin: InboxTwin,
) -> None:
    """N1, N10: a reply reaches the parent's author as ``comment_reply`` rather than as a
    watcher, a mention as ``mention``; the comments a watcher is neither replied to nor
    mentioned in coalesce on ``watched_comment:<page>``; the author of a comment gets none."""
    log = watched().user("dee")
    log.comment("c1", "p1", "ana").comment("c2", "p1", "cy", parent="c1")
    log.comment("c3", "p1", "ben", mentions=["dee", "ana"])
    twin.feed(log)
    assert [(r.name, r.count) for r in twin.rows()] == [
        ("ana:mention:c3:1", 1),
        ("ana:reply:c1:1", 1),
        ("cy:watched_comment:p1:1", 2),
        ("dee:mention:c3:1", 1),
    ]
