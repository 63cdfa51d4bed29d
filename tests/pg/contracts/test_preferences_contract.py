"""The contract of `PreferenceFacts` (levels, quiet rules, switches, following), on both twins.

The memory twin is `notify_core.hints.memory.preferences.MemoryPreferences`, learning rows,
rules and settings from ``notification_pref.updated``, ``quiet_hours.updated`` and
``settings.updated``; the PostgreSQL twin is `notify_pg.push.preferences.PgPreferences` on
notify's tables and the host's settings, which the loader writes from the same events.
Levels are compared as the pipeline uses them, through `resolve_level` (L6), and as the facts
themselves where both twins hold the same value.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hint_twins import Twin
from pgpipeline import START, Log

from notify_core.hints.decide import Switches
from notify_core.hints.levels import LevelFacts, Preference, resolve_level
from notify_core.hints.quiet import QuietRule

NOW = START + timedelta(hours=1)
MUTED_UNTIL = "2026-10-23T10:00:00Z"  # NOW exactly


def team() -> Log:
    """Alex, Sam, Robin, Owner, Lotse; space s, channel c, threads c-main and t; a DM d
    of Alex and Sam with thread dm-main."""
    log = Log().team()
    log.add("channel.created", {"channel": "d", "kind": "dm", "participants": ["alex", "sam"]})
    return log.add("thread.created", {"thread": "dm-main", "channel": "d", "main": True})


def setting(log: Log, user: str, key: str, value: object = None, *, deleted: bool = False) -> Log:
    payload: dict[str, object] = {"key": key}
    if deleted:
        payload["deleted"] = True
    else:
        payload["value"] = value
    return log.add("settings.updated", payload, actor=user, audience=user)


def levels(twin: Twin, thread: str, users: list[str]) -> dict[str, tuple[str, str]]:
    """Each person's effective level and its source at NOW (L6)."""
    facts = twin.prefs().level_facts(thread, users)
    assert list(facts) == users  # one entry per person asked, in order
    return {
        user: (resolved.level.value, resolved.source.value)
        for user, one in facts.items()
        for resolved in [resolve_level(one, NOW)]
    }


# --- levels (L3-L5) -----------------------------------------------------------------------


def test_l3_the_first_present_fact_wins_down_the_chain(hints_twin: Twin) -> None:
    """L3 (seed 000 TestEffectiveLevelOrder): own row for the thread, the channel, the space,
    the channel default, ``all`` in a DM, the personal default, the instance default: each
    person shows one step."""
    log = team()
    log.pref("alex", "thread", "t", "mute").pref("alex", "channel", "c", "all")
    log.pref("sam", "channel", "c", "all").pref("sam", "space", "s", "mute")
    log.pref("robin", "space", "s", "all")
    setting(log, "owner", "notify.default_level", "mute")
    hints_twin.feed(log.events)
    assert levels(hints_twin, "t", ["alex", "sam", "robin", "owner", "lotse"]) == {
        "alex": ("mute", "thread"),
        "sam": ("all", "channel"),
        "robin": ("all", "space"),
        "owner": ("mute", "personal_default"),
        "lotse": ("mentions", "instance_default"),
    }
    assert levels(hints_twin, "dm-main", ["alex", "owner"]) == {
        "alex": ("all", "direct_message"),
        "owner": ("all", "direct_message"),
    }


def test_l3_the_facts_are_the_rows_and_defaults_of_each_person(hints_twin: Twin) -> None:
    """L3: `LevelFacts` holds exactly the seven facts; people without rows or a default of
    their own get the channel's and the instance's facts only."""
    log = team().pref("alex", "thread", "t", "mute").pref("alex", "space", "s", "all")
    log.add("channel.updated", {"channel": "c", "default_notification_level": "mentions"})
    setting(log, "alex", "notify.default_level", "all")
    hints_twin.feed(log.events)
    facts = hints_twin.prefs().level_facts("t", ["alex", "sam", "ghost"])
    assert facts["alex"] == LevelFacts(
        thread=Preference(level="mute"),
        space=Preference(level="all"),
        channel_default="mentions",
        personal_default="all",
        instance_default="mentions",
    )
    plain = LevelFacts(channel_default="mentions", instance_default="mentions")
    assert facts["sam"] == facts["ghost"] == plain


