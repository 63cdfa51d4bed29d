"""Metrics and structured logs of the worker (issue 13 points 1 and 2): ``notify worker
--metrics-port`` serves Prometheus metrics over real HTTP whose counts equal the replay of the
same log (hints by kind and decision, skips by the metric reasons of D10), the gauges read the
database, and no metric and no log line names a person, a device, a registration or a token."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import tomllib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner
from pgpipeline import POLICY, START, Log, PgRun, lines_of
from pgworld import SCHEMA
from scrape import Samples, by, scrape

from notify_cli.main import cli
from notify_core.hints.decide import METRIC_REASONS, SkipReason
from notify_core.hints.delivery import SendResult
from notify_core.replay.run import policy_from_mapping
from notify_pg.ops.metrics import Metrics
from notify_pg.push.providers import FakeProvider
from notify_pg.push.worker import WorkerConfig

ROOT = Path(__file__).resolve().parents[3]
# A log without live connections: `notify worker` has no gateway, so it reads none (seed 001
# note 10) and decides as the replay of a log whose devices never connect.
LOG = ROOT / "tests" / "replay" / "ten_messages_read_before_end.jsonl"
ID_KEYS = {"user", "actor", "audience", "author", "device", "registration", "mention_ids"}


def ids_of(lines: Iterable[str]) -> set[str]:
    """The ids of people, devices and registrations a log names (3 characters or more)."""
    found: set[str] = set()

    def walk(value: Any, key: str | None) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                walk(v, k)
        elif isinstance(value, list):
            for v in value:
                walk(v, key)
        elif isinstance(value, str) and key in ID_KEYS and len(value) >= 3:
            found.add(value)

    for line in lines:
        if line.strip():
            walk(json.loads(line), None)
    return found


def assert_names_none(text: str, ids: Iterable[str]) -> None:
    for ident in ids:
        pattern = rf"(?<![\w-]){re.escape(ident)}(?![\w-])"
        assert not re.search(pattern, text), f"{ident!r} appears in {text[:2000]}"


def tokens(dsn: str) -> set[str]:
    with psycopg.connect(dsn) as conn:
        return {row[0] for row in conn.execute(f"SELECT token FROM {SCHEMA}.push_registrations")}


@pytest.fixture
def worker_process(db_dsn: str) -> Iterator[Callable[..., tuple[subprocess.Popen[str], int]]]:
    """Start ``notify worker --metrics-port 0`` and return it with its port (from its log)."""
    procs: list[subprocess.Popen[str]] = []

    def start(*args: str) -> tuple[subprocess.Popen[str], int]:
        proc = subprocess.Popen(
            [sys.executable, "-m", "notify_cli", "worker", "--metrics-port", "0", *args],
            stderr=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "NOTIFY_DSN": db_dsn},
        )
        procs.append(proc)
        assert proc.stderr is not None
        line = proc.stderr.readline()
        first = json.loads(line)
        assert first["msg"] == "metrics serving", line
        return proc, int(first["port"])

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def idle(samples: Samples) -> bool:
    lag = by(samples, "notify_consumer_lag", "notify_partition")
    due = by(samples, "notify_due_waiting", "notify_job_kind")
    return bool(lag) and not any(lag.values()) and bool(due) and not any(due.values())


def wait_idle(port: int, timeout: float = 60) -> Samples:
    """Scrape until two scrapes a pause apart (longer than the gauges' cache of one read)
    find the consumer at the head, no due work or push send waiting and the same counts."""
    deadline = time.monotonic() + timeout
    last: Samples | None = None
    while time.monotonic() < deadline:
        _text, samples = scrape(port)
        if idle(samples):
            if last is not None and last == samples:
                return samples
            last = samples
        else:
            last = None
        time.sleep(0.3)
    raise AssertionError(f"the worker did not get idle: {samples}")


def test_scraped_counts_equal_the_replay_and_name_no_person_d10(
    db_dsn: str, worker_process: Callable[..., tuple[subprocess.Popen[str], int]]
) -> None:
    """A log loaded into PostgreSQL and worked off by `notify worker --metrics-port`: the
    scraped hint counts by kind and decision equal `notify replay` of the file, the skips by
    reason are the replay's skips mapped by D10 plus the pushes that expired at send time (the
    log lies in the past), and neither the scrape nor the JSON log lines name an id of the
    log or a registration's token."""
    policy = ["--policy", str(LOG.with_suffix(".toml"))]
    runner = CliRunner()
    replay = runner.invoke(cli, ["replay", str(LOG), *policy, "--include-skips"])
    assert replay.exit_code == 0, replay.output
    hints = [json.loads(line) for line in replay.stdout.splitlines()]
    loaded = runner.invoke(cli, ["db", "load", str(LOG), "--dsn", db_dsn])
    assert loaded.exit_code == 0, loaded.output

    proc, port = worker_process(*policy, "--poll-interval", "0.05", "--fake-provider", "apns")
    samples = wait_idle(port)
    text, _ = scrape(port)
    proc.send_signal(signal.SIGTERM)
    _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err

    decided = by(samples, "notify_hints_decided_total", "notify_kind", "notify_decision")
    assert decided == dict(Counter((h["kind"], h["decision"]) for h in hints))
    assert {k for k, _d in decided} == {"message", "sync"}
    assert {d for _k, d in decided} == {"send", "collect", "skip"}

    pushes = sum(1 for h in hints for r in h.get("routes", ()) if r["via"] == "push")
    expected = Counter(
        METRIC_REASONS[SkipReason(h["reason"])] for h in hints if h["decision"] == "skip"
    )
    expected["expired"] += pushes  # every push is past push.max_age when the worker sends it
    skipped = by(samples, "notify_push_skipped_total", "notify_reason")
    assert skipped == {(reason,): n for reason, n in expected.items()}
    assert set(expected) == {"preference", "read", "expired"}
    assert by(samples, "notify_push_sent_total", "notify_outcome") == {}

    assert by(samples, "notify_consumer_lag", "notify_consumer", "notify_partition") == {
        ("push", "0"): 0,
        ("push", "1"): 0,
    }
    assert by(samples, "notify_consumer_lag_age_seconds", "notify_partition") == {
        ("0",): 0,
        ("1",): 0,
    }
    with psycopg.connect(db_dsn) as conn:
        active = dict(
            conn.execute(
                f"SELECT provider, count(*) FROM {SCHEMA}.push_registrations"
                " WHERE disabled_at IS NULL GROUP BY provider"
            ).fetchall()
        )
    assert active  # the log registers phones
    assert by(samples, "notify_push_registrations_active", "notify_push_provider") == {
        (p,): n for p, n in active.items()
    }
    assert by(samples, "notify_mails", "notify_mail_state") == {
        ("pending",): 0,
        ("sent",): 0,
        ("failed",): 0,
    }
    assert by(samples, "notify_outbox_backlog") == {(): 0}
    rounds = by(samples, "notify_worker_rounds_total", "notify_round")
    assert rounds[("consumer",)] >= 2 and rounds[("push",)] >= 1
    work = by(samples, "notify_worker_work_total", "notify_round")
    with psycopg.connect(db_dsn) as conn:
        head = conn.execute(f"SELECT max(seq) FROM {SCHEMA}.event_log").fetchone()
    assert head is not None and head[0] >= len(LOG.read_text().splitlines())
    # A lone worker takes both partitions in each round: every event is read once.
    assert work[("consumer",)] == head[0]
    assert work[("push",)] == pushes

    ids = ids_of(LOG.read_text().splitlines()) | tokens(db_dsn)
    assert {"alex", "sam", "robin", "owner", "lotse"} <= ids
    assert any(t.startswith("token-") for t in ids)
    assert_names_none(text, ids)
    lines = [json.loads(line) for line in err.splitlines()]
    assert_names_none(err, ids)
    rounds_logged = [line for line in lines if line["msg"] == "consumer round"]
    assert rounds_logged
    for line in rounds_logged:  # issue 13 point 2: round, partition, counts, duration
        assert line["round"] == "consumer" and line["part"] in (0, 1) and line["parts"] == 2
        assert isinstance(line["events"], int) and isinstance(line["duration_ms"], float)
    assert sum(line["events"] for line in rounds_logged) == work[("consumer",)]
    assert lines[-1]["msg"] == "worker stopped"
    # Its totals: each event read once, handled for both partitions.
    assert (lines[-1]["events"], lines[-1]["partition_events"]) == (head[0], 2 * head[0])


