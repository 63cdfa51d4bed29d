"""One event's lines and entries of a single firing category, built as columns.

The inbox pipeline (`notify_core.inbox.pipeline`) applies a fan-out's decisions person by
person in general; when one category fires (a page's watchers, the common case), every
decision shares the category, its group key and the event's values, and what differs per
person is a handful of columns: the person, the channels (`category_decisions` gives them
as lists, without a decision value per person), the unread entry, the due time.
`apply_columns` builds the other columns with C-level ``map`` and ``zip`` and makes the
entries and lines from them in one pass each, with the new states worked out once per distinct
(old state, channels, due time), so the interpreter runs a few steps per distinct value
rather than per person. Its result is the same as the pipeline's loop (a hypothesis property
in tests/core/inbox/test_inbox_columns.py holds the two together).
"""

from __future__ import annotations

import enum
import operator
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timedelta
from itertools import compress, repeat
from typing import Any, Final, NamedTuple

from notify_core.inbox.access import AccessCache
from notify_core.inbox.cadence import EmailAfter, due_is_shared, scheduled_email_after
from notify_core.inbox.categories import Category
from notify_core.inbox.coalesce import EmailState, EntryState, transition
from notify_core.inbox.fanout import CategoryDecisions, InboxEvent, InboxSkip, category_decisions
from notify_core.inbox.ports import (
    Entry,
    EntryStore,
    EntryTarget,
    SiteInfo,
    WikiFacts,
    people_facts,
    save_all,
    take_ids,
    unread_all,
    users_of,
)

__all__ = [
    "EntryDecisionKind",
    "EventValues",
    "InboxLine",
    "apply_columns",
    "category_lines",
    "skip_columns",
]


class EntryDecisionKind(enum.StrEnum):
    """What an event did for a person on a category (formats.md section 4)."""

    NEW = "new"
    COALESCE = "coalesce"
    SKIP = "skip"


class InboxLine(NamedTuple):
    """One entry decision for one person and category: the unit of the inbox's replay output.

    A named tuple rather than an attrs value: a fan-out makes one per recipient.
    """

    seq: int
    at: datetime
    recipient: str
    category: str
    variant: str
    group_key: str
    decision: EntryDecisionKind
    site: str | None = None
    entry: Entry | None = None
    reason: InboxSkip | None = None


#: A value of a named tuple from a tuple of all its fields, without the class's Python-level
#: ``__new__``; called through ``map`` with the class repeated.
_MAKE: Final[Callable[..., Any]] = tuple.__new__
#: Lines by recipient (`InboxLine` field 2).
_BY_RECIPIENT: Final = operator.itemgetter(2)
#: An entry's id, state and creation time (`Entry` fields 0, 4 and 5).
_ENTRY_ID: Final = operator.itemgetter(0)
_ENTRY_STATE: Final = operator.itemgetter(4)
_ENTRY_CREATED: Final = operator.itemgetter(5)
#: A person's schedule, daily hour, and both (`WikiUser` fields 3 and 4).
_SCHEDULE: Final = operator.itemgetter(3)
_HOUR: Final = operator.itemgetter(4)
_SCHEDULE_HOUR: Final = operator.itemgetter(3, 4)
#: The key of "no old state" (a new entry) among the ids of old states.
_NO_STATE: Final = id(None)


class _Memo(dict[tuple[Any, ...], EntryState]):
    """A dict that works out a missing key's value on its first lookup (``make``)."""

    def __init__(self, make: Callable[[tuple[Any, ...]], EntryState]) -> None:
        super().__init__()
        self.make = make

    def __missing__(self, key: tuple[Any, ...]) -> EntryState:
        value = self[key] = self.make(key)
        return value


class EventValues(NamedTuple):
    """What every line and entry of one event shares (worked out once by the pipeline)."""

    seq: int
    at: datetime
    event_id: str
    variant: str
    actor: str | None
    site: str | None
    target: EntryTarget
    delay: timedelta
    site_info: SiteInfo | None


