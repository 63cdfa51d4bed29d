"""The tables of part 2: push_registrations as seed 001 note 2 (without foreign keys into the
host), the cursors and due-work tables with their uniqueness rules, the read port without
tokens, and forget_person."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import attrs
import psycopg
import pytest
from pgworld import ALEX, SAM, SCHEMA
from test_migrations import catalog

from notify_pg import forget_person
from notify_pg.db.errors import Conflict, StorageError
from notify_pg.stores.registrations import PushRegistration, RegistrationRepository

NOW = datetime(2026, 10, 23, 9, tzinfo=UTC)


def test_push_registrations_as_seed_001_note_2(conn: psycopg.Connection[Any]) -> None:
    cat = catalog(conn, SCHEMA)
    columns = {
        c: (dt, null, default)
        for t, _p, c, dt, null, default, *_ in cat["columns"]
        if t == "push_registrations"
    }
    assert list(columns) == [
        "id",
        "user_id",
        "device_id",
        "auth_session_id",
        "provider",
        "token",
        "environment",
        "app_id",
        "preview_token_hash",
        "created_at",
        "last_success_at",
        "failure_count",
        "disabled_at",
        "disabled_reason",
    ]
    assert columns["environment"] == ("text", "NO", "'production'::text")
    assert columns["preview_token_hash"][:2] == ("bytea", "YES")
    assert columns["created_at"] == ("timestamp with time zone", "NO", "now()")
    assert columns["failure_count"] == ("integer", "NO", "0")
    defs = {n: d for t, n, _k, d in cat["constraints"] if t == "push_registrations"}
    assert defs["push_registrations_provider_token_key"] == "UNIQUE (provider, token)"
    assert (
        "'apns'::text, 'fcm'::text, 'unifiedpush'::text, 'webpush'::text, 'wns'::text"
        in (defs["push_registrations_provider_check"])
    )
    assert "'production'::text, 'sandbox'::text" in defs["push_registrations_environment_check"]
    assert "'repeated_failures'::text" in defs["push_registrations_disabled_reason_check"]
    assert defs["push_registrations_disabled_check"] == (
        "CHECK (((disabled_at IS NULL) = (disabled_reason IS NULL)))"
    )
    indexes = {n: d for t, n, d in cat["indexes"] if t == "push_registrations"}
    assert indexes["push_registrations_preview_token_hash_idx"].startswith("CREATE UNIQUE INDEX")
    assert indexes["push_registrations_preview_token_hash_idx"].endswith(
        "(preview_token_hash) WHERE (preview_token_hash IS NOT NULL)"
    )
    assert indexes["push_registrations_user_active_idx"].endswith(
        "(user_id) WHERE (disabled_at IS NULL)"
    )
    assert indexes["push_registrations_auth_session_idx"].endswith("(auth_session_id)")
    # The library owns only its schema: no foreign key anywhere.
    assert not [k for _t, _n, k, _d in cat["constraints"] if k == "f"]


def test_due_work_uniqueness(conn: psycopg.Connection[Any]) -> None:
    """One open window per (recipient, thread), one pending badge sync per person, one push
    send per notification and registration, one cursor per partition of a consumer."""
    defs = {n: d for _t, n, _k, d in catalog(conn, SCHEMA)["constraints"]}
    assert defs["windows_pkey"] == "PRIMARY KEY (recipient, thread)"
    assert defs["badge_syncs_pkey"] == "PRIMARY KEY (recipient)"
    assert defs["consumer_cursors_pkey"] == "PRIMARY KEY (name, part)"
    assert defs["consumer_cursors_part_check"] == (
        "CHECK (((parts >= 1) AND (part >= 0) AND (part < parts)))"
    )
    assert defs["push_sends_notification_registration_key"] == (
        "UNIQUE (notification_id, registration_id)"
    )
    conn.execute(
        f"INSERT INTO {SCHEMA}.windows (recipient, thread, end_at) VALUES ('a', 't', now())"
    )
    with pytest.raises(psycopg.errors.UniqueViolation):
        conn.execute(
            f"INSERT INTO {SCHEMA}.windows (recipient, thread, end_at) VALUES ('a', 't', now())"
        )


def register(conn: psycopg.Connection[Any], reg: str, user: str, token: str) -> None:
    RegistrationRepository(SCHEMA).register(
        conn,
        id=reg,
        user_id=user,
        device_id=f"{user}-phone",
        auth_session_id="s-1",
        provider="apns",
        token=token,
        app_id="app",
        created_at=NOW,
    )


def test_registrations_read_port_has_no_token(conn: psycopg.Connection[Any]) -> None:
    register(conn, "r-2", ALEX, "tok-2")
    register(conn, "r-1", ALEX, "tok-1")
    register(conn, "r-3", SAM, "tok-3")
    conn.execute(
        f"UPDATE {SCHEMA}.push_registrations SET disabled_at = now(),"
        " disabled_reason = 'logout' WHERE id = 'r-3'"
    )
    active = RegistrationRepository(SCHEMA).active(conn, [ALEX, SAM])
    assert list(active) == [ALEX]
    assert [r.id for r in active[ALEX]] == ["r-1", "r-2"]
    assert "token" not in {f.name for f in attrs.fields(PushRegistration)}
    with pytest.raises(Conflict):
        register(conn, "r-4", SAM, "tok-1")  # UNIQUE (provider, token)
    with pytest.raises(StorageError):
        RegistrationRepository(SCHEMA).register(
            conn,
            id="r-5",
            user_id=SAM,
            device_id="d",
            auth_session_id="s",
            provider="pigeon",
            token="t",
            app_id="a",
        )


def test_forget_person_removes_registrations_and_due_work(conn: psycopg.Connection[Any]) -> None:
    register(conn, "r-1", ALEX, "tok-1")
    register(conn, "r-2", SAM, "tok-2")
    for who in (ALEX, SAM):
        conn.execute(
            f"INSERT INTO {SCHEMA}.windows (recipient, thread, end_at) VALUES (%s, 't', now())",
            [who],
        )
        conn.execute(
            f"INSERT INTO {SCHEMA}.badge_syncs (recipient, pending, due_at)"
            " VALUES (%s, true, now())",
            [who],
        )
        conn.execute(
            f"INSERT INTO {SCHEMA}.delayed_releases (due_at, recipient, thread, device, kind)"
            " VALUES (now(), %s, 't', 'd', 'message')",
            [who],
        )
        conn.execute(
            f"INSERT INTO {SCHEMA}.push_sends (notification_id, registration_id, recipient, kind,"
            " due_at, next_at) VALUES ('n', %s, %s, 1, now(), now())",
            [f"r-{who}", who],
        )
        # The audit of the person's deliveries (M6) goes too.
        conn.execute(
            f"INSERT INTO {SCHEMA}.push_deliveries (id, notification_id, registration_id,"
            " recipient, kind, decided_at, ended_at, outcome)"
            " VALUES (%s, 'n', %s, %s, 1, now(), now(), 'sent')",
            [len(who), f"r-{who}", who],
        )
        conn.execute(
            f"INSERT INTO {SCHEMA}.push_holds (recipient, at, kind, reason, record)"
            " VALUES (%s, now(), 1, 'suspended', 'p')",
            [who],
        )
        conn.execute(
            f"INSERT INTO {SCHEMA}.push_day_counts (recipient, day, count)"
            " VALUES (%s, current_date, 1)",
            [who],
        )
    forget_person(conn, ALEX, SCHEMA)
    for table, column in (
        ("push_registrations", "user_id"),
        ("windows", "recipient"),
        ("badge_syncs", "recipient"),
        ("delayed_releases", "recipient"),
        ("push_sends", "recipient"),
        ("push_deliveries", "recipient"),
        ("push_holds", "recipient"),
        ("push_day_counts", "recipient"),
    ):
        rows = conn.execute(f"SELECT {column} FROM {SCHEMA}.{table}".encode()).fetchall()
        assert rows == [(SAM,)], table


def test_insert_if_absent_never_overwrites_and_appends_only_when_inserted(
    conn: psycopg.Connection[Any], world: None
) -> None:
    """S5 (seed 001 note 17): following inserts a row all unless one exists; one event only
    when inserted; a deferred event is handed to the caller instead of the log."""
    from pgworld import T_ESK, T, events, thread

    from notify_core.hints.levels import Preference
    from notify_pg import EventLog, PreferenceRepository
    from notify_reference_host import ReferenceHost

    repo = PreferenceRepository(ReferenceHost("host"), EventLog(SCHEMA), SCHEMA)
    all_ = Preference(level="all")
    inserted = repo.insert_if_absent(conn, ALEX, thread(T), all_, occurred_at=NOW)
    assert inserted is not None and inserted.version == 1
    assert repo.insert_if_absent(conn, ALEX, thread(T), Preference(level="mute")) is None
    repo.put(conn, SAM, thread(T), Preference(level="mute"))
    assert repo.insert_if_absent(conn, SAM, thread(T), all_) is None
    logged = events(conn)
    assert [(e["audience"], e["payload"]) for e in logged] == [
        (
            ALEX,
            {"preference": {"target": {"kind": "thread", "id": T}, "level": "all", "version": 1}},
        ),
        (
            SAM,
            {"preference": {"target": {"kind": "thread", "id": T}, "level": "mute", "version": 1}},
        ),
    ]
    assert logged[0]["occurred_at"] == "2026-10-23T09:00:00Z"
    deferred: list[Any] = []
    assert repo.insert_if_absent(conn, ALEX, thread(T_ESK), all_, defer=deferred) is not None
    assert len(events(conn)) == 2 and [e.audience for e in deferred] == [ALEX]
    levels = {p.target.id: p.level for p in repo.list(conn, SAM)}
    assert levels == {T: "mute"}
