"""The in-memory store's indexes agree with its plain tables (L3 facts, B1 candidates).

`MemoryStore` answers from derived indexes for speed; these properties compare each answer
with the one read naively from the store's own tables, so an index that drifts fails here.
"""

from __future__ import annotations

import json
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from notify_cli.synth_logs import SynthConfig, synth_events
from notify_core.hints.fan_out import level_facts
from notify_core.hints.levels import Level, LevelFacts, Preference
from notify_core.hints.memory import MemoryStore
from notify_core.hints.ports import ChannelInfo, ThreadInfo
from notify_core.replay.run import Replay
from notify_core.values.instants import parse_instant

PEOPLE = [f"u{i}" for i in range(8)]
LEVELS = [level.value for level in Level]
TARGETS = [("thread", "t1"), ("thread", "t2"), ("channel", "c1"), ("space", "s1"), ("space", "")]

rows = st.dictionaries(
    st.tuples(st.sampled_from(PEOPLE), st.sampled_from(TARGETS)).map(lambda k: (k[0], *k[1])),
    st.builds(Preference, level=st.sampled_from(LEVELS)),
    max_size=20,
)
personal = st.dictionaries(
    st.sampled_from(PEOPLE).map(lambda u: (u, "notify.default_level")),
    # L5: a stored default that is not a level counts as unset.
    st.sampled_from([*LEVELS, "loud", 7, ["all"]]),
    max_size=4,
)
changes = st.lists(
    st.tuples(
        st.sampled_from(PEOPLE),
        st.sampled_from(TARGETS),
        st.none() | st.builds(Preference, level=st.sampled_from(LEVELS)),
    ),
    max_size=12,
)


def two_threads_store(
    default: str | None,
    rows: dict[tuple[str, str, str], Preference],
    personal: dict[tuple[str, str], object],
) -> MemoryStore:
    """A store of one public channel ``c1`` (its default ``default``) with threads t1 and t2,
    holding ``rows`` and the ``personal`` settings."""
    return MemoryStore(
        channels={"c1": ChannelInfo(id="c1", kind="public", space="s1", default_level=default)},
        threads={
            "t1": ThreadInfo(id="t1", channel="c1"),
            "t2": ThreadInfo(id="t2", channel="c1"),
        },
        rows=dict(rows),
        settings=dict(personal),
    )


def naive(store: MemoryStore, thread: str, user: str) -> LevelFacts:
    info = store.threads.get(thread)
    channel = store.channels.get(info.channel) if info is not None else None
    space = channel.space if channel is not None and channel.space else ""
    return LevelFacts(
        thread=store.rows.get((user, "thread", thread)),
        channel=store.rows.get((user, "channel", channel.id if channel else "")),
        space=store.rows.get((user, "space", space)),
        channel_default=channel.default_level if channel is not None else None,
        direct_message=channel is not None and channel.direct,
        personal_default=store.settings.get((user, "notify.default_level")),
        instance_default=store.instance_default,
    )


@given(
    rows=rows,
    personal=personal,
    changes=changes,
    default=st.none() | st.sampled_from(LEVELS),
    users=st.lists(st.sampled_from(PEOPLE), max_size=10),
    follows=st.lists(st.tuples(st.sampled_from(PEOPLE), st.sampled_from(["t1", "t2"]))),
)
def test_level_facts_agree_with_the_rows(
    rows: dict[tuple[str, str, str], Preference],
    personal: dict[tuple[str, str], object],
    changes: list[tuple[str, tuple[str, str], Preference | None]],
    default: str | None,
    users: list[str],
    follows: list[tuple[str, str]],
) -> None:
    """L3: the facts of a fan-out are each person's own rows and defaults, whatever indexes."""
    store = two_threads_store(default, rows, personal)
    for user, (kind, target), row in changes:
        store._set_row((user, kind, target), row)
    for user, thread in follows:
        store.follow(user, thread)
    for thread in ("t1", "t2", "t-unknown"):
        got = store.level_facts(thread, users)
        assert list(got) == list(dict.fromkeys(users))
        for user in users:
            assert got[user] == naive(store, thread, user), (thread, user)


