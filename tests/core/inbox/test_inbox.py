"""The inbox core (rules N1-N12, E1): registry, preferences, access, fan-out, coalescing."""

from __future__ import annotations

from datetime import timedelta

import attrs
import pytest
import strategies_inbox as si
from hypothesis import given
from hypothesis import strategies as st

from notify_core.inbox import (
    CATEGORIES,
    CATEGORY_BY_KEY,
    Delivery,
    EmailState,
    Group,
    InboxEvent,
    InboxPrefs,
    InboxSettings,
    InboxSkip,
    Match,
    PageFacts,
    Permission,
    PersonFacts,
    Rule,
    Section,
    categories_for,
    channels_for,
    coalesce,
    event_variant,
    fan_out,
    holds,
    read,
)
from notify_core.inbox.fanout import EntryDecision, SkipDecision, firing
from notify_core.values.errors import InvalidInput, UsageError

READERS = Group(
    rules=(
        Rule(permission=Permission.READ_PAGES, match=Match.ALL),
        Rule(permission=Permission.READ_COMMENTS, match=Match.ALL),
    )
)
PAGE = PageFacts(path="ops/runbook")


class TestRegistry:
    """N1: the seven launch categories as data."""

    def test_n1_the_launch_table(self) -> None:
        rows = {
            c.key: (c.priority, c.section.value, c.defaults.in_app, c.digest, c.key_prefix)
            for c in CATEGORIES
        }
        assert rows == {
            "watched_page": (20, "watching", True, True, "watched_page"),
            "review_requested": (25, "reviews", True, False, "review"),
            "watched_page_comment": (10, "watching", True, True, "watched_comment"),
            "comment_reply": (30, "discussions", True, False, "reply"),
            "mention": (40, "discussions", True, False, "mention"),
            "page_created": (5, "everything", False, True, "page_created"),
            "page_deleted": (5, "everything", False, True, "page_deleted"),
        }
        assert all(c.defaults.in_app == c.defaults.email for c in CATEGORIES)
        assert CATEGORY_BY_KEY["review_requested"].access is None
        assert len(CATEGORY_BY_KEY["watched_page"].origins) == 3

    def test_n1_categories_of_an_event_come_highest_priority_first(self) -> None:
        keys = [c.key for c in categories_for("comment.created")]
        assert keys == ["mention", "comment_reply", "watched_page_comment"]
        assert categories_for("page.viewed") == ()

    def test_n1_group_keys_and_variants(self) -> None:
        ids = {"page": "p1", "comment": "c1", "parent": "c0", "submission": "sub1"}
        keys = {c.key: c.group_key(ids) for c in CATEGORIES}
        assert keys["watched_page_comment"] == "watched_comment:p1"
        assert keys["comment_reply"] == "reply:c0"
        assert keys["review_requested"] == "review:sub1"
        assert keys["mention"] == "mention:c1"
        assert event_variant("page.renamed") == "moved"
        assert event_variant("page.edited") == "edited"
        assert event_variant("page.edited", "published") == "published"
        assert event_variant("submission.updated") == "updated"


class TestPreferences:
    """N2: rows only where they differ from the defaults; stop all email."""

    def test_n2_setting_back_to_the_default_deletes_the_row(self) -> None:
        prefs = InboxPrefs().set("watched_page", "email", False)
        assert prefs.rows == {("watched_page", "email"): False}
        assert prefs.set("watched_page", "email", True).rows == {}
        assert InboxPrefs().set("page_created", "in_app", False).rows == {}

    def test_n2_stop_all_email_covers_every_category(self) -> None:
        prefs = InboxPrefs().set("page_created", "email", True).stop_all_email()
        assert all(not prefs.choice(c).email for c in CATEGORIES)
        assert ("page_created", "email") not in prefs.rows  # off is its default: no row

    def test_n2_unknown_category_or_channel_is_refused(self) -> None:
        with pytest.raises(InvalidInput) as error:
            InboxPrefs().set("nope", "email", True)
        assert error.value.code == "unknown_category"
        with pytest.raises(InvalidInput) as error:
            InboxPrefs().set("mention", "sms", True)
        assert error.value.code == "unknown_channel"

    @given(si.prefs())
    def test_n2_no_stored_row_equals_its_default(self, prefs: InboxPrefs) -> None:
        for (category, channel), enabled in prefs.rows.items():
            assert enabled != getattr(CATEGORY_BY_KEY[category].defaults, channel)


