"""Preference records on PostgreSQL (docs/rules.md#records): the log's record events written
to ``preference_records`` (M1), the record read again at the push send (M1-M3), every ended
push send kept with the record that governed it (M6), what `notify db status` counts and
what the purge removes (H3)."""

from __future__ import annotations

import tomllib
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from pgpipeline import POLICY, START, Log, PgRun, lines_of
from pgworld import SCHEMA

from notify_core.events.log import EventError
from notify_core.replay.run import policy_from_mapping
from notify_pg.inbox.reads import purge
from notify_pg.ops.status import pipeline_status
from notify_pg.push.providers import FakeProvider
from notify_pg.push.worker import WorkerConfig
from notify_pg.stores.records import PreferenceRecordRepository

CONFIG = WorkerConfig(max_age=timedelta(minutes=30))


@pytest.fixture
def run(new_database: Callable[[str | None], str], pg_template: str) -> Iterator[PgRun]:
    dsn = new_database(pg_template)
    with psycopg.connect(dsn, autocommit=True) as conn:
        run = PgRun(
            dsn,
            conn,
            policy_from_mapping(tomllib.loads(POLICY)),
            providers=[FakeProvider("apns")],
            config=CONFIG,
        )
        run.feed_lines(lines_of(Log().team()))
        yield run
        run.worker.close()


def record(run: PgRun, type_: str, at: float, preference_id: str = "p1", **payload: Any) -> None:
    run.event(
        type_,
        {"preference_id": preference_id, **payload},
        actor="alex",
        audience="alex",
        at=START + timedelta(seconds=at),
    )


def set_record(run: PgRun, at: float, preference_id: str = "p1", **push: Any) -> None:
    record(
        run,
        "record.set",
        at,
        preference_id,
        declared_channels=["push", "email"],
        channels={"push": push or {"enabled": True}},
    )


def mention_alex(run: PgRun, at: float, seq: int = 1) -> None:
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
        at=START + timedelta(seconds=at),
    )


def deliveries(run: PgRun) -> list[dict[str, Any]]:
    cur = run.conn.execute(
        f"SELECT notification_id, registration_id, recipient, decided_record, record, outcome,"
        f" reason FROM {SCHEMA}.push_deliveries ORDER BY id"
    )
    names = [d.name for d in cur.description or []]
    return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def test_m1_the_log_s_record_events_are_written_at_their_instants(run: PgRun) -> None:
    set_record(run, 5)
    record(run, "record.suspended", 6)
    set_record(run, 7, "p2", enabled=False)
    history = PreferenceRecordRepository(SCHEMA).history(run.conn, "alex")
    assert [(r.preference_id, r.status.value) for r in history] == [
        ("p1", "deleted"),
        ("p2", "active"),
    ]
    p1, p2 = history
    assert p1.set_at == START + timedelta(seconds=5)
    assert p1.suspended_at == START + timedelta(seconds=6)
    assert p1.deleted_at == p2.set_at == START + timedelta(seconds=7)


def test_m1_a_refused_record_transition_is_a_bad_line(run: PgRun) -> None:
    with pytest.raises(EventError) as caught:
        record(run, "record.suspended", 5, "unknown")
    assert caught.value.code == "refused_transition"
    assert "not-known" in caught.value.message


def test_m6_a_push_send_names_the_record_at_its_decision_and_at_its_send(run: PgRun) -> None:
    set_record(run, 5)
    mention_alex(run, 10)
    sends = run.conn.execute(f"SELECT record FROM {SCHEMA}.push_sends").fetchall()
    assert sends == [("p1",)]
    assert run.push() == 1
    assert deliveries(run) == [
        {
            "notification_id": deliveries(run)[0]["notification_id"],
            "registration_id": "r-alex-phone",
            "recipient": "alex",
            "decided_record": "p1",
            "record": "p1",
            "outcome": "sent",
            "reason": None,
        }
    ]


def test_m2_a_record_suspended_before_the_send_stops_it(run: PgRun) -> None:
    """M1: the record is read again at the send; M2: suspended, the push does not go."""
    set_record(run, 5)
    mention_alex(run, 10)
    record(run, "record.suspended", 11)
    assert run.push() == 1
    (ended,) = deliveries(run)
    assert ended["outcome"] == "skipped" and ended["reason"] == "suspended"
    assert (ended["decided_record"], ended["record"]) == ("p1", "p1")
    assert run.worker.stats.sent.total() == 0


def test_m3_a_record_turning_push_off_before_the_send_stops_it(run: PgRun) -> None:
    mention_alex(run, 10)
    set_record(run, 11, enabled=False)
    assert run.push() == 1
    (ended,) = deliveries(run)
    assert (ended["decided_record"], ended["record"]) == (None, "p1")
    assert (ended["outcome"], ended["reason"]) == ("skipped", "record_channel_off")


def test_m1_a_record_deleted_before_the_send_shapes_nothing(run: PgRun) -> None:
    set_record(run, 5, enabled=True)
    mention_alex(run, 10)
    record(run, "record.deleted", 11)
    assert run.push() == 1
    (ended,) = deliveries(run)
    assert (ended["decided_record"], ended["record"], ended["outcome"]) == ("p1", None, "sent")


def test_m6_db_status_counts_what_records_held_back(run: PgRun) -> None:
    run.conn.execute(
        f"INSERT INTO {SCHEMA}.push_holds (recipient, at, kind, thread, reason, record)"
        " VALUES ('alex', now(), 2, 't', 'suspended', 'p1'),"
        " ('alex', now(), 2, 't', 'frequency_cap', 'p1'),"
        " ('alex', now(), 2, 't', 'suspended', 'p1'),"
        " ('alex', now() - interval '2 days', 2, 't', 'record_channel_off', 'p1')"
    )
    status = pipeline_status(run.conn, SCHEMA)
    assert status["records"] == {
        "push_skipped_24h": {"frequency_cap": 1, "suspended": 2},
        "email_skipped_24h": {},
    }


def test_h3_the_purge_removes_old_deliveries_holds_and_day_counts(run: PgRun) -> None:
    set_record(run, 5)
    mention_alex(run, 10)
    run.push()
    run.conn.execute(
        f"INSERT INTO {SCHEMA}.push_holds (recipient, at, kind, thread, reason, record)"
        " VALUES ('alex', %s, 2, 't', 'suspended', 'p1')",
        [START],
    )
    # The push named a record: counted on Alex's local day (M4).
    days = run.conn.execute(f"SELECT recipient, day, count FROM {SCHEMA}.push_day_counts")
    assert days.fetchall() == [("alex", START.date(), 1)]
    kept = purge(run.conn, retention_days=60, now=START + timedelta(days=59), schema=SCHEMA)
    assert kept["deliveries"] == 0
    gone = purge(run.conn, retention_days=60, now=START + timedelta(days=61), schema=SCHEMA)
    assert gone["deliveries"] == 3
    for table in ("push_deliveries", "push_holds", "push_day_counts"):
        assert run.conn.execute(f"SELECT count(*) FROM {SCHEMA}.{table}").fetchone() == (0,)
