"""Hypothesis strategies for delivery results, retries and the badge (R1-R3, B1, B2)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from hypothesis import strategies as st

from notify_core.hints.badge import ThreadBadgeFacts
from notify_core.hints.delivery import (
    PROVIDER_DISABLE_REASONS,
    DisableReason,
    RegistrationState,
    ResultClass,
    SendResult,
)
from notify_core.hints.levels import Level

#: Fixed offsets and UTC: aware instants whose comparisons do not depend on a zone's rules.
zones = st.sampled_from(
    [UTC, timezone(timedelta(hours=2)), timezone(timedelta(hours=-7, minutes=-30))]
)

#: Aware instants in a range where adding a day or two never leaves ``datetime``.
instants = st.builds(
    lambda naive, tz: naive.replace(tzinfo=UTC).astimezone(tz),
    st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1)),
    zones,
)

#: Non-negative durations up to about a day, at microsecond resolution.
durations = st.integers(min_value=0, max_value=86_400 * 10**6).map(
    lambda us: timedelta(microseconds=us)
)

#: Valid jitter factors, bounds included.
jitters = st.one_of(st.just(0.5), st.just(1.0), st.just(1), st.floats(min_value=0.5, max_value=1))

#: Retry numbers, from the first to absurdly many.
attempts = st.one_of(st.integers(min_value=1, max_value=80), st.integers(min_value=1))


@st.composite
def base_and_cap(draw: st.DrawFn) -> tuple[timedelta, timedelta]:
    """A ``(base, cap)`` pair with ``cap >= base``."""
    base = draw(durations)
    return base, base + draw(durations)


@st.composite
def registration_states(draw: st.DrawFn, disabled: bool | None = None) -> RegistrationState:
    """Valid registrations; ``disabled`` forces active (False) or disabled (True) ones."""
    is_disabled = draw(st.booleans()) if disabled is None else disabled
    return RegistrationState(
        failure_count=draw(st.integers(min_value=0, max_value=20)),
        created_at=draw(instants),
        last_success_at=draw(st.none() | instants),
        disabled_at=draw(instants) if is_disabled else None,
        disabled_reason=draw(st.sampled_from(DisableReason)) if is_disabled else None,
    )


@st.composite
def send_results(draw: st.DrawFn) -> SendResult:
    """Valid send results of every class."""
    cls = draw(st.sampled_from(ResultClass))
    if cls is ResultClass.DISABLE:
        reason: DisableReason | None = draw(st.sampled_from(sorted(PROVIDER_DISABLE_REASONS)))
    else:
        reason = draw(st.none() | st.sampled_from(DisableReason))
    return SendResult(
        result_class=cls,
        disable_reason=reason,
        invalid_since=draw(st.none() | instants),
        retry_after=draw(durations),
    )


max_failures = st.integers(min_value=1, max_value=25)

seqs = st.integers(min_value=0, max_value=50)


@st.composite
def thread_badge_facts(draw: st.DrawFn, thread: str | None = None) -> ThreadBadgeFacts:
    """Facts of one thread for the badge, unread or not, with any mention count."""
    return ThreadBadgeFacts(
        thread=thread if thread is not None else draw(st.text(min_size=1, max_size=8)),
        readable=draw(st.booleans()),
        dm=draw(st.booleans()),
        level=draw(st.sampled_from(Level)),
        last_message_seq=draw(seqs),
        unread_floor_seq=draw(seqs),
        read_seq=draw(seqs),
        unread_mentions=draw(st.integers(min_value=0, max_value=5)),
    )


@st.composite
def badge_threads(draw: st.DrawFn) -> list[ThreadBadgeFacts]:
    """The threads of one person: distinct thread IDs."""
    ids = draw(st.lists(st.text(min_size=1, max_size=8), unique=True, max_size=12))
    return [draw(thread_badge_facts(thread=tid)) for tid in ids]
