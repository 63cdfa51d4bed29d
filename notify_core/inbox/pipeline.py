"""The inbox path of the pipeline (behaviour.md N5-N12, H2): wiki events to inbox entries.

classify (the firing categories and their candidates) -> gather facts in one batch -> the
fan-out decision (`fan_out`) -> coalesce each entry into the store. Written against the ports
of `notify_core.inbox.ports`, like the hint path; the clock is the event's time. The facts
are those before the event, with the event's own change of the page laid over them (a rename
is checked against the new path, a deletion against the page as it was and its watchers at
the moment of the delete, N8, N9); the event is recorded afterwards.

Email: entries get their state (``pending`` with ``email_after``); the drain that sends mails
is not part of this path yet. ``email_after`` comes from the callable handed in
(`immediate_email_after` by default: E2's ``immediate`` rule).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Final

import attrs

from notify_core.events import Event
from notify_core.inbox.categories import (
    CATEGORY_BY_KEY,
    Candidates,
    Category,
    Origin,
    event_variant,
)
from notify_core.inbox.coalesce import EmailState, EntryState, coalesce, read
from notify_core.inbox.fanout import (
    EntryDecision,
    InboxEvent,
    InboxSkip,
    SkipDecision,
    fan_out,
    firing,
)
from notify_core.inbox.memory import EntryMemory, WikiMemory, page_after, strings
from notify_core.inbox.ports import Entry, EntryStore, PageInfo, WikiFacts, WikiUser
from notify_core.instants import format_instant_cached

__all__ = [
    "ACTIVITY_TYPES",
    "INBOX_TYPES",
    "EmailAfter",
    "EntryDecisionKind",
    "InboxLine",
    "InboxPipeline",
    "immediate_email_after",
    "inbox_line_to_json",
]

#: Events that may give entries.
ACTIVITY_TYPES: Final = frozenset(
    {
        "page.created",
        "page.edited",
        "page.renamed",
        "page.deleted",
        "comment.created",
        "comment.edited",
        "submission.created",
        "submission.updated",
    }
)
#: Events that change entries: views, reads, dismissals (H2).
_READS: Final = frozenset({"page.viewed", "inbox.read", "inbox.dismissed"})
#: Every event type the inbox path reads (the rest of a log is the hints' alone).
INBOX_TYPES: Final = frozenset(
    {
        *ACTIVITY_TYPES,
        *_READS,
        "user.created",
        "user.updated",
        "site.created",
        "site.updated",
        "group.created",
        "group.updated",
        "group.member_added",
        "group.member_removed",
        "review_rule.set",
        "page.watched",
        "page.unwatched",
        "page.restored",
        "comment.deleted",
        "inbox_pref.updated",
        "inbox_pref.stop_all_email",
        "notifications.settings",
    }
)
#: What viewing a page (or its talk tab) marks read (H2).
_VIEW_READS: Final = {
    False: frozenset({"watched_page", "page_created"}),
    True: frozenset({"watched_page_comment", "comment_reply", "mention"}),
}


class EntryDecisionKind(enum.StrEnum):
    """What an event did for a person on a category (formats.md section 4)."""

    NEW = "new"
    COALESCE = "coalesce"
    SKIP = "skip"


@attrs.frozen(kw_only=True)
class InboxLine:
    """One entry decision for one person and category: the unit of the inbox's replay output."""

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


#: Computes ``email_after`` (E2) for a person (``None``: unknown), a category and an instant.
EmailAfter = Callable[[WikiUser | None, Category, datetime, timedelta], datetime]


def immediate_email_after(
    user: WikiUser | None, category: Category, now: datetime, delay: timedelta
) -> datetime:
    """E2's ``immediate`` rule: ``now + email_delay``, whatever the schedule."""
    return now + delay


