"""Hypothesis strategies for the inbox (seed 004; docs/rules.md, N E U H)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import strategies as st

from notify_core.inbox import (
    CATEGORIES,
    SECTIONS,
    Delivery,
    Group,
    InboxEvent,
    InboxPrefs,
    InboxSettings,
    Match,
    Origin,
    PageFacts,
    Permission,
    PersonFacts,
    Rule,
)

PEOPLE = ("ana", "ben", "cy", "dee", "eli", "fay")
GROUP_NAMES = ("readers", "staff", "no-secret", "admins", "drafts")
PATHS = ("ops/runbook", "secret/plan", "home", "secretary", "ops")
TAGS = ("draft", "Draft", "public")
EVENT_TYPES = sorted({kind for c in CATEGORIES for kind in c.events})
T0 = datetime(2026, 11, 30, 8, 0, tzinfo=UTC)

rules = st.builds(
    lambda permission, match, value, deny: Rule(
        permission=permission,
        match=match,
        value=None if match is Match.ALL else value,
        deny=deny,
    ),
    st.sampled_from(list(Permission)),
    st.sampled_from(list(Match)),
    st.sampled_from(PATHS + TAGS),
    st.booleans(),
)
groups = st.dictionaries(
    st.sampled_from(GROUP_NAMES),
    st.builds(
        lambda rs, manage: Group(rules=tuple(rs), manage_system=manage),
        st.lists(rules, max_size=3),
        st.sampled_from([False, False, False, True]),
    ),
)


@st.composite
def prefs(draw: st.DrawFn) -> InboxPrefs:
    """Stored choices made by a sequence of sets (so only non-default rows remain)."""
    value = InboxPrefs()
    for category, channel, enabled in draw(
        st.lists(
            st.tuples(
                st.sampled_from([c.key for c in CATEGORIES]),
                st.sampled_from(["in_app", "email"]),
                st.booleans(),
            ),
            max_size=4,
        )
    ):
        value = value.set(category, channel, enabled)
    return value


people_facts = st.builds(
    PersonFacts,
    active=st.sampled_from([True, True, True, False]),
    system=st.sampled_from([False, False, False, True]),
    groups=st.frozensets(st.sampled_from(GROUP_NAMES), max_size=3),
    email=st.sampled_from([None, "x@example.org"]),
    verified=st.booleans(),
    prefs=prefs(),
)
people = st.dictionaries(st.sampled_from(PEOPLE), people_facts)
settings = st.builds(
    InboxSettings,
    sections=st.dictionaries(st.sampled_from(SECTIONS), st.sampled_from(list(Delivery))),
    mail_configured=st.booleans(),
)
events = st.builds(
    InboxEvent,
    id=st.just("ev1"),
    type=st.sampled_from(EVENT_TYPES),
    origin=st.sampled_from(list(Origin)),
    actor=st.sampled_from((None, *PEOPLE)),
    site=st.just("s1"),
    page=st.builds(
        PageFacts,
        path=st.sampled_from(PATHS),
        tags=st.frozensets(st.sampled_from(TAGS), max_size=2),
    ),
    parent_author=st.sampled_from((None, *PEOPLE)),
    previous_mentions=st.frozensets(st.sampled_from(PEOPLE), max_size=2),
)
candidates = st.dictionaries(
    st.sampled_from([c.key for c in CATEGORIES]),
    st.lists(st.sampled_from(PEOPLE), max_size=6),
)
instants = st.integers(0, 10_000).map(lambda s: T0 + timedelta(seconds=s))