def test_l3_a_channel_default_comes_before_the_dm_step(hints_twin: Twin) -> None:
    log = team().add("channel.updated", {"channel": "d", "default_notification_level": "mute"})
    hints_twin.feed(log.events)
    assert levels(hints_twin, "dm-main", ["alex"]) == {"alex": ("mute", "channel_default")}


def test_l3_a_deleted_row_uncovers_the_next_fact(hints_twin: Twin) -> None:
    log = team().pref("alex", "thread", "t", "mute").pref("alex", "channel", "c", "all")
    deleted = {"target": {"kind": "thread", "id": "t"}, "level": "mute", "version": 2}
    log.add(
        "notification_pref.updated",
        {"preference": deleted, "deleted": True},
        actor="alex",
        audience="alex",
    )
    hints_twin.feed(log.events)
    assert levels(hints_twin, "t", ["alex"]) == {"alex": ("all", "channel")}


def test_l4_muted_until_of_the_selected_row_only_and_not_at_exactly_now(
    hints_twin: Twin,
) -> None:
    """L4 (seed 000 TestEffectiveLevel_MutedUntil): a row muted until after now is ``mute``
    with its ``muted_until``; muted until exactly now, its own level applies; a mute further
    down the chain has no effect."""
    later = "2026-10-23T10:00:01Z"
    log = team().pref("alex", "thread", "t", "all", muted_until=later)
    log.pref("sam", "thread", "t", "all", muted_until=MUTED_UNTIL)
    log.pref("robin", "channel", "c", "mentions").pref(
        "robin", "space", "s", "all", muted_until=later
    )
    hints_twin.feed(log.events)
    facts = hints_twin.prefs().level_facts("t", ["alex", "sam", "robin"])
    alex = resolve_level(facts["alex"], NOW)
    assert (alex.level.value, alex.source.value) == ("mute", "thread")
    assert alex.muted_until == NOW + timedelta(seconds=1)
    assert facts["alex"].thread == Preference(level="all", muted_until=NOW + timedelta(seconds=1))
    sam = resolve_level(facts["sam"], NOW)
    assert (sam.level.value, sam.source.value, sam.muted_until) == ("all", "thread", None)
    robin = resolve_level(facts["robin"], NOW)
    assert (robin.level.value, robin.source.value) == ("mentions", "channel")


def test_l5_a_personal_default_that_is_not_a_level_counts_as_unset(hints_twin: Twin) -> None:
    log = team()
    setting(log, "alex", "notify.default_level", "loud")
    setting(log, "sam", "notify.default_level", 7)
    hints_twin.feed(log.events)
    assert levels(hints_twin, "t", ["alex", "sam"]) == {
        "alex": ("mentions", "instance_default"),
        "sam": ("mentions", "instance_default"),
    }


def test_l3_an_unknown_thread_gives_the_instance_default(hints_twin: Twin) -> None:
    hints_twin.feed(team().events)
    assert levels(hints_twin, "t-unknown", ["alex", "ghost"]) == {
        "alex": ("mentions", "instance_default"),
        "ghost": ("mentions", "instance_default"),
    }


def test_l3_no_people_no_facts(hints_twin: Twin) -> None:
    hints_twin.feed(team().events)
    assert hints_twin.prefs().level_facts("t", []) == {}


# --- quiet rules (Q1, Q4) -----------------------------------------------------------------


def quiet(log: Log, user: str, *rules: dict[str, object]) -> Log:
    return log.add("quiet_hours.updated", {"rules": list(rules)}, actor=user, audience=user)


NIGHT = {"weekdays": 127, "start_local": "22:00", "end_local": "07:00", "enabled": True}


def enabled(rules: dict[str, tuple[QuietRule, ...]]) -> dict[str, tuple[QuietRule, ...]]:
    """The rules that can cover an instant (Q4: only enabled ones); a twin may leave the
    others out, and a person without any is as one absent."""
    out = {user: tuple(r for r in mine if r.enabled) for user, mine in rules.items()}
    return {user: mine for user, mine in out.items() if mine}


def test_q1_quiet_rules_of_many_people_the_latest_update_wins(hints_twin: Twin) -> None:
    """Q1: a person's rules are those of their latest ``quiet_hours.updated``, with their
    own zone or none; people without rules are absent."""
    log = team()
    quiet(log, "alex", {**NIGHT, "time_zone": "Europe/Berlin"})
    quiet(log, "sam", NIGHT)
    quiet(log, "sam", {**NIGHT, "start_local": "23:00", "weekdays": 31})
    hints_twin.feed(log.events)
    got = hints_twin.prefs().quiet_rules(["alex", "sam", "robin", "ghost"])
    assert got == {
        "alex": (
            QuietRule(
                weekdays=127, start_local="22:00", end_local="07:00", time_zone="Europe/Berlin"
            ),
        ),
        "sam": (QuietRule(weekdays=31, start_local="23:00", end_local="07:00"),),
    }


