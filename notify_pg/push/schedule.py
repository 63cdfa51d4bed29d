"""`PgSchedule`: `notify_core.hints.ports.Schedule` on the due-work tables.

``windows``, ``delayed_releases`` and ``badge_syncs`` are claimed with ``FOR UPDATE SKIP
LOCKED`` by due-work rounds and with ``FOR UPDATE`` (waiting) by the consumer, so due work at
or before an event always runs before it, as in a replay; the batch of one recipient partition
sees only its recipients' due work (``{schema}.partition_of``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from notify_core.hints.ports import Due, Window
from notify_core.replay.partitions import Partition, Partitions
from notify_core.values.kinds import Kind
from notify_pg.db.seam import Seam
from notify_pg.push.session import (
    DUE_PAGE,
    Session,
    as_utc,
)

__all__ = ["PgSchedule"]


class PgSchedule:
    """`notify_core.hints.ports.Schedule` on the due-work tables.

    Args:
        session: the transaction's session.
        schema: the library's schema.
        wait: claim due work that another worker holds by waiting for it (consumer rounds:
            due work at or before an event runs first); otherwise skip it (due-work rounds).
        budget: the most due work `pop_due` hands out in this transaction (then ``None``).
        owns: the recipient partition (or partitions) of a partitioned consumer round: `pop_due` and
            `next_due` see only the due work of its recipients (filtered in SQL with
            ``{schema}.partition_of``), because the other partitions' consumers may still be
            behind and their work must wait for them. ``None``: all due work.
    """

    def __init__(
        self,
        session: Session,
        schema: str,
        *,
        wait: bool = False,
        budget: int | None = None,
        owns: Partition | Partitions | None = None,
    ) -> None:
        self._s = session
        self._seam = Seam("notify_pg", schema)
        self._wait = wait
        self.budget = budget
        # The partition's parameters of the filtered queries; empty: no filter.
        self._part: dict[str, int | list[int]] = {}
        if isinstance(owns, Partition):
            self._part = {"part_set": [owns.index], "parts": owns.count}
        elif owns is not None:
            self._part = {"part_set": list(owns.indices), "parts": owns.count}
        self.popped = 0
        self._pending: dict[tuple[str, str], int] = {}
        self._closes: dict[tuple[str, str], None] = {}
        self._handed: list[int] = []
        #: The claimed page of due work not handed out yet, in replay order, with the release's
        #: id or the badge sync's ``after_seq``; valid for one ``until``.
        self._page: list[tuple[Due, int | None]] = []
        self._page_until: datetime | None = None
        #: Loads the facts of a claimed page at once (set by the worker: `PgWorld.prefetch_due`).
        self.prefetch: Callable[[Sequence[Due]], None] | None = None
        #: Nothing of the owned partitions is due before this instant but what this transaction
        #: scheduled since it was read (`_cut` lowers it); ``None``: not known.
        self._idle_before: datetime | None = None
        self._opens: dict[tuple[str, str], datetime] = {}

    # --- windows -----------------------------------------------------------------------------

    def window(self, user: str, thread: str) -> Window | None:
        """Return a person's window on a thread, for the whole batch at once."""
        s = self._s
        key = (user, thread)
        if key not in s.windows:
            # Only windows the session does not hold are read, and every window written in
            # this transaction is held (write-through): the pending writes can wait.
            people = [p for p in s.people(user) if (p, thread) not in s.windows]
            rows = self._seam.all(s.conn, "windows_of", {"thread": thread, "recipients": people})
            found = {r: Window(end=as_utc(end), collected=n) for r, end, n in rows}
            for person in people:
                s.windows[(person, thread)] = found.get(person)
        return s.windows[key]

    def open_window(self, user: str, thread: str, end: datetime) -> None:
        """Open a window; its row is its flush, due at ``end``.

        Written with the other windows of the event in one statement (`write_pending`).
        """
        key = (user, thread)
        self._pending.pop(key, None)
        self._opens[key] = end
        self._s.windows[key] = Window(end=end)
        self._cut(end)

    def collect(self, user: str, thread: str) -> None:
        """Count one more collected ``message`` in the open window.

        The count is written with the other collects of the event in one statement
        (`write_pending`), before anything reads windows from the table again.
        """
        key = (user, thread)
        window = self.window(user, thread)
        if window is None:
            return
        self._s.windows[key] = Window(end=window.end, collected=window.collected + 1)
        self._pending[key] = self._pending.get(key, 0) + 1

    def write_pending(self) -> None:
        """Write the windows closed and opened, the collects counted and the releases handed
        out since the last write (one statement each)."""
        conn = self._s.conn
        if self._handed:
            self._seam.run(conn, "delete_releases", {"ids": self._handed})
            self._handed = []
        if self._closes:
            keys = list(self._closes)
            self._seam.run(
                conn,
                "close_windows",
                {"recipients": [r for r, _t in keys], "threads": [t for _r, t in keys]},
            )
            self._closes.clear()
        if self._opens:
            keys = list(self._opens)
            self._seam.run(
                conn,
                "open_windows",
                {
                    "recipients": [r for r, _t in keys],
                    "threads": [t for _r, t in keys],
                    "ends": [self._opens[k] for k in keys],
                },
            )
            self._opens.clear()
        if self._pending:
            keys = list(self._pending)
            self._seam.run(
                conn,
                "collect_windows",
                {
                    "recipients": [r for r, _t in keys],
                    "threads": [t for _r, t in keys],
                    "counts": [self._pending[k] for k in keys],
                },
            )
            self._pending.clear()

    def close_window(self, user: str, thread: str) -> None:
        """Forget a window (at its flush); deleted with the other closes (`write_pending`)."""
        key = (user, thread)
        self._pending.pop(key, None)
        self._opens.pop(key, None)
        self._closes[key] = None
        self._s.windows[key] = None

    # --- due work ----------------------------------------------------------------------------

    def schedule(self, due: Due) -> None:
        """Schedule a delayed release or the due time of a pending badge sync."""
        self._cut(due.at)
        if due.what == "release":
            self._seam.run(
                self._s.conn,
                "insert_release",
                {
                    "due_at": due.at,
                    "recipient": due.recipient,
                    "thread": due.thread,
                    "device": due.device,
                    "kind": due.kind.value,
                    "message": due.message,
                    "message_seq": due.message_seq,
                    "target": due.target,
                    "seq": due.seq,
                },
            )
        elif due.what == "badge_sync":
            params = {"recipient": due.recipient, "due_at": due.at}
            self._seam.run(self._s.conn, "schedule_badge_sync", params)
        else:
            raise ValueError(f"cannot schedule {due.what!r} work (windows schedule their flush)")

    def pop_due(self, until: datetime) -> Due | None:
        """Claim the first due work at or before ``until`` in replay order (of the owned
        partition only); ``None`` when none is due (or this transaction's budget is spent).

        Due work is claimed a page at a time (one statement per kind of work) and the facts of
        the whole page are loaded at once (`prefetch`); it is handed out one by one. Work that
        running the page schedules at or before ``until`` cuts the page where it would come
        (`_cut`): the rest is claimed again, after it.
        """
        if self.budget is not None and self.popped >= self.budget:
            return None
        if self._idle_before is not None and until < self._idle_before:
            return None
        if self._page_until != until:
            self._page.clear()
        if not self._page:
            # The page's writes go first: the next page is read from the tables.
            self.write_pending()
            if not self._fill(until):
                # Nothing due: nothing will be before the first pending work, but what this
                # round schedules (work that other workers' due rounds schedule for these
                # recipients comes from pending work, so no sooner than it).
                self._idle_before = self._first_pending()
            if not self._page:
                self._s.refresh()  # what follows (the event) reads its own facts
                return None
        due, extra = self._page.pop(0)
        self.popped += 1
        if due.what == "release":
            assert extra is not None
            self._handed.append(extra)
        elif due.what == "badge_sync":
            self._s.synced[due.recipient] = extra
        return due

    def _first_pending(self) -> datetime:
        """When the first pending work of the owned partitions comes due (far away: none)."""
        return self.next_due() or datetime.max.replace(tzinfo=UTC)

    def _cut(self, at: datetime) -> None:
        """New due work at ``at``: the claimed work from ``at`` on must wait for it."""
        if self._idle_before is not None and at < self._idle_before:
            self._idle_before = at
        if self._page and self._page[-1][0].at >= at:
            self._page = [item for item in self._page if item[0].at < at]

    def _fill(self, until: datetime) -> bool:
        """Claim the next page of due work (see `pop_due`); False when nothing is due."""
        conn, mode = self._s.conn, "wait" if self._wait else "skip"
        query = "due_candidates_part" if self._part else "due_candidates"
        limit = DUE_PAGE
        if self.budget is not None:
            limit = min(limit, self.budget - self.popped)
        params = {"until": until, "limit": limit, **self._part}
        while True:
            rows = self._seam.all(conn, query, params)
            if not rows:
                return False
            # The facts of the page are read anew (host facts may have changed meanwhile; a
            # consumer round keeps them for the round, `Session.at`).
            self._s.refresh()
            page = self._claim_page(mode, until, rows)
            if mode == "wait" and len(page) < len(rows):
                continue  # some went while we waited for them: look again from the start
            # Skip mode: a page held by other workers leaves nothing; the next round retries.
            self._page, self._page_until = page, until
            if page and self.prefetch is not None:
                self.prefetch([due for due, _extra in page])
            return True

    def _claim_page(
        self, mode: str, until: datetime, rows: Sequence[tuple[Any, ...]]
    ) -> list[tuple[Due, int | None]]:
        """Claim the candidates (one statement per kind); return those claimed, in order."""
        conn = self._s.conn
        flushes = [(r[1], r[2]) for r in rows if r[4] == "flush"]
        releases = [int(r[5]) for r in rows if r[4] == "release"]
        syncs = [r[1] for r in rows if r[4] == "badge_sync"]
        windows: dict[tuple[str, str], Window] = {}
        if flushes:
            found = self._seam.all(
                conn,
                f"claim_windows_{mode}",
                {
                    "recipients": [r for r, _t in flushes],
                    "threads": [t for _r, t in flushes],
                    "until": until,
                },
            )
            windows = {(r, t): Window(end=as_utc(end), collected=n) for r, t, end, n in found}
        claimed_releases: dict[int, Due] = {}
        if releases:
            found = self._seam.all(
                conn, f"claim_releases_{mode}", {"ids": releases, "until": until}
            )
            for ident, due_at, recipient, thread, device, kind, message, mseq, target, seq in found:
                claimed_releases[int(ident)] = Due(
                    at=as_utc(due_at),
                    recipient=recipient,
                    thread=thread,
                    device=device,
                    what="release",
                    kind=Kind(kind),
                    message=message,
                    message_seq=mseq,
                    target=target,
                    seq=seq,
                )
        claimed_syncs: dict[str, tuple[datetime, int | None]] = {}
        if syncs:
            found = self._seam.all(
                conn, f"claim_badge_syncs_{mode}", {"recipients": syncs, "until": until}
            )
            claimed_syncs = {r: (as_utc(at), after) for r, at, after in found}
        page: list[tuple[Due, int | None]] = []
        for _at, recipient, thread, _device, what, ident in rows:
            if what == "flush":
                window = windows.get((recipient, thread))
                if window is not None:
                    # The flush reads the window it claimed (`Pipeline._flush`).
                    self._s.windows[(recipient, thread)] = window
                    page.append(
                        (Due(at=window.end, recipient=recipient, thread=thread, what="flush"), None)
                    )
            elif what == "release":
                release = claimed_releases.get(int(ident))
                if release is not None:
                    page.append((release, int(ident)))
            else:
                sync = claimed_syncs.get(recipient)
                if sync is not None:
                    due = Due(at=sync[0], recipient=recipient, what="badge_sync", kind=Kind.SYNC)
                    page.append((due, sync[1]))
        return page

    def next_due(self) -> datetime | None:
        """Return when the first pending work (of the owned partition) comes due."""
        self.write_pending()
        if self._part:
            row = self._seam.one(self._s.conn, "next_due_part", self._part)
        else:
            row = self._seam.one(self._s.conn, "next_due")
        return None if row is None or row[0] is None else as_utc(row[0])

    def badge_sync(self, user: str) -> tuple[datetime | None, bool]:
        """Return a person's last badge sync and whether one is pending."""
        row = self._seam.one(self._s.conn, "get_badge_sync", {"recipient": user})
        if row is None:
            return None, False
        last, pending = row
        return (None if last is None else as_utc(last)), bool(pending)

    def set_badge_sync(self, user: str, last: datetime | None, pending: bool) -> None:
        """Record a person's last badge sync and whether one is pending.

        A new pending sync remembers the log position before the event that asked for it:
        the threads read after it are its cleared list.
        """
        position = self._s.position
        after = position - 1 if position is not None else None
        self._seam.run(
            self._s.conn,
            "set_badge_sync",
            {"recipient": user, "last_sync_at": last, "pending": pending, "after_seq": after},
        )
