"""The badge and the counts of ``notify replay`` against an independent reference (B1-B3, D8, D9).

`reference_model.Reference` is a small model of the badge rules (B) written from the rules
alone: it imports nothing of the pipeline, the store or the badge module, keeps its own world
(rights, levels, read positions, mentions) from the events, and answers the badge, the unread
count of a flush and D9's read check. Synthetic logs (`notify_cli.synth_logs`, seeds and
sizes drawn by hypothesis) go through the replay line by line; every badge sync, flush and
release it decides is checked against the reference as it stands at that moment (due work
runs before the event that follows it), and so is when badge syncs happen (B2).
"""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference_model import Reference, instant
from strategies_world import seeded_small_world, small_world_logs

from notify_cli.synth_logs import SynthConfig, synth_events
from notify_core.hints.decide import Policy
from notify_core.hints.pipeline import Hint
from notify_core.replay.lines import dumps_line, hint_to_json
from notify_core.replay.run import Replay


class Checked:
    """What a run compared, so that a test can tell the checks were not vacuous."""

    def __init__(self) -> None:
        self.seen: Counter[str] = Counter()


def check_log(
    events: list[dict[str, Any]], checked: Checked | None = None, policy: Policy | None = None
) -> None:
    """Replay ``events`` and hold every badge sync, flush and release to the reference."""
    checked = checked or Checked()
    replay = Replay(policy=policy or Policy(), include_skips=True)
    ref = Reference(str(replay.policy.instance_default_level))
    # B2: people with a lowering read since their last badge sync (each needs one sync).
    owed: dict[str, int] = {}

    def check(hints: list[dict[str, Any]]) -> None:
        for hint in hints:
            trigger, who, at = hint["trigger"], hint["recipient"], instant(hint["at"])
            if trigger == "badge_sync":
                assert owed.pop(who, None) is not None, f"B2: a sync without a lowering read {hint}"
                checked.seen["sync"] += 1
                if hint["decision"] == "send":
                    assert hint["count"] == ref.badge(who, at), f"B1 {hint}"
                    checked.seen["sync_count"] += 1
            elif trigger == "flush":
                unread = ref.unread(who, hint["thread"])
                if hint["decision"] == "send":
                    assert hint["count"] == unread, f"D8 {hint}"
                    checked.seen["flush_count"] += 1
                elif hint["reason"] == "read":
                    assert unread == 0, f"D8 {hint}"
                    checked.seen["flush_read"] += 1
                else:
                    assert unread > 0, f"D8: not read first {hint}"
            elif trigger == "release" and "message" in hint and "thread" in hint:
                seq = ref.message_seq[hint["message"]]
                read = ref.read[(who, hint["thread"])] >= seq
                assert (hint.get("reason") == "read") == read, f"D9 {hint}"
                checked.seen["release_read" if read else "release"] += 1

    for number, event in enumerate(events, start=1):
        items = list(replay.feed(dumps_line(event), number))
        assert [i for i in items if not isinstance(i, Hint)] == [], "the logs name known objects"
        hints = [hint_to_json(h) for h in items if isinstance(h, Hint)]
        # Due work ran before the event; the event's own hints do not touch the badge.
        check([h for h in hints if h["trigger"] != "event"])
        check_event_order([h for h in hints if h["trigger"] == "event"])
        if event["type"] == "read_state.updated" and event.get("audience"):
            who, thread = event["audience"], event["payload"]["thread"]
            at = instant(event["occurred_at"])
            if ref.read_lowers(who, thread, event["payload"]["last_read_seq"], at):
                owed.setdefault(who, event["seq"])
                checked.seen["lowering_read"] += 1
                position = event["payload"]["last_read_seq"]
                if ref.unread(who, thread, position) > 0:
                    checked.seen["lowering_read_left_unread"] += 1  # B2's mention case
        ref.apply(event)
    check([hint_to_json(h) for h in replay.finish() if isinstance(h, Hint)])
    assert owed == {}, f"B2: lowering reads without a sync: {owed}"


def check_event_order(hints: list[dict[str, Any]]) -> None:
    """formats.md section 3: the lines of one event come in two groups, every kind other than
    ``message`` first, then ``message``, each group ascending by recipient (code points)."""
    keys = [(h["kind"] == "message", h["recipient"]) for h in hints]
    assert keys == sorted(keys), f"formats.md 3: line order within one event {hints}"
    assert len({h["recipient"] for h in hints}) == len(hints), f"S1: one hint per person {hints}"


SIZES = st.builds(
    SynthConfig,
    events=st.integers(min_value=200, max_value=1_500),
    users=st.integers(min_value=3, max_value=40),
    seed=st.integers(min_value=0, max_value=2**32),
    max_fanout=st.integers(min_value=2, max_value=20),
    mean_gap_s=st.sampled_from([0.4, 5.0, 30.0]),
)


@settings(
    max_examples=max(5, settings.default.max_examples // 20),
    suppress_health_check=[HealthCheck.too_slow],
)
@given(SIZES)
def test_b1_b2_b3_replay_agrees_with_the_reference_on_synthetic_logs(config: SynthConfig) -> None:
    """B1, B1a, B2, B3, D8, D9: badge numbers, flush counts, read releases and badge syncs of
    the replay are those of the reference, on random synthetic worlds."""
    check_log(list(synth_events(config)))


@pytest.mark.parametrize("seed", [1, 2])
def test_b1a_b3_thousands_of_synthetic_events_reach_every_check(seed: int) -> None:
    """B1a, B3: fixed synthetic logs of 4,000 events reach every check many times."""
    checked = Checked()
    config = SynthConfig(events=4_000, users=12, seed=seed, max_fanout=6, mean_gap_s=10.0)
    check_log(list(synth_events(config)), checked)
    for what in ("sync_count", "flush_count", "flush_read", "lowering_read", "release"):
        assert checked.seen[what] >= 20, checked.seen
    assert checked.seen["release_read"] >= 5, checked.seen


SMALL_POLICY = Policy(
    coalesce_window=timedelta(seconds=60),
    mobile_delay_when_desktop_active=timedelta(seconds=30),
    badge_sync_min_interval=timedelta(seconds=120),
)


@settings(max_examples=max(10, settings.default.max_examples // 10))
@given(small_world_logs())
def test_b2_b3_d9_replay_agrees_with_the_reference_in_small_worlds(
    events: list[dict[str, Any]],
) -> None:
    """B2, B3, D8, D9: in small worlds where people reply, read past mentions and lose rights
    between messages, the replay agrees with the reference."""
    check_log(events, policy=SMALL_POLICY)


def test_b2_small_worlds_reach_the_read_past_the_last_mention() -> None:
    """B2: the small worlds reach a read past the last unread mention of a thread that stays
    unread, and own replies before a delayed push comes due (B3, D9), many times."""
    checked = Checked()
    for seed in range(30):
        check_log(seeded_small_world(seed, steps=70), checked, policy=SMALL_POLICY)
    assert checked.seen["lowering_read_left_unread"] >= 3, checked.seen
    assert checked.seen["release_read"] >= 5, checked.seen
    assert checked.seen["flush_count"] >= 5, checked.seen
