"""Writes examples/team-week.jsonl: four working days of a small, spread-out team.

    python examples/generate.py          # rewrites team-week.jsonl beside this script

Deterministic: a fixed seed, no clock, no randomness but ``random.Random(SEED)``; the
committed log equals what this script writes (tests/cli/test_examples.py checks it). Replay it:

    notify replay examples/team-week.jsonl
    notify explain examples/team-week.jsonl --seq N --recipient u-ben

The story, Monday 19 to Thursday 22 October 2026 (times are UTC in the log; the world is set
up on Sunday evening):
- People: Ana (Berlin, the instance owner), Ben (New York), Chandra (Kathmandu), Dana (Los
  Angeles), Emil (Lisbon), Fatima (Nairobi), Gus (Sydney), Hana (Tokyo, a contractor with
  design access only); Lotse, an agent; a CI app. Each works in their own zone: desktop or
  web sessions with a thread in focus, idle over lunch, phones with push registrations.
- Spaces eng, design and ops; text channels general, backend, frontend, incidents (default
  level ``all``), random; a forum with posts as threads; DMs between two and three people.
- Quiet hours in each person's zone (one rule in an explicit zone, one disabled), mutes
  with and without ``muted_until``, personal settings, automatic following of side threads.
- Lotse runs: one that waits for input and completes, one that fails, one cancelled.
- Dana adds a new phone (pending, a ``security`` hint, then approved); Gus retires one;
  Fatima's grant is about to expire (``admin``; Gus has switched admin hints off); Emil
  leaves the design space; Ben mentions Hana in backend, which she cannot read; Gus is
  deactivated on Thursday.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

SEED = 20261019
HERE = Path(__file__).resolve().parent
OUT = HERE / "team-week.jsonl"
MONDAY = datetime(2026, 10, 19, tzinfo=UTC)
DAYS = 4

#: person -> (zone, devices as (id, platform)); ana is the owner.
PEOPLE: dict[str, tuple[str, list[tuple[str, str]]]] = {
    "u-ana": ("Europe/Berlin", [("d-ana-laptop", "desktop"), ("d-ana-phone", "ios")]),
    "u-ben": ("America/New_York", [("d-ben-laptop", "desktop"), ("d-ben-phone", "android")]),
    "u-chandra": ("Asia/Kathmandu", [("d-chandra-web", "web"), ("d-chandra-phone", "android")]),
    "u-dana": ("America/Los_Angeles", [("d-dana-laptop", "desktop"), ("d-dana-phone", "ios")]),
    "u-emil": ("Europe/Lisbon", [("d-emil-laptop", "desktop")]),
    "u-fatima": ("Africa/Nairobi", [("d-fatima-web", "web"), ("d-fatima-phone", "android")]),
    "u-gus": (
        "Australia/Sydney",
        [("d-gus-laptop", "desktop"), ("d-gus-phone", "ios"), ("d-gus-old-phone", "android")],
    ),
    "u-hana": ("Asia/Tokyo", [("d-hana-laptop", "desktop"), ("d-hana-phone", "ios")]),
}
CHANNELS = {  # channel -> (space, kind, main thread or None for a forum, default level)
    "c-general": ("s-eng", "text", "t-general", None),
    "c-backend": ("s-eng", "text", "t-backend", None),
    "c-frontend": ("s-eng", "text", "t-frontend", None),
    "c-random": ("s-eng", "text", "t-random", "mute"),
    "c-incidents": ("s-ops", "text", "t-incidents", "all"),
    "c-design": ("s-design", "forum", None, None),
}
FORUM_POSTS = ["t-design-logo-größe", "t-design-onboarding", "t-design-dark-mode"]
SIDE_THREADS = {"t-backend-release": "c-backend", "t-frontend-perf": "c-frontend"}
DMS = {
    "dm-ana-ben": ["u-ana", "u-ben"],
    "dm-chandra-dana": ["u-chandra", "u-dana"],
    "dm-ben-emil-fatima": ["u-ben", "u-emil", "u-fatima"],
}


class TeamLog:
    """Collects actions at instants and writes them as events in time order."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.actions: list[tuple[datetime, int, Callable[[], None]]] = []
        self.events: list[dict[str, object]] = []
        self.now = MONDAY
        self.thread_seq: dict[str, int] = {}
        self.counter = 0
        self.readers: dict[str, list[str]] = {}  # channel -> who can read (for the chatter)
        self.threads_of: dict[str, list[str]] = {}

    # --- writing ----------------------------------------------------------------------------

    def at(self, when: datetime, action: Callable[[], None]) -> None:
        """Schedule an action; actions at the same instant run in scheduling order."""
        self.actions.append((when, len(self.actions), action))

    def add(self, kind: str, payload: dict[str, object], **envelope: object) -> None:
        """Append one event at the current instant."""
        event: dict[str, object] = {
            "seq": len(self.events) + 1,
            "type": kind,
            "occurred_at": _instant(self.now),
        }
        event.update(envelope)
        event["payload"] = payload
        self.events.append(event)

    def run_actions(self) -> None:
        """Run every action in time order, which writes the events."""
        for when, _, action in sorted(self.actions, key=lambda item: (item[0], item[1])):
            self.now = max(when, self.now)  # an action that took a while delays the next
            action()

    # --- helpers for the story ------------------------------------------------------------

    def msg(
        self,
        author: str,
        thread: str,
        *,
        origin: str = "human",
        kind: str = "text",
        mentions: list[str] | None = None,
        run: str | None = None,
        silent: bool = False,
    ) -> None:
        """A message in a thread, with the thread's next position."""
        seq = self.thread_seq.get(thread, 0) + 1
        self.thread_seq[thread] = seq
        self.counter += 1
        payload: dict[str, object] = {
            "message": f"m-{self.counter}",
            "thread": thread,
            "thread_seq": seq,
            "author": author,
            "origin": origin,
            "kind": kind,
        }
        if mentions:
            payload["mention_ids"] = mentions
        if run is not None:
            payload["run"] = run
        if silent:
            payload["silent"] = True
        channel = _channel_of(thread)
        scope: dict[str, str] = {"channel": channel, "thread": thread}
        space = CHANNELS[channel][0] if channel in CHANNELS else None
        if space is not None:
            scope = {"space": space, **scope}
        self.add("message.created", payload, actor=author, scope=scope)

    def read(self, person: str, thread: str) -> None:
        """A person has read a thread up to its newest message."""
        seq = self.thread_seq.get(thread, 0)
        if seq:
            self.add(
                "read_state.updated",
                {"thread": thread, "last_read_seq": seq},
                actor=person,
                audience=person,
            )

    def presence(
        self, device: str, connected: bool, focus: list[str] | None = None, idle: bool = False
    ) -> None:
        """A device connects (with its focus and idleness) or disconnects."""
        payload: dict[str, object] = {"device": device, "connected": connected}
        if connected:
            payload["focus"] = focus or []
            payload["idle"] = idle
        self.add("presence.changed", payload)

    def pref(self, person: str, kind: str, target: str, level: str, **extra: object) -> None:
        """A person's own level for a space, channel or thread."""
        preference = {"target": {"kind": kind, "id": target}, "level": level, **extra}
        preference["version"] = extra.get("version", 1)
        self.add(
            "notification_pref.updated",
            {"preference": preference},
            actor=person,
            audience=person,
        )

    def run_state(self, run: str, starter: str, thread: str, state: str) -> None:
        """A run of Lotse changes state."""
        payload = {
            "run": run,
            "triggered_by": starter,
            "agent": "u-lotse",
            "thread": thread,
            "channel": _channel_of(thread),
            "state": state,
        }
        self.add("run.state_changed", payload, actor="u-lotse")

    def grant(self, person: str, kind: str, target: str, revoke: bool = False) -> None:
        """A read right on a space or channel is granted or revoked."""
        self.add(
            "access.revoked" if revoke else "access.granted",
            {"user": person, "target": {"kind": kind, "id": target}},
        )


