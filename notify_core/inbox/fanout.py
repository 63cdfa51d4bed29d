"""The fan-out decision (rules N6-N9): one event, its candidates, at most one entry each.

Per event, per candidate of each firing category, in this order: the actor is skipped
(``actor``); inactive, system and non-human accounts (``inactive``); those without the
category's permission now (``no_access``, computed once per distinct group set); a section
switched off (``section_off``); then the person's choices, with email only where mail is
configured and their address verified (``preference`` when no channel is left). Of the
categories that reach a person, the one of highest priority gives the entry, the others are
``lower_priority``. Pure: the candidates, people and groups come in as values.
"""

from __future__ import annotations

import enum
import operator
from collections.abc import Callable, Mapping, Sequence
from itertools import repeat
from typing import Any, Final, NamedTuple

import attrs

from notify_core.inbox.access import AccessCache, Group, PageFacts
from notify_core.inbox.categories import (
    CATEGORY_BY_KEY,
    Category,
    Origin,
    categories_for,
)
from notify_core.inbox.prefs import NO_PREFS, Delivery, InboxPrefs, InboxSettings

__all__ = [
    "CategoryDecisions",
    "EntryDecision",
    "FanOut",
    "InboxEvent",
    "InboxSkip",
    "PersonFacts",
    "SkipDecision",
    "category_decisions",
    "fan_out",
    "firing",
]


class InboxSkip(enum.StrEnum):
    """Why a candidate gets no entry from a category (formats.md section 4)."""

    ACTOR = "actor"
    INACTIVE = "inactive"
    NO_ACCESS = "no_access"
    PREFERENCE = "preference"
    SECTION_OFF = "section_off"
    SITE_OFF = "site_off"
    LOWER_PRIORITY = "lower_priority"
    PAGE_EXISTS = "page_exists"


class PersonFacts(NamedTuple):
    """What the fan-out reads of a candidate: an immutable value, changed with ``_replace``.

    A named tuple rather than an attrs value (like `notify_core.inbox.ports.Entry`): a host
    builds one per candidate of every fan-out, and a frozen attrs class costs three times as
    much to build (docs/decisions.md). Build it with keywords.

    Attributes:
        active: the account is active.
        human: a person (not an agent or an app).
        system: a system account (never a recipient).
        groups: the groups the person belongs to.
        email: the address, if any.
        verified: the address is verified (N4).
        prefs: the person's stored choices (N2).
    """

    active: bool = True
    human: bool = True
    system: bool = False
    groups: frozenset[str] = frozenset()
    email: str | None = None
    verified: bool = False
    prefs: InboxPrefs = NO_PREFS

    @property
    def recipient(self) -> bool:
        """Whether the account may receive anything: active, human, not a system account."""
        return self.active and self.human and not self.system


@attrs.frozen(kw_only=True)
class InboxEvent:
    """An event of the wiki as the fan-out sees it.

    Args:
        id: the event's id (idempotency key of coalescing).
        type: the event type, e.g. ``page.edited``.
        origin: ``user``, ``import`` or ``bulk`` (N6).
        actor: who acted; never a recipient.
        site: the site of the page.
        page: the page's path and tags, as they are after the event (as they were before a
            deletion).
        ids: the ids the coalescing keys are made of: ``page``, ``comment``, ``parent``,
            ``submission``.
        variant: the event's variant (N1).
        parent_author: the author of the parent comment of a reply.
        previous_mentions: people mentioned before an edit of a comment (only new ones
            are told).
        host: the host category a ``category.event`` is of (N13): the one that may fire.
    """

    id: str
    type: str
    origin: Origin = Origin.USER
    actor: str | None = None
    site: str | None = None
    page: PageFacts | None = None
    ids: Mapping[str, str] = attrs.field(factory=dict)
    variant: str = ""
    parent_author: str | None = None
    previous_mentions: frozenset[str] = frozenset()
    host: Category | None = None


class EntryDecision(NamedTuple):
    """A person gets (or coalesces into) an entry of a category, on these channels."""

    recipient: str
    category: Category
    in_app: bool
    email: bool


