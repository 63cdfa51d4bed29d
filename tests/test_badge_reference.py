"""The badge and the counts of ``notify replay`` against an independent reference (B1-B3, D8, D9).

`Reference` is a small model of behaviour.md section 7 written from the spec alone: it imports
nothing of the pipeline, the store or the badge module, keeps its own world (rights, levels,
read positions, mentions) from the events, and answers the badge, the unread count of a flush
and D9's read check. Synthetic logs (`notify_core.synth`, seeds and sizes drawn by
hypothesis) go through the replay line by line; every badge sync, flush and release it
decides is checked against the reference as it stands at that moment (due work runs before
the event that follows it), and so is when badge syncs happen (B2).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from datetime import datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies_world import small_world_logs

from notify_core.decide import Policy
from notify_core.replay import Replay, dumps_line, hint_to_json
from notify_core.synth import SynthConfig, synth_events

LEVELS = ("all", "mentions", "mute")


def _instant(text: object) -> datetime:
    return datetime.fromisoformat(str(text).replace("Z", "+00:00"))


class Reference:
    """behaviour.md section 7 (with L3-L5 and S5 for the level, D2 for the read right).

    The read position of a person in a thread is their last ``read_state.updated``, moved up
    to each later message of their own (B3). A thread's newest position is that of its newest
    message that is not a run anchor or a system message (B1a); it is unread for a person when
    that position lies past their read position (B1; no event sets an unread floor).
    """

    def __init__(self, instance_default: str = "mentions") -> None:
        self.instance_default = instance_default
        self.users: dict[str, dict[str, Any]] = {}
        self.owners: set[str] = set()
        self.archived_spaces: set[str] = set()
        self.channels: dict[str, dict[str, Any]] = {}
        self.thread_channel: dict[str, str] = {}
        self.main_threads: set[str] = set()
        self.grants: set[tuple[str, str, str]] = set()
        self.newest: dict[str, int] = defaultdict(int)
        self.read: dict[tuple[str, str], int] = defaultdict(int)
        self.mentions: dict[tuple[str, str], list[int]] = defaultdict(list)
        self.rows: dict[tuple[str, str, str], tuple[str, datetime | None]] = {}
        self.personal: dict[str, object] = {}
        self.message_seq: dict[str, int] = {}

    # --- the answers -------------------------------------------------------------------------

    def readable(self, user: str, thread: str) -> bool:
        """D2: an active person with a right on the thread's channel, neither archived."""
        person = self.users.get(user)
        channel_id = self.thread_channel.get(thread)
        channel = self.channels.get(channel_id or "")
        if person is None or not person["active"] or channel is None or channel["archived"]:
            return False
        if channel["kind"] == "dm":
            return user in channel["participants"]
        space = channel["space"]
        if space in self.archived_spaces:
            return False
        return (
            user in self.owners
            or (user, "channel", channel["id"]) in self.grants
            or (space is not None and (user, "space", space) in self.grants)
        )

    def level(self, user: str, thread: str, now: datetime) -> str:
        """L3, L4, L5: the first present fact; a row muted past now is mute."""
        channel = self.channels[self.thread_channel[thread]]
        for kind, target in (("thread", thread), ("channel", channel["id"]), ("space", None)):
            target = channel["space"] if kind == "space" else target
            row = self.rows.get((user, kind, target or ""))
            if row is not None:
                level, until = row
                return "mute" if until is not None and until > now else level
        if channel["default"] is not None:
            return str(channel["default"])
        if channel["kind"] == "dm":
            return "all"
        personal = self.personal.get(user)
        return str(personal) if personal in LEVELS else self.instance_default

    def unread(self, user: str, thread: str, position: int | None = None) -> int:
        """D8's count: how far the thread's newest position lies past the read position."""
        at = self.read[(user, thread)] if position is None else position
        return max(0, self.newest[thread] - at)

    def counts(self, user: str, thread: str, now: datetime, position: int | None = None) -> bool:
        """B1: readable, unread, and an unread mention, level all or a DM."""
        if thread not in self.thread_channel or not self.readable(user, thread):
            return False
        at = self.read[(user, thread)] if position is None else position
        if self.newest[thread] <= at:
            return False
        mentioned = any(seq > at for seq in self.mentions[(user, thread)])
        dm = self.channels[self.thread_channel[thread]]["kind"] == "dm"
        return mentioned or dm or self.level(user, thread, now) == "all"

    def badge(self, user: str, now: datetime) -> int:
        """B1: the threads that count."""
        return sum(self.counts(user, thread, now) for thread in self.thread_channel)

    def read_lowers(self, user: str, thread: str, new: int, now: datetime) -> bool:
        """B2: the thread counted before the read and does not after it."""
        before = self.counts(user, thread, now)
        return before and not self.counts(user, thread, now, position=new)

    # --- the world ---------------------------------------------------------------------------

    def apply(self, event: dict[str, Any]) -> None:
        """Take note of one event."""
        p, kind = event["payload"], event["type"]
        audience = event.get("audience")
        if kind in ("user.created", "user.updated"):
            old = self.users.get(p["user"], {"active": True, "kind": "human"})
            self.users[p["user"]] = {
                "active": p.get("active", old["active"]),
                "kind": p.get("kind", old["kind"]),
            }
            if p.get("owner") is True:
                self.owners.add(p["user"])
            elif p.get("owner") is False:
                self.owners.discard(p["user"])
        elif kind == "space.archived":
            self.archived_spaces.add(p["space"])
        elif kind == "channel.created":
            self.channels[p["channel"]] = {
                "id": p["channel"],
                "kind": p["kind"],
                "space": p.get("space"),
                "participants": set(p.get("participants", ())),
                "default": p.get("default_notification_level"),
                "archived": False,
            }
        elif kind == "channel.updated" and p["channel"] in self.channels:
            if p.get("clear_default_notification_level"):
                self.channels[p["channel"]]["default"] = None
            if "default_notification_level" in p:
                self.channels[p["channel"]]["default"] = p["default_notification_level"]
        elif kind == "channel.archived" and p["channel"] in self.channels:
            self.channels[p["channel"]]["archived"] = True
        elif kind == "thread.created":
            self.thread_channel[p["thread"]] = p["channel"]
            if p["main"]:
                self.main_threads.add(p["thread"])
        elif kind in ("access.granted", "access.revoked"):
            key = (p["user"], p["target"]["kind"], p["target"]["id"])
            if kind == "access.granted":
                self.grants.add(key)
            else:
                self.grants.discard(key)
        elif kind == "notification_pref.updated":
            target = p["preference"]["target"]
            key = (audience, target["kind"], target["id"])
            if p.get("deleted"):
                self.rows.pop(key, None)
            else:
                until = p["preference"].get("muted_until")
                level = p["preference"]["level"]
                self.rows[key] = (level, None if until is None else _instant(until))
        elif kind == "settings.updated" and p["key"] == "notify.default_level":
            if p.get("deleted") or "value" not in p:
                self.personal.pop(audience, None)
            else:
                self.personal[audience] = p["value"]
        elif kind == "message.created":
            thread, seq, author = p["thread"], p["thread_seq"], p["author"]
            self.message_seq[p["message"]] = seq
            if p["kind"] not in ("run", "system"):  # B1a
                self.newest[thread] = max(self.newest[thread], seq)
                self.read[(author, thread)] = max(self.read[(author, thread)], seq)  # B3
            person = self.users.get(author)
            if (
                p["origin"] == "human"
                and thread in self.thread_channel
                and thread not in self.main_threads
                and person is not None
                and person["active"]
                and person["kind"] == "human"
            ):
                self.rows.setdefault((author, "thread", thread), ("all", None))  # S5
            for person in p.get("mention_ids", ()):
                if person != author:
                    self.mentions[(person, thread)].append(seq)
        elif kind == "read_state.updated":
            self.read[(audience, p["thread"])] = p["last_read_seq"]


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
            trigger, who, at = hint["trigger"], hint["recipient"], _instant(hint["at"])
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
        hints = [hint_to_json(h) for h in replay.feed(dumps_line(event), number)]
        # Due work ran before the event; the event's own hints do not touch the badge.
        check([h for h in hints if h["trigger"] != "event"])
        check_event_order([h for h in hints if h["trigger"] == "event"])
        if event["type"] == "read_state.updated" and event.get("audience"):
            who, thread = event["audience"], event["payload"]["thread"]
            at = _instant(event["occurred_at"])
            if ref.read_lowers(who, thread, event["payload"]["last_read_seq"], at):
                owed.setdefault(who, event["seq"])
                checked.seen["lowering_read"] += 1
                position = event["payload"]["last_read_seq"]
                if ref.unread(who, thread, position) > 0:
                    checked.seen["lowering_read_left_unread"] += 1  # B2's mention case
        ref.apply(event)
    check([hint_to_json(h) for h in replay.finish()])
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

    @settings(max_examples=30, database=None, derandomize=True)
    @given(small_world_logs(min_steps=60, max_steps=80))
    def run(events: list[dict[str, Any]]) -> None:
        check_log(events, checked, policy=SMALL_POLICY)

    run()
    assert checked.seen["lowering_read_left_unread"] >= 2, checked.seen
    assert checked.seen["release_read"] >= 5, checked.seen