def test_gauges_read_the_backlog_of_the_database(
    db_dsn: str, worker_process: Callable[..., tuple[subprocess.Popen[str], int]]
) -> None:
    """Before the worker has consumed anything: the lag per partition is the whole log and its
    age that of the first event; due work, the outbox and mails come from their tables, and no
    label names the person the rows belong to."""
    loaded = CliRunner().invoke(cli, ["db", "load", str(LOG), "--dsn", db_dsn])
    assert loaded.exit_code == 0, loaded.output
    events = len(LOG.read_text().splitlines())
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        conn.execute(
            f"INSERT INTO {SCHEMA}.consumer_cursors (name, part, parts) VALUES ('push', 0, 1)"
        )
        conn.execute(
            f"INSERT INTO {SCHEMA}.windows (recipient, thread, end_at)"
            " VALUES ('alex', 't', now() - interval '1 minute'), ('sam', 't', now() + interval"
            " '1 hour')"
        )
        conn.execute(
            f"INSERT INTO {SCHEMA}.inbox_outbox (type, payload, occurred_at, created_at)"
            " VALUES ('page.updated', '{}', now(), now() - interval '90 seconds')"
        )
        # Mails (seed 004 12.2): pending now; sent and failed over the last 24 hours only.
        for n, (state, after, emailed, updated) in enumerate(
            [
                ("pending", "now()", "NULL", "now()"),
                ("sent", "NULL", "now() - interval '1 hour'", "now()"),
                ("sent", "NULL", "now() - interval '2 days'", "now() - interval '2 days'"),
                ("failed", "NULL", "now() - interval '1 hour'", "now()"),
                ("failed", "NULL", "now() - interval '3 days'", "now() - interval '3 days'"),
            ]
        ):
            conn.execute(
                f"INSERT INTO {SCHEMA}.inbox_entries (user_id, category, variant, group_key,"
                " variants, last_event, in_app, email_state, email_after, emailed_at,"
                f" created_at, updated_at) VALUES ('alex', 'c', 'v', 'k{n}', ARRAY['v'], 1,"
                f" true, '{state}', {after}, {emailed}, now(), {updated})"
            )
    metrics = Metrics.start(0)
    try:
        metrics.observe_database(lambda: psycopg.connect(db_dsn, autocommit=True), SCHEMA)
        assert metrics.port
        text, samples = scrape(metrics.port)
    finally:
        metrics.close()
    assert_names_none(text, ["alex", "sam"])
    assert by(samples, "notify_mails", "notify_mail_state") == {
        ("pending",): 1,
        ("sent",): 1,
        ("failed",): 1,
    }
    assert by(samples, "notify_consumer_lag", "notify_consumer", "notify_partition") == {
        ("push", "0"): events
    }
    ((age,),) = [(v,) for (n, _a), v in samples.items() if n == "notify_consumer_lag_age_seconds"]
    assert age > 30 * 24 * 3600  # the log's first event is from October 2026
    assert by(samples, "notify_due_waiting", "notify_job_kind") == {
        ("window",): 1,
        ("release",): 0,
        ("badge_sync",): 0,
        ("push_send",): 0,
    }
    assert by(samples, "notify_outbox_backlog") == {(): 1}
    (outbox_age,) = by(samples, "notify_outbox_age_seconds").values()
    assert 89 <= outbox_age < 600