def _instant(when: datetime) -> str:
    text = when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S")
    if when.microsecond:
        text += "." + f"{when.microsecond:06d}".rstrip("0")
    return text + "Z"


def _channel_of(thread: str) -> str:
    for channel, (_, _, main, _) in CHANNELS.items():
        if thread == main:
            return channel
    if thread in SIDE_THREADS:
        return SIDE_THREADS[thread]
    if thread in FORUM_POSTS:
        return "c-design"
    return thread.removeprefix("t-")  # a DM's thread is t-<channel>


def _local(person: str, day: int, hour: float) -> datetime:
    """The instant of a local wall time of a person on day ``day`` (0 = Monday)."""
    zone = ZoneInfo(PEOPLE[person][0])
    date = (MONDAY + timedelta(days=day)).date()
    wall = datetime(date.year, date.month, date.day, tzinfo=zone) + timedelta(hours=hour)
    return wall.astimezone(UTC)


def world(log: TeamLog) -> None:
    """Sunday 18:00 UTC: people, spaces, channels, rights, devices, preferences."""

    def setup() -> None:
        for person, (zone, _) in PEOPLE.items():
            payload: dict[str, object] = {"user": person, "kind": "human", "time_zone": zone}
            if person == "u-ana":
                payload["owner"] = True
            log.add("user.created", payload)
        log.add("user.created", {"user": "u-lotse", "kind": "agent"})
        log.add("user.created", {"user": "u-ci", "kind": "app"})
        for space in ("s-eng", "s-design", "s-ops"):
            log.add("space.created", {"space": space})
        for channel, (space, kind, main, default) in CHANNELS.items():
            payload = {"channel": channel, "space": space, "kind": kind}
            if default is not None:
                payload["default_notification_level"] = default
            log.add("channel.created", payload)
            if main is not None:
                log.add("thread.created", {"thread": main, "channel": channel, "main": True})
        for thread, channel in SIDE_THREADS.items():
            log.add("thread.created", {"thread": thread, "channel": channel, "main": False})
        for dm, people in DMS.items():
            log.add("channel.created", {"channel": dm, "kind": "dm", "participants": people})
            log.add("thread.created", {"thread": f"t-{dm}", "channel": dm, "main": True})
        for person in ("u-ben", "u-chandra", "u-dana", "u-emil", "u-fatima", "u-gus"):
            log.grant(person, "space", "s-eng")
        for person in ("u-ana", "u-ben", "u-dana", "u-fatima", "u-hana", "u-emil"):
            log.grant(person, "space", "s-design")
        for person in ("u-ben", "u-chandra", "u-gus", "u-lotse"):
            log.grant(person, "channel", "c-incidents")
        log.grant("u-lotse", "space", "s-eng")
        for person, (_, devices) in PEOPLE.items():
            for device, platform in devices:
                log.add(
                    "device.registered",
                    {"device": device, "user": person, "platform": platform, "state": "active"},
                )
                if platform in ("ios", "android"):
                    provider = "apns" if platform == "ios" else "fcm"
                    log.add(
                        "push.registered",
                        {"registration": f"r-{device}", "device": device, "provider": provider},
                    )
        weekdays, weekend, every_day = 0b0011111, 0b1100000, 0b1111111
        rules: dict[str, list[dict[str, object]]] = {
            "u-ana": [_rule("q-ana-night", every_day, "22:00", "07:00")],
            "u-ben": [
                _rule("q-ben-night", weekdays, "21:00", "07:00"),
                _rule("q-ben-weekend", weekend, "00:00", "00:00"),
            ],
            "u-chandra": [_rule("q-chandra-night", every_day, "23:00", "06:30")],
            "u-dana": [_rule("q-dana-focus", weekdays, "13:00", "15:00", enabled=False)],
            "u-hana": [_rule("q-hana-night", every_day, "20:00", "08:00", "Asia/Tokyo")],
            "u-fatima": [_rule("q-fatima-night", every_day, "22:30", "06:00")],
        }
        for person, person_rules in rules.items():
            log.add("quiet_hours.updated", {"rules": person_rules}, actor=person, audience=person)
        log.pref("u-ben", "channel", "c-backend", "all")
        log.pref("u-ana", "space", "s-eng", "all")
        log.pref("u-chandra", "channel", "c-backend", "all")
        log.pref("u-emil", "channel", "c-general", "mute")
        log.pref("u-dana", "thread", "t-design-dark-mode", "all")
        settings = [
            ("u-fatima", "notify.default_level", "all"),
            ("u-gus", "notify.admin_enabled", False),
            ("u-ana", "notify.input_needed_breaks_quiet_hours", True),
        ]
        for person, key, value in settings:
            log.add("settings.updated", {"key": key, "value": value}, actor=person, audience=person)
        log.readers = {
            "c-general": ["u-ana", "u-ben", "u-chandra", "u-dana", "u-emil", "u-fatima", "u-gus"],
            "c-backend": ["u-ana", "u-ben", "u-chandra", "u-dana", "u-emil", "u-gus"],
            "c-frontend": ["u-ana", "u-ben", "u-dana", "u-emil", "u-fatima"],
            "c-random": ["u-ana", "u-ben", "u-chandra", "u-emil", "u-fatima", "u-gus"],
            "c-incidents": ["u-ana", "u-ben", "u-chandra", "u-gus"],
            "c-design": ["u-ana", "u-ben", "u-dana", "u-fatima", "u-hana", "u-emil"],
        }
        log.threads_of = {
            "c-general": ["t-general"],
            "c-backend": ["t-backend", "t-backend-release"],
            "c-frontend": ["t-frontend", "t-frontend-perf"],
            "c-random": ["t-random"],
            "c-incidents": ["t-incidents"],
            "c-design": [],
        }

    log.at(MONDAY - timedelta(hours=6), setup)  # Sunday evening: before Sydney's Monday