def category_lines(
    wiki: WikiFacts,
    store: EntryStore,
    email_after: EmailAfter,
    inbox: InboxEvent,
    category: Category,
    listed: list[str],
    values: EventValues,
) -> list[InboxLine]:
    """The lines of an event for which one category fires (its candidates ``listed``), its
    entries saved: as columns from the decision (`category_decisions`) to the lines
    (`apply_columns`, `skip_columns`), by recipient."""
    found = category_decisions(
        inbox,
        category,
        listed,
        people_facts(wiki, listed),
        wiki.settings(),
        AccessCache(wiki.groups(), inbox.page),
    )
    key = category.group_key(inbox.ids)
    lines: list[InboxLine] = []
    if found.people:
        lines = apply_columns(store, wiki, email_after, found, category, key, values)
    if found.skipped:
        lines.extend(
            skip_columns(
                found.skipped,
                found.reasons,
                category.key,
                key,
                values.seq,
                values.at,
                values.variant,
                values.site,
            )
        )
        if found.people:  # each recipient once: the recipient alone orders the merge
            lines.sort(key=_BY_RECIPIENT)
    return lines


def apply_columns(
    store: EntryStore,
    wiki: WikiFacts,
    email_after: EmailAfter,
    decisions: CategoryDecisions,
    category: Category,
    key: str,
    values: EventValues,
) -> list[InboxLine]:
    """Coalesce the entry decisions of one category and group key (`category_decisions`'
    columns) into their entries (N10-N12), save the entries, and return the lines, in the
    decisions' order."""
    at = values.at
    people = decisions.people
    olds: list[Any] = list(unread_all(store, key, people))
    fresh = olds.count(None)
    n = len(people)
    new_kind, coalesce_kind = EntryDecisionKind.NEW, EntryDecisionKind.COALESCE
    ids: Sequence[str]
    old_states: Sequence[EntryState | None]
    created: Any
    kinds: Any
    if fresh == n:  # every person starts an entry (a first fan-out on the key)
        ids = take_ids(store, key, people)
        old_states = [None] * n
        created, kinds = repeat(at), repeat(new_kind)
    elif not fresh:  # every person coalesces into an unread entry
        ids = list(map(_ENTRY_ID, olds))
        old_states = list(map(_ENTRY_STATE, olds))
        created, kinds = map(_ENTRY_CREATED, olds), repeat(coalesce_kind)
    else:
        starting = [person for person, old in zip(people, olds, strict=True) if old is None]
        take = iter(take_ids(store, key, starting)).__next__
        ids = [take() if old is None else old[0] for old in olds]
        old_states = [None if old is None else old[4] for old in olds]
        created = [at if old is None else old[5] for old in olds]
        kinds = [new_kind if old is None else coalesce_kind for old in olds]
    in_apps, emails = decisions.in_app, decisions.email
    # Each person's new state, worked out once per distinct (old state, in_app, email) and,
    # where the due time is not one for all, due time. The old state by its id (a frozen
    # attrs value hashes its fields); a first fan-out on the key has no old states.
    state_ids: Sequence[int] = [_NO_STATE] * n if fresh == n else list(map(id, old_states))
    by_id: dict[int, EntryState | None] = (
        {_NO_STATE: None} if fresh == n else dict(zip(state_ids, old_states, strict=True))
    )
    none = EmailState.NONE
    # Whose email starts now (E1): only they have a due time. Someone with email whose old
    # state has none yet (or who has no entry); a coalescing fan-out usually has nobody.
    if fresh == n:
        may_start = True in emails
    else:
        without = {i for i, state in by_id.items() if state is None or state.email is none}
        may_start = bool(without) and not without.isdisjoint(compress(state_ids, emails))
    due: datetime | None = None
    dues: Sequence[datetime | None] | None = None
    if may_start:
        due, dues = _dues(wiki, email_after, category, people, values, old_states, emails)
    event_id, variant, actor = values.event_id, values.variant, values.actor

    def new_state(memo_key: tuple[Any, ...]) -> EntryState:
        """The new state of the people of one key (old state id, in_app, email[, due])."""
        old_state = by_id[memo_key[0]]
        email = memo_key[2]
        starts = email and (old_state is None or old_state.email is none)
        person_due = (due if dues is None else memo_key[3]) if starts else None
        return transition(old_state, event_id, variant, at, memo_key[1], email, person_due, actor)

    # Worked out on a key's first person (`_Memo`): one pass over the people.
    memo = _Memo(new_state)
    new_states: Iterator[EntryState]
    if dues is None:  # one due time for all: the old state and channels give the state
        new_states = map(memo.__getitem__, zip(state_ids, in_apps, emails, strict=True))
    else:
        new_states = map(memo.__getitem__, zip(state_ids, in_apps, emails, dues, strict=True))
    category_key = category.key
    made: list[Entry] = list(
        map(
            _MAKE,
            repeat(Entry),
            zip(
                ids,
                people,
                repeat(category_key),
                repeat(key),
                new_states,
                created,
                repeat(values.target),
            ),
        )
    )
    lines: list[InboxLine] = list(
        map(
            _MAKE,
            repeat(InboxLine),
            zip(
                repeat(values.seq),
                repeat(at),
                people,
                repeat(category_key),
                repeat(variant),
                repeat(key),
                kinds,
                repeat(values.site),
                made,
                repeat(None),
            ),
        )
    )
    save_all(store, made)
    return lines


