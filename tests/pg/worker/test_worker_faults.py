"""The worker under faults: a database outage in the middle of a send batch sends no push twice,
SIGTERM ends a backlog's run after the round in progress, a frozen worker (SIGSTOP) loses its
partition to another worker, and a failed round says why (log and `notify db status`)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import tomllib
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner
from pgpipeline import POLICY, Log, PgRun, lines_of
from pgworld import HOST_SCHEMA, SCHEMA

from notify_cli.main import cli
from notify_core.hints.delivery import Notification, SendResult
from notify_core.replay.run import policy_from_mapping
from notify_core.values.kinds import Kind, kind_code
from notify_pg.push.providers import FakeProvider
from notify_pg.push.worker import Worker, WorkerConfig
from notify_pg.stores.registrations import Registration
from notify_reference_host import ReferenceHost

PEOPLE = ("alex", "sam", "owner", "robin", "lotse")
REGISTRATIONS = ("r-alex-phone", "r-sam-phone")


@pytest.fixture
def team_dsn(new_database: Callable[[str | None], str], pg_template: str) -> Iterator[str]:
    """A database with the team world (people, channel c, threads, phones with apns)."""
    dsn = new_database(pg_template)
    with psycopg.connect(dsn, autocommit=True) as conn:
        run = PgRun(dsn, conn, policy_from_mapping(tomllib.loads(POLICY)))
        run.feed_lines(lines_of(Log().team()))
        run.worker.close()
    yield dsn


def due_sends(conn: psycopg.Connection[Any], per_registration: int) -> None:
    """Due push sends of mentions in t, ``per_registration`` to each registration, due now."""
    now = datetime.now(UTC)
    with conn.cursor() as cur:
        cur.executemany(
            f"INSERT INTO {SCHEMA}.push_sends (notification_id, registration_id, recipient, kind,"
            " thread, message, due_at, next_at) VALUES (%s, %s, %s, %s, 't', %s, %s, %s)",
            [
                (f"n-{reg}-{i}", reg, reg.split("-")[1], kind_code(Kind.MENTION), f"m{i}", now, now)
                for reg in REGISTRATIONS
                for i in range(per_registration)
            ],
        )


class RestartingProvider(FakeProvider):
    """Accepts every push; at call ``at`` the database goes away: the worker's sessions are
    terminated and new connections are refused for ``outage`` seconds (a server restart)."""

    def __init__(self, admin_dsn: str, at: int, outage: float) -> None:
        super().__init__("apns")
        self.admin_dsn, self.at, self.outage = admin_dsn, at, outage
        self.down = threading.Event()
        self.restarts = 0

    def send(self, registration: Registration, notification: Notification) -> SendResult:
        answer = super().send(registration, notification)
        if len(self.calls) == self.at and not self.restarts:
            self.restarts += 1
            self.down.set()
            with psycopg.connect(self.admin_dsn, autocommit=True) as admin:
                admin.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                    " WHERE application_name = 'faults worker'"
                )
            threading.Timer(self.outage, self.down.clear).start()
        return answer


def sending_worker(
    connect: Callable[[], psycopg.Connection[Any]], provider: Any, batch: int, lease_ms: int
) -> Worker:
    """A worker that sends one push at a time in batches of ``batch`` under a short lease."""
    return Worker(
        connect,
        ReferenceHost(HOST_SCHEMA),
        schema=SCHEMA,
        config=WorkerConfig(
            send_batch=batch,
            send_lease=timedelta(milliseconds=lease_ms),
            poll_interval=timedelta(milliseconds=50),
            max_concurrent_requests=1,
        ),
        providers=[provider],
    )


def test_outage_in_a_send_batch_sends_each_push_once(team_dsn: str) -> None:
    """The database restarts in the middle of a batch: the worker holds the results it could
    not write and writes them when the database is back, before it claims anything. The
    outage outlasts the send lease, so a claim before the held results are written would send
    them again. Every (notification, registration) is called exactly once, and the log and
    the counters count each provider call once."""
    with psycopg.connect(team_dsn, autocommit=True) as conn:
        due_sends(conn, 20)
    provider = RestartingProvider(team_dsn, at=7, outage=1.0)

    def connect() -> psycopg.Connection[Any]:
        if provider.down.is_set():
            raise psycopg.OperationalError("the server is restarting")
        return psycopg.connect(team_dsn, autocommit=True, application_name="faults worker")

    worker = sending_worker(connect, provider, batch=25, lease_ms=300)
    stop = threading.Event()
    thread = threading.Thread(target=worker.run, args=(stop,))
    thread.start()
    try:
        deadline = time.monotonic() + 15
        with psycopg.connect(team_dsn, autocommit=True) as conn:
            while time.monotonic() < deadline:
                left = conn.execute(f"SELECT count(*) FROM {SCHEMA}.push_sends").fetchone()
                if left == (0,) and not provider.down.is_set():
                    break
                time.sleep(0.1)
            time.sleep(0.3)  # a lapsed lease would be claimed again by now
            status = json.loads(CliRunner().invoke(cli, ["db", "status", "--dsn", team_dsn]).stdout)
    finally:
        stop.set()
        thread.join(10)
    assert provider.restarts == 1
    calls = Counter((c.notification.id, c.registration_id) for c in provider.calls)
    assert len(calls) == 2 * 20
    assert set(calls.values()) == {1}, {k: n for k, n in calls.items() if n > 1}
    assert worker.stats.provider_calls == 40
    assert sum(worker.stats.sent.values()) == 40
    assert worker.stats.failures >= 1
    assert worker.held_results == 0
    (consumer,) = status["consumers"]
    failure = consumer["last_failure"]
    assert failure["code"] == "storage_unavailable" and failure["round"] in ("push", "consumer")
    assert failure["failures"] >= 1


def test_held_results_survive_a_failed_write_and_count_once(
    team_dsn: str, caplog: pytest.LogCaptureFixture
) -> None:
    """`send_pushes` raises when the database fails after the calls; the next round writes the
    held results first and calls nobody again; one "push sent" line per provider call."""
    with psycopg.connect(team_dsn, autocommit=True) as conn:
        due_sends(conn, 3)
    provider = RestartingProvider(team_dsn, at=2, outage=0.2)

    def connect() -> psycopg.Connection[Any]:
        if provider.down.is_set():
            raise psycopg.OperationalError("the server is restarting")
        return psycopg.connect(team_dsn, autocommit=True, application_name="faults worker")

    worker = Worker(connect, ReferenceHost(HOST_SCHEMA), schema=SCHEMA, providers=[provider])
    caplog.set_level("INFO", logger="notify_pg.worker")
    with pytest.raises(Exception, match="PostgreSQL"):
        worker.send_pushes()
    assert worker.held_results == 6
    assert [r.msg for r in caplog.records].count("push sent") == 0
    time.sleep(0.3)
    assert worker.send_pushes() == 6  # the held results, and nothing claimed is due
    assert worker.held_results == 0
    assert len(provider.calls) == 6
    assert [r.msg for r in caplog.records].count("push sent") == 6
    assert worker.stats.sent["accepted"] == 6
    worker.close()


def backlog(conn: psycopg.Connection[Any], count: int) -> None:
    """``count`` messages by Sam in t, appended at once (a consumer's backlog)."""
    conn.execute(
        f"INSERT INTO {SCHEMA}.event_log (type, occurred_at, actor, payload)"
        " SELECT 'message.created', now(), 'sam', jsonb_build_object('message', 'b' || g,"
        " 'thread', 't', 'thread_seq', 100 + g, 'author', 'sam', 'origin', 'human',"
        " 'kind', 'text') FROM generate_series(1, %s) AS g",
        [count],
    )


def start_worker(dsn: str, *options: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "notify_cli", "worker", "--dsn", dsn, *options],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )


