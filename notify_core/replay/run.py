"""Replay an event log through the pipeline: hints out, a summary, and policy comparison.

No I/O: `Replay` takes text lines and yields hints; the CLI reads files and writes JSON. The
output of the same lines and policy is the same, byte for byte (formats.md section 3).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Container, Iterable, Iterator, Mapping
from datetime import datetime, timedelta
from typing import Final, TypeVar

import attrs

from notify_core.events.log import PAYLOADS, Event, EventError, EventLogReader
from notify_core.hints.decide import Collect, Policy, Skip, SkipReason, Via
from notify_core.hints.levels import parse_level
from notify_core.hints.memory import MemoryStore
from notify_core.hints.pipeline import Hint, Pipeline, Trigger
from notify_core.inbox.memory.wiki import WikiMemory
from notify_core.inbox.pipeline import (
    INBOX_TYPES,
    EntryDecisionKind,
    InboxLine,
    InboxPipeline,
    MailLine,
)

# The lines' shapes live in `notify_core.replay.lines`; these names stay importable from here, where
# users and the docs have imported them since the first release.
from notify_core.replay.lines import Item, UnknownReference
from notify_core.replay.records import RECORD_TYPES, ReplayRecords
from notify_core.values.errors import InvalidInput
from notify_core.values.instants import MAX_DURATION, seconds
from notify_core.values.zones import TZDATA_VERSION

__all__ = [
    "KNOWN",
    "POLICY_KEYS",
    "REFERENCES",
    "Counts",
    "Replay",
    "Summary",
    "compare",
    "policy_from_mapping",
]

#: The keys of a policy file (formats.md section 3) and their defaults.
POLICY_KEYS: Final[Mapping[str, object]] = {
    "coalesce_window_s": 90,
    "mobile_delay_when_desktop_active_s": 60,
    "instance_default_level": "mentions",
    "default_admin_enabled": True,
    "default_input_needed_breaks_quiet_hours": False,
    "badge_sync_min_interval_s": 60,
}


def policy_from_mapping(values: Mapping[str, object]) -> Policy:
    """Build a `Policy` from the keys of a policy file; absent keys take their defaults.

    Raises:
        InvalidInput: an unknown key (``unknown_key``) or a value of the wrong type, with the
            key as pointer.
    """
    for key in values:
        if key not in POLICY_KEYS:
            known = ", ".join(POLICY_KEYS)
            raise InvalidInput(
                "unknown_key", f"unknown policy key {key!r} (known: {known})", f"/{key}"
            )
    merged = {**POLICY_KEYS, **values}

    def duration(key: str) -> timedelta:
        try:
            return seconds(merged[key], f"/{key}")
        except InvalidInput as error:
            raise InvalidInput(
                "invalid_duration",
                f"{key} must be a number of seconds from 0 to {MAX_DURATION.total_seconds():,.0f}",
                f"/{key}",
            ) from error

    def flag(key: str) -> bool:
        value = merged[key]
        if not isinstance(value, bool):
            raise InvalidInput("invalid_type", f"{key} must be true or false", f"/{key}")
        return value

    return Policy(
        coalesce_window=duration("coalesce_window_s"),
        mobile_delay_when_desktop_active=duration("mobile_delay_when_desktop_active_s"),
        instance_default_level=parse_level(
            merged["instance_default_level"], "/instance_default_level"
        ),
        default_admin_enabled=flag("default_admin_enabled"),
        default_input_needed_breaks_quiet_hours=flag("default_input_needed_breaks_quiet_hours"),
        badge_sync_min_interval=duration("badge_sync_min_interval_s"),
    )


#: The objects each event type names, as (member, type of object): a payload member, or
#: ``@audience`` for the envelope's. A list member names one object per item; the type
#: ``target`` is a ``{kind, id}`` member naming an object of type ``kind``. Members that create
#: the object (``user.created``'s ``user``) are not references; ``user.updated`` may create a
#: person too; so do ``site.updated``, ``group.updated`` and ``submission.updated`` for their
#: own object (the inbox applies them as definitions). Only types in `KNOWN` are checked.
REFERENCES: Final[Mapping[str, tuple[tuple[str, str], ...]]] = {
    "space.archived": (("space", "space"),),
    "channel.created": (("space", "space"), ("participants", "user")),
    "channel.updated": (("channel", "channel"),),
    "channel.archived": (("channel", "channel"),),
    "thread.created": (("channel", "channel"),),
    "access.granted": (("user", "user"), ("target", "target")),
    "access.revoked": (("user", "user"), ("target", "target")),
    "device.registered": (("user", "user"),),
    "device.approved": (("device", "device"),),
    "device.revoked": (("device", "device"),),
    "push.registered": (("device", "device"),),
    "presence.changed": (("device", "device"), ("focus", "thread")),
    "notification_pref.updated": (("@audience", "user"),),
    "quiet_hours.updated": (("@audience", "user"),),
    "settings.updated": (("@audience", "user"),),
    "message.created": (("thread", "thread"), ("author", "user"), ("mention_ids", "user")),
    "run.state_changed": (
        ("triggered_by", "user"),
        ("agent", "user"),
        ("thread", "thread"),
        ("channel", "channel"),
    ),
    "access.expiring": (("@audience", "user"),),
    "device.pending": (("@audience", "user"),),
    "read_state.updated": (("@audience", "user"), ("thread", "thread")),
    "record.set": (("@audience", "user"),),
    "record.suspended": (("@audience", "user"),),
    "record.deleted": (("@audience", "user"),),
    # The wiki's events (formats.md section 4); a page deleted is still known (decisions.md).
    "user.forgotten": (("user", "user"),),
    "group.member_added": (("group", "group"), ("user", "user")),
    "group.member_removed": (("group", "group"), ("user", "user")),
    "review_rule.set": (("site", "site"), ("reviewer_groups", "group")),
    "page.watched": (("page", "page"), ("user", "user")),
    "page.unwatched": (("page", "page"), ("user", "user")),
    "inbox_pref.updated": (("@audience", "user"),),
    "inbox_pref.stop_all_email": (("@audience", "user"),),
    "page.created": (("site", "site"),),
    "page.edited": (("page", "page"),),
    "page.renamed": (("page", "page"),),
    "page.deleted": (("page", "page"),),
    "page.restored": (("page", "page"),),
    "comment.created": (
        ("page", "page"),
        ("author", "user"),
        ("parent", "comment"),
        ("mentions", "user"),
    ),
    "comment.edited": (("comment", "comment"), ("mentions", "user")),
    "comment.deleted": (("comment", "comment"),),
    "submission.created": (("page", "page"), ("author", "user")),
    "submission.updated": (("page", "page"), ("author", "user")),
    "page.viewed": (("@audience", "user"), ("page", "page")),
    "inbox.read": (("@audience", "user"), ("page", "page")),
}
#: How a replay knows that an object of a type exists: the collection of them in the chat
#: store or in the wiki's (the inbox keeps its own). A new type of object is one entry here
#: (and its members in `REFERENCES`).
KNOWN: Final[Mapping[str, Callable[[MemoryStore, WikiMemory], Container[str]]]] = {
    "user": lambda store, wiki: store.users,
    "space": lambda store, wiki: store.spaces,
    "channel": lambda store, wiki: store.channels,
    "thread": lambda store, wiki: store.threads,
    "device": lambda store, wiki: store.devices_by_id,
    "site": lambda store, wiki: wiki.sites,
    "page": lambda store, wiki: wiki.pages,  # a deleted page stays, marked deleted
    "comment": lambda store, wiki: _Either(wiki.comments, wiki.deleted_comments),
    "group": lambda store, wiki: wiki.known_groups,
}


@attrs.frozen
class _Either(Container[str]):
    """Known to either of two collections: the usual answer is the first's."""

    first: Container[str]
    second: Container[str]

    def __contains__(self, item: object) -> bool:
        return item in self.first or item in self.second


