"""One firing category's decisions applied as columns (`notify_core.inbox.columns`) give what
the plain loop over the decisions gives: the same lines, entries, unread keys and mails, with
schedules, zones, choices, reads and coalescing mixed (N10-N12, E1-E4)."""

from __future__ import annotations

import json
from datetime import timedelta

from hypothesis import given, settings
from hypothesis import strategies as st
from inbox_log import WikiLog
from test_inbox_replay import PAGES, PEOPLE, wiki_logs

from notify_core.events.log import parse_event
from notify_core.inbox.memory.entries import EntryMemory
from notify_core.inbox.memory.wiki import WikiMemory
from notify_core.inbox.pipeline import InboxPipeline
from notify_core.inbox.ports import WikiUser

SCHEDULES = (
    {"email_schedule": "immediate"},
    {"email_schedule": "hourly"},
    {"email_schedule": "daily", "daily_hour": 9},
    {"email_schedule": "daily", "daily_hour": 18, "time_zone": "Asia/Tokyo"},
)


class Plain(InboxPipeline):
    """The inbox path with the loop over the decisions only."""

    columns = False


@st.composite
def scheduled_logs(draw: st.DrawFn) -> WikiLog:
    """Five people (most verified, some with choices) watching three pages, then schedule
    changes, edits, views and choices mixed: edits reach watchers of one schedule or of
    several, with new and unread entries side by side; now and then any wiki log first."""
    log = draw(wiki_logs()) if draw(st.integers(0, 3)) == 0 else WikiLog()
    for person in PEOPLE:
        log.user(person, verified=draw(st.sampled_from([True, True, True, False])))
    for page, path in PAGES.items():
        log.page(page, path, actor="ana")
        log.watch(page, *draw(st.lists(st.sampled_from(PEOPLE), unique=True)))
    for _ in range(draw(st.integers(1, 30))):
        person = draw(st.sampled_from(PEOPLE))
        page = draw(st.sampled_from(list(PAGES)))
        what = draw(st.sampled_from(["schedule", "edit", "edit", "edit", "view", "watch", "pref"]))
        if what == "schedule":
            payload: dict[str, object] = {"user": person, **draw(st.sampled_from(SCHEDULES))}
            log.tick().add("user.updated", payload)
        elif what == "edit":
            log.edit(page, actor=person)
        elif what == "view":
            log.tick().add("page.viewed", {"page": page}, audience=person)
        elif what == "watch":
            log.watch(page, person)
        else:
            log.add(
                "inbox_pref.updated",
                {
                    "category": "watched_page",
                    "channel": draw(st.sampled_from(["in_app", "email"])),
                    "enabled": draw(st.booleans()),
                },
                audience=person,
            )
        log.tick(draw(st.sampled_from([1, 60, 3600])))
    return log


def _store(pipeline: InboxPipeline) -> tuple[object, ...]:
    store = pipeline.entries
    assert isinstance(store, EntryMemory)
    return (
        store.entries,
        list(store.entries),
        store.unread_keys,
        store.counters,
        store.next_due(),
    )


@settings(max_examples=max(50, settings.default.max_examples // 2))
@given(scheduled_logs())
def test_columns_give_the_lines_entries_and_mails_of_the_plain_loop(log: WikiLog) -> None:
    """Event by event, the same lines and the same store; then the same mails."""
    columns, plain = InboxPipeline(), Plain()
    for text in log.lines():
        event = parse_event(json.loads(text))
        assert columns.handle(event) == plain.handle(event)
        assert _store(columns) == _store(plain)
    for hours in (1, 24, 72):
        end = log.now + timedelta(hours=hours)
        assert columns.drain(end) == plain.drain(end)


class CountingWiki(WikiMemory):
    """A host without the in-memory wiki's cache: every person is read by `user` (counted)."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[str] = []

    def __getattribute__(self, name: str) -> object:
        if name == "users_cached":
            raise AttributeError(name)
        return super().__getattribute__(name)

    def user(self, user: str) -> WikiUser | None:
        self.asked.append(user)
        return super().user(user)


@settings(max_examples=max(30, settings.default.max_examples // 4))
@given(scheduled_logs())
def test_a_host_without_the_cache_is_asked_for_the_people_the_plain_loop_asks(
    log: WikiLog,
) -> None:
    """The columns ask a host's `user` of no more people than the loop per person: those
    whose email starts (and the events' own users), in the same order."""
    columns_wiki, plain_wiki = CountingWiki(), CountingWiki()
    columns, plain = InboxPipeline(wiki=columns_wiki), Plain(wiki=plain_wiki)
    for text in log.lines():
        event = parse_event(json.loads(text))
        assert columns.handle(event) == plain.handle(event)
        assert columns_wiki.asked == plain_wiki.asked
