"""The badge number and the badge sync (rules B1, B2)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies_delivery import badge_threads, durations, instants, seqs, thread_badge_facts

from notify_core.hints.badge import (
    ThreadBadgeFacts,
    badge_count,
    badge_sync_due,
    counts_for_badge,
    counts_values,
    read_lowers_badge,
)
from notify_core.hints.levels import Level, LevelFacts
from notify_core.hints.pipeline_badge import counted_threads
from notify_core.hints.ports import ChannelInfo, ThreadInfo
from notify_core.values.errors import InvalidFacts, InvalidInput, InvalidLevel, NaiveDatetime

NOW = datetime(2026, 10, 23, 12, tzinfo=UTC)
S = timedelta(seconds=1)


def thread(**changes: object) -> ThreadBadgeFacts:
    """An unread, readable thread with level mentions and no mention: does not count."""
    base: dict[str, object] = {
        "thread": "t-1",
        "level": "mentions",
        "last_message_seq": 10,
        "read_seq": 4,
    }
    return ThreadBadgeFacts(**{**base, **changes})  # type: ignore[arg-type]


class TestCountsForBadge:
    """B1: the rows of TestBadgeCount of seed 001 that the pure core decides."""

    @pytest.mark.parametrize(
        ("changes", "counts"),
        [
            pytest.param({"unread_mentions": 1}, True, id="unread mention with level mentions"),
            pytest.param({"level": "all"}, True, id="unread thread with level all"),
            pytest.param({}, False, id="unread, level mentions, no mention"),
            pytest.param({"dm": True}, True, id="unread DM thread"),
            pytest.param({"dm": True, "level": "mute"}, True, id="unread DM thread, muted"),
            pytest.param({"unread_mentions": 2, "level": "mute"}, True, id="muted, mentioned"),
            pytest.param({"level": "mute"}, False, id="muted, no mention, not DM"),
            pytest.param({"level": "all", "read_seq": 10}, False, id="read thread"),
            pytest.param(
                {"level": "all", "read_seq": 0, "unread_floor_seq": 10},
                False,
                id="messages below the unread floor",
            ),
            pytest.param(
                {"level": "all", "unread_floor_seq": 9}, True, id="one message above the floor"
            ),
            pytest.param(
                {"readable": False, "unread_mentions": 3, "level": "all", "dm": True},
                False,
                id="a thread the person cannot read",
            ),
            pytest.param(
                {"read_seq": 10, "unread_mentions": 5}, False, id="read thread, stale mentions"
            ),
        ],
    )
    def test_b1_rows(self, changes: dict[str, object], counts: bool) -> None:
        """B1: readable, unread, and (mention or level all or DM)."""
        assert counts_for_badge(thread(**changes)) is counts

    def test_b1_losing_read_right_stops_counting(self) -> None:
        """B1: after the right to read is removed a counted thread stops counting."""
        t = thread(level="all")
        assert counts_for_badge(t)
        assert not counts_for_badge(attrs.evolve(t, readable=False))

    @given(thread_badge_facts())
    def test_b1_not_unread_never_counts_whatever_the_mentions(self, t: ThreadBadgeFacts) -> None:
        """B1: a thread that is not unread never counts, whatever its mention count says."""
        if t.last_message_seq <= max(t.read_seq, t.unread_floor_seq):
            assert not counts_for_badge(t)

    @given(thread_badge_facts())
    def test_b1_is_the_formula(self, t: ThreadBadgeFacts) -> None:
        """B1: the rule, written out."""
        unread = t.last_message_seq > max(t.read_seq, t.unread_floor_seq)
        expected = t.readable and unread and (t.unread_mentions > 0 or t.level == Level.ALL or t.dm)
        assert counts_for_badge(t) == expected


class TestBadgeCount:
    """B1: the badge counts the threads that count."""

    def test_b1_counts_each_counted_thread_once(self) -> None:
        """B1: three threads count, two do not."""
        threads = [
            thread(thread="t-1", unread_mentions=1),
            thread(thread="t-2", level="all"),
            thread(thread="t-3", dm=True),
            thread(thread="t-4"),
            thread(thread="t-5", level="all", read_seq=10),
        ]
        assert badge_count(threads) == 3

    def test_b1_no_threads(self) -> None:
        """B1: nothing unread gives badge 0."""
        assert badge_count([]) == 0

    def test_b1_accepts_any_iterable(self) -> None:
        """B1: a generator works too."""
        assert badge_count(thread(thread=f"t-{i}", level="all") for i in range(4)) == 4

    def test_b1_duplicate_thread_is_refused(self) -> None:
        """B1: a thread counts at most once; a second row for it is an error."""
        with pytest.raises(InvalidFacts) as exc:
            badge_count([thread(), thread(level="all"), thread()])
        assert exc.value.as_json() == {"code": "duplicate_thread", "pointer": "/threads/1/thread"}

    @given(badge_threads())
    def test_b1_badge_is_the_number_of_counted_threads(
        self, threads: list[ThreadBadgeFacts]
    ) -> None:
        """B1: badge_count is the sum of counts_for_badge, at most one per thread."""
        badge = badge_count(threads)
        assert badge == sum(counts_for_badge(t) for t in threads)
        assert 0 <= badge <= len(threads)


class TestThreadBadgeFactsErrors:
    """B1: facts are checked when built."""

    @pytest.mark.parametrize(
        ("changes", "code", "pointer"),
        [
            ({"last_message_seq": -1}, "invalid_seq", "/last_message_seq"),
            ({"unread_floor_seq": 1.0}, "invalid_seq", "/unread_floor_seq"),
            ({"read_seq": True}, "invalid_seq", "/read_seq"),
            ({"unread_mentions": -2}, "invalid_count", "/unread_mentions"),
            ({"readable": 1}, "invalid_flag", "/readable"),
            ({"dm": None}, "invalid_flag", "/dm"),
            ({"thread": 7}, "invalid_thread", "/thread"),
        ],
    )
    def test_b1_invalid_facts(self, changes: dict[str, object], code: str, pointer: str) -> None:
        """B1: each bad member gives its code and pointer."""
        with pytest.raises(InvalidFacts) as exc:
            thread(**changes)
        assert exc.value.as_json() == {"code": code, "pointer": pointer}

    def test_b1_invalid_level(self) -> None:
        """B1, L1: the effective level is a level."""
        with pytest.raises(InvalidLevel) as exc:
            thread(level="loud")
        assert exc.value.pointer == "/level"


class TestReadLowersBadge:
    """B2: a read lowers the badge when the thread counted before it and not after it."""

    def test_b2_reading_a_counted_thread_lowers(self) -> None:
        """B2: a counted unread thread read to its end lowers the badge."""
        assert read_lowers_badge(thread(level="all"), previous_read_seq=4, new_read_seq=10)

    def test_b2_partial_read_of_a_counted_thread_does_not_lower(self) -> None:
        """B2: a read that leaves the thread unread keeps it counted."""
        assert not read_lowers_badge(thread(level="all"), previous_read_seq=4, new_read_seq=9)

    def test_b2_thread_that_never_counted_does_not_lower(self) -> None:
        """B2: level mentions and no mention: the read changes nothing."""
        assert not read_lowers_badge(thread(), previous_read_seq=4, new_read_seq=10)

    def test_b2_second_read_does_not_lower(self) -> None:
        """B2: reading an already read thread again lowers nothing."""
        assert not read_lowers_badge(thread(level="all"), previous_read_seq=10, new_read_seq=10)

    def test_b2_mark_as_unread_does_not_lower(self) -> None:
        """B2: a lower read position (mark as unread) never lowers the badge."""
        assert not read_lowers_badge(thread(level="all"), previous_read_seq=10, new_read_seq=3)

    def test_b2_ignores_the_facts_read_seq(self) -> None:
        """B2: only the two given positions matter."""
        t = thread(level="all", read_seq=10)
        assert read_lowers_badge(t, previous_read_seq=0, new_read_seq=10)

    def test_b2_a_read_past_the_last_unread_mention_lowers_while_the_thread_stays_unread(
        self,
    ) -> None:
        """B2: level mentions outside a DM, the read passes the last unread mention and leaves
        the thread unread: it stops counting, so the badge falls."""
        t = thread(unread_mentions=1)
        assert read_lowers_badge(t, 4, 7, unread_mentions_after=0)
        assert not read_lowers_badge(t, 4, 7, unread_mentions_after=1)  # another one is left
        assert not read_lowers_badge(attrs.evolve(t, dm=True), 4, 7, unread_mentions_after=0)
        assert not read_lowers_badge(attrs.evolve(t, level="all"), 4, 7, unread_mentions_after=0)
        assert not read_lowers_badge(t, 7, 4, unread_mentions_after=0)  # a mark as unread

    def test_b2_unread_mentions_after_is_a_count(self) -> None:
        """B2: the mentions left unread are an integer >= 0."""
        with pytest.raises(InvalidFacts) as exc:
            read_lowers_badge(thread(), 4, 7, unread_mentions_after=-1)
        assert exc.value.as_json() == {
            "code": "invalid_count",
            "pointer": "/unread_mentions_after",
        }

    @given(thread_badge_facts(), seqs, seqs, st.integers(min_value=0, max_value=3))
    def test_b2_lowers_exactly_when_counted_before_and_not_after_with_the_mentions_left(
        self, t: ThreadBadgeFacts, previous: int, new: int, left: int
    ) -> None:
        """B2: the definition, with the mentions still unread at the new position."""
        left = min(left, t.unread_mentions)
        before = counts_for_badge(attrs.evolve(t, read_seq=previous))
        after = counts_for_badge(attrs.evolve(t, read_seq=new, unread_mentions=left))
        lowered = read_lowers_badge(t, previous, new, unread_mentions_after=left)
        assert lowered == (new > previous and before and not after)

    @pytest.mark.parametrize(
        ("previous", "new", "pointer"),
        [(-1, 3, "/previous_read_seq"), (1, True, "/new_read_seq"), (1, 2.0, "/new_read_seq")],
    )
    def test_b2_invalid_positions(self, previous: object, new: object, pointer: str) -> None:
        """B2: positions are integers >= 0."""
        with pytest.raises(InvalidFacts) as exc:
            read_lowers_badge(thread(), previous, new)  # type: ignore[arg-type]
        assert exc.value.as_json() == {"code": "invalid_seq", "pointer": pointer}

    @given(thread_badge_facts(), seqs, seqs)
    def test_b2_lowers_exactly_when_counted_before_and_not_after(
        self, t: ThreadBadgeFacts, previous: int, new: int
    ) -> None:
        """B2: the definition, and a mark as unread never lowers."""
        before = counts_for_badge(attrs.evolve(t, read_seq=previous))
        after = counts_for_badge(attrs.evolve(t, read_seq=new))
        assert read_lowers_badge(t, previous, new) == (before and not after)
        if new <= previous:
            assert not read_lowers_badge(t, previous, new)

    @given(badge_threads(), st.data())
    def test_b2_a_lowering_read_lowers_the_badge_by_one(
        self, threads: list[ThreadBadgeFacts], data: st.DataObject
    ) -> None:
        """B2: applying a read to one thread lowers the badge exactly when the rule says so."""
        if not threads:
            return
        index = data.draw(st.integers(min_value=0, max_value=len(threads) - 1))
        new = data.draw(seqs)
        t = threads[index]
        after = [*threads[:index], attrs.evolve(t, read_seq=new), *threads[index + 1 :]]
        lowered = badge_count(after) < badge_count(threads)
        assert lowered == read_lowers_badge(t, t.read_seq, new)


class TestBadgeSyncDue:
    """B2: at most one badge sync per person per badge_sync_min_interval."""

    def test_b2_first_sync_goes_now(self) -> None:
        """B2: a person without an earlier sync gets it at once."""
        assert badge_sync_due(None, NOW, 30 * S) == NOW

    def test_b2_sync_within_the_interval_waits_for_its_end(self) -> None:
        """B2: a second lowering read before the interval ends syncs at its end."""
        assert badge_sync_due(NOW, NOW + 10 * S, 30 * S) == NOW + 30 * S

    def test_b2_sync_after_the_interval_goes_now(self) -> None:
        """B2: once the interval has passed (or exactly then), the sync goes at once."""
        assert badge_sync_due(NOW, NOW + 30 * S, 30 * S) == NOW + 30 * S
        assert badge_sync_due(NOW, NOW + 31 * S, 30 * S) == NOW + 31 * S

    def test_b2_zero_interval_never_waits(self) -> None:
        """B2: a zero interval means no hold."""
        assert badge_sync_due(NOW, NOW, timedelta(0)) == NOW

    def test_b2_offsets_compare_as_instants(self) -> None:
        """B2: instants with offsets; the answer is in UTC."""
        last = datetime(2026, 10, 23, 14, tzinfo=timezone(timedelta(hours=2)))  # 12:00Z
        due = badge_sync_due(last, NOW + 5 * S, 30 * S)
        assert (due, due.tzinfo) == (NOW + 30 * S, UTC)

    def test_b2_invalid_input(self) -> None:
        """B2, G2: naive instants and negative intervals are refused."""
        with pytest.raises(NaiveDatetime) as naive:
            badge_sync_due(datetime(2026, 1, 1), NOW, S)
        assert naive.value.pointer == "/last_sync_at"
        with pytest.raises(NaiveDatetime):
            badge_sync_due(None, datetime(2026, 1, 1), S)
        with pytest.raises(InvalidInput) as bad:
            badge_sync_due(None, NOW, -S)
        assert bad.value.as_json() == {"code": "invalid_duration", "pointer": "/min_interval_s"}

    @given(st.none() | instants, instants, durations)
    def test_b2_never_before_now_nor_within_the_interval(
        self, last: datetime | None, now: datetime, interval: timedelta
    ) -> None:
        """B2: the sync is never before now nor less than min_interval after the last one."""
        due = badge_sync_due(last, now, interval)
        assert due >= now
        if last is not None:
            assert due >= last + interval
            assert due in (now, last + interval)
        else:
            assert due == now


@given(thread_badge_facts())
def test_counts_values_is_the_rule_of_counts_for_badge(t: ThreadBadgeFacts) -> None:
    """The plain-values form that a push round's badges use says what the facts say (B1)."""
    plain = counts_values(
        t.readable,
        t.dm,
        t.level,
        t.last_message_seq,
        t.unread_floor_seq,
        t.read_seq,
        t.unread_mentions,
    )
    assert plain == counts_for_badge(t)


