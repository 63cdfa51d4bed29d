"""The category registry of the inbox (rules N1): the seven launch categories as data.

A category says which events it reacts to and from which origins, who its candidates are,
which permission each recipient must hold now, its default channels, its priority when one
event reaches a person twice, the section that may switch it off, its coalescing key and
whether its mails may wait for a digest. A new category is one entry of `CATEGORIES` (plus its
strings): the fan-out, coalescing and the replay read everything from here.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from typing import Final

import attrs

__all__ = [
    "CATEGORIES",
    "CATEGORY_BY_KEY",
    "EDIT_VARIANTS",
    "SECTIONS",
    "Candidates",
    "Category",
    "Channels",
    "HostStrings",
    "Origin",
    "Permission",
    "Section",
    "categories_for",
    "event_variant",
    "registry",
]


class Origin(enum.StrEnum):
    """Where an event comes from (N6): a person, an import (a git pull) or a bulk action."""

    USER = "user"
    IMPORT = "import"
    BULK = "bulk"


class Permission(enum.StrEnum):
    """A permission a recipient must hold on the page now (N8)."""

    READ_PAGES = "read_pages"
    READ_COMMENTS = "read_comments"


class Section(enum.StrEnum):
    """A heading of the preferences screen; an administrator narrows each one (N3)."""

    WATCHING = "watching"
    DISCUSSIONS = "discussions"
    REVIEWS = "reviews"
    EVERYTHING = "everything"


#: Every section, in the order of the preferences screen.
SECTIONS: Final = tuple(Section)


class Candidates(enum.StrEnum):
    """Where a category's candidates come from (the host answers through a port)."""

    WATCHERS = "watchers"
    REVIEWERS = "reviewers"
    PARENT_AUTHOR = "parent_author"
    MENTIONED = "mentioned"
    OPTED_IN = "opted_in"
    #: A host category's (N13): the holders of a host permission (N8, group ``permissions``).
    PERMISSION = "permission"
    #: A host category's (N13): the people its event names (``people``).
    NAMED = "named"


@attrs.frozen(kw_only=True)
class Channels:
    """A choice per channel: in the inbox, by email."""

    in_app: bool
    email: bool


@attrs.frozen(kw_only=True)
class HostStrings:
    """A host category's strings in one locale (N13): its name in the preferences grid, and
    the subject and line of its mails, ``str.format`` templates over the event's members."""

    name: str
    subject: str
    line: str


#: What a group key is made of: the ids an event carries (page, comment, parent, submission).
KeyParts = Mapping[str, str]


@attrs.frozen(kw_only=True)
class Category:
    """One entry of the registry (N1).

    Args:
        key: the category's name, also its preference key.
        events: the event types it reacts to.
        origins: the origins it fires for (N6).
        candidates: where its candidates come from.
        access: the permission each recipient must hold now; ``None`` checks none.
        defaults: the channels of a person without a stored row (N2).
        priority: higher wins when one event reaches a person through several categories.
        section: the section whose master switch applies (N3).
        key_member: the id of the event its coalescing key is made of (``page``,
            ``comment``, ``parent`` or ``submission``).
        key_prefix: the coalescing key is ``<key_prefix>:<that id>``.
        digest: its mails may wait for an hourly or daily digest (E2).
        key_members: a host category's (N13): the event members its coalescing key is made
            of, after its key (``storage_sync_failed:<target>``); ``key_member`` and
            ``key_prefix`` are then unused.
        visible_to: a host category's: the host permission a person must hold to see it in
            their grid and to be its candidate (``None``: everyone).
        permission: a host category's candidates by permission: the holders of this one.
        scope: ``site`` or ``instance`` (an instance entry has no site, N13).
        host: declared by the host (N13), not one of the seven.
    """

    key: str
    events: frozenset[str]
    origins: frozenset[Origin]
    candidates: Candidates
    access: Permission | None
    defaults: Channels
    priority: int
    section: Section | str
    key_member: str
    key_prefix: str
    digest: bool
    key_members: tuple[str, ...] = ()
    visible_to: str | None = None
    permission: str | None = None
    scope: str = "site"
    host: bool = False
    strings: tuple[tuple[str, HostStrings], ...] = ()

    def strings_for(self, locale: str) -> HostStrings | None:
        """Return a host category's strings in a locale, else its English ones (N13)."""
        found = dict(self.strings)
        return found.get(locale) or found.get("en")

    def group_key(self, ids: KeyParts) -> str:
        """Return the coalescing key for an event's ids (``watched_page:p1``; a host
        category's: its key and its listed members, ``storage_sync_failed:t1``)."""
        if self.host:
            return ":".join([self.key, *(ids.get(m, "") for m in self.key_members)])
        return f"{self.key_prefix}:{ids.get(self.key_member, '')}"


