"""The ports of the inbox path: the wiki's facts and the store of entries, as protocols.

The in-memory twins live in `notify_core.inbox.memory` (one class per port); a PostgreSQL
adapter implements the same protocols. The inbox path never knows which one it talks to.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import NamedTuple, Protocol

import attrs

from notify_core.events.log import Event
from notify_core.inbox.access import Group, PageFacts
from notify_core.inbox.categories import Category
from notify_core.inbox.coalesce import EntryState
from notify_core.inbox.fanout import PersonFacts
from notify_core.inbox.prefs import InboxSettings
from notify_core.values.links import LinkTemplates

__all__ = [
    "CommentInfo",
    "Entry",
    "EntryStore",
    "EntryTarget",
    "PageInfo",
    "SiteInfo",
    "WikiFacts",
    "WikiUser",
    "created_as_draft",
    "forget_entries",
    "generation_of",
    "people_facts",
    "save_all",
    "take_ids",
    "unread_all",
    "users_of",
]


@attrs.frozen(kw_only=True)
class SiteInfo:
    """A site of the wiki; ``notifications`` is its switch (N5), ``links`` its link templates
    (E6: where its mails' links go; the defaults where it sets none), ``name`` the wiki's name
    its mails use (E6; absent or empty: its host)."""

    id: str
    host: str = ""
    name: str | None = None
    https: bool = True
    primary_locale: str | None = None
    time_zone: str | None = None
    notifications: bool = True
    links: LinkTemplates = attrs.field(factory=LinkTemplates)


@attrs.frozen(kw_only=True)
class PageInfo:
    """A page as the wiki holds it now (or held it, until it was deleted)."""

    id: str
    site: str
    path: str
    locale: str = ""
    title: str = ""
    tags: frozenset[str] = frozenset()
    deleted: bool = False

    @property
    def access(self) -> PageFacts:
        """What access reads of the page (N8)."""
        return PageFacts(path=self.path, tags=self.tags)


@attrs.frozen(kw_only=True)
class CommentInfo:
    """A comment: its page, author, parent, the people it mentions and its excerpt."""

    id: str
    page: str
    author: str | None = None
    parent: str | None = None
    mentions: frozenset[str] = frozenset()
    excerpt: str | None = None


class WikiUser(NamedTuple):
    """What the cadence reads of a person: zone, locale and email schedule (E2).

    A named tuple, like `PersonFacts`: a host builds one per candidate of a fan-out. Build it
    with keywords.
    """

    id: str
    time_zone: str | None = None
    locale: str | None = None
    email_schedule: str = "immediate"
    daily_hour: int | None = None


@attrs.frozen(kw_only=True)
class EntryTarget:
    """What an entry is about, as it was at its latest event: the snapshot of N11.

    Args:
        site: the site of the page.
        page: the page (a review's: its submission's page).
        comment: the comment, if any (its excerpt shows only while it exists).
        title: the page's title.
        path: the page's path.
        locale: the page's locale.
        excerpt: the comment's excerpt.
        draft: the page was created unpublished (a ``page_created`` entry: "created as a
            draft", E6).
        members: a host category's entry (N13): its latest event's members, as texts (its
            strings' placeholders), by name; ``title`` is then its ``target``.
    """

    site: str | None
    page: str | None
    comment: str | None = None
    title: str = ""
    path: str = ""
    locale: str = ""
    excerpt: str | None = None
    draft: bool = False
    members: tuple[tuple[str, str], ...] = ()

    def link_path(self, page: PageInfo | None) -> str:
        """Return the path the entry's link is built from (N11): the page's current path
        while the page exists, so that the link follows a rename or move made after the
        event; the snapshot's path once the page is deleted (or unknown to the host).

        ``page`` is the target's page as the host holds it now (`WikiFacts.page`: a deleted
        page as it was, with ``deleted`` set). The title shown stays the snapshot's.
        """
        if page is None or page.deleted:
            return self.path
        return page.path


class Entry(NamedTuple):
    """One inbox entry of one person: an immutable value, changed with ``_replace``.

    A named tuple rather than an attrs value (unlike the other facts): a fan-out makes one per
    recipient, and a frozen attrs class sets each of its seven fields through
    ``object.__setattr__``, which cost more than all the rest of building an entry.

    Attributes:
        id: ``<person>:<group_key>:<n>`` in a replay.
        person: whose entry it is.
        category: the category's key.
        group_key: the coalescing key.
        state: count, variants, email state, ... (`EntryState`).
        created_at: when the first event reached the person.
        target: the snapshot of what it is about (N11), shared by one event's entries.
    """

    id: str
    person: str
    category: str
    group_key: str
    state: EntryState
    created_at: datetime
    target: EntryTarget

    @property
    def page(self) -> str | None:
        """The page the entry is about."""
        return self.target.page


class WikiFacts(Protocol):
    """The host's facts the inbox path reads: sites, pages, comments, people, groups."""

    def site(self, site: str) -> SiteInfo | None:
        """Return a site, or ``None`` when unknown."""

    def first_site(self) -> str | None:
        """Return the instance's first site (by creation): the mail site of entries without one."""

    def page(self, page: str) -> PageInfo | None:
        """Return a page (a deleted one too, as it was), or ``None`` when unknown."""

    def comment(self, comment: str) -> CommentInfo | None:
        """Return a comment, or ``None`` when unknown."""

    def submission_page(self, submission: str) -> str | None:
        """Return the page a review submission is about."""

    def watchers(self, page: str) -> Sequence[str]:
        """Return the people watching a page now, each once (N9: before its deletion)."""

    def reviewers(self, page: PageInfo) -> Sequence[str]:
        """Return the members of the reviewer groups of every enabled review rule of the
        page's site that matches the page, each once."""

    def opted_in(self, category: str) -> Sequence[str]:
        """Return the people who turned a category on by a stored row (N2), each once."""

    def people(self, ids: Iterable[str]) -> Mapping[str, PersonFacts]:
        """Return the facts of the known people among ``ids``."""

    def user(self, user: str) -> WikiUser | None:
        """Return what the cadence reads of a person."""

    def names(self, ids: Iterable[str]) -> Mapping[str, str]:
        """Return the display names (E6) of the people among ``ids`` who have one; a person
        without a name, or no longer known, is left out (a mail names them neutrally)."""

    def groups(self) -> Mapping[str, Group]:
        """Return every group and its rules."""

    def categories(self) -> Mapping[str, Category]:
        """Return the registry (N1, N13): the seven launch categories and the host's own
        (`notify_core.inbox.categories.registry`)."""

    def holders(self, permission: str) -> Sequence[str]:
        """Return the people holding a host permission (N8, N13: a group's ``permissions``,
        or ``manage_system``), sorted, each once."""

    def settings(self) -> InboxSettings:
        """Return the sections and whether mail is configured."""

    def email_delay(self) -> timedelta:
        """Return the instance's email delay (E2, default 180 s)."""

    def record(self, event: Event) -> None:
        """Take note of an event that changes the facts (a no-op where the host keeps them)."""


class EntryStore(Protocol):
    """The inbox entries, at most one unread per person and group key."""

    def unread(self, person: str, group_key: str) -> Entry | None:
        """Return a person's unread entry of a key."""

    def next_id(self, person: str, group_key: str) -> str:
        """Return the id of a person's next entry on a key (never reused)."""

    def save(self, entry: Entry) -> None:
        """Insert or replace an entry; a read entry gives up its key."""

    def unread_of(self, person: str) -> Sequence[Entry]:
        """Return a person's unread entries."""

    def get(self, entry: str) -> Entry | None:
        """Return an entry by id."""

    def dismiss(self, entry: str) -> None:
        """Delete an entry."""

    def next_due(self) -> datetime | None:
        """Return the earliest ``email_after`` of a ``pending`` entry."""

    def due(self, until: datetime) -> Sequence[Entry]:
        """Return the ``pending`` entries due at or before ``until`` (E4)."""


def created_as_draft(event: Event) -> bool:
    """Whether an event creates a page unpublished: a ``page.created`` whose
    ``publish_state`` is given and is not ``published`` (E6: "created as a draft")."""
    if event.type != "page.created":
        return False
    state = event.payload.get("publish_state")
    return state is not None and state != "published"


def people_facts(wiki: WikiFacts, ids: Collection[str]) -> Mapping[str, PersonFacts]:
    """Return a mapping in which each known person among ``ids`` has their facts.

    `WikiFacts.people`, for a reader that only looks people up (a fan-out): a host with a
    ``people_lookup(ids)`` method (the in-memory one) may answer with a mapping that holds
    others too, without building one for the event; any other is asked `WikiFacts.people`.
    """
    lookup: Callable[[Collection[str]], Mapping[str, PersonFacts]] | None = getattr(
        wiki, "people_lookup", None
    )
    return wiki.people(ids) if lookup is None else lookup(ids)


def users_of(wiki: WikiFacts, ids: Sequence[str]) -> list[WikiUser | None]:
    """Return `WikiFacts.user` of each of ``ids``, in order (``None``: unknown).

    A host with a ``users_cached()`` method (the in-memory one) hands over the mapping of the
    people it has already read, and only those not in it are asked `WikiFacts.user`; any
    other is asked for each person.
    """
    user = wiki.user
    cached: Callable[[], Mapping[str, WikiUser]] | None = getattr(wiki, "users_cached", None)
    if cached is None:
        return [user(person) for person in ids]
    found: list[WikiUser | None] = list(map(cached().get, ids))
    if None in found:
        return [
            known if known is not None else user(person)
            for person, known in zip(ids, found, strict=True)
        ]
    return found


def unread_all(store: EntryStore, group_key: str, people: Sequence[str]) -> Sequence[Entry | None]:
    """Return each person's unread entry of a key (``None``: none), in order.

    The same as `EntryStore.unread` of each person in turn. A store with an
    ``unread_many(group_key, people)`` method (the in-memory one) answers in one call; any
    other is asked one person at a time.
    """
    batch: Callable[[str, Sequence[str]], Sequence[Entry | None]] | None = getattr(
        store, "unread_many", None
    )
    if batch is not None:
        return batch(group_key, people)
    unread = store.unread
    return [unread(person, group_key) for person in people]


def take_ids(store: EntryStore, group_key: str, people: Sequence[str]) -> Sequence[str]:
    """Return the ids of the next entries on a key of each person, in order.

    The same ids as `EntryStore.next_id` of each person in turn (a person listed twice gets
    two successive ids). A store with a ``next_ids(group_key, people)`` method (the in-memory
    one) answers in one call; any other is asked one person at a time.
    """
    batch: Callable[[str, Sequence[str]], Sequence[str]] | None = getattr(store, "next_ids", None)
    if batch is not None:
        return batch(group_key, people)
    next_id = store.next_id
    return [next_id(person, group_key) for person in people]


def save_all(store: EntryStore, entries: Sequence[Entry]) -> None:
    """Save the entries in order: the same as `EntryStore.save` of each one in turn.

    A store with a ``save_many(entries)`` method (the in-memory one) takes them in one call;
    any other is handed one entry at a time.
    """
    batch: Callable[[Sequence[Entry]], None] | None = getattr(store, "save_many", None)
    if batch is not None:
        batch(entries)
        return
    save = store.save
    for entry in entries:
        save(entry)


def forget_entries(store: EntryStore, person: str) -> None:
    """Remove every entry of a person the host forgot (U3: ``user.forgotten``).

    A store with a ``forget(person)`` method (the in-memory one) removes them all, read or
    not, and their due emails; any other has its unread ones dismissed. Entry ids are never
    reused: the counters of the person's keys stay.
    """
    forget: Callable[[str], None] | None = getattr(store, "forget", None)
    if forget is not None:
        forget(person)
        return
    for entry in store.unread_of(person):
        store.dismiss(entry.id)


def generation_of(wiki: WikiFacts, person: str) -> int:
    """Return the person's generation (U1, U3: how often the host forgot the id before it
    created this person; 0 for an id never forgotten): what their tokens carry as ``"g"``.

    Asked of a host with a ``generation(person)`` method (the in-memory one); any other
    answers 0.
    """
    read: Callable[[str], int] | None = getattr(wiki, "generation", None)
    return 0 if read is None else read(person)