@attrs.define
class InboxPipeline:
    """Runs wiki events through fan-out and coalescing, and applies reads (H2).

    Args:
        wiki: the host's facts (and, in memory, the recorder of wiki events).
        entries: the entries.
        email_after: the cadence (E2); `immediate_email_after` by default.
    """

    wiki: WikiFacts = attrs.field(factory=WikiMemory)
    entries: EntryStore = attrs.field(factory=EntryMemory)
    email_after: EmailAfter = immediate_email_after

    def handle(self, event: Event) -> list[InboxLine]:
        """Decide an event's entries (or apply its read), then record it; return the lines.

        Lines of one event come by recipient, then category.
        """
        kind = event.type
        lines: list[InboxLine] = []
        if kind in ACTIVITY_TYPES:
            lines = self._fan_out(event)
        elif kind in _READS:
            self._read(event)
        self.wiki.record(event)
        return lines

    # --- fan-out ----------------------------------------------------------------------------

    def _inbox_event(self, event: Event) -> tuple[InboxEvent, PageInfo] | None:
        """The event as the fan-out sees it, with the page it is about; ``None``: unknown page."""
        p, kind, wiki = event.payload, event.type, self.wiki
        ids: dict[str, str] = {}
        parent_author = None
        previous: frozenset[str] = frozenset()
        if kind.startswith("comment."):
            comment_id = str(p["comment"])
            comment = wiki.comment(comment_id)
            page_id = str(p["page"]) if "page" in p else (comment.page if comment else None)
            ids["comment"] = comment_id
            if kind == "comment.edited":
                previous = comment.mentions if comment is not None else frozenset()
            elif "parent" in p:
                ids["parent"] = str(p["parent"])
                parent = wiki.comment(ids["parent"])
                parent_author = parent.author if parent is not None else None
        else:
            page_id = str(p["page"])
            if kind.startswith("submission."):
                ids["submission"] = str(p["submission"])
        if page_id is None:
            return None
        ids["page"] = page_id
        if kind == "page.created":
            page: PageInfo | None = PageInfo(
                id=page_id,
                site=str(p["site"]),
                path=str(p["path"]),
                locale=str(p["locale"]),
                title=str(p["title"]),
                tags=strings(p.get("tags")),
            )
        else:
            page = wiki.page(page_id)
            if page is not None and kind in ("page.edited", "page.renamed"):
                page = page_after(page, event)  # access "now": after the edit or rename
        if page is None:
            return None
        inbox_event = InboxEvent(
            id=str(event.seq),
            type=kind,
            origin=Origin(event.origin or "user"),
            actor=event.actor,
            site=page.site,
            page=page.access,
            ids=ids,
            variant=_variant(event),
            parent_author=parent_author,
            previous_mentions=previous,
        )
        return inbox_event, page

    def _candidates(self, event: Event, inbox: InboxEvent, page: PageInfo) -> dict[str, list[str]]:
        wiki = self.wiki
        out: dict[str, list[str]] = {}
        watchers: list[str] | None = None
        for category in firing(inbox):
            source = category.candidates
            if source is Candidates.WATCHERS:
                if watchers is None:
                    watchers = list(wiki.watchers(page.id))
                out[category.key] = watchers
            elif source is Candidates.REVIEWERS:
                out[category.key] = list(wiki.reviewers(page))
            elif source is Candidates.PARENT_AUTHOR:
                out[category.key] = [inbox.parent_author] if inbox.parent_author else []
            elif source is Candidates.MENTIONED:
                out[category.key] = sorted(strings(event.payload.get("mentions")))
            else:
                out[category.key] = list(wiki.opted_in(category.key))
        return out

    def _fan_out(self, event: Event) -> list[InboxLine]:
        found = self._inbox_event(event)
        if found is None:
            return []
        inbox, page = found
        wiki = self.wiki
        candidates = self._candidates(event, inbox, page)
        site = wiki.site(page.site)
        if site is not None and not site.notifications:
            return self._site_off(event, inbox, candidates)  # N5: the emit writes nothing
        people: set[str] = set()
        for listed in candidates.values():
            people.update(listed)
        facts = wiki.people(people)
        result = fan_out(inbox, candidates, facts, wiki.groups(), wiki.settings())
        lines = [self._apply(event, inbox, page, decision) for decision in result.entries]
        skips = [self._skip_line(event, inbox, skip) for skip in result.skips]
        if skips:
            lines.extend(skips)
            lines.sort(key=_line_order)
        return lines

    def _site_off(
        self, event: Event, inbox: InboxEvent, candidates: Mapping[str, list[str]]
    ) -> list[InboxLine]:
        lines = [
            self._skip_line(
                event, inbox, SkipDecision(person, CATEGORY_BY_KEY[key], InboxSkip.SITE_OFF)
            )
            for key, listed in candidates.items()
            for person in dict.fromkeys(listed)
        ]
        lines.sort(key=_line_order)
        return lines

    def _skip_line(self, event: Event, inbox: InboxEvent, skip: SkipDecision) -> InboxLine:
        return InboxLine(
            seq=event.seq,
            at=event.occurred_at,
            recipient=skip.recipient,
            category=skip.category.key,
            variant=inbox.variant,
            group_key=skip.category.group_key(inbox.ids),
            decision=EntryDecisionKind.SKIP,
            site=inbox.site,
            reason=skip.reason,
        )

    def _apply(
        self, event: Event, inbox: InboxEvent, page: PageInfo, decision: EntryDecision
    ) -> InboxLine:
        """Coalesce one entry decision into the person's unread entry of its key (N10-N12)."""
        person, category = decision.recipient, decision.category
        key = category.group_key(inbox.ids)
        at = event.occurred_at
        entries = self.entries
        old = entries.unread(person, key)
        state = old.state if old is not None else None
        starts = decision.email and (state is None or state.email is EmailState.NONE)
        due = (
            self.email_after(self.wiki.user(person), category, at, self.wiki.email_delay())
            if starts
            else None
        )
        new_state = coalesce(
            state,
            event=inbox.id,
            variant=inbox.variant,
            at=at,
            in_app=decision.in_app,
            email_on=decision.email,
            email_after=due,
            actor=event.actor,
        )
        comment_id = inbox.ids.get("comment")
        comment = self.wiki.comment(comment_id) if comment_id is not None else None
        excerpt = event.payload.get("excerpt", comment.excerpt if comment else None)
        entry = Entry(
            id=old.id if old is not None else entries.next_id(person, key),
            person=person,
            category=category.key,
            group_key=key,
            site=page.site,
            page=page.id,
            state=new_state,
            created_at=old.created_at if old is not None else at,
            comment=comment_id,
            title=page.title,
            path=page.path,
            locale=page.locale,
            excerpt=None if excerpt is None else str(excerpt),
        )
        entries.save(entry)
        return InboxLine(
            seq=event.seq,
            at=at,
            recipient=person,
            category=category.key,
            variant=inbox.variant,
            group_key=key,
            decision=EntryDecisionKind.NEW if old is None else EntryDecisionKind.COALESCE,
            site=page.site,
            entry=entry,
        )

    # --- reads (H2) -------------------------------------------------------------------------

    def _read(self, event: Event) -> None:
        p, entries = event.payload, self.entries
        if event.type == "inbox.dismissed":
            found = entries.get(str(p["id"]))
            if found is not None and (event.audience in (None, found.person)):
                entries.dismiss(found.id)
            return
        person = str(event.audience)
        if event.type == "page.viewed":
            page, categories = str(p["page"]), _VIEW_READS[p.get("talk") is True]
            chosen = [
                e for e in entries.unread_of(person) if e.page == page and e.category in categories
            ]
        else:
            ids = set(p.get("ids", ())) if "ids" in p else None  # type: ignore[call-overload]
            wanted = set(p.get("categories", ())) if "categories" in p else None  # type: ignore[call-overload]
            page_filter = str(p["page"]) if "page" in p else None
            chosen = [
                e
                for e in entries.unread_of(person)
                if (ids is None or e.id in ids)
                and (wanted is None or e.category in wanted)
                and (page_filter is None or e.page == page_filter)
            ]
        for entry in chosen:
            if entry.state.in_app:  # an email-only entry is in no inbox: it closes by its email
                entries.save(attrs.evolve(entry, state=read(entry.state)))


def _variant(event: Event) -> str:
    given = event.payload.get("variant")
    return event_variant(event.type, None if given is None else str(given))


def _line_order(line: InboxLine) -> tuple[str, str]:
    return line.recipient, line.category


def inbox_line_to_json(line: InboxLine) -> dict[str, object]:
    """Return the replay output object of an entry line (formats.md section 4), in order."""
    out: dict[str, object] = {"seq": line.seq, "trigger": "inbox", "at": _instant(line.at)}
    out["recipient"] = line.recipient
    if line.site is not None:
        out["site"] = line.site
    out["category"] = line.category
    out["variant"] = line.variant
    out["group_key"] = line.group_key
    entry = line.entry
    if entry is not None:
        out["entry"] = entry.id
    out["decision"] = line.decision.value
    if line.reason is not None:
        out["reason"] = line.reason.value
    if entry is not None:
        state: EntryState = entry.state
        out["count"] = state.count
        out["in_app"] = state.in_app
        out["email"] = state.email.value
        if state.email_after is not None:
            out["email_after"] = _instant(state.email_after)
    return out


def _instant(value: datetime) -> str:
    return format_instant_cached(value)