_ALL_ORIGINS: Final = frozenset(Origin)
_USER: Final = frozenset({Origin.USER})
_ON: Final = Channels(in_app=True, email=True)
_OFF: Final = Channels(in_app=False, email=False)

#: The launch categories of N1, as the table there gives them.
CATEGORIES: Final[tuple[Category, ...]] = (
    Category(
        key="watched_page",
        events=frozenset({"page.edited", "page.renamed", "page.deleted"}),
        origins=_ALL_ORIGINS,
        candidates=Candidates.WATCHERS,
        access=Permission.READ_PAGES,
        defaults=_ON,
        priority=20,
        section=Section.WATCHING,
        key_member="page",
        key_prefix="watched_page",
        digest=True,
    ),
    Category(
        key="review_requested",
        events=frozenset({"submission.created", "submission.updated"}),
        origins=_USER,
        candidates=Candidates.REVIEWERS,
        access=None,
        defaults=_ON,
        priority=25,
        section=Section.REVIEWS,
        key_member="submission",
        key_prefix="review",
        digest=False,
    ),
    Category(
        key="watched_page_comment",
        events=frozenset({"comment.created"}),
        origins=_USER,
        candidates=Candidates.WATCHERS,
        access=Permission.READ_COMMENTS,
        defaults=_ON,
        priority=10,
        section=Section.WATCHING,
        key_member="page",
        key_prefix="watched_comment",
        digest=True,
    ),
    Category(
        key="comment_reply",
        events=frozenset({"comment.created"}),
        origins=_USER,
        candidates=Candidates.PARENT_AUTHOR,
        access=Permission.READ_COMMENTS,
        defaults=_ON,
        priority=30,
        section=Section.DISCUSSIONS,
        key_member="parent",
        key_prefix="reply",
        digest=False,
    ),
    Category(
        key="mention",
        events=frozenset({"comment.created", "comment.edited"}),
        origins=_USER,
        candidates=Candidates.MENTIONED,
        access=Permission.READ_COMMENTS,
        defaults=_ON,
        priority=40,
        section=Section.DISCUSSIONS,
        key_member="comment",
        key_prefix="mention",
        digest=False,
    ),
    Category(
        key="page_created",
        events=frozenset({"page.created"}),
        origins=_USER,
        candidates=Candidates.OPTED_IN,
        access=Permission.READ_PAGES,
        defaults=_OFF,
        priority=5,
        section=Section.EVERYTHING,
        key_member="page",
        key_prefix="page_created",
        digest=True,
    ),
    Category(
        key="page_deleted",
        events=frozenset({"page.deleted"}),
        origins=_USER,
        candidates=Candidates.OPTED_IN,
        access=Permission.READ_PAGES,  # against the page as it was: the event's snapshot
        defaults=_OFF,
        priority=5,
        section=Section.EVERYTHING,
        key_member="page",
        key_prefix="page_deleted",
        digest=True,
    ),
)

CATEGORY_BY_KEY: Final[Mapping[str, Category]] = {c.key: c for c in CATEGORIES}

# Highest priority first (ties in registry order): the fan-out gives the entry to the first
# category that reaches a person.
_BY_EVENT: Final[Mapping[str, tuple[Category, ...]]] = {
    kind: tuple(
        sorted(
            (c for c in CATEGORIES if kind in c.events),
            key=lambda c: (-c.priority, CATEGORIES.index(c)),
        )
    )
    for kind in sorted({kind for c in CATEGORIES for kind in c.events})
}


def registry(host: Iterable[Category] = ()) -> dict[str, Category]:
    """Return the registry of an instance (N1, N13): the seven launch categories in their
    order, then the host's own by key."""
    out = dict(CATEGORY_BY_KEY)
    for category in sorted(host, key=lambda c: c.key):
        if category.key not in CATEGORY_BY_KEY:
            out[category.key] = category
    return out


def categories_for(event_type: str) -> tuple[Category, ...]:
    """Return the categories reacting to an event type, highest priority first."""
    return _BY_EVENT.get(event_type, ())


#: Event type -> variant (N1); ``page.edited`` carries its own (``edited`` by default).
_VARIANTS: Final[Mapping[str, str]] = {
    "page.created": "created",
    "page.edited": "edited",
    "page.renamed": "moved",
    "page.deleted": "deleted",
    "comment.created": "new",
    "comment.edited": "edited",
    "submission.created": "new",
    "submission.updated": "updated",
}
#: The variants a ``page.edited`` may name.
EDIT_VARIANTS: Final = frozenset({"edited", "published", "unpublished", "scheduled"})


def event_variant(event_type: str, payload_variant: str | None = None) -> str:
    """Return the variant of an event (N1): which message an entry shows.

    Raises:
        KeyError: the event type is no category's.
    """
    if event_type == "page.edited" and payload_variant is not None:
        return payload_variant
    return _VARIANTS[event_type]
