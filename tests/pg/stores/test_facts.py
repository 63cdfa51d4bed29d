"""The batched level facts of `NotifyStore` (seed 000 note 12, rules L3, L5, D2).

The L3 chain, the DM step and L4's muted rows, on both twins of `PreferenceFacts`, are in
tests/pg/contracts/test_preferences_contract.py; here what only the adapter has: the store's
own entry point, its statement count, its warnings and the host's read-right queries.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest
from pgworld import (
    ALEX,
    ALLGEMEIN,
    OWNER,
    ROBIN,
    SAM,
    T,
    channel,
    space,
    thread,
)

from notify_core.hints.levels import LevelFacts, Preference, resolve_level
from notify_pg import DEFAULT_LEVEL_KEY, NotFound, NotifyStore
from notify_reference_host import ReferenceHost

pytestmark = pytest.mark.usefixtures("world")

Conn = psycopg.Connection[Any]
NOW = datetime(2026, 10, 23, 12, 0, tzinfo=UTC)


class CountingCursor(psycopg.Cursor[Any]):
    """Counts the statements sent through a connection."""

    count = 0

    def execute(self, *args: Any, **kwargs: Any) -> Any:
        CountingCursor.count += 1
        return super().execute(*args, **kwargs)


def level(store: NotifyStore, conn: Conn, user: str, thread_id: str = T) -> tuple[str, str]:
    effective = resolve_level(store.level_facts(conn, thread_id, [user])[user], NOW)
    return effective.level.value, effective.source.value


def test_one_call_answers_every_candidate_with_its_own_sources(
    conn: Conn, store: NotifyStore, host: ReferenceHost
) -> None:
    """Seed 000 TestEffectiveLevelOrder last sentence and TestLevelFacts_OneQueryForAllCandidates
    (13 12 point 2): the number of statements does not grow with the candidates."""
    store.preferences.put(conn, ALEX, thread(T), Preference(level="mute"))
    store.preferences.put(conn, SAM, channel(ALLGEMEIN), Preference(level="all"))
    host.set_setting(conn, ROBIN, DEFAULT_LEVEL_KEY, "mute")
    conn.cursor_factory = CountingCursor
    CountingCursor.count = 0
    facts = store.level_facts(conn, T, [ALEX, SAM, ROBIN])
    three = CountingCursor.count
    many = [ALEX, SAM, ROBIN, *(f"u-nobody-{i}" for i in range(500))]
    CountingCursor.count = 0
    more = store.level_facts(conn, T, many)
    assert CountingCursor.count == three == 3  # path, own rows, personal defaults
    assert {u: resolve_level(f, NOW).source.value for u, f in facts.items()} == {
        ALEX: "thread",
        SAM: "channel",
        ROBIN: "personal_default",
    }
    assert more[ALEX] == facts[ALEX] and len(more) == len(many)
    assert more["u-nobody-1"] is more["u-nobody-2"]  # equal facts are shared values
    assert more["u-nobody-1"] == LevelFacts(instance_default="mentions")


def test_unknown_thread_and_people(conn: Conn, store: NotifyStore) -> None:
    """Seed 000 note 12: an unknown thread is not_found; unknown people get facts without rows."""
    with pytest.raises(NotFound):
        store.level_facts(conn, "t-unknown", [ALEX])
    assert store.level_facts(conn, T, []) == {}
    assert store.level_facts(conn, T, ["u-ghost"])["u-ghost"] == LevelFacts(
        instance_default="mentions"
    )


def test_unknown_personal_default_counts_as_unset(
    conn: Conn, store: NotifyStore, host: ReferenceHost, caplog: pytest.LogCaptureFixture
) -> None:
    """Seed 000 TestLevelFacts (L5): "loud" is unset; one warning without value and IDs."""
    host.set_setting(conn, ALEX, DEFAULT_LEVEL_KEY, "loud")
    host.set_setting(conn, SAM, DEFAULT_LEVEL_KEY, 7)
    with caplog.at_level(logging.WARNING, logger="notify_pg"):
        facts = store.level_facts(conn, T, [ALEX, SAM, OWNER])
    assert facts[ALEX].personal_default is None and facts[SAM].personal_default is None
    [record] = [r for r in caplog.records if r.name == "notify_pg"]
    assert "loud" not in record.getMessage() and ALEX not in record.getMessage()


def test_d2_one_thread_and_many_pairs_answer_the_same_read_check(
    conn: Conn, store: NotifyStore, host: ReferenceHost
) -> None:
    """D2: both reader queries join the reference host's one `channel_access` view: the owner,
    a space grant and a channel grant read a space's channel, a DM only its participants,
    nobody an archived channel or space, never an inactive person; the badge's two thread
    queries join it too."""
    for user, owner, active in (
        ("own", True, True), ("sp", False, True), ("ch", False, True),
        ("no", False, True), ("off", False, False), ("dm1", False, True),
    ):  # fmt: skip
        host.add_user(conn, user, owner=owner, active=active)
    for s in ("s", "s2"):
        host.add_space(conn, s)
    for c, s in (("c1", "s"), ("c2", "s"), ("ca", "s"), ("c3", "s2")):
        host.add_channel(conn, c, s)
    host.add_channel(conn, "d", None, kind="dm")
    host.add_dm_participant(conn, "d", "dm1")
    for t, c in (("t1", "c1"), ("t2", "c2"), ("ta", "ca"), ("t3", "c3"), ("td", "d")):
        host.add_thread(conn, t, c)
    for user, target in (("sp", space("s")), ("off", space("s")), ("ch", channel("c1"))):
        host.grant(conn, user, target)
    host.grant(conn, "sp", space("s2"))
    host.archive_channel(conn, "ca", store=store)
    host.archive_space(conn, "s2", store=store)
    people = ["own", "sp", "ch", "no", "off", "dm1", "nobody"]
    expected = {
        "t1": {"own", "sp", "ch"},
        "t2": {"own", "sp"},
        "ta": set(),
        "t3": set(),
        "td": {"dm1"},
        "unknown": set(),
    }
    assert {t: set(host.thread_readers(conn, t, people)) for t in expected} == expected
    pairs = [(p, t) for t in expected for p in people]
    assert host.thread_readers_of(conn, pairs) == {(p, t) for t in expected for p in expected[t]}
    # B1: the badge's threads are those with messages in the channels a person can read
    # (active or not), by id, from the same view: one person at a time and many at once.
    conn.execute(
        f"UPDATE {host.schema}.threads SET last_message_seq = 1"  # type: ignore[arg-type]
        " WHERE id IN ('t1', 'ta', 't3', 'td')"
    )
    badge = {
        "own": ["t1"], "sp": ["t1"], "ch": ["t1"], "no": [], "off": ["t1"], "dm1": ["td"],
        "nobody": [],
    }  # fmt: skip
    assert {p: list(host.badge_threads(conn, p)) for p in people} == badge
    assert host.badge_threads_of(conn, people) == {p: t for p, t in badge.items() if t}
