"""The batch methods of the in-memory entry store and the port helpers that call them.

`EntryMemory.save_many`, `next_ids` and `unread_many` must answer as `save`, `next_id` and
`unread` one by one (N10: one unread entry per person and key; E4: the due emails), and the
helpers of `notify_core.inbox.ports` (`save_all`, `take_ids`, `unread_all`) must give the same
with a store that has only the protocol's methods, the inbox path of a replay included.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import attrs
from hypothesis import given
from hypothesis import strategies as st
from inbox_log import WikiLog
from test_inbox_replay import HEAVY, wiki_logs
from test_inbox_replay import PEOPLE as REPLAY_PEOPLE

from notify_core.events.log import parse_event
from notify_core.inbox import EmailState, EntryState
from notify_core.inbox.memory.entries import EntryMemory
from notify_core.inbox.memory.wiki import WikiMemory
from notify_core.inbox.pipeline import InboxPipeline
from notify_core.inbox.ports import (
    Entry,
    EntryTarget,
    people_facts,
    save_all,
    take_ids,
    unread_all,
)

T0 = datetime(2026, 11, 30, 8, 0, tzinfo=UTC)
PEOPLE = ("ana", "ben", "cy")
KEYS = ("watched_page:p1", "mention:c1", "page_created:p2")
TARGET = EntryTarget(site="s1", page="p1")


class OneByOne:
    """An entry store with only the protocol's methods (no batch ones), over `EntryMemory`."""

    def __init__(self, store: EntryMemory) -> None:
        self._store = store

    def unread(self, person: str, group_key: str) -> Entry | None:
        """`EntryMemory.unread`."""
        return self._store.unread(person, group_key)

    def next_id(self, person: str, group_key: str) -> str:
        """`EntryMemory.next_id`."""
        return self._store.next_id(person, group_key)

    def save(self, entry: Entry) -> None:
        """`EntryMemory.save`."""
        self._store.save(entry)

    def unread_of(self, person: str) -> Sequence[Entry]:
        """`EntryMemory.unread_of`."""
        return self._store.unread_of(person)

    def get(self, entry: str) -> Entry | None:
        """`EntryMemory.get`."""
        return self._store.get(entry)

    def dismiss(self, entry: str) -> None:
        """`EntryMemory.dismiss`."""
        self._store.dismiss(entry)

    def next_due(self) -> datetime | None:
        """`EntryMemory.next_due`."""
        return self._store.next_due()

    def due(self, until: datetime) -> Sequence[Entry]:
        """`EntryMemory.due`."""
        return self._store.due(until)


def edited_state(
    draw: st.DrawFn, count: int, email: EmailState, due: datetime | None
) -> EntryState:
    """The state of an entry of ``count`` edits of one page, read or not."""
    return EntryState(
        count=count,
        variant="edited",
        variants=("edited",),
        email=email,
        email_after=due,
        last_event="1",
        in_app=True,
        updated_at=T0,
        read=draw(st.booleans()),
    )


@st.composite
def entry_values(draw: st.DrawFn) -> Entry:
    """An entry of a few ids, people and keys, in any email state, read or not."""
    email = draw(st.sampled_from(list(EmailState)))
    due = None
    if email in (EmailState.PENDING, EmailState.SENDING) and draw(st.booleans()):
        due = T0 + timedelta(minutes=draw(st.integers(0, 5)))
    state = edited_state(draw, 1, email, due)
    person = draw(st.sampled_from(PEOPLE))
    key = draw(st.sampled_from(KEYS))
    return Entry(
        id=f"{person}:{key}:{draw(st.integers(1, 2))}",
        person=person,
        category=key.split(":")[0],
        group_key=key,
        state=state,
        created_at=T0,
        target=TARGET,
    )


def observed(store: EntryMemory) -> tuple[object, ...]:
    """What a store answers: entries, unread ones, the next due time and the due entries."""
    unread = {(p, k): store.unread(p, k) for p in PEOPLE for k in KEYS}
    return (
        dict(store.entries),
        unread,
        {p: store.unread_of(p) for p in PEOPLE},
        store.next_due(),
        list(store.due(T0 + timedelta(minutes=3))),
        list(store.due(T0 + timedelta(minutes=10))),
    )


@given(
    st.lists(entry_values(), max_size=8),
    st.lists(st.lists(entry_values(), max_size=12), max_size=4),
)
def test_n10_e4_save_many_equals_saves_one_by_one(
    before: list[Entry], batches: list[list[Entry]]
) -> None:
    """Batches (into an empty or a filled due heap) leave the store as single saves do."""
    one, many, helper = EntryMemory(), EntryMemory(), EntryMemory()
    for entry in before:
        for store in (one, many, helper):
            store.save(entry)
    for batch in batches:
        for entry in batch:
            one.save(entry)
        many.save_many(batch)
        save_all(OneByOne(helper), batch)
    assert observed(many) == observed(one) == observed(helper)


