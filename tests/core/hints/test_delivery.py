"""Delivery results, retries and the push content (rules R1, R2, R3)."""

from __future__ import annotations

import math
import typing
from datetime import UTC, datetime, timedelta, timezone
from fractions import Fraction

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies_delivery import (
    attempts,
    base_and_cap,
    durations,
    instants,
    jitters,
    max_failures,
    registration_states,
    send_results,
)

from notify_core.hints.delivery import (
    PROVIDER_DISABLE_REASONS,
    RESULT_TABLE,
    Action,
    DisableReason,
    Effect,
    Notification,
    Outcome,
    RegistrationState,
    ResultChange,
    ResultClass,
    SendResult,
    apply_result,
    retry_at,
    retry_delay,
)
from notify_core.values.errors import InvalidDelivery, InvalidKind, NaiveDatetime, UsageError
from notify_core.values.kinds import THREAD_KINDS, Kind

NOW = datetime(2026, 10, 23, 12, 0, tzinfo=UTC)
CREATED = datetime(2026, 10, 1, tzinfo=UTC)
MAX = 5
S = timedelta(seconds=1)


def state(**changes: object) -> RegistrationState:
    return RegistrationState(**{"failure_count": 3, "created_at": CREATED, **changes})  # type: ignore[arg-type]


def result(cls: str, **changes: object) -> SendResult:
    return SendResult(result_class=cls, **changes)


class TestApplyResult:
    """R1: one test per row of the result-class table of seed 001 note 13."""

    def test_accepted_resets_failure_count_and_sets_last_success_at(self) -> None:
        """R1: accepted resets failure_count from 3 to 0, sets last_success_at, done."""
        change = apply_result(state(), result("accepted"), NOW, MAX)
        assert change == ResultChange(
            state(failure_count=0, last_success_at=NOW), Outcome.ACCEPTED, Action.DONE
        )

    @pytest.mark.parametrize("reason", sorted(PROVIDER_DISABLE_REASONS))
    def test_disable_deactivates_with_each_reason(self, reason: DisableReason) -> None:
        """R1: disable sets disabled_at = now with its reason; rejected_token, done."""
        change = apply_result(state(), result("disable", disable_reason=reason), NOW, MAX)
        assert change.state == state(disabled_at=NOW, disabled_reason=reason)
        assert (change.outcome, change.action) == (Outcome.REJECTED_TOKEN, Action.DONE)

    def test_disable_with_invalid_since_before_created_at_changes_nothing(self) -> None:
        """R1: a 410 whose timestamp predates the registration leaves it active."""
        since = CREATED - timedelta(days=1)
        res = result("disable", disable_reason="token_invalid", invalid_since=since)
        assert apply_result(state(), res, NOW, MAX) == (
            state(),
            Outcome.REJECTED_TOKEN,
            Action.DONE,
        )

    @pytest.mark.parametrize("offset", [timedelta(0), timedelta(days=1)])
    def test_disable_with_invalid_since_at_or_after_created_at_deactivates(
        self, offset: timedelta
    ) -> None:
        """R1: invalid_since equal to (or after) created_at deactivates."""
        res = result("disable", disable_reason="token_invalid", invalid_since=CREATED + offset)
        change = apply_result(state(), res, NOW, MAX)
        assert change.state == state(disabled_at=NOW, disabled_reason="token_invalid")

    def test_invalid_since_compares_as_instants_across_offsets(self) -> None:
        """R1: 13:00+02:00 is before 12:00Z, so a registration created at 12:00Z stays."""
        created = datetime(2026, 10, 1, 12, tzinfo=UTC)
        since = datetime(2026, 10, 1, 13, tzinfo=timezone(timedelta(hours=2)))
        res = result("disable", disable_reason="token_invalid", invalid_since=since)
        change = apply_result(state(created_at=created), res, NOW, MAX)
        assert change.state.active

    def test_retry_below_max_failures_counts_and_retries(self) -> None:
        """R1: retry adds one failure; provider_error, retry."""
        change = apply_result(state(failure_count=2), result("retry"), NOW, MAX)
        assert change == (state(failure_count=3), Outcome.PROVIDER_ERROR, Action.RETRY)

    def test_retry_at_max_failures_minus_one_deactivates(self) -> None:
        """R1: the failure that reaches max_failures deactivates with repeated_failures; drop."""
        change = apply_result(state(failure_count=MAX - 1), result("retry"), NOW, MAX)
        assert change == (
            state(failure_count=MAX, disabled_at=NOW, disabled_reason="repeated_failures"),
            Outcome.PROVIDER_ERROR,
            Action.DROP,
        )

    def test_retry_above_max_failures_deactivates(self) -> None:
        """R1: a count already past max_failures (a lowered setting) deactivates too."""
        change = apply_result(state(failure_count=9), result("retry"), NOW, MAX)
        assert change.state.disabled_reason is DisableReason.REPEATED_FAILURES
        assert change.action is Action.DROP

    def test_retry_with_max_failures_one_deactivates_at_once(self) -> None:
        """R1: max_failures = 1 deactivates on the first transient failure."""
        change = apply_result(state(failure_count=0), result("retry"), NOW, 1)
        assert (change.state.failure_count, change.action) == (1, Action.DROP)

    def test_throttled_keeps_the_count_and_retries(self) -> None:
        """R1: throttled changes nothing (the limit is the server's) and retries."""
        res = result("throttled", retry_after=timedelta(seconds=10))
        assert apply_result(state(), res, NOW, MAX) == (state(), Outcome.THROTTLED, Action.RETRY)

    @pytest.mark.parametrize("cls", ["config_error", "program_error"])
    def test_config_and_program_error_change_nothing_and_drop(self, cls: str) -> None:
        """R1: config_error and program_error change nothing and do not retry."""
        assert apply_result(state(), result(cls), NOW, MAX) == (
            state(),
            Outcome.REJECTED_OTHER,
            Action.DROP,
        )

    def test_table_example_apply_throttled(self) -> None:
        """R1: the case ``apply-throttled`` of spec/examples/table-examples.jsonl."""
        st_ = RegistrationState(failure_count=1, created_at=datetime(2026, 10, 1, tzinfo=UTC))
        change = apply_result(st_, result("throttled", retry_after=10 * S), NOW, 5)
        assert change == (st_, Outcome.THROTTLED, Action.RETRY)

    @pytest.mark.parametrize("cls", list(ResultClass))
    def test_outcome_of_every_class_is_the_tables(self, cls: ResultClass) -> None:
        """R1: the outcome comes from RESULT_TABLE for every class."""
        res = result(cls, disable_reason="token_invalid")
        assert apply_result(state(), res, NOW, MAX).outcome is RESULT_TABLE[cls].outcome

    def test_table_covers_every_class(self) -> None:
        """R1: RESULT_TABLE has exactly one row per result class."""
        assert set(RESULT_TABLE) == set(ResultClass)
        assert {rule.effect for rule in RESULT_TABLE.values()} == set(Effect)