def _rule(
    rule: str, weekdays: int, start: str, end: str, zone: str | None = None, enabled: bool = True
) -> dict[str, object]:
    out: dict[str, object] = {
        "id": rule,
        "weekdays": weekdays,
        "start_local": start,
        "end_local": end,
    }
    if zone is not None:
        out["time_zone"] = zone
    out["enabled"] = enabled
    out["version"] = 1
    return out


def working_days(log: TeamLog) -> None:
    """Each person's day: connect, focus, chat, lunch idle, read, disconnect."""
    rng = log.rng
    for day in range(DAYS):
        for person, (_, devices) in PEOPLE.items():
            if person == "u-gus" and day == 3:
                continue  # a day off
            desk = devices[0][0]
            start = 8.5 + rng.random()
            log.at(_local(person, day, start), _connect(log, person, desk))
            log.at(_local(person, day, 12.5), _idle(log, desk, True))
            log.at(_local(person, day, 13.4), _idle(log, desk, False))
            log.at(_local(person, day, 17.5 + rng.random()), _disconnect(log, desk))
            for _ in range(rng.randint(4, 9)):
                when = _local(person, day, start + 0.2 + rng.random() * 8.5)
                log.at(when, _chatter(log, person))
            for _ in range(rng.randint(1, 3)):
                when = _local(person, day, start + 1 + rng.random() * 8)
                log.at(when, _catch_up(log, person))
            if devices[1:] and rng.random() < 0.5:
                phone = devices[1][0]
                evening = _local(person, day, 19 + rng.random() * 2)
                log.at(evening, _phone_glance(log, person, phone))


