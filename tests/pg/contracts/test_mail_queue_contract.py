"""The mail queue's contract (E1-E5), on the in-memory twin and on PostgreSQL.

The queue is the entries' pending emails: in memory the due heap of `EntryMemory` (`due`,
`next_due`) drained by the replay's `drain_mails`; on PostgreSQL the rows the drain claims
under a lease (`MailDrain`, `mail_claim`, `mail_next_due`) and marks. Each test feeds one wiki
log to a twin (`wikitwins`) and drains it at given instants: both must take the same entries
at the same instants, group them into the same mails, skip the same ones for the same reason,
and leave the same states and next due time. Sending itself (SMTP, leases that lapse, retries
after a failed send, E5) exists on PostgreSQL alone and is tested in
tests/pg/mail/test_mail_drain_pg.py; whole logs are compared by the parity test.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from inbox_log import WikiLog
from wikitwins import TWINS, InboxTwin, Mail, twin_fixture

DELAY = timedelta(seconds=180)


@pytest.fixture(params=TWINS)
def twin(request: pytest.FixtureRequest) -> Iterator[InboxTwin]:
    yield from twin_fixture(request)


def watched(*people: str) -> WikiLog:
    """``people`` watch p1 (ben is the editor), mail configured, a 180 s delay."""
    log = WikiLog(mail=True).user("ben")
    for person in people:
        log.user(person)
    return log.page("p1", "ops/runbook").watch("p1", *people)


def emails(twin: InboxTwin) -> list[tuple[str, str, str]]:
    return [(r.name, r.email, r.category) for r in twin.rows()]


def test_e4_nothing_is_taken_before_its_due_time_and_everything_at_it(twin: InboxTwin) -> None:
    """E2, E4: an entry due at ``t + 180 s`` is not taken a second before, and is taken at
    that instant (``at or before``), as one ``single`` mail; then nothing is due."""
    log = watched("ana").edit("p1")
    due = log.now + DELAY
    twin.feed(log)
    assert twin.next_due() == due
    assert twin.drain(due - timedelta(seconds=1)) == []
    assert emails(twin) == [("ana:watched_page:p1:1", "pending", "watched_page")]
    assert twin.drain(due) == [
        Mail("ana", "s1", "sent", None, "single", 0, ("ana:watched_page:p1:1",))
    ]
    assert emails(twin) == [("ana:watched_page:p1:1", "sent", "watched_page")]
    assert twin.next_due() is None


def test_e4_a_drain_takes_each_entry_once(twin: InboxTwin) -> None:
    """E4, E5: what a drain took (sent, or claimed) is not due again, at the same instant or
    later; a coalesce after ``sent`` stays quiet (E1)."""
    log = watched("ana").edit("p1")
    at = log.now + DELAY
    twin.feed(log)
    assert len(twin.drain(at)) == 1
    assert twin.drain(at) == []
    twin.feed(log.tick(600).edit("p1"))
    assert twin.next_due() is None
    assert twin.drain(log.now + timedelta(days=1)) == []
    assert [(r.count, r.email) for r in twin.rows()] == [(2, "sent")]


def test_e4_one_mail_per_person_and_site_a_digest_latest_first(twin: InboxTwin) -> None:
    """E4: every entry of a person due at the drain goes in one mail (``digest`` for several,
    latest first); each person gets their own."""
    log = watched("ana", "cy").page("p2", "ops/other").watch("p2", "ana")
    log.edit("p1").edit("p2")
    twin.feed(log)
    assert twin.drain(log.now + DELAY) == [
        Mail("ana", "s1", "sent", None, "digest", 0,
             ("ana:watched_page:p2:1", "ana:watched_page:p1:1")),
        Mail("cy", "s1", "sent", None, "single", 0, ("cy:watched_page:p1:1",)),
    ]  # fmt: skip
    assert {r.email for r in twin.rows()} == {"sent"}


def test_e4_entries_due_later_wait_for_their_own_drain(twin: InboxTwin) -> None:
    """E4: a drain takes only what is due at its instant; an entry made later waits."""
    log = watched("ana").page("p2", "ops/other").watch("p2", "ana").edit("p1")
    first = log.now + DELAY
    log.tick(120).edit("p2")
    second = log.now + DELAY
    twin.feed(log)
    assert [m.entries for m in twin.drain(first)] == [("ana:watched_page:p1:1",)]
    assert twin.next_due() == second
    assert [m.entries for m in twin.drain(second)] == [("ana:watched_page:p2:1",)]


def test_e4_a_switched_off_site_skips_its_entries(twin: InboxTwin) -> None:
    """E4: entries of a site switched off after the edit are ``skipped`` (``site_off``)."""
    log = watched("ana").edit("p1").add("site.updated", {"site": "s1", "notifications": False})
    twin.feed(log)
    assert twin.drain(log.now + DELAY) == [
        Mail("ana", "s1", "skipped", "site_off", None, 0, ("ana:watched_page:p1:1",))
    ]
    assert emails(twin) == [("ana:watched_page:p1:1", "skipped", "watched_page")]


def test_e4_a_person_deactivated_after_the_edit_is_skipped_as_inactive(twin: InboxTwin) -> None:
    """E4 over N7: the person is checked again at the drain; the others' mails still go."""
    log = watched("ana", "cy").edit("p1").tick().add("user.updated", {"user": "cy",
                                                                      "active": False})  # fmt: skip
    twin.feed(log)
    assert twin.drain(log.now + DELAY) == [
        Mail("ana", "s1", "sent", None, "single", 0, ("ana:watched_page:p1:1",)),
        Mail("cy", "s1", "skipped", "inactive", None, 0, ("cy:watched_page:p1:1",)),
    ]


