"""The contract of `Schedule` (windows, due work, badge syncs), on both twins.

The memory twin is `notify_core.hints.memory.schedule.MemorySchedule`; the PostgreSQL twin is
`notify_pg.push.schedule.PgSchedule` on ``windows``, ``delayed_releases`` and ``badge_syncs``.
Neither learns from the log: the pipeline alone writes them, so each test drives the port as
`notify_core.hints.pipeline.Pipeline` does (a flush closes its window, a badge sync records
itself done). ``hints_twin.schedule()`` is the schedule of the next round: on PostgreSQL a new
transaction's view after the previous one's writes, so each answer is checked within a round
and across rounds.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from hint_twins import Twin
from pgpipeline import START

from notify_core.hints.ports import Due, Schedule, Window
from notify_core.values.kinds import Kind

END = START + timedelta(seconds=60)


def release(at: datetime, recipient: str, **fields: object) -> Due:
    """A delayed push (D5, D9) with every field a release carries."""
    values: dict[str, object] = {
        "thread": "t",
        "device": "d-phone",
        "kind": Kind.MESSAGE,
        "message": "m1",
        "message_seq": 1,
        "seq": 7,
        **fields,
    }
    return Due(at=at, recipient=recipient, what="release", **values)  # type: ignore[arg-type]


def sync(at: datetime, recipient: str) -> Due:
    return Due(at=at, recipient=recipient, what="badge_sync", kind=Kind.SYNC)


def run_due(schedule: Schedule, until: datetime) -> list[Due]:
    """Take every piece of due work up to ``until`` as the pipeline does: a flush closes its
    window and is kept only when the window collected (D8: nothing collected, no hint); a
    badge sync records itself done."""
    done: list[Due] = []
    while (due := schedule.pop_due(until)) is not None:
        if due.what == "flush":
            window = schedule.window(due.recipient, due.thread)
            schedule.close_window(due.recipient, due.thread)
            if window is not None and window.collected:
                done.append(due)
        else:
            if due.what == "badge_sync":
                schedule.set_badge_sync(due.recipient, due.at, False)
            done.append(due)
    return done


# --- windows (D6) -------------------------------------------------------------------------


def test_d6_a_window_opens_collects_and_closes_per_person_and_thread(hints_twin: Twin) -> None:
    """D6: no window until one opens; it counts the messages collected; another person's or
    thread's window is its own; a closed window is gone; within a round and in the next."""
    schedule = hints_twin.schedule()
    assert schedule.window("alex", "t") is None
    schedule.open_window("alex", "t", END)
    schedule.open_window("sam", "t", END + timedelta(seconds=5))
    schedule.collect("alex", "t")
    schedule.collect("alex", "t")
    assert schedule.window("alex", "t") == Window(end=END, collected=2)
    assert schedule.window("alex", "t2") is None
    next_round = hints_twin.schedule()
    assert next_round.window("alex", "t") == Window(end=END, collected=2)
    assert next_round.window("sam", "t") == Window(end=END + timedelta(seconds=5))
    next_round.collect("sam", "t")
    next_round.close_window("alex", "t")
    assert next_round.window("alex", "t") is None
    last = hints_twin.schedule()
    assert last.window("alex", "t") is None
    assert last.window("sam", "t") == Window(end=END + timedelta(seconds=5), collected=1)


def test_d8_a_window_that_collected_is_flushed_at_its_end_exactly(hints_twin: Twin) -> None:
    """D8: the flush of a window that collected comes due at the window's end, not before;
    it is handed out once."""
    schedule = hints_twin.schedule()
    schedule.open_window("alex", "t", END)
    schedule.collect("alex", "t")
    assert hints_twin.schedule().pop_due(END - timedelta(microseconds=1)) is None
    schedule = hints_twin.schedule()
    assert run_due(schedule, END) == [Due(at=END, recipient="alex", thread="t", what="flush")]
    assert schedule.window("alex", "t") is None
    assert run_due(hints_twin.schedule(), END + timedelta(hours=1)) == []


def test_d8_a_window_that_collected_nothing_ends_without_a_flush(hints_twin: Twin) -> None:
    """D8, D10: a window without collected messages gives no flush to carry out, and is gone
    once its end has passed (a twin may hand out its empty flush or close it itself)."""
    schedule = hints_twin.schedule()
    schedule.open_window("alex", "t", END)
    assert schedule.next_due() == END  # its end is pending work
    schedule = hints_twin.schedule()
    assert run_due(schedule, END) == []
    assert schedule.window("alex", "t") is None
    later = hints_twin.schedule()
    assert later.window("alex", "t") is None
    assert later.next_due() is None


def test_d6_a_window_opened_again_after_its_flush_starts_empty(hints_twin: Twin) -> None:
    schedule = hints_twin.schedule()
    schedule.open_window("alex", "t", END)
    schedule.collect("alex", "t")
    schedule = hints_twin.schedule()
    assert [d.what for d in run_due(schedule, END)] == ["flush"]
    schedule.open_window("alex", "t", END + timedelta(seconds=60))
    assert schedule.window("alex", "t") == Window(end=END + timedelta(seconds=60))
    assert hints_twin.schedule().window("alex", "t") == Window(end=END + timedelta(seconds=60))


# --- due work in order --------------------------------------------------------------------