class _World:
    """Three unread threads of one channel; ``read`` and ``mentions`` as a host gave them."""

    def __init__(self, read: object, mentions: object) -> None:
        self.read, self.mentions = read, mentions

    def badge_threads(self, user: str) -> list[str]:
        return ["t-1", "t-2", "t-3"]

    def thread(self, thread: str) -> ThreadInfo:
        return ThreadInfo(id=thread, channel="c", last_message_seq=9)

    def read_seq(self, user: str, thread: str) -> object:
        return self.read if thread == "t-2" else 0

    def channel(self, channel: str) -> ChannelInfo:
        return ChannelInfo(id=channel, kind="text", space="s")

    def allowed(self, user: str, thread: str) -> bool:
        return True

    def unread_mentions(self, user: str, thread: str) -> object:
        return self.mentions if thread == "t-2" else 0


class _Prefs:
    def level_facts(self, thread: str, users: list[str]) -> dict[str, LevelFacts]:
        level = "all" if thread == "t-1" else "mentions"
        return {u: LevelFacts(instance_default=level) for u in users}


def test_counted_threads_counts_plain_values_and_checks_the_others() -> None:
    """`counted_threads` counts plain facts by B1 without building them, and a value that is
    not plain still meets the checks of `ThreadBadgeFacts`."""
    world, prefs = _World(read=3, mentions=1), _Prefs()
    assert counted_threads(world, prefs, "u", NOW) == ["t-1", "t-2"]  # type: ignore[arg-type]
    world = _World(read=3, mentions=-1)
    with pytest.raises(InvalidFacts) as info:
        counted_threads(world, prefs, "u", NOW)  # type: ignore[arg-type]
    assert info.value.code == "invalid_count"
    world = _World(read=3, mentions=True)
    with pytest.raises(InvalidFacts) as info:
        counted_threads(world, prefs, "u", NOW)  # type: ignore[arg-type]
    assert info.value.code == "invalid_count"