_K = TypeVar("_K")
_CHAT_KINDS: Final = frozenset({"user", "space", "channel", "thread", "device"})
# Enum members as module constants: ``Via.PUSH`` is a lookup through the enum's metaclass
# (several hundred instructions), a global is one; the summary counts run once per decision.
# Speed device (enum members as constants, 0.93 % alone): the replay's line path, kept as one
# group: its 13 devices together are 12.2 % of the
# replay's instructions (cachegrind, 25,000-event synthetic log; docs/decisions.md 2026-12-06)
_PUSH: Final = Via.PUSH
_PUSH_TEXT: Final = Via.PUSH.value
_FLUSH: Final = Trigger.FLUSH
_EVENT: Final = Trigger.EVENT
_NOT_ALLOWED: Final = SkipReason.NOT_ALLOWED
#: Event types of the hints' pipeline alone, and of the inbox's alone (``user.created`` and
#: ``user.updated`` are both's): what `Summary.pipelines` tells a log's pipelines by.
_CHAT_ONLY: Final = frozenset(PAYLOADS) - INBOX_TYPES - RECORD_TYPES
_WIKI_ONLY: Final = INBOX_TYPES - {"user.created", "user.updated"}
#: A member of `REFERENCES` as a replay checks it: the payload member (``None``: the
#: envelope's ``audience``), the type of object, the collection of those (``None``: a target,
#: whose value names the type) and the pointer of an unknown one.
_Ref = tuple[str | None, str, Container[str] | None, str]