def wait_for(proc: subprocess.Popen[str], message: str, seen: list[dict[str, Any]]) -> None:
    assert proc.stderr is not None
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        seen.append(json.loads(line))
        if seen[-1]["msg"] == message:
            return
    raise AssertionError(f"no {message!r} line: {seen}")


def test_sigterm_during_a_backlog_ends_after_the_round_in_progress(team_dsn: str) -> None:
    """A backlog of 3,000 events: SIGTERM ends the run after the consumer round in progress,
    in well under a 30 s grace period; the rest of the backlog stays for the next start."""
    with psycopg.connect(team_dsn, autocommit=True) as conn:
        backlog(conn, 3000)
    proc = start_worker(team_dsn, "--poll-interval", "0.05", "--partitions", "1")
    seen: list[dict[str, Any]] = []
    try:
        wait_for(proc, "consumer round", seen)
        proc.send_signal(signal.SIGTERM)
        sent = time.monotonic()
        _out, err = proc.communicate(timeout=30)
        took = time.monotonic() - sent
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    lines = [*seen, *(json.loads(line) for line in err.splitlines())]
    messages = [line["msg"] for line in lines]
    after = messages[messages.index("stopping") :]
    assert after.count("consumer round") <= 1, after
    assert messages[-1] == "worker stopped"
    assert took < 10, took
    with psycopg.connect(team_dsn, autocommit=True) as conn:
        status = json.loads(CliRunner().invoke(cli, ["db", "status", "--dsn", team_dsn]).stdout)
    (consumer,) = status["consumers"]
    assert consumer["lag"] > 1000  # it stopped, it did not drain the backlog first


