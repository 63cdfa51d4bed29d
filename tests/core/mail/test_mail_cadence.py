"""Email cadence: E2 (`email_after_for`, the one place a due time is computed) and E3
(rescheduling pending entries when a person's schedule changes)."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta, tzinfo
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from notify_core.mail import (
    DEFAULT_EMAIL_DELAY,
    EmailSchedule,
    QueuedEmail,
    Schedule,
    email_after_for,
    mail_zone,
    reschedule,
    slot_offset,
)
from notify_core.values.errors import InvalidInput, InvalidSchedule, NaiveDatetime, UsageError
from tests.strategies_mail import (
    DIGEST,
    delays,
    people,
    person_with_offset,
    schedules,
    zone_and_now,
)

DAILY_9 = EmailSchedule(schedule="daily", daily_hour=9)
HOURLY = EmailSchedule(schedule="hourly")
IMMEDIATE = EmailSchedule()
DIGEST_KEYS = frozenset(k for k, v in DIGEST.items() if v)


def at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def daily(hour: int) -> EmailSchedule:
    return EmailSchedule(schedule="daily", daily_hour=hour)


def due(
    schedule: EmailSchedule,
    now: str,
    person: str,
    zone: str | None = None,
    site: str | None = None,
    delay: float = 0,
    digest: bool = True,
) -> str:
    result = email_after_for(
        schedule,
        at(now),
        person=person,
        digest=digest,
        time_zone=zone,
        site_time_zone=site,
        delay=timedelta(seconds=delay),
    )
    assert result.tzinfo is UTC
    return result.strftime("%Y-%m-%dT%H:%M:%S") + (
        f".{result.microsecond:06d}Z" if result.microsecond else "Z"
    )


# -- E2: examples ---------------------------------------------------------------------------


class TestOffset:
    def test_e2_offset_is_sha256_of_the_id_modulo_3600(self) -> None:
        # The spec's example: ana's daily 09:00 in Tokyo falls due at 00:56:58Z.
        assert slot_offset("ana") == 56 * 60 + 58
        assert (
            slot_offset("jürgen")
            == int.from_bytes(__import__("hashlib").sha256("jürgen".encode()).digest()[:8], "big")
            % 3600
        )

    @given(people)
    def test_e2_offset_is_within_the_hour(self, person: str) -> None:
        assert 0 <= slot_offset(person) < 3600

    def test_a_lone_surrogate_still_has_an_offset(self) -> None:
        assert 0 <= slot_offset("\ud800") < 3600


class TestImmediate:
    def test_e2_immediate_is_now_plus_the_delay(self) -> None:
        assert due(IMMEDIATE, "2026-11-30T10:00:00Z", "ana", delay=180) == "2026-11-30T10:03:00Z"

    def test_e2_the_default_delay_is_180_seconds(self) -> None:
        now = at("2026-11-30T10:00:00Z")
        assert timedelta(seconds=180) == DEFAULT_EMAIL_DELAY
        assert email_after_for(IMMEDIATE, now, person="ana", digest=True) == at(
            "2026-11-30T10:03:00Z"
        )

    def test_e2_immediate_keeps_a_fraction_of_now(self) -> None:
        assert due(IMMEDIATE, "2026-11-30T10:00:00.25Z", "ana", delay=1) == (
            "2026-11-30T10:00:01.250000Z"
        )

    @pytest.mark.parametrize("schedule", [HOURLY, DAILY_9], ids=["hourly", "daily"])
    @pytest.mark.parametrize("category", sorted(k for k, v in DIGEST.items() if not v))
    def test_e2_non_digest_categories_are_always_immediate(
        self, schedule: EmailSchedule, category: str
    ) -> None:
        assert not DIGEST[category]
        result = due(schedule, "2026-11-30T10:00:00Z", "ana", "Asia/Tokyo", delay=180, digest=False)
        assert result == "2026-11-30T10:03:00Z"


class TestHourly:
    def test_e2_hourly_is_the_persons_minute_and_second_after_the_delay(self) -> None:
        # ana's offset is 56:58.
        assert due(HOURLY, "2026-11-30T10:00:00Z", "ana", delay=180) == "2026-11-30T10:56:58Z"
        assert due(HOURLY, "2026-11-30T10:54:00Z", "ana", delay=180) == "2026-11-30T11:56:58Z"

    def test_e2_hourly_at_or_after_includes_the_slot_itself(self) -> None:
        assert due(HOURLY, "2026-11-30T10:53:58Z", "ana", delay=180) == "2026-11-30T10:56:58Z"
        assert due(HOURLY, "2026-11-30T10:53:58.5Z", "ana", delay=180) == "2026-11-30T11:56:58Z"

    def test_e2_hourly_ignores_the_zones(self) -> None:
        # The UTC minute and second, whatever the person's zone (Kathmandu is UTC+05:45).
        assert (
            due(HOURLY, "2026-11-30T10:00:00Z", "ana", "Asia/Kathmandu", delay=180)
            == "2026-11-30T10:56:58Z"
        )

    def test_e2_hourly_crosses_midnight_and_the_year(self) -> None:
        assert due(HOURLY, "2026-12-31T23:58:00Z", "ana", delay=180) == "2027-01-01T00:56:58Z"


class TestDaily:
    def test_e2_daily_at_the_local_hour_plus_the_offset(self) -> None:
        result = due(DAILY_9, "2026-11-30T10:00:00Z", "ana", "Asia/Tokyo", delay=180)
        assert result == "2026-12-01T00:56:58Z"

    def test_e2_daily_the_same_day_when_the_slot_is_still_ahead(self) -> None:
        p = person_with_offset(0)
        assert due(daily(9), "2026-11-30T06:00:00Z", p, "Europe/Berlin") == "2026-11-30T08:00:00Z"

    def test_e2_daily_crosses_midnight(self) -> None:
        p = person_with_offset(50 * 60)
        # 23:50 today has passed once the delay is counted: 23:50 tomorrow.
        assert due(daily(23), "2026-11-30T23:48:00Z", p, delay=180) == "2026-12-01T23:50:00Z"
        # The delay carries now past midnight: the slot of hour 0 is 00:50 the next day.
        assert due(daily(0), "2026-11-30T23:58:00Z", p, delay=180) == "2026-12-01T00:50:00Z"
        assert due(daily(0), "2026-12-01T00:49:00Z", p, delay=180) == "2026-12-02T00:50:00Z"

    def test_e2_berlin_spring_forward_gap_is_shifted_forward(self) -> None:
        # 2026-03-29 02:00 CET -> 03:00 CEST: 02:30 does not exist and is 03:30 CEST.
        p = person_with_offset(30 * 60)
        assert due(daily(2), "2026-03-28T23:00:00Z", p, "Europe/Berlin") == "2026-03-29T01:30:00Z"
        # The day after, 02:30 CEST again.
        assert due(daily(2), "2026-03-29T01:30:01Z", p, "Europe/Berlin") == "2026-03-30T00:30:00Z"

    def test_e2_berlin_fall_back_repeated_hour_is_the_earlier_instant(self) -> None:
        # 2026-10-25 03:00 CEST -> 02:00 CET: 02:30 happens at 00:30Z and 01:30Z.
        p = person_with_offset(30 * 60)
        assert due(daily(2), "2026-10-24T22:00:00Z", p, "Europe/Berlin") == "2026-10-25T00:30:00Z"
        # After the first 02:30 the second is never a slot: the next is 02:30 CET tomorrow.
        assert due(daily(2), "2026-10-25T00:40:00Z", p, "Europe/Berlin") == "2026-10-26T01:30:00Z"

    def test_e2_new_york_gap_and_repeated_hour(self) -> None:
        p = person_with_offset(15 * 60)
        # 2026-03-08 02:00 EST -> 03:00 EDT: 02:15 is 03:15 EDT = 07:15Z.
        assert (
            due(daily(2), "2026-03-08T05:00:00Z", p, "America/New_York") == "2026-03-08T07:15:00Z"
        )
        # 2026-11-01 02:00 EDT -> 01:00 EST: 01:15 EDT (05:15Z), not 01:15 EST (06:15Z).
        assert (
            due(daily(1), "2026-11-01T04:00:00Z", p, "America/New_York") == "2026-11-01T05:15:00Z"
        )
        assert (
            due(daily(1), "2026-11-01T05:20:00Z", p, "America/New_York") == "2026-11-02T06:15:00Z"
        )

    def test_e2_lord_howe_half_hour_gap_and_repeat(self) -> None:
        zone = "Australia/Lord_Howe"
        # 2026-10-04 02:00 +10:30 -> 02:30 +11: 02:10 is shifted by the 30-minute gap to 02:40.
        p = person_with_offset(10 * 60)
        assert due(daily(2), "2026-10-03T12:00:00Z", p, zone) == "2026-10-03T15:40:00Z"
        local = at("2026-10-03T15:40:00Z").astimezone(ZoneInfo(zone))
        assert (local.hour, local.minute) == (2, 40)
        # 2026-04-05 02:00 +11 -> 01:30 +10:30: 01:45 happens twice; the first (14:45Z) counts.
        q = person_with_offset(45 * 60)
        assert due(daily(1), "2026-04-04T12:00:00Z", q, zone) == "2026-04-04T14:45:00Z"
        assert due(daily(1), "2026-04-04T14:50:00Z", q, zone) == "2026-04-05T15:15:00Z"

    def test_e2_apia_skipped_day(self) -> None:
        # Samoa skipped 2011-12-30: 29 December -10:00 was followed by 31 December +14:00.
        p = person_with_offset(0)
        # 09:00 on the missing day is shifted forward by the 24-hour gap: 09:00 on the 31st.
        assert due(daily(9), "2011-12-29T20:00:00Z", p, "Pacific/Apia") == "2011-12-30T19:00:00Z"
        local = at("2011-12-30T19:00:00Z").astimezone(ZoneInfo("Pacific/Apia"))
        assert (local.date(), local.hour) == (date(2011, 12, 31), 9)
        # 23:00 on the 29th still exists; the next 23:00 is on the 31st (a day of 47 hours).
        assert due(daily(23), "2011-12-30T09:30:00Z", p, "Pacific/Apia") == "2011-12-31T09:00:00Z"
        assert due(daily(23), "2011-12-29T20:00:00Z", p, "Pacific/Apia") == "2011-12-30T09:00:00Z"

    def test_e2_nuuk_gap_just_before_midnight_keeps_the_slot_on_its_day(self) -> None:
        # 2026-03-28 23:00 -02 -> 2026-03-29 00:00 -01: 23:30 on the 28th does not exist and
        # is shifted past midnight, to 00:30 -01 on the 29th (01:30Z); an instant already on
        # the 29th must still find that slot of the day before (issue 41).
        p, zone = person_with_offset(30 * 60), "America/Nuuk"
        assert due(daily(23), "2026-03-28T22:00:00Z", p, zone) == "2026-03-29T01:30:00Z"
        assert due(daily(23), "2026-03-29T01:10:00Z", p, zone) == "2026-03-29T01:30:00Z"
        assert due(daily(23), "2026-03-29T01:30:00Z", p, zone) == "2026-03-29T01:30:00Z"
        # A second later, the 29th's own 23:30 -01.
        assert due(daily(23), "2026-03-29T01:30:01Z", p, zone) == "2026-03-30T00:30:00Z"
        local = at("2026-03-29T01:30:00Z").astimezone(ZoneInfo(zone))
        assert (local.date(), local.hour, local.minute) == (date(2026, 3, 29), 0, 30)

    def test_e2_zone_chain_person_then_site_then_utc(self) -> None:
        p = person_with_offset(0)
        now = "2026-11-30T00:00:00Z"
        assert due(daily(9), now, p, "Asia/Tokyo", "Europe/Berlin") == "2026-11-30T00:00:00Z"
        assert due(daily(9), now, p, None, "Europe/Berlin") == "2026-11-30T08:00:00Z"
        assert due(daily(9), now, p, "Mars/Olympus", "Europe/Berlin") == "2026-11-30T08:00:00Z"
        assert due(daily(9), now, p, "Local", "Nowhere") == "2026-11-30T09:00:00Z"
        assert due(daily(9), now, p) == "2026-11-30T09:00:00Z"
        assert mail_zone("", "posix/Europe/Berlin") is UTC

    def test_e2_input_in_any_offset(self) -> None:
        p = person_with_offset(0)
        assert due(daily(9), "2026-11-30T09:00:00+09:00", p, "Asia/Tokyo") == "2026-11-30T00:00:00Z"


class TestErrors:
    def test_e2_daily_without_an_hour_is_missing_daily_hour(self) -> None:
        with pytest.raises(InvalidSchedule) as info:
            EmailSchedule(schedule="daily")
        assert info.value.as_json() == {"code": "missing_daily_hour", "pointer": "/daily_hour"}

    @pytest.mark.parametrize("hour", [24, -1, True, 9.0, "9"])
    def test_e2_daily_hour_is_an_integer_0_to_23(self, hour: object) -> None:
        with pytest.raises(InvalidSchedule) as info:
            EmailSchedule(schedule="daily", daily_hour=hour)  # type: ignore[arg-type]
        assert info.value.code == "invalid_daily_hour"

    @pytest.mark.parametrize("name", ["weekly", "Daily", "", 1])
    def test_e2_unknown_schedule(self, name: object) -> None:
        with pytest.raises(InvalidSchedule) as info:
            EmailSchedule(schedule=name)
        assert info.value.as_json() == {"code": "unknown_schedule", "pointer": "/schedule"}

    def test_a_person_on_another_schedule_may_keep_a_daily_hour(self) -> None:
        assert EmailSchedule(schedule="hourly", daily_hour=7).schedule is Schedule.HOURLY

    def test_g2_naive_now(self) -> None:
        with pytest.raises(NaiveDatetime):
            email_after_for(HOURLY, datetime(2026, 11, 30), person="ana", digest=True)

    def test_negative_delay_and_wrong_types(self) -> None:
        now = at("2026-11-30T10:00:00Z")
        with pytest.raises(InvalidInput) as info:
            email_after_for(HOURLY, now, person="ana", digest=True, delay=timedelta(seconds=-1))
        assert info.value.code == "invalid_duration"
        with pytest.raises(UsageError):
            email_after_for("hourly", now, person="ana", digest=True)  # type: ignore[arg-type]
        with pytest.raises(UsageError):
            email_after_for(HOURLY, now, person="ana", digest="yes")  # type: ignore[arg-type]
        with pytest.raises(UsageError):
            email_after_for(HOURLY, now, person=1, digest=True)  # type: ignore[arg-type]

    def test_beyond_the_datetime_range(self) -> None:
        late = datetime(9999, 12, 31, 23, 58, tzinfo=UTC)
        with pytest.raises(InvalidInput) as info:
            email_after_for(daily(23), late, person="ana", digest=True)
        assert info.value.code == "instant_out_of_range"
        with pytest.raises(InvalidInput):
            email_after_for(IMMEDIATE, late, person="ana", digest=True, delay=timedelta(days=1))


# -- E2: properties -------------------------------------------------------------------------


def _wall(schedule: EmailSchedule, person: str) -> time:
    assert schedule.daily_hour is not None
    minute, second = divmod(slot_offset(person), 60)
    return time(schedule.daily_hour, minute, second)


def _earlier_instant(day: date, wall: time, zone: tzinfo) -> datetime:
    return datetime.combine(day, wall, tzinfo=zone).astimezone(UTC)


def _exists(day: date, wall: time, zone: tzinfo) -> bool:
    local = datetime.combine(day, wall, tzinfo=zone)
    return local.astimezone(UTC).astimezone(zone).replace(tzinfo=None) == local.replace(tzinfo=None)


@given(zone_and_now(), schedules, people, delays)
def test_e2_due_time_properties(
    zone_now: tuple[str, datetime], schedule: EmailSchedule, person: str, delay: timedelta
) -> None:
    zone_name, now = zone_now
    zone = ZoneInfo(zone_name)
    result = email_after_for(
        schedule, now, person=person, digest=True, time_zone=zone_name, delay=delay
    )
    # Elapsed time: a delay across a DST change is not wall-clock arithmetic in the zone.
    base = now.astimezone(UTC) + delay
    assert result.tzinfo is UTC
    assert result >= base
    if schedule.schedule is Schedule.IMMEDIATE:
        assert result == base
        return
    assert result.microsecond == 0, "slots are whole seconds"
    if schedule.schedule is Schedule.HOURLY:
        assert result - base < timedelta(hours=1)
        assert result.minute * 60 + result.second == slot_offset(person)
        return
    # Daily: within a day of base, plus the size of an offset change around it (a repeated
    # hour or a gap; a whole day at Apia).
    offsets = [t.astimezone(zone).utcoffset() for t in (base - timedelta(days=1), base, result)]
    spread = max(o for o in offsets if o is not None) - min(o for o in offsets if o is not None)
    assert result - base <= timedelta(days=1) + spread
    wall = _wall(schedule, person)
    local = result.astimezone(zone)
    # The slot is the earlier instant of h:mm:ss on its local day, or, when that wall time
    # does not exist on a day (a gap), that wall time shifted forward by the gap.
    candidates = [local.date() - timedelta(days=n) for n in (0, 1, 2)]
    sources = [d for d in candidates if _earlier_instant(d, wall, zone) == result]
    assert sources, "the slot is no h:mm:ss of any day"
    if local.time() != wall:
        assert all(not _exists(d, wall, zone) for d in sources)
    # It is the first: no day's slot lies in [base, result).
    first_day = base.astimezone(zone).date() - timedelta(days=2)
    for n in range((local.date() - first_day).days + 1):
        slot = _earlier_instant(first_day + timedelta(days=n), wall, zone)
        assert not base <= slot < result


@given(zone_and_now(), st.integers(min_value=0, max_value=23), people)
def test_e2_daily_never_uses_the_second_of_a_repeated_hour(
    zone_now: tuple[str, datetime], hour: int, person: str
) -> None:
    zone_name, now = zone_now
    zone = ZoneInfo(zone_name)
    result = email_after_for(daily(hour), now, person=person, digest=True, time_zone=zone_name)
    local = result.astimezone(zone)
    # fold=1 marks the second occurrence of a repeated wall time.
    assert local.fold == 0 or local.replace(fold=0).astimezone(UTC) == result


@given(schedules, people, st.sampled_from(sorted(DIGEST)), zone_and_now(), delays)
def test_e2_category_without_digest_is_immediate(
    schedule: EmailSchedule,
    person: str,
    category: str,
    zone_now: tuple[str, datetime],
    delay: timedelta,
) -> None:
    zone, now = zone_now
    result = email_after_for(
        schedule, now, person=person, digest=DIGEST[category], time_zone=zone, delay=delay
    )
    if not DIGEST[category] or schedule.schedule is Schedule.IMMEDIATE:
        assert result == now.astimezone(UTC) + delay


# -- E3: rescheduling -----------------------------------------------------------------------


def queued(
    entry: str, category: str, email: str = "pending", after: str | None = None
) -> QueuedEmail:
    return QueuedEmail(
        entry=entry,
        category=category,
        email=email,
        email_after=None if after is None else at(after),
    )


ENTRIES = [
    queued("ana:watched_page:p1:1", "watched_page", after="2026-12-01T08:56:58Z"),
    queued("ana:mention:c1:1", "mention", after="2026-11-30T10:03:00Z"),
    queued("ana:watched_page:p2:1", "watched_page", "sent"),
    queued("ana:watched_page:p3:1", "watched_page", "sending", after="2026-11-30T10:13:00Z"),
    queued("ana:page_created:p4:1", "page_created", after="2026-12-01T08:56:58Z"),
]
CHANGE = at("2026-11-30T12:00:00Z")


def run(
    old: EmailSchedule,
    new: EmailSchedule,
    old_zone: str | None = "Europe/Berlin",
    new_zone: str | None = "Europe/Berlin",
    entries: list[QueuedEmail] = ENTRIES,
) -> dict[str, datetime]:
    return reschedule(
        entries,
        person="ana",
        old=old,
        new=new,
        old_time_zone=old_zone,
        new_time_zone=new_zone,
        now=CHANGE,
        digest_categories=DIGEST_KEYS,
        delay=timedelta(seconds=180),
    )


class TestReschedule:
    def test_e3_daily_to_immediate_releases_pending_digest_entries(self) -> None:
        assert run(DAILY_9, IMMEDIATE) == {
            "ana:watched_page:p1:1": at("2026-11-30T12:03:00Z"),
            "ana:page_created:p4:1": at("2026-11-30T12:03:00Z"),
        }

    def test_e3_immediate_to_hourly_from_the_change_time(self) -> None:
        assert run(IMMEDIATE, HOURLY) == {
            "ana:watched_page:p1:1": at("2026-11-30T12:56:58Z"),
            "ana:page_created:p4:1": at("2026-11-30T12:56:58Z"),
        }

    def test_e3_daily_hour_change(self) -> None:
        moved = run(DAILY_9, daily(7))
        assert moved == {
            "ana:watched_page:p1:1": at("2026-12-01T06:56:58Z"),
            "ana:page_created:p4:1": at("2026-12-01T06:56:58Z"),
        }

    def test_e3_zone_change_of_a_daily_person(self) -> None:
        moved = run(DAILY_9, DAILY_9, "Europe/Berlin", "Asia/Tokyo")
        assert set(moved.values()) == {at("2026-12-01T00:56:58Z")}

    def test_e3_zone_or_hour_change_of_a_non_daily_person_changes_nothing(self) -> None:
        assert run(HOURLY, HOURLY, "Europe/Berlin", "Asia/Tokyo") == {}
        hourly_7 = EmailSchedule(schedule="hourly", daily_hour=7)
        assert run(HOURLY, hourly_7) == {}

    def test_e3_repeating_the_current_value_is_no_change(self) -> None:
        assert run(DAILY_9, daily(9)) == {}
        assert run(IMMEDIATE, IMMEDIATE) == {}

    def test_e3_an_unchanged_due_time_is_not_written(self) -> None:
        # p1 already falls due at the new slot: only p4, which differs, moves.
        entries = [*ENTRIES[:4], queued("p4", "page_created", after="2026-12-02T08:56:58Z")]
        assert run(DAILY_9, daily(9), "UTC", "Europe/Berlin", entries) == {
            "p4": at("2026-12-01T08:56:58Z")
        }

    def test_e3_each_entry_falls_back_to_its_own_sites_zone(self) -> None:
        entries = [
            QueuedEmail(entry="a", category="watched_page", email="pending"),
            QueuedEmail(
                entry="b", category="watched_page", email="pending", site_time_zone="Asia/Tokyo"
            ),
        ]
        assert run(IMMEDIATE, DAILY_9, None, None, entries) == {
            "a": at("2026-12-01T09:56:58Z"),
            "b": at("2026-12-01T00:56:58Z"),
        }

    def test_queued_email_refuses_a_naive_due_time(self) -> None:
        with pytest.raises(NaiveDatetime):
            QueuedEmail(
                entry="a", category="mention", email="pending", email_after=datetime(2026, 1, 1)
            )


_states = st.sampled_from(["none", "pending", "sending", "sent", "failed", "skipped"])


@given(
    st.lists(
        st.builds(
            QueuedEmail,
            entry=st.text(max_size=5),
            category=st.sampled_from(sorted(DIGEST)),
            email=_states,
            email_after=st.none() | st.datetimes(timezones=st.just(UTC)),
            site_time_zone=st.none() | st.sampled_from(["Asia/Tokyo", "Nowhere"]),
        ),
        unique_by=lambda q: q.entry,
        max_size=8,
    ),
    schedules,
    schedules,
    st.sampled_from([None, "Europe/Berlin", "Pacific/Apia"]),
    st.sampled_from([None, "Europe/Berlin", "Pacific/Apia"]),
)
def test_e3_only_pending_digest_entries_move_and_exactly_to_email_after_for(
    entries: list[QueuedEmail],
    old: EmailSchedule,
    new: EmailSchedule,
    old_zone: str | None,
    new_zone: str | None,
) -> None:
    moved = run(old, new, old_zone, new_zone, entries)
    changed = old.schedule is not new.schedule or (
        new.schedule is Schedule.DAILY and (old.daily_hour, old_zone) != (new.daily_hour, new_zone)
    )
    for q in entries:
        if q.entry not in moved:
            if changed and q.email == "pending" and DIGEST[q.category]:
                expected = email_after_for(
                    new,
                    CHANGE,
                    person="ana",
                    digest=True,
                    time_zone=new_zone,
                    site_time_zone=q.site_time_zone,
                    delay=timedelta(seconds=180),
                )
                assert q.email_after == expected
            continue
        assert changed and q.email == "pending" and DIGEST[q.category]
        assert moved[q.entry] != q.email_after
        assert moved[q.entry] == email_after_for(
            new,
            CHANGE,
            person="ana",
            digest=True,
            time_zone=new_zone,
            site_time_zone=q.site_time_zone,
            delay=timedelta(seconds=180),
        )
