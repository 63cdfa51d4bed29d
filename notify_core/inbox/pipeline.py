"""The inbox path of the pipeline (rules N5-N12, H2): wiki events to inbox entries.

classify (the firing categories and their candidates) -> gather facts in one batch -> the
fan-out decision (`fan_out`) -> coalesce each entry into the store. Written against the ports
of `notify_core.inbox.ports`, like the hint path; the clock is the event's time. The facts
are those before the event, with the event's own change of the page laid over them (a rename
is checked against the new path, a deletion against the page as it was and its watchers at
the moment of the delete, N8, N9); the event is recorded afterwards.

Email: entries get their state (``pending`` with ``email_after``); `InboxPipeline.drain` is
the drain (E4: due entries' mails, sent or skipped; on PostgreSQL `notify_pg.mail.drain`, E5).
``email_after``: by default `scheduled_email_after` (`notify_core.mail.email_after_for`, E2,
with the person's schedule and zones); a schedule change moves pending entries (E3).

The pipeline's other sides have rooms of their own: the cadence (`notify_core.inbox.cadence`),
the replay's mail drain (`notify_core.inbox.sending`) and the reads
(`notify_core.inbox.reads`); this module re-exports their names it always had.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Collection, Mapping, Sequence
from datetime import datetime
from typing import ClassVar, Final

import attrs

from notify_core.events.log import Event
from notify_core.inbox.cadence import (
    EmailAfter,
    due_is_shared,
    email_schedule,
    immediate_email_after,
    reschedule_entries,
    scheduled_email_after,
)
from notify_core.inbox.categories import (
    CATEGORY_BY_KEY,
    Candidates,
    Category,
    Origin,
    event_variant,
)
from notify_core.inbox.coalesce import EmailState, EntryState, transition
from notify_core.inbox.columns import (
    EntryDecisionKind,
    EventValues,
    InboxLine,
    category_lines,
)
from notify_core.inbox.fanout import (
    EntryDecision,
    InboxEvent,
    InboxSkip,
    SkipDecision,
    fan_out,
    firing,
)
from notify_core.inbox.host_categories import HOST_EVENT, host_event
from notify_core.inbox.memory.entries import EntryMemory
from notify_core.inbox.memory.wiki import WikiMemory
from notify_core.inbox.payloads import page_after, strings
from notify_core.inbox.ports import (
    Entry,
    EntryStore,
    EntryTarget,
    PageInfo,
    WikiFacts,
    WikiUser,
    created_as_draft,
    forget_entries,
    people_facts,
    save_all,
    take_ids,
    unread_all,
)
from notify_core.inbox.reads import READ_TYPES, apply_read
from notify_core.inbox.sending import MailLine, drain_mails
from notify_core.values.instants import require_instant
from notify_core.values.record_rules import RecordFacts

__all__ = [
    "ACTIVITY_TYPES",
    "INBOX_TYPES",
    "EmailAfter",
    "EntryDecisionKind",
    "InboxLine",
    "InboxPipeline",
    "MailLine",
    "due_is_shared",
    "email_schedule",
    "immediate_email_after",
    "scheduled_email_after",
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
        HOST_EVENT,
    }
)
#: Events that change entries: views, reads, dismissals (H2).
_READS: Final = READ_TYPES
#: Every event type the inbox path reads (the rest of a log is the hints' alone).
INBOX_TYPES: Final = frozenset(
    {
        *ACTIVITY_TYPES,
        *_READS,
        "user.created",
        "user.updated",
        "user.forgotten",
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
        "category.declared",
    }
)


@attrs.define
class InboxPipeline:
    """Runs wiki events through fan-out and coalescing, and applies reads (H2).

    Args:
        wiki: the host's facts (and, in memory, the recorder of wiki events).
        entries: the entries.
        email_after: the cadence (E2); `scheduled_email_after` by default.
    """

    wiki: WikiFacts = attrs.field(factory=WikiMemory)
    entries: EntryStore = attrs.field(factory=EntryMemory)
    email_after: EmailAfter = scheduled_email_after
    #: The seq of the latest activity event fanned out: an event fans out once (N10), as
    #: PostgreSQL's outbox claims it once, even when its entry has closed since.
    fanned_out_through: int = 0
    #: Apply one firing category's decisions as columns (`apply_columns`); ``False``: the
    #: loop over the decisions, the plain reference the columns are tested against.
    columns: ClassVar[bool] = True

    def handle(self, event: Event) -> list[InboxLine]:
        """Decide an event's entries (or apply its read), then record it; return the lines.

        Lines of one event come by recipient, then category.
        """
        kind = event.type
        lines: list[InboxLine] = []
        if kind in ACTIVITY_TYPES:
            if event.seq <= self.fanned_out_through:
                return lines
            self.fanned_out_through = event.seq
            lines = self._fan_out(event)
        elif kind in _READS:
            self._read(event)
        elif kind == "user.updated":
            before = self.wiki.user(str(event.payload["user"]))
            self.wiki.record(event)
            self._reschedule(event, before)
            return lines
        elif kind == "user.forgotten":
            forget_entries(self.entries, str(event.payload["user"]))
        self.wiki.record(event)
        return lines

    def _reschedule(self, event: Event, before: WikiUser | None) -> None:
        """E3: a changed schedule (daily: hour or zone) moves the person's pending entries."""
        after = self.wiki.user(str(event.payload["user"]))
        reschedule_entries(self.wiki, self.entries, before, after, event.occurred_at)

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
        wiki = self.wiki
        if event.type == HOST_EVENT:
            inbox, candidates, values = host_event(wiki, event)
            site = values.site_info
        else:
            found = self._inbox_event(event)
            if found is None:
                return []
            inbox, page = found
            candidates = self._candidates(event, inbox, page)
            site = wiki.site(page.site)
            values = _event_values(wiki, event, inbox, page)
        if site is not None and not site.notifications:
            return self._site_off(event, inbox, candidates)  # N5: the emit writes nothing
        if len(candidates) == 1 and self.columns:
            ((key, listed),) = candidates.items()
            return category_lines(
                wiki,
                self.entries,
                self.email_after,
                inbox,
                inbox.host or CATEGORY_BY_KEY[key],
                listed,
                values,
            )
        people: Collection[str]
        if len(candidates) == 1:  # one firing category: its list, each candidate once
            (people,) = candidates.values()
        else:
            people = {person for listed in candidates.values() for person in listed}
        facts = people_facts(wiki, people)
        result = fan_out(inbox, candidates, facts, wiki.groups(), wiki.settings())
        one_category = len(candidates) == 1
        lines = self._apply(values, inbox, result.entries, one_category)
        if result.skips:
            lines.extend(self._skip_lines(event, inbox, result.skips))
            # Entries and skips each come by recipient (then category); one firing category
            # has each recipient once, so the recipient alone orders the merge.
            lines.sort(key=_BY_RECIPIENT if len(candidates) == 1 else _LINE_ORDER)
        return lines

    def _site_off(
        self, event: Event, inbox: InboxEvent, candidates: Mapping[str, list[str]]
    ) -> list[InboxLine]:
        # Only real candidates get a line: people an edited comment already mentioned are
        # none (`fan_out` drops them too, with the site on), so they get no line here either.
        previous = inbox.previous_mentions
        lines = [
            self._skip_line(
                event,
                inbox,
                SkipDecision(person, inbox.host or CATEGORY_BY_KEY[key], InboxSkip.SITE_OFF),
            )
            for key, listed in candidates.items()
            for person in dict.fromkeys(listed)
            if not (key == "mention" and person in previous)
        ]
        lines.sort(key=_LINE_ORDER)
        return lines

    def _skip_lines(
        self, event: Event, inbox: InboxEvent, skips: Sequence[SkipDecision]
    ) -> list[InboxLine]:
        """`_skip_line` of each skip, with each category's key worked out once."""
        seq, at, variant, site, ids = (
            event.seq,
            event.occurred_at,
            inbox.variant,
            inbox.site,
            (inbox.ids),
        )
        skip_kind = EntryDecisionKind.SKIP
        keys: dict[str, str] = {}
        make_line = tuple.__new__  # InboxLine without its Python-level __new__ (all 10 fields)
        lines = []
        for person, category, reason in skips:
            category_key = category.key
            key = keys.get(category_key)
            if key is None:
                key = keys[category_key] = category.group_key(ids)
            lines.append(
                make_line(
                    InboxLine,
                    (seq, at, person, category_key, variant, key, skip_kind, site, None, reason),
                )
            )
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
        self,
        values: EventValues,
        inbox: InboxEvent,
        decisions: Sequence[EntryDecision],
        one_category: bool = False,
    ) -> list[InboxLine]:
        """Coalesce each entry decision into the person's unread entry of its key (N10-N12).

        What is the same for every person of the event (keys, the snapshot, the delay, the
        checked time) is worked out once. Coalescing is a pure function of the entry's state
        and the person's channels, so people whose states and channels agree share one new
        state (a value), and a due time that does not depend on the person (``immediate``, a
        category without digest) is computed once per schedule: a fan-out to thousands of
        watchers builds a handful of states and due times, not one each. The store is read
        and written in batches (`unread_all`, `take_ids`, `save_all`); ``one_category``: every
        decision is of one category.
        """
        wiki, entries = self.wiki, self.entries
        seq, at, event_id, variant, actor, site, target, delay, site_info = values
        ids = inbox.ids
        email_after, user = self.email_after, wiki.user
        # Due times shared by every person of a schedule (keyed by the schedule alone, or by
        # the pair with a daily hour), one table per ``digest``: only the default cadence is
        # known to depend on nothing else for them (E2).
        shared = email_after is scheduled_email_after
        dues_by_digest: dict[bool, dict[str | tuple[str, int], datetime]] = {}
        dues: dict[str | tuple[str, int], datetime] | None = None
        # (id of the old state, in_app, email, due) -> (old state, new state); the old state
        # is held so that its id cannot be reused by another object during the event.
        states: dict[
            tuple[int, bool, bool, datetime | None], tuple[EntryState | None, EntryState]
        ] = {}
        none, new_kind, coalesce_kind = (
            EmailState.NONE,
            EntryDecisionKind.NEW,
            EntryDecisionKind.COALESCE,
        )
        lines: list[InboxLine] = []
        olds, take = _open_entries(entries, decisions, ids, one_category)
        append = lines.append
        written: list[Entry] = []
        write = written.append
        # Entries and lines without the named tuples' Python-level __new__ (all fields given).
        make = tuple.__new__
        last: Category | None = None
        key = category_key = ""
        take_id: Callable[[], str] = _no_ids
        # The previous person's inputs and new state (``last_new`` is read only after a match,
        # and the first person never matches: ``last_in_app`` is no bool).
        last_state: EntryState | None = None
        last_in_app: bool | None = None
        last_email: bool | None = None
        last_due: datetime | None = None
        last_new: EntryState | None = None
        for (person, category, in_app, email), old in zip(decisions, olds, strict=True):
            if category is not last:
                last, category_key = category, category.key
                key = category.group_key(ids)
                take_id = take.get(key, _no_ids)
                if shared:
                    dues = dues_by_digest.setdefault(category.digest, {})
            # The entry's id, creation time and decision, worked out with its state.
            if old is None:  # a new entry: the key's next id, created now
                state = None
                entry_id = take_id()
                since = at
                kind = new_kind
            else:  # by position: a named tuple's fields by name are slower to read
                entry_id, _, _, _, state, since, _ = old
                kind = coalesce_kind
            due = None
            if email and (state is None or state.email is none):  # an email starts (E1)
                found_user = user(person)
                if dues is None or found_user is None or type(person) is not str:
                    due = email_after(found_user, category, at, delay, site_info)
                else:
                    # By position (`WikiUser`: id, zone, locale, schedule, daily hour): a
                    # named tuple's fields by name cost a generic attribute lookup each.
                    _, _, _, schedule, hour = found_user
                    # Only values `email_schedule` caches share a due time: an exact str and
                    # None or an exact int (so equal keys mean equal values).
                    shared_key: str | tuple[str, int] | None = None
                    if type(schedule) is str:
                        if hour is None:
                            shared_key = schedule
                        elif type(hour) is int:
                            shared_key = (schedule, hour)
                    if shared_key is None:
                        due = email_after(found_user, category, at, delay, site_info)
                    else:
                        due = dues.get(shared_key)
                        if due is None:
                            due = email_after(found_user, category, at, delay, site_info)
                            if due_is_shared(found_user, category):
                                dues[shared_key] = due
            if (
                state is last_state
                and in_app is last_in_app
                and email is last_email
                and due is last_due
            ):
                new_state = last_new  # a run of people alike: no lookup
            else:
                memo = (id(state), in_app, email, due)
                known = states.get(memo)
                if known is None:
                    new_state = transition(state, event_id, variant, at, in_app, email, due, actor)
                    states[memo] = (state, new_state)
                else:
                    new_state = known[1]
                last_state, last_in_app, last_email, last_due, last_new = (
                    state,
                    in_app,
                    email,
                    due,
                    new_state,
                )
            entry = make(Entry, (entry_id, person, category_key, key, new_state, since, target))
            write(entry)
            append(
                make(
                    InboxLine,
                    (seq, at, person, category_key, variant, key, kind, site, entry, None),
                )
            )
        save_all(entries, written)
        return lines

    # --- the mail drain (E4) ----------------------------------------------------------------

    def next_mail_due(self) -> datetime | None:
        """Return when the next pending email falls due."""
        return self.entries.next_due()

    def drain(self, at: datetime, records: RecordFacts | None = None) -> list[MailLine]:
        """Send (in a replay: decide) the mails of every pending entry due at or before ``at``
        (`notify_core.inbox.sending.drain_mails`), shaped by ``records`` (M1-M6) if given."""
        return drain_mails(self.wiki, self.entries, at, records)

    # --- reads (H2) -------------------------------------------------------------------------

    def _read(self, event: Event) -> None:
        apply_read(self.entries, event)


