"""`MemoryStore`: every port of the pipeline in memory, composed of one twin per port.

`MemoryWorld` (`notify_core.hints.ports.WorldFacts`), `MemoryPreferences`
(`notify_core.hints.ports.PreferenceFacts`) and `MemorySchedule`
(`notify_core.hints.ports.Schedule`),
as ``notify_pg.store`` composes its repositories. The store answers all three ports itself
by thin forwarding methods, so one object can be handed to the pipeline as world, prefs and
schedule (as `notify_core.replay.run.Replay` does); each part can be handed on its own too.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime

import attrs

from notify_core.events.log import Event
from notify_core.hints.decide import Connection, Device, Switches
from notify_core.hints.levels import Level, LevelFacts, Preference
from notify_core.hints.memory.devices import MemoryDevices
from notify_core.hints.memory.messages import MemoryMessages
from notify_core.hints.memory.preferences import MemoryPreferences
from notify_core.hints.memory.schedule import MemorySchedule
from notify_core.hints.memory.world import MemoryWorld
from notify_core.hints.ports import ChannelInfo, Due, ThreadInfo, UserInfo, Window
from notify_core.hints.quiet import QuietRule

__all__ = ["MemoryStore"]


@attrs.define(init=False)
class MemoryStore:
    """World facts, preferences and the schedule of one replay, in memory.

    It learns the world from the event log itself (`record`), so its size is bounded by the
    world's state (people, channels, threads, rows), never by the log's length.

    Args:
        instance_default: the last fact of the L3 chain for everyone.
        users: people and bots to start with, by id.
        channels: channels to start with, by id.
        threads: threads to start with, by id.
        grants: access grants to start with, per (target kind, target id).
        rows: preference rows to start with, by (person, target kind, target id).
        rules: quiet rules to start with, by person.
        settings: personal settings to start with, by (person, key).

    The tables given are the store's own from then on (not copies).
    """

    world: MemoryWorld
    prefs: MemoryPreferences
    #: The `notify_core.hints.ports.Schedule` twin (``schedule`` is that port's method).
    agenda: MemorySchedule
    # The world's parts, held here too: the store forwards to them in one step.
    _messages: MemoryMessages = attrs.field(repr=False)
    _devices: MemoryDevices = attrs.field(repr=False)

    def __init__(
        self,
        instance_default: Level = Level.MENTIONS,
        *,
        users: dict[str, UserInfo] | None = None,
        channels: dict[str, ChannelInfo] | None = None,
        threads: dict[str, ThreadInfo] | None = None,
        grants: dict[tuple[str, str], set[str]] | None = None,
        rows: dict[tuple[str, str, str], Preference] | None = None,
        rules: dict[str, tuple[QuietRule, ...]] | None = None,
        settings: dict[tuple[str, str], object] | None = None,
    ) -> None:
        channels = {} if channels is None else channels
        threads = {} if threads is None else threads
        self.prefs = MemoryPreferences(
            instance_default=instance_default,
            rows={} if rows is None else rows,
            rules={} if rules is None else rules,
            settings={} if settings is None else settings,
            threads=threads,
            channels=channels,
        )
        self.world = MemoryWorld(
            users={} if users is None else users,
            channels=channels,
            threads=threads,
            grants=defaultdict(set) if grants is None else grants,
            prefs=self.prefs,
        )
        self.agenda = MemorySchedule()
        self._messages = self.world.message_facts
        self._devices = self.world.device_facts

    # --- the tables callers read ------------------------------------------------------------

    @property
    def instance_default(self) -> Level:
        """The last fact of the L3 chain for everyone."""
        return self.prefs.instance_default

    @property
    def users(self) -> dict[str, UserInfo]:
        """The people and bots by id."""
        return self.world.users

    @property
    def spaces(self) -> set[str]:
        """The spaces created."""
        return self.world.spaces

    @property
    def channels(self) -> dict[str, ChannelInfo]:
        """The channels by id."""
        return self.world.channels

    @property
    def threads(self) -> dict[str, ThreadInfo]:
        """The threads by id."""
        return self.world.threads

    @property
    def grants(self) -> dict[tuple[str, str], set[str]]:
        """Per (target kind, target id), the people granted access."""
        return self.world.grants

    @property
    def devices_by_id(self) -> dict[str, tuple[str, Device, bool]]:
        """Per device, its owner, the device and whether it is active."""
        return self._devices.devices_by_id

    @property
    def rows(self) -> dict[tuple[str, str, str], Preference]:
        """The preference rows by (person, target kind, target id)."""
        return self.prefs.rows

    @property
    def rules(self) -> dict[str, tuple[QuietRule, ...]]:
        """The quiet rules by person."""
        return self.prefs.rules

    @property
    def settings(self) -> dict[tuple[str, str], object]:
        """The personal settings by (person, key)."""
        return self.prefs.settings

    # --- WorldFacts (`MemoryWorld`) ---------------------------------------------------------

    def user(self, user: str) -> UserInfo | None:
        """Return a person, or ``None`` when unknown."""
        return self.world.user(user)

    def thread(self, thread: str) -> ThreadInfo | None:
        """Return a thread, or ``None`` when unknown."""
        return self.world.thread(thread)

    def channel(self, channel: str) -> ChannelInfo | None:
        """Return a channel, or ``None`` when unknown."""
        return self.world.channel(channel)

    def readers(self, channel: str) -> Sequence[str]:
        """Return the active humans who can read a channel, ascending."""
        return self.world.readers(channel)

    def allowed(self, user: str, thread: str) -> bool:
        """Tell whether a person may read a thread now (D2)."""
        return self.world.allowed(user, thread)

    def read_seq(self, user: str, thread: str) -> int:
        """Return a person's read position in a thread (0 when never read)."""
        return self._messages.read_seq(user, thread)

    def unread_mentions(self, user: str, thread: str, after: int | None = None) -> int:
        """Return how many mentions of a person in a thread are unread (or after ``after``)."""
        return self._messages.unread_mentions(user, thread, after)

    def uncounted_between(self, thread: str, after: int, upto: int) -> int:
        """Return how many run anchors and system messages of a thread lie in (after, upto]."""
        return self._messages.uncounted_between(thread, after, upto)

    def badge_threads(self, user: str) -> Iterable[str]:
        """Return the readable threads with messages that may count for a person's badge."""
        return self.world.badge_threads(user)

    def readable_threads(self, user: str) -> Iterator[str]:
        """Return every thread with messages in the channels a person can read, in order."""
        return self.world.readable_threads(user)

    def devices(self, user: str) -> tuple[Device, ...]:
        """Return a person's active devices."""
        return self._devices.devices(user)

    def connections(self, user: str) -> tuple[Connection, ...]:
        """Return a person's live connections."""
        return self._devices.connections(user)

    def push_devices(self, user: str) -> tuple[str, ...]:
        """Return the active mobile devices of a person with a push registration."""
        return self._devices.push_devices(user)

    def during_run(self, thread: str, agent: str) -> bool:
        """S2: the newest anchor in the thread is a run of this agent, last seen active."""
        return self._messages.during_run(thread, agent)

    def last_agent_message(self, run: str) -> tuple[str, int] | None:
        """S3: the run agent's newest message in the run's thread after the anchor."""
        return self._messages.last_agent_message(run)

    def record(self, event: Event) -> None:
        """Apply what an event changes in the world and the preferences.

        Raises:
            EventError: the event contradicts the spec's formats (a malformed quiet rule, a
                preference of an unknown level); nothing was changed.
        """
        self.world.record(event)

    # --- PreferenceFacts (`MemoryPreferences`) ----------------------------------------------

    def level_facts(self, thread: str, users: Sequence[str]) -> dict[str, LevelFacts]:
        """Return the L3 facts of many people for one thread."""
        return self.prefs.level_facts(thread, users)

    def quiet_rules(self, users: Sequence[str]) -> dict[str, tuple[QuietRule, ...]]:
        """Return the quiet rules of many people."""
        return self.prefs.quiet_rules(users)

    def switches(self, users: Sequence[str]) -> dict[str, Switches]:
        """Return the switches of many people; a stored non-boolean counts as unset."""
        return self.prefs.switches(users)

    def follow(self, user: str, thread: str) -> bool:
        """S5: insert a row ``all`` for the thread unless the person has one."""
        return self.prefs.follow(user, thread)

    def _set_row(self, key: tuple[str, str, str], row: Preference | None) -> None:
        # Kept for tests/core/hints/test_memory.py, which writes rows as events would.
        self.prefs.set_row(key, row)

    # --- Schedule (`MemorySchedule`) --------------------------------------------------------

    def window(self, user: str, thread: str) -> Window | None:
        """Return a person's window on a thread."""
        return self.agenda.window(user, thread)

    def open_window(self, user: str, thread: str, end: datetime) -> None:
        """Open a window and schedule its flush at ``end``."""
        self.agenda.open_window(user, thread, end)

    def collect(self, user: str, thread: str) -> None:
        """Count one more collected message."""
        self.agenda.collect(user, thread)

    def close_window(self, user: str, thread: str) -> None:
        """Forget a window."""
        self.agenda.close_window(user, thread)

    def schedule(self, due: Due) -> None:
        """Schedule work in `Due` order; equal keys keep their scheduling order."""
        self.agenda.schedule(due)

    def pop_due(self, until: datetime) -> Due | None:
        """Take the first work due at or before ``until``."""
        return self.agenda.pop_due(until)

    def next_due(self) -> datetime | None:
        """Return when the first pending work comes due."""
        return self.agenda.next_due()

    def badge_sync(self, user: str) -> tuple[datetime | None, bool]:
        """Return the last badge sync of a person and whether one is pending."""
        return self.agenda.badge_sync(user)

    def set_badge_sync(self, user: str, last: datetime | None, pending: bool) -> None:
        """Record a person's last badge sync and whether one is pending."""
        self.agenda.set_badge_sync(user, last, pending)
