"""Preference writes, deletes, lists and the archive cleanup (seed 000 notes 4-8, rules L1-L2,
formats.md section 2 ``notification_pref.updated``, G5)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest
from pgworld import (
    ALEX,
    ALLGEMEIN,
    ESKALATION,
    OTHER,
    OTHER_CHANNEL,
    OWNER,
    ROBIN,
    SAM,
    SCHEMA,
    SUPPORT,
    T_ESK,
    T_OTHER,
    M,
    T,
    channel,
    events,
    last_seq,
    space,
    thread,
)

from notify_core.hints.levels import Preference, Target
from notify_pg import Conflict, NotFound, NotifyStore
from notify_reference_host import ReferenceHost

pytestmark = pytest.mark.usefixtures("world")

Conn = psycopg.Connection[Any]


def rows(conn: Conn) -> list[tuple[Any, ...]]:
    return conn.execute(
        f"SELECT user_id, target_kind, target_id, level, version "
        f"FROM {SCHEMA}.notification_preferences ORDER BY 1, 2, 3"
    ).fetchall()


def no_null(value: object) -> bool:
    if value is None:
        return False
    if isinstance(value, dict):
        return all(no_null(v) for v in value.values())
    if isinstance(value, list):
        return all(no_null(v) for v in value)
    return True


def test_put_lifecycle(conn: Conn, store: NotifyStore) -> None:
    """Seed 000 TestPutNotificationPreference_Lifecycle, notes 4d-4f and 8."""
    first = store.preferences.put(conn, ALEX, thread(T), Preference(level="mentions"))
    assert first.changed and first.preference.version == 1
    assert first.preference.to_json() == {
        "target": {"kind": "thread", "id": T},
        "level": "mentions",
        "version": 1,
    }
    [event] = events(conn)
    assert event["type"] == "notification_pref.updated"
    assert event["actor"] == ALEX and event["audience"] == ALEX
    assert "scope" not in event
    assert event["payload"] == {"preference": first.preference.to_json()}
    assert no_null(event)

    again = store.preferences.put(conn, ALEX, thread(T), Preference(level="mentions"))
    assert not again.changed and again.preference.version == 1
    assert len(events(conn)) == 1

    other = store.preferences.put(conn, ALEX, thread(T), Preference(level="all"))
    assert other.changed and other.preference.version == 2
    assert len(events(conn)) == 2


def test_muted_until_is_stored_in_microseconds_and_as_given(conn: Conn, store: NotifyStore) -> None:
    """Seed 000 note 4d: stored as given (also past), microseconds; an equal value is a no-op."""
    until = datetime(2026, 10, 23, 23, 30, 0, 123456, tzinfo=UTC)
    put = store.preferences.put(
        conn, ALEX, channel(ALLGEMEIN), Preference(level="all", muted_until=until)
    )
    assert put.preference.muted_until == until
    [event] = events(conn)
    assert event["payload"]["preference"]["muted_until"] == "2026-10-23T23:30:00.123456Z"  # type: ignore[index]
    # The same instant in another offset is the same value: no change, no event.
    same = until.astimezone(__import__("zoneinfo").ZoneInfo("Europe/Berlin"))
    assert not store.preferences.put(
        conn, ALEX, channel(ALLGEMEIN), Preference(level="all", muted_until=same)
    ).changed
    past = datetime(2000, 1, 1, tzinfo=UTC)
    stored = store.preferences.put(
        conn, ALEX, channel(ALLGEMEIN), Preference(level="all", muted_until=past)
    )
    assert stored.changed and stored.preference.muted_until == past
    cleared = store.preferences.put(conn, ALEX, channel(ALLGEMEIN), Preference(level="all"))
    assert cleared.changed and cleared.preference.muted_until is None
    assert "muted_until" not in events(conn)[-1]["payload"]["preference"]  # type: ignore[index,operator]


def test_delete_emits_last_version_plus_one_and_put_restarts(
    conn: Conn, store: NotifyStore
) -> None:
    """Seed 000 TestDeleteNotificationPreference, note 5a."""
    store.preferences.put(conn, ALEX, space(SUPPORT), Preference(level="all"))
    store.preferences.put(conn, ALEX, space(SUPPORT), Preference(level="mute"))
    gone = store.preferences.delete(conn, ALEX, space(SUPPORT))
    assert gone is not None and gone.version == 3 and gone.level == "mute"
    event = events(conn)[-1]
    assert event["payload"] == {
        "preference": {"target": {"kind": "space", "id": SUPPORT}, "level": "mute", "version": 3},
        "deleted": True,
    }
    assert event["audience"] == ALEX
    seq = last_seq(conn)
    assert store.preferences.delete(conn, ALEX, space(SUPPORT)) is None
    assert last_seq(conn) == seq
    again = store.preferences.put(conn, ALEX, space(SUPPORT), Preference(level="all"))
    assert again.preference.version == 1


@pytest.mark.parametrize(
    "target",
    [thread(T), channel(ALLGEMEIN), space(SUPPORT), thread("t-unknown"), thread(ALLGEMEIN)],
    ids=["thread", "channel", "space", "unknown", "wrong-kind"],
)
def test_unreadable_unknown_and_wrong_kind_targets_are_not_found(
    conn: Conn, store: NotifyStore, target: Target
) -> None:
    """Seed 000 TestNotificationPreference_TargetChecks (AZ-P4): identical not_found."""
    seq = last_seq(conn)
    with pytest.raises(NotFound) as put:
        store.preferences.put(conn, ROBIN, target, Preference(level="all"))
    with pytest.raises(NotFound) as delete:
        store.preferences.delete(conn, ROBIN, target)
    assert (put.value.code, str(put.value)) == (delete.value.code, str(delete.value))
    assert (put.value.code, str(put.value)) == ("not_found", "not found (not_found)")
    assert last_seq(conn) == seq and rows(conn) == []


def test_main_thread_and_dm_thread_are_targets(conn: Conn, store: NotifyStore) -> None:
    """Seed 000 note 4b: every thread can be a target, the main thread included."""
    assert store.preferences.put(conn, ALEX, thread(M), Preference(level="mute")).changed
    assert store.preferences.put(conn, SAM, thread("t-dm"), Preference(level="mute")).changed
    with pytest.raises(NotFound):
        store.preferences.put(conn, ROBIN, thread("t-dm"), Preference(level="mute"))


def test_list_names_only_readable_targets_and_keeps_rows(
    conn: Conn, store: NotifyStore, host: ReferenceHost
) -> None:
    """Seed 000 TestListMyNotificationPreferences_ReadableOnly (04 14), note 5b."""
    store.preferences.put(conn, SAM, thread(T), Preference(level="all"))
    store.preferences.put(conn, SAM, channel(ALLGEMEIN), Preference(level="mute"))
    listed = store.preferences.list(conn, SAM)
    assert [(p.target.kind, p.target.id) for p in listed] == [
        ("channel", ALLGEMEIN),
        ("thread", T),
    ]
    host.revoke(conn, SAM, channel(ALLGEMEIN))
    assert store.preferences.list(conn, SAM) == []
    assert len(rows(conn)) == 2
    host.grant(conn, SAM, space(SUPPORT))
    assert [p.target.id for p in store.preferences.list(conn, SAM)] == [ALLGEMEIN, T]


def test_a_foreign_persons_rows_are_never_returned(conn: Conn, store: NotifyStore) -> None:
    """Seed 000 TestPersonalDataNotRetrievable (DP-T10): Sam sees none of Alex's rows."""
    store.preferences.put(conn, ALEX, thread(T), Preference(level="mute"))
    store.preferences.put(conn, ALEX, channel(ALLGEMEIN), Preference(level="all"))
    assert store.preferences.list(conn, SAM) == []
    assert [p.user_id for p in store.preferences.list(conn, ALEX)] == [ALEX, ALEX]
    # Sam's delete of the same target touches only Sam's (absent) row.
    assert store.preferences.delete(conn, SAM, thread(T)) is None
    assert len(rows(conn)) == 2
    assert all(e["audience"] == ALEX for e in events(conn))


