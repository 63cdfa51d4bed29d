"""notify_reference_host: a small demo host for tests, the quickstarts and the demo page.

Not part of the adapter. A host embedding notify keeps its own users, spaces, channels,
threads, rights and settings and implements `notify_pg.stores.ports.HostPorts` (and the inbox
and mail ports) on its own tables; this package is one such host, kept as small as the tests,
the quickstarts (``notify db migrate --reference-host``, ``notify db load``), the demo page
(``notify serve --demo``) and ``notify worker`` (unless ``--inbox-host`` names a host's own
ports) need. It has its own schema (default ``host``), its own numbered migrations
(`migrate_reference_host`) and its own queries.

It sits above `notify_pg` (``notify_cli -> notify_reference_host -> notify_pg -> notify_core``,
an import-linter contract): it may import the adapter and the core; the adapter never imports
it, and nothing in notify_pg reads these tables. The command line wires it in.

- `notify_reference_host` (this module): `ReferenceHost`, the chat ports on the host's tables,
  with the writes of `notify_reference_host.writes`;
- `notify_reference_host.wiki`: `ReferenceWiki`, the wiki's inbox, mail and admin ports;
- `notify_reference_host.world`, `notify_reference_host.wiki_load`: writing what a logged
  event changes in the host;
- `notify_reference_host.load`: `LogLoader`, loading an event log as a host would
  (``notify db load``, the parity tests).

Rights of the reference host: the owner flag reads every non-DM channel; a grant on a space
reads the space, its channels and their threads; a grant on a channel reads the channel and its
threads; a direct-message channel and its threads are read by its participants only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from notify_core.hints.decide import Connection, Device
from notify_core.hints.levels import Target, TargetKind
from notify_core.hints.ports import ChannelInfo, ThreadInfo, UserInfo
from notify_pg.db.migrate import migrate
from notify_pg.db.seam import Conn, Seam, text_array
from notify_pg.stores.ports import NotificationPath
from notify_reference_host.writes import HostWrites

__all__ = ["DEFAULT_HOST_SCHEMA", "ReferenceHost", "migrate_reference_host"]

#: The schema of the reference host unless another is named.
DEFAULT_HOST_SCHEMA = "host"


def migrate_reference_host(conn_or_dsn: Conn | str, schema: str = DEFAULT_HOST_SCHEMA) -> list[str]:
    """Create or update the reference host's tables in ``schema`` (see `notify_pg.db.migrate`)."""
    return migrate(conn_or_dsn, schema, package="notify_reference_host")