def _visible(log: TeamLog, person: str) -> list[str]:
    return [c for c, people in log.readers.items() if person in people]


def _connect(log: TeamLog, person: str, device: str) -> Callable[[], None]:
    def action() -> None:
        channels = _visible(log, person)
        threads = log.threads_of.get(log.rng.choice(channels), []) if channels else []
        log.presence(device, True, focus=threads[:1])

    return action


def _idle(log: TeamLog, device: str, idle: bool) -> Callable[[], None]:
    return lambda: log.presence(device, True, focus=[], idle=idle)


def _disconnect(log: TeamLog, device: str) -> Callable[[], None]:
    return lambda: log.presence(device, False)


def _chatter(log: TeamLog, person: str) -> Callable[[], None]:
    def action() -> None:
        rng = log.rng
        channels = _visible(log, person)
        if rng.random() < 0.15:
            dms = [dm for dm, people in DMS.items() if person in people]
            if dms:
                log.msg(person, f"t-{rng.choice(dms)}")
                return
        channel = rng.choice(channels)
        threads = log.threads_of[channel]
        new_post = not threads or rng.random() < 0.3
        if channel == "c-design" and new_post and len(threads) < len(FORUM_POSTS):
            thread = FORUM_POSTS[len(threads)]
            log.add("thread.created", {"thread": thread, "channel": channel, "main": False})
            threads.append(thread)
        if not threads:
            return
        thread = rng.choice(threads)
        others = [p for p in log.readers[channel] if p != person]
        mentions = [rng.choice(others)] if others and rng.random() < 0.2 else None
        log.msg(person, thread, mentions=mentions, silent=rng.random() < 0.03)
        if rng.random() < 0.35:  # a quick follow-up: bundled into the readers' windows
            log.now += timedelta(seconds=rng.randint(5, 40))
            log.msg(person, thread)

    return action


def _catch_up(log: TeamLog, person: str) -> Callable[[], None]:
    def action() -> None:
        for channel in _visible(log, person):
            for thread in log.threads_of[channel]:
                if log.rng.random() < 0.6:
                    log.read(person, thread)
        for dm, people in DMS.items():
            if person in people:
                log.read(person, f"t-{dm}")

    return action