@given(
    st.lists(st.tuples(st.sampled_from(PEOPLE), st.sampled_from(KEYS)), max_size=6),
    st.sampled_from(KEYS),
    st.lists(st.sampled_from(PEOPLE), max_size=6),
)
def test_next_ids_equal_next_id_in_turn(
    earlier: list[tuple[str, str]], key: str, people: list[str]
) -> None:
    """Ids of a batch (a person listed twice included) are those of `next_id` in turn."""
    one, many, helper = EntryMemory(), EntryMemory(), EntryMemory()
    for person, earlier_key in earlier:
        for store in (one, many, helper):
            store.next_id(person, earlier_key)
    expected = [one.next_id(person, key) for person in people]
    assert many.next_ids(key, people) == expected
    assert list(take_ids(OneByOne(helper), key, people)) == expected
    assert many.counters == one.counters == helper.counters
    # And the next ids go on from there, whichever way they were taken.
    following = {store.next_id("ana", key) for store in (one, many, helper)}
    assert len(following) == 1


@given(st.lists(entry_values(), max_size=10), st.sampled_from(KEYS))
def test_unread_many_equals_unread(saved: list[Entry], key: str) -> None:
    """Each person's unread entry of a key, a person without any entry too."""
    store = EntryMemory()
    store.save_many(saved)
    people = [*PEOPLE, "nobody", "ana"]
    expected = [store.unread(person, key) for person in people]
    assert store.unread_many(key, people) == expected
    assert list(unread_all(OneByOne(store), key, people)) == expected


def test_a_new_entry_ids_start_at_one_and_count_per_person_and_key() -> None:
    """``<person>:<key>:<n>``: the first entry of a key is 1, the next 2, per person."""
    store = EntryMemory()
    assert store.next_ids("k", ["ana", "ben", "ana"]) == ["ana:k:1", "ben:k:1", "ana:k:2"]
    assert store.next_ids("j", ["ana"]) == ["ana:j:1"]
    assert store.next_id("ben", "k") == "ben:k:2"


@HEAVY
@given(wiki_logs())
def test_the_inbox_path_is_the_same_on_a_store_without_batch_methods(log: WikiLog) -> None:
    """A host's store with only the protocol's methods gives the lines and mails of the
    in-memory store's batch methods (N10-N12, E4)."""
    batch, single = InboxPipeline(), InboxPipeline(entries=OneByOne(EntryMemory()))
    for text in log.lines():
        event = parse_event(json.loads(text))
        assert batch.handle(event) == single.handle(event)
    end = log.now + timedelta(days=2)
    assert batch.drain(end) == single.drain(end)


@attrs.define
class PeopleOnly(WikiMemory):
    """The in-memory wiki without ``people_lookup``: `people_facts` asks `WikiMemory.people`."""

    people_lookup = None


@HEAVY
@given(wiki_logs(), st.lists(st.sampled_from([*REPLAY_PEOPLE, "nobody"])))
def test_people_facts_hold_each_known_persons_facts_with_or_without_a_lookup(
    log: WikiLog, ids: list[str]
) -> None:
    """`people_facts` (a fan-out's read of the candidates) gives each person among ``ids``
    the facts of `WikiMemory.people`, whether the host has ``people_lookup`` or not, and the
    inbox path gives the same lines either way."""
    fast, plain = InboxPipeline(), InboxPipeline(wiki=PeopleOnly())
    for text in log.lines():
        event = parse_event(json.loads(text))
        assert fast.handle(event) == plain.handle(event)
        expected = plain.wiki.people(ids)
        for wiki in (fast.wiki, plain.wiki):
            found = people_facts(wiki, ids)
            assert {person: found.get(person) for person in expected} == expected
            assert all(found.get(person) is None for person in ids if person not in expected)


class DuplicatingDue:
    """The due heap as it was: one item per save of a pending entry, de-duplicated on read;
    the reference the live-item heap must release the same due work as."""

    def __init__(self) -> None:
        self.entries: dict[str, Entry] = {}
        self.heap: list[tuple[datetime, str]] = []

    def save(self, entry: Entry) -> None:
        """Store the entry; a pending one with a due time pushes an item."""
        self.entries[entry.id] = entry
        if entry.state.email is EmailState.PENDING and entry.state.email_after is not None:
            heapq.heappush(self.heap, (entry.state.email_after, entry.id))

    def dismiss(self, entry: str) -> None:
        """Forget the entry (its items go stale)."""
        self.entries.pop(entry, None)

    def _pending_at(self, at: datetime, entry_id: str) -> Entry | None:
        entry = self.entries.get(entry_id)
        if entry is None or entry.state.email is not EmailState.PENDING:
            return None
        return entry if entry.state.email_after == at else None

    def next_due(self) -> datetime | None:
        """The earliest due time of a pending email."""
        while self.heap and self._pending_at(*self.heap[0]) is None:
            heapq.heappop(self.heap)
        return self.heap[0][0] if self.heap else None

    def due(self, until: datetime) -> list[Entry]:
        """Take the pending entries due at or before ``until``, each once."""
        out: list[Entry] = []
        seen: set[str] = set()
        while self.heap and self.heap[0][0] <= until:
            at, entry_id = heapq.heappop(self.heap)
            entry = self._pending_at(at, entry_id)
            if entry is not None and entry_id not in seen:
                seen.add(entry_id)
                out.append(entry)
        return out