def test_the_endpoint_stays_up_without_the_database() -> None:
    """A scrape while PostgreSQL is unreachable: the counters are served, the gauges are left
    out and the failed read is counted."""
    metrics = Metrics.start(0)
    try:
        metrics.observe_database(
            lambda: psycopg.connect("host=/nonexistent dbname=x", connect_timeout=2), SCHEMA
        )
        assert metrics.port
        _text, samples = scrape(metrics.port)
    finally:
        metrics.close()
    assert by(samples, "notify_metrics_read_failures_total") == {(): 1}
    assert by(samples, "notify_consumer_lag", "notify_partition") == {}


@pytest.fixture
def run(new_database: Callable[[str | None], str], pg_template: str) -> Iterator[PgRun]:
    dsn = new_database(pg_template)
    metrics = Metrics.start(0)
    with psycopg.connect(dsn, autocommit=True) as conn:
        run = PgRun(
            dsn,
            conn,
            policy_from_mapping(tomllib.loads(POLICY)),
            providers=[FakeProvider("apns")],
            config=WorkerConfig(max_failures=2, retry_base=timedelta(seconds=10)),
            recorder=metrics.recorder,
        )
        run.metrics = metrics  # type: ignore[attr-defined]
        run.feed_lines(lines_of(Log().team()))
        yield run
        run.worker.close()
    metrics.close()


def mention(run: PgRun, seq: int, who: list[str]) -> None:
    run.event(
        "message.created",
        {
            "message": f"m{seq}",
            "thread": "t",
            "thread_seq": seq,
            "author": "owner",
            "origin": "human",
            "kind": "text",
            "mention_ids": who,
        },
        actor="owner",
        at=START + timedelta(seconds=10 * seq),
    )