class TestAccess:
    """N8: deny wins, manage_system grants everything, prefixes are plain strings."""

    def test_n8_deny_in_another_group_wins(self) -> None:
        deny = Group(
            rules=(
                Rule(
                    permission=Permission.READ_PAGES,
                    match=Match.PATH_PREFIX,
                    value="ops/",
                    deny=True,
                ),
            )
        )
        known = {"readers": READERS, "deny": deny, "admins": Group(manage_system=True)}
        assert holds(frozenset({"readers"}), known, Permission.READ_PAGES, PAGE)
        assert not holds(frozenset({"readers", "deny"}), known, Permission.READ_PAGES, PAGE)
        assert holds(frozenset({"deny", "admins"}), known, Permission.READ_PAGES, PAGE)
        assert not holds(frozenset({"unknown"}), known, Permission.READ_PAGES, PAGE)

    def test_n8_a_rule_that_needs_a_value_refuses_none(self) -> None:
        with pytest.raises(InvalidInput):
            Rule(permission=Permission.READ_PAGES, match=Match.TAG)

    def test_n7_access_is_evaluated_once_per_group_set(self) -> None:
        people = {
            f"p{i}": PersonFacts(groups=frozenset({"readers"} if i % 2 else {"x"}))
            for i in range(100)
        }
        event = InboxEvent(id="ev1", type="page.edited", actor="zed", page=PAGE)
        result = fan_out(
            event, {"watched_page": list(people)}, people, {"readers": READERS}, InboxSettings()
        )
        assert result.access_evaluations == 2
        assert len(result.entries) == 50
        assert {s.reason for s in result.skips} == {InboxSkip.NO_ACCESS}