def test_e4_access_lost_before_the_drain_is_no_access(twin: InboxTwin) -> None:
    """E4 over N8: removed from the group that lets them read, the person's entry is
    ``no_access`` at the drain."""
    log = watched("ana", "cy").edit("p1")
    log.tick().add("group.member_removed", {"group": "readers", "user": "cy"})
    twin.feed(log)
    assert [(m.recipient, m.outcome, m.reason) for m in twin.drain(log.now + DELAY)] == [
        ("ana", "sent", None),
        ("cy", "skipped", "no_access"),
    ]


def test_e4_n4_email_turned_off_after_the_edit_is_preference(twin: InboxTwin) -> None:
    """E4: a person who stopped all email after the edit gets a ``preference`` skip (N4: so
    does everyone once mail is no longer configured)."""
    log = watched("ana", "cy").edit("p1").tick()
    log.add("inbox_pref.stop_all_email", {}, audience="ana")
    twin.feed(log)
    at = log.now + DELAY
    assert [(m.recipient, m.outcome, m.reason) for m in twin.drain(at)] == [
        ("ana", "skipped", "preference"),
        ("cy", "sent", None),
    ]
    twin.feed(log.edit("p1").add("notifications.settings", {"mail_configured": False}))
    assert twin.drain(log.now + DELAY) == []  # both entries closed: a coalesce stays quiet


def test_e1_a_read_entry_is_not_in_the_queue(twin: InboxTwin) -> None:
    """E1: reading before the drain cancels the email: the queue holds only the other's."""
    log = watched("ana", "cy").edit("p1").tick().add("page.viewed", {"page": "p1"},
                                                     audience="ana")  # fmt: skip
    twin.feed(log)
    assert [m.recipient for m in twin.drain(log.now + DELAY)] == ["cy"]


def test_e2_e3_a_daily_person_waits_for_the_slot_until_the_schedule_changes(
    twin: InboxTwin,
) -> None:
    """E2: a ``daily`` person's entry is due at their hour (plus their offset), not after the
    delay; E3: turning back to ``immediate`` moves it to ``now + delay``."""
    log = watched("ana").add("user.updated", {"user": "ana", "email_schedule": "daily",
                                              "daily_hour": 7})  # fmt: skip
    log.edit("p1")
    twin.feed(log)
    (row,) = twin.rows()
    assert row.email_after is not None and row.email_after > log.now + timedelta(hours=12)
    assert twin.drain(log.now + DELAY) == []
    log.tick().add("user.updated", {"user": "ana", "email_schedule": "immediate"})
    twin.feed(log)
    assert twin.next_due() == log.now + DELAY
    assert [m.outcome for m in twin.drain(log.now + DELAY)] == ["sent"]