def _phone_glance(log: TeamLog, person: str, phone: str) -> Callable[[], None]:
    def action() -> None:
        log.presence(phone, True, focus=[])
        log.now += timedelta(minutes=3)
        _catch_up(log, person)()
        log.presence(phone, False)

    return action


def story(log: TeamLog) -> None:
    """The scripted moments of the week."""
    mon, tue, wed, thu = (MONDAY + timedelta(days=d) for d in range(4))

    # Monday: the release thread, a run that waits for input and completes.
    def release_run() -> None:
        thread = "t-backend-release"
        log.msg("u-ben", thread, mentions=["u-lotse"])
        log.msg("u-lotse", thread, origin="agent", kind="run", run="run-1")
        log.run_state("run-1", "u-ben", thread, "queued")
        log.now += timedelta(seconds=20)
        log.run_state("run-1", "u-ben", thread, "running")
        for i in range(3):
            log.now += timedelta(seconds=40)
            log.msg("u-lotse", thread, origin="agent", mentions=["u-ben"] if i == 1 else None)
        log.now += timedelta(seconds=30)
        log.run_state("run-1", "u-ben", thread, "waiting_input")

    def release_answer() -> None:
        log.msg("u-ben", "t-backend-release")
        log.run_state("run-1", "u-ben", "t-backend-release", "running")
        log.now += timedelta(minutes=2)
        log.msg("u-lotse", "t-backend-release", origin="agent")
        log.now += timedelta(seconds=30)
        log.run_state("run-1", "u-ben", "t-backend-release", "completed")

    log.at(mon + timedelta(hours=14, minutes=5), release_run)
    log.at(mon + timedelta(hours=14, minutes=25), release_answer)

    # Monday night in Europe: an incident; quiet hours make the hints quiet, not late.
    def incident() -> None:
        log.msg("u-gus", "t-incidents", mentions=["u-ana", "u-chandra"])
        for _ in range(3):
            log.now += timedelta(seconds=25)
            log.msg("u-gus", "t-incidents")
        log.now += timedelta(seconds=5)
        log.msg("u-ci", "t-incidents", origin="system", kind="system")

    log.at(mon + timedelta(hours=22, minutes=40), incident)

    # Tuesday: Dana's new phone is pending, then approved; a mute with an end.
    def new_phone() -> None:
        log.add(
            "device.registered",
            {
                "device": "d-dana-new-phone",
                "user": "u-dana",
                "platform": "android",
                "state": "pending",
            },
        )
        log.add(
            "device.pending",
            {"device": "d-dana-new-phone", "platform": "android"},
            audience="u-dana",
        )

    def approve_phone() -> None:
        log.add("device.approved", {"device": "d-dana-new-phone"})
        log.add(
            "push.registered",
            {"registration": "r-d-dana-new-phone", "device": "d-dana-new-phone", "provider": "fcm"},
        )

    log.at(tue + timedelta(hours=16, minutes=2), new_phone)
    log.at(tue + timedelta(hours=16, minutes=9), approve_phone)
    until = tue + timedelta(hours=11)
    log.at(
        tue + timedelta(hours=9),
        lambda: log.pref(
            "u-chandra", "channel", "c-backend", "all", muted_until=_instant(until), version=2
        ),
    )
    log.at(tue + timedelta(hours=9, minutes=30), lambda: log.msg("u-ben", "t-backend"))

    # Tuesday: a run that fails, started by Chandra in the backend channel.
    def failing_run() -> None:
        log.msg("u-chandra", "t-backend", mentions=["u-lotse"])
        log.msg("u-lotse", "t-backend", origin="agent", kind="run", run="run-2")
        log.run_state("run-2", "u-chandra", "t-backend", "queued")
        log.run_state("run-2", "u-chandra", "t-backend", "running")
        log.now += timedelta(minutes=1)
        log.msg("u-lotse", "t-backend", origin="agent")
        log.now += timedelta(minutes=3)
        log.run_state("run-2", "u-chandra", "t-backend", "failed")

    log.at(tue + timedelta(hours=6, minutes=15), failing_run)

    # Wednesday: access changes, an expiring grant, a mention without read right.
    def leave_design() -> None:
        log.grant("u-emil", "space", "s-design", revoke=True)
        log.readers["c-design"].remove("u-emil")

    log.at(wed + timedelta(hours=8), leave_design)

    def expiring() -> None:
        log.add(
            "access.expiring", {"kind": "grant", "target": "g-fatima-s-design"}, audience="u-fatima"
        )
        log.add(
            "access.expiring",
            {"kind": "group_membership", "target": "grp-oncall"},
            audience="u-gus",
        )

    log.at(wed + timedelta(hours=9, minutes=45), expiring)
    log.at(
        wed + timedelta(hours=15, minutes=12),
        lambda: log.msg("u-ben", "t-backend", mentions=["u-hana", "u-dana"]),
    )

    def retire_phone() -> None:
        log.add("push.unregistered", {"registration": "r-d-gus-old-phone"})
        log.add("device.revoked", {"device": "d-gus-old-phone"})

    log.at(wed + timedelta(hours=1), retire_phone)

    def preferences() -> None:
        log.pref("u-dana", "thread", "t-design-dark-mode", "mentions", version=2)
        deleted = {"target": {"kind": "space", "id": "s-eng"}, "level": "all", "version": 2}
        log.add(
            "notification_pref.updated",
            {"preference": deleted, "deleted": True},
            actor="u-ana",
            audience="u-ana",
        )

    log.at(wed + timedelta(hours=10), preferences)

    # Thursday: a run Dana cancels; Emil turns random on, Fatima goes quieter.
    def cancelled_run() -> None:
        log.msg("u-dana", "t-frontend-perf", mentions=["u-lotse"])
        log.msg("u-lotse", "t-frontend-perf", origin="agent", kind="run", run="run-3")
        log.run_state("run-3", "u-dana", "t-frontend-perf", "queued")
        log.run_state("run-3", "u-dana", "t-frontend-perf", "running")
        log.now += timedelta(seconds=50)
        log.msg("u-lotse", "t-frontend-perf", origin="agent")
        log.now += timedelta(minutes=2)
        log.run_state("run-3", "u-dana", "t-frontend-perf", "cancelled")

    log.at(thu + timedelta(hours=17, minutes=20), cancelled_run)
    log.at(thu + timedelta(hours=8), lambda: log.pref("u-emil", "channel", "c-random", "all"))
    log.at(
        thu + timedelta(hours=9),
        lambda: log.add(
            "settings.updated",
            {"key": "notify.default_level", "deleted": True},
            actor="u-fatima",
            audience="u-fatima",
        ),
    )
    log.at(
        thu + timedelta(hours=12),
        lambda: log.add("user.updated", {"user": "u-gus", "kind": "human", "active": False}),
    )