class TestFanOutProperties:
    """N6-N8 as properties over random events, candidates, people, groups and settings."""

    @given(si.events, si.candidates, si.people, si.groups, si.settings)
    def test_n7_actor_never_recipient_and_one_entry_per_person(
        self, event, candidates, people, groups, settings
    ) -> None:  # type: ignore[no-untyped-def]
        result = fan_out(event, candidates, people, groups, settings)
        recipients = [e.recipient for e in result.entries]
        assert event.actor not in recipients
        assert len(recipients) == len(set(recipients))
        assert recipients == sorted(recipients)
        for entry in result.entries:
            facts = people[entry.recipient]
            assert facts.recipient
            assert entry.in_app or entry.email
            if entry.email:  # N4
                assert settings.mail_configured and facts.verified and facts.email
            delivery = settings.delivery(entry.category.section)
            assert delivery is not Delivery.OFF
            assert not (entry.email and delivery is Delivery.IN_APP)
            # N8: nobody without access gets an entry.
            if entry.category.access is not None:
                assert event.page is not None
                assert holds(facts.groups, groups, entry.category.access, event.page)
            # N7: the entry is the highest priority category that reached the person.
            for skip in result.skips:
                if skip.recipient == entry.recipient and skip.reason is InboxSkip.LOWER_PRIORITY:
                    assert skip.category.priority <= entry.category.priority

    @given(
        si.events, si.candidates, si.people, si.groups, si.settings, st.sampled_from(list(Section))
    )
    def test_n3_a_section_off_and_on_again_restores_every_choice(
        self, event, candidates, people, groups, settings, section
    ) -> None:  # type: ignore[no-untyped-def]
        before = fan_out(event, candidates, people, groups, settings)
        off = attrs.evolve(settings, sections={**settings.sections, section: Delivery.OFF})
        during = fan_out(event, candidates, people, groups, off)
        assert all(e.category.section is not section for e in during.entries)
        after = fan_out(event, candidates, people, groups, settings)
        assert after == before
        for person, facts in people.items():
            assert facts.prefs is people[person].prefs  # never written into

    @given(si.events, si.candidates, si.people, si.groups, si.settings, st.randoms())
    def test_n6_n8_the_decisions_of_a_plain_model_whatever_the_candidates_order(
        self, event, candidates, people, groups, settings, random
    ) -> None:  # type: ignore[no-untyped-def]
        # `fan_out` takes each candidate once in recipient order (a sort, not a dict): the
        # same decisions as the rules read one by one, with candidates shuffled and repeated.
        shuffled = {}
        for key, listed in candidates.items():
            again = [*listed, *random.sample(listed, len(listed) // 2)]
            random.shuffle(again)
            shuffled[key] = again
        result = fan_out(event, shuffled, people, groups, settings)
        assert (list(result.entries), list(result.skips)) == plain_fan_out(
            event, candidates, people, groups, settings
        )


def plain_fan_out(event, candidates, people, groups, settings):  # type: ignore[no-untyped-def]
    """N6-N9 read one by one, without `fan_out`'s shortcuts: the model of its decisions."""
    entries, skips, reached = [], [], set()
    for category in firing(event):
        listed = candidates.get(category.key, [])
        delivery = settings.delivery(category.section)
        for person in dict.fromkeys(listed):
            facts = people.get(person)
            if category.key == "mention" and person in event.previous_mentions:
                continue
            if person == event.actor:
                reason = InboxSkip.ACTOR
            elif facts is None or not facts.recipient:
                reason = InboxSkip.INACTIVE
            elif category.access is not None and not (
                event.page is not None and holds(facts.groups, groups, category.access, event.page)
            ):
                reason = InboxSkip.NO_ACCESS
            elif delivery is Delivery.OFF:
                reason = InboxSkip.SECTION_OFF
            else:
                possible = settings.mail_configured and facts.verified and bool(facts.email)
                choice = channels_for(category, facts.prefs, delivery, possible)
                if not (choice.in_app or choice.email):
                    reason = InboxSkip.PREFERENCE
                elif person in reached:
                    reason = InboxSkip.LOWER_PRIORITY
                else:
                    reached.add(person)
                    entries.append(EntryDecision(person, category, choice.in_app, choice.email))
                    continue
            skips.append(SkipDecision(person, category, reason))
    entries.sort(key=lambda e: e.recipient)
    skips.sort(key=lambda s: (s.recipient, s.category.key))
    return entries, skips


def entry_after(events: list[tuple[str, str]], in_app: bool = True, email_on: bool = True):  # type: ignore[no-untyped-def]
    entry = None
    at = si.T0
    for event, variant in events:
        at += timedelta(minutes=1)
        entry = coalesce(
            entry,
            event=event,
            variant=variant,
            at=at,
            in_app=in_app,
            email_on=email_on,
            email_after=at + timedelta(minutes=3),
        )
    return entry


class TestCoalesce:
    """N10-N12, E1: count, variants seen, idempotency, email states, reads."""

    def test_n10_count_latest_variant_and_variants_seen(self) -> None:
        entry = entry_after(
            [("ev1", "edited"), ("ev2", "edited"), ("ev3", "moved"), ("ev4", "edited")]
        )
        assert entry.count == 4
        assert entry.variant == "edited"
        assert entry.variants == ("edited", "moved")
        assert entry.last_event == "ev4"
        assert entry.email is EmailState.PENDING
        assert entry.email_after == si.T0 + timedelta(minutes=4)  # the first event's due time

    def test_n10_the_same_event_again_changes_nothing(self) -> None:
        entry = entry_after([("ev1", "edited"), ("ev2", "moved")])
        assert (
            coalesce(
                entry,
                event="ev2",
                variant="moved",
                at=si.T0,
                in_app=False,
                email_on=False,
                email_after=None,
            )
            is entry
        )

    def test_e1_reading_cancels_a_pending_email_and_frees_the_key(self) -> None:
        entry = read(entry_after([("ev1", "edited")]))
        assert entry.read and entry.email is EmailState.SKIPPED and entry.email_after is None
        with pytest.raises(UsageError):
            coalesce(
                entry,
                event="ev2",
                variant="edited",
                at=si.T0,
                in_app=True,
                email_on=True,
                email_after=si.T0,
            )
        sending = attrs.evolve(entry_after([("ev1", "edited")]), email=EmailState.SENDING)
        assert read(sending).email is EmailState.SENDING

    def test_n12_email_only_entry_closes_once_its_email_has_gone(self) -> None:
        pending = entry_after([("ev1", "edited")], in_app=False)
        assert not pending.read
        sent = attrs.evolve(pending, email=EmailState.SENT, email_after=None)
        closed = coalesce(
            attrs.evolve(sent, in_app=True),
            event="ev2",
            variant="edited",
            at=si.T0,
            in_app=False,
            email_on=True,
            email_after=si.T0,
        )
        assert closed.read and closed.email is EmailState.SENT and closed.count == 2

    def test_e1_an_email_starts_only_with_a_due_time(self) -> None:
        with pytest.raises(UsageError):
            coalesce(
                None,
                event="ev1",
                variant="new",
                at=si.T0,
                in_app=True,
                email_on=True,
                email_after=None,
            )

    @given(
        st.lists(
            st.tuples(
                st.sampled_from(["ev1", "ev2", "ev3", "ev4"]),
                st.sampled_from(["edited", "moved", "deleted"]),
            ),
            min_size=1,
            max_size=12,
        )
    )
    def test_n10_count_is_the_number_of_distinct_consecutive_events(
        self, events: list[tuple[str, str]]
    ) -> None:
        entry = entry_after(events)
        reached = [e for i, e in enumerate(events) if i == 0 or events[i - 1][0] != e[0]]
        assert entry.count == len(reached)
        assert entry.last_event == events[-1][0]
        assert list(entry.variants) == list(dict.fromkeys(v for _, v in reached))