def backend_state(conn: psycopg.Connection[Any]) -> str | None:
    row = conn.execute(
        "SELECT state FROM pg_stat_activity WHERE application_name = 'notify worker'"
        " AND datname = current_database()"
    ).fetchone()
    return None if row is None else str(row[0])


def cursor_held(conn: psycopg.Connection[Any]) -> bool:
    """Whether a consumer round holds the cursor (frozen in a round, not in due work)."""
    with conn.transaction():
        free = conn.execute(
            f"SELECT 1 FROM {SCHEMA}.consumer_cursors FOR UPDATE SKIP LOCKED"
        ).fetchall()
    return not free


def test_a_frozen_worker_loses_its_partition_to_another(team_dsn: str) -> None:
    """A worker frozen by SIGSTOP inside a consumer round holds the partition's cursor only
    until --partition-takeover (2 s here): the server ends its session, another worker takes
    the partition, and the frozen one, thawed, logs the failed round and goes on."""
    with psycopg.connect(team_dsn, autocommit=True) as conn:
        backlog(conn, 3000)
        proc = start_worker(
            team_dsn, "--poll-interval", "0.05", "--partitions", "1", "--partition-takeover", "2"
        )
        seen: list[dict[str, Any]] = []
        try:
            wait_for(proc, "consumer round", seen)
            for attempt in range(300):  # freeze it inside a round (most of a backlog's time)
                os.kill(proc.pid, signal.SIGSTOP)
                time.sleep(0.05)  # a statement in flight finishes; the session then idles
                if backend_state(conn) == "idle in transaction" and cursor_held(conn):
                    break
                os.kill(proc.pid, signal.SIGCONT)
                # Let it run a varying while, so the next stop lands elsewhere in the round.
                time.sleep(0.005 * (1 + attempt % 7))
            else:
                raise AssertionError("the worker was never frozen inside a transaction")
            frozen = time.monotonic()
            other = Worker(
                lambda: psycopg.connect(team_dsn, autocommit=True),
                ReferenceHost(HOST_SCHEMA),
                schema=SCHEMA,
                config=WorkerConfig(partitions=1, partition_takeover=timedelta(seconds=2)),
            )
            handled = 0
            while not handled and time.monotonic() - frozen < 15:
                handled = other.consume()
                if not handled:
                    time.sleep(0.1)
            took = time.monotonic() - frozen
            other.close()
            assert handled > 0, "the other worker never took the partition"
            assert 1.0 < took < 10, took
            os.kill(proc.pid, signal.SIGCONT)
            wait_for(proc, "round failed", seen)
            proc.send_signal(signal.SIGTERM)
            _out, err = proc.communicate(timeout=30)
        finally:
            os.kill(proc.pid, signal.SIGCONT) if proc.poll() is None else None
            proc.kill()
    assert proc.returncode == 0, err
    failed = next(line for line in seen if line["msg"] == "round failed")
    assert failed["code"] == "storage_unavailable"
    assert "Traceback" not in err


def test_a_refused_write_names_its_cause_in_the_log_and_the_status(team_dsn: str) -> None:
    """A read-only database: the failed round's log line carries the SQLSTATE and PostgreSQL's
    message (no person), and `notify db status` shows when the consumer failed and why."""
    cursors = Worker(
        lambda: psycopg.connect(team_dsn, autocommit=True),
        ReferenceHost(HOST_SCHEMA),
        schema=SCHEMA,
    )
    cursors.prepare()  # a worker ran before: the cursors exist
    cursors.close()
    with psycopg.connect(team_dsn, autocommit=True) as conn:
        backlog(conn, 50)
        dbname = conn.info.dbname
        conn.execute(f'ALTER DATABASE "{dbname}" SET default_transaction_read_only = on')
    proc = start_worker(team_dsn, "--poll-interval", "0.05")
    seen: list[dict[str, Any]] = []
    try:
        wait_for(proc, "round failed", seen)
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    failed = next(line for line in seen if line["msg"] == "round failed")
    assert failed["sqlstate"] == "25006"
    assert re.fullmatch(r"cannot execute [A-Z ]+ in a read-only transaction", failed["pg_message"])
    assert failed["code"] == "storage_failure" and failed["round"] == "consumer"
    for person in PEOPLE:
        assert person not in json.dumps(seen) + err
    result = CliRunner().invoke(cli, ["db", "status", "--dsn", team_dsn])
    assert result.exit_code == 0, result.output
    (consumer,) = json.loads(result.stdout)["consumers"]
    failure = consumer["last_failure"]
    assert failure["sqlstate"] == "25006" and failure["round"] == "consumer"
    assert failure["message"] == failed["pg_message"]
    assert failure["at"].endswith("Z") and failure["failures"] >= 1


