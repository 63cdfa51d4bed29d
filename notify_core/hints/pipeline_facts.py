"""The facts of each recipient of a pipeline's decision, and the count of push deliveries.

Split from `notify_core.hints.pipeline` (its class stays under 400 lines): the full
`RecipientFacts` of the people who passed D1-D3, with the record in effect of each (M1) and,
under a push cap, the day's pushes (M4); `count_push` counts one delivery (M4, M6).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Final

from notify_core.hints.candidates import Candidate
from notify_core.hints.decide import Decision, EventFacts, RecipientFacts, Send, Switches, Via
from notify_core.hints.decision_values import new_recipient_facts
from notify_core.hints.fan_out import NO_SWITCHES, level_facts
from notify_core.hints.levels import LevelFacts
from notify_core.hints.ports import PreferenceFacts, RecordFacts, Schedule, WorldFacts
from notify_core.values.record_rules import DeliveryChannel, local_day

__all__ = ["count_push", "recipient_facts"]

_NO_SWITCHES: Final = NO_SWITCHES
_PUSH_CHANNEL: Final = DeliveryChannel.PUSH


def recipient_facts(
    world: WorldFacts,
    prefs: PreferenceFacts,
    schedule: Schedule,
    records: RecordFacts | None,
    facts: EventFacts,
    candidate: Candidate,
    people: Sequence[str],
    levels: dict[str, LevelFacts] | None = None,
    switches: dict[str, Switches] | None = None,
    allowed: bool | None = None,
) -> list[RecipientFacts]:
    """Return the full facts of each person; ``allowed=True``: all passed D2 (`gate`) already.

    The records in effect are read in one batch for all of ``people``; the day's pushes only
    for a person whose record caps push.
    """
    thread = candidate.thread
    known_allowed = allowed
    if levels is None:
        levels = level_facts(prefs, thread, people) if thread is not None else {}
    rules = prefs.quiet_rules(people)
    if switches is None:
        switches = prefs.switches(people)
    # Bound methods hoisted out of the loop: it runs once per recipient of every fan-out.
    user, allowed_to, window_of = world.user, world.allowed, schedule.window
    devices, connections, starter = world.devices, world.connections, candidate.run_starter
    level_of, rules_of, switches_of = levels.get, rules.get, switches.get
    now = facts.now
    in_effect = records.records_in_effect(people, now) if records is not None else None
    out = []
    for person in people:
        info = user(person)
        record, pushes = None, 0
        if in_effect and (record := in_effect.get(person)) is not None and record.caps_push:
            assert records is not None
            zone = info.time_zone if info is not None else None
            pushes = records.deliveries_on(person, _PUSH_CHANNEL, local_day(now, zone))
        if thread is not None:
            allowed = known_allowed if known_allowed is not None else allowed_to(person, thread)
            window = window_of(person, thread)
            window_end = window.end if window is not None else None
        else:
            allowed, window_end = info is not None and info.active_human, None
        out.append(
            new_recipient_facts(
                allowed,
                person == starter,
                level_of(person),
                info.time_zone if info is not None else None,
                rules_of(person, ()),
                switches_of(person, _NO_SWITCHES),
                devices(person),
                connections(person),
                window_end,
                record,
                pushes,
            )
        )
    return out


def count_push(
    records: RecordFacts, world: WorldFacts, person: str, at: datetime, decision: Decision
) -> None:
    """Count a push delivery on the person's local day of ``at`` (M4).

    A delivery is a send that names a record (M6) and has a ``push`` route now; a
    ``push_delayed`` route counts at its release, a send with gateway routes only not at all.
    """
    if (
        type(decision) is Send
        and decision.record is not None
        and any(route.via is Via.PUSH for route in decision.routes)
    ):
        info = world.user(person)
        day = local_day(at, info.time_zone if info is not None else None)
        records.count_delivery(person, _PUSH_CHANNEL, day)
