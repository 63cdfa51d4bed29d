"""The one path from an event to hints (rules D, S and B of docs/rules.md).

classify -> gather facts in batches -> decide per recipient -> windows, delayed releases,
badge syncs. Written against the ports of `notify_core.hints.ports`, so the same code runs on the
in-memory store (``notify replay``) and on PostgreSQL. The clock is the event time, handed in;
work that comes due between two events runs first (`Pipeline.advance`).
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Final

import attrs

from notify_core.events.log import Event
from notify_core.hints.candidates import Candidate, classify, classify_for
from notify_core.hints.decide import (
    SWITCH_KINDS,
    Collect,
    Decision,
    EventFacts,
    Explanation,
    FlushState,
    Policy,
    RecipientFacts,
    Route,
    Send,
    Skip,
    SkipReason,
    Switches,
    Via,
    decide_all,
    explain,
    flush,
    release_delayed,
)
from notify_core.hints.fan_out import (
    NO_SWITCHES,
    Gated,
    GatedShared,
    gate_fan_out,
    gate_shared,
    read_rights,
)
from notify_core.hints.levels import LevelFacts
from notify_core.hints.pipeline_badge import counted_threads, sync_after_read
from notify_core.hints.pipeline_facts import count_push, recipient_facts
from notify_core.hints.ports import Due, PreferenceFacts, RecordFacts, Schedule, WorldFacts
from notify_core.hints.slots import positional
from notify_core.values.kinds import Kind

__all__ = ["Candidate", "Hint", "Pipeline", "Trigger", "classify"]


class Trigger(enum.StrEnum):
    """What made a hint decision happen (formats.md section 3)."""

    EVENT = "event"
    FLUSH = "flush"
    RELEASE = "release"
    BADGE_SYNC = "badge_sync"


@attrs.frozen(kw_only=True)
class Hint:
    """One hint decision for one recipient: the unit of replay output."""

    trigger: Trigger
    at: datetime
    recipient: str
    kind: Kind
    decision: Decision
    seq: int | None = None
    thread: str | None = None
    message: str | None = None
    target: str | None = None


@attrs.define
class Pipeline:
    """Runs events through classification, facts, decisions and due work.

    Args:
        policy: the instance's policy.
        world: host facts (and, for the in-memory store, the recorder of world events).
        prefs: preference facts.
        schedule: windows and due work.
        owns: the recipients this pipeline decides for, e.g. a
            `notify_core.replay.partitions.Partition` when several consumers share one log; ``None``
            (the default) decides for everyone. Candidates it does not own get no hint here,
            and following (S5) and badge syncs (B2) happen only for people it owns; the
            schedule must hold the due work of owned recipients only.
        skipped: ``None`` (the default): every decision of an event is returned as a hint.
            A counter: the skip decisions of events are counted in it by value instead (a
            replay that writes no skips need not build a hint for each).
        records: people's preference records (M1-M6); ``None``: no record shapes a hint.
    """

    policy: Policy
    world: WorldFacts
    prefs: PreferenceFacts
    schedule: Schedule
    owns: Callable[[str], bool] | None = None
    skipped: Counter[Skip] | None = None
    records: RecordFacts | None = None
    #: Per channel: the world's readers tuple last seen and the owned ones among them.
    _owned_readers: dict[str, tuple[Sequence[str], tuple[str, ...]]] = attrs.field(
        init=False, factory=dict, repr=False
    )

    def handle(self, event: Event) -> list[Hint]:
        """Run due work up to the event's time, then the event itself; return the hints.

        Hints of one event are ordered by kind precedence, then recipient.
        """
        hints = self.advance(event.occurred_at)
        hints.extend(self._event_hints(event))
        self._after(event, hints)
        self.world.record(event)
        return hints

    def advance(self, until: datetime) -> list[Hint]:
        """Run every piece of due work at or before ``until``, in due order."""
        hints: list[Hint] = []
        while (due := self.schedule.pop_due(until)) is not None:
            hint = self._run_due(due)
            if hint is not None:
                hints.append(hint)
        return hints

    def finish(self) -> list[Hint]:
        """Let the clock run on until nothing is pending (the end of a log)."""
        hints: list[Hint] = []
        while (at := self.schedule.next_due()) is not None:
            hints.extend(self.advance(at))
        return hints

    # --- event hints ------------------------------------------------------------------------

    def _event_hints(self, event: Event) -> list[Hint]:
        hints: list[Hint] = []
        seq, at = event.seq, event.occurred_at
        owns, skipped = self.owns, self.skipped
        # With ``owns`` the candidates hold owned recipients only, so that no work per
        # recipient (not even asking ``owns``) is done for other partitions' people.
        readers = self.world.readers if owns is None else self._readers_owned
        for candidate in classify_for(event, self.world, readers, owns):
            people = candidate.recipients
            facts = self._event_facts(at, candidate)
            gated, passed, decided = self._decide_fan_out(facts, candidate, people)
            kind, thread = candidate.kind, candidate.thread
            message, target = candidate.message, candidate.target
            if skipped is not None:
                # Only who passed D1-D3 can get more than a skip: no work for the others.
                gated.count_skips(skipped)
                pairs = zip(passed, decided, strict=True)
            else:
                rest = iter(decided)
                decisions = [d if d is not None else next(rest) for d in gated.answers()]
                pairs = zip(people, decisions, strict=True)
            for person, decision in pairs:
                if type(decision) is Skip:  # a skip, the usual answer, changes nothing
                    if skipped is not None:
                        skipped[decision] += 1
                        continue
                else:
                    self._carry_out(seq, person, candidate, decision)
                    if self.records is not None:
                        count_push(self.records, self.world, person, at, decision)
                hints.append(
                    _new_hint(
                        Trigger.EVENT, at, person, kind, decision, seq, thread, message, target
                    )
                )
        return hints

    def _readers_owned(self, channel: str) -> tuple[str, ...]:
        """The owned ones among a channel's readers (`WorldFacts.readers`), kept until the
        world answers another value: a store that caches its answers (the in-memory one) costs
        one filter per change of a channel's readers, not one per message."""
        readers = self.world.readers(channel)
        seen = self._owned_readers.get(channel)
        if seen is not None and seen[0] is readers:
            return seen[1]
        assert self.owns is not None
        owned = tuple(filter(self.owns, readers))
        self._owned_readers[channel] = (readers, owned)
        return owned

    def explain(self, event: Event, recipient: str) -> Explanation | None:
        """Explain the decision of ``event`` for ``recipient`` (D11); ``None`` if not a candidate.

        Call it instead of `handle` for that event (the facts are those before the event).
        """
        self.advance(event.occurred_at)
        for candidate in classify(event, self.world):
            if recipient in candidate.recipients:
                facts = self._event_facts(event.occurred_at, candidate)
                (person,) = self._recipient_facts(facts, candidate, (recipient,))
                return explain(facts, person)
        return None

    def _event_facts(self, now: datetime, candidate: Candidate) -> EventFacts:
        # The clock is an event's or a due time (aware) and a candidate's kind a Kind, never
        # sync: the checks of EventFacts' __init__ would only repeat, once per fan-out.
        return EventFacts.checked(
            now, candidate.kind, candidate.thread, self.policy, candidate.exclude_device
        )

    def _decide_fan_out(
        self, facts: EventFacts, candidate: Candidate, people: Sequence[str]
    ) -> tuple[Gated | GatedShared, Sequence[str], list[Decision]]:
        """Decide for each of ``people`` (the candidate's recipients this pipeline owns),
        with the full facts gathered only where needed.

        Returns `gate`'s answers (`Gated`), the people who passed and `decide_all`'s
        decisions for them, in order. D1-D3 (`gate`) read only the read right, the run
        starter, the level facts and the switches; whoever they stop gets that skip, which is
        what `decide` would answer. Devices, connections, quiet rules and windows are read
        for the others only.
        """
        thread, starter = candidate.thread, candidate.run_starter
        # A store that answers the level facts as one shared value and the few who differ
        # (the in-memory one) lets gate skip the others as one.
        split = getattr(self.prefs, "level_facts_split", None) if thread is not None else None
        if split is not None:
            shared, differ = split(thread, people)
        else:
            # The level facts first: a store may take the fan-out's people as its batch there
            # and answer the switches and read rights that follow from the same reads (on
            # PostgreSQL one statement for all, not one per person).
            levels = self.prefs.level_facts(thread, people) if thread is not None else {}
        # Only two kinds read switches (`SWITCH_KINDS`): a message's fan-out asks for none.
        switches = self.prefs.switches(people) if candidate.kind in SWITCH_KINDS else {}
        rights = read_rights(self.world, people, thread, candidate.from_readers)
        gated: Gated | GatedShared
        if split is not None:
            gated = gate_shared(
                facts,
                people,
                rights=rights,
                shared=shared,
                differ=differ,
                switches=switches,
                starter=starter,
            )
            passed = gated.passed()
            levels = dict.fromkeys(passed, shared)
            levels.update(differ)
        else:
            gated = gate_fan_out(
                facts, people, rights=rights, levels=levels, switches=switches, starter=starter
            )
            passed = gated.passed()
        if not passed:
            return gated, passed, []
        full = self._recipient_facts(facts, candidate, passed, levels, switches, allowed=True)
        return gated, passed, decide_all(facts, full)

    def _recipient_facts(
        self,
        facts: EventFacts,
        candidate: Candidate,
        people: Sequence[str],
        levels: dict[str, LevelFacts] | None = None,
        switches: dict[str, Switches] | None = None,
        allowed: bool | None = None,
    ) -> list[RecipientFacts]:
        """The full facts of each person; ``allowed=True``: all passed D2 (`gate`) already."""
        return recipient_facts(
            self.world, self.prefs, self.schedule, self.records,
            facts, candidate, people, levels, switches, allowed,
        )  # fmt: skip

    def _apply(
        self,
        seq: int | None,
        at: datetime,
        person: str,
        candidate: Candidate,
        decision: Decision,
        trigger: Trigger = Trigger.EVENT,
    ) -> Hint:
        """Carry out a decision and return its hint."""
        self._carry_out(seq, person, candidate, decision)
        if self.records is not None:
            count_push(self.records, self.world, person, at, decision)
        return _new_hint(
            trigger,
            at,
            person,
            candidate.kind,
            decision,
            seq,
            candidate.thread,
            candidate.message,
            candidate.target,
        )

    def _carry_out(
        self, seq: int | None, person: str, candidate: Candidate, decision: Decision
    ) -> None:
        """Collect into a window, open one, schedule delayed pushes."""
        thread = candidate.thread
        if isinstance(decision, Collect):
            assert thread is not None
            self.schedule.collect(person, thread)
        elif isinstance(decision, Send):
            if decision.opens_window_until is not None and thread is not None:
                self.schedule.open_window(person, thread, decision.opens_window_until)
            self._schedule_releases(seq, person, candidate, decision)

    def _schedule_releases(
        self, seq: int | None, person: str, candidate: Candidate, decision: Send
    ) -> None:
        for route in decision.routes:
            if route.via is Via.PUSH_DELAYED and route.due is not None:
                self.schedule.schedule(
                    _new_due(
                        route.due,
                        person,
                        candidate.thread or "",
                        route.device,
                        "release",
                        candidate.kind,
                        candidate.message,
                        candidate.message_seq,
                        candidate.target,
                        seq,
                    )
                )

    # --- after the event: following and badge syncs ----------------------------------------

    def _after(self, event: Event, hints: list[Hint]) -> None:
        p = event.payload
        if event.type == "message.created" and p["origin"] == "human":
            author_id = str(p["author"])
            if self.owns is not None and not self.owns(author_id):
                return  # another partition's author: not even looked up
            thread = self.world.thread(str(p["thread"]))
            author = self.world.user(author_id)
            mine = author is not None and (self.owns is None or self.owns(author.id))
            if thread is not None and not thread.main and author and author.active_human and mine:
                self.prefs.follow(author.id, thread.id)  # S5
        elif event.type == "read_state.updated" and event.audience is not None:
            if self.owns is not None and not self.owns(event.audience):
                return
            self._badge_on_read(event, event.audience, str(p["thread"]), int(p["last_read_seq"]))  # type: ignore[call-overload]

    def counted_threads(self, user: str, now: datetime) -> list[str]:
        """Return the threads that count for a person's badge at ``now`` (B1).

        The badge number is their count. Adapters call it when a push is sent (every push
        carries the badge of its recipient at send time) and for the cleared list of a badge
        sync; the badge sync of the pipeline counts the same way.
        """
        return counted_threads(self.world, self.prefs, user, now)

    def _badge_on_read(self, event: Event, user: str, thread: str, new_seq: int) -> None:
        """B2: a read that lowers the badge schedules one sync, at most one per interval."""
        at = sync_after_read(
            self.world, self.prefs, self.schedule, self.policy, event, user, thread, new_seq
        )
        if at is not None:
            self.schedule.schedule(Due(at=at, recipient=user, what="badge_sync", kind=Kind.SYNC))

    # --- due work ---------------------------------------------------------------------------

    def _run_due(self, due: Due) -> Hint | None:
        if due.what == "flush":
            return self._flush(due)
        if due.what == "release":
            return self._release(due)
        return self._badge_sync(due)

    def _flush(self, due: Due) -> Hint | None:
        window = self.schedule.window(due.recipient, due.thread)
        self.schedule.close_window(due.recipient, due.thread)
        if window is None or window.collected == 0:
            return None  # nothing_collected: no hint existed, nothing to report (D8, D10)
        info = self.world.thread(due.thread)
        if info is None:
            return None
        read = max(self.world.read_seq(due.recipient, due.thread), info.unread_floor_seq)
        newest = info.last_message_seq
        # B1a: run anchors and system messages between the read position and the newest
        # counted message do not count; only the newest counted message moves `newest`.
        unread = newest - read - self.world.uncounted_between(due.thread, read, newest)
        state = FlushState(collected=window.collected, unread=max(0, unread))
        candidate = _new_candidate(
            Kind.MESSAGE,
            (due.recipient,),
            due.thread,
            info.newest_message,
            info.last_message_seq,
            None,
            None,
            None,
            False,
        )
        facts = self._event_facts(due.at, candidate)
        (person,) = self._recipient_facts(facts, candidate, candidate.recipients)
        decision = flush(state, facts, person)
        return self._apply(None, due.at, due.recipient, candidate, decision, Trigger.FLUSH)

    def _release(self, due: Due) -> Hint:
        candidate = _new_candidate(
            due.kind,
            (due.recipient,),
            due.thread or None,
            due.message,
            due.message_seq,
            due.target,
            None,
            due.recipient if due.kind in _STARTER_KINDS else None,
            False,
        )
        read = bool(due.thread) and due.message is not None
        read = read and self.world.read_seq(due.recipient, due.thread) >= due.message_seq
        facts = self._event_facts(due.at, candidate)
        (person,) = self._recipient_facts(facts, candidate, candidate.recipients)
        decision = release_delayed(facts, person, due.device, read)
        if self.records is not None:
            count_push(self.records, self.world, due.recipient, due.at, decision)
        return _new_hint(
            Trigger.RELEASE,
            due.at,
            due.recipient,
            due.kind,
            decision,
            due.seq,
            candidate.thread,
            due.message,
            due.target,
        )

    def _badge_sync(self, due: Due) -> Hint | None:
        user = due.recipient
        self.schedule.set_badge_sync(user, due.at, False)
        info = self.world.user(user)
        if info is None or not info.active_human:
            decision: Decision = _NOT_ALLOWED
        else:
            devices = self.world.push_devices(user)
            if not devices:
                decision = _NO_ROUTE
            else:
                badge = len(self.counted_threads(user, due.at))
                routes = tuple(Route(device=d, via=Via.PUSH) for d in devices)
                decision = Send(routes=routes, quiet=False, count=badge)
        return Hint(
            trigger=Trigger.BADGE_SYNC, at=due.at, recipient=user, kind=Kind.SYNC, decision=decision
        )


# Built once per hint written, flush, release and delayed push scheduled: through their
# slots (`positional`), the fields in the order of the classes. By keyword, a replay runs
# 1.8 % more instructions for the hints, 0.31 % for the candidates and due work.
_new_hint: Final = positional(Hint)
_new_candidate: Final = positional(Candidate)
_new_due: Final = positional(Due)
_STARTER_KINDS: Final = frozenset({Kind.RUN_DONE, Kind.RUN_FAILED, Kind.INPUT_NEEDED})
_NOT_ALLOWED: Final = Skip(reason=SkipReason.NOT_ALLOWED)
_NO_ROUTE: Final = Skip(reason=SkipReason.NO_ROUTE)
_NO_SWITCHES: Final = NO_SWITCHES
