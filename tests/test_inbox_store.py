"""The batch methods of the in-memory entry store and the port helpers that call them.

`EntryMemory.save_many`, `next_ids` and `unread_many` must answer as `save`, `next_id` and
`unread` one by one (N10: one unread entry per person and key; E4: the due emails), and the
helpers of `notify_core.inbox.ports` (`save_all`, `take_ids`, `unread_all`) must give the same
with a store that has only the protocol's methods, the inbox path of a replay included.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st
from inbox_log import WikiLog
from test_inbox_replay import HEAVY, wiki_logs

from notify_core.events import parse_event
from notify_core.inbox import EmailState, EntryState
from notify_core.inbox.memory import EntryMemory
from notify_core.inbox.pipeline import InboxPipeline
from notify_core.inbox.ports import Entry, EntryTarget, save_all, take_ids, unread_all

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


@st.composite
def entry_values(draw: st.DrawFn) -> Entry:
    """An entry of a few ids, people and keys, in any email state, read or not."""
    email = draw(st.sampled_from(list(EmailState)))
    due = None
    if email in (EmailState.PENDING, EmailState.SENDING) and draw(st.booleans()):
        due = T0 + timedelta(minutes=draw(st.integers(0, 5)))
    state = EntryState(
        count=1,
        variant="edited",
        variants=("edited",),
        email=email,
        email_after=due,
        last_event="1",
        in_app=True,
        updated_at=T0,
        read=draw(st.booleans()),
    )
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
