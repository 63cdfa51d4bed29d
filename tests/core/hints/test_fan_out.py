"""The fan-out's shortcuts answer as the long way does (`notify_core.hints.fan_out`).

`gate_fan_out` against `gate` person by person, `MemoryWorld.allowed_many` and the readers'
rights (`read_rights(..., from_readers=True)`) against `MemoryWorld.allowed`, `_without`
against a filter, and a replay that counts its skips (no hint each) against one that
yields them: the same hints otherwise and the same summary.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies_world import HUMANS, THREADS, seeded_small_world, small_world_logs

from notify_cli.synth_logs import SynthConfig, synth_events
from notify_core.events.log import EventError
from notify_core.hints.candidates import _without
from notify_core.hints.decide import EventFacts, Policy, Skip, Switches, gate
from notify_core.hints.fan_out import (
    NO_SWITCHES,
    Gated,
    GatedShared,
    gate_fan_out,
    gate_shared,
    read_rights,
)
from notify_core.hints.levels import LevelFacts, Preference
from notify_core.hints.pipeline import Hint
from notify_core.replay.lines import dumps_line
from notify_core.replay.run import Replay
from notify_core.values.kinds import Kind

NOW = datetime(2026, 10, 23, 9, 0, tzinfo=UTC)
LEVELS = (
    LevelFacts(),
    LevelFacts(thread=Preference(level="all")),
    LevelFacts(channel=Preference(level="mute")),
    LevelFacts(personal_default="all"),
)
SWITCHES = (Switches(admin_enabled=False), Switches(admin_enabled=True))


def assert_answers_as_gate(
    gated: Gated | GatedShared, names: Sequence[str], expected: list[Skip | None]
) -> None:
    """``gated`` answers ``expected`` (gate's, person by person): the answers, who passed and
    the skips counted."""
    assert gated.answers() == expected
    assert list(gated.passed()) == [
        name for name, answer in zip(names, expected, strict=True) if answer is None
    ]
    counted: Counter[Skip] = Counter()
    gated.count_skips(counted)
    assert counted == Counter(answer for answer in expected if answer is not None)


@settings(max_examples=200, deadline=None)
@given(
    kind=st.sampled_from([Kind.MESSAGE, Kind.MENTION, Kind.RUN_DONE, Kind.ADMIN]),
    people=st.lists(
        st.tuples(
            st.booleans(),
            st.sampled_from(range(len(LEVELS))),
            st.none() | st.sampled_from(range(len(SWITCHES))),
        ),
        max_size=40,
    ),
    starter=st.none() | st.integers(0, 45),
    levels_given=st.booleans(),
)
def test_gate_fan_out_answers_as_gate_does_person_by_person(
    kind: Kind,
    people: list[tuple[bool, int, int | None]],
    starter: int | None,
    levels_given: bool,
) -> None:
    facts = EventFacts(now=NOW, kind=kind, thread="t", policy=Policy())
    names = tuple(f"u{index}" for index in range(len(people)))
    rights = [right for right, _, _ in people]
    needs_level = kind is not Kind.ADMIN
    levels = (
        {name: LEVELS[level] for name, (_, level, _) in zip(names, people, strict=True)}
        if levels_given or needs_level
        else {}
    )
    switches = {
        name: SWITCHES[own]
        for name, (_, _, own) in zip(names, people, strict=True)
        if own is not None
    }
    who_started = f"u{starter}" if starter is not None else None
    gated = gate_fan_out(
        facts, names, rights=rights, levels=levels, switches=switches, starter=who_started
    )
    expected = [
        gate(
            facts,
            allowed=right,
            run_starter=name == who_started,
            level=levels.get(name),
            switches=switches.get(name, NO_SWITCHES),
        )
        for name, right in zip(names, rights, strict=True)
    ]
    assert_answers_as_gate(gated, names, expected)


@settings(max_examples=200, deadline=None)
@given(
    kind=st.sampled_from([Kind.MESSAGE, Kind.MENTION, Kind.RUN_DONE, Kind.ADMIN]),
    people=st.lists(
        st.tuples(
            st.booleans(),
            st.none() | st.sampled_from(range(1, len(LEVELS))),
            st.none() | st.sampled_from(range(len(SWITCHES))),
        ),
        max_size=40,
    ),
    starter=st.none() | st.integers(0, 45),
)
def test_gate_shared_answers_as_gate_does_person_by_person(
    kind: Kind, people: list[tuple[bool, int | None, int | None]], starter: int | None
) -> None:
    facts = EventFacts(now=NOW, kind=kind, thread="t", policy=Policy())
    names = tuple(f"u{index}" for index in range(len(people)))
    rights = [right for right, _, _ in people]
    shared = LEVELS[0]
    differ = {
        name: LEVELS[level]
        for name, (_, level, _) in zip(names, people, strict=True)
        if level is not None
    }
    switches = {
        name: SWITCHES[own]
        for name, (_, _, own) in zip(names, people, strict=True)
        if own is not None
    }
    who_started = f"u{starter}" if starter is not None else None
    gated = gate_shared(
        facts,
        names,
        rights=rights,
        shared=shared,
        differ=differ,
        switches=switches,
        starter=who_started,
    )
    expected = [
        gate(
            facts,
            allowed=right,
            run_starter=name == who_started,
            level=differ.get(name, shared),
            switches=switches.get(name, NO_SWITCHES),
        )
        for name, right in zip(names, rights, strict=True)
    ]
    assert_answers_as_gate(gated, names, expected)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(log=small_world_logs())
def test_allowed_many_and_level_facts_split_answer_as_the_long_way(
    log: list[dict[str, Any]],
) -> None:
    replay = Replay(include_skips=True)
    world, prefs = replay.store.world, replay.store.prefs
    people = (*HUMANS, "u-bot", "u-nobody")
    for number, event in enumerate(log, start=1):
        list(replay.feed(dumps_line(event), number))
        for thread in (*THREADS, "t-unknown"):
            assert world.allowed_many(people, thread) == [
                world.allowed(person, thread) for person in people
            ]
            info = world.thread(thread)
            readers = world.readers(info.channel) if info is not None else ()
            assert read_rights(world, readers, thread, from_readers=True) == [
                world.allowed(person, thread) for person in readers
            ]
            shared, differ = prefs.level_facts_split(thread, people)
            levels = prefs.level_facts(thread, people)
            assert levels == {person: differ.get(person, shared) for person in people}
            assert all(levels[person] != shared for person in differ)


@pytest.mark.parametrize("archived", [None, ("channel", "c1"), ("space", "s")])
@pytest.mark.parametrize("seed", range(4))
def test_readers_rights_answer_as_allowed_when_archived(
    seed: int, archived: tuple[str, str] | None
) -> None:
    log = seeded_small_world(seed)
    if archived is not None:
        kind, id_ = archived
        last = log[-1]
        log.append(
            {
                "seq": last["seq"] + 1,
                "type": f"{kind}.archived",
                "occurred_at": last["occurred_at"],
                "payload": {kind: id_},
            }
        )
    replay = Replay(include_skips=True)
    for item in replay.run(dumps_line(event) for event in log):
        assert not isinstance(item, EventError), item
    world = replay.store.world
    for thread, channel in THREADS.items():
        readers = world.readers(channel)
        rights = read_rights(world, readers, thread, from_readers=True)
        assert rights == [world.allowed(person, thread) for person in readers]
        closed = archived is not None and (archived[1] == channel or archived[0] == "space")
        assert rights == [not closed or channel == "dm"] * len(readers)


@settings(max_examples=300, deadline=None)
@given(
    readers=st.sets(st.text("abcdé", max_size=4)).map(sorted),
    but=st.sets(st.text("abcdé", max_size=4), max_size=5),
)
def test_without_drops_exactly_the_named_readers(readers: list[str], but: set[str]) -> None:
    expected = tuple(person for person in readers if person not in but)
    assert _without(readers, but) == expected
    assert _without(tuple(readers), but) == expected


def _replay(lines: list[str], include_skips: bool) -> tuple[list[Hint], dict[str, object]]:
    replay = Replay(include_skips=include_skips)
    hints = [item for item in replay.run(lines) if isinstance(item, Hint)]
    return hints, replay.summary.to_json()


def _without_skips(hints: list[Hint]) -> list[Hint]:
    return [hint for hint in hints if not isinstance(hint.decision, Skip)]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(log=small_world_logs())
def test_counted_skips_give_the_hints_and_summary_of_yielded_ones(
    log: list[dict[str, Any]],
) -> None:
    lines = [dumps_line(event) for event in log]
    counted, counted_summary = _replay(lines, include_skips=False)
    yielded, yielded_summary = _replay(lines, include_skips=True)
    assert counted == _without_skips(yielded)
    assert counted_summary == yielded_summary


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**16))
def test_counted_skips_on_synthetic_logs(seed: int) -> None:
    config = SynthConfig(events=1_500, users=80, seed=seed, max_fanout=60)
    lines = [dumps_line(event) for event in synth_events(config)]
    counted, counted_summary = _replay(lines, include_skips=False)
    yielded, yielded_summary = _replay(lines, include_skips=True)
    assert counted == _without_skips(yielded)
    assert counted_summary == yielded_summary
    assert counted_summary["decisions"]["skip"] > 0  # type: ignore[index]


class _FailingWorld:
    """A replay's world whose `record` refuses every message after the fan-out was decided."""

    def __init__(self, world: object) -> None:
        self._world = world

    def __getattr__(self, name: str) -> Any:
        return getattr(self._world, name)

    def record(self, event: Any) -> None:
        if event.type == "message.created":
            raise EventError("invalid_member", "refused by the test", "/payload")
        self._world.record(event)  # type: ignore[attr-defined]


def test_a_bad_events_skips_are_not_counted_as_its_hints_are_not() -> None:
    config = SynthConfig(events=600, users=60, seed=3, max_fanout=40)
    lines = [dumps_line(event) for event in synth_events(config)]
    summaries = []
    for include_skips in (False, True):
        replay = Replay(include_skips=include_skips)
        replay.pipeline.world = _FailingWorld(replay.pipeline.world)  # type: ignore[assignment]
        list(replay.run(lines))
        summaries.append(replay.summary.to_json())
    counted, yielded = summaries
    assert counted["bad_lines"] == yielded["bad_lines"] > 0
    assert counted == yielded
