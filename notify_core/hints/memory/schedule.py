"""`MemorySchedule`: the in-memory twin of `notify_core.hints.ports.Schedule`.

Bundling windows, due work (window flushes, delayed pushes, badge syncs) and each person's
last badge sync, on a heap and two dictionaries. It learns nothing from the event log: the
pipeline alone writes it.

A window's flush goes on the heap only when the window collects its first message: most
windows collect nothing, and their flush would only close them. Those are closed instead by
`pop_due` once the clock reaches their end, from a queue in order of end (windows open for
a fixed interval from a clock that never goes back: appended, they are in order already).
"""

from __future__ import annotations

import bisect
import heapq
from collections import deque
from datetime import datetime

import attrs

from notify_core.hints.ports import Due, Window
from notify_core.hints.slots import positional
from notify_core.values.kinds import Kind

# Built once per window opened or message collected: through their slots (`positional`); by
# keyword, a replay runs 0.85 % more instructions.
_new_window = positional(Window)
_new_due = positional(Due)

__all__ = ["MemorySchedule"]


def _end(item: tuple[datetime, tuple[str, str], Window]) -> datetime:
    return item[0]


@attrs.define
class MemorySchedule:
    """Windows and due work of one replay, in memory (`notify_core.hints.ports.Schedule`).

    Args:
        windows: the open windows, by (person, thread).
        queue: the due work as a heap of its `Due` order keys (see `schedule`).
        queued: how many pieces of work were ever scheduled (the tie-breaker of equal keys).
        syncs: per person, the last badge sync and whether one is pending.
    """

    windows: dict[tuple[str, str], Window] = attrs.field(factory=dict)
    queue: list[tuple[datetime, str, str, str, str, int, Due]] = attrs.field(factory=list)
    queued: int = 0
    syncs: dict[str, tuple[datetime | None, bool]] = attrs.field(factory=dict)
    #: The windows opened, as (end, key, window), in order of end: `pop_due` closes those
    #: that end by its clock and are still as opened (nothing collected, no flush queued).
    _opened: deque[tuple[datetime, tuple[str, str], Window]] = attrs.field(
        factory=deque, init=False, repr=False, eq=False
    )

    def window(self, user: str, thread: str) -> Window | None:
        """Return a person's window on a thread."""
        return self.windows.get((user, thread))

    def open_window(self, user: str, thread: str, end: datetime) -> None:
        """Open a window; its flush comes due at ``end`` (queued with its first message)."""
        key = (user, thread)
        window = self.windows[key] = _new_window(end, 0)
        opened = self._opened
        if opened and end < opened[-1][0]:  # a clock that went back: not a replay's
            bisect.insort_right(opened, (end, key, window), key=_end)
        else:
            opened.append((end, key, window))

    def collect(self, user: str, thread: str) -> None:
        """Count one more collected message; the first schedules the window's flush."""
        key = (user, thread)
        window = self.windows[key]
        end, collected = window.end, window.collected
        self.windows[key] = _new_window(end, collected + 1)
        if not collected:
            # Due(at=end, recipient=user, thread=thread, what="flush"), the other fields' defaults
            self.schedule(
                _new_due(end, user, thread, "", "flush", Kind.MESSAGE, None, 0, None, None)
            )

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
        """Take the first work due at or before ``until``.

        Windows that end by then with nothing collected close first: their flush would
        change nothing else, and no work before it reads them (a delayed push's decision
        does not read windows).
        """
        opened = self._opened
        if opened and opened[0][0] <= until:
            windows = self.windows
            while opened and opened[0][0] <= until:
                _end_at, key, window = opened.popleft()
                if windows.get(key) is window:
                    del windows[key]
        if self.queue and self.queue[0][0] <= until:
            return heapq.heappop(self.queue)[-1]
        return None

    def next_due(self) -> datetime | None:
        """Return when the first pending work comes due (the end of an open window too)."""
        first = self.queue[0][0] if self.queue else None
        if self._opened:
            end = self._opened[0][0]
            if first is None or end < first:
                return end
        return first

    def badge_sync(self, user: str) -> tuple[datetime | None, bool]:
        """Return the last badge sync of a person and whether one is pending."""
        return self.syncs.get(user, (None, False))

    def set_badge_sync(self, user: str, last: datetime | None, pending: bool) -> None:
        """Record a person's last badge sync and whether one is pending."""
        self.syncs[user] = (last, pending)