class ReferenceHost(HostWrites):
    """The ports of `notify_pg.stores.ports` on the reference host's tables, plus writes for tests
    (`HostWrites`).

    Args:
        schema: the reference host's schema.
    """

    def __init__(self, schema: str = DEFAULT_HOST_SCHEMA) -> None:
        self.schema = schema
        self._seam = Seam("notify_reference_host", schema)

    # -- ports -----------------------------------------------------------------------------

    def notification_path(
        self, conn: Conn, target: Target, *, lock: bool = False
    ) -> NotificationPath | None:
        """Return the path of a target; with ``lock``, FOR SHARE on thread, channel, space."""
        seam = self._seam
        if target.kind is TargetKind.THREAD and not lock:
            row = seam.one(conn, "thread_path", {"id": target.id})
            if row is None:
                return None
            channel_id, space_id, kind, default, archived = row
            return NotificationPath(
                kind=target.kind,
                space_id=space_id,
                channel_id=channel_id,
                thread_id=target.id,
                channel_kind=kind,
                channel_default=default,
                archived=archived,
            )
        thread_id = channel_id = space_id = channel_kind = default = None
        archived = False
        if target.kind is TargetKind.THREAD:
            row = seam.one(conn, "lock_thread", {"id": target.id})
            if row is None:
                return None
            thread_id, channel_id = target.id, row[0]
        elif target.kind is TargetKind.CHANNEL:
            channel_id = target.id
        if channel_id is not None:
            row = seam.one(conn, "lock_channel" if lock else "get_channel", {"id": channel_id})
            if row is None:
                return None
            space_id, channel_kind, default, archived = row
        else:
            space_id = target.id
        if space_id is not None:
            row = seam.one(conn, "lock_space" if lock else "get_space", {"id": space_id})
            if row is None:
                return None
            archived = archived or row[0]
        return NotificationPath(
            kind=target.kind,
            space_id=space_id,
            channel_id=channel_id,
            thread_id=thread_id,
            channel_kind=channel_kind,
            channel_default=default,
            archived=archived,
        )

    def channel_ids_of_space(self, conn: Conn, space_id: str) -> list[str]:
        """Return every channel of the space, archived ones included, ascending."""
        return [r[0] for r in self._seam.all(conn, "channel_ids_of_space", {"space_id": space_id})]

    def thread_ids_of_channels(self, conn: Conn, channel_ids: Sequence[str]) -> list[str]:
        """Return every thread of the channels, ascending."""
        rows = self._seam.all(conn, "thread_ids_of_channels", {"channel_ids": list(channel_ids)})
        return [r[0] for r in rows]

    def readable(self, conn: Conn, user_id: str, targets: Sequence[Target]) -> frozenset[Target]:
        """Return the targets the person may read, answered in one query."""
        if not targets:
            return frozenset()
        rows = self._seam.all(
            conn,
            "readable_targets",
            {
                "user_id": user_id,
                "kinds": [t.kind.value for t in targets],
                "ids": [t.id for t in targets],
            },
        )
        return frozenset(Target(kind=kind, id=target_id) for kind, target_id in rows)

    def time_zones(self, conn: Conn, user_ids: Sequence[str]) -> dict[str, str]:
        """Return the stored zone of each person who has one."""
        rows = self._seam.all(conn, "time_zones", {"user_ids": list(user_ids)})
        return {user_id: zone for user_id, zone in rows}

    def settings(
        self, conn: Conn, user_ids: Sequence[str], keys: Sequence[str]
    ) -> dict[str, dict[str, object]]:
        """Return the stored values of ``keys`` per person."""
        rows = self._seam.all(conn, "settings", {"user_ids": list(user_ids), "keys": list(keys)})
        out: dict[str, dict[str, object]] = {}
        for user_id, key, value in rows:
            out.setdefault(user_id, {})[key] = value
        return out

    # -- pipeline ports (notify_pg.stores.ports.PipelineHostPorts) ----------------------------

    def users(self, conn: Conn, user_ids: Sequence[str]) -> dict[str, UserInfo]:
        """Return the known people among ``user_ids``."""
        rows = self._seam.all(conn, "users_info", {"ids": list(user_ids)})
        return {
            user_id: UserInfo(id=user_id, kind=kind, active=active, time_zone=zone)
            for user_id, kind, active, zone in rows
        }

    def threads(self, conn: Conn, thread_ids: Sequence[str]) -> dict[str, ThreadInfo]:
        """Return the known threads among ``thread_ids`` with their positions."""
        rows = self._seam.all(conn, "threads_info", {"ids": list(thread_ids)})
        return {
            thread_id: ThreadInfo(
                id=thread_id,
                channel=channel_id,
                main=main,
                last_message_seq=last,
                unread_floor_seq=floor,
                newest_message=newest,
            )
            for thread_id, channel_id, main, last, floor, newest in rows
        }

    def channels(self, conn: Conn, channel_ids: Sequence[str]) -> dict[str, ChannelInfo]:
        """Return the known channels among ``channel_ids``."""
        rows = self._seam.all(conn, "channels_info", {"ids": list(channel_ids)})
        return {
            channel_id: ChannelInfo(
                id=channel_id,
                kind=kind,
                space=space_id,
                participants=tuple(participants),
                default_level=default,
                archived=archived,
            )
            for channel_id, kind, space_id, default, archived, participants in rows
        }

    def channel_readers(self, conn: Conn, channel_id: str) -> list[str]:
        """Return who can read a channel, ascending (DM participants, grantees, owners)."""
        return [r[0] for r in self._seam.all(conn, "channel_readers", {"channel": channel_id})]

    def thread_readers(self, conn: Conn, thread_id: str, user_ids: Sequence[str]) -> frozenset[str]:
        """Return the active people among ``user_ids`` who may read the thread now."""
        rows = self._seam.all(conn, "thread_readers", {"thread": thread_id, "ids": list(user_ids)})
        return frozenset(r[0] for r in rows)

    def badge_threads(self, conn: Conn, user_id: str) -> list[str]:
        """Return the threads with messages in the channels the person can read."""
        return [r[0] for r in self._seam.all(conn, "badge_threads", {"user_id": user_id})]

    def active_devices(self, conn: Conn, user_ids: Sequence[str]) -> dict[str, tuple[Device, ...]]:
        """Return each person's active devices ordered by id."""
        out: dict[str, list[Device]] = {}
        for user_id, device_id, platform in self._seam.all(
            conn, "active_devices", {"ids": list(user_ids)}
        ):
            out.setdefault(user_id, []).append(Device(id=device_id, platform=platform))
        return {user_id: tuple(devices) for user_id, devices in out.items()}

    def connections(self, conn: Conn, user_ids: Sequence[str]) -> dict[str, tuple[Connection, ...]]:
        """Return the live connections of each person's active devices."""
        out: dict[str, list[Connection]] = {}
        for user_id, device_id, focus, idle in self._seam.all(
            conn, "connections", {"ids": list(user_ids)}
        ):
            out.setdefault(user_id, []).append(
                Connection(device=device_id, focus=frozenset(focus), idle=idle)
            )
        return {user_id: tuple(conns) for user_id, conns in out.items()}

    def read_positions(self, conn: Conn, user_id: str, thread_ids: Sequence[str]) -> dict[str, int]:
        """Return the person's read position per thread (absent: never read)."""
        rows = self._seam.all(
            conn, "read_positions", {"user_id": user_id, "threads": list(thread_ids)}
        )
        return {thread_id: int(seq) for thread_id, seq in rows}

    def unread_mentions(
        self, conn: Conn, user_id: str, floors: Mapping[str, int]
    ) -> dict[str, int]:
        """Return per thread the mentions of the person after the floor position."""
        if not floors:
            return {}
        threads = list(floors)
        rows = self._seam.all(
            conn,
            "unread_mentions",
            {"user_id": user_id, "threads": threads, "floors": [floors[t] for t in threads]},
        )
        return {thread_id: int(count) for thread_id, count in rows}

    # -- the optional batched reads (notify_pg.stores.ports.BatchFactsPort) -------------------

    def badge_threads_of(self, conn: Conn, user_ids: Sequence[str]) -> dict[str, list[str]]:
        """Return per person the threads with messages in the channels they can read."""
        out: dict[str, list[str]] = {}
        if not user_ids:
            return out
        for user_id, thread_id in self._seam.all(
            conn, "badge_threads_of", {"user_ids": list(dict.fromkeys(user_ids))}
        ):
            out.setdefault(user_id, []).append(thread_id)
        return out

    def thread_readers_of(
        self, conn: Conn, pairs: Sequence[tuple[str, str]]
    ) -> frozenset[tuple[str, str]]:
        """Return the (person, thread) pairs where the active person may read the thread."""
        if not pairs:
            return frozenset()
        rows = self._seam.all(
            conn,
            "thread_readers_of",
            {"user_ids": [u for u, _t in pairs], "threads": [t for _u, t in pairs]},
        )
        return frozenset((user_id, thread_id) for user_id, thread_id in rows)

    def read_positions_of(
        self, conn: Conn, pairs: Sequence[tuple[str, str]]
    ) -> dict[tuple[str, str], int]:
        """Return the read position of each (person, thread) pair (absent: never read)."""
        if not pairs:
            return {}
        # Array literals built as strings (`text_array`): far cheaper to pass than JSON or
        # psycopg's lists of hundreds of pairs.
        params = {
            "user_ids": text_array([u for u, _t in pairs]),
            "threads": text_array([t for _u, t in pairs]),
        }
        rows = self._seam.all(conn, "read_positions_of", params)
        return {(user_id, thread_id): int(seq) for user_id, thread_id, seq in rows}

    def unread_mentions_of(
        self, conn: Conn, floors: Mapping[tuple[str, str], int]
    ) -> dict[tuple[str, str], int]:
        """Return per (person, thread) the mentions of the person after the floor."""
        if not floors:
            return {}
        params = {
            "user_ids": text_array([u for u, _t in floors]),
            "threads": text_array([t for _u, t in floors]),
            "floors": "{" + ",".join([str(int(n)) for n in floors.values()]) + "}",
        }
        rows = self._seam.all(conn, "unread_mentions_of", params)
        return {(user_id, thread_id): int(n) for user_id, thread_id, n in rows}
