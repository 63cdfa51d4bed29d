"""The in-memory store: every port of the pipeline on plain dictionaries.

It is the embedded default behind ``notify replay`` and the reference the PostgreSQL adapter
must agree with. It learns the world from the event log itself (`MemoryStore.record`), so
its size is bounded by the world's state (people, channels, threads, rows), never by the
log's length.
"""

from __future__ import annotations

import bisect
import heapq
from collections import defaultdict
from collections.abc import Collection, Iterable, Iterator, Sequence
from datetime import datetime
from typing import Final

import attrs

from notify_core.decide import Connection, Device, Switches
from notify_core.events import PAYLOADS, Event, EventError
from notify_core.instants import parse_instant
from notify_core.kinds import RunState, run_active
from notify_core.levels import Level, LevelFacts, Preference, parse_level
from notify_core.ports import ChannelInfo, Due, ThreadInfo, UserInfo, Window
from notify_core.quiet import QuietRule, rule_from_json

__all__ = ["MemoryStore"]

_MOBILE = ("ios", "android")
#: Who may read a thread: DM participants (or None), channel grantees, space grantees.
_Access = tuple[Collection[str] | None, Collection[str], Collection[str]]
#: The row that automatic following inserts (S5); rows are values, so one serves all.
_FOLLOWED = Preference(level=Level.ALL)
_DEFAULT_LEVEL_KEY = "notify.default_level"
_NO_ROWS: dict[str, Preference] = {}


def _may_be_all(level: object) -> bool:
    """Whether a stored level may mean ``all``: any but none, ``mentions`` and ``mute`` (B1
    candidates err on the side of more; a value not understood is checked as any other)."""
    return not (level is None or (isinstance(level, str) and level in ("mentions", "mute")))


@attrs.define
class _Run:
    agent: str = ""
    state: RunState | None = None
    anchor_seq: int = 0
    thread: str = ""
    anchored: bool = False


