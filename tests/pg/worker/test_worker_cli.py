"""``notify worker`` and ``notify db status``: the worker runs consumer, due work and pushes,
logs JSON lines without person data, and stops cleanly on SIGTERM; status shows the lag."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import psycopg
from click.testing import CliRunner
from pgpipeline import Log
from pgworld import HOST_SCHEMA, SCHEMA

from notify_cli.main import cli
from notify_core.events.log import parse_event
from notify_pg import EventLog, NewEvent
from notify_pg.push.worker import Worker, WorkerConfig
from notify_reference_host import ReferenceHost
from notify_reference_host.world import WorldLoader

PEOPLE = ("alex", "sam", "owner", "robin", "lotse")


def seed_now(conn: psycopg.Connection[Any]) -> None:
    """The team world and a mention of Alex by Sam, appended at the database's clock."""
    log = Log().team().pref("sam", "thread", "t", "all")
    log.msg("m1", "sam", seq=1, mention_ids=["alex"]).msg("m2", "owner", seq=2)
    loader, events = WorldLoader(SCHEMA, HOST_SCHEMA), EventLog(SCHEMA)
    for obj in log.events:
        event = parse_event(obj)
        with conn.transaction():
            loader.apply(conn, event)
            events.append(
                conn,
                NewEvent(
                    type=event.type,
                    payload=dict(event.payload),
                    actor=event.actor,
                    audience=event.audience,
                ),
            )


def test_worker_once_consumes_and_pushes(conn: psycopg.Connection[Any], db_dsn: str) -> None:
    seed_now(conn)
    runner = CliRunner()
    before = runner.invoke(cli, ["db", "status", "--dsn", db_dsn])
    assert before.exit_code == 0, before.output
    assert json.loads(before.stdout)["consumers"] == []
    handlers = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    result = runner.invoke(cli, ["worker", "--dsn", db_dsn, "--once", "--fake-provider", "apns"])
    assert result.exit_code == 0, result.output
    # Run in process, the worker gives the signals back: Ctrl-C works again afterwards.
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == handlers
    lines = [json.loads(line) for line in result.stderr.splitlines()]
    assert {line["msg"] for line in lines} >= {"consumer round", "push sent"}
    assert sum(1 for line in lines if line["msg"] == "push sent") == 2  # Alex's mention, Sam's m2
    # The kind by its name, as the metrics write it, not its code (K1).
    assert sorted(line["kind"] for line in lines if line["msg"] == "push sent") == [
        "mention",
        "message",
    ]
    for person in PEOPLE:
        assert person not in result.stderr
    status = json.loads(runner.invoke(cli, ["db", "status", "--dsn", db_dsn]).stdout)
    (consumer,) = status["consumers"]
    assert consumer["name"] == "push" and consumer["lag"] == 0
    assert consumer["position"] == status["head_seq"]
    assert consumer["partitions"] == 2  # the default (docs/decisions.md)
    assert [(p["part"], p["position"], p["lag"]) for p in consumer["parts"]] == [
        (0, status["head_seq"], 0),
        (1, status["head_seq"], 0),
    ]
    assert status["due"]["push_sends"] == {"pending": 0, "due": 0, "leased": 0}
    assert status["due"]["windows"]["open"] == 2  # Alex's and Sam's windows on t


def test_worker_without_provider_skips_no_provider(
    conn: psycopg.Connection[Any], db_dsn: str
) -> None:
    seed_now(conn)
    result = CliRunner().invoke(cli, ["worker", "--dsn", db_dsn, "--once"])
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stderr.splitlines()]
    assert [line["providers"] for line in lines if line["msg"] == "push providers"] == [[]]
    # One warning at start, naming the provider and its registrations; no line per push.
    (missing,) = [line for line in lines if line["msg"] == "push provider missing"]
    assert (missing["level"], missing["provider"], missing["registrations"]) == (
        "warning",
        "apns",
        3,
    )
    assert not [line for line in lines if line["msg"] == "push skipped"]
    (push_round,) = [line for line in lines if line["msg"] == "push round"]
    assert (push_round["sends"], push_round["calls"]) == (2, 0)  # both skipped, no_provider


