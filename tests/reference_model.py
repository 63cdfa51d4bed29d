"""An independent reference of the badge rules B1-B3 and D2's read right, for tests.

Written from the spec alone: it imports nothing of ``notify_core`` and keeps its own world from
the events of a log (formats.md section 2), so a test can hold the replay and the PostgreSQL
pipeline to it (tests/core/hints/test_badge_reference.py, tests/pg/push/test_send_rights_pg.py).
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from typing import Any

LEVELS = ("all", "mentions", "mute")


def instant(text: object) -> datetime:
    """An RFC 3339 instant of a log line."""
    return datetime.fromisoformat(str(text).replace("Z", "+00:00"))


class Reference:
    """The badge rules, B1-B3 (with L3-L5 and S5 for the level, D2 for the read right).

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
        self.uncounted: dict[str, list[int]] = defaultdict(list)
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
        """D8's count: how far the thread's newest position lies past the read position, less
        the run anchors and system messages in between (B1a)."""
        at = self.read[(user, thread)] if position is None else position
        newest = self.newest[thread]
        # B1a: the run anchors and system messages in between are not counted.
        skipped = sum(1 for seq in self.uncounted[thread] if at < seq <= newest)
        return max(0, newest - at - skipped)

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
                self.rows[key] = (level, None if until is None else instant(until))
        elif kind == "settings.updated" and p["key"] == "notify.default_level":
            if p.get("deleted") or "value" not in p:
                self.personal.pop(audience, None)
            else:
                self.personal[audience] = p["value"]
        elif kind == "message.created":
            thread, seq, author = p["thread"], p["thread_seq"], p["author"]
            self.message_seq[p["message"]] = seq
            if p["kind"] in ("run", "system"):  # B1a
                self.uncounted[thread].append(seq)
            else:
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