def _percentile(sorted_values: list[int], q: float) -> int:
    if not sorted_values:
        return 0
    index = min(len(sorted_values) - 1, int(q * len(sorted_values)))
    return sorted_values[index]


# Speed device (`Counts`, 1.25 % alone): the replay's line path, kept as one group: its 13 devices
# together are 12.2 % of the
# replay's instructions (cachegrind, 25,000-event synthetic log; docs/decisions.md 2026-12-06)
class Counts(Counter[_K]):
    """A `Counter` whose stores cost what a dict's do; ``del`` of a missing key raises.

    `Counter` defines ``__delitem__`` in Python (a missing key is no error); since a type's
    deletion and assignment share one slot, that makes every ``counts[key] += 1`` call
    ``__setitem__`` through a lookup on the type: about 1,700 instructions against 900.
    The summary counts once or more per decision and never deletes.
    """

    __delitem__ = dict.__delitem__  # type: ignore[assignment]


@attrs.define
class Summary:
    """Counts of one replay: events by type, hints by kind and route, skips by reason."""

    events: Counter[str] = attrs.field(factory=Counts)
    unknown_types: Counter[str] = attrs.field(factory=Counts)
    unknown_references: Counter[str] = attrs.field(factory=Counts)
    bad_lines: int = 0
    decisions: Counter[str] = attrs.field(factory=Counts)
    sends_by_kind: Counter[str] = attrs.field(factory=Counts)
    routes: Counter[tuple[str, str]] = attrs.field(factory=Counts)
    skips: Counter[str] = attrs.field(factory=Counts)
    quiet: int = 0
    pushes: Counter[str] = attrs.field(factory=Counts)
    entries: Counter[tuple[str, str]] = attrs.field(factory=Counts)
    entry_skips: Counter[str] = attrs.field(factory=Counts)
    mails: Counter[str] = attrs.field(factory=Counts)
    mail_skips: Counter[str] = attrs.field(factory=Counts)
    #: Pushes (push routes) by (kind, hour of the day in UTC); for the replay report.
    push_hours: Counter[tuple[str, int]] = attrs.field(factory=Counts)
    #: Flushes that sent, by the number of messages they report (D8 ``count``).
    flush_counts: Counter[int] = attrs.field(factory=Counts)
    #: Whether the log configured mail (``notifications.settings``); ``None``: it never said.
    mail_configured: bool | None = None

    def add_event(self, event: Event) -> None:
        """Count an event by type; unknown types are named apart."""
        self.events[event.type] += 1
        if event.type not in PAYLOADS:
            self.unknown_types[event.type] += 1

    def add_hint(self, hint: Hint) -> None:
        """Count a hint decision."""
        # Speed device (`_value_`, 1.67 % alone): the replay's line path, kept as one group: its 13
        # devices together are 12.2 % of the
        # replay's instructions (cachegrind, 25,000-event synthetic log; docs/decisions.md
        # 2026-12-06)
        # ``_value_`` (the enum's text) rather than ``value``: this runs once per decision.
        # A `Counter` store costs about twice a dict's (its ``__delitem__`` takes the slot
        # of both): a send's push routes are counted once each with their number.
        decision = hint.decision
        if isinstance(decision, Skip):
            self.decisions["skip"] += 1
            self.skips[decision.reason._value_] += 1
        elif isinstance(decision, Collect):
            self.decisions["collect"] += 1
        else:
            self.decisions["send"] += 1
            kind = hint.kind._value_
            self.sends_by_kind[kind] += 1
            self.quiet += decision.quiet
            if decision.count is not None and hint.trigger is _FLUSH:
                self.flush_counts[decision.count] += 1
            pushes = 0
            for route in decision.routes:
                if route.via is _PUSH:
                    pushes += 1
                else:
                    self.routes[(kind, route.via._value_)] += 1
            if pushes:
                self.routes[(kind, _PUSH_TEXT)] += pushes
                self.pushes[hint.recipient] += pushes
                self.push_hours[(kind, hint.at.hour)] += pushes

    def add_skips(self, skips: Mapping[Skip, int]) -> None:
        """Count skip decisions given as counts by value (as `add_hint` counts each)."""
        if not skips:
            return
        counts = self.skips
        for skip, count in skips.items():
            counts[skip.reason._value_] += count
        self.decisions["skip"] += sum(skips.values())

    def add_entry(self, line: InboxLine) -> None:
        """Count an inbox entry decision by category and decision, a skip by reason."""
        self.entries[(line.category, line.decision.value)] += 1
        if line.reason is not None:
            self.entry_skips[line.reason.value] += 1

    def add_mail(self, line: MailLine) -> None:
        """Count a mail by template, a mail skip by reason."""
        if line.reason is not None:
            self.mail_skips[line.reason.value] += 1
        elif line.template is not None:
            self.mails[line.template] += 1

    def pipelines(self) -> frozenset[str]:
        """The pipelines the log used: ``hints`` (chat events, or any hint decision) and
        ``inbox`` (wiki events, or any entry or mail line). A log of neither (empty, or
        people only) counts as ``hints``: the summary table's default rows."""
        used = set()
        if self.decisions or any(t in _CHAT_ONLY for t in self.events):
            used.add("hints")
        lines = self.entries or self.mails or self.mail_skips
        if lines or any(t in _WIKI_ONLY for t in self.events):
            used.add("inbox")
        return frozenset(used or {"hints"})

    def to_json(self) -> dict[str, object]:
        """Return the summary as JSON (the ``--summary-json`` file)."""
        volumes = sorted(self.pushes.values())
        # Badge syncs are never quiet and are no hints: the quiet share is of hint sends only.
        sends = self.decisions["send"] - self.sends_by_kind["sync"]
        routes: dict[str, dict[str, int]] = {}
        for (kind, via), count in sorted(self.routes.items()):
            routes.setdefault(kind, {})[via] = count
        entries: dict[str, dict[str, int]] = {}
        for (category, decision), count in sorted(self.entries.items()):
            entries.setdefault(category, {})[decision] = count
        return {
            "format": 1,
            "events": dict(sorted(self.events.items())),
            "unknown_event_types": dict(sorted(self.unknown_types.items())),
            "unknown_references": dict(sorted(self.unknown_references.items())),
            "bad_lines": self.bad_lines,
            "decisions": dict(sorted(self.decisions.items())),
            "sends_by_kind": dict(sorted(self.sends_by_kind.items())),
            "routes_by_kind": routes,
            "skips_by_reason": dict(sorted(self.skips.items())),
            "quiet_share": round(self.quiet / sends, 4) if sends else 0.0,
            "pushes": sum(volumes),
            "push_volume_per_recipient": {
                "recipients": len(volumes),
                "p50": _percentile(volumes, 0.5),
                "p90": _percentile(volumes, 0.9),
                "p99": _percentile(volumes, 0.99),
                "max": volumes[-1] if volumes else 0,
            },
            "entries_by_category": entries,
            "entry_skips_by_reason": dict(sorted(self.entry_skips.items())),
            "mails_by_template": dict(sorted(self.mails.items())),
            "mail_skips_by_reason": dict(sorted(self.mail_skips.items())),
            # A wiki log without ``mail_configured: true`` sends no email (formats.md 4).
            "mail_configured": bool(self.mail_configured),
            # G1: the zone data every due time and quiet hour of this replay was read from.
            "tzdata": TZDATA_VERSION,
        }


