"""A synthetic event log of a large instance, for load tests and benchmarks (``notify synth``).

`synth_events` yields event objects (formats.md section 2) in commit order: first the world
(people, spaces, channels with their readers, devices, push registrations, some quiet hours,
settings and preferences), then activity until the requested number of events: mostly
``message.created`` in channels whose reader counts range from 1 to ``max_fanout``, with
mentions (now and then of someone who cannot read the channel), direct messages, agent runs
(queued, running, agent messages, waiting for input, completed, failed or cancelled), reads,
presence changes, preference, quiet-hours and settings changes, grants and revocations,
expiring access and pending devices.

Pure: no I/O, no clock, and the randomness is a small generator of its own seeded by the
caller (`Chance`), so the same seed gives the same log on every Python version and platform.
The generator's own state is bounded by the world's size, not the log's length. It was
`notify_core.synth`: it decides nothing, so it left the core (docs/decisions.md).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Final, TypeVar

import attrs

__all__ = ["Chance", "SynthConfig", "synth_events"]

T = TypeVar("T")
_MASK: Final = (1 << 64) - 1
_ZONES: Final = (
    "Europe/Berlin",
    "Europe/Lisbon",
    "America/New_York",
    "America/Los_Angeles",
    "America/Sao_Paulo",
    "Asia/Kathmandu",
    "Asia/Tokyo",
    "Asia/Kolkata",
    "Australia/Adelaide",
    "Africa/Nairobi",
)
_PLATFORMS: Final = ("ios", "android", "desktop", "web")


class Chance:
    """A seeded pseudo-random source (SplitMix64): small, fast enough, and stable forever.

    Args:
        seed: any integer; the same seed gives the same sequence.
    """

    __slots__ = ("_state",)

    def __init__(self, seed: int) -> None:
        self._state = seed & _MASK

    def bits(self) -> int:
        """Return the next 64 random bits."""
        self._state = z = (self._state + 0x9E3779B97F4A7C15) & _MASK
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
        return z ^ (z >> 31)

    def random(self) -> float:
        """Return a float in [0, 1)."""
        return (self.bits() >> 11) * 1.1102230246251565e-16  # 2**-53

    def below(self, n: int) -> int:
        """Return an integer in [0, n) (``n`` >= 1)."""
        return (self.bits() * n) >> 64

    def between(self, lo: int, hi: int) -> int:
        """Return an integer in [lo, hi]."""
        return lo + self.below(hi - lo + 1)

    def chance(self, p: float) -> bool:
        """Return True with probability ``p``."""
        return self.random() < p

    def choice(self, items: Sequence[T]) -> T:
        """Return one item of a non-empty sequence."""
        return items[self.below(len(items))]

    def sample(self, items: Sequence[T], k: int) -> list[T]:
        """Return ``k`` distinct items (by position) in drawing order; ``k`` <= len(items)."""
        n = len(items)
        if k * 3 > n:
            pool = list(items)
            for i in range(k):
                j = i + self.below(n - i)
                pool[i], pool[j] = pool[j], pool[i]
            return pool[:k]
        seen: set[int] = set()
        out: list[T] = []
        while len(out) < k:
            i = self.below(n)
            if i not in seen:
                seen.add(i)
                out.append(items[i])
        return out

    def gap(self, mean: float) -> float:
        """Return an exponentially distributed wait with the given mean."""
        return -mean * math.log(1.0 - self.random())


@attrs.frozen(kw_only=True)
class SynthConfig:
    """What to generate.

    Args:
        events: how many events in all (the world's setup included; a smaller number gives
            the first events of the setup).
        users: how many people (about 1 in 200 of them agents, at least one).
        seed: the seed of `Chance`.
        max_fanout: the reader count of the largest channel (the smallest has 1).
        channels: how many non-DM channels; ``users // 10`` (at least 2) when absent.
        start: the ``occurred_at`` of the first event (a Monday morning by default).
        mean_gap_s: the mean time between two activity events at the busiest hour.
    """

    events: int = 1_000_000
    users: int = 10_000
    seed: int = 0
    max_fanout: int = 500
    channels: int | None = None
    start: datetime = datetime(2026, 10, 19, 6, 0, tzinfo=UTC)
    mean_gap_s: float = 0.4

    def __attrs_post_init__(self) -> None:
        if self.users < 2 or self.max_fanout < 1 or self.events < 0 or self.mean_gap_s <= 0:
            raise ValueError("synth needs users >= 2, max_fanout >= 1, events >= 0, gap > 0")


@attrs.define
class _Channel:
    id: str
    space: str
    kind: str
    members: list[str]
    member_set: set[str]
    threads: list[str]


@attrs.define
class _Run:
    id: str
    agent: str
    starter: str
    channel: _Channel
    thread: str
    state: str
    steps: int


def _instant(start: datetime, ms: int) -> str:
    at = start + timedelta(milliseconds=ms)
    text = at.strftime("%Y-%m-%dT%H:%M:%S")
    if at.microsecond:
        text += "." + f"{at.microsecond:06d}".rstrip("0")
    return text + "Z"


@attrs.define
class _World:
    """The generator's state, the world it has made so far and the clock; it makes the world."""

    config: SynthConfig
    rng: Chance
    seq: int = 0
    ms: int = 0
    at: str = ""
    humans: list[str] = attrs.field(factory=list)
    agents: list[str] = attrs.field(factory=list)
    zone_of: dict[str, str] = attrs.field(factory=dict)
    spaces: list[str] = attrs.field(factory=list)
    channels: list[_Channel] = attrs.field(factory=list)
    thread_seq: dict[str, int] = attrs.field(factory=dict)
    thread_channel: dict[str, _Channel] = attrs.field(factory=dict)
    member_of: dict[str, list[_Channel]] = attrs.field(factory=dict)
    devices: list[tuple[str, str, str]] = attrs.field(factory=list)
    devices_of: dict[str, list[tuple[str, str]]] = attrs.field(factory=dict)
    connected: dict[str, list[str]] = attrs.field(factory=dict)
    dms: dict[tuple[str, str], _Channel] = attrs.field(factory=dict)
    dm_list: list[tuple[str, _Channel]] = attrs.field(factory=list)
    recent: list[str] = attrs.field(factory=list)
    runs: list[_Run] = attrs.field(factory=list)
    counter: int = 0
    pending: int = 0

    def event(
        self,
        kind: str,
        payload: dict[str, object],
        *,
        actor: str | None = None,
        audience: str | None = None,
        scope: dict[str, str] | None = None,
    ) -> dict[str, object]:
        self.seq += 1
        out: dict[str, object] = {"seq": self.seq, "type": kind, "occurred_at": self.at}
        if actor is not None:
            out["actor"] = actor
        if audience is not None:
            out["audience"] = audience
        if scope is not None:
            out["scope"] = scope
        out["payload"] = payload
        return out

    def tick(self) -> None:
        """Move the clock on: busier in the (UTC) working day than at night."""
        hour = (self.config.start.hour + self.ms // 3_600_000) % 24
        busy = 1.0 if 7 <= hour < 19 else 4.0
        self.ms += int(self.rng.gap(self.config.mean_gap_s * 1000.0 * busy))
        self.at = _instant(self.config.start, self.ms)

    def next_id(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}-{self.counter}"

    def setup(self) -> Iterator[dict[str, object]]:
        config, rng = self.config, self.rng
        self.at = _instant(config.start, 0)
        agents = max(1, config.users // 200)
        width = len(str(config.users))
        for i in range(config.users):
            user = f"u-{i:0{width}d}"
            payload: dict[str, object] = {"user": user}
            if i % (config.users // agents) == 0 and len(self.agents) < agents:
                payload["kind"] = "agent"
                self.agents.append(user)
            else:
                payload["kind"] = "human"
                zone = rng.choice(_ZONES)
                payload["time_zone"] = zone
                self.zone_of[user] = zone
                self.humans.append(user)
                self.member_of[user] = []
            yield self.event("user.created", payload)
        for i in range(max(1, config.users // 1000)):
            space = f"s-{i}"
            self.spaces.append(space)
            yield self.event("space.created", {"space": space})
        count = config.channels or max(2, config.users // 10)
        top = max(1, min(config.max_fanout, len(self.humans)))
        for i in range(count):
            if i == 0:
                size = top
            elif i == 1:
                size = 1
            else:
                size = max(1, min(top, int(top ** (rng.random() ** 2))))
            yield from self.make_channel(f"c-{i}", rng.choice(self.spaces), size)
        for user in self.humans:
            yield from self.make_devices(user)
        for user in self.humans:
            if rng.chance(0.3):
                yield self.quiet_hours(user)
            if rng.chance(0.05):
                yield self.setting(user)
            if rng.chance(0.2):
                yield self.preference(user)

    def make_channel(self, channel: str, space: str, size: int) -> Iterator[dict[str, object]]:
        rng = self.rng
        kind = "forum" if rng.chance(0.15) else "text"
        payload: dict[str, object] = {"channel": channel, "space": space, "kind": kind}
        if rng.chance(0.1):
            payload["default_notification_level"] = rng.choice(("all", "mentions", "mute"))
        yield self.event("channel.created", payload)
        main = f"t-{channel}"
        yield self.event("thread.created", {"thread": main, "channel": channel, "main": True})
        members = rng.sample(self.humans, size)
        info = _Channel(channel, space, kind, members, set(members), [main])
        self.channels.append(info)
        self.thread_seq[main] = 0
        self.thread_channel[main] = info
        for user in members:
            self.member_of[user].append(info)
            yield self.event(
                "access.granted", {"user": user, "target": {"kind": "channel", "id": channel}}
            )

    def make_devices(self, user: str) -> Iterator[dict[str, object]]:
        rng = self.rng
        mine = []
        if rng.chance(0.7):
            mine.append("desktop")
        if rng.chance(0.85):
            mine.append(rng.choice(("ios", "android")))
        if rng.chance(0.2) or not mine:
            mine.append("web")
        self.devices_of[user] = []
        for index, platform in enumerate(mine):
            device = f"d-{user}-{index}"
            yield self.event(
                "device.registered",
                {"device": device, "user": user, "platform": platform, "state": "active"},
            )
            self.devices.append((device, user, platform))
            self.devices_of[user].append((device, platform))
            if platform in ("ios", "android"):
                provider = "apns" if platform == "ios" else "fcm"
                yield self.event(
                    "push.registered",
                    {"registration": f"r-{device}", "device": device, "provider": provider},
                )

    def quiet_hours(self, user: str) -> dict[str, object]:
        rng = self.rng
        start = rng.choice(("21:00", "22:00", "22:30", "23:00"))
        end = rng.choice(("06:30", "07:00", "08:00"))
        rules: list[dict[str, object]] = [
            {
                "id": f"q-{user}-1",
                "weekdays": 127,
                "start_local": start,
                "end_local": end,
                "enabled": True,
                "version": 1,
            }
        ]
        if rng.chance(0.3):
            rules.append(
                {
                    "id": f"q-{user}-2",
                    "weekdays": 96,
                    "start_local": "00:00",
                    "end_local": "00:00",
                    "time_zone": rng.choice(_ZONES),
                    "enabled": rng.chance(0.8),
                    "version": 1,
                }
            )
        return self.event("quiet_hours.updated", {"rules": rules}, actor=user, audience=user)

    def setting(self, user: str) -> dict[str, object]:
        rng = self.rng
        key = rng.choice(
            (
                "notify.default_level",
                "notify.admin_enabled",
                "notify.input_needed_breaks_quiet_hours",
            )
        )
        if rng.chance(0.1):
            return self.event(
                "settings.updated", {"key": key, "deleted": True}, actor=user, audience=user
            )
        value: object = (
            rng.choice(("all", "mentions", "mute"))
            if key == "notify.default_level"
            else rng.chance(0.5)
        )
        return self.event(
            "settings.updated", {"key": key, "value": value}, actor=user, audience=user
        )

    def preference(self, user: str) -> dict[str, object]:
        rng = self.rng
        mine = self.member_of[user]
        roll = rng.random()
        if mine and roll < 0.6:
            channel = rng.choice(mine)
            target = {"kind": "channel", "id": channel.id}
        elif mine and roll < 0.85:
            channel = rng.choice(mine)
            target = {"kind": "thread", "id": rng.choice(channel.threads)}
        else:
            target = {"kind": "space", "id": rng.choice(self.spaces)}
        pref: dict[str, object] = {"target": target}
        pref["level"] = rng.choice(("all", "all", "mentions", "mute"))
        if rng.chance(0.15):
            pref["level"] = "all"
            pref["muted_until"] = _instant(
                self.config.start, self.ms + rng.between(1, 480) * 60_000
            )
        pref["version"] = 1
        payload: dict[str, object] = {"preference": pref}
        if rng.chance(0.05):
            payload["deleted"] = True
        return self.event("notification_pref.updated", payload, actor=user, audience=user)


@attrs.define
class _Synth(_World):
    """The generator: the world of `_World`, then activity in it."""

    def activity(self) -> list[dict[str, object]]:
        self.tick()
        rng = self.rng
        roll = rng.random()
        if roll < 0.62:
            return self.chat()
        if roll < 0.70:
            return self.direct()
        if roll < 0.80:
            return self.read()
        if roll < 0.88:
            return self.presence()
        if roll < 0.92:
            return self.run_step()
        if roll < 0.95:
            return [self.preference(rng.choice(self.humans))]
        if roll < 0.96:
            return [self.quiet_hours(rng.choice(self.humans))]
        if roll < 0.965:
            return [self.setting(rng.choice(self.humans))]
        if roll < 0.985:
            return self.access()
        if roll < 0.99:
            return self.expiring()
        if roll < 0.995:
            return self.pending_device()
        return self.chat()

    def message(
        self,
        channel: _Channel,
        thread: str,
        author: str,
        *,
        origin: str = "human",
        kind: str = "text",
        mentions: Sequence[str] = (),
        run: str | None = None,
    ) -> dict[str, object]:
        seq = self.thread_seq[thread] + 1
        self.thread_seq[thread] = seq
        payload: dict[str, object] = {
            "message": self.next_id("m"),
            "thread": thread,
            "thread_seq": seq,
            "author": author,
            "origin": origin,
            "kind": kind,
        }
        if mentions:
            payload["mention_ids"] = list(mentions)
        if run is not None:
            payload["run"] = run
        if self.rng.chance(0.01):
            payload["silent"] = True
        self.recent.append(thread)
        if len(self.recent) > 512:
            del self.recent[:256]
        scope = {"channel": channel.id, "thread": thread}
        if channel.space:
            scope = {"space": channel.space, **scope}
        return self.event("message.created", payload, actor=author, scope=scope)

    def chat(self) -> list[dict[str, object]]:
        rng = self.rng
        channel = rng.choice(self.channels)
        if not channel.members:
            return []
        author = rng.choice(channel.members)
        out: list[dict[str, object]] = []
        if channel.kind == "forum" and (len(channel.threads) == 1 or rng.chance(0.2)):
            thread = self.new_thread(channel, author, out)
        elif len(channel.threads) > 1 and rng.chance(0.4 if channel.kind == "forum" else 0.25):
            thread = rng.choice(channel.threads[-20:])
        elif channel.kind == "text" and rng.chance(0.02):
            thread = self.new_thread(channel, author, out)
        else:
            thread = channel.threads[0]
        mentions: list[str] = []
        if rng.chance(0.12):
            for _ in range(rng.between(1, 3)):
                if rng.chance(0.05):
                    mentions.append(rng.choice(self.humans))  # maybe without read right
                else:
                    mentions.append(rng.choice(channel.members))
        out.append(self.message(channel, thread, author, mentions=mentions))
        return out

    def new_thread(self, channel: _Channel, author: str, out: list[dict[str, object]]) -> str:
        thread = self.next_id("t")
        self.thread_seq[thread] = 0
        self.thread_channel[thread] = channel
        channel.threads.append(thread)
        if len(channel.threads) > 200:
            del channel.threads[1:101]
        out.append(
            self.event(
                "thread.created",
                {"thread": thread, "channel": channel.id, "main": False},
                actor=author,
            )
        )
        return thread

    def direct(self) -> list[dict[str, object]]:
        rng = self.rng
        out: list[dict[str, object]] = []
        if self.dm_list and (rng.chance(0.85) or len(self.dms) >= len(self.humans) * 2):
            a, known = rng.choice(self.dm_list)
            out.append(self.message(known, known.threads[0], a))
            return out
        a, b = rng.sample(self.humans, 2) if len(self.humans) > 1 else (self.humans[0],) * 2
        key = (a, b) if a < b else (b, a)
        channel = self.dms.get(key)
        if channel is None:
            channel_id = self.next_id("dm")
            thread = f"t-{channel_id}"
            out.append(
                self.event(
                    "channel.created",
                    {"channel": channel_id, "kind": "dm", "participants": sorted(set(key))},
                    actor=a,
                )
            )
            out.append(
                self.event(
                    "thread.created", {"thread": thread, "channel": channel_id, "main": True}
                )
            )
            channel = _Channel(channel_id, "", "dm", list(key), set(key), [thread])
            self.thread_seq[thread] = 0
            self.thread_channel[thread] = channel
            self.dms[key] = channel
            self.dm_list.append((key[0], channel))
            self.dm_list.append((key[1], channel))
        out.append(self.message(channel, channel.threads[0], a))
        return out

    def read(self) -> list[dict[str, object]]:
        rng = self.rng
        if not self.recent:
            return []
        thread = rng.choice(self.recent)
        seq = self.thread_seq.get(thread)
        channel = self.thread_channel.get(thread)
        if seq is None or channel is None or not channel.members:
            return []
        reader = rng.choice(channel.members)
        last = seq if rng.chance(0.8) else rng.between(0, seq)
        return [
            self.event(
                "read_state.updated",
                {"thread": thread, "last_read_seq": last},
                actor=reader,
                audience=reader,
            )
        ]

    def presence(self) -> list[dict[str, object]]:
        rng = self.rng
        device, user, _platform = rng.choice(self.devices)
        payload: dict[str, object] = {"device": device}
        live = self.connected.get(device)
        if live is not None and rng.chance(0.35):
            del self.connected[device]
            payload["connected"] = False
        else:
            focus: list[str] = []
            mine = self.member_of[user]
            if mine and rng.chance(0.7):
                channel = rng.choice(mine)
                focus.append(rng.choice(channel.threads[-5:]))
            self.connected[device] = focus
            payload["connected"] = True
            payload["focus"] = focus
            payload["idle"] = rng.chance(0.25)
        return [self.event("presence.changed", payload, actor=user)]

    def run_step(self) -> list[dict[str, object]]:
        rng = self.rng
        if not self.runs or (len(self.runs) < 50 and rng.chance(0.25)):
            return self.start_run()
        run = rng.choice(self.runs)
        out: list[dict[str, object]] = []
        if run.state == "queued":
            out.append(self.run_state(run, "running"))
        elif run.state == "waiting_input":
            out.append(self.message(run.channel, run.thread, run.starter))
            out.append(self.run_state(run, "running"))
        elif run.steps > 0:
            run.steps -= 1
            if rng.chance(0.15):
                out.append(self.run_state(run, "waiting_input"))
            else:
                mentions = [run.starter] if rng.chance(0.1) else []
                out.append(
                    self.message(
                        run.channel, run.thread, run.agent, origin="agent", mentions=mentions
                    )
                )
        else:
            roll = rng.random()
            end = "completed" if roll < 0.75 else "failed" if roll < 0.92 else "cancelled"
            out.append(self.run_state(run, end))
            self.runs.remove(run)
        return out

    def start_run(self) -> list[dict[str, object]]:
        rng = self.rng
        channel = rng.choice(self.channels)
        if not channel.members:
            return []
        starter = rng.choice(channel.members)
        agent = rng.choice(self.agents)
        thread = rng.choice(channel.threads[-10:])
        run = _Run(
            self.next_id("run"), agent, starter, channel, thread, "queued", rng.between(0, 6)
        )
        self.runs.append(run)
        return [
            self.message(channel, thread, starter, mentions=[agent]),
            self.message(channel, thread, agent, origin="agent", kind="run", run=run.id),
            self.run_state(run, "queued"),
        ]

    def run_state(self, run: _Run, state: str) -> dict[str, object]:
        run.state = state
        payload: dict[str, object] = {
            "run": run.id,
            "triggered_by": run.starter,
            "agent": run.agent,
            "thread": run.thread,
            "channel": run.channel.id,
            "state": state,
        }
        return self.event("run.state_changed", payload, actor=run.agent)

    def access(self) -> list[dict[str, object]]:
        rng = self.rng
        channel = rng.choice(self.channels)
        target = {"kind": "channel", "id": channel.id}
        if channel.members and (len(channel.members) >= self.config.max_fanout or rng.chance(0.4)):
            user = channel.members.pop(rng.below(len(channel.members)))
            channel.member_set.discard(user)
            self.member_of[user].remove(channel)
            return [self.event("access.revoked", {"user": user, "target": target})]
        user = rng.choice(self.humans)
        if user in channel.member_set:
            return []
        channel.members.append(user)
        channel.member_set.add(user)
        self.member_of[user].append(channel)
        return [self.event("access.granted", {"user": user, "target": target})]

    def expiring(self) -> list[dict[str, object]]:
        user = self.rng.choice(self.humans)
        mine = self.member_of[user]
        target = self.rng.choice(mine).id if mine else self.rng.choice(self.spaces)
        payload: dict[str, object] = {"kind": "grant", "target": target}
        return [self.event("access.expiring", payload, audience=user)]

    def pending_device(self) -> list[dict[str, object]]:
        rng = self.rng
        user = rng.choice(self.humans)
        self.pending += 1
        device = f"d-{user}-p{self.pending}"
        platform = rng.choice(_PLATFORMS)
        return [
            self.event(
                "device.registered",
                {"device": device, "user": user, "platform": platform, "state": "pending"},
                actor=user,
            ),
            self.event("device.pending", {"device": device, "platform": platform}, audience=user),
        ]


def synth_events(config: SynthConfig) -> Iterator[dict[str, object]]:
    """Yield ``config.events`` events of a synthetic instance, in commit order.

    Deterministic: the same config gives the same events. Each event is a fresh dict that
    the caller may keep or serialize (``seq`` strictly increasing, ``occurred_at`` never
    decreasing).

    Example:
        >>> events = list(synth_events(SynthConfig(events=50, users=20, seed=1)))
        >>> len(events), events[0]["type"], events[-1]["seq"]
        (50, 'user.created', 50)
    """
    synth = _Synth(config=config, rng=Chance(config.seed))
    left = config.events
    if left <= 0:
        return
    for event in synth.setup():
        yield event
        left -= 1
        if left == 0:
            return
    while True:
        for event in synth.activity():
            yield event
            left -= 1
            if left == 0:
                return