def test_results_that_cannot_be_written_hold_back_pushes_not_the_consumer(
    team_dsn: str,
) -> None:
    """Writes of results keep failing (a trigger refuses them): the worker holds them and
    sends nothing more, but its consumer rounds go on; once the writes are taken the held
    results are written and nobody is called twice."""
    with psycopg.connect(team_dsn, autocommit=True) as conn:
        due_sends(conn, 3)
        conn.execute(
            "CREATE FUNCTION public.refuse() RETURNS trigger LANGUAGE plpgsql AS"
            " $$ BEGIN RAISE EXCEPTION 'writes refused'; END $$"
        )
        conn.execute(
            f"CREATE TRIGGER refuse BEFORE UPDATE ON {SCHEMA}.push_registrations"
            " FOR EACH ROW EXECUTE FUNCTION public.refuse()"
        )
        provider = FakeProvider("apns")
        worker = Worker(
            lambda: psycopg.connect(team_dsn, autocommit=True),
            ReferenceHost(HOST_SCHEMA),
            schema=SCHEMA,
            config=WorkerConfig(partitions=1),
            providers=[provider],
        )
        with pytest.raises(Exception, match="P0001"):
            worker.run_once()
        assert worker.held_results == 6 and len(provider.calls) == 6
        backlog(conn, 30)
        with pytest.raises(Exception, match="P0001"):
            worker.run_once()
        head = conn.execute(f"SELECT max(seq) FROM {SCHEMA}.event_log").fetchone()
        cursor = conn.execute(f"SELECT position FROM {SCHEMA}.consumer_cursors").fetchone()
        assert cursor == head  # the consumer went on
        assert worker.held_results == 6 and len(provider.calls) == 6
        conn.execute(f"DROP TRIGGER refuse ON {SCHEMA}.push_registrations")
        worker.run_once()
        assert worker.held_results == 0
        calls = Counter((c.notification.id, c.registration_id) for c in provider.calls)
        assert len(calls) == 6 and set(calls.values()) == {1}
        worker.close()


