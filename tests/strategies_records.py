"""Hypothesis strategies for preference records (seed 002, rules.md#records, section 8)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import strategies as st

#: Channel names the generated deployments declare from; the last two are seldom declared,
#: so that undeclared keys (Operation 8) and channel-set evolution both happen.
CHANNELS = ("email", "sms", "push", "in-app", "carrier-pigeon", "fax")
#: Exact-equality traps: case and trailing space make different principals (Identity 9-10);
#: "" is the blank principal (Operation 4).
PRINCIPALS = ("user_u", "user_v", "User_U", "user_u ", "")
#: Where the generated clocks start.
T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)

principals = st.sampled_from(PRINCIPALS)

#: A declared channel set the host may inject: non-empty, no repeats, no blank name.
declared_sets = st.one_of(
    st.just(["email", "sms", "push", "in-app"]),
    st.lists(st.sampled_from(CHANNELS), min_size=1, max_size=len(CHANNELS), unique=True),
)

#: A degenerate declared channel set (Instance 11-16): empty, repeating, or with a blank name.
degenerate_sets = st.one_of(
    st.just([]),
    st.lists(st.sampled_from(CHANNELS), min_size=1, max_size=3).map(lambda xs: [*xs, xs[0]]),
    st.lists(st.sampled_from(CHANNELS), max_size=3, unique=True).map(lambda xs: [*xs, ""]),
)

#: An opaque JSON value as a caller hands it in (no null: omission is the absent value).
opaque_values = st.recursive(
    st.one_of(
        st.text(max_size=8),
        st.integers(-1000, 1000),
        st.floats(allow_nan=False, allow_infinity=False),
        st.booleans(),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)

#: A channel-preferences map, sometimes empty (stored as absent, Operation 6-7).
channel_maps = st.dictionaries(st.sampled_from(CHANNELS), opaque_values, max_size=4)


@st.composite
def set_requests(draw: st.DrawFn) -> dict[str, object]:
    """Keyword arguments of a `PreferenceStore.set` call without the seam values.

    Each preference field and the metadata is present or omitted independently, so requests
    with no preference field at all (Operation 5) and with metadata alone (Operation 12) occur.
    """
    request: dict[str, object] = {}
    if draw(st.booleans()):
        request["channel_preferences"] = draw(channel_maps)
    for name in ("frequency_limit", "quiet_hours", "format", "metadata"):
        if draw(st.integers(0, 2)) == 0:
            request[name] = draw(opaque_values)
    return request


#: How far the host clock moves between two writes; zero happens (equal instants).
clock_steps = st.one_of(st.just(timedelta(0)), st.timedeltas(timedelta(0), timedelta(days=3)))
