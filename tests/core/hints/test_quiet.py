"""Quiet hours: rules Q1-Q7, against examples and a brute-force reference."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from notify_core.hints.quiet import (
    ALWAYS,
    QuietRule,
    in_quiet_hours,
    parse_local_time,
    quiet_until,
    rule_from_json,
    rule_to_json,
    rule_unchanged,
)
from notify_core.values.errors import InvalidRule, NaiveDatetime, UsageError
from notify_core.values.zones import validate_time_zone
from tests import strategies as s

FRIDAY = 1 << 4
EVERY_DAY = 127


def at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def berlin_friday_night() -> QuietRule:
    return QuietRule(
        weekdays=FRIDAY, start_local="22:00", end_local="07:00", time_zone="Europe/Berlin"
    )


def reference_covers(rule: QuietRule, t: datetime, user_zone: str | None) -> bool:
    """Q4 read literally: convert, take the local date and time, look up the weekday bits."""
    if not rule.enabled:
        return False
    zone = ZoneInfo(rule.time_zone or user_zone or "UTC")
    local = t.astimezone(zone)
    d, x = local.date(), local.time().replace(tzinfo=None)
    start, end = rule.start_local, rule.end_local

    def bit(day: date) -> bool:
        return bool(rule.weekdays & (1 << day.weekday()))

    yesterday = d - timedelta(days=1)
    if start < end:
        return bit(d) and start <= x < end
    if end < start:
        return (bit(d) and x >= start) or (bit(yesterday) and x < end)
    return (bit(d) and x >= start) or (bit(yesterday) and x < start)


def reference_quiet(rules: list[QuietRule], t: datetime, user_zone: str | None) -> bool:
    return any(reference_covers(rule, t, user_zone) for rule in rules)


class TestRuleValidation:
    """Q1-Q3: what a rule may hold, checked in the order of Q3."""

    @pytest.mark.parametrize("text", ["00:00", "07:30", "23:59"])
    def test_q2_accepts_two_digit_hours_and_minutes(self, text: str) -> None:
        assert parse_local_time(text).strftime("%H:%M") == text

    @pytest.mark.parametrize(
        "text",
        [
            "24:00",
            "7:00",
            "07:60",
            "07:00:00",
            "",
            "0700",
            " 07:00",
            "07:00 ",
            "\u0660\u0667:\u0660\u0660",
            700,
        ],
    )
    def test_q2_refuses_everything_else(self, text: object) -> None:
        with pytest.raises(InvalidRule) as err:
            QuietRule(weekdays=1, start_local=text, end_local="08:00")  # type: ignore[arg-type]
        assert (err.value.code, err.value.pointer) == ("invalid_local_time", "/start_local")

    def test_q2_end_local_has_its_own_pointer(self) -> None:
        with pytest.raises(InvalidRule) as err:
            QuietRule(weekdays=1, start_local="07:00", end_local="24:00")
        assert err.value.pointer == "/end_local"

    @pytest.mark.parametrize(
        "zone",
        [
            "Local",
            "localtime",
            "Factory",
            "posixrules",
            "posix/Europe/Berlin",
            "right/UTC",
            "",
            "/etc/localtime",
            "../zoneinfo/UTC",
            "Mars/Olympus",
            "europe/berlin",
        ],
    )
    def test_q3_refuses_zones_outside_tzdata(self, zone: str) -> None:
        with pytest.raises(InvalidRule) as err:
            QuietRule(weekdays=1, start_local="07:00", end_local="08:00", time_zone=zone)
        assert (err.value.code, err.value.pointer) == ("unknown_time_zone", "/time_zone")

    @pytest.mark.parametrize("zone", (*s.ZONES, "Asia/Kolkata", "America/St_Johns"))
    def test_q3_accepts_iana_zones(self, zone: str) -> None:
        assert validate_time_zone(zone) == zone

    @pytest.mark.parametrize("weekdays", [0, 128, -1, True, False, 1.0, "1"])
    def test_q3_weekdays_is_an_integer_1_to_127(self, weekdays: object) -> None:
        with pytest.raises(InvalidRule) as err:
            QuietRule(weekdays=weekdays, start_local="07:00", end_local="08:00")  # type: ignore[arg-type]
        assert (err.value.code, err.value.pointer) == ("invalid_weekdays", "/weekdays")

    def test_q3_checks_run_in_order_and_report_the_first_failure(self) -> None:
        raw = {
            "weekdays": 0,
            "start_local": "24:00",
            "end_local": "x",
            "time_zone": "Mars",
            "enabled": True,
        }
        codes = []
        for fixed in ("weekdays", "start_local", "end_local", "time_zone"):
            with pytest.raises(InvalidRule) as err:
                rule_from_json(raw)
            codes.append(err.value.pointer)
            raw[fixed] = {
                "weekdays": 1,
                "start_local": "07:00",
                "end_local": "08:00",
                "time_zone": "UTC",
            }[fixed]
        assert codes == ["/weekdays", "/start_local", "/end_local", "/time_zone"]
        assert rule_from_json(raw).time_zone == "UTC"

    def test_q1_json_round_trip_omits_an_absent_zone(self) -> None:
        rule = QuietRule(weekdays=31, start_local="19:00", end_local="07:00")
        assert rule_to_json(rule) == {
            "weekdays": 31,
            "start_local": "19:00",
            "end_local": "07:00",
            "enabled": True,
        }
        assert rule_from_json(rule_to_json(rule)) == rule

    @pytest.mark.parametrize("raw", [5, "rule", None, [1]])
    def test_g3_a_rule_must_be_an_object(self, raw: object) -> None:
        with pytest.raises(InvalidRule) as err:
            rule_from_json(raw)  # type: ignore[arg-type]
        assert err.value.code == "invalid_type"

    def test_q1_json_refuses_null_zone(self) -> None:
        with pytest.raises(InvalidRule) as err:
            rule_from_json(
                {
                    "weekdays": 1,
                    "start_local": "07:00",
                    "end_local": "08:00",
                    "time_zone": None,
                    "enabled": True,
                }
            )
        assert err.value.code == "null_value"

    def test_q7_rule_unchanged_compares_all_five_fields(self) -> None:
        base = berlin_friday_night()
        assert rule_unchanged(base, berlin_friday_night())
        for change in (
            {"weekdays": 17},
            {"start_local": "22:01"},
            {"end_local": "07:01"},
            {"time_zone": None},
            {"enabled": False},
        ):
            fields = {
                "weekdays": FRIDAY,
                "start_local": "22:00",
                "end_local": "07:00",
                "time_zone": "Europe/Berlin",
                "enabled": True,
            } | change
            assert not rule_unchanged(base, QuietRule(**fields))  # type: ignore[arg-type]


class TestCoverage:
    """Q4, Q5: which instants a rule covers."""

    def test_q4_seed_berlin_friday_night(self) -> None:
        rule = berlin_friday_night()
        assert in_quiet_hours([rule], at("2026-10-23T21:30:00Z"), None)
        assert not in_quiet_hours([rule], at("2026-10-23T19:30:00Z"), None)

    def test_q4_seed_same_rule_in_utc(self) -> None:
        rule = QuietRule(weekdays=FRIDAY, start_local="22:00", end_local="07:00", time_zone="UTC")
        assert in_quiet_hours([rule], at("2026-10-23T22:30:00Z"), "Europe/Berlin")
        assert not in_quiet_hours([rule], at("2026-10-23T21:30:00Z"), "Europe/Berlin")

    def test_q4_the_starting_day_counts_sunday_night_covers_monday_morning(self) -> None:
        sunday = QuietRule(weekdays=1 << 6, start_local="22:00", end_local="07:00", time_zone="UTC")
        monday_3am = at("2026-10-26T03:00:00Z")
        assert monday_3am.weekday() == 0
        assert in_quiet_hours([sunday], monday_3am, None)
        monday_only = QuietRule(weekdays=1, start_local="22:00", end_local="07:00", time_zone="UTC")
        assert not in_quiet_hours([monday_only], monday_3am, None)

    def test_q4_equal_start_and_end_is_a_whole_day_from_start(self) -> None:
        rule = QuietRule(weekdays=FRIDAY, start_local="08:00", end_local="08:00", time_zone="UTC")
        assert in_quiet_hours([rule], at("2026-10-23T08:00:00Z"), None)
        assert in_quiet_hours([rule], at("2026-10-24T07:59:59Z"), None)
        assert not in_quiet_hours([rule], at("2026-10-24T08:00:00Z"), None)
        assert not in_quiet_hours([rule], at("2026-10-23T07:59:59Z"), None)

    def test_q4_end_is_exclusive_start_inclusive(self) -> None:
        rule = QuietRule(
            weekdays=EVERY_DAY, start_local="09:00", end_local="17:00", time_zone="UTC"
        )
        assert in_quiet_hours([rule], at("2026-10-23T09:00:00Z"), None)
        assert not in_quiet_hours([rule], at("2026-10-23T17:00:00Z"), None)

    def test_q4_disabled_rule_never_covers(self) -> None:
        rule = QuietRule(weekdays=EVERY_DAY, start_local="00:00", end_local="00:00", enabled=False)
        assert not in_quiet_hours([rule], at("2026-10-23T12:00:00Z"), None)

    def test_q1_rule_without_zone_uses_the_person_then_utc(self) -> None:
        rule = QuietRule(weekdays=EVERY_DAY, start_local="22:00", end_local="23:00")
        t = at("2026-10-23T20:30:00Z")  # 22:30 in Berlin, 20:30 in UTC
        assert in_quiet_hours([rule], t, "Europe/Berlin")
        assert not in_quiet_hours([rule], t, None)

    def test_q7_unloadable_person_zone_counts_as_utc(self) -> None:
        rule = QuietRule(weekdays=EVERY_DAY, start_local="20:00", end_local="21:00")
        t = at("2026-10-23T20:30:00Z")
        assert in_quiet_hours([rule], t, "Mars/Olympus") == in_quiet_hours([rule], t, None) is True

    def test_g2_naive_now_is_a_type_error(self) -> None:
        with pytest.raises(TypeError) as err:
            in_quiet_hours([berlin_friday_night()], datetime(2026, 10, 23, 21, 30), None)
        assert isinstance(err.value, NaiveDatetime)
        assert err.value.code == "naive_datetime"
        with pytest.raises(NaiveDatetime):
            quiet_until([], datetime(2026, 10, 23), None)

    @given(rules=s.rule_lists, t=s.moments, user_zone=st.one_of(st.none(), s.zones))
    @example(rules=[berlin_friday_night()], t=at("2026-10-23T21:30:00Z"), user_zone=None)
    def test_q5_equals_brute_force_reference(
        self, rules: list[QuietRule], t: datetime, user_zone: str | None
    ) -> None:
        assert in_quiet_hours(rules, t, user_zone) == reference_quiet(rules, t, user_zone)

    @given(rule=s.rules, t=s.moments, zone=s.zones)
    def test_q4_offset_of_the_input_does_not_matter(
        self, rule: QuietRule, t: datetime, zone: str
    ) -> None:
        assert in_quiet_hours([rule], t, None) == in_quiet_hours(
            [rule], t.astimezone(ZoneInfo(zone)), None
        )


class TestQuietUntil:
    """Q6: the first instant after now at which no rule covers."""

    def test_q6_seed_friday_night_ends_saturday_0700_berlin(self) -> None:
        assert quiet_until([berlin_friday_night()], at("2026-10-23T21:30:00Z"), None) == at(
            "2026-10-24T05:00:00Z"
        )

    def test_q6_absent_when_not_quiet(self) -> None:
        assert quiet_until([berlin_friday_night()], at("2026-10-23T19:30:00Z"), None) is None

    def test_q6_always_when_nothing_is_uncovered_for_400_days(self) -> None:
        rule = QuietRule(
            weekdays=EVERY_DAY, start_local="08:00", end_local="08:00", time_zone="Pacific/Chatham"
        )
        assert quiet_until([rule], at("2026-10-23T12:00:00Z"), None) == ALWAYS

    def test_q6_fall_back_returns_the_first_end_even_if_covered_again(self) -> None:
        # Berlin, 2026-10-25: 03:00 CEST becomes 02:00 CET at 01:00Z; 02:00-02:30 happens twice.
        rule = QuietRule(
            weekdays=EVERY_DAY, start_local="22:00", end_local="02:30", time_zone="Europe/Berlin"
        )
        until = quiet_until([rule], at("2026-10-24T23:00:00Z"), None)
        assert until == at("2026-10-25T00:30:00Z")
        assert in_quiet_hours([rule], at("2026-10-25T01:10:00Z"), None)  # the repeated hour

    def test_q6_spring_forward_ends_when_the_clock_jumps_past_the_end(self) -> None:
        # Berlin, 2026-03-29: 02:00 CET becomes 03:00 CEST at 01:00Z; 02:30 never happens.
        rule = QuietRule(
            weekdays=EVERY_DAY, start_local="22:00", end_local="02:30", time_zone="Europe/Berlin"
        )
        assert quiet_until([rule], at("2026-03-28T23:30:00Z"), None) == at("2026-03-29T01:00:00Z")

    def test_q6_kathmandu_quarter_hour_offset(self) -> None:
        rule = QuietRule(
            weekdays=EVERY_DAY, start_local="22:00", end_local="07:00", time_zone="Asia/Kathmandu"
        )
        assert quiet_until([rule], at("2026-10-23T17:00:00Z"), None) == at("2026-10-24T01:15:00Z")

    def test_q6_overlapping_rules_in_two_zones_chain(self) -> None:
        a = QuietRule(
            weekdays=EVERY_DAY, start_local="22:00", end_local="07:00", time_zone="Europe/Berlin"
        )
        b = QuietRule(weekdays=EVERY_DAY, start_local="06:00", end_local="09:00", time_zone="UTC")
        # a ends at 07:00 CEST = 05:00Z; b starts only at 06:00Z, so the gap comes first.
        assert quiet_until([a, b], at("2026-10-23T21:00:00Z"), None) == at("2026-10-24T05:00:00Z")
        c = QuietRule(weekdays=EVERY_DAY, start_local="04:30", end_local="09:00", time_zone="UTC")
        assert quiet_until([a, c], at("2026-10-23T21:00:00Z"), None) == at("2026-10-24T09:00:00Z")

    def test_q6_now_with_microseconds(self) -> None:
        rule = QuietRule(
            weekdays=EVERY_DAY, start_local="10:00", end_local="11:00", time_zone="UTC"
        )
        assert quiet_until([rule], at("2026-10-23T10:59:59.999999Z"), None) == at(
            "2026-10-23T11:00:00Z"
        )

    @settings(max_examples=60)
    @given(rules=s.rule_lists, t=s.moments, user_zone=st.one_of(st.none(), s.zones))
    def test_q6_answer_is_uncovered_and_every_minute_before_is_covered(
        self, rules: list[QuietRule], t: datetime, user_zone: str | None
    ) -> None:
        until = quiet_until(rules, t, user_zone)
        if until is None:
            assert not reference_quiet(rules, t, user_zone)
            return
        assert reference_quiet(rules, t, user_zone)
        if until == ALWAYS:
            probes = [t + timedelta(hours=h) for h in range(0, 400 * 24, 7)]
            assert all(reference_quiet(rules, p, user_zone) for p in probes)
            return
        assert isinstance(until, datetime)
        assert until > t and until.second == 0 and until.microsecond == 0
        assert not reference_quiet(rules, until, user_zone)
        assert reference_quiet(rules, until - timedelta(seconds=1), user_zone)
        minute = t.replace(second=0, microsecond=0) + timedelta(minutes=1)
        step = max(timedelta(minutes=1), (until - minute) / 3000)
        while minute < until:
            assert reference_quiet(rules, minute, user_zone), minute
            minute += step

    def test_q6_answer_is_exact_in_whole_minutes_for_a_lord_howe_half_hour_change(self) -> None:
        # Lord Howe goes from +11 to +10:30 on 2026-04-05 at 02:00 local (15:00Z).
        rule = QuietRule(
            weekdays=EVERY_DAY,
            start_local="00:00",
            end_local="01:45",
            time_zone="Australia/Lord_Howe",
        )
        t = at("2026-04-04T13:30:00Z")  # 00:30 local (+11)
        until = quiet_until([rule], t, None)
        assert until == at("2026-04-04T14:45:00Z")


@given(t=s.instants)
def test_q5_no_rules_is_never_quiet(t: datetime) -> None:
    assert not in_quiet_hours([], t, "Europe/Berlin")
    assert quiet_until([], t, None) is None


def test_q2_time_objects_must_be_whole_minutes() -> None:
    with pytest.raises(InvalidRule):
        QuietRule(weekdays=1, start_local=time(7, 0, 30), end_local="08:00")
    assert QuietRule(weekdays=1, start_local=time(7), end_local="08:00").start_local == time(7)


def test_g1_now_in_utc_or_offset_gives_the_same_answer() -> None:
    rule = berlin_friday_night()
    t = at("2026-10-23T21:30:00Z")
    assert quiet_until([rule], t, None) == quiet_until(
        [rule], t.astimezone(ZoneInfo("Asia/Tokyo")), None
    )
    assert UTC is not None


def _rule_json(**kw: object) -> dict[str, object]:
    return {"weekdays": 1, "start_local": "07:00", "end_local": "08:00", "enabled": True} | kw


@pytest.mark.parametrize(
    ("make", "code", "message", "pointer"),
    [
        (
            lambda: parse_local_time("7h"),
            "invalid_local_time",
            "not a local time HH:MM: '7h'",
            "",
        ),
        (
            lambda: QuietRule(weekdays=1, start_local="07:00", end_local="08:00", enabled=1),
            "invalid_enabled",
            "enabled must be a boolean: 1",
            "/enabled",
        ),
        (lambda: rule_from_json([1]), "invalid_type", "a rule must be a JSON object", None),
        (
            lambda: rule_from_json({"weekdays": 1, "start_local": "07:00", "end_local": "08:00"}),
            "missing_member",
            "the rule has no 'enabled'",
            "/enabled",
        ),
        (
            lambda: rule_from_json(_rule_json(time_zone=None)),
            "null_value",
            "time_zone is null: omit it instead",
            "/time_zone",
        ),
    ],
)
def test_q3_errors_carry_code_message_and_pointer(
    make: object, code: str, message: str, pointer: str | None
) -> None:
    with pytest.raises(InvalidRule) as err:
        make()  # type: ignore[operator]
    assert (err.value.code, err.value.message, err.value.pointer) == (code, message, pointer)


def test_q1_json_keeps_a_present_zone() -> None:
    rule = berlin_friday_night()
    assert rule_to_json(rule)["time_zone"] == "Europe/Berlin"
    assert rule_from_json(rule_to_json(rule)) == rule


def test_g2_quiet_until_names_now() -> None:
    with pytest.raises(NaiveDatetime) as err:
        quiet_until([], datetime(2026, 10, 23), None)
    assert err.value.message.startswith("now is a naive datetime")


def test_q6_a_rule_without_zone_ends_in_the_persons_zone() -> None:
    # 22:00-07:00 in Tokyo (+09): at 21:30Z (06:30 Tokyo) quiet until 22:00Z; in UTC it would
    # not be quiet at all.
    rule = QuietRule(weekdays=EVERY_DAY, start_local="22:00", end_local="07:00")
    t = at("2026-10-23T21:30:00Z")
    assert quiet_until([rule], t, "Asia/Tokyo") == at("2026-10-23T22:00:00Z")
    assert quiet_until([rule], t, None) is None


@pytest.mark.parametrize("before", [1, 2, 3, 5, 17, 59, 600, 3599, 5400])
def test_q6_an_offset_change_is_found_to_the_second(before: int) -> None:
    # Berlin springs forward at 01:00:00Z on 2026-03-29: however far before it the search
    # starts, the rule that would end at 02:30 local ends exactly at the change.
    rule = QuietRule(
        weekdays=EVERY_DAY, start_local="22:00", end_local="02:30", time_zone="Europe/Berlin"
    )
    change = at("2026-03-29T01:00:00Z")
    assert quiet_until([rule], change - timedelta(seconds=before), None) == change
    half = change - timedelta(seconds=before) + timedelta(microseconds=500_000)
    assert quiet_until([rule], half, None) == change


@pytest.mark.parametrize("before", [1, 2, 600, 5400])
def test_q6_one_step_of_the_search_reaches_the_offset_change(before: int) -> None:
    # quiet_until's search steps from boundary to boundary: from before Berlin's change
    # (01:00:00Z, 2026-03-29) the next boundary is the change itself, found in one step (a
    # step of one second at a time would reach the same answer, thousands of steps later).
    from notify_core.hints.quiet import _next_change

    berlin = ZoneInfo("Europe/Berlin")
    change = at("2026-03-29T01:00:00Z")
    marks = [0, 22 * 60, 2 * 60 + 30]
    assert _next_change(berlin, marks, change - timedelta(seconds=before)) == change


@pytest.mark.parametrize(
    ("make", "code", "message", "pointer"),
    [
        (
            lambda: QuietRule(weekdays=0, start_local="07:00", end_local="08:00"),
            "invalid_weekdays",
            "weekdays must be an integer 1..127, not 0",
            "/weekdays",
        ),
        (
            lambda: QuietRule(weekdays=1, start_local="07:00", end_local=time(8, 0, 30)),
            "invalid_local_time",
            "not a whole local minute: datetime.time(8, 0, 30)",
            "/end_local",
        ),
        (
            lambda: QuietRule(weekdays=1, start_local=time(7, tzinfo=UTC), end_local="08:00"),
            "invalid_local_time",
            "not a whole local minute: datetime.time(7, 0, tzinfo=datetime.timezone.utc)",
            "/start_local",
        ),
        (
            lambda: QuietRule(weekdays=1, start_local=time(7, 0, 0, 1), end_local="08:00"),
            "invalid_local_time",
            "not a whole local minute: datetime.time(7, 0, 0, 1)",
            "/start_local",
        ),
        (
            lambda: validate_time_zone(["Europe/Berlin"]),
            "unknown_time_zone",
            "unknown time zone: ['Europe/Berlin']",
            "/time_zone",
        ),
    ],
)
def test_q3_field_errors_carry_code_message_and_pointer(
    make: object, code: str, message: str, pointer: str | None
) -> None:
    with pytest.raises(InvalidRule) as err:
        make()  # type: ignore[operator]
    assert (err.value.code, err.value.message, err.value.pointer) == (code, message, pointer)


def test_g2_in_quiet_hours_checks_now_and_names_it() -> None:
    with pytest.raises(UsageError) as wrong:
        in_quiet_hours([], "2026-10-23T12:00:00Z", None)  # type: ignore[arg-type]
    assert wrong.value.message == "now must be a datetime, not str"
    with pytest.raises(NaiveDatetime) as naive:
        in_quiet_hours([], datetime(2026, 10, 23), None)
    assert naive.value.message.startswith("now is a naive datetime")


def test_q4_start_and_end_minutes_count_to_the_minute() -> None:
    rule = QuietRule(weekdays=EVERY_DAY, start_local="07:45", end_local="08:15", time_zone="UTC")
    covers = [
        in_quiet_hours([rule], at(f"2026-10-23T{hm}:00Z"), None)
        for hm in ("06:14", "06:15", "07:44", "07:45", "08:14", "08:15")
    ]
    assert covers == [False, False, False, True, True, False]


class TestLocalCache:
    """`covered`'s cache: one conversion per zone for many people at one instant."""

    RULE = QuietRule(weekdays=EVERY_DAY, start_local="10:00", end_local="11:00")

    def test_a_filled_cache_is_what_is_read(self) -> None:
        from notify_core.hints.quiet import covered

        t = at("2026-10-23T12:00:00Z")  # a Friday, not covered by 10:00-11:00 UTC
        assert not covered([self.RULE], t, UTC, {})
        # The cache says Friday 10:30 for UTC: covered, although t is 12:00.
        assert covered([self.RULE], t, UTC, {UTC: (4, 10 * 60 + 30)})

    def test_a_conversion_fills_the_cache(self) -> None:
        from notify_core.hints.quiet import covered

        cache: dict[object, tuple[int, int]] = {}
        berlin = ZoneInfo("Europe/Berlin")
        assert covered([self.RULE], at("2026-10-23T08:30:00Z"), berlin, cache)  # type: ignore[arg-type]
        assert cache == {berlin: (4, 10 * 60 + 30)}


def test_q6_an_offset_change_from_utc_plus_zero_is_found() -> None:
    # London springs forward at 01:00Z on 2026-03-29, from +00 (the offset of a machine on
    # UTC): a rule to 01:30 local ends when the clock jumps to 02:00.
    rule = QuietRule(
        weekdays=EVERY_DAY, start_local="22:00", end_local="01:30", time_zone="Europe/London"
    )
    assert quiet_until([rule], at("2026-03-29T00:30:00Z"), None) == at("2026-03-29T01:00:00Z")