def _dues(
    wiki: WikiFacts,
    email_after: EmailAfter,
    category: Category,
    people: list[str],
    values: EventValues,
    old_states: Sequence[EntryState | None],
    emails: Sequence[bool],
) -> tuple[datetime | None, list[datetime | None] | None]:
    """The due time of the emails that start now (E2): one for all, or each person's.

    With the default cadence, a schedule (and daily hour) whose due time depends on no person
    (`due_is_shared`) is worked out once, with any person of it: when everyone has the same
    one, that due time is returned alone (with ``None``). Otherwise each person whose email
    starts (by ``old_states`` and ``emails``, in order) is asked on their own, and the others
    get ``None``.
    """
    at, delay, site_info = values.at, values.delay, values.site_info
    none = EmailState.NONE
    if getattr(wiki, "users_cached", None) is None:
        # A host that reads a person per call is asked only for those whose email starts,
        # as the loop per person asks.
        user_of = wiki.user
        return None, [
            email_after(user_of(person), category, at, delay, site_info)
            if email and (state is None or state.email is none)
            else None
            for person, state, email in zip(people, old_states, emails, strict=True)
        ]
    users = users_of(wiki, people)
    if email_after is scheduled_email_after and None not in users:
        schedules = set(map(_SCHEDULE, users))  # type: ignore[arg-type]
        hours = set(map(_HOUR, users))  # type: ignore[arg-type]
        pairs: list[tuple[str, int | None]] | None = None
        if len(schedules) == 1 and len(hours) == 1:
            representatives = {(*schedules, *hours): users[0]}
        else:
            pairs = list(map(_SCHEDULE_HOUR, users))  # type: ignore[arg-type]
            representatives = dict(zip(pairs, users, strict=True))
        shared: dict[tuple[str, int | None], datetime] = {}
        for pair, user in representatives.items():
            schedule, hour = pair
            # Only values `email_schedule` caches share a due time: an exact str and None
            # or an exact int (so equal keys mean equal values).
            if (
                type(schedule) is not str
                or not (hour is None or type(hour) is int)
                or not due_is_shared(user, category)  # type: ignore[arg-type]
            ):
                break
            shared[pair] = email_after(user, category, at, delay, site_info)
        else:
            if pairs is None:
                return shared.popitem()[1], None
            return None, list(map(shared.__getitem__, pairs))
    return None, [
        email_after(user, category, at, delay, site_info)
        if email and (state is None or state.email is none)
        else None
        for user, state, email in zip(users, old_states, emails, strict=True)
    ]


def skip_columns(
    skipped: Sequence[str],
    reasons: Sequence[InboxSkip],
    category_key: str,
    key: str,
    seq: int,
    at: datetime,
    variant: str,
    site: str | None,
) -> list[InboxLine]:
    """The lines of one category's skipped candidates (``skipped``, why: ``reasons``), in
    order."""
    return list(
        map(
            _MAKE,
            repeat(InboxLine),
            zip(
                repeat(seq),
                repeat(at),
                skipped,
                repeat(category_key),
                repeat(variant),
                repeat(key),
                repeat(EntryDecisionKind.SKIP),
                repeat(site),
                repeat(None),
                reasons,
            ),
        )
    )
