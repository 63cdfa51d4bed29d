"""Random small worlds as event logs (formats.md section 2), for properties of whole replays.

Three humans and an agent in one space with two channels, a DM and four threads; rights,
levels, devices and presence change between the messages, mentions and reads. Small enough
that every person meets every rule often: mentions read past while the thread stays unread
(B2), replies in threads with unread messages and delayed pushes (B3, D9), rights taken away
between a message and its push (D2, AZ-P5).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol, TypeVar

from hypothesis import strategies as st

HUMANS = ("u-ana", "u-ben", "u-cy")
AGENT = "u-bot"
#: thread -> channel; the DM's thread is read by its participants only.
THREADS = {"c1-main": "c1", "c1-t": "c1", "c2-t": "c2", "dm-main": "dm"}
MAIN = {"c1-main", "dm-main"}
TARGETS = (
    {"kind": "space", "id": "s"},
    {"kind": "channel", "id": "c1"},
    {"kind": "channel", "id": "c2"},
)
START = datetime(2026, 10, 23, 9, 0, tzinfo=UTC)  # a Friday


T = TypeVar("T")


class _Chooser(Protocol):
    def pick(self, items: Sequence[T]) -> T: ...
    def integer(self, lo: int, hi: int) -> int: ...
    def flag(self) -> bool: ...
    def sample(self, items: Sequence[T], k: int) -> list[T]: ...


class _Drawn:
    """Choices drawn by hypothesis (they shrink)."""

    def __init__(self, draw: st.DrawFn) -> None:
        self._draw = draw

    def pick(self, items: Sequence[T]) -> T:
        return self._draw(st.sampled_from(items))

    def integer(self, lo: int, hi: int) -> int:
        return self._draw(st.integers(lo, hi))

    def flag(self) -> bool:
        return self._draw(st.booleans())

    def sample(self, items: Sequence[T], k: int) -> list[T]:
        indexes = self._draw(st.permutations(range(len(items))))
        return [items[i] for i in indexes[:k]]


class _Seeded:
    """Choices of a seeded generator (one fixed world per seed)."""

    def __init__(self, rng: random.Random) -> None:
        self._rng = rng

    def pick(self, items: Sequence[T]) -> T:
        return self._rng.choice(items)

    def integer(self, lo: int, hi: int) -> int:
        return self._rng.randint(lo, hi)

    def flag(self) -> bool:
        return self._rng.random() < 0.5

    def sample(self, items: Sequence[T], k: int) -> list[T]:
        return self._rng.sample(list(items), k)


def _at(seconds: int) -> str:
    return (START + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


class _Log:
    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.clock = 0
        self.seq: dict[str, int] = dict.fromkeys(THREADS, 0)
        self.messages = 0
        self.last = "c1-t"
        self.devices: dict[str, list[str]] = {}
        self.mention: tuple[str, str, int] | None = None

    def add(self, type_: str, payload: dict[str, Any], **envelope: Any) -> None:
        event: dict[str, Any] = {
            "seq": len(self.events) + 1,
            "type": type_,
            "occurred_at": _at(self.clock),
            **envelope,
            "payload": payload,
        }
        self.events.append(event)


def _world(log: _Log, c: _Chooser) -> None:
    for user in HUMANS:
        log.add("user.created", {"user": user, "kind": "human", "time_zone": "Europe/Berlin"})
    log.add("user.created", {"user": AGENT, "kind": "agent"})
    log.add("space.created", {"space": "s"})
    c2: dict[str, Any] = {"channel": "c2", "space": "s", "kind": "text"}
    default = c.pick([None, "all", "mentions", "mute"])
    if default is not None:
        c2["default_notification_level"] = default
    log.add("channel.created", {"channel": "c1", "space": "s", "kind": "text"})
    log.add("channel.created", c2)
    log.add("channel.created", {"channel": "dm", "kind": "dm", "participants": list(HUMANS[:2])})
    for thread, channel in THREADS.items():
        log.add("thread.created", {"thread": thread, "channel": channel, "main": thread in MAIN})
    log.add("access.granted", {"user": AGENT, "target": {"kind": "space", "id": "s"}})
    for user in HUMANS:
        for target in c.sample(TARGETS, c.integer(1, 2)):
            log.add("access.granted", {"user": user, "target": target})
        platform = c.pick(["ios", "android"])
        phone = f"{user}-phone"
        log.add(
            "device.registered",
            {"device": phone, "user": user, "platform": platform, "state": "active"},
        )
        log.add(
            "push.registered",
            {"registration": f"r-{phone}", "device": phone, "provider": "apns"},
        )
        log.devices[user] = [phone]
        if c.flag():
            desk = f"{user}-desk"
            log.devices[user].append(desk)
            log.add(
                "device.registered",
                {"device": desk, "user": user, "platform": "desktop", "state": "active"},
            )
            # A live desktop that is not idle delays the phone's pushes (D5, D9).
            log.add(
                "presence.changed",
                {"device": desk, "connected": True, "focus": [], "idle": False},
                actor=user,
            )


def _step(log: _Log, c: _Chooser) -> None:
    what = c.pick(
        ["message"] * 6
        + ["read"] * 4
        + ["pref", "grant", "revoke", "revoke", "presence", "setting"]
    )
    user = c.pick(HUMANS)
    # Half the messages and reads go to the thread of the last message: replies and reads
    # soon after a hint, before its window ends or its delayed push comes due.
    recent = [log.last] * 4 + sorted(THREADS)
    if what == "message":
        thread = log.last = c.pick(recent)
        author = c.pick([*HUMANS, AGENT]) if thread != "dm-main" else user
        if thread == "dm-main" and author not in HUMANS[:2]:
            author = HUMANS[0]
        log.seq[thread] += 1
        log.messages += 1
        kind = c.pick(["text"] * 8 + ["run", "system"])
        payload: dict[str, Any] = {
            "message": f"m{log.messages}",
            "thread": thread,
            "thread_seq": log.seq[thread],
            "author": author,
            "origin": "agent" if author == AGENT else c.pick(["human"] * 5 + ["import"]),
            "kind": kind,
        }
        mentions = [c.pick(HUMANS) for _ in range(c.integer(0, 2))]
        if mentions:
            payload["mention_ids"] = mentions
            log.mention = (mentions[0], thread, log.seq[thread])
        if kind == "run":
            payload["run"] = f"run{log.messages}"
        if c.integer(0, 9) == 0:
            payload["silent"] = True
        log.add("message.created", payload, actor=author)
    elif what == "read":
        thread = c.pick(recent)
        past = None
        if log.mention is not None and c.flag():
            user, thread, past = log.mention  # the last person mentioned reads past it (B2)
        newest = log.seq[thread]
        # To the end, all but the newest message (past a mention before it, B2), or anywhere.
        position = c.pick([newest, max(0, newest - 1), -1])
        if past is not None:
            position = c.integer(past, max(past, newest - 1))
        elif position < 0:
            position = c.integer(0, newest)
        payload = {"thread": thread, "last_read_seq": position}
        log.add("read_state.updated", payload, actor=user, audience=user)
    elif what == "pref":
        target = c.pick([*TARGETS, *({"kind": "thread", "id": t} for t in sorted(THREADS))])
        pref: dict[str, Any] = {
            "target": target,
            "level": c.pick(["all", "mentions", "mute"]),
            "version": 1,
        }
        if c.integer(0, 4) == 0:
            pref["muted_until"] = _at(log.clock + c.integer(1, 600))
        payload = {"preference": pref}
        if c.integer(0, 5) == 0:
            payload["deleted"] = True
        log.add("notification_pref.updated", payload, actor=user, audience=user)
    elif what in ("grant", "revoke"):
        target = c.pick(TARGETS)
        kind = "access.granted" if what == "grant" else "access.revoked"
        log.add(kind, {"user": user, "target": target})
    elif what == "presence":
        device = c.pick(log.devices[user])
        payload = {"device": device, "connected": c.flag()}
        if payload["connected"]:
            payload["focus"] = c.sample(sorted(THREADS), c.integer(0, 1))
            payload["idle"] = c.flag()
        log.add("presence.changed", payload, actor=user)
    else:
        level = c.pick(["all", "mentions", "mute"])
        log.add(
            "settings.updated",
            {"key": "notify.default_level", "value": level},
            actor=user,
            audience=user,
        )


def _build(c: _Chooser, min_steps: int, max_steps: int) -> list[dict[str, Any]]:
    log = _Log()
    _world(log, c)
    for _ in range(c.integer(min_steps, max_steps)):
        log.clock += c.pick([0, 1, 5, 10, 20, 20, 45, 90, 200, 1000])
        _step(log, c)
    return log.events


@st.composite
def small_world_logs(
    draw: st.DrawFn, min_steps: int = 10, max_steps: int = 60
) -> list[dict[str, Any]]:
    """An event log of a small world: its setup, then ``min_steps`` to ``max_steps`` random
    steps with random gaps (often shorter than a window or a push delay, sometimes longer)."""
    return _build(_Drawn(draw), min_steps, max_steps)


def seeded_small_world(seed: int, steps: int = 60) -> list[dict[str, Any]]:
    """The same worlds from a seeded generator: one fixed log per seed, to show that a check
    is reached (hypothesis's examples vary with what ran before)."""
    return _build(_Seeded(random.Random(seed)), steps, steps)
