"""`EntryMemory`: the inbox's entries (`notify_core.inbox.ports.EntryStore`) in memory, for
``notify replay`` and the tests.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from datetime import datetime
from itertools import repeat
from typing import ClassVar, Final

import attrs

from notify_core.inbox.coalesce import EmailState, EntryState
from notify_core.inbox.ports import Entry

__all__ = ["EntryMemory"]

#: The unread keys of a person without any, for `EntryMemory.unread_many` (never written).
_NO_KEYS: Final[dict[str, Entry]] = {}


@attrs.define
class EntryMemory:
    """The entries of one replay: by id, the unread ones by person and key, and id counters."""

    entries: dict[str, Entry] = attrs.field(factory=dict)
    #: The unread entries themselves (not their ids): a fan-out looks one up per recipient.
    unread_keys: dict[str, dict[str, Entry]] = attrs.field(factory=dict)
    #: The last entry number of each person on each key: group key -> person -> n (a fan-out
    #: numbers the entries of one key at once).
    counters: dict[str, dict[str, int]] = attrs.field(factory=dict)
    # (email_after, entry id) of pending emails. `_queued` holds the due time of each entry's
    # live item, so a pending entry saved again at the same time (coalescing) adds no item;
    # an item whose entry moved on (another due time, sent, read) is dropped when it comes up,
    # and the heap is rebuilt from the live items when stale ones outnumber them.
    _due: list[tuple[datetime, str]] = attrs.field(factory=list, init=False, repr=False)
    _queued: dict[str, datetime] = attrs.field(factory=dict, init=False, repr=False)
    #: Stale items the heap may hold beyond as many as the live ones before it is rebuilt.
    compact_slack: ClassVar[int] = 64

    def unread(self, person: str, group_key: str) -> Entry | None:
        """Return a person's unread entry of a key."""
        found = self.unread_keys.get(person)
        return None if found is None else found.get(group_key)

    def unread_many(self, group_key: str, people: Sequence[str]) -> list[Entry | None]:
        """Return `unread` of each person in turn, in one call (`unread_all`)."""
        # Two C-level passes: each person's keys (an empty dict for none), then the key's.
        keys = map(self.unread_keys.get, people, repeat(_NO_KEYS))
        return list(map(dict.get, keys, repeat(group_key)))

    def next_id(self, person: str, group_key: str) -> str:
        """Return the id of the person's next entry on a key: ``<person>:<key>:<n>``."""
        by_person = self.counters.get(group_key)
        if by_person is None:
            by_person = self.counters[group_key] = {}
        n = by_person[person] = by_person.get(person, 0) + 1
        return f"{person}:{group_key}:{n}"

    def next_ids(self, group_key: str, people: Sequence[str]) -> list[str]:
        """Return `next_id` of each person in turn, in one call (`take_ids`)."""
        if not people:
            return []
        by_person = self.counters.get(group_key)
        first, middle = f":{group_key}:1", f":{group_key}:"
        if not by_person:
            # The key's first entries (a fan-out on a page nobody had an entry of): each
            # person's first id, counted in one call unless someone is listed twice.
            counted = dict.fromkeys(people, 1)
            if len(counted) == len(people):
                self.counters[group_key] = counted
                return [person + first for person in people]
        if by_person is None:
            by_person = self.counters[group_key] = {}
        get = by_person.get
        # Most people start their first entry on the key: one concatenation each.
        out: list[str] = []
        append = out.append
        for person in people:
            n = get(person)
            if n is None:
                by_person[person] = 1
                append(person + first)
            else:
                n = by_person[person] = n + 1
                append(f"{person}{middle}{n}")
        return out

    def save(self, entry: Entry) -> None:
        """Insert or replace an entry; a read one gives up its key."""
        self.save_many((entry,))

    def save_many(self, entries: Sequence[Entry]) -> None:
        """`save` each entry in turn, in one call (`save_all`)."""
        by_id, unread_keys, pending = self.entries, self.unread_keys, EmailState.PENDING
        queued = self._queued
        queued_at = queued.get
        # The due items of the batch; pushed one by one into a large heap, or heapified with
        # it when they outnumber it (a fan-out's new entries into an empty heap).
        dues = []
        # What the store reads of a state, read once per run of entries sharing it (one
        # event's entries share a handful of states).
        last_state: EntryState | None = None
        at: datetime | None = None
        read = False
        for entry in entries:
            # Unpacked: a named tuple's fields by name are slower to read than by position.
            entry_id, person, _, group_key, state, _, _ = entry
            by_id[entry_id] = entry
            if state is not last_state:
                last_state, read = state, state.read
                at = state.email_after if state.email is pending else None
            if at is not None:
                held_at = queued_at(entry_id)
                # ``is not`` first: a coalesced entry keeps its due time, the same object.
                if held_at is not at and (held_at is None or held_at != at):
                    queued[entry_id] = at
                    dues.append((at, entry_id))
            keys = unread_keys.get(person)
            if read:
                if keys is None:
                    unread_keys[person] = {}
                else:
                    held = keys.get(group_key)
                    if held is not None and held.id == entry_id:
                        del keys[group_key]
            elif keys is None:
                unread_keys[person] = {group_key: entry}
            else:
                keys[group_key] = entry
        if dues:
            heap = self._due
            if len(dues) > len(heap):
                heap.extend(dues)
                heapq.heapify(heap)
            else:
                push = heapq.heappush
                for item in dues:
                    push(heap, item)
        if len(self._due) > 2 * len(queued) + self.compact_slack:
            self._compact()

    def _compact(self) -> None:
        """Rebuild the due heap from the live items of entries still pending at their time."""
        live = {i: at for i, at in self._queued.items() if self._pending_at(at, i) is not None}
        self._queued = live
        self._due = [(at, entry_id) for entry_id, at in live.items()]
        heapq.heapify(self._due)

    def _pop_live(self) -> Entry | None:
        """Pop the earliest item; return its entry when it is live and still pending then."""
        at, entry_id = heapq.heappop(self._due)
        if self._queued.get(entry_id) != at:
            return None  # stale: the entry was queued again at another time, or taken
        del self._queued[entry_id]
        return self._pending_at(at, entry_id)

    def entries_of(self, person: str) -> list[Entry]:
        """Return every entry of a person, read or not (the inbox list, H1)."""
        return [e for e in self.entries.values() if e.person == person]

    def unread_of(self, person: str) -> Sequence[Entry]:
        """Return a person's unread entries."""
        return list(self.unread_keys.get(person, {}).values())

    def get(self, entry: str) -> Entry | None:
        """Return an entry by id."""
        return self.entries.get(entry)

    def _pending_at(self, at: datetime, entry_id: str) -> Entry | None:
        entry = self.entries.get(entry_id)
        if entry is None or entry.state.email is not EmailState.PENDING:
            return None
        return entry if entry.state.email_after == at else None

    def next_due(self) -> datetime | None:
        """Return the earliest due time of a pending email."""
        heap, queued = self._due, self._queued
        while heap:
            at, entry_id = heap[0]
            if queued.get(entry_id) == at and self._pending_at(at, entry_id) is not None:
                return at
            self._pop_live()
        return None

    def due(self, until: datetime) -> Sequence[Entry]:
        """Take the pending entries due at or before ``until``."""
        heap, out = self._due, []
        while heap and heap[0][0] <= until:
            entry = self._pop_live()
            if entry is not None:
                out.append(entry)
        return out

    def dismiss(self, entry: str) -> None:
        """Delete an entry (its key is free again)."""
        found = self.entries.pop(entry, None)
        if found is not None:
            keys = self.unread_keys.get(found.person, {})
            held = keys.get(found.group_key)
            if held is not None and held.id == entry:
                del keys[found.group_key]

    def forget(self, person: str) -> None:
        """Remove every entry of a person, read or not (U3: the host forgot them); their
        due emails go with them. The counters stay: an entry id is never reused."""
        entries = self.entries
        for entry_id in [i for i, e in entries.items() if e.person == person]:
            del entries[entry_id]
            self._queued.pop(entry_id, None)  # its heap item is stale from now on
        self.unread_keys.pop(person, None)