def records(log: TeamLog) -> None:
    """Preference records (M1-M6): Ben caps his pushes, Hana pauses for two days, Chandra
    turns push off and asks for plain mails; Ben drops his cap on Friday."""
    channels = ["push", "email", "sms"]

    def record(person: str, kind: str, **payload: object) -> Callable[[], None]:
        return lambda: log.add(f"record.{kind}", dict(payload), audience=person)

    days = [MONDAY + timedelta(days=d) for d in range(5)]
    cap = {"push": {"max_per_day": 3}}
    log.at(days[0] + timedelta(hours=7), record("u-ben", "set", preference_id="pref-ben-1",
           declared_channels=channels, channels=cap))  # fmt: skip
    hana = {"push": {"enabled": True}, "sms": "urgent-only"}
    log.at(days[0] + timedelta(hours=1), record("u-hana", "set", preference_id="pref-hana-1",
           declared_channels=channels, channels=hana))  # fmt: skip
    log.at(days[1], record("u-hana", "suspended", preference_id="pref-hana-1"))
    log.at(days[3], record("u-hana", "set", preference_id="pref-hana-2",
           declared_channels=channels, channels=hana))  # fmt: skip
    off = {"push": {"enabled": False}, "email": {"format": "plain"}}
    log.at(days[2] + timedelta(hours=3), record("u-chandra", "set", preference_id="pref-chandra-1",
           declared_channels=channels, channels=off))  # fmt: skip
    log.at(days[4] + timedelta(hours=12), record("u-ben", "deleted", preference_id="pref-ben-1"))


def build(seed: int = SEED) -> list[dict[str, object]]:
    """Return the events of the week, in commit order."""
    log = TeamLog(seed)
    world(log)
    story(log)
    records(log)
    working_days(log)
    log.run_actions()
    return log.events


def render(events: list[dict[str, object]]) -> str:
    """Return the log text: one compact JSON object per line, UTF-8 as is."""
    return "".join(json.dumps(e, ensure_ascii=False, separators=(",", ":")) + "\n" for e in events)


def main() -> None:
    """Write the log beside this script."""
    OUT.write_text(render(build()), encoding="utf-8")


if __name__ == "__main__":
    main()