class SkipDecision(NamedTuple):
    """A candidate of a category gets no entry from it, and why."""

    recipient: str
    category: Category
    reason: InboxSkip


class CategoryDecisions(NamedTuple):
    """The decisions of one category as columns (`category_decisions`): the entries'
    recipients and channels, and the skipped candidates and why, each by recipient."""

    people: list[str]
    in_app: list[bool]
    email: list[bool]
    skipped: list[str]
    reasons: list[InboxSkip]


@attrs.frozen(kw_only=True)
class FanOut:
    """The fan-out of one event: entries and skips, each by recipient then category key.

    ``access_evaluations`` counts the rule evaluations (one per distinct group set and
    permission, N7).
    """

    entries: tuple[EntryDecision, ...]
    skips: tuple[SkipDecision, ...]
    access_evaluations: int = 0


def firing(event: InboxEvent) -> tuple[Category, ...]:
    """Return the categories that fire for an event, highest priority first (N6).

    A category fires for its event types and origins; ``comment_reply`` only for a comment
    with a parent author; a host category's event (N13) only for its own category.
    """
    host = event.host
    if host is not None:
        return (host,) if event.origin in host.origins else ()
    return tuple(
        category
        for category in categories_for(event.type)
        if event.origin in category.origins
        and (category.key != "comment_reply" or event.parent_author is not None)
    )


_MENTION: Final = CATEGORY_BY_KEY["mention"]


#: Skips: by recipient, then category key (a C-level key).
_BY_RECIPIENT_CATEGORY: Final = operator.attrgetter("recipient", "category.key")

#: A named tuple from a tuple of all its fields, without its Python-level ``__new__``.
_MAKE: Final[Callable[..., Any]] = tuple.__new__

#: Entries: one per recipient, so the recipient alone orders them (a C-level key: the field
#: by position, without the named tuple's property).
_BY_RECIPIENT: Final = operator.itemgetter(0)


def fan_out(
    event: InboxEvent,
    candidates: Mapping[str, Sequence[str]],
    people: Mapping[str, PersonFacts],
    groups: Mapping[str, Group],
    settings: InboxSettings,
    *,
    access: AccessCache | None = None,
) -> FanOut:
    """Decide who gets an entry of an event, on which channels, and why the others do not.

    Args:
        event: the event.
        candidates: per category key, its candidates (watchers, reviewers, the parent's
            author, the mentioned, those who opted in). Only firing categories are read; a
            ``mention`` candidate among ``event.previous_mentions`` is dropped.
        people: the facts of the candidates; a candidate not in it is ``inactive``.
        groups: the instance's groups and their rules (N8).
        settings: sections and whether mail is configured.
        access: the answers of access already computed for this event's page (a fan-out in
            batches hands the same cache to each batch, so a group set costs one evaluation
            per event, N7); a new cache by default.
    """
    if access is None:
        access = AccessCache(groups, event.page)
    fired = firing(event)
    if len(fired) == 1:  # the common case: one category's columns made into decisions
        (category,) = fired
        found = category_decisions(
            event, category, candidates.get(category.key, ()), people, settings, access
        )
        return FanOut(
            entries=tuple(
                map(
                    _MAKE,
                    repeat(EntryDecision),
                    zip(found.people, repeat(category), found.in_app, found.email),
                )
            ),
            skips=tuple(
                map(
                    _MAKE, repeat(SkipDecision), zip(found.skipped, repeat(category), found.reasons)
                )
            ),
            access_evaluations=access.evaluations,
        )
    # Several categories (or none): each decided as columns, in priority order; a person a
    # higher category reached is skipped by the lower ones (N9).
    reached: set[str] = set()
    entries: list[EntryDecision] = []
    skips: list[SkipDecision] = []
    lower_priority = InboxSkip.LOWER_PRIORITY
    for category in fired:
        found = category_decisions(
            event, category, candidates.get(category.key, ()), people, settings, access
        )
        skips.extend(
            map(_MAKE, repeat(SkipDecision), zip(found.skipped, repeat(category), found.reasons))
        )
        for person, in_app, email in zip(found.people, found.in_app, found.email, strict=True):
            if person in reached:
                skips.append(SkipDecision(person, category, lower_priority))
            else:
                reached.add(person)
                entries.append(EntryDecision(person, category, in_app, email))
    entries.sort(key=_BY_RECIPIENT)
    skips.sort(key=_BY_RECIPIENT_CATEGORY)
    return FanOut(entries=tuple(entries), skips=tuple(skips), access_evaluations=access.evaluations)


