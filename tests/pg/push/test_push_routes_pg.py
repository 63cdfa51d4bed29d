"""Seed 001 notes on PostgreSQL: live routes fail closed (note 10), the instance id in the push
payload (note 12), stored switches that are not booleans (note 8), the pending device and its
``device.pending`` event in one transaction (note 4 d)."""

from __future__ import annotations

import logging
import tomllib
from collections.abc import Callable, Iterator
from datetime import timedelta

import psycopg
import pytest
from pgpipeline import POLICY, START, Log, PgRun, lines_of
from pgworld import HOST_SCHEMA, SCHEMA

from notify_core.replay.run import policy_from_mapping
from notify_core.values.errors import NotifyError
from notify_core.values.kinds import Kind
from notify_pg import EventLog
from notify_pg.push.providers import FakeProvider
from notify_pg.push.worker import WorkerConfig


@pytest.fixture
def run(new_database: Callable[[str | None], str], pg_template: str) -> Iterator[PgRun]:
    """The team of tests/replay/build.py; Alex also has a laptop, live and focused on t."""
    dsn = new_database(pg_template)
    with psycopg.connect(dsn, autocommit=True) as conn:
        run = PgRun(
            dsn,
            conn,
            policy_from_mapping(tomllib.loads(POLICY)),
            providers=[FakeProvider("apns")],
            config=WorkerConfig(instance_id="i-1"),
        )
        log = Log().team()
        log.device("alex-laptop", "alex", "desktop")
        log.add(
            "presence.changed",
            {"device": "alex-laptop", "connected": True, "focus": ["t"], "idle": False},
        )
        run.feed_lines(lines_of(log))
        yield run
        run.worker.close()


def provider(run: PgRun) -> FakeProvider:
    found = run.worker.push.providers["apns"]
    assert isinstance(found, FakeProvider)
    return found


def mention_alex(run: PgRun, seq: int = 1) -> None:
    run.event(
        "message.created",
        {
            "message": f"m{seq}",
            "thread": "t",
            "thread_seq": seq,
            "author": "sam",
            "origin": "human",
            "kind": "text",
            "mention_ids": ["alex"],
        },
        actor="sam",
        at=START + timedelta(seconds=10 * seq),
    )


# --- note 10: live routes fail closed ----------------------------------------------------------


def test_note10_with_a_sink_the_live_laptop_gets_the_hint_by_the_gateway(run: PgRun) -> None:
    """D4: Alex reads t on his live laptop: with a sink (the gateway) he is active there."""
    mention_alex(run)
    [hint] = [h for h in run.hints() if h["recipient"] == "alex"]
    assert (hint["decision"], hint["reason"]) == ("skip", "active_in_thread")
    assert run.push_sends() == []


def test_note10_without_a_sink_no_device_is_live_and_the_push_goes_out(run: PgRun) -> None:
    """Seed 001 note 10: a worker without a sink cannot deliver ``gateway`` routes, so live
    routes fail closed: no connection counts, nobody is active in a thread (D4) and every
    active device gets ``push`` (D5); the hint is never left to a gateway nobody delivers."""
    run.worker.push.sink = None
    mention_alex(run)
    run.push()
    [call] = provider(run).calls
    assert call.registration_id == "r-alex-phone"
    assert call.notification.kind is Kind.MENTION


def test_note10_a_sink_that_cannot_deliver_fails_the_round_and_drops_nothing(
    run: PgRun,
) -> None:
    """Seed 001 note 10: a sink that raises rolls the round back (fail closed); the event is
    decided again once the sink delivers, and the hint is not lost."""
    sink = run.worker.push.sink
    calls = []

    def failing(conn: object, hint: object, notification_id: str | None) -> None:
        calls.append(hint)
        raise RuntimeError("gateway down")

    run.worker.push.sink = failing
    with pytest.raises(RuntimeError, match="gateway down"):
        mention_alex(run)
    assert calls and run.hints() == []
    run.worker.push.sink = sink
    run.drain()
    [hint] = [h for h in run.hints() if h["recipient"] == "alex"]
    assert hint["reason"] == "active_in_thread"


# --- note 12: the instance id ------------------------------------------------------------------


