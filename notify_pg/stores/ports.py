"""The host facts the adapter reads, as small `typing.Protocol` ports.

Users, spaces, channels, threads, read rights, time zones and personal settings belong to the
host: the adapter never reads a host table itself. A host implements these ports on its own
tables (`notify_reference_host` shows one way) and hands them to `notify_pg.NotifyStore`.

Every method receives the connection of the ambient transaction, so that the locks it takes and
the rows it reads belong to the caller's transaction. No method authorizes anything: the adapter
asks for facts about people and targets it already selected.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

import attrs

from notify_core.hints.decide import Connection, Device
from notify_core.hints.levels import Level, Target, TargetKind, parse_level
from notify_core.hints.ports import ChannelInfo, ThreadInfo, UserInfo
from notify_pg.db.seam import Conn

__all__ = [
    "AccessPort",
    "BatchFactsPort",
    "DevicesPort",
    "DirectoryPort",
    "HostPorts",
    "NotificationPath",
    "PeoplePort",
    "PipelineHostPorts",
    "PlacesPort",
    "PresencePort",
    "ReadStatePort",
    "SettingsPort",
    "StructurePort",
]


def _optional_level(value: object) -> Level | None:
    return None if value is None else parse_level(value, "/channel_default")


@attrs.frozen(kw_only=True)
class NotificationPath:
    """Where a preference target sits (L3: thread, channel, space).

    Args:
        kind: the kind of the target that was looked up.
        space_id: the space; absent for a direct-message channel and its threads.
        channel_id: the channel; absent when the target is a space.
        thread_id: the thread; present only when the target is a thread.
        channel_kind: ``text``, ``forum``, ``dm`` ...; absent for a space.
        channel_default: the channel's default level; absent when unset or for a space.
        archived: the space, the channel or the channel's space is archived.

    Raises:
        InvalidLevel: ``channel_default`` is not a level.
    """

    kind: TargetKind = attrs.field(converter=TargetKind)
    space_id: str | None = None
    channel_id: str | None = None
    thread_id: str | None = None
    channel_kind: str | None = None
    channel_default: Level | None = attrs.field(default=None, converter=_optional_level)
    archived: bool = False

    @property
    def direct_message(self) -> bool:
        """Whether the target lies in a direct-message channel (L3 step 5)."""
        return self.channel_kind == "dm"


class StructurePort(Protocol):
    """Spaces, channels and threads of the host."""

    def notification_path(
        self, conn: Conn, target: Target, *, lock: bool = False
    ) -> NotificationPath | None:
        """Return the path of ``target``, or ``None`` when no target of that kind has that ID.

        With ``lock``, take ``FOR SHARE`` on the thread row, then the channel row, then the
        space row, in that order (the order every writer takes them, so none deadlocks): an
        archive holds its row ``FOR UPDATE``, so a preference write either commits before the
        archive (and is cleaned up by it) or sees the target archived.
        """
        ...

    def channel_ids_of_space(self, conn: Conn, space_id: str) -> Sequence[str]:
        """Return every channel of the space, archived ones included, in ascending ID order."""
        ...

    def thread_ids_of_channels(self, conn: Conn, channel_ids: Sequence[str]) -> Sequence[str]:
        """Return every thread of the channels, in ascending ID order."""
        ...


class AccessPort(Protocol):
    """Read rights of the host."""

    def readable(self, conn: Conn, user_id: str, targets: Sequence[Target]) -> frozenset[Target]:
        """Return the targets among ``targets`` that the person may read now.

        A target that does not resolve any more is not readable. Called once per list, so an
        implementation should answer all targets with one query.
        """
        ...


class DirectoryPort(Protocol):
    """People of the host."""

    def time_zones(self, conn: Conn, user_ids: Sequence[str]) -> Mapping[str, str]:
        """Return the stored IANA zone name of each person who has one (others are absent).

        The names are returned as stored; the adapter validates them and falls back to UTC.
        """
        ...


class SettingsPort(Protocol):
    """Personal settings of the host (for example ``notify.default_level``)."""

    def settings(
        self, conn: Conn, user_ids: Sequence[str], keys: Sequence[str]
    ) -> Mapping[str, Mapping[str, object]]:
        """Return the stored values (decoded JSON) of ``keys`` per person; no defaults.

        People without any of the keys may be absent.
        """
        ...


class PeoplePort(Protocol):
    """Principals as the host knows them: kind (``human``, ``agent``, ``app``), active flag
    and zone. The pipeline reads it (S1, D2); preference and quiet-hour operations refuse
    agents and apps with it (docs/postgresql.md)."""

    def users(self, conn: Conn, user_ids: Sequence[str]) -> Mapping[str, UserInfo]:
        """Return the people among ``user_ids`` that exist (unknown ones are absent)."""
        ...


class HostPorts(StructurePort, AccessPort, DirectoryPort, SettingsPort, PeoplePort, Protocol):
    """All host facts the adapter reads, in one object."""


# --- the facts of the pipeline (part 2: docs/postgresql.md) ---------------------------------
#
# `notify_pg.push` implements the ports of `notify_core.hints.ports` on these. Every method
# answers many people or targets with one query; none authorizes anything: the pipeline asks
# about the candidates it selected, and `PlacesPort.thread_readers` is the exact read check.


class PlacesPort(Protocol):
    """Threads and channels with what the pipeline reads of them, and who reads them."""

    def threads(self, conn: Conn, thread_ids: Sequence[str]) -> Mapping[str, ThreadInfo]:
        """Return the known threads among ``thread_ids``, with their positions."""
        ...

    def channels(self, conn: Conn, channel_ids: Sequence[str]) -> Mapping[str, ChannelInfo]:
        """Return the known channels among ``channel_ids`` (participants only for DMs)."""
        ...

    def channel_readers(self, conn: Conn, channel_id: str) -> Sequence[str]:
        """Return who can read a channel, ascending: a superset that `thread_readers` decides.

        DM participants for a direct-message channel; otherwise the grantees of the channel
        and of its space and the owners, whether active or not.
        """
        ...

    def thread_readers(self, conn: Conn, thread_id: str, user_ids: Sequence[str]) -> frozenset[str]:
        """Return the people among ``user_ids`` who may read the thread now (D2).

        Only active people; nobody for a thread in an archived channel or space.
        """
        ...

    def badge_threads(self, conn: Conn, user_id: str) -> Sequence[str]:
        """Return the threads with messages that the person can read now, by the rules of
        `thread_readers` except the active flag (B1): the badge counts only those."""
        ...


class DevicesPort(Protocol):
    """People's devices (D5)."""

    def active_devices(
        self, conn: Conn, user_ids: Sequence[str]
    ) -> Mapping[str, tuple[Device, ...]]:
        """Return each person's active devices ordered by id (people without any absent)."""
        ...


