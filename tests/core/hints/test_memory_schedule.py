"""`MemorySchedule` against a plain schedule that queues every window's flush when it opens.

`MemorySchedule` queues a window's flush only with its first collected message and closes the
windows that collect nothing from a queue in order of end; driven as `Pipeline` drives it (due
work first, a flush closing its window), it must hand out the same work in the same order and
answer the same windows.
"""

from __future__ import annotations

import heapq
from datetime import UTC, datetime, timedelta

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st

from notify_core.hints.memory import MemorySchedule
from notify_core.hints.ports import Due, Window
from notify_core.values.kinds import Kind

_START = datetime(2026, 1, 1, tzinfo=UTC)
_WINDOW = timedelta(seconds=30)


@attrs.define
class _PlainSchedule:
    """The schedule before the lazy flushes: every window's flush on the heap at its opening."""

    windows: dict[tuple[str, str], Window] = attrs.field(factory=dict)
    queue: list[tuple[datetime, str, str, str, str, int, Due]] = attrs.field(factory=list)
    queued: int = 0

    def window(self, user: str, thread: str) -> Window | None:
        return self.windows.get((user, thread))

    def open_window(self, user: str, thread: str, end: datetime) -> None:
        self.windows[(user, thread)] = Window(end=end)
        self.schedule(Due(at=end, recipient=user, thread=thread, what="flush"))

    def collect(self, user: str, thread: str) -> None:
        window = self.windows[(user, thread)]
        self.windows[(user, thread)] = Window(end=window.end, collected=window.collected + 1)

    def close_window(self, user: str, thread: str) -> None:
        self.windows.pop((user, thread), None)

    def schedule(self, due: Due) -> None:
        self.queued += 1
        key = (due.at, due.recipient, due.thread, due.device, due.what, self.queued, due)
        heapq.heappush(self.queue, key)

    def pop_due(self, until: datetime) -> Due | None:
        if self.queue and self.queue[0][0] <= until:
            return heapq.heappop(self.queue)[-1]
        return None

    def next_due(self) -> datetime | None:
        return self.queue[0][0] if self.queue else None


_Schedule = MemorySchedule | _PlainSchedule
_USERS = st.sampled_from(["a", "b", "c"])
_THREADS = st.sampled_from(["t1", "t2"])
_STEPS = st.lists(
    st.tuples(
        # The clock's step in seconds: mostly forward, sometimes back (not in a replay).
        st.integers(-40, 60) | st.just(0),
        st.sampled_from(["open", "collect", "release", "look"]),
        _USERS,
        _THREADS,
        st.integers(0, 90),
    ),
    max_size=60,
)


def _advance(schedule: _Schedule, until: datetime, seen: list[object]) -> None:
    """Run due work as `Pipeline.advance` does; note what a hint would be made of."""
    while (due := schedule.pop_due(until)) is not None:
        if due.what == "flush":
            window = schedule.window(due.recipient, due.thread)
            schedule.close_window(due.recipient, due.thread)
            if window is None or window.collected == 0:
                continue  # no hint (D8, D10)
            seen.append(("flush", due.at, due.recipient, due.thread, window))
        else:
            seen.append((due.what, due.at, due.recipient, due.thread, due.device))


def _drive(schedule: _Schedule, steps: list[tuple[int, str, str, str, int]]) -> list[object]:
    seen: list[object] = []
    now = _START
    for step, op, user, thread, later in steps:
        now += timedelta(seconds=step)
        _advance(schedule, now, seen)
        window = schedule.window(user, thread)
        live = window is not None and window.end > now
        seen.append(("window", now, user, thread, window))
        if op == "open" and not live:
            schedule.open_window(user, thread, now + _WINDOW)
        elif op == "collect" and live:
            schedule.collect(user, thread)
        elif op == "release":
            due_at = now + timedelta(seconds=later)
            due = Due(at=due_at, recipient=user, thread=thread, device="d", what="release")
            schedule.schedule(attrs.evolve(due, kind=Kind.MESSAGE))
    while (at := schedule.next_due()) is not None:
        seen.append(("next", at))
        _advance(schedule, at, seen)
    assert not schedule.windows  # every window closed by the end
    return seen


@settings(max_examples=300, deadline=None)
@given(_STEPS)
def test_the_lazy_flushes_hand_out_the_plain_schedules_work(
    steps: list[tuple[int, str, str, str, int]],
) -> None:
    lazy = _drive(MemorySchedule(), steps)
    plain = _drive(_PlainSchedule(), steps)
    assert lazy == plain


def test_a_window_that_collects_nothing_is_closed_without_queued_work() -> None:
    schedule = MemorySchedule()
    schedule.open_window("a", "t1", _START + _WINDOW)
    schedule.open_window("b", "t1", _START + _WINDOW)
    schedule.collect("b", "t1")
    schedule.collect("b", "t1")
    # Only the window that collected queues its flush, once.
    assert [key[-1].recipient for key in schedule.queue] == ["b"]
    assert schedule.next_due() == _START + _WINDOW
    assert schedule.pop_due(_START) is None and len(schedule.windows) == 2
    due = schedule.pop_due(_START + _WINDOW)
    assert due is not None and (due.what, due.recipient, due.thread) == ("flush", "b", "t1")
    assert schedule.windows == {("b", "t1"): Window(end=_START + _WINDOW, collected=2)}