@attrs.define
class Replay:
    """One replay of a log under one policy, fed line by line.

    Args:
        policy: the policy to decide under.
        include_skips: also yield skip decisions (but see below).

    A ``not_allowed`` skip of an event's own candidates is counted but never yielded: the
    output would tell that someone was mentioned where they cannot read (docs/decisions.md).
    At a flush or release the person was a recipient before, so nothing new is told.

    An event that names an object the log never created (`REFERENCES`) is counted in the
    summary by type of object and, with ``include_skips``, gives an `UnknownReference` after
    the event's hints.

    ``owns`` (e.g. a `notify_core.replay.partitions.Partition`) restricts the hints, entry lines and
    mail lines, and their counts, to the recipients it owns; events, bad lines and unknown
    references are still counted (and yielded) in full by every such replay.
    """

    policy: Policy = attrs.field(factory=Policy)
    include_skips: bool = False
    summary: Summary = attrs.field(factory=Summary)
    store: MemoryStore = attrs.field(init=False)
    pipeline: Pipeline = attrs.field(init=False)
    records: ReplayRecords = attrs.field(factory=ReplayRecords)
    inbox: InboxPipeline = attrs.field(factory=InboxPipeline)
    reader: EventLogReader = attrs.field(factory=EventLogReader)
    owns: Callable[[str], bool] | None = None
    _known: dict[str, Container[str]] = attrs.field(init=False, factory=dict, repr=False)
    _refs: dict[str, tuple[_Ref, ...]] = attrs.field(init=False, factory=dict, repr=False)

    def __attrs_post_init__(self) -> None:
        self.store = MemoryStore(instance_default=self.policy.instance_default_level)
        self.pipeline = Pipeline(
            policy=self.policy,
            # The twins themselves, not the store's forwarding methods: one call less per
            # question in the hot path of every fan-out.
            world=self.store.world,
            prefs=self.store.prefs,
            schedule=self.store.agenda,
            owns=self.owns,
            # Skips not written need no hint each: the pipeline counts them (`feed_event`).
            skipped=None if self.include_skips else Counter(),
            records=self.records,
        )
        wiki = self.inbox.wiki
        # A wiki of another kind (a caller's own facts) is not asked: its objects go unchecked.
        asked = wiki if isinstance(wiki, WikiMemory) else WikiMemory()
        self._known = {
            kind: collection(self.store, asked)
            for kind, collection in KNOWN.items()
            if asked is wiki or kind in _CHAT_KINDS
        }
        # `REFERENCES` resolved once: per member, where its value is and the collection
        # that knows its objects (members of types this replay does not build are left out).
        for event_type, members in REFERENCES.items():
            refs: list[_Ref] = []
            for member, kind in members:
                source = None if member == "@audience" else member
                if kind == "target":
                    refs.append((source, kind, None, _pointer("target/id")))
                elif (have := self._known.get(kind)) is not None:
                    refs.append((source, kind, have, _pointer(member)))
            self._refs[event_type] = tuple(refs)

    def feed(self, text: str | bytes, line: int) -> Iterator[Item]:
        """Read one line and return the hints and entry lines it causes (due work first).

        Raises:
            EventError: a bad line (with its number), when called; the replay can go on with
                the next line.
        """
        # Not a generator itself: the line is read at once, and the caller iterates
        # `feed_event`'s generator directly (one frame less per line of the log).
        event = self.reader.read(text, line)
        if event is None:
            return iter(())
        return self.feed_event(event, line)

    def feed_event(self, event: Event, line: int = 0) -> Iterator[Item]:
        """Apply an event already read (by `reader`) and yield the hints and lines it causes.

        Raises:
            EventError: the event contradicts the formats (with ``line`` set).
        """
        due = self.inbox.next_mail_due()
        if due is not None and due <= event.occurred_at:  # a chat log never has mail due
            yield from self._due_mail(event.occurred_at)
        out = self._feed_now(event, line)
        if out is not None:
            yield from out

    def _feed_now(self, event: Event, line: int) -> Iterator[Item] | None:
        """`feed_event` after the mail due before the event: the event applied at once, and
        what it yields (``None``: nothing) as one iterator, for `run` to take directly."""
        summary = self.summary
        summary.add_event(event)
        refs = self._refs.get(event.type)
        unknown = None
        if refs is not None:
            unknown = self._unknown(event, refs)
        try:
            hints = self.pipeline.handle(event)
            # A wiki's events take the inbox path; a chat log pays one set lookup per event.
            lines = self.inbox.handle(event) if event.type in INBOX_TYPES else None
            if event.type in RECORD_TYPES:
                self.records.apply(event)
            elif event.type == "notifications.settings":
                summary.mail_configured = self.inbox.wiki.settings().mail_configured
        except EventError as error:
            if self.pipeline.skipped:  # a bad event's hints are not counted: nor its skips
                self.pipeline.skipped.clear()
            error.line = line
            raise
        skipped = self.pipeline.skipped
        if skipped:
            summary.add_skips(skipped)
            skipped.clear()
        if lines or unknown:
            return self._then(hints, lines, unknown)
        # Most events give no hint; the others' hints go out through one generator only.
        return self._out(hints) if hints else None

    def _then(
        self,
        hints: list[Hint],
        lines: Iterable[InboxLine] | None,
        unknown: list[UnknownReference] | None,
    ) -> Iterator[Item]:
        """Yield an event's hints, entry lines and (counted after them) unknown references."""
        if hints:
            yield from self._out(hints)
        if lines:
            yield from self._out_entries(lines)
        if unknown:
            counts = self.summary.unknown_references
            for ref in unknown:
                counts[ref.type] += 1
            if self.include_skips:
                yield from unknown

    def _unknown(self, event: Event, refs: tuple[_Ref, ...]) -> list[UnknownReference] | None:
        """The objects an event names that the log never created, in `REFERENCES` order."""
        payload = event.payload
        out: list[UnknownReference] | None = None
        for member, kind, have, pointer in refs:
            value = payload.get(member) if member is not None else event.audience
            if value is None:
                continue
            if have is None:  # a target: the type of object is the value's own
                assert isinstance(value, dict)  # parse_event checked the target's shape
                kind, value = str(value["kind"]), value["id"]
                have = self._known.get(kind)
                if have is None:
                    continue  # a type of object this replay does not build (yet)
            if type(value) is str:
                if value not in have:
                    out = _add(out, event, kind, value, pointer)
            elif isinstance(value, list):
                for index, item in enumerate(value):
                    if item not in have:
                        out = _add(out, event, kind, str(item), f"{pointer}/{index}")
        return out

    def finish(self) -> Iterator[Item]:
        """Run the clock on until nothing is pending; yield what that decides."""
        yield from self._due_mail(None)
        yield from self._out(self.pipeline.finish())

    def _out(self, hints: Iterable[Hint]) -> Iterator[Hint]:
        for hint in hints:
            self.summary.add_hint(hint)
            decision = hint.decision
            if isinstance(decision, Skip) and (
                not self.include_skips
                or (decision.reason is _NOT_ALLOWED and hint.trigger is _EVENT)
            ):
                continue
            yield hint

    def _due_mail(self, until: datetime | None) -> Iterator[Item]:
        """Drain mails due at or before ``until`` (``None``: all), hint work due before each
        drain first (formats.md: due work at or before an event runs before it)."""
        inbox = self.inbox
        while (at := inbox.next_mail_due()) is not None and (until is None or at <= until):
            yield from self._out(self.pipeline.advance(at))
            for mail in inbox.drain(at, self.records):
                if self.owns is not None and not self.owns(mail.recipient):
                    continue
                self.summary.add_mail(mail)
                if mail.decision == "send" or self.include_skips:
                    yield mail

    def _out_entries(self, lines: Iterable[InboxLine]) -> Iterator[InboxLine]:
        owns = self.owns
        for entry_line in lines:
            if owns is not None and not owns(entry_line.recipient):
                continue
            self.summary.add_entry(entry_line)
            if entry_line.decision is not EntryDecisionKind.SKIP or self.include_skips:
                yield entry_line

    # Speed device (feed written out in `run`, 0.83 % alone): the replay's line path, kept as one
    # group: its 13 devices together are 12.2 % of the
    # replay's instructions (cachegrind, 25,000-event synthetic log; docs/decisions.md 2026-12-06)
    def run(self, lines: Iterable[str | bytes]) -> Iterator[Item | EventError]:
        """Replay all lines; bad lines come out as `EventError` values, in place."""
        # `feed` and `feed_event` written out: a line passes through no generator of its own
        # unless it yields something. Only an event of the inbox can make mail due (mail due
        # is asked again after one, and after a bad line).
        read, inbox = self.reader.read, self.inbox
        mail_idle = False
        for number, text in enumerate(lines, start=1):
            try:
                event = read(text, number)
                if event is None:
                    continue
                due = None if mail_idle else inbox.next_mail_due()
                mail_idle = due is None and event.type not in INBOX_TYPES
                if due is not None and due <= event.occurred_at:
                    yield from self._due_mail(event.occurred_at)
                out = self._feed_now(event, number)
                if out is not None:
                    yield from out
            except EventError as error:
                mail_idle = False
                self.summary.bad_lines += 1
                yield error
        yield from self.finish()