def test_sends_retries_and_deactivations_are_counted_r1_r2(run: PgRun) -> None:
    """Alex's phone is accepted, Sam's asks for a retry twice and is deactivated
    (repeated_failures, max 2): sent by outcome, one retry, one deactivation, and a send
    duration per provider call."""
    provider = run.worker.push.providers["apns"]
    assert isinstance(provider, FakeProvider)
    provider.program("r-sam-phone", SendResult(result_class="retry"))
    mention(run, 1, ["alex", "sam"])
    run.push()
    run.later(60)
    run.push()
    port = run.metrics.port  # type: ignore[attr-defined]
    text, samples = scrape(port)
    assert by(samples, "notify_push_sent_total", "notify_push_provider", "notify_outcome") == {
        ("apns", "accepted"): 1,
        ("apns", "provider_error"): 2,
    }
    assert by(samples, "notify_push_retries_total", "notify_push_provider") == {("apns",): 1}
    assert by(
        samples, "notify_push_deactivations_total", "notify_push_provider", "notify_reason"
    ) == {("apns", "repeated_failures"): 1}
    assert by(samples, "notify_push_send_duration_seconds_count", "notify_push_provider") == {
        ("apns",): 3
    }
    assert run.worker.stats.provider_calls == 3
    assert (
        by(samples, "notify_hints_decided_total", "notify_kind", "notify_decision")[
            ("mention", "send")
        ]
        == 2
    )
    ids = ids_of(lines_of(Log().team())) | tokens(run.dsn)
    assert {"alex", "sam", "r-sam-phone"} <= ids
    assert_names_none(text, ids)


def test_text_log_format_keeps_the_fields(conn: psycopg.Connection[Any], db_dsn: str) -> None:
    """--log-format text: one line per record, time, level and message, then key=value."""
    loaded = CliRunner().invoke(cli, ["db", "load", str(LOG), "--dsn", db_dsn])
    assert loaded.exit_code == 0, loaded.output
    result = CliRunner().invoke(
        cli, ["worker", "--dsn", db_dsn, "--once", "--log-format", "text", "--partitions", "1"]
    )
    assert result.exit_code == 0, result.output
    lines = result.stderr.splitlines()
    rounds = [line for line in lines if " consumer round " in line]
    assert rounds
    for line in rounds:
        assert re.fullmatch(
            r"\d{4}-\d\d-\d\dT[\d:.]+\+00:00 info    consumer round round=consumer "
            r"duration_ms=[\d.]+ events=\d+ hints=\d+ position=\d+ part=0 parts=1 taken=1",
            line,
        ), line
    assert all(not line.startswith("{") for line in lines)
    assert_names_none(result.stderr, ids_of(LOG.read_text().splitlines()))


def test_metrics_port_in_use_is_exit_2(db_dsn: str) -> None:
    metrics = Metrics.start(0)
    try:
        result = CliRunner().invoke(
            cli, ["worker", "--dsn", db_dsn, "--once", "--metrics-port", str(metrics.port)]
        )
    finally:
        metrics.close()
    assert result.exit_code == 2, result.output
    assert result.stderr == (
        f"notify: worker: cannot serve metrics on 127.0.0.1:{metrics.port}: "
        "Address already in use\n"
    )
    assert "Traceback" not in result.output


def test_notify_serve_serves_the_database_gauges(db_dsn: str) -> None:
    """`notify serve --metrics-port 0`: the gauges of the database on their own port, under
    the service name notify-serve; the app itself answers as before and SIGTERM exits 0."""
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        conn.execute(
            f"INSERT INTO {SCHEMA}.inbox_outbox (type, payload, occurred_at)"
            " VALUES ('page.updated', '{}', now())"
        )
    proc = subprocess.Popen(
        [sys.executable, "-m", "notify_cli", "serve", "--port", "0", "--metrics-port", "0"],
        env={**os.environ, "NOTIFY_DSN": db_dsn},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        first = json.loads(proc.stderr.readline())
        assert first["msg"] == "metrics serving"
        assert json.loads(proc.stderr.readline())["msg"] == "listening"
        _text, samples = scrape(int(first["port"]))
    finally:
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert by(samples, "notify_outbox_backlog") == {(): 1}
    assert by(samples, "target_info", "service_name") == {("notify-serve",): 1}
    assert by(samples, "notify_hints_decided_total") == {}  # a server decides no hints