def test_archived_target_refuses_put_and_allows_delete(
    conn: Conn, store: NotifyStore, host: ReferenceHost
) -> None:
    """Seed 000 TestArchivedTarget_PutConflictDeleteAllowed, note 4c."""
    store.preferences.put(conn, ALEX, channel(ESKALATION), Preference(level="all"))
    host.archive_channel(conn, ALLGEMEIN, store=store, actor=OWNER)
    for target in (channel(ALLGEMEIN), thread(T), thread(M)):
        with pytest.raises(Conflict) as info:
            store.preferences.put(conn, ALEX, target, Preference(level="all"))
        assert info.value.code == "target_archived"
        assert store.preferences.delete(conn, ALEX, target) is None
    host.archive_space(conn, SUPPORT, store=store, actor=OWNER)
    with pytest.raises(Conflict):
        store.preferences.put(conn, ALEX, space(SUPPORT), Preference(level="all"))
    with pytest.raises(Conflict):
        store.preferences.put(conn, ALEX, thread(T_ESK), Preference(level="all"))
    assert store.preferences.list(conn, ALEX) == []


def test_archive_channel_removes_its_rows_with_one_event_each(
    conn: Conn, store: NotifyStore, host: ReferenceHost
) -> None:
    """Seed 000 TestArchiveCleanup_Channel, note 7: key order, audience the row's person."""
    for user, target in [
        (ALEX, channel(ALLGEMEIN)),
        (ALEX, thread(T)),
        (ALEX, space(SUPPORT)),
        (ALEX, channel(ESKALATION)),
        (SAM, channel(ALLGEMEIN)),
        (SAM, thread(T)),
    ]:
        store.preferences.put(conn, user, target, Preference(level="mute"))
    seq = last_seq(conn)
    gone = host.archive_channel(conn, ALLGEMEIN, store=store, actor=OWNER)
    assert [(p.user_id, p.target.kind, p.target.id) for p in gone] == [
        (ALEX, "channel", ALLGEMEIN),
        (ALEX, "thread", T),
        (SAM, "channel", ALLGEMEIN),
        (SAM, "thread", T),
    ]
    assert [(u, k, i) for u, k, i, *_ in rows(conn)] == [
        (ALEX, "channel", ESKALATION),
        (ALEX, "space", SUPPORT),
    ]
    new = events(conn, seq)
    assert [(e["audience"], e["payload"]) for e in new] == [
        (p.user_id, {"preference": p.to_json(), "deleted": True}) for p in gone
    ]
    assert all(e["actor"] == OWNER for e in new)
    assert all(p.version == 2 for p in gone)