def test_due_work_comes_in_due_order(hints_twin: Twin) -> None:
    """`Due` order: due time, then recipient, thread, device and what (a flush, whose device
    is empty, before a release of the same person, thread and time); each piece once, with
    every field it was scheduled with."""
    schedule = hints_twin.schedule()
    schedule.open_window("sam", "t", END)
    schedule.collect("sam", "t")
    schedule.open_window("alex", "t2", END)
    schedule.collect("alex", "t2")
    schedule.schedule(release(END, "sam", target="m-target"))
    schedule.schedule(release(END, "alex", thread="t3", kind=Kind.MENTION, message_seq=4))
    schedule.schedule(release(END - timedelta(seconds=1), "sam", device="d-a"))
    schedule.schedule(release(END, "alex", thread="t2", device="d-b"))
    assert run_due(hints_twin.schedule(), END) == [
        release(END - timedelta(seconds=1), "sam", device="d-a"),
        Due(at=END, recipient="alex", thread="t2", what="flush"),
        release(END, "alex", thread="t2", device="d-b"),
        release(END, "alex", thread="t3", kind=Kind.MENTION, message_seq=4),
        Due(at=END, recipient="sam", thread="t", what="flush"),
        release(END, "sam", target="m-target"),
    ]


def test_equal_keys_keep_their_scheduling_order(hints_twin: Twin) -> None:
    schedule = hints_twin.schedule()
    for message in ("m2", "m1", "m3"):
        schedule.schedule(release(END, "alex", message=message))
    assert [d.message for d in run_due(hints_twin.schedule(), END)] == ["m2", "m1", "m3"]


def test_pop_due_takes_only_work_due_by_then_and_next_due_the_first_pending(
    hints_twin: Twin,
) -> None:
    """``pop_due(until)`` hands out work due at or before ``until`` only; ``next_due`` is the
    first pending time (a window's end included), ``None`` when nothing is pending."""
    schedule = hints_twin.schedule()
    assert schedule.next_due() is None
    assert schedule.pop_due(END) is None
    schedule.schedule(release(END + timedelta(seconds=30), "alex"))
    schedule.open_window("sam", "t", END + timedelta(seconds=10))
    assert hints_twin.schedule().next_due() == END + timedelta(seconds=10)
    schedule = hints_twin.schedule()
    assert run_due(schedule, END) == []
    assert run_due(schedule, END + timedelta(seconds=10)) == []  # the empty window ends
    assert schedule.next_due() == END + timedelta(seconds=30)
    assert run_due(hints_twin.schedule(), END + timedelta(seconds=30)) == [
        release(END + timedelta(seconds=30), "alex")
    ]
    assert hints_twin.schedule().next_due() is None


def test_work_scheduled_while_running_due_work_comes_in_its_place(hints_twin: Twin) -> None:
    """Work that running due work schedules at or before ``until`` is handed out in `Due`
    order among what is left (a flush's send opening the next window, a release scheduled
    before a later one)."""
    schedule = hints_twin.schedule()
    schedule.schedule(release(END, "alex"))
    schedule.schedule(release(END + timedelta(seconds=20), "alex", message="late"))
    schedule = hints_twin.schedule()
    first = schedule.pop_due(END + timedelta(seconds=20))
    assert first == release(END, "alex")
    schedule.schedule(release(END + timedelta(seconds=10), "alex", message="new"))
    rest = run_due(schedule, END + timedelta(seconds=20))
    assert [d.message for d in rest] == ["new", "late"]


# --- badge syncs (B2) ---------------------------------------------------------------------


def test_b2_a_badge_sync_is_pending_until_carried_out(hints_twin: Twin) -> None:
    """B2: no sync before the first; a read that lowers the badge marks one pending and
    schedules it; at its time it is handed out once, and carrying it out records the last
    sync and clears the pending flag."""
    schedule = hints_twin.schedule()
    assert schedule.badge_sync("alex") == (None, False)
    schedule.set_badge_sync("alex", None, True)
    schedule.schedule(sync(END, "alex"))
    assert schedule.badge_sync("alex") == (None, True)
    assert hints_twin.schedule().next_due() == END
    schedule = hints_twin.schedule()
    assert schedule.pop_due(END - timedelta(seconds=1)) is None
    assert run_due(schedule, END) == [sync(END, "alex")]
    assert schedule.badge_sync("alex") == (END, False)
    later = hints_twin.schedule()
    assert later.badge_sync("alex") == (END, False)
    assert later.next_due() is None
    assert later.badge_sync("sam") == (None, False)


def test_b2_the_next_sync_keeps_the_last_ones_time_while_pending(hints_twin: Twin) -> None:
    """B2: a new pending sync after one carried out keeps the last sync's time (the interval
    is counted from it) and comes due when scheduled."""
    schedule = hints_twin.schedule()
    schedule.set_badge_sync("alex", START, False)
    schedule.set_badge_sync("alex", START, True)
    schedule.schedule(sync(START + timedelta(seconds=120), "alex"))
    later = hints_twin.schedule()
    assert later.badge_sync("alex") == (START, True)
    assert later.next_due() == START + timedelta(seconds=120)
    assert run_due(later, END + timedelta(hours=1)) == [
        sync(START + timedelta(seconds=120), "alex")
    ]
    assert hints_twin.schedule().badge_sync("alex") == (START + timedelta(seconds=120), False)