class TestApplyResultDisabled:
    """R1: a disabled registration is returned unchanged (ruling in docs/decisions.md)."""

    @pytest.mark.parametrize(
        ("cls", "outcome", "action"),
        [
            ("accepted", Outcome.ACCEPTED, Action.DONE),
            ("disable", Outcome.REJECTED_TOKEN, Action.DONE),
            ("retry", Outcome.PROVIDER_ERROR, Action.DROP),
            ("throttled", Outcome.THROTTLED, Action.DROP),
            ("config_error", Outcome.REJECTED_OTHER, Action.DROP),
            ("program_error", Outcome.REJECTED_OTHER, Action.DROP),
        ],
    )
    def test_disabled_registration_unchanged(
        self, cls: str, outcome: Outcome, action: Action
    ) -> None:
        """R1: outcome by class; done for accepted and disable, drop for the others."""
        disabled = state(disabled_at=CREATED, disabled_reason="logout")
        res = result(cls, disable_reason="sender_mismatch")
        change = apply_result(disabled, res, NOW, MAX)
        assert change == (disabled, outcome, action)
        assert change.state.disabled_reason is DisableReason.LOGOUT


class TestApplyResultErrors:
    """R1: invalid input raises InvalidDelivery with a code and a pointer."""

    def test_disable_without_reason(self) -> None:
        """R1: a disable needs a reason."""
        with pytest.raises(InvalidDelivery) as exc:
            result("disable")
        assert exc.value.as_json() == {
            "code": "missing_disable_reason",
            "pointer": "/result/disable_reason",
        }

    @pytest.mark.parametrize("reason", ["device_revoked", "logout", "repeated_failures", "gone"])
    def test_disable_with_a_reason_a_provider_cannot_give(self, reason: str) -> None:
        """R1: a disable result carries token_invalid, topic_mismatch or sender_mismatch only."""
        with pytest.raises(InvalidDelivery) as exc:
            result("disable", disable_reason=reason)
        assert exc.value.as_json() == {
            "code": "invalid_disable_reason",
            "pointer": "/result/disable_reason",
        }

    @pytest.mark.parametrize("cls", ["bounced", "", None, 3, "ACCEPTED"])
    def test_unknown_result_class(self, cls: object) -> None:
        """R1: an unknown class is an error."""
        with pytest.raises(InvalidDelivery) as exc:
            result(cls)  # type: ignore[arg-type]
        assert exc.value.as_json() == {"code": "unknown_result_class", "pointer": "/result/class"}

    @pytest.mark.parametrize("value", [0, -1, True, 1.5, "5", None])
    def test_invalid_max_failures(self, value: object) -> None:
        """R1: max_failures is an integer >= 1."""
        with pytest.raises(InvalidDelivery) as exc:
            apply_result(state(), result("retry"), NOW, value)  # type: ignore[arg-type]
        assert exc.value.as_json() == {"code": "invalid_max_failures", "pointer": "/max_failures"}

    def test_naive_now(self) -> None:
        """R1, G2: a naive now is refused."""
        with pytest.raises(NaiveDatetime) as exc:
            apply_result(state(), result("accepted"), datetime(2026, 10, 23), MAX)
        assert exc.value.pointer == "/now"

    @pytest.mark.parametrize(
        "changes",
        [
            {"created_at": datetime(2026, 10, 1)},
            {"last_success_at": datetime(2026, 10, 1)},
            {"disabled_at": datetime(2026, 10, 1), "disabled_reason": "logout"},
        ],
    )
    def test_naive_state_instants(self, changes: dict[str, object]) -> None:
        """R1, G2: naive instants in the state are refused with their pointer."""
        with pytest.raises(NaiveDatetime) as exc:
            state(**changes)
        assert exc.value.pointer == f"/state/{next(iter(changes))}"

    def test_naive_invalid_since(self) -> None:
        """R1, G2: a naive invalid_since is refused."""
        with pytest.raises(NaiveDatetime) as exc:
            result("disable", disable_reason="token_invalid", invalid_since=datetime(2026, 1, 1))
        assert exc.value.pointer == "/result/invalid_since"

    @pytest.mark.parametrize("value", [-1, True, 1.0, None])
    def test_invalid_failure_count(self, value: object) -> None:
        """R1: failure_count is an integer >= 0."""
        with pytest.raises(InvalidDelivery) as exc:
            state(failure_count=value)
        assert exc.value.as_json() == {
            "code": "invalid_failure_count",
            "pointer": "/state/failure_count",
        }

    @pytest.mark.parametrize(
        ("changes", "pointer"),
        [
            ({"disabled_at": CREATED}, "/state/disabled_reason"),
            ({"disabled_reason": "logout"}, "/state/disabled_at"),
        ],
    )
    def test_disabled_at_and_reason_go_together(
        self, changes: dict[str, object], pointer: str
    ) -> None:
        """R1: (disabled_at is None) == (disabled_reason is None)."""
        with pytest.raises(InvalidDelivery) as exc:
            state(**changes)
        assert exc.value.as_json() == {"code": "invalid_disabled_state", "pointer": pointer}

    def test_unknown_state_reason(self) -> None:
        """R1: a stored reason outside DisableReason is refused."""
        with pytest.raises(InvalidDelivery) as exc:
            state(disabled_at=CREATED, disabled_reason="tired")
        assert exc.value.as_json() == {
            "code": "invalid_disable_reason",
            "pointer": "/state/disabled_reason",
        }

    def test_negative_retry_after(self) -> None:
        """R1, R2: a negative Retry-After is refused."""
        with pytest.raises(InvalidDelivery) as exc:
            result("throttled", retry_after=-S)
        assert exc.value.as_json() == {
            "code": "invalid_duration",
            "pointer": "/result/retry_after_s",
        }


