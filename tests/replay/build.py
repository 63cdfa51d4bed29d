"""Builds the golden replay logs of tests/replay from readable scenario code.

Run ``python tests/replay/build.py`` to (re)write the ``*.jsonl`` logs; the expected hints
beside them (``*.expected.jsonl``) are checked by hand and by the assertions of
tests/core/replay/test_replay.py, never regenerated blindly.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

HERE = Path(__file__).parent
START = datetime(2026, 10, 23, 9, 0, tzinfo=UTC)  # a Friday


class Log:
    """Appends events with increasing seq; the clock moves only when told."""

    def __init__(self) -> None:
        self.events: list[dict[str, object]] = []
        self.now = START

    def at(self, seconds: float) -> Log:
        self.now = START + timedelta(seconds=seconds)
        return self

    def add(self, type_: str, payload: dict[str, object], **envelope: object) -> Log:
        event: dict[str, object] = {
            "seq": len(self.events) + 1,
            "type": type_,
            "occurred_at": self.now.strftime("%Y-%m-%dT%H:%M:%S") + "Z",
        }
        event.update(envelope)
        event["payload"] = payload
        self.events.append(event)
        return self

    # world --------------------------------------------------------------------------------
    def user(self, user: str, kind: str = "human", **extra: object) -> Log:
        return self.add("user.created", {"user": user, "kind": kind, **extra})

    def team(self) -> Log:
        """Alex, Sam, Robin (humans), Owner (owner), Lotse (agent); space s, channel c."""
        self.user("alex", time_zone="Europe/Berlin").user("sam").user("robin")
        self.user("owner", owner=True).user("lotse", kind="agent")
        self.add("space.created", {"space": "s"})
        self.add("channel.created", {"channel": "c", "space": "s", "kind": "text"})
        self.add("thread.created", {"thread": "c-main", "channel": "c", "main": True})
        self.add("thread.created", {"thread": "t", "channel": "c", "main": False})
        for who in ("alex", "sam"):
            self.add("access.granted", {"user": who, "target": {"kind": "space", "id": "s"}})
        self.add("access.granted", {"user": "lotse", "target": {"kind": "space", "id": "s"}})
        for who, platform in (("alex", "ios"), ("sam", "android"), ("owner", "ios")):
            device = f"{who}-phone"
            self.device(device, who, platform)
            self.add(
                "push.registered",
                {"registration": f"r-{device}", "device": device, "provider": "apns"},
            )
        return self

    def device(self, device: str, user: str, platform: str, state: str = "active") -> Log:
        return self.add(
            "device.registered",
            {"device": device, "user": user, "platform": platform, "state": state},
        )

    def pref(self, user: str, kind: str, target: str, level: str, **extra: object) -> Log:
        pref = {"target": {"kind": kind, "id": target}, "level": level, "version": 1, **extra}
        return self.add(
            "notification_pref.updated", {"preference": pref}, actor=user, audience=user
        )

    def read(self, user: str, thread: str, seq: int) -> Log:
        return self.add(
            "read_state.updated",
            {"thread": thread, "last_read_seq": seq},
            actor=user,
            audience=user,
        )

    # activity -----------------------------------------------------------------------------
    def msg(
        self, message: str, author: str, thread: str = "t", seq: int = 1, **extra: object
    ) -> Log:
        payload: dict[str, object] = {
            "message": message,
            "thread": thread,
            "thread_seq": seq,
            "author": author,
            "origin": extra.pop("origin", "human"),
            "kind": extra.pop("kind", "text"),
            **extra,
        }
        return self.add("message.created", payload, actor=author)

    def run(self, run: str, state: str, starter: str = "alex", thread: str = "t") -> Log:
        payload = {
            "run": run,
            "triggered_by": starter,
            "agent": "lotse",
            "thread": thread,
            "channel": "c",
            "state": state,
        }
        return self.add("run.state_changed", payload, actor="lotse")

    def write(self, name: str, policy: str | None = None) -> None:
        lines = "".join(json.dumps(e, separators=(",", ":")) + "\n" for e in self.events)
        (HERE / f"{name}.jsonl").write_text(lines, encoding="utf-8")
        if policy is not None:
            (HERE / f"{name}.toml").write_text(policy, encoding="utf-8")


POLICY = (
    "coalesce_window_s = 60\n"
    "mobile_delay_when_desktop_active_s = 30\n"
    "badge_sync_min_interval_s = 120\n"
)


def ten_messages(variant: str) -> Log:
    """Alex follows t by writing m1, reads it, the Owner writes ten messages within 45 s."""
    log = Log().team()
    log.at(10).msg("m1", "alex", seq=1).read("alex", "t", 1)
    seq = 1
    for i in range(10):
        seq += 1
        log.at(60 + i * 5).msg(f"o{i + 1}", "owner", seq=seq)
        if variant == "mention" and i == 4:
            seq += 1
            log.at(82).msg("mention", "sam", seq=seq, mention_ids=["alex"])
    if variant == "read":
        log.at(110).read("alex", "t", seq)
    return log


def run_scenario(end: str) -> Log:
    """Sam follows t with all; Alex starts a run; Lotse writes three messages and ends it."""
    log = Log().team().pref("sam", "thread", "t", "all")
    log.at(10).msg("m1", "alex", seq=1, mention_ids=["lotse"])
    log.at(200).msg("anchor", "lotse", seq=2, kind="run", origin="agent", run="r1")
    log.run("r1", "queued").run("r1", "running")
    for i in range(3):
        log.at(210 + i * 10).msg(f"a{i + 1}", "lotse", seq=3 + i, origin="agent")
    if end == "input":
        log.pref("alex", "thread", "t", "mute")
        log.at(250).run("r1", "waiting_input")
        return log
    log.at(250).run("r1", end)
    if end == "completed":
        log.at(400).msg("a4", "lotse", seq=6, origin="agent")
    return log


SCENARIOS: dict[str, Callable[[], Log]] = {
    "ten_messages": lambda: ten_messages("plain"),
    "ten_messages_read_before_end": lambda: ten_messages("read"),
    "ten_messages_mention_inside": lambda: ten_messages("mention"),
    "run_completed": lambda: run_scenario("completed"),
    "run_failed": lambda: run_scenario("failed"),
    "run_cancelled": lambda: run_scenario("cancelled"),
    "run_input_needed": lambda: run_scenario("input"),
}


def extra_scenarios() -> dict[str, Log]:
    out: dict[str, Log] = {}

    log = Log().team().pref("sam", "thread", "t", "all")
    log.at(10).msg("m1", "alex", seq=1)
    log.at(100).msg("anchor", "lotse", seq=2, kind="run", origin="agent", run="r1")
    log.run("r1", "queued").run("r1", "running")
    log.at(110).msg("a1", "lotse", seq=3, origin="agent")
    log.at(120).msg("a2", "lotse", seq=4, origin="agent", mention_ids=["sam"])
    log.at(200).msg("a3", "lotse", seq=5, origin="agent")
    log.at(300).run("r1", "completed")
    out["agent_mention_during_run"] = log

    log = Log().team()
    log.add("space.created", {"space": "marketing"})
    log.add("channel.created", {"channel": "k", "space": "marketing", "kind": "text"})
    log.add("thread.created", {"thread": "k-t", "channel": "k", "main": False})
    log.add("access.granted", {"user": "sam", "target": {"kind": "channel", "id": "k"}})
    log.at(10).msg("secret", "sam", thread="k-t", seq=1, mention_ids=["alex"])
    out["mention_without_read_right"] = log

    log = Log().team()
    log.add("channel.created", {"channel": "dm", "kind": "dm", "participants": ["alex", "sam"]})
    log.add("thread.created", {"thread": "dm-main", "channel": "dm", "main": True})
    log.at(10).msg("d1", "sam", thread="dm-main", seq=1)
    log.at(20).msg("d2", "sam", thread="dm-main", seq=2, silent=True)
    log.at(30).msg("d3", "alex", thread="dm-main", seq=3)
    out["dm_hints"] = log

    log = Log().team()
    log.pref("robin", "thread", "t", "mute")
    log.add("access.granted", {"user": "robin", "target": {"kind": "space", "id": "s"}})
    log.device("robin-phone", "robin", "android")
    log.at(10).msg("m1", "alex", seq=1)  # alex follows t
    log.at(20).msg("main1", "sam", thread="c-main", seq=1)  # no following in the main thread
    log.at(30).msg("m2", "robin", seq=2)  # robin keeps his mute
    log.at(40).msg("m3", "sam", seq=3)
    out["automatic_following"] = log

    log = Log().team().pref("sam", "thread", "t", "all")
    log.device("sam-laptop", "sam", "desktop")
    log.add(
        "presence.changed",
        {"device": "sam-laptop", "connected": True, "focus": ["c-main"], "idle": False},
    )
    log.at(10).msg("m1", "alex", seq=1)
    log.at(20).add("access.revoked", {"user": "sam", "target": {"kind": "space", "id": "s"}})
    out["revocation_before_release"] = log

    log = Log().team()
    log.device("alex-laptop", "alex", "desktop")
    log.device("alex-new", "alex", "android", state="pending")
    log.add(
        "presence.changed", {"device": "alex-new", "connected": True, "focus": [], "idle": False}
    )
    log.at(10).add("device.pending", {"device": "alex-new", "platform": "android"}, audience="alex")
    log.at(20).add("access.expiring", {"kind": "grant", "target": "g-1"}, audience="alex")
    log.add("settings.updated", {"key": "notify.admin_enabled", "value": False}, audience="alex")
    log.at(30).add("access.expiring", {"kind": "grant", "target": "g-2"}, audience="alex")
    log.at(40).add("access.expiring", {"kind": "grant", "target": "g-3"}, audience="lotse")
    out["security_and_admin"] = log

    log = Log().team()
    log.add("thread.created", {"thread": "t2", "channel": "c", "main": False})
    log.pref("alex", "channel", "c", "all")
    log.at(10).msg("m1", "sam", seq=1).msg("n1", "sam", thread="t2", seq=1)
    log.at(20).read("alex", "t", 1)  # lowers the badge: one sync at once
    log.at(30).read("alex", "t2", 1)  # lowers it again within the interval: one more, later
    log.at(40).read("alex", "t2", 1)  # nothing changes: no sync
    out["badge_sync"] = log

    # B3: Alex's own reply reads t (the flush counts only what came after it, reading it
    # again schedules no sync) and reads t2 before a delayed push comes due (D9: skip read).
    log = Log().team()
    log.add("thread.created", {"thread": "t2", "channel": "c", "main": False})
    log.pref("alex", "thread", "t", "all")
    log.device("alex-laptop", "alex", "desktop")
    log.add(
        "presence.changed",
        {"device": "alex-laptop", "connected": True, "focus": ["c-main"], "idle": False},
    )
    log.at(10).msg("m1", "sam", seq=1)
    log.at(20).msg("m2", "sam", seq=2)
    log.at(30).msg("a3", "alex", seq=3)
    log.at(40).read("alex", "t", 3)  # only Alex's own message was new: no sync
    log.at(50).msg("m4", "sam", seq=4)  # the flush at 70 counts 1
    log.at(100).msg("n1", "sam", thread="t2", seq=1, mention_ids=["alex"])
    log.at(110).msg("n2", "alex", thread="t2", seq=2)  # the push due at 130 is read
    out["own_messages_read"] = log

    # B2: a read past the last unread mention of a thread that stays unread, at level
    # mentions outside a DM, lowers the badge: one sync; the read to the end later another.
    log = Log().team().pref("alex", "thread", "t", "all")
    log.add("thread.created", {"thread": "t3", "channel": "c", "main": False})
    log.at(10).msg("m1", "sam", seq=1)
    log.at(200).msg("p1", "sam", thread="t3", seq=1, mention_ids=["alex"])
    log.at(201).msg("p2", "sam", thread="t3", seq=2).msg("p3", "sam", thread="t3", seq=3)
    log.at(210).read("alex", "t3", 1)  # t3 stays unread, no mention left: badge 2 -> 1
    log.at(220).read("alex", "t", 1)  # badge 1 -> 0, the sync waits for the interval
    out["badge_sync_mention_read"] = log

    # Q1, formats.md section 4: `user.updated` with "unset": ["time_zone"] removes the zone;
    # quiet rules without a zone of their own then run in UTC. Alex's 10:00-12:00 is quiet at
    # 09:00Z in Berlin (11:00 CEST), not in UTC.
    log = Log().team()
    rule = {"id": "q1", "weekdays": 127, "start_local": "10:00", "end_local": "12:00"}
    rule |= {"enabled": True, "version": 1}
    log.add("quiet_hours.updated", {"rules": [rule]}, actor="alex", audience="alex")
    log.at(10).msg("m1", "sam", seq=1, mention_ids=["alex"])
    log.at(20).add("user.updated", {"user": "alex", "unset": ["time_zone"]})
    log.at(30).msg("m2", "sam", seq=2, mention_ids=["alex"])
    out["zone_unset"] = log

    # B1a, D8: a run anchor and a system message in the middle of Sam's unread range do not
    # count: after his read of m1, the flush at 70 s counts m2 and m3 only (2, not 4).
    log = Log().team().pref("sam", "thread", "t", "all")
    log.at(10).msg("m1", "owner", seq=1)  # Sam's push, his window until 70 s
    log.at(15).read("sam", "t", 1)
    log.at(20).msg("m2", "owner", seq=2)
    log.at(25).msg("anchor", "lotse", seq=3, kind="run", origin="agent", run="r1")
    log.run("r1", "queued").run("r1", "running")
    log.at(30).msg("joined", "owner", seq=4, kind="system", origin="system")
    log.at(40).msg("m3", "owner", seq=5)
    out["flush_skips_anchor_and_system"] = log
    return out


def main() -> None:
    for name, build in SCENARIOS.items():
        build().write(name, POLICY)
    for name, log in extra_scenarios().items():
        log.write(name, POLICY)


if __name__ == "__main__":
    main()