class PresencePort(Protocol):
    """Live gateway connections (D4, D5): the host's gateway keeps them."""

    def connections(
        self, conn: Conn, user_ids: Sequence[str]
    ) -> Mapping[str, tuple[Connection, ...]]:
        """Return the live connections of each person's active devices, ordered by device."""
        ...


class ReadStatePort(Protocol):
    """Read positions and mentions (D8, D9, B1)."""

    def read_positions(
        self, conn: Conn, user_id: str, thread_ids: Sequence[str]
    ) -> Mapping[str, int]:
        """Return the person's read position per thread (threads never read are absent).

        A person's own message moves their position up to it (B3), as a chat server does when
        it stores the message; the host keeps that in the same transaction.
        """
        ...

    def unread_mentions(
        self, conn: Conn, user_id: str, floors: Mapping[str, int]
    ) -> Mapping[str, int]:
        """Return per thread how many mentions of the person lie after ``floors[thread]``."""
        ...


@runtime_checkable
class BatchFactsPort(Protocol):
    """Optional: facts of many people on many threads at once (D2, B1).

    A push round counts the badges of many people and a due-work round decides for many
    (person, thread) pairs; a host that implements these answers each with one query for all
    of them, where `ReadStatePort`, `PlacesPort.thread_readers` and
    `PlacesPort.badge_threads` take one query per person or thread. Without them the adapter
    asks per person or thread; the answers must be the same.
    """

    def thread_readers_of(
        self, conn: Conn, pairs: Sequence[tuple[str, str]]
    ) -> frozenset[tuple[str, str]]:
        """Return the ``(person, thread)`` pairs among ``pairs`` where the person may read the
        thread now, by the rules of `PlacesPort.thread_readers`."""
        ...

    def badge_threads_of(self, conn: Conn, user_ids: Sequence[str]) -> Mapping[str, Sequence[str]]:
        """Return per person what `PlacesPort.badge_threads` returns (people without any
        thread may be absent)."""
        ...

    def read_positions_of(
        self, conn: Conn, pairs: Sequence[tuple[str, str]]
    ) -> Mapping[tuple[str, str], int]:
        """Return the read position per ``(person, thread)`` pair (never read: absent)."""
        ...

    def unread_mentions_of(
        self, conn: Conn, floors: Mapping[tuple[str, str], int]
    ) -> Mapping[tuple[str, str], int]:
        """Return per ``(person, thread)`` how many mentions of the person lie after the floor
        (none: absent or 0)."""
        ...


class PipelineHostPorts(
    HostPorts, PeoplePort, PlacesPort, DevicesPort, PresencePort, ReadStatePort, Protocol
):
    """All host facts the pipeline on PostgreSQL reads, in one object."""
