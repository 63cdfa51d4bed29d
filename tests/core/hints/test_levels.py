"""Levels: rules L1-L7."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from notify_core.hints.levels import (
    Level,
    LevelFacts,
    LevelSource,
    Preference,
    Target,
    TargetKind,
    effective,
    parse_level,
    preference_unchanged,
    resolve_level,
)
from notify_core.values.errors import InvalidLevel, NaiveDatetime, UsageError
from tests import strategies as s

NOW = datetime(2026, 10, 23, 12, tzinfo=UTC)
CHAIN = ("thread", "channel", "space", "channel_default", "direct_message", "personal_default")


class TestValues:
    """L1, L2: levels, targets and preference rows."""

    @pytest.mark.parametrize("bad", ["ALL", "none", "", "loud", None, 1, True])
    def test_l1_levels_are_exactly_three(self, bad: object) -> None:
        with pytest.raises(InvalidLevel) as err:
            parse_level(bad)
        assert err.value.code == "invalid_level"
        assert [level.value for level in Level] == ["all", "mentions", "mute"]

    @pytest.mark.parametrize("field", ["channel_default", "instance_default"])
    def test_l1_defaults_must_be_levels(self, field: str) -> None:
        with pytest.raises(InvalidLevel) as err:
            LevelFacts(**{field: "loud"})  # type: ignore[arg-type]
        assert err.value.pointer == f"/{field}"

    def test_l1_row_level_must_be_a_level(self) -> None:
        with pytest.raises(InvalidLevel):
            Preference(level="everything")  # type: ignore[arg-type]

    def test_l1_target_kinds(self) -> None:
        assert [k.value for k in TargetKind] == ["space", "channel", "thread"]
        assert Target(kind="thread", id="t-1").kind is TargetKind.THREAD  # type: ignore[arg-type]
        with pytest.raises(InvalidLevel) as err:
            Target(kind="message", id="m-1")  # type: ignore[arg-type]
        assert (err.value.code, err.value.pointer) == ("invalid_target_kind", "/kind")

    def test_l2_muted_until_must_be_aware(self) -> None:
        with pytest.raises(NaiveDatetime):
            Preference(level=Level.ALL, muted_until=datetime(2026, 1, 1))

    def test_l5_unknown_personal_default_counts_as_unset(self) -> None:
        facts = LevelFacts(personal_default="loud", instance_default="all")  # type: ignore[arg-type]
        assert facts.personal_default is None
        assert resolve_level(facts, NOW).source is LevelSource.INSTANCE_DEFAULT

    def test_g3_values_are_frozen(self) -> None:
        facts = LevelFacts()
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            facts.direct_message = True  # type: ignore[misc]


class TestErrors:
    """What an invalid level, target or instant says: code, message and pointer."""

    @pytest.mark.parametrize("bad", ["loud", 3, ["all"]])
    def test_l1_a_bad_level_names_itself_and_no_member_by_default(self, bad: object) -> None:
        with pytest.raises(InvalidLevel) as err:
            parse_level(bad)
        assert (err.value.code, err.value.message, err.value.pointer) == (
            "invalid_level",
            f"not a level: {bad!r}",
            "",
        )

    def test_l1_a_row_level_points_at_level(self) -> None:
        with pytest.raises(InvalidLevel) as err:
            Preference(level="everything")  # type: ignore[arg-type]
        assert (err.value.message, err.value.pointer) == ("not a level: 'everything'", "/level")

    def test_l1_a_bad_target_kind_says_so(self) -> None:
        with pytest.raises(InvalidLevel) as err:
            Target(kind="message", id="m-1")  # type: ignore[arg-type]
        assert err.value.message == "not a target kind: 'message'"

    def test_l5_a_personal_default_that_is_no_text_counts_as_unset(self) -> None:
        facts = LevelFacts(personal_default=["all"], instance_default="mute")  # type: ignore[arg-type]
        assert facts.personal_default is None

    def test_g2_instants_name_the_field_at_fault(self) -> None:
        with pytest.raises(NaiveDatetime) as naive:
            Preference(level="all", muted_until=datetime(2026, 1, 1))
        assert naive.value.message.startswith("muted_until is a naive datetime")
        with pytest.raises(NaiveDatetime) as now:
            resolve_level(LevelFacts(), datetime(2026, 10, 23))
        assert now.value.message.startswith("now is a naive datetime")
        with pytest.raises(UsageError) as wrong:
            resolve_level(LevelFacts(), "2026-10-23")  # type: ignore[arg-type]
        assert wrong.value.message == "now must be a datetime, not str"


class TestResolve:
    """L3, L4, L6: the chain and temporary mutes."""

    @pytest.mark.parametrize(
        ("delta", "muted"),
        [(timedelta(seconds=-1), False), (timedelta(0), False), (timedelta(seconds=1), True)],
    )
    def test_l4_the_fast_path_ends_a_mute_exactly_at_its_end(
        self, delta: timedelta, muted: bool
    ) -> None:
        for row in ("thread", "channel", "space"):
            facts = LevelFacts(**{row: Preference(level="all", muted_until=NOW + delta)})  # type: ignore[arg-type]
            assert effective(facts, NOW) is (Level.MUTE if muted else Level.ALL), row
            assert resolve_level(facts, NOW).level is effective(facts, NOW)

    @given(data=st.data(), now=s.moments)
    def test_l3_l4_the_fast_path_answers_as_resolve_level(
        self, data: st.DataObject, now: datetime
    ) -> None:
        facts = data.draw(s.level_facts_at(s.near(now)))
        assert effective(facts, now) is resolve_level(facts, now).level

    def test_l3_full_chain_in_order(self) -> None:
        facts = LevelFacts(
            thread=Preference(level="mute"),
            channel=Preference(level="all"),
            space=Preference(level="mentions"),
            channel_default="all",
            direct_message=True,
            personal_default="mentions",
            instance_default="all",
        )
        expected = [
            ("mute", "thread"),
            ("all", "channel"),
            ("mentions", "space"),
            ("all", "channel_default"),
            ("all", "direct_message"),
            ("mentions", "personal_default"),
            ("all", "instance_default"),
        ]
        seen = []
        for name in (*CHAIN, None):
            result = resolve_level(facts, NOW)
            seen.append((result.level.value, result.source.value))
            if name is not None:
                facts = attrs.evolve(facts, **{name: False if name == "direct_message" else None})
        assert seen == expected

    def test_l3_direct_message_gives_all(self) -> None:
        result = resolve_level(LevelFacts(direct_message=True, instance_default="mute"), NOW)
        assert (result.level, result.source) == (Level.ALL, LevelSource.DIRECT_MESSAGE)

    def test_l4_temporary_mute_while_it_lasts(self) -> None:
        row = Preference(level="all", muted_until=NOW + timedelta(hours=1))
        result = resolve_level(LevelFacts(thread=row), NOW)
        assert (result.level, result.source, result.muted_until) == (
            Level.MUTE,
            LevelSource.THREAD,
            NOW + timedelta(hours=1),
        )

    @pytest.mark.parametrize("delta", [timedelta(0), -timedelta(microseconds=1)])
    def test_l4_mute_over_at_or_before_now(self, delta: timedelta) -> None:
        row = Preference(level="mentions", muted_until=NOW + delta)
        result = resolve_level(LevelFacts(channel=row), NOW)
        assert (result.level, result.source, result.muted_until) == (
            Level.MENTIONS,
            LevelSource.CHANNEL,
            None,
        )

    def test_l4_only_the_selected_rows_mute_matters(self) -> None:
        facts = LevelFacts(
            thread=Preference(level="all"),
            channel=Preference(level="all", muted_until=NOW + timedelta(days=1)),
        )
        assert resolve_level(facts, NOW).level is Level.ALL

    def test_l6_sources_are_the_seven_facts(self) -> None:
        assert [source.value for source in LevelSource] == [*CHAIN, "instance_default"]

    def test_g2_naive_now(self) -> None:
        with pytest.raises(NaiveDatetime):
            resolve_level(LevelFacts(), datetime(2026, 10, 23))

    @given(facts=s.level_facts, now=s.moments)
    def test_l3_removing_the_first_present_source_yields_the_next(
        self, facts: LevelFacts, now: datetime
    ) -> None:
        first = resolve_level(facts, now)
        if first.source is LevelSource.INSTANCE_DEFAULT:
            assert first.level is facts.instance_default
            return
        removed = attrs.evolve(
            facts,
            **{first.source.value: False if first.source is LevelSource.DIRECT_MESSAGE else None},
        )
        after = resolve_level(removed, now)
        order = list(LevelSource)
        assert order.index(after.source) > order.index(first.source)
        skipped = order[order.index(first.source) + 1 : order.index(after.source)]
        for source in skipped:
            value = getattr(removed, source.value)
            assert value in (None, False)

    @given(facts=s.level_facts, now=s.moments)
    def test_l4_mute_answer_carries_muted_until_after_now(
        self, facts: LevelFacts, now: datetime
    ) -> None:
        result = resolve_level(facts, now)
        if result.muted_until is not None:
            assert result.level is Level.MUTE and result.muted_until > now
            assert result.source in (LevelSource.THREAD, LevelSource.CHANNEL, LevelSource.SPACE)


class TestUnchanged:
    """L7: equal level and equal muted_until (microseconds), both absent equal."""

    def test_l7_equal_rows(self) -> None:
        a = Preference(level="all", muted_until=NOW)
        b = Preference(
            level="all", muted_until=NOW.astimezone(__import__("zoneinfo").ZoneInfo("Asia/Tokyo"))
        )
        assert preference_unchanged(a, b)
        assert preference_unchanged(Preference(level="mute"), Preference(level="mute"))
        assert preference_unchanged(None, None)

    def test_l7_different_rows(self) -> None:
        a = Preference(level="all", muted_until=NOW)
        assert not preference_unchanged(
            a, Preference(level="all", muted_until=NOW + timedelta(microseconds=1))
        )
        assert not preference_unchanged(a, Preference(level="all"))
        assert not preference_unchanged(a, Preference(level="mute", muted_until=NOW))
        assert not preference_unchanged(a, None)

    @given(a=s.preferences, b=s.preferences)
    def test_l7_is_symmetric_and_matches_equality(self, a: Preference, b: Preference) -> None:
        assert preference_unchanged(a, b) == preference_unchanged(b, a) == (a == b)


@given(level=st.sampled_from(list(Level)))
def test_l1_levels_parse_from_their_text(level: Level) -> None:
    assert parse_level(level.value) is level