class TestApplyResultProperties:
    """R1 as properties over every valid state and result."""

    @given(registration_states(), send_results(), instants, max_failures)
    def test_never_raises_and_follows_the_table(
        self, st_: RegistrationState, res: SendResult, now: datetime, limit: int
    ) -> None:
        """R1: total over valid input; the outcome is the class's; the action is allowed."""
        change = apply_result(st_, res, now, limit)
        rule = RESULT_TABLE[res.result_class]
        assert change.outcome is rule.outcome
        assert change.action in {rule.action, Action.DROP}
        assert change.state.failure_count >= 0

    @given(registration_states(disabled=True), send_results(), instants, max_failures)
    def test_disabled_rows_stay_unchanged(
        self, st_: RegistrationState, res: SendResult, now: datetime, limit: int
    ) -> None:
        """R1: a disabled registration comes back unchanged and is never retried."""
        change = apply_result(st_, res, now, limit)
        assert change.state is st_
        assert change.action is not Action.RETRY

    @given(registration_states(disabled=False), send_results(), instants, max_failures)
    def test_active_rows_change_as_the_effect_says(
        self, st_: RegistrationState, res: SendResult, now: datetime, limit: int
    ) -> None:
        """R1: each effect of RESULT_TABLE on an active registration."""
        new, _, action = apply_result(st_, res, now, limit)
        effect = RESULT_TABLE[res.result_class].effect
        if effect is Effect.RECORD_SUCCESS:
            assert (new.failure_count, new.last_success_at, new.active) == (0, now, True)
        elif effect is Effect.COUNT_FAILURE:
            assert new.failure_count == st_.failure_count + 1
            assert new.active == (new.failure_count < limit)
            assert action is (Action.RETRY if new.active else Action.DROP)
        elif effect is Effect.DEACTIVATE:
            kept = res.invalid_since is not None and st_.created_at > res.invalid_since
            assert new == (
                st_
                if kept
                else attrs.evolve(st_, disabled_at=now, disabled_reason=res.disable_reason)
            )
        else:
            assert new == st_
        if not new.active:
            assert new.disabled_at == now