def _event_values(wiki: WikiFacts, event: Event, inbox: InboxEvent, page: PageInfo) -> EventValues:
    """What every entry and line of the event shares: its time (checked once), ids, the
    snapshot of its page (N11), the email delay and the site."""
    comment_id = inbox.ids.get("comment")
    comment = wiki.comment(comment_id) if comment_id is not None else None
    excerpt = event.payload.get("excerpt", comment.excerpt if comment else None)
    target = EntryTarget(
        site=page.site,
        page=page.id,
        comment=comment_id,
        title=page.title,
        path=page.path,
        locale=page.locale,
        excerpt=None if excerpt is None else str(excerpt),
        draft=created_as_draft(event),
    )
    return EventValues(
        event.seq,
        require_instant(event.occurred_at, "at"),
        inbox.id,
        inbox.variant,
        event.actor,
        page.site,
        target,
        wiki.email_delay(),
        wiki.site(page.site),
    )


def _open_entries(
    entries: EntryStore,
    decisions: Sequence[EntryDecision],
    ids: Mapping[str, str],
    one_category: bool,
) -> tuple[Sequence[Entry | None], dict[str, Callable[[], str]]]:
    """The unread entry of each decision, and per key the taker of the new entries' ids.

    A person has one entry decision per event (`fan_out` reaches each person once), so
    no decision's entry is another's unread one: the store is read before any write, and
    the ids of the new entries are taken in one call per key (`take_ids`).
    """
    if not decisions:
        return [], {}
    olds: Sequence[Entry | None]
    fresh: dict[str, list[str]] = {}
    if one_category:
        key = decisions[0].category.group_key(ids)
        people = list(map(_RECIPIENT, decisions))
        olds = unread_all(entries, key, people)
        fresh[key] = [person for person, old in zip(people, olds, strict=True) if old is None]
    else:
        unread = entries.unread
        found: list[Entry | None] = []
        remember = found.append
        last: Category | None = None
        starting: list[str] = []
        for person, category, _, _ in decisions:
            if category is not last:
                last, key = category, category.group_key(ids)
                starting = fresh.setdefault(key, [])
            old = unread(person, key)
            remember(old)
            if old is None:
                starting.append(person)
        olds = found
    take = {
        key: iter(take_ids(entries, key, people)).__next__
        for key, people in fresh.items()
        if people
    }
    return olds, take


def _no_ids() -> str:
    """The id taker of a key without new entries: never called (`_open_entries` took the ids
    of every key that has new entries)."""
    raise AssertionError("a new entry on a key whose ids were not taken")


def _variant(event: Event) -> str:
    given = event.payload.get("variant")
    return event_variant(event.type, None if given is None else str(given))


#: Lines of one event: by recipient, then category (`InboxLine` fields 2 and 3).
_LINE_ORDER: Final = operator.itemgetter(2, 3)
#: Lines of one event with one firing category (each recipient once).
_BY_RECIPIENT: Final = operator.itemgetter(2)
#: A decision's recipient, by position.
_RECIPIENT: Final = operator.itemgetter(0)