def test_worker_stops_cleanly_on_sigterm(conn: psycopg.Connection[Any], db_dsn: str) -> None:
    seed_now(conn)
    env = {**os.environ, "NOTIFY_DSN": db_dsn}
    proc = subprocess.Popen(
        [sys.executable, "-m", "notify_cli", "worker", "--poll-interval", "0.05"],
        stderr=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stderr is not None
    seen = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        seen.append(line)
        if '"consumer round"' in line:
            break
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    lines = [json.loads(line) for line in [*seen, *err.splitlines()] if line.strip()]
    assert lines[0]["msg"] == "worker started"
    messages = [line["msg"] for line in lines]
    assert "stopping" in messages  # then the round in progress ends
    assert messages[-1] == "worker stopped"
    assert lines[-1]["events"] >= 1
    # The inbox's counts (no wiki events here): skips are counted, never stored.
    assert lines[-1]["inbox"] == {"events": 0, "entries": 0, "skips": {}, "dropped": {}}
    assert out == ""
    for person in PEOPLE:
        assert all(person not in json.dumps(line) for line in lines)


def test_status_and_worker_bad_dsn_is_exit_2() -> None:
    runner = CliRunner()
    for args in (
        ["db", "status", "--dsn", "host=/nonexistent dbname=x"],
        ["worker", "--once", "--dsn", "host=/nonexistent dbname=x"],
    ):
        result = runner.invoke(cli, args)
        assert result.exit_code == 2, result.output
        assert "Traceback" not in result.output


def test_status_counts_due_work(
    conn: psycopg.Connection[Any], db_dsn: str, connect: Callable[[], psycopg.Connection[Any]]
) -> None:
    seed_now(conn)
    CliRunner().invoke(cli, ["worker", "--dsn", db_dsn, "--once"])
    conn.execute(f"UPDATE {SCHEMA}.windows SET end_at = now() - interval '1 second'")
    status = json.loads(CliRunner().invoke(cli, ["db", "status", "--dsn", db_dsn]).stdout)
    assert status["due"]["windows"] == {"open": 2, "ended": 2}
    assert status["due"]["releases"] == {"pending": 0, "due": 0}


def test_status_shows_each_partition(
    conn: psycopg.Connection[Any], db_dsn: str, connect: Callable[[], psycopg.Connection[Any]]
) -> None:
    """`notify db status`: per consumer the lowest position of its partitions and the largest
    lag, and each partition's position and lag (one partition held back by an open lock)."""
    seed_now(conn)
    cursors = Worker(
        lambda: psycopg.connect(db_dsn, autocommit=True),
        ReferenceHost(HOST_SCHEMA),
        schema=SCHEMA,
        config=WorkerConfig(partitions=2),
    )
    cursors.prepare()
    cursors.close()
    other = connect()
    with other.transaction():
        # Partition 1's cursor is held: the worker drains partition 0 only.
        other.execute(f"SELECT 1 FROM {SCHEMA}.consumer_cursors WHERE part = 1 FOR UPDATE")
        worker = CliRunner().invoke(cli, ["worker", "--dsn", db_dsn, "--once", "--partitions", "2"])
        assert worker.exit_code == 0, worker.output
    result = CliRunner().invoke(cli, ["db", "status", "--dsn", db_dsn])
    assert result.exit_code == 0, result.output
    status = json.loads(result.stdout)
    head = status["head_seq"]
    (consumer,) = status["consumers"]
    assert consumer["partitions"] == 2
    parts = {p["part"]: p for p in consumer["parts"]}
    assert sorted(parts) == [0, 1]
    assert (parts[0]["position"], parts[0]["lag"]) == (head, 0)
    assert (parts[1]["position"], parts[1]["lag"]) == (0, head)
    assert consumer["position"] == min(p["position"] for p in parts.values())
    assert consumer["lag"] == head - consumer["position"]
    for part in parts.values():
        assert part["lag"] == head - part["position"]
        assert part["updated_at"].endswith("Z")


def test_worker_instance_id_reaches_every_push(
    conn: psycopg.Connection[Any], db_dsn: str, monkeypatch: Any
) -> None:
    """Seed 001 note 12: ``--instance-id`` is carried by the pushes the worker sends."""
    from notify_pg import push

    sent: list[str | None] = []
    original = push.FakeProvider.send

    def record(self: push.FakeProvider, registration: Any, notification: Any) -> Any:
        sent.append(notification.instance_id)
        return original(self, registration, notification)

    monkeypatch.setattr(push.FakeProvider, "send", record)
    seed_now(conn)
    args = ["worker", "--dsn", db_dsn, "--once", "--fake-provider", "apns"]
    result = CliRunner().invoke(cli, [*args, "--instance-id", "i-42"])
    assert result.exit_code == 0, result.output
    assert sent == ["i-42", "i-42"]
