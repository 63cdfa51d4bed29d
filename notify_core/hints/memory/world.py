"""`MemoryWorld`: the in-memory twin of `notify_core.hints.ports.WorldFacts`.

The host's facts as a replay learns them from the event log (`MemoryWorld.record`): people,
spaces, channels, threads and read rights here; devices in `MemoryDevices`, what messages
leave behind (read positions, mentions, runs) in `MemoryMessages`. The badge's candidates
(B1) also read the preferences (`MemoryPreferences`), whose events `record` applies too: the
pipeline hands every event to its world only.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Iterator, Sequence

import attrs

from notify_core.events.log import Event
from notify_core.hints.decide import Connection, Device
from notify_core.hints.memory.devices import MemoryDevices
from notify_core.hints.memory.learning import Handler, handlers_of
from notify_core.hints.memory.messages import MemoryMessages
from notify_core.hints.memory.preferences import MemoryPreferences
from notify_core.hints.ports import ChannelInfo, ThreadInfo, UserInfo

__all__ = ["MemoryWorld"]

#: Who may read a thread: DM participants (or None), channel grantees, space grantees.
_Access = tuple[Collection[str] | None, Collection[str], Collection[str]]


def _may_be_all(level: object) -> bool:
    """Whether a stored level may mean ``all``: any but none, ``mentions`` and ``mute`` (B1
    candidates err on the side of more; a value not understood is checked as any other)."""
    return not (level is None or (isinstance(level, str) and level in ("mentions", "mute")))


@attrs.define
class MemoryWorld:
    """The host's facts of one replay, in memory (`notify_core.hints.ports.WorldFacts`).

    Args:
        users: the people and bots by id.
        owners: the instance's owners (they can read every channel).
        spaces: the spaces created.
        spaces_archived: the spaces archived.
        channels: the channels by id.
        channels_of_space: per space, its channels in creation order.
        threads: the threads by id.
        threads_of_channel: per channel, its threads in creation order.
        grants: per (target kind, target id), the people granted access.
        prefs: the preferences, built on this world's ``threads`` and ``channels`` (the
            default is); `record` applies their events, the badge's candidates read them.
        message_facts: read positions, mentions and runs, built on this world's ``threads``
            (the default is).
        device_facts: devices, presence and push registrations.
    """

    users: dict[str, UserInfo] = attrs.field(factory=dict)
    owners: set[str] = attrs.field(factory=set)
    spaces: set[str] = attrs.field(factory=set)
    spaces_archived: set[str] = attrs.field(factory=set)
    channels: dict[str, ChannelInfo] = attrs.field(factory=dict)
    channels_of_space: dict[str, list[str]] = attrs.field(factory=lambda: defaultdict(list))
    threads: dict[str, ThreadInfo] = attrs.field(factory=dict)
    threads_of_channel: dict[str, list[str]] = attrs.field(factory=lambda: defaultdict(list))
    grants: dict[tuple[str, str], set[str]] = attrs.field(factory=lambda: defaultdict(set))
    prefs: MemoryPreferences = attrs.field(
        repr=False,  # shown by the store that holds both
        default=attrs.Factory(
            lambda self: MemoryPreferences(threads=self.threads, channels=self.channels),
            takes_self=True,
        ),
    )
    message_facts: MemoryMessages = attrs.field(
        default=attrs.Factory(lambda self: MemoryMessages(threads=self.threads), takes_self=True)
    )
    device_facts: MemoryDevices = attrs.field(factory=MemoryDevices)
    # Derived indexes, kept by `record` only: they make the per-recipient reads O(1).
    _readers: dict[str, tuple[str, ...]] = attrs.field(factory=dict, init=False, repr=False)
    _grants_of: dict[str, set[tuple[str, str]]] = attrs.field(
        factory=lambda: defaultdict(set), init=False, repr=False
    )
    _dms_of: dict[str, list[str]] = attrs.field(
        factory=lambda: defaultdict(list), init=False, repr=False
    )
    # Each channel's place among channels and each thread's in its channel (the badge's order).
    _order: dict[str, int] = attrs.field(factory=dict, init=False, repr=False)
    _position: dict[str, int] = attrs.field(factory=dict, init=False, repr=False)
    # `allowed`'s answer key for the thread of the current fan-out; `record` drops it.
    _access: tuple[str, _Access | None] | None = attrs.field(default=None, init=False, repr=False)
    # The handlers of every part by event type, bound once (see
    # `notify_core.hints.memory.learning`).
    _handlers: dict[str, Handler] = attrs.field(factory=dict, init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        # The derived indexes of what a world is given at construction (usually nothing).
        for (kind, target), people in self.grants.items():
            for user in people:
                self._grants_of[user].add((kind, target))
        for channel in self.channels.values():
            self._order.setdefault(channel.id, len(self._order))
            for person in channel.participants:
                self._dms_of[person].append(channel.id)
        for threads in self.threads_of_channel.values():
            for index, thread in enumerate(threads):
                self._position[thread] = index
        for part in (self.prefs, self.device_facts, self.message_facts, self):
            self._handlers.update(handlers_of(part))

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

    def allowed_many(self, users: Sequence[str], thread: str) -> list[bool]:
        """`allowed` for each of ``users``, in order: a fan-out's read rights at once.

        A channel's readers (`readers`: active humans with access) may read its threads
        unless the channel or space is archived, which `allowed` checks first; so the
        readers among ``users`` are answered by one set lookup each, done in C, and only the
        others (mentioned people without access, bots) ask `allowed`.
        """
        memo = self._access
        if memo is None or memo[0] != thread:
            memo = self._access = (thread, self._thread_access(thread))
        if memo[1] is None:
            return [False] * len(users)
        channel = self.threads[thread].channel  # known: the access is not None
        # A set for this fan-out only (built in C): kept per channel, they would cost memory.
        out = list(map(set(self.readers(channel)).__contains__, users))
        start = 0
        for _ in range(out.count(False)):
            index = out.index(False, start)
            out[index] = self.allowed(users[index], thread)
            start = index + 1
        return out

    def readers_allowed(self, thread: str) -> bool:
        """Whether the readers of a thread's channel (`readers`) may read the thread, each as
        `allowed` answers: they are the active humans with access to the channel, so all may
        unless the thread is unknown or its channel or space archived."""
        memo = self._access
        if memo is None or memo[0] != thread:
            memo = self._access = (thread, self._thread_access(thread))
        return memo[1] is not None

    def _thread_access(self, thread: str) -> _Access | None:
        """Who may read a thread, as `allowed` asks it once per fan-out (`_can_read_channel`).

        ``None``: nobody (an unknown thread or channel, an archived channel or space).
        The sets are the world's own, read until the next `record`, which drops the memo.
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
        return self.message_facts.read_seq(user, thread)

    def unread_mentions(self, user: str, thread: str, after: int | None = None) -> int:
        """Return how many mentions of a person in a thread lie after the read position
        (or after ``after`` instead) and the thread's unread floor."""
        return self.message_facts.unread_mentions(user, thread, after)

    def uncounted_between(self, thread: str, after: int, upto: int) -> int:
        """Return how many run anchors and system messages of a thread lie in (after, upto]."""
        return self.message_facts.uncounted_between(thread, after, upto)

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
        prefs = self.prefs
        if _may_be_all(prefs.instance_default) or _may_be_all(prefs.personal.get(user)):
            yield from self.readable_threads(user)
            return
        whole = {
            c.id for c in self._channels_into(user) if c.direct or _may_be_all(c.default_level)
        }
        single = set(self.message_facts.mentioned.get(user, ()))
        for kind, target in prefs.rows_of.get(user, ()):
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
        return self.device_facts.devices(user)

    def connections(self, user: str) -> tuple[Connection, ...]:
        """Return a person's live connections."""
        return self.device_facts.connections(user)

    def push_devices(self, user: str) -> tuple[str, ...]:
        """Return the active mobile devices of a person with a push registration."""
        return self.device_facts.push_devices(user)

    def during_run(self, thread: str, agent: str) -> bool:
        """S2: the newest anchor in the thread is a run of this agent, last seen active."""
        return self.message_facts.during_run(thread, agent)

    def last_agent_message(self, run: str) -> tuple[str, int] | None:
        """S3: the run agent's newest message in the run's thread after the anchor."""
        return self.message_facts.last_agent_message(run)

    def record(self, event: Event) -> None:
        """Apply what an event changes in the world, its devices, messages and preferences.

        Raises:
            EventError: the event contradicts the spec's formats (a malformed quiet rule, a
                preference of an unknown level); nothing was changed.
        """
        self._access = None  # the world may change: `allowed` resolves threads anew
        # A table of the event types the parts apply, by their exact name: a type none knows
        # (``user_created``) changes nothing, as the summary says ("ignored").
        handler = self._handlers.get(event.type)
        if handler is not None:
            handler(event, event.payload)

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


def _time_zone(p: dict[str, object], old: UserInfo | None) -> str | None:
    # formats.md section 4: a member named in "unset" is removed; one not named keeps its value.
    if "time_zone" in p:
        return str(p["time_zone"])
    unset = p.get("unset")
    if isinstance(unset, list) and "time_zone" in unset:
        return None
    return old.time_zone if old else None