def category_decisions(
    event: InboxEvent,
    category: Category,
    listed: Sequence[str],
    people: Mapping[str, PersonFacts],
    settings: InboxSettings,
    access: AccessCache,
) -> CategoryDecisions:
    """`fan_out` of an event for which one category fires (``category``, its candidates
    ``listed``), as columns: no value per person (the inbox pipeline builds its entries
    from the columns; `fan_out` builds its decisions from them).

    ``access``: the event's page's answers (`AccessCache` of the instance's groups).
    """
    if category is _MENTION and event.previous_mentions:
        listed = [p for p in listed if p not in event.previous_mentions]
    actor, person_of = event.actor, people.get
    entry_people: list[str] = []
    in_apps: list[bool] = []
    emails: list[bool] = []
    skipped: list[str] = []
    reasons: list[InboxSkip] = []
    add_person, add_in_app, add_email = entry_people.append, in_apps.append, emails.append
    add_skipped, add_reason = skipped.append, reasons.append
    actor_skip, inactive, no_access, section_off, preference = (
        InboxSkip.ACTOR,
        InboxSkip.INACTIVE,
        InboxSkip.NO_ACCESS,
        InboxSkip.SECTION_OFF,
        InboxSkip.PREFERENCE,
    )
    delivery = settings.delivery(category.section)
    section_is_off = delivery is Delivery.OFF
    # A host category checks no page, but only people holding its ``visible_to`` (N13).
    permission = category.access if category.access is not None else category.visible_to
    default_in_app, default_email = category.defaults.in_app, category.defaults.email
    # Whether the section and the instance send email at all (N3, N4), and whether the
    # defaults do to a person with a verified address.
    by_email = settings.mail_configured and delivery is Delivery.EMAIL
    email_by_default = default_email and by_email
    in_app_row, email_row = (category.key, "in_app"), (category.key, "email")
    allowed: dict[frozenset[str], bool] = {}
    # Each candidate once, in recipient order: sorted, a repeat is next to its first.
    previous: str | None = None
    for person in sorted(listed):
        if person == previous:
            continue
        previous = person
        if person == actor:
            add_skipped(person)
            add_reason(actor_skip)
            continue
        facts = person_of(person)
        if facts is None:
            add_skipped(person)
            add_reason(inactive)
            continue
        # By position: a named tuple's fields by name cost a generic attribute lookup each.
        active, human, system, person_groups, address, verified, prefs = facts
        if not (active and human) or system:
            add_skipped(person)
            add_reason(inactive)
            continue
        if permission is not None:
            held = allowed.get(person_groups)
            if held is None:
                held = allowed[person_groups] = access.holds(person_groups, permission)
            if not held:
                add_skipped(person)
                add_reason(no_access)
                continue
        if section_is_off:
            add_skipped(person)
            add_reason(section_off)
            continue
        rows = prefs.rows
        if rows:  # `channels_for` without its two values: the rows over the defaults
            in_app = rows.get(in_app_row, default_in_app)
            email = rows.get(email_row, default_email) and by_email and verified
            email = email and bool(address)
        else:  # the defaults: the common case, without building a value
            in_app = default_in_app
            email = email_by_default and verified and bool(address)
        if in_app or email:
            add_person(person)
            add_in_app(in_app)
            add_email(email)
        else:
            add_skipped(person)
            add_reason(preference)
    return CategoryDecisions(entry_people, in_apps, emails, skipped, reasons)
