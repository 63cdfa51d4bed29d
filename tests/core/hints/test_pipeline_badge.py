"""`read_lowers` (B2 on plain values, read as far as needed) against `read_lowers_checked`
(every fact read into `ThreadBadgeFacts`, then `read_lowers_badge`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from notify_cli.synth_logs import SynthConfig, synth_events
from notify_core.hints.levels import Level, LevelFacts
from notify_core.hints.pipeline_badge import read_lowers, read_lowers_checked
from notify_core.hints.ports import ChannelInfo, ThreadInfo
from notify_core.replay.run import Replay
from notify_core.values.errors import InvalidFacts

_NOW = datetime(2026, 10, 23, 12, tzinfo=UTC)


@attrs.define
class _Facts:
    """One thread of one person, as the world and the preferences would answer it."""

    last: int
    floor: int
    read: int
    readable: bool
    dm: bool
    mentions: list[int]
    level: Level
    calls: list[str] = attrs.field(factory=list)

    def thread(self, thread: str) -> ThreadInfo:
        return ThreadInfo(
            id=thread, channel="c", last_message_seq=self.last, unread_floor_seq=self.floor
        )

    def channel(self, channel: str) -> ChannelInfo:
        return ChannelInfo(id=channel, kind="dm" if self.dm else "public")

    def allowed(self, user: str, thread: str) -> bool:
        return self.readable

    def read_seq(self, user: str, thread: str) -> int:
        return self.read

    def unread_mentions(self, user: str, thread: str, after: int | None = None) -> int:
        floor = max(self.read if after is None else after, self.floor)
        return sum(seq > floor for seq in self.mentions)

    def level_facts(self, thread: str, people: Sequence[str]) -> dict[str, LevelFacts]:
        self.calls.append("level")
        return {person: LevelFacts(instance_default=self.level) for person in people}


def _lowers(facts: Any, new: int) -> bool:
    """`read_lowers` of user u's read of thread t up to ``new``, ``facts`` world and prefs."""
    return read_lowers(facts, facts, "u", "t", new, _NOW)


positions = st.integers(0, 6)


@given(
    facts=st.builds(
        _Facts,
        last=positions,
        floor=positions,
        read=positions,
        readable=st.booleans(),
        dm=st.booleans(),
        mentions=st.lists(st.integers(1, 6), max_size=3).map(sorted),
        level=st.sampled_from(list(Level)),
    ),
    new=st.integers(-1, 7),
)
@settings(max_examples=400)
def test_read_lowers_answers_as_the_checked_facts(facts: _Facts, new: int) -> None:
    world: Any = facts
    assert _lowers(facts, new) == read_lowers_checked(world, world, "u", "t", new, _NOW)


def test_a_read_of_what_was_read_reads_no_level() -> None:
    facts = _Facts(last=9, floor=0, read=9, readable=True, dm=False, mentions=[], level=Level.ALL)
    assert not _lowers(facts, 9)
    assert facts.calls == []
    assert _lowers(facts, 12) is False
    facts.read = 3
    assert _lowers(facts, 9)
    assert facts.calls == ["level"]


def test_a_value_that_is_not_plain_is_checked() -> None:
    facts = _Facts(last=9, floor=0, read=3, readable=True, dm=False, mentions=[], level=Level.ALL)
    facts.read = -1
    with pytest.raises(InvalidFacts):
        _lowers(facts, 9)


@pytest.mark.parametrize("seed", [5, 6])
def test_every_read_of_a_log_lowers_as_the_checked_facts_say(seed: int) -> None:
    config = SynthConfig(events=4_000, users=100, seed=seed, max_fanout=40)
    replay = Replay()
    answers = []
    for number, event in enumerate(synth_events(config), start=1):
        if event["type"] == "read_state.updated":
            payload: Any = event["payload"]
            args = (
                replay.store,
                replay.store,
                str(event["audience"]),
                str(payload["thread"]),
                int(payload["last_read_seq"]),
                datetime.fromisoformat(str(event["occurred_at"])),
            )
            answer = read_lowers(*args)
            assert answer == read_lowers_checked(*args), number
            answers.append(answer)
        for _hint in replay.feed(json.dumps(event), number):
            pass
    assert True in answers and False in answers  # the log has reads of both kinds
