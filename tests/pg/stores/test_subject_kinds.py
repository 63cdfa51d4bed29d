"""Agents and apps may neither read nor write preferences or quiet hours (seed 000
requirement 2, TestNotificationPreference_TargetChecks: "an agent token gets 403 forbidden with
reason subject_kind_not_allowed on each of the seven operations")."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psycopg
import pytest
from pgworld import ALEX, SCHEMA, SUPPORT, T, events, last_seq, space, thread

from notify_core.hints.levels import Preference
from notify_core.hints.quiet import QuietRule
from notify_pg import Forbidden, NotifyStore
from notify_reference_host import ReferenceHost

pytestmark = pytest.mark.usefixtures("world")

Conn = psycopg.Connection[Any]
LOTSE, TEXTER = "a-lotse", "p-texter"  # an agent and an app, both able to read Support
RULE = QuietRule(weekdays=31, start_local="19:00", end_local="07:00")


@pytest.fixture
def bots(conn: Conn, host: ReferenceHost) -> None:
    host.add_user(conn, LOTSE, kind="agent")
    host.add_user(conn, TEXTER, kind="app")
    for bot in (LOTSE, TEXTER):
        host.grant(conn, bot, space(SUPPORT))


def seven_operations(
    store: NotifyStore, conn: Conn, person: str, actor: str | None, rule_id: str
) -> dict[str, Callable[[], object]]:
    """The seven operations of seed 000 for ``person``, acted by ``actor``."""
    qh = store.quiet_hours
    return {
        "listMyNotificationPreferences": lambda: store.preferences.list(conn, person),
        "putNotificationPreference": lambda: store.preferences.put(
            conn, person, thread(T), Preference(level="mute"), actor=actor
        ),
        "deleteNotificationPreference": lambda: store.preferences.delete(
            conn, person, thread(T), actor=actor
        ),
        "listMyQuietHours": lambda: qh.list(conn, person),
        "createQuietHoursRule": lambda: qh.create(conn, person, RULE, actor=actor),
        "createQuietHoursRule (Idempotency-Key)": lambda: qh.create_idempotent(
            conn, person, RULE, "key", actor=actor
        ),
        "putQuietHoursRule": lambda: qh.put(conn, person, rule_id, RULE, actor=actor),
        "deleteQuietHoursRule": lambda: qh.delete(conn, person, rule_id, actor=actor),
    }


def stored(conn: Conn) -> tuple[int, int, int]:
    counts = conn.execute(
        f"SELECT (SELECT count(*) FROM {SCHEMA}.notification_preferences), "
        f"(SELECT count(*) FROM {SCHEMA}.quiet_hours), "
        f"(SELECT count(*) FROM {SCHEMA}.quiet_hours_idempotency)"
    ).fetchone()
    assert counts is not None
    return counts


@pytest.mark.usefixtures("bots")
@pytest.mark.parametrize("bot", [LOTSE, TEXTER])
def test_agents_and_apps_are_refused_on_every_operation(
    conn: Conn, store: NotifyStore, bot: str
) -> None:
    """Each operation for an agent's or an app's own settings is Forbidden with
    subject_kind_not_allowed (not not_found: the answer tells nothing about targets or rules),
    and nothing is written."""
    # Rows the bot could otherwise hit: a preference and a rule stored for it directly.
    store.preferences.upsert(conn, bot, thread(T), Preference(level="all"))
    conn.execute(
        f"INSERT INTO {SCHEMA}.quiet_hours (id, user_id, weekdays, start_local, end_local) "
        "VALUES ('r-bot', %s, 1, '19:00', '07:00')",
        [bot],
    )
    before, seq = stored(conn), last_seq(conn)
    for name, call in seven_operations(store, conn, bot, None, "r-bot").items():
        with pytest.raises(Forbidden) as info:
            call()
        assert info.value.as_json()["code"] == "subject_kind_not_allowed", name
    assert stored(conn) == before and last_seq(conn) == seq


@pytest.mark.usefixtures("bots")
def test_an_agent_acting_for_a_person_is_refused(conn: Conn, store: NotifyStore) -> None:
    """The writes name an actor: an agent or app as the actor is refused too, also when the
    person is a human who could write the same themselves."""
    rule = store.quiet_hours.create(conn, ALEX, RULE)
    store.preferences.put(conn, ALEX, thread(T), Preference(level="all"))
    before, seq = stored(conn), last_seq(conn)
    writes = {
        k: v
        for k, v in seven_operations(store, conn, ALEX, LOTSE, rule.id).items()
        if not k.startswith("list")
    }
    assert len(writes) == 6
    for name, call in writes.items():
        with pytest.raises(Forbidden):
            call()
        assert stored(conn) == before, name
    assert last_seq(conn) == seq
    # The person themselves may, with their own or a human actor.
    for call in seven_operations(store, conn, ALEX, ALEX, rule.id).values():
        call()
    assert [e["type"] for e in events(conn)][-1] == "quiet_hours.updated"


def test_a_principal_the_host_does_not_know_is_not_refused_by_kind(
    conn: Conn, store: NotifyStore
) -> None:
    """Only a known agent or app is refused by kind; an unknown person meets the usual
    checks (no readable target, empty lists)."""
    assert store.preferences.list(conn, "u-nobody") == []
    assert store.quiet_hours.list(conn, "u-nobody") == []