@pytest.mark.parametrize(
    ("make", "kind", "code", "message", "pointer"),
    [
        (
            lambda: thread(dm=1),
            InvalidFacts,
            "invalid_flag",
            "dm must be a boolean: 1",
            "/dm",
        ),
        (
            lambda: thread(read_seq=-1),
            InvalidFacts,
            "invalid_seq",
            "read_seq must be an integer >= 0, not -1",
            "/read_seq",
        ),
        (
            lambda: thread(unread_mentions=True),
            InvalidFacts,
            "invalid_count",
            "unread_mentions must be an integer >= 0, not True",
            "/unread_mentions",
        ),
        (
            lambda: thread(thread=7),
            InvalidFacts,
            "invalid_thread",
            "thread must be an ID string: 7",
            "/thread",
        ),
        (
            lambda: thread(level="loud"),
            InvalidLevel,
            "invalid_level",
            "not a level: 'loud'",
            "/level",
        ),
        (
            lambda: badge_count([thread(), thread(thread="t-2"), thread()]),
            InvalidFacts,
            "duplicate_thread",
            "thread 't-1' appears twice",
            "/threads/2/thread",
        ),
        (
            lambda: badge_sync_due(None, NOW, -S),
            InvalidInput,
            "invalid_duration",
            f"min_interval must be a non-negative timedelta: {-S!r}",
            "/min_interval_s",
        ),
        (
            lambda: badge_sync_due(datetime.max.replace(tzinfo=UTC), NOW, S),
            InvalidInput,
            "invalid_duration",
            "the next badge sync lies past the last instant",
            "/min_interval_s",
        ),
        (
            lambda: badge_sync_due(None, datetime(2026, 10, 23), S),
            NaiveDatetime,
            "naive_datetime",
            "now is a naive datetime: give it a time zone",
            "/now",
        ),
        (
            lambda: badge_sync_due(datetime(2026, 10, 23), NOW, S),
            NaiveDatetime,
            "naive_datetime",
            "last_sync_at is a naive datetime: give it a time zone",
            "/last_sync_at",
        ),
    ],
)
def test_b1_b2_errors_carry_code_message_and_pointer(
    make: object, kind: type[Exception], code: str, message: str, pointer: str | None
) -> None:
    with pytest.raises(kind) as err:
        make()  # type: ignore[operator]
    assert (err.value.code, err.value.message, err.value.pointer) == (code, message, pointer)  # type: ignore[attr-defined]


def test_b2_the_same_read_position_never_lowers_the_badge() -> None:
    # Nothing newly read, whatever the mentions said after it.
    t = thread(unread_mentions=1)
    assert not read_lowers_badge(t, 5, 5, unread_mentions_after=0)
    assert read_lowers_badge(t, 5, 6, unread_mentions_after=0)


def test_b2_the_sync_due_time_is_in_utc_whatever_the_offsets_given() -> None:
    tokyo = timezone(timedelta(hours=9))
    now = NOW.astimezone(tokyo)
    assert badge_sync_due(None, now, S).tzinfo is UTC
    assert badge_sync_due(now - 5 * S, now, 2 * S).tzinfo is UTC
    due = badge_sync_due(now - S, now, 2 * S)
    assert (due, due.tzinfo) == (NOW + S, UTC)