def test_archive_is_rolled_back_with_its_transaction(
    conn: Conn, store: NotifyStore, host: ReferenceHost
) -> None:
    """Seed 000 note 7b: a veto later in the archive's transaction keeps archive and rows."""
    store.preferences.put(conn, ALEX, thread(T), Preference(level="mute"))
    seq = last_seq(conn)
    with pytest.raises(RuntimeError), conn.transaction():
        host.archive_channel(conn, ALLGEMEIN, store=store, actor=OWNER)
        raise RuntimeError("veto")
    assert len(rows(conn)) == 1 and last_seq(conn) == seq
    assert store.preferences.put(conn, ALEX, thread(T), Preference(level="all")).changed


def test_archive_space_removes_everything_below(
    conn: Conn, store: NotifyStore, host: ReferenceHost
) -> None:
    """Seed 000 TestArchiveCleanup_Space: the space, its channels, their threads; others stay."""
    for target in [
        space(SUPPORT),
        channel(ALLGEMEIN),
        channel(ESKALATION),
        thread(T),
        thread(M),
        thread(T_ESK),
        space(OTHER),
        channel(OTHER_CHANNEL),
        thread(T_OTHER),
    ]:
        store.preferences.put(conn, ALEX, target, Preference(level="mute"))
    host.archive_channel(conn, ESKALATION, store=store, actor=OWNER)  # archived ones count too
    store.preferences.upsert(conn, ALEX, thread(T_ESK), Preference(level="all"))
    seq = last_seq(conn)
    gone = host.archive_space(conn, SUPPORT, store=store, actor=OWNER)
    assert [(p.target.kind, p.target.id) for p in gone] == [
        ("channel", ALLGEMEIN),
        ("space", SUPPORT),
        ("thread", T_ESK),
        ("thread", M),
        ("thread", T),
    ]
    assert len(events(conn, seq)) == 5
    assert {i for _u, _k, i, *_ in rows(conn)} == {OTHER, OTHER_CHANNEL, T_OTHER}


def test_upsert_is_the_unchecked_single_write_path(conn: Conn, store: NotifyStore) -> None:
    """Seed 000 note 6: upsert neither authorizes nor locks; its callers do."""
    result = store.preferences.upsert(conn, ROBIN, thread(T), Preference(level="all"))
    assert result.changed and result.preference.version == 1
    assert events(conn)[-1]["audience"] == ROBIN