@attrs.define
class MemoryStore:
    """World facts, preferences and the schedule of one replay, in memory.

    Args:
        instance_default: the last fact of the L3 chain for everyone.
    """

    instance_default: Level = Level.MENTIONS
    users: dict[str, UserInfo] = attrs.field(factory=dict)
    owners: set[str] = attrs.field(factory=set)
    spaces: set[str] = attrs.field(factory=set)
    spaces_archived: set[str] = attrs.field(factory=set)
    channels: dict[str, ChannelInfo] = attrs.field(factory=dict)
    channels_of_space: dict[str, list[str]] = attrs.field(factory=lambda: defaultdict(list))
    threads: dict[str, ThreadInfo] = attrs.field(factory=dict)
    threads_of_channel: dict[str, list[str]] = attrs.field(factory=lambda: defaultdict(list))
    grants: dict[tuple[str, str], set[str]] = attrs.field(factory=lambda: defaultdict(set))
    devices_by_id: dict[str, tuple[str, Device, bool]] = attrs.field(factory=dict)
    user_devices: dict[str, tuple[Device, ...]] = attrs.field(factory=dict)
    registrations: dict[str, str] = attrs.field(factory=dict)
    presence: dict[str, Connection] = attrs.field(factory=dict)
    read: dict[tuple[str, str], int] = attrs.field(factory=dict)
    mentions: dict[tuple[str, str], list[int]] = attrs.field(factory=dict)
    #: Per thread, the ascending positions of its run anchors and system messages (B1a).
    uncounted: dict[str, list[int]] = attrs.field(factory=dict)
    rows: dict[tuple[str, str, str], Preference] = attrs.field(factory=dict)
    rules: dict[str, tuple[QuietRule, ...]] = attrs.field(factory=dict)
    settings: dict[tuple[str, str], object] = attrs.field(factory=dict)
    anchors: dict[str, str] = attrs.field(factory=dict)
    runs: dict[str, _Run] = attrs.field(factory=dict)
    agent_messages: dict[tuple[str, str], tuple[str, int]] = attrs.field(factory=dict)
    windows: dict[tuple[str, str], Window] = attrs.field(factory=dict)
    queue: list[tuple[datetime, str, str, str, str, int, Due]] = attrs.field(factory=list)
    queued: int = 0
    syncs: dict[str, tuple[datetime | None, bool]] = attrs.field(factory=dict)
    # Derived indexes, kept by `record` only: they make the per-recipient reads O(1).
    _readers: dict[str, tuple[str, ...]] = attrs.field(factory=dict, init=False, repr=False)
    _connections: dict[str, tuple[Connection, ...]] = attrs.field(
        factory=dict, init=False, repr=False
    )
    _registered: dict[str, int] = attrs.field(factory=dict, init=False, repr=False)
    _switches: dict[str, Switches] = attrs.field(factory=dict, init=False, repr=False)
    _grants_of: dict[str, set[tuple[str, str]]] = attrs.field(
        factory=lambda: defaultdict(set), init=False, repr=False
    )
    _dms_of: dict[str, list[str]] = attrs.field(
        factory=lambda: defaultdict(list), init=False, repr=False
    )
    _order: dict[str, int] = attrs.field(factory=dict, init=False, repr=False)
    # `rows` by what they are on, and the personal defaults of `settings`: a fan-out reads the
    # rows of its thread, channel and space once, and everyone with neither a row there nor a
    # default of their own shares one LevelFacts value per channel kind.
    _rows_at: dict[tuple[str, str], dict[str, Preference]] = attrs.field(
        factory=dict, init=False, repr=False
    )
    # The badge's candidates (`badge_threads`): rows by person, mentioned threads by person,
    # and each thread's place in its channel.
    _rows_of: dict[str, dict[tuple[str, str], Preference]] = attrs.field(
        factory=dict, init=False, repr=False
    )
    _mentioned: dict[str, set[str]] = attrs.field(factory=dict, init=False, repr=False)
    _position: dict[str, int] = attrs.field(factory=dict, init=False, repr=False)
    _personal: dict[str, object] = attrs.field(factory=dict, init=False, repr=False)
    _shared_levels: dict[tuple[str | None, bool, Level], LevelFacts] = attrs.field(
        factory=dict, init=False, repr=False
    )
    # `allowed`'s answer key for the thread of the current fan-out; `record` drops it.
    _access: tuple[str, _Access | None] | None = attrs.field(default=None, init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        # The derived indexes of what a store is given at construction (usually nothing).
        for (kind, target), people in self.grants.items():
            for user in people:
                self._grants_of[user].add((kind, target))
        for channel in self.channels.values():
            self._order.setdefault(channel.id, len(self._order))
            for person in channel.participants:
                self._dms_of[person].append(channel.id)
        for device in self.registrations.values():
            self._registered[device] = self._registered.get(device, 0) + 1
        for (user, kind, target), row in self.rows.items():
            self._rows_at.setdefault((kind, target), {})[user] = row
            self._rows_of.setdefault(user, {})[(kind, target)] = row
        for user, thread in self.mentions:
            self._mentioned.setdefault(user, set()).add(thread)
        for threads in self.threads_of_channel.values():
            for index, thread in enumerate(threads):
                self._position[thread] = index
        for (user, key), value in self.settings.items():
            self._update_switches(user)
            if key == _DEFAULT_LEVEL_KEY:
                self._personal[user] = value

    # --- WorldFacts -------------------------------------------------------------------------

    def user(self, user: str) -> UserInfo | None:
        """Return a person, or ``None`` when unknown."""
        return self.users.get(user)

    def thread(self, thread: str) -> ThreadInfo | None:
        """Return a thread, or ``None`` when unknown."""
        return self.threads.get(thread)

    def channel(self, channel: str) -> ChannelInfo | None:
        """Return a channel, or ``None`` when unknown."""
        return self.channels.get(channel)

    def readers(self, channel: str) -> Sequence[str]:
        """Return the active humans who can read a channel (DM participants, grantees and
        owners), ascending; cached until the channel, its grants or a person changes."""
        cached = self._readers.get(channel)
        if cached is not None:
            return cached
        info = self.channels.get(channel)
        if info is None:
            return ()
        if info.direct:
            people = set(info.participants)
        else:
            people = set(self.grants.get(("channel", channel), ()))
            if info.space is not None:
                people |= self.grants.get(("space", info.space), set())
            people |= self.owners
        users = self.users
        readers = self._readers[channel] = tuple(
            sorted(
                p for p in people if (person := users.get(p)) is not None and person.active_human
            )
        )
        return readers

    def _can_read_channel(self, user: str, info: ChannelInfo) -> bool:
        if info.archived or (info.space is not None and info.space in self.spaces_archived):
            return False
        if info.direct:
            return user in info.participants
        return (
            user in self.owners
            or user in self.grants.get(("channel", info.id), ())
            or (info.space is not None and user in self.grants.get(("space", info.space), ()))
        )

    def allowed(self, user: str, thread: str) -> bool:
        """Tell whether a person may read a thread now (D2)."""
        person = self.users.get(user)
        if person is None or not person.active:
            return False
        memo = self._access
        if memo is None or memo[0] != thread:
            memo = self._access = (thread, self._thread_access(thread))
        access = memo[1]
        if access is None:
            return False
        participants, channel_grants, space_grants = access
        if participants is not None:
            return user in participants
        return user in channel_grants or user in self.owners or user in space_grants

    def _thread_access(self, thread: str) -> _Access | None:
        """Who may read a thread, as `allowed` asks it once per fan-out (`_can_read_channel`).

        ``None``: nobody (an unknown thread or channel, an archived channel or space).
        The sets are the store's own, read until the next `record`, which drops the memo.
        """
        info = self.threads.get(thread)
        channel = self.channels.get(info.channel) if info is not None else None
        if channel is None or channel.archived:
            return None
        if channel.direct:
            return channel.participants, (), ()
        space = channel.space
        if space is not None and space in self.spaces_archived:
            return None
        grants = self.grants
        space_grants = grants.get(("space", space), ()) if space is not None else ()
        return None, grants.get(("channel", channel.id), ()), space_grants

    def read_seq(self, user: str, thread: str) -> int:
        """Return a person's read position in a thread (0 when never read)."""
        return self.read.get((user, thread), 0)

    def unread_mentions(self, user: str, thread: str, after: int | None = None) -> int:
        """Return how many mentions of a person in a thread lie after the read position
        (or after ``after`` instead) and the thread's unread floor."""
        seqs = self.mentions.get((user, thread))
        if not seqs:
            return 0
        info = self.threads.get(thread)
        position = self.read_seq(user, thread) if after is None else after
        floor = max(position, info.unread_floor_seq if info else 0)
        return len(seqs) - bisect.bisect_right(seqs, floor)

    def uncounted_between(self, thread: str, after: int, upto: int) -> int:
        """Return how many run anchors and system messages of a thread lie in (after, upto]."""
        seqs = self.uncounted.get(thread)
        if not seqs or upto <= after:
            return 0
        return bisect.bisect_right(seqs, upto) - bisect.bisect_right(seqs, after)

    def badge_threads(self, user: str) -> Iterable[str]:
        """Return the readable threads with messages that may count for a person's badge (B1).

        A thread counts only where it holds an unread mention of the person, has effective
        level ``all``, or is in a DM channel. ``all`` comes from one of the person's rows,
        the channel's default, their own default or the instance's; so, unless one of the last
        two is ``all``, the candidates are the threads of their DM channels, of channels whose
        default is ``all``, of the channels and spaces they hold a row on, the threads they
        hold a row on and those that mention them; not every thread they can read, which grows
        with the log. Ordered by channel, then thread, in creation order.
        """
        if _may_be_all(self.instance_default) or _may_be_all(self._personal.get(user)):
            yield from self.readable_threads(user)
            return
        whole = {
            c.id for c in self._channels_into(user) if c.direct or _may_be_all(c.default_level)
        }
        single = set(self._mentioned.get(user, ()))
        for kind, target in self._rows_of.get(user, ()):
            if kind == "thread":
                single.add(target)
            elif kind == "channel":
                whole.add(target)
            elif kind == "space":
                whole.update(self.channels_of_space.get(target, ()))
        channels, threads, order, position = (
            self.channels,
            self.threads,
            self._order,
            self._position,
        )
        readable: dict[str, bool] = {}
        picked: list[tuple[int, int, str]] = []
        for channel_id in whole:
            info = channels.get(channel_id)
            if info is None or not self._can_read_channel(user, info):
                continue
            rank = order[channel_id]
            for index, thread in enumerate(self.threads_of_channel.get(channel_id, ())):
                if threads[thread].last_message_seq > 0:
                    picked.append((rank, index, thread))
        for thread in single:
            thread_info = threads.get(thread)
            if thread_info is None or thread_info.last_message_seq == 0:
                continue
            channel_id = thread_info.channel
            if channel_id in whole:
                continue  # listed with its channel
            can = readable.get(channel_id)
            if can is None:
                info = channels.get(channel_id)
                can = readable[channel_id] = info is not None and self._can_read_channel(user, info)
            if can:
                picked.append((order[channel_id], position.get(thread, 0), thread))
        picked.sort()
        for _rank, _index, thread in picked:
            yield thread

    def readable_threads(self, user: str) -> Iterator[str]:
        """Return every thread with messages in the channels a person can read, in order."""
        for channel in sorted(self._channels_into(user), key=lambda info: self._order[info.id]):
            if self._can_read_channel(user, channel):
                for thread in self.threads_of_channel.get(channel.id, ()):
                    if self.threads[thread].last_message_seq > 0:
                        yield thread

    def _channels_into(self, user: str) -> Iterable[ChannelInfo]:
        """The channels a person has a way into (all for an owner); read right not checked."""
        if user in self.owners:
            return self.channels.values()
        ids: set[str] = set(self._dms_of.get(user, ()))
        for kind, target in self._grants_of.get(user, ()):
            if kind == "channel":
                ids.add(target)
            elif kind == "space":
                ids.update(self.channels_of_space.get(target, ()))
        return [self.channels[c] for c in ids if c in self.channels]

    def devices(self, user: str) -> tuple[Device, ...]:
        """Return a person's active devices."""
        return self.user_devices.get(user, ())

    def connections(self, user: str) -> tuple[Connection, ...]:
        """Return a person's live connections."""
        cached = self._connections.get(user)
        if cached is None:
            presence = self.presence
            cached = self._connections[user] = tuple(
                presence[device.id] for device in self.devices(user) if device.id in presence
            )
        return cached

    def push_devices(self, user: str) -> tuple[str, ...]:
        """Return the active mobile devices of a person with a push registration."""
        registered = self._registered
        return tuple(
            d.id for d in self.devices(user) if d.platform in _MOBILE and registered.get(d.id)
        )

    def during_run(self, thread: str, agent: str) -> bool:
        """S2: the newest anchor in the thread is a run of this agent, last seen active."""
        run = self.runs.get(self.anchors.get(thread, ""))
        return (
            run is not None
            and run.agent == agent
            and run.state is not None
            and run_active(run.state)
        )

    def last_agent_message(self, run: str) -> tuple[str, int] | None:
        """S3: the run agent's newest message in the run's thread after the anchor."""
        info = self.runs.get(run)
        if info is None or not info.anchored:
            return None  # S3: a run without an anchor message points at its thread only
        last = self.agent_messages.get((info.thread, info.agent))
        return last if last is not None and last[1] > info.anchor_seq else None

    # --- PreferenceFacts --------------------------------------------------------------------

    def level_facts(self, thread: str, users: Sequence[str]) -> dict[str, LevelFacts]:
        """Return the L3 facts of many people for one thread."""
        info = self.threads.get(thread)
        channel = self.channels.get(info.channel) if info is not None else None
        channel_id = channel.id if channel is not None else ""
        space = channel.space if channel is not None and channel.space else ""
        default = channel.default_level if channel is not None else None
        direct = channel is not None and channel.direct
        key = (default, direct, self.instance_default)
        shared = self._shared_levels.get(key)
        if shared is None:  # the value of everyone without a row here or a default of their own
            shared = self._shared_levels[key] = LevelFacts(
                channel_default=default,
                direct_message=direct,
                instance_default=self.instance_default,
            )
        out = dict.fromkeys(users, shared)
        rows_at, personal_of = self._rows_at, self._personal
        on_thread = rows_at.get(("thread", thread), _NO_ROWS)
        on_channel = rows_at.get(("channel", channel_id), _NO_ROWS)
        on_space = rows_at.get(("space", space), _NO_ROWS)
        # Only the people with a row here or a default of their own differ from `shared`
        # (key views intersect in C, walking the smaller side).
        special: set[str] = set()
        for held in (on_thread, on_channel, on_space, personal_of):
            if held:
                special |= held.keys() & out.keys()
        # People with the same rows here and the same default of their own share one value.
        built: dict[tuple[int, int, int, object], LevelFacts] = {}
        for user in special:
            row_thread = on_thread.get(user)
            row_channel = on_channel.get(user)
            row_space = on_space.get(user)
            personal = personal_of.get(user)
            if (
                personal is None
                and row_thread is None
                and row_channel is None
                and row_space is None
            ):
                continue
            # A stored default that is not text (bad data) is not shared: LevelFacts refuses it.
            share = personal is None or type(personal) is str
            same = (id(row_thread), id(row_channel), id(row_space), personal if share else user)
            facts = built.get(same)
            if facts is None:
                facts = built[same] = LevelFacts(
                    thread=row_thread,
                    channel=row_channel,
                    space=row_space,
                    channel_default=default,
                    direct_message=direct,
                    personal_default=personal,
                    instance_default=self.instance_default,
                )
            out[user] = facts
        return out

    def quiet_rules(self, users: Sequence[str]) -> dict[str, tuple[QuietRule, ...]]:
        """Return the quiet rules of many people."""
        rules = self.rules
        return {user: rules[user] for user in rules.keys() & users}

    def switches(self, users: Sequence[str]) -> dict[str, Switches]:
        """Return the switches of many people; a stored non-boolean counts as unset."""
        known = self._switches
        if not known:
            return {}
        return {user: known[user] for user in known.keys() & users}

    def _update_switches(self, user: str) -> None:
        admin = self.settings.get((user, "notify.admin_enabled"))
        breaks = self.settings.get((user, "notify.input_needed_breaks_quiet_hours"))
        if admin is not None or breaks is not None:
            self._switches[user] = Switches(
                admin_enabled=admin if isinstance(admin, bool) else None,
                input_needed_breaks_quiet_hours=breaks if isinstance(breaks, bool) else None,
            )
        else:
            self._switches.pop(user, None)

    def follow(self, user: str, thread: str) -> bool:
        """S5: insert a row ``all`` for the thread unless the person has one."""
        key = (user, "thread", thread)
        if key in self.rows:
            return False
        self._set_row(key, _FOLLOWED)
        return True

    def _set_row(self, key: tuple[str, str, str], row: Preference | None) -> None:
        """Write or (``None``) delete a row, in `rows` and in the index by person."""
        user, kind, target = key
        if row is not None:
            self.rows[key] = row
            self._rows_at.setdefault((kind, target), {})[user] = row
            self._rows_of.setdefault(user, {})[(kind, target)] = row
        else:
            self.rows.pop(key, None)
            mine = self._rows_of.get(user)
            if mine is not None:
                mine.pop((kind, target), None)
                if not mine:
                    del self._rows_of[user]
            here = self._rows_at.get((kind, target))
            if here is not None:
                here.pop(user, None)
                if not here:
                    del self._rows_at[(kind, target)]

    # --- Schedule ---------------------------------------------------------------------------

    def window(self, user: str, thread: str) -> Window | None:
        """Return a person's window on a thread."""
        return self.windows.get((user, thread))

    def open_window(self, user: str, thread: str, end: datetime) -> None:
        """Open a window and schedule its flush at ``end``."""
        self.windows[(user, thread)] = Window(end=end)
        self.schedule(Due(at=end, recipient=user, thread=thread, what="flush"))

    def collect(self, user: str, thread: str) -> None:
        """Count one more collected message."""
        window = self.windows[(user, thread)]
        self.windows[(user, thread)] = Window(end=window.end, collected=window.collected + 1)

    def close_window(self, user: str, thread: str) -> None:
        """Forget a window."""
        self.windows.pop((user, thread), None)

    def schedule(self, due: Due) -> None:
        """Schedule work in `Due` order; equal keys keep their scheduling order."""
        self.queued += 1
        # The key of Due's order as a plain tuple: compared natively, not by attrs' __lt__.
        key = (due.at, due.recipient, due.thread, due.device, due.what, self.queued, due)
        heapq.heappush(self.queue, key)

    def pop_due(self, until: datetime) -> Due | None:
        """Take the first work due at or before ``until``."""
        if self.queue and self.queue[0][0] <= until:
            return heapq.heappop(self.queue)[-1]
        return None

    def next_due(self) -> datetime | None:
        """Return when the first pending work comes due."""
        return self.queue[0][0] if self.queue else None

    def badge_sync(self, user: str) -> tuple[datetime | None, bool]:
        """Return the last badge sync of a person and whether one is pending."""
        return self.syncs.get(user, (None, False))

    def set_badge_sync(self, user: str, last: datetime | None, pending: bool) -> None:
        """Record a person's last badge sync and whether one is pending."""
        self.syncs[user] = (last, pending)

    # --- recording the world ----------------------------------------------------------------

    def record(self, event: Event) -> None:
        """Apply what an event changes in the world.

        Raises:
            EventError: the event contradicts the spec's formats (a malformed quiet rule, a
                preference of an unknown level); nothing was changed.
        """
        self._access = None  # the world may change: `allowed` resolves threads anew
        # A table of the event types this store applies, by their exact name: a type it does
        # not know (``user_created``) changes nothing, as the summary says ("ignored").
        handler = _HANDLERS.get(event.type)
        if handler is not None:
            handler(self, event, event.payload)

    def _on_user_created(self, event: Event, p: dict[str, object]) -> None:
        user = str(p["user"])
        old = self.users.get(user)
        new = self.users[user] = UserInfo(
            id=user,
            kind=str(p.get("kind", old.kind if old else "human")),
            active=bool(p.get("active", old.active if old else True)),
            time_zone=_time_zone(p, old),
        )
        if p.get("owner") is True:
            self.owners.add(user)
        elif p.get("owner") is False:
            self.owners.discard(user)
        if "owner" in p or old is None or old.active_human != new.active_human:
            self._readers.clear()  # readers are the active humans among those with access

    _on_user_updated = _on_user_created

    def _on_space_created(self, event: Event, p: dict[str, object]) -> None:
        self.spaces.add(str(p["space"]))

    def _on_space_archived(self, event: Event, p: dict[str, object]) -> None:
        self.spaces_archived.add(str(p["space"]))

    def _on_channel_created(self, event: Event, p: dict[str, object]) -> None:
        channel = str(p["channel"])
        space = str(p["space"]) if "space" in p else None
        self.channels[channel] = ChannelInfo(
            id=channel,
            kind=str(p["kind"]),
            space=space,
            participants=tuple(str(x) for x in p.get("participants", ())),  # type: ignore[attr-defined]
            default_level=str(p["default_notification_level"])
            if "default_notification_level" in p
            else None,
        )
        if space is not None:
            self.channels_of_space[space].append(channel)
        self._order.setdefault(channel, len(self._order))
        self._readers.pop(channel, None)
        for person in self.channels[channel].participants:
            if channel not in self._dms_of[person]:
                self._dms_of[person].append(channel)

    def _on_channel_updated(self, event: Event, p: dict[str, object]) -> None:
        channel = self.channels.get(str(p["channel"]))
        if channel is None:
            return
        if p.get("clear_default_notification_level"):
            channel = attrs.evolve(channel, default_level=None)
        if "default_notification_level" in p:
            channel = attrs.evolve(channel, default_level=str(p["default_notification_level"]))
        self.channels[channel.id] = channel

    def _on_channel_archived(self, event: Event, p: dict[str, object]) -> None:
        channel = self.channels.get(str(p["channel"]))
        if channel is not None:
            self.channels[channel.id] = attrs.evolve(channel, archived=True)

    def _on_thread_created(self, event: Event, p: dict[str, object]) -> None:
        thread, channel = str(p["thread"]), str(p["channel"])
        self.threads[thread] = ThreadInfo(id=thread, channel=channel, main=bool(p["main"]))
        self._position[thread] = len(self.threads_of_channel[channel])
        self.threads_of_channel[channel].append(thread)

    def _on_access_granted(self, event: Event, p: dict[str, object]) -> None:
        key, user = self._grant_changed(p)
        self.grants[key].add(user)
        self._grants_of[user].add(key)

    def _on_access_revoked(self, event: Event, p: dict[str, object]) -> None:
        key, user = self._grant_changed(p)
        self.grants[key].discard(user)
        self._grants_of[user].discard(key)

    def _grant_changed(self, p: dict[str, object]) -> tuple[tuple[str, str], str]:
        target = p["target"]
        assert isinstance(target, dict)
        key = (str(target["kind"]), str(target["id"]))
        if key[0] == "channel":
            self._readers.pop(key[1], None)
        else:
            self._readers.clear()
        return key, str(p["user"])

    def _set_device(self, device_id: str, user: str, device: Device, active: bool) -> None:
        old = self.devices_by_id.get(device_id)
        if old is not None:
            self._connections.pop(old[0], None)
            if old[0] != user:  # the device changed hands: the old owner loses it
                kept = tuple(d for d in self.user_devices.get(old[0], ()) if d.id != device_id)
                self.user_devices[old[0]] = kept
        self._connections.pop(user, None)
        self.devices_by_id[device_id] = (user, device, active)
        mine = [d for d in self.user_devices.get(user, ()) if d.id != device_id]
        if active:
            mine.append(device)
        self.user_devices[user] = tuple(sorted(mine, key=lambda d: d.id))

    def _on_device_registered(self, event: Event, p: dict[str, object]) -> None:
        device = Device(id=str(p["device"]), platform=str(p["platform"]))
        self._set_device(device.id, str(p["user"]), device, p["state"] == "active")

    def _on_device_approved(self, event: Event, p: dict[str, object]) -> None:
        known = self.devices_by_id.get(str(p["device"]))
        if known is not None:
            self._set_device(known[1].id, known[0], known[1], True)

    def _on_device_revoked(self, event: Event, p: dict[str, object]) -> None:
        known = self.devices_by_id.get(str(p["device"]))
        if known is not None:
            self._set_device(known[1].id, known[0], known[1], False)
            self.presence.pop(known[1].id, None)

    def _on_push_registered(self, event: Event, p: dict[str, object]) -> None:
        registration, device = str(p["registration"]), str(p["device"])
        self._unregister(registration)
        self.registrations[registration] = device
        self._registered[device] = self._registered.get(device, 0) + 1

    def _on_push_unregistered(self, event: Event, p: dict[str, object]) -> None:
        self._unregister(str(p["registration"]))

    def _unregister(self, registration: str) -> None:
        device = self.registrations.pop(registration, None)
        if device is not None:
            left = self._registered[device] - 1
            if left:
                self._registered[device] = left
            else:
                del self._registered[device]

    def _on_presence_changed(self, event: Event, p: dict[str, object]) -> None:
        device = str(p["device"])
        known = self.devices_by_id.get(device)
        if known is not None:
            self._connections.pop(known[0], None)
        if p["connected"]:
            self.presence[device] = Connection(
                device=device,
                focus=frozenset(str(t) for t in p.get("focus", ())),  # type: ignore[attr-defined]
                idle=bool(p.get("idle", False)),
            )
        else:
            self.presence.pop(device, None)

    def _on_notification_pref_updated(self, event: Event, p: dict[str, object]) -> None:
        pref = p["preference"]
        assert isinstance(pref, dict)
        target = pref.get("target")
        if not isinstance(target, dict) or target.get("kind") not in ("space", "channel", "thread"):
            raise EventError(
                "invalid_member", "preference.target must be {kind, id}", "/payload/preference"
            )
        key = (str(event.audience), str(target["kind"]), str(target.get("id")))
        if p.get("deleted"):
            self._set_row(key, None)
            return
        try:
            level = parse_level(pref.get("level"), "/payload/preference/level")
            until = pref.get("muted_until")
            muted = (
                None if until is None else parse_instant(until, "/payload/preference/muted_until")
            )
        except EventError:
            raise
        except Exception as error:  # NotifyError: re-raised as an event error below
            code = getattr(error, "code", "invalid_member")
            raise EventError(code, str(error), getattr(error, "pointer", None)) from None
        self._set_row(key, Preference(level=level, muted_until=muted))

    def _on_quiet_hours_updated(self, event: Event, p: dict[str, object]) -> None:
        raw = p["rules"]
        assert isinstance(raw, list)
        rules = []
        for index, rule in enumerate(raw):
            try:
                rules.append(rule_from_json(rule))
            except Exception as error:
                code = getattr(error, "code", "invalid_member")
                pointer = f"/payload/rules/{index}" + (getattr(error, "pointer", None) or "")
                message = getattr(error, "message", None) or str(error)  # without code
                raise EventError(code, message, pointer) from None
        self.rules[str(event.audience)] = tuple(rules)

    def _on_settings_updated(self, event: Event, p: dict[str, object]) -> None:
        key = (str(event.audience), str(p["key"]))
        if p.get("deleted") or "value" not in p:
            self.settings.pop(key, None)
            if key[1] == _DEFAULT_LEVEL_KEY:
                self._personal.pop(key[0], None)
        else:
            self.settings[key] = p["value"]
            if key[1] == _DEFAULT_LEVEL_KEY:
                self._personal[key[0]] = p["value"]
        self._update_switches(key[0])

    def _on_message_created(self, event: Event, p: dict[str, object]) -> None:
        # Every message of the log comes here in every replay (each task of a partitioned one
        # too): each member of the payload is read once.
        thread_id, seq, kind = str(p["thread"]), int(p["thread_seq"]), p["kind"]  # type: ignore[call-overload]
        author = str(p["author"])
        counted = kind != "run" and kind != "system"
        info = self.threads.get(thread_id)
        if info is not None and counted and seq >= info.last_message_seq:
            # Built directly (`attrs.evolve` looks the fields up again): once per message.
            self.threads[thread_id] = ThreadInfo(
                id=info.id,
                channel=info.channel,
                main=info.main,
                last_message_seq=seq,
                unread_floor_seq=info.unread_floor_seq,
                newest_message=str(p["message"]),
            )
        if not counted:
            bisect.insort(self.uncounted.setdefault(thread_id, []), seq)  # B1a
        else:
            # B3: the author's own message moves their read position to it (never back).
            key = (author, thread_id)
            read = self.read
            if read.get(key, 0) < seq:
                read[key] = seq
        if kind == "run" and "run" in p:
            run = self.runs.setdefault(str(p["run"]), _Run())
            run.anchor_seq, run.thread, run.anchored = seq, thread_id, True
            self.anchors[thread_id] = str(p["run"])
        elif p["origin"] == "agent" and kind in ("text", "voice", "card"):
            self.agent_messages[(thread_id, author)] = (str(p["message"]), seq)
        mention_ids = p.get("mention_ids")
        if mention_ids:
            for person in mention_ids:  # type: ignore[attr-defined]
                if person != author:
                    bisect.insort(self.mentions.setdefault((str(person), thread_id), []), seq)
                    self._mentioned.setdefault(str(person), set()).add(thread_id)

    def _on_run_state_changed(self, event: Event, p: dict[str, object]) -> None:
        run = self.runs.setdefault(str(p["run"]), _Run(thread=str(p["thread"])))
        run.agent, run.state = str(p["agent"]), RunState(str(p["state"]))
        if not run.thread:
            run.thread = str(p["thread"])

    def _on_read_state_updated(self, event: Event, p: dict[str, object]) -> None:
        self.read[(str(event.audience), str(p["thread"]))] = int(p["last_read_seq"])  # type: ignore[call-overload]


#: The event types the store applies and their handlers (by exact type: see `record`).
_HANDLERS: Final = {
    kind: handler
    for kind in PAYLOADS
    if (handler := getattr(MemoryStore, "_on_" + kind.replace(".", "_"), None)) is not None
}


def _time_zone(p: dict[str, object], old: UserInfo | None) -> str | None:
    # formats.md section 4: a member named in "unset" is removed; one not named keeps its value.
    if "time_zone" in p:
        return str(p["time_zone"])
    unset = p.get("unset")
    if isinstance(unset, list) and "time_zone" in unset:
        return None
    return old.time_zone if old else None