class _EveryReadableThread:
    """The store, but `badge_threads` lists every readable thread (the plain answer)."""

    def __init__(self, store: MemoryStore) -> None:
        self._store = store

    def __getattr__(self, name: str) -> Any:
        if name == "badge_threads":
            return self._store.readable_threads
        return getattr(self._store, name)


@pytest.mark.parametrize("seed", [3, 4])
def test_badge_candidates_give_the_badge_of_every_readable_thread(seed: int) -> None:
    """B1: the store's narrowed candidates count exactly what every readable thread counts."""
    config = SynthConfig(events=5_000, users=120, seed=seed, max_fanout=50)
    replay = Replay()
    plain = attrs.evolve(replay.pipeline, world=_EveryReadableThread(replay.store))
    checked = counted = 0
    for number, event in enumerate(synth_events(config), start=1):
        for _hint in replay.feed(json.dumps(event), number):
            pass
        if number % 500 == 0:
            now = parse_instant(str(event["occurred_at"]))
            for user in replay.store.users:
                narrow = replay.pipeline.counted_threads(user, now)
                assert narrow == plain.counted_threads(user, now), (number, user)
                checked += 1
                counted += len(narrow)
    assert checked > 0 and counted > 0  # the log gives badges to check


def test_a_message_keeps_every_field_of_its_thread() -> None:
    # MemoryStore._on_message_created builds the new ThreadInfo field by field (no evolve):
    # a new field must be copied there too.
    assert [field.name for field in attrs.fields(ThreadInfo)] == [
        "id",
        "channel",
        "main",
        "last_message_seq",
        "unread_floor_seq",
        "newest_message",
    ]


class _ManyOnly:
    """Preferences that answer `level_facts` for many people only (no `level_facts_of`)."""

    def __init__(self, prefs: Any) -> None:
        self.level_facts = prefs.level_facts


steps = st.lists(
    st.one_of(
        st.tuples(
            st.just("row"),
            st.sampled_from(PEOPLE),
            st.sampled_from(TARGETS),
            st.none()
            | st.builds(
                Preference,
                level=st.sampled_from(LEVELS),
                muted_until=st.sampled_from([None, "2026-10-23T21:30:00Z"]).map(
                    lambda text: parse_instant(text) if text else None
                ),
            ),
        ),
        st.tuples(st.just("follow"), st.sampled_from(PEOPLE), st.sampled_from(["t1", "t2"])),
    ),
    max_size=15,
)


@given(
    rows=rows,
    personal=personal,
    steps=steps,
    default=st.none() | st.sampled_from(LEVELS),
    cap=st.sampled_from([1, 2, 2048]),
)
def test_kept_level_facts_follow_every_change(
    rows: dict[tuple[str, str, str], Preference],
    personal: dict[tuple[str, str], object],
    steps: list[tuple[Any, ...]],
    default: str | None,
    cap: int,
) -> None:
    """The LevelFacts kept across fan-outs (by the values of their facts, cleared when full)
    are the person's facts now, after any rows were written, deleted or followed between
    fan-outs; so are those of the one-person path (`MemoryPreferences.level_facts_of`)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("notify_core.hints.memory.preferences._BUILT_CAP", cap)
        store = two_threads_store(default, rows, personal)
        for step in [("follow", "u0", "t1"), *steps]:
            if step[0] == "row":
                _, user, (kind, target), row = step
                store._set_row((user, kind, target), row)
            else:
                store.follow(step[1], step[2])
            for thread in ("t1", "t2", "t-unknown"):
                got = store.level_facts(thread, PEOPLE)
                assert got == {user: naive(store, thread, user) for user in PEOPLE}
                # The one-person path of due work and badges answers the same.
                assert {user: store.prefs.level_facts_of(thread, user) for user in PEOPLE} == got
                assert level_facts(store.prefs, thread, ("u1",)) == {"u1": got["u1"]}
                # A store without the one-person method (PostgreSQL) is asked as for many.
                plain = _ManyOnly(store.prefs)
                assert level_facts(plain, thread, ("u1",)) == {"u1": got["u1"]}  # type: ignore[arg-type]