def test_q4_disabled_and_cleared_rules_never_count(hints_twin: Twin) -> None:
    """Q4: a disabled rule covers nothing; an update without rules clears them."""
    log = team()
    quiet(log, "alex", {**NIGHT, "enabled": False}, {**NIGHT, "start_local": "21:00"})
    quiet(log, "sam", NIGHT)
    quiet(log, "sam")
    hints_twin.feed(log.events)
    got = enabled(hints_twin.prefs().quiet_rules(["alex", "sam"]))
    assert got == {"alex": (QuietRule(weekdays=127, start_local="21:00", end_local="07:00"),)}


# --- switches (D3, D7) --------------------------------------------------------------------


def test_d3_d7_switches_are_booleans_and_anything_else_is_unset(hints_twin: Twin) -> None:
    """D3, D7: ``notify.admin_enabled`` and ``notify.input_needed_breaks_quiet_hours``; a
    stored value that is not a boolean counts as unset; a deleted setting is gone; people
    with neither switch are absent."""
    log = team()
    setting(log, "alex", "notify.admin_enabled", False)
    setting(log, "sam", "notify.input_needed_breaks_quiet_hours", True)
    setting(log, "sam", "notify.admin_enabled", "no")
    setting(log, "robin", "notify.admin_enabled", True)
    setting(log, "robin", "notify.admin_enabled", deleted=True)
    setting(log, "owner", "notify.default_level", "all")
    hints_twin.feed(log.events)
    got = hints_twin.prefs().switches(["alex", "sam", "robin", "owner", "ghost"])
    assert got == {
        "alex": Switches(admin_enabled=False),
        "sam": Switches(input_needed_breaks_quiet_hours=True),
    }


# --- following (S5) -----------------------------------------------------------------------


def test_s5_follow_inserts_a_row_all_once(hints_twin: Twin) -> None:
    """S5: following gives a row ``all`` for the thread when the person has none (True),
    and nothing the second time (False); the row then decides the level."""
    hints_twin.feed(team().events)
    prefs = hints_twin.prefs()
    assert prefs.follow("alex", "t")
    assert not prefs.follow("alex", "t")
    assert not hints_twin.prefs().follow("alex", "t")  # the next round finds it too
    assert levels(hints_twin, "t", ["alex"]) == {"alex": ("all", "thread")}


def test_s5_follow_never_overwrites_an_own_row(hints_twin: Twin) -> None:
    later = "2026-10-23T12:00:00Z"
    log = team().pref("alex", "thread", "t", "mute").pref("sam", "thread", "t", "all")
    log.pref("robin", "thread", "t", "mentions", muted_until=later)
    hints_twin.feed(log.events)
    prefs = hints_twin.prefs()
    prefs.level_facts("t", ["alex"])  # read in the round before (PostgreSQL holds it)
    assert [prefs.follow(user, "t") for user in ("alex", "sam", "robin")] == [False] * 3
    facts = hints_twin.prefs().level_facts("t", ["alex", "sam", "robin"])
    assert facts["robin"].thread == Preference(
        level="mentions", muted_until=datetime(2026, 10, 23, 12, tzinfo=UTC)
    )
    assert levels(hints_twin, "t", ["alex", "sam", "robin"]) == {
        "alex": ("mute", "thread"),
        "sam": ("all", "thread"),
        "robin": ("mute", "thread"),
    }


def test_s5_a_followed_row_is_answered_in_the_same_round(hints_twin: Twin) -> None:
    """The round that follows a thread reads the new row for the next event (PostgreSQL
    keeps the level facts it read: following updates them)."""
    hints_twin.feed(team().events)
    prefs = hints_twin.prefs()
    before = prefs.level_facts("t", ["alex", "sam"])
    assert before["alex"].thread is None
    assert prefs.follow("alex", "t")
    after = prefs.level_facts("t", ["alex", "sam"])
    assert after["alex"].thread == Preference(level="all")
    assert after["sam"] == before["sam"]