def model_delay(
    attempt: int, base: timedelta, cap: timedelta, retry_after: timedelta, jitter: float
) -> timedelta:
    """R2 written with exact fractions, microsecond rounding half to even as timedelta does."""
    us = timedelta(microseconds=1)
    grown = min(cap // us, (base // us) * 2 ** min(attempt - 1, 80))
    return max(retry_after, timedelta(microseconds=round(grown * Fraction(jitter))))


class TestRetryDelay:
    """R2: exponential back-off with a cap, jitter and the provider's Retry-After."""

    def test_attempts_one_to_ten_double_then_cap(self) -> None:
        """R2: base 1 s, cap 60 s: 1, 2, 4, ... 32, then 60."""
        got = [retry_delay(a, S, 60 * S, timedelta(0), 1.0) for a in range(1, 11)]
        assert got == [n * S for n in (1, 2, 4, 8, 16, 32, 60, 60, 60, 60)]

    def test_table_example_retry_delay_third(self) -> None:
        """R2: the case ``retry-delay-third`` of spec/examples/table-examples.jsonl."""
        assert retry_delay(3, S, 60 * S, timedelta(0), 1.0) == 4 * S

    def test_jitter_scales_after_the_cap(self) -> None:
        """R2: min(cap, base * 2**(attempt-1)) * jitter."""
        assert retry_delay(10, S, 60 * S, timedelta(0), 0.5) == 30 * S
        assert retry_delay(2, S, 60 * S, timedelta(0), 0.75) == timedelta(seconds=1.5)

    def test_never_below_retry_after(self) -> None:
        """R2: the provider's Retry-After is a floor."""
        assert retry_delay(1, S, 60 * S, 120 * S, 1.0) == 120 * S

    def test_huge_attempt_is_capped_without_overflow(self) -> None:
        """R2: a huge attempt costs nothing and gives the cap."""
        assert retry_delay(10**18, S, 60 * S, timedelta(0), 1) == 60 * S
        assert retry_delay(10**18, timedelta(0), timedelta(0), 3 * S, 1) == 3 * S

    @pytest.mark.parametrize("attempt", [1, 2, 7, 40, 10**18])
    def test_a_zero_base_never_grows(self, attempt: int) -> None:
        """R2: base 0 stays 0 whatever the attempt and the cap (issue 41)."""
        assert retry_delay(attempt, timedelta(0), 60 * S, timedelta(0), 1.0) == timedelta(0)
        assert retry_delay(attempt, timedelta(0), 60 * S, 2 * S, 0.5) == 2 * S

    def test_the_cap_stops_growth_at_its_bit_length(self) -> None:
        """R2: growth just below, at and past the cap, to the microsecond."""
        us = timedelta(microseconds=1)
        assert retry_delay(3, us, 4 * us, timedelta(0), 1.0) == 4 * us
        assert retry_delay(3, us, 5 * us, timedelta(0), 1.0) == 4 * us
        assert retry_delay(4, us, 5 * us, timedelta(0), 1.0) == 5 * us
        assert retry_delay(4, us, 8 * us, timedelta(0), 1.0) == 8 * us
        assert retry_delay(4, 3 * us, 8 * us, timedelta(0), 1.0) == 8 * us

    def test_largest_durations(self) -> None:
        """R2: the largest timedelta as cap and base does not overflow."""
        big = timedelta.max
        assert retry_delay(5, big, big, timedelta(0), 1.0) == big

    @pytest.mark.parametrize("attempt", [0, -1, True, False, 1.0, "1", None])
    def test_invalid_attempt(self, attempt: object) -> None:
        """R2: attempt is an integer >= 1, booleans refused."""
        with pytest.raises(InvalidDelivery) as exc:
            retry_delay(attempt, S, S, S, 1.0)  # type: ignore[arg-type]
        assert exc.value.as_json() == {"code": "invalid_attempt", "pointer": "/attempt"}

    @pytest.mark.parametrize("jitter", [0.49, 1.01, 0, 2, math.nan, math.inf, True, "1", None])
    def test_invalid_jitter(self, jitter: object) -> None:
        """R2: jitter is a real number in [0.5, 1], booleans and NaN refused."""
        with pytest.raises(InvalidDelivery) as exc:
            retry_delay(1, S, S, S, jitter)  # type: ignore[arg-type]
        assert exc.value.as_json() == {"code": "invalid_jitter", "pointer": "/jitter"}

    @pytest.mark.parametrize("jitter", [0.5, 1, 1.0, Fraction(3, 4)])
    def test_jitter_bounds_accepted(self, jitter: float) -> None:
        """R2: both bounds and any real number between are accepted."""
        assert retry_delay(1, S, S, timedelta(0), jitter) == S * float(jitter)

    @pytest.mark.parametrize(
        ("base", "cap", "retry_after", "pointer"),
        [
            (-S, S, S, "/base_s"),
            (S, -S, S, "/cap_s"),
            (S, S, -S, "/retry_after_s"),
            (2 * S, S, S, "/cap_s"),
            (1, S, S, "/base_s"),
        ],
    )
    def test_invalid_duration(
        self, base: timedelta, cap: timedelta, retry_after: timedelta, pointer: str
    ) -> None:
        """R2: negative durations and cap < base are refused."""
        with pytest.raises(InvalidDelivery) as exc:
            retry_delay(1, base, cap, retry_after, 1.0)
        assert exc.value.as_json() == {"code": "invalid_duration", "pointer": pointer}

    def test_checks_run_in_order(self) -> None:
        """R2: attempt before jitter before durations."""
        with pytest.raises(InvalidDelivery, match="attempt"):
            retry_delay(0, -S, S, S, 7.0)
        with pytest.raises(InvalidDelivery) as exc:
            retry_delay(1, -S, S, S, 7.0)
        assert exc.value.code == "invalid_jitter"

    @given(attempts, base_and_cap(), durations, jitters)
    def test_matches_the_formula(
        self, attempt: int, bc: tuple[timedelta, timedelta], retry_after: timedelta, j: float
    ) -> None:
        """R2: the result is the formula, computed exactly."""
        base, cap = bc
        assert retry_delay(attempt, base, cap, retry_after, j) == model_delay(
            attempt, base, cap, retry_after, j
        )

    @given(attempts, attempts, base_and_cap(), durations, jitters)
    def test_monotone_in_attempt_and_never_below_retry_after(
        self, a: int, b: int, bc: tuple[timedelta, timedelta], retry_after: timedelta, j: float
    ) -> None:
        """R2: a later attempt never waits less; no delay is below retry_after or above cap."""
        base, cap = bc
        lo, hi = sorted((a, b))
        d_lo = retry_delay(lo, base, cap, retry_after, j)
        d_hi = retry_delay(hi, base, cap, retry_after, j)
        assert retry_after <= d_lo <= d_hi <= max(retry_after, cap)

    @given(attempts, base_and_cap(), jitters)
    def test_within_jitter_bounds(
        self, attempt: int, bc: tuple[timedelta, timedelta], j: float
    ) -> None:
        """R2: without Retry-After the delay lies in [raw / 2, raw], raw the capped growth."""
        base, cap = bc
        raw = model_delay(attempt, base, cap, timedelta(0), 1.0)
        delay = retry_delay(attempt, base, cap, timedelta(0), j)
        assert raw / 2 - timedelta(microseconds=1) <= delay <= raw


class TestRetryAt:
    """R2: a retry whose time lies past due_at + max_age is dropped as expired."""

    def test_within_max_age(self) -> None:
        """R2: now + delay when it is not past due_at + max_age."""
        assert retry_at(NOW, NOW + 10 * S, 5 * S, 60 * S) == NOW + 15 * S

    def test_exactly_at_the_limit_is_kept(self) -> None:
        """R2: exactly due_at + max_age is not past it."""
        assert retry_at(NOW, NOW + 10 * S, 50 * S, 60 * S) == NOW + 60 * S

    def test_past_the_limit_is_dropped(self) -> None:
        """R2: one microsecond late is expired."""
        late = 50 * S + timedelta(microseconds=1)
        assert retry_at(NOW, NOW + 10 * S, late, 60 * S) is None

    def test_answer_is_utc_and_crosses_offsets(self) -> None:
        """R2: instants with offsets are compared and added as instants."""
        due = datetime(2026, 10, 23, 14, tzinfo=timezone(timedelta(hours=2)))  # 12:00Z
        assert retry_at(due, NOW, S, S) == NOW + S
        assert retry_at(due, NOW, S, S).tzinfo is UTC  # type: ignore[union-attr]

    def test_huge_max_age_and_delay(self) -> None:
        """R2: no overflow near the largest instant or duration."""
        assert retry_at(NOW, NOW, S, timedelta.max) == NOW + S
        assert retry_at(NOW, NOW, timedelta.max, timedelta.max) is None

    def test_naive_instants(self) -> None:
        """R2, G2: naive instants are refused with their pointer."""
        with pytest.raises(NaiveDatetime) as exc:
            retry_at(datetime(2026, 1, 1), NOW, S, S)
        assert exc.value.pointer == "/due_at"

    @pytest.mark.parametrize(
        ("delay", "max_age", "pointer"), [(-S, S, "/delay_s"), (S, -S, "/max_age_s")]
    )
    def test_negative_durations(self, delay: timedelta, max_age: timedelta, pointer: str) -> None:
        """R2: negative durations are refused."""
        with pytest.raises(InvalidDelivery) as exc:
            retry_at(NOW, NOW, delay, max_age)
        assert exc.value.as_json() == {"code": "invalid_duration", "pointer": pointer}

    @given(instants, instants, durations, durations)
    def test_none_exactly_when_past_the_limit(
        self, due: datetime, now: datetime, delay: timedelta, max_age: timedelta
    ) -> None:
        """R2: None iff now + delay > due_at + max_age, else now + delay."""
        got = retry_at(due, now, delay, max_age)
        if now + delay > due + max_age:
            assert got is None
        else:
            assert got == now + delay


class TestNotification:
    """R3: a push carries only IDs, the kind, flags, a count and the badge: never text."""

    def test_fields_are_ids_kind_flags_count_and_badge_only(self) -> None:
        """R3: walk the fields: no member can hold anything but these."""
        hints = typing.get_type_hints(Notification)
        allowed = [str, str | None, Kind, bool, int, tuple[str, ...]]
        assert [name for name, hint in hints.items() if hint not in allowed] == []
        assert [f.name for f in attrs.fields(Notification)] == [
            "id",
            "kind",
            "thread",
            "message",
            "target",
            "quiet",
            "count",
            "badge",
            "cleared",
            "instance_id",
        ]

    def test_both_forms_carry_the_instance_id(self) -> None:
        """R3, seed 001 note 12: a hint and a badge sync name the instance that sends them."""
        hint = Notification(id="n-1", kind="admin", target="g-1", badge=0, instance_id="i-1")
        sync = Notification(id="n-2", kind="sync", badge=0, instance_id="i-1")
        assert (hint.instance_id, sync.instance_id) == ("i-1", "i-1")
        with pytest.raises(UsageError):
            Notification(id="n-3", kind="sync", badge=0, instance_id=7)  # type: ignore[arg-type]

    def test_hint(self) -> None:
        """R3: a flush hint with its count and badge."""
        n = Notification(id="n-1", kind="message", thread="t-42", message="m-2", count=2, badge=3)
        assert (n.kind, n.quiet, n.cleared) == (Kind.MESSAGE, False, ())

    def test_badge_sync(self) -> None:
        """R3, B2: the sync form carries the badge and the cleared threads only."""
        n = Notification(id="n-2", kind="sync", badge=0, cleared=("t-1", "t-2"))
        assert (n.thread, n.message, n.target, n.count) == (None, None, None, 0)

    def test_threadless_kind(self) -> None:
        """R3, K2: a security hint has no thread, maybe a target."""
        assert Notification(id="n-3", kind="security", target="d-9", badge=1).thread is None

    @pytest.mark.parametrize(
        ("fields", "code", "pointer"),
        [
            ({"kind": "mention"}, "missing_thread", "/thread"),
            ({"kind": "admin", "thread": "t-1"}, "invalid_notification", "/thread"),
            ({"kind": "security", "message": "m-1"}, "invalid_notification", "/message"),
            ({"kind": "sync", "target": "x"}, "invalid_notification", "/target"),
            ({"kind": "sync", "quiet": True}, "invalid_notification", "/quiet"),
            ({"kind": "sync", "count": 1}, "invalid_notification", "/count"),
            ({"kind": "dm", "thread": "t", "cleared": ["t"]}, "invalid_notification", "/cleared"),
            ({"kind": "dm", "thread": "t", "count": -1}, "invalid_count", "/count"),
            ({"kind": "sync", "badge": -1}, "invalid_count", "/badge"),
        ],
    )
    def test_forms_are_enforced(self, fields: dict[str, object], code: str, pointer: str) -> None:
        """R3: each form carries only its members."""
        with pytest.raises(InvalidDelivery) as exc:
            Notification(**{"id": "n", "badge": 0, **fields})  # type: ignore[arg-type]
        assert exc.value.as_json() == {"code": code, "pointer": pointer}

    @pytest.mark.parametrize(
        ("fields", "pointer"),
        [
            ({"id": 7}, "/id"),
            ({"thread": 42}, "/thread"),
            ({"quiet": 1}, "/quiet"),
            ({"badge": True}, "/badge"),
            ({"count": 1.0}, "/count"),
            ({"kind": "sync", "thread": None, "cleared": "t-1"}, "/cleared"),
            ({"kind": "sync", "thread": None, "cleared": [1]}, "/cleared"),
        ],
    )
    def test_wrong_types(self, fields: dict[str, object], pointer: str) -> None:
        """R3: a member of the wrong type is a caller's mistake."""
        with pytest.raises(UsageError) as exc:
            Notification(**{"id": "n", "kind": "dm", "thread": "t", "badge": 0, **fields})  # type: ignore[arg-type]
        assert exc.value.as_json() == {"code": "invalid_type", "pointer": pointer}

    def test_unknown_kind(self) -> None:
        """R3, K1: the kind is one of the kinds."""
        with pytest.raises(InvalidKind):
            Notification(id="n", kind="reminder", badge=0)

    @given(st.sampled_from(Kind), st.integers(min_value=0), st.booleans())
    def test_every_kind_has_a_valid_form(self, kind: Kind, badge: int, quiet: bool) -> None:
        """R3: every kind can be pushed, each in its form."""
        thread = "t" if kind in THREAD_KINDS else None
        n = Notification(
            id="n", kind=kind, thread=thread, quiet=quiet and kind is not Kind.SYNC, badge=badge
        )
        assert n.badge == badge