def _pointer(member: str) -> str:
    return "/audience" if member == "@audience" else f"/payload/{member}"


def _add(
    out: list[UnknownReference] | None, event: Event, kind: str, id_: str, pointer: str
) -> list[UnknownReference]:
    ref = UnknownReference(seq=event.seq, at=event.occurred_at, type=kind, id=id_, pointer=pointer)
    if out is None:
        return [ref]
    out.append(ref)
    return out


def compare(a: Summary, b: Summary) -> dict[str, object]:
    """Return what changes from policy A to policy B: sends per kind, pushes per recipient."""
    kinds = sorted(a.sends_by_kind.keys() | b.sends_by_kind.keys())
    people = sorted(a.pushes.keys() | b.pushes.keys())
    changed = [
        {"recipient": p, "a": a.pushes[p], "b": b.pushes[p], "change": b.pushes[p] - a.pushes[p]}
        for p in people
        if a.pushes[p] != b.pushes[p]
    ]
    changed.sort(key=lambda row: (-abs(int(row["change"])), str(row["recipient"])))  # type: ignore[call-overload]
    pushes_a, pushes_b = sum(a.pushes.values()), sum(b.pushes.values())
    return {
        "format": 1,
        "sends_by_kind": {
            k: {
                "a": a.sends_by_kind[k],
                "b": b.sends_by_kind[k],
                "change": b.sends_by_kind[k] - a.sends_by_kind[k],
            }
            for k in kinds
        },
        "pushes": {"a": pushes_a, "b": pushes_b, "change": pushes_b - pushes_a},
        "pushes_saved": max(0, pushes_a - pushes_b),
        "pushes_added": max(0, pushes_b - pushes_a),
        "quiet_share": {"a": a.to_json()["quiet_share"], "b": b.to_json()["quiet_share"]},
        "recipients_changed": changed,
    }