def test_note12_every_push_carries_the_instance_id(run: PgRun) -> None:
    """Seed 001 note 12: a hint's push and a badge sync's push carry ``instance_id``."""
    run.worker.push.sink = None
    mention_alex(run)
    run.push()
    run.event(
        "read_state.updated",
        {"thread": "t", "last_read_seq": 1},
        actor="alex",
        audience="alex",
        at=START + timedelta(seconds=20),
    )
    run.due(START + timedelta(seconds=20))
    run.push()
    kinds = [(c.notification.kind, c.notification.instance_id) for c in provider(run).calls]
    assert kinds == [(Kind.MENTION, "i-1"), (Kind.SYNC, "i-1")]


# --- note 8: switches that are not booleans -----------------------------------------------------


def test_note8_a_switch_that_is_not_a_boolean_counts_as_unset_and_warns_once(
    run: PgRun, caplog: pytest.LogCaptureFixture
) -> None:
    """Seed 001 note 8 (D3): ``notify.admin_enabled = "no"`` counts as unset, so the default
    (enabled) applies and the admin hint goes; one warning without the value or the person."""
    run.worker.push.sink = None
    run.host.set_setting(run.conn, "alex", "notify.admin_enabled", "no")
    with caplog.at_level(logging.WARNING, logger="notify_pg"):
        run.event(
            "access.expiring",
            {"kind": "grant", "target": "g-1"},
            audience="alex",
            at=START + timedelta(seconds=10),
        )
    run.push()
    assert [c.notification.kind for c in provider(run).calls] == [Kind.ADMIN]
    warnings = [r for r in caplog.records if r.name == "notify_pg"]
    assert [r.getMessage() for r in warnings] == [
        "1 stored switch value(s) are not booleans; counted as unset"
    ]
    assert "alex" not in caplog.text and '"no"' not in caplog.text


# --- note 4 d: a pending device and its event in one transaction -------------------------------


def events_of(run: PgRun, type_: str) -> list[tuple[object, ...]]:
    return run.conn.execute(
        f"SELECT audience, actor, payload FROM {SCHEMA}.event_log WHERE type = %s ORDER BY seq",
        [type_],
    ).fetchall()


def test_note4d_a_pending_device_appends_device_pending_in_its_transaction(run: PgRun) -> None:
    """Seed 001 note 4 d, S4: registering a pending device appends exactly one
    ``device.pending`` (audience the owner, payload only the device and its platform) in the
    transaction of the insert; the consumer turns it into a ``security`` hint to the owner's
    other devices; an active device appends nothing."""
    log = EventLog(SCHEMA)
    run.worker.push.sink = None
    seq = run.host.register_device(
        run.conn,
        "alex-new",
        "alex",
        "android",
        pending=True,
        log=log,
        occurred_at=START + timedelta(seconds=10),
    )
    assert seq is not None
    assert events_of(run, "device.pending") == [
        ("alex", "alex", {"device": "alex-new", "platform": "android"})
    ]
    assert (
        run.host.register_device(run.conn, "alex-tab", "alex", "web", pending=False, log=log)
        is None
    )
    assert len(events_of(run, "device.pending")) == 1
    run.drain()
    run.at(START + timedelta(seconds=10))
    run.push()
    [call] = provider(run).calls
    assert (call.registration_id, call.notification.kind) == ("r-alex-phone", Kind.SECURITY)
    assert call.notification.target == "alex-new"


def test_note4d_a_failed_registration_leaves_neither_device_nor_event(run: PgRun) -> None:
    """Seed 001 note 4 d: the device row and its event commit together or not at all."""
    log = EventLog(SCHEMA)
    with pytest.raises(NotifyError):
        run.host.register_device(run.conn, "alex-phone", "alex", "ios", pending=True, log=log)
    with pytest.raises(NotifyError):
        run.host.register_device(run.conn, "ghost-phone", "ghost", "ios", pending=True, log=log)
    assert events_of(run, "device.pending") == []
    found = run.conn.execute(
        f"SELECT count(*) FROM {HOST_SCHEMA}.devices WHERE id = 'ghost-phone'"
    ).fetchone()
    assert found == (0,)