@st.composite
def due_entries(draw: st.DrawFn) -> Entry:
    """An entry of one of three ids, mostly pending at one of four due times: saves of one
    entry at one time (coalescing) and at another (moved) come often."""
    email = draw(st.sampled_from([EmailState.PENDING] * 3 + [EmailState.SENT, EmailState.NONE]))
    minutes = draw(st.one_of(st.integers(0, 3), st.none()))
    due = (
        None
        if email is not EmailState.PENDING or minutes is None
        else T0 + timedelta(minutes=minutes)
    )
    person = draw(st.sampled_from(PEOPLE))
    return Entry(
        id=f"{person}:watched_page:p1:1",
        person=person,
        category="watched_page",
        group_key="watched_page:p1",
        state=edited_state(draw, draw(st.integers(1, 3)), email, due),
        created_at=T0,
        target=TARGET,
    )


due_steps = st.lists(
    st.one_of(
        st.tuples(st.just("save"), st.lists(due_entries(), min_size=1, max_size=6)),
        st.tuples(st.just("due"), st.integers(-1, 4)),
        st.tuples(st.just("next"), st.none()),
        st.tuples(st.just("dismiss"), due_entries()),
    ),
    max_size=40,
)


class Compacting(EntryMemory):
    """The store with no slack: its heap is rebuilt as soon as stale items outnumber live ones."""

    compact_slack = 0


@given(due_steps)
def test_e4_the_due_heap_releases_the_work_of_one_item_per_save(steps: list[Any]) -> None:
    """E4: the store releases the due emails a heap of one item per save releases (same
    entries, same order, same next due time), whatever saves, coalescing saves at the same
    time, moves to another time, reads, dismissals and takes come in between, its heap rebuilt
    whenever stale items outnumber the live ones or not."""
    stores, reference = (EntryMemory(), Compacting()), DuplicatingDue()
    for op, arg in steps:
        if op == "save":
            for store in stores:
                store.save_many(arg)
            for entry in arg:
                reference.save(entry)
        elif op == "dismiss":
            for store in stores:
                store.dismiss(arg.id)
            reference.dismiss(arg.id)
        elif op == "next":
            expected = reference.next_due()
            assert [store.next_due() for store in stores] == [expected, expected]
        else:
            until = T0 + timedelta(minutes=arg)
            expected_due = reference.due(until)
            assert [list(store.due(until)) for store in stores] == [expected_due, expected_due]
        if op == "save":  # stale items never outnumber the live ones after a save
            assert len(stores[1]._due) <= 2 * len(stores[1]._queued)
    end = T0 + timedelta(days=1)
    expected_due = reference.due(end)
    assert [list(store.due(end)) for store in stores] == [expected_due, expected_due]


def test_e4_a_hot_key_coalesced_a_thousand_times_holds_one_due_item() -> None:
    """N10, E4: a pending entry saved again at the same due time adds no heap item; one moved
    to new due times leaves stale items the heap sheds once they outnumber the live ones."""
    store = EntryMemory()
    entry = Entry(
        id="ana:watched_page:p1:1",
        person="ana",
        category="watched_page",
        group_key="watched_page:p1",
        state=EntryState(
            count=1,
            variant="edited",
            variants=("edited",),
            email=EmailState.PENDING,
            email_after=T0,
            last_event="1",
            in_app=True,
            updated_at=T0,
            read=False,
        ),
        created_at=T0,
        target=TARGET,
    )
    for n in range(1_000):
        store.save(entry._replace(state=attrs.evolve(entry.state, count=n + 1)))
    assert len(store._due) == 1
    for minute in range(1_000):
        store.save(
            entry._replace(
                state=attrs.evolve(entry.state, email_after=T0 + timedelta(minutes=minute))
            )
        )
    assert len(store._due) <= 2 + 64
    assert [e.state.email_after for e in store.due(T0 + timedelta(days=1))] == [
        T0 + timedelta(minutes=999)
    ]
    assert store.next_due() is None and store._due == []
