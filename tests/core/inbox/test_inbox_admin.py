"""The pure decisions of a person's preference grid and the instance's settings
(notify_core.inbox.admin; docs/rules.md H2, H2a), H2a in a replay, and the property that the
purge never takes an entry whose email is still pending."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from inbox_log import WikiLog
from strategies_mail import mail_zones, people

from notify_core.events.log import EventError
from notify_core.inbox.admin import (
    MIN_DIGEST_RETENTION_DAYS,
    InstanceSettings,
    PreferenceState,
    audit_diff,
    check_delay,
    check_retention,
    preference_audit_json,
    preference_change,
    preference_grid,
    settings_change,
)
from notify_core.inbox.categories import CATEGORIES, Section
from notify_core.inbox.prefs import Delivery, InboxPrefs, InboxSettings
from notify_core.mail import EmailSchedule, email_after_for
from notify_core.replay.run import Replay
from notify_core.values.errors import InvalidInput

MAIL = InboxSettings(mail_configured=True)


def refused(call: object, *args: object, **kwargs: object) -> tuple[str, str | None]:
    assert callable(call)
    with pytest.raises(InvalidInput) as info:
        call(*args, **kwargs)
    return info.value.code, info.value.pointer


def test_h2a_the_grid_lays_sections_and_n4_over_the_choice_without_changing_it() -> None:
    state = PreferenceState(prefs=InboxPrefs().set("page_created", "email", True))
    settings = InboxSettings(mail_configured=True, sections={Section.EVERYTHING: Delivery.IN_APP})
    grid = preference_grid(state, settings, email_available=True)
    rows = {row["category"]: row for row in grid["categories"]}
    assert list(rows) == [c.key for c in CATEGORIES]
    assert rows["page_created"]["email"] == {
        "enabled": True,
        "default": False,
        "own": True,
        "effective": False,  # the section delivers in-app only (N3)
    }
    assert rows["watched_page"]["email"]["effective"] is True
    unavailable = preference_grid(state, settings, email_available=False)  # N4
    assert not any(row["email"]["effective"] for row in unavailable["categories"])
    assert [r["in_app"] for r in unavailable["categories"]] == [
        r["in_app"] for r in grid["categories"]
    ]
    assert grid["email_schedule"] == "immediate" and "daily_hour" not in grid


def test_h2_a_change_is_member_by_member_and_stop_all_email_comes_first() -> None:
    state = PreferenceState(prefs=InboxPrefs().set("mention", "in_app", False))
    new = preference_change(
        state,
        {"stop_all_email": True, "categories": {"mention": {"email": True}}},
        retention_days=60,
    )
    assert new.prefs.rows[("mention", "in_app")] is False  # not named: kept
    # Named after stop_all_email: back on, its default, so no row is stored (N2).
    assert ("mention", "email") not in new.prefs.rows
    assert new.prefs.choice(CATEGORIES[[c.key for c in CATEGORIES].index("mention")]).email
    assert new.prefs.rows[("watched_page", "email")] is False
    assert new.schedule == state.schedule
    hourly = preference_change(state, {"email_schedule": "hourly"}, retention_days=60)
    daily = preference_change(
        hourly, {"email_schedule": "daily", "daily_hour": 7}, retention_days=60
    )
    assert daily.schedule == EmailSchedule(schedule="daily", daily_hour=7)
    # The daily hour is kept when only the schedule changes back to daily later.
    again = preference_change(
        preference_change(daily, {"email_schedule": "immediate"}, retention_days=60),
        {"email_schedule": "daily"},
        retention_days=60,
    )
    assert again.schedule.daily_hour == 7


def test_h2a_schedule_and_retention_refuse_each_other() -> None:
    state = PreferenceState()
    assert refused(preference_change, state, {"email_schedule": "hourly"}, retention_days=1) == (
        "invalid_retention",
        "/email_schedule",
    )
    assert preference_change(state, {"email_schedule": "immediate"}, retention_days=1) == state
    assert refused(
        settings_change, InstanceSettings(), {"retention_days": 1}, digest_schedules=True
    ) == ("invalid_retention", "/retention_days")
    # Without a digest a retention of 1 day is refused all the same: it leaves no delay at all.
    assert refused(
        settings_change, InstanceSettings(), {"retention_days": 1}, digest_schedules=False
    ) == ("invalid_retention", "/retention_days")
    assert (
        settings_change(
            InstanceSettings(), {"retention_days": MIN_DIGEST_RETENTION_DAYS}, digest_schedules=True
        ).retention_days
        == 2
    )
    check_retention(1, False, "/x")
    assert refused(check_retention, 1, True, "/x") == ("invalid_retention", "/x")


def test_h2a_a_delay_at_or_above_retention_less_one_day_is_refused() -> None:
    """H2a: no pair of ``email_delay_s`` and ``retention_days`` lets the purge take a pending
    entry, whichever member the change moves; the refusal names the member the change holds
    (``/retention_days`` when it holds both)."""
    current = InstanceSettings()  # 180 s, 60 days
    both = {"retention_days": 2, "email_delay_s": 259_200}  # issue 38: three days, two
    assert refused(settings_change, current, both, digest_schedules=False) == (
        "invalid_retention",
        "/retention_days",
    )
    two_days = settings_change(current, {"retention_days": 2}, digest_schedules=False)
    for delay in (86_400, 86_401, 259_200):
        assert refused(
            settings_change, two_days, {"email_delay_s": delay}, digest_schedules=False
        ) == ("invalid_retention", "/email_delay_s")
    assert (
        settings_change(two_days, {"email_delay_s": 86_399}, digest_schedules=False).email_delay_s
        == 86_399
    )
    long_wait = settings_change(current, {"email_delay_s": 172_800}, digest_schedules=False)
    assert refused(settings_change, long_wait, {"retention_days": 3}, digest_schedules=False) == (
        "invalid_retention",
        "/retention_days",
    )
    assert settings_change(long_wait, {"retention_days": 4}, digest_schedules=False) == (
        InstanceSettings(email_delay_s=172_800, retention_days=4)
    )
    # A change of neither member is not weighed (the pair it keeps was accepted before).
    assert settings_change(long_wait, {"mail_batch_size": 7}, digest_schedules=False) == (
        InstanceSettings(email_delay_s=172_800, mail_batch_size=7)
    )
    check_delay(0, 2, "/x")
    check_delay(86_399, 2, "/x")
    for delay, days in ((86_400, 2), (0, 1), (10**9, 60)):
        assert refused(check_delay, delay, days, "/x") == ("invalid_retention", "/x")


def test_h2_settings_never_hold_the_secret_and_fill_every_section() -> None:
    value = InstanceSettings().as_json()
    assert set(value) == {"email_delay_s", "retention_days", "mail_batch_size", "sections"}
    assert value["sections"] == {
        "watching": "email",
        "discussions": "email",
        "reviews": "email",
        "everything": "email",
    }
    assert refused(
        settings_change, InstanceSettings(), {"unsubscribe_secret": "x"}, digest_schedules=False
    ) == ("unknown_member", "/unsubscribe_secret")


def test_h2_the_audit_records_only_what_changed() -> None:
    before = PreferenceState()
    after = preference_change(
        before, {"categories": {"mention": {"email": False}}}, retention_days=60
    )
    old, new = audit_diff(preference_audit_json(before), preference_audit_json(after))
    assert (old, new) == (
        {"categories": {"mention": {"email": True}}},
        {"categories": {"mention": {"email": False}}},
    )
    assert audit_diff(preference_audit_json(after), preference_audit_json(after)) == ({}, {})
    assert audit_diff({"a": 1}, {"a": 1, "b": 2}) == ({}, {"b": 2})


def test_h2a_in_a_replay_a_refused_event_is_a_bad_line_and_changes_nothing() -> None:
    """H2a in a replay: a retention under 2 days beside a digest, and a pair of delay and
    retention that lets the purge come first (issue 38), are bad lines that change nothing."""
    log = WikiLog().user("ana", email_schedule="hourly").user("ben")
    log.tick().add("notifications.settings", {"retention_days": 1})
    log.tick().add("user.updated", {"user": "ana", "email_schedule": "immediate"})
    log.tick().add("notifications.settings", {"retention_days": 1, "email_delay_s": 60})
    log.tick().add("notifications.settings", {"retention_days": 2, "email_delay_s": 259_200})
    log.tick().add("notifications.settings", {"retention_days": 2, "email_delay_s": 60})
    log.tick().add("notifications.settings", {"email_delay_s": 86_400})
    log.tick().add("notifications.settings", {"email_delay_s": 86_399})
    log.tick().add("notifications.settings", {"retention_days": 1})
    log.tick().add("user.updated", {"user": "ben", "email_schedule": "daily", "daily_hour": 6})
    run = Replay()
    errors = [item for item in run.run(log.lines()) if isinstance(item, EventError)]
    assert [(e.code, e.pointer) for e in errors] == [
        ("invalid_retention", "/payload/retention_days"),
        ("invalid_retention", "/payload/retention_days"),
        ("invalid_retention", "/payload/retention_days"),
        ("invalid_retention", "/payload/email_delay_s"),
        ("invalid_retention", "/payload/retention_days"),
    ]
    wiki = run.inbox.wiki
    assert wiki.retention_days == 2  # only the accepted events went through
    assert wiki.email_delay() == timedelta(seconds=86_399)
    assert wiki.user("ben").email_schedule == "daily"  # type: ignore[union-attr]


def test_h2a_in_a_replay_a_schedule_is_refused_while_retention_is_under_two_days() -> None:
    """H2a's other half, on a wiki whose retention is under 2 days (as a host's own write
    could leave it): a digest schedule is a bad line, a new person with one is not created."""
    log = WikiLog().user("ben")
    log.tick().add("user.updated", {"user": "ben", "email_schedule": "daily", "daily_hour": 6})
    log.tick().user("cy", email_schedule="hourly")
    run = Replay()
    run.inbox.wiki.retention_days = 1  # type: ignore[attr-defined]
    # Without the log's first settings line: its delay would be refused beside 1 day.
    errors = [item for item in run.run(log.lines()[1:]) if isinstance(item, EventError)]
    assert [(e.code, e.pointer) for e in errors] == [
        ("invalid_retention", "/payload/email_schedule"),
        ("invalid_retention", "/payload/email_schedule"),
    ]
    wiki = run.inbox.wiki
    assert wiki.user("ben").email_schedule == "immediate"  # type: ignore[union-attr]
    assert wiki.user("cy") is None


# The longest an entry's email can wait behind its last event: the retries of E5 (three
# attempts 600 s apart) on top of the due time.
RETRIES = timedelta(seconds=3 * 600)


@settings(max_examples=300, deadline=None)
@given(
    schedule=st.sampled_from(["immediate", "hourly", "daily"]),
    hour=st.integers(0, 23),
    person=people,
    zone=st.one_of(st.none(), mail_zones),
    now=st.datetimes(
        min_value=datetime(2011, 1, 1), max_value=datetime(2030, 1, 1), timezones=st.just(UTC)
    ),
    delay=st.integers(0, 12 * 3600),
    digest=st.booleans(),
)
def test_h2a_h3_the_purge_never_takes_a_pending_entry(
    schedule: str,
    hour: int,
    person: str,
    zone: str | None,
    now: datetime,
    delay: int,
    digest: bool,
) -> None:
    """With the least retention H2a allows for the person's schedule and an email delay of up
    to 12 hours (2 days: the delay stays under one day less than the retention), every due
    time (E2) falls before the purge could take the entry: the purge takes entries whose last
    event is older than the retention (H3), and the mail goes at its due time (or after its
    retries)."""
    email_schedule = EmailSchedule(schedule=schedule, daily_hour=hour)
    digests = schedule != "immediate"
    retention = 1
    while True:  # the least retention the instance accepts with this schedule and delay
        try:
            check_retention(retention, digests, "/retention_days")
            check_delay(delay, retention, "/retention_days")
            break
        except InvalidInput:
            retention += 1
    due = email_after_for(
        email_schedule,
        now,
        person=person,
        digest=digest,
        time_zone=zone,
        delay=timedelta(seconds=delay),
    )
    purged_from = now + timedelta(days=retention)  # the entry's updated_at is ``now``
    assert due + RETRIES < purged_from