@pytest.fixture
def own_server() -> Iterator[tuple[str, Callable[[str], None]]]:
    """A server of this test alone (it is restarted): its DSN and a `pg_ctl` call."""
    import shutil
    import tempfile
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pgserver
        from pgserver._commands import POSTGRES_BIN_PATH

    base = tempfile.mkdtemp(prefix="notify-restart-")
    data = os.path.join(base, "data")
    server = pgserver.get_server(data, cleanup_mode=None)
    user = "pgserver" if os.geteuid() == 0 else None

    def pg_ctl(*args: str) -> None:
        # The restarted server writes to its log file, never to pipes this process waits on.
        subprocess.run(
            [str(POSTGRES_BIN_PATH / "pg_ctl"), "-D", data, "-w", *args],
            user=user,
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=60,
        )

    try:
        yield (
            str(server.get_uri()),
            lambda mode: pg_ctl("-m", mode, "-l", os.path.join(data, "log"), "restart"),
        )
    finally:
        pg_ctl("-m", "immediate", "stop")
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize("mode", ["fast", "immediate"])
def test_a_real_server_restart_in_a_send_batch_sends_each_push_once(
    own_server: tuple[str, Callable[[str], None]], mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    """`pg_ctl restart` while the worker sends a batch: the worker keeps running, reconnects,
    writes what it held, and every (notification, registration) is called exactly once."""
    from notify_pg import migrate
    from notify_reference_host import migrate_reference_host

    dsn, restart = own_server
    with psycopg.connect(dsn, autocommit=True) as conn:
        migrate(conn, SCHEMA)
        migrate_reference_host(conn, HOST_SCHEMA)
        run = PgRun(dsn, conn, policy_from_mapping(tomllib.loads(POLICY)))
        run.feed_lines(lines_of(Log().team()))
        run.worker.close()
        due_sends(conn, 20)
    restarted = threading.Event()

    class Restarting(FakeProvider):
        def send(self, registration: Registration, notification: Notification) -> SendResult:
            answer = super().send(registration, notification)
            if len(self.calls) == 5:
                threading.Thread(target=lambda: (restart(mode), restarted.set())).start()
                time.sleep(0.3)  # the server goes down while the batch is sent and written
            return answer

    provider = Restarting("apns")
    caplog.set_level("INFO", logger="notify_pg.worker")
    worker = sending_worker(
        lambda: psycopg.connect(dsn, autocommit=True, connect_timeout=5),
        provider,
        batch=40,
        lease_ms=200,
    )
    stop = threading.Event()
    thread = threading.Thread(target=worker.run, args=(stop,))
    thread.start()
    try:
        deadline = time.monotonic() + 30
        left: tuple[Any, ...] | None = None
        while time.monotonic() < deadline:
            if restarted.is_set():
                try:
                    with psycopg.connect(dsn, autocommit=True) as conn:
                        left = conn.execute(f"SELECT count(*) FROM {SCHEMA}.push_sends").fetchone()
                except psycopg.OperationalError:
                    left = None
                if left == (0,) and worker.held_results == 0:
                    break
            time.sleep(0.2)
        time.sleep(0.5)  # a lapsed lease would be claimed again by now
    finally:
        stop.set()
        thread.join(20)
    assert restarted.is_set() and left == (0,)
    calls = Counter((c.notification.id, c.registration_id) for c in provider.calls)
    assert len(calls) == 40
    assert set(calls.values()) == {1}, {k: n for k, n in calls.items() if n > 1}
    assert worker.stats.provider_calls == 40 == sum(worker.stats.sent.values())
    assert worker.stats.failures >= 1
    messages = [record.msg for record in caplog.records]
    assert "push results held" in messages  # the restart hit the writes of the batch
    assert messages.count("push sent") == 40


def test_a_revoked_insert_names_its_cause(team_dsn: str, caplog: pytest.LogCaptureFixture) -> None:
    """The worker's role may not INSERT into the tables of notify (but its failure record):
    the failed round's log line and `notify db status` name the SQLSTATE and the table."""
    from psycopg.conninfo import make_conninfo

    role = f"notify_revoked_{os.getpid()}"
    with psycopg.connect(team_dsn, autocommit=True) as conn:
        backlog(conn, 20)
        conn.execute(f"CREATE ROLE {role} LOGIN")
        for schema in (SCHEMA, HOST_SCHEMA):
            conn.execute(f"GRANT USAGE ON SCHEMA {schema} TO {role}")
            conn.execute(f"GRANT SELECT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {schema} TO {role}")
            conn.execute(f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA {schema} TO {role}")
        conn.execute(
            f"GRANT INSERT ON {SCHEMA}.consumer_failures, {SCHEMA}.consumer_cursors TO {role}"
        )
    worker = Worker(
        lambda: psycopg.connect(make_conninfo(team_dsn, user=role), autocommit=True),
        ReferenceHost(HOST_SCHEMA),
        schema=SCHEMA,
        config=WorkerConfig(partitions=1, poll_interval=timedelta(milliseconds=50)),
    )
    caplog.set_level("INFO", logger="notify_pg.worker")
    stop = threading.Event()
    thread = threading.Thread(target=worker.run, args=(stop,))
    thread.start()
    try:
        deadline = time.monotonic() + 15
        while worker.stats.failures < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        stop.set()
        thread.join(10)
        with psycopg.connect(team_dsn, autocommit=True) as conn:
            conn.execute(f"DROP OWNED BY {role}")
            conn.execute(f"DROP ROLE {role}")
    failed = next(r for r in caplog.records if r.msg == "round failed")
    fields = failed.fields  # type: ignore[attr-defined]
    assert fields["sqlstate"] == "42501" and fields["round"] == "consumer"
    assert re.fullmatch(r"permission denied for table \w+", fields["pg_message"])
    result = CliRunner().invoke(cli, ["db", "status", "--dsn", team_dsn])
    (consumer,) = json.loads(result.stdout)["consumers"]
    assert consumer["last_failure"]["sqlstate"] == "42501"
    assert consumer["last_failure"]["message"] == fields["pg_message"]
