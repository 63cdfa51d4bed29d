"""The mail drain and the inbox fan-out under faults (issue 29), as the push path already is:

- a real ``pg_ctl restart`` in the middle of a mail drain mails each (person, entry) once and
  leaves nobody waiting for a lease: the mark of a mail sent is held and written when the
  database is back, the untried rows are released then, with no attempt counted;
- a mail sent again keeps its Message-ID;
- SIGTERM reaches the drain between mails (1,000 due) and the fan-out between events (120
  in the outbox): the unit in progress completes, nothing more, and the rest is given back;
- after a restart the fan-out takes its own claims again at once; a worker killed with
  SIGKILL leaves claims that another worker takes at once, not after the 5-minute timeout;
- a worker whose session was ended by the idle-in-transaction timeout says its partition was
  taken over.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from mailpg import SECRET, SENDER, Clock, Recorder, drain, free_port, smtp_server
from pgpipeline import POLICY, Log, PgRun, lines_of
from pgworld import HOST_SCHEMA, SCHEMA

from notify_core.replay.run import policy_from_mapping
from notify_pg import StorageError, migrate
from notify_pg.inbox.fanout import InboxFanOut
from notify_pg.inbox.reads import emit
from notify_pg.mail.drain import MailDrain, MailDrainConfig
from notify_pg.mail.rounds import MailRound
from notify_pg.mail.smtp import Outgoing, SmtpConfig, SmtpSender
from notify_pg.push.recorder import NullRecorder
from notify_pg.push.worker import Worker, WorkerConfig, worker_connection
from notify_reference_host import ReferenceHost, migrate_reference_host
from notify_reference_host.wiki import ReferenceWiki

READ_ALL = [
    {"permission": "read_pages", "match": "all"},
    {"permission": "read_comments", "match": "all"},
]
HERE = Path(__file__).resolve().parents[1]


@pytest.fixture
def server() -> Iterator[tuple[Recorder, int]]:
    yield from smtp_server()


@pytest.fixture
def own_server() -> Iterator[tuple[str, Callable[[str], None]]]:
    """A server of this test alone (it is restarted): its DSN and a `pg_ctl restart`."""
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

    dsn = str(server.get_uri())
    with psycopg.connect(dsn, autocommit=True) as conn:
        migrate(conn, SCHEMA)
        migrate_reference_host(conn, HOST_SCHEMA)
    try:
        yield dsn, lambda mode: pg_ctl("-m", mode, "-l", os.path.join(data, "log"), "restart")
    finally:
        pg_ctl("-m", "immediate", "stop")
        shutil.rmtree(base, ignore_errors=True)


def person(i: int) -> str:
    return f"w{i:04d}"


def wiki_world(conn: psycopg.Connection[Any], people: int) -> ReferenceWiki:
    """One site with mail configured, page p1 watched by ``people`` readers with addresses."""
    wiki = ReferenceWiki(HOST_SCHEMA)
    with conn.transaction():
        wiki.add_site(conn, "s1", host="wiki.example.org")
        wiki.set_settings(conn, mail_configured=True)
        wiki.add_group(conn, "readers", READ_ALL)
        wiki.add_page(conn, "p1", "s1", "/ops/runbook", title="Runbook")
        ids = "'w' || lpad(i::text, 4, '0')"
        conn.execute(
            f"INSERT INTO {HOST_SCHEMA}.wiki_users (id, email, verified, locale)"
            f" SELECT {ids}, {ids} || '@example.org', true, 'en'"
            " FROM generate_series(1, %s) i",
            [people],
        )
        conn.execute(
            f"INSERT INTO {HOST_SCHEMA}.wiki_memberships (group_id, user_id)"
            f" SELECT 'readers', {ids} FROM generate_series(1, %s) i",
            [people],
        )
        conn.execute(
            f"INSERT INTO {HOST_SCHEMA}.wiki_watchers (page_id, user_id)"
            f" SELECT 'p1', {ids} FROM generate_series(1, %s) i",
            [people],
        )
    return wiki


def edits(conn: psycopg.Connection[Any], count: int) -> None:
    """``count`` saves of p1 by bob, in the outbox."""
    start = datetime.now(UTC) - timedelta(hours=1)
    with conn.transaction():
        for n in range(count):
            emit(
                conn,
                "page.edited",
                {"page": "p1"},
                actor="bob",
                occurred_at=start + timedelta(seconds=n),
                schema=SCHEMA,
            )


def mails_due(conn: psycopg.Connection[Any], people: int) -> None:
    """One email due now for each of ``people`` watchers of p1 (an edit fanned out)."""
    wiki = wiki_world(conn, people)
    edits(conn, 1)
    InboxFanOut(wiki, schema=SCHEMA).drain(conn)
    conn.execute(
        f"UPDATE {SCHEMA}.inbox_entries SET email_after = now() - interval '1 second'"
        " WHERE email_state = 'pending'"
    )


def mail_states(conn: psycopg.Connection[Any]) -> Counter[tuple[str, int]]:
    """The entries by (email state, attempts)."""
    rows = conn.execute(
        f"SELECT email_state, email_attempts FROM {SCHEMA}.inbox_entries"
    ).fetchall()
    return Counter((str(r[0]), int(r[1])) for r in rows)


def outbox(conn: psycopg.Connection[Any]) -> tuple[int, int]:
    """(events processed, events claimed and not processed)."""
    row = conn.execute(
        f"SELECT count(processed_at), count(*) FILTER (WHERE processed_at IS NULL"
        f" AND claimed_by IS NOT NULL) FROM {SCHEMA}.inbox_outbox"
    ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


# --- 1. a restart in the middle of a mail drain --------------------------------------------


@pytest.mark.parametrize("mode", ["fast", "immediate"])
def test_a_real_restart_in_a_mail_drain_mails_each_entry_once_and_nobody_waits_for_a_lease(
    own_server: tuple[str, Callable[[str], None]],
    server: tuple[Recorder, int],
    mode: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """`pg_ctl restart` right after the fifth of 40 mails went: the worker holds that mail's
    mark and the release of the 35 it had not tried, writes both when the database is back,
    and sends the rest. Every person gets one mail, every entry ends ``sent`` after one
    attempt; the 600 s lease (the real clock's) never comes into it."""
    dsn, restart = own_server
    handler, port = server
    with psycopg.connect(dsn, autocommit=True) as conn:
        mails_due(conn, 40)
    restarted = threading.Event()
    sends: list[str] = []

    def on_sent(outgoing: Outgoing) -> None:
        sends.append(outgoing.recipients[0])
        if len(sends) == 5:
            threading.Thread(target=lambda: (restart(mode), restarted.set())).start()
            time.sleep(0.3)  # the server goes down before this mail is marked

    smtp = SmtpConfig.from_url(f"smtp://127.0.0.1:{port}?timeout=10")
    mail = MailDrain(
        ReferenceWiki(HOST_SCHEMA),
        lambda: SmtpSender(smtp),
        secret=lambda conn: SECRET,
        config=MailDrainConfig(sender=SENDER, people=100),
        schema=SCHEMA,
        on_sent=on_sent,
    )
    caplog.set_level("INFO", logger="notify_pg")
    config = WorkerConfig(poll_interval=timedelta(milliseconds=50))
    connection = worker_connection(
        lambda: psycopg.connect(dsn, autocommit=True, connect_timeout=5), config, schema=SCHEMA
    )
    worker = Worker(
        connection,
        ReferenceHost(HOST_SCHEMA),
        schema=SCHEMA,
        config=config,
        rounds=[MailRound(mail, connection, NullRecorder(), poll=timedelta(seconds=1))],
    )
    stop = threading.Event()
    thread = threading.Thread(target=worker.run, args=(stop,))
    thread.start()
    states: Counter[tuple[str, int]] = Counter()
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if restarted.is_set():
                try:
                    with psycopg.connect(dsn, autocommit=True) as conn:
                        states = mail_states(conn)
                except psycopg.OperationalError:
                    states = Counter()
                if states == Counter({("sent", 1): 40}) and mail.held == 0:
                    break
            time.sleep(0.2)
    finally:
        stop.set()
        thread.join(30)
    assert restarted.is_set()
    assert states == Counter({("sent", 1): 40})  # no attempt counted against a released row
    per_person = Counter(to for _f, (to,), _c in handler.received)
    assert per_person == Counter(f"{person(i)}@example.org" for i in range(1, 41))
    assert len(sends) == 40
    assert worker.stats.failures >= 1
    messages = [record.msg for record in caplog.records]
    assert "mail writes held" in messages  # the restart hit the drain's writes
    assert "mail writes done" in messages


def test_a_mail_sent_again_keeps_its_message_id(
    conn: psycopg.Connection[Any], connect: Any, server: tuple[Recorder, int]
) -> None:
    """A worker dies between its send and its mark: after the lease another worker sends the
    mail again, with the same Message-ID (derived from stable ids, not the send time)."""
    handler, port = server
    mails_due(conn, 1)
    due = conn.execute(f"SELECT email_after FROM {SCHEMA}.inbox_entries").fetchone()
    assert due is not None
    clock = Clock(due[0].astimezone(UTC))

    class Crash(Exception):
        pass

    def die(outgoing: Outgoing) -> None:
        raise Crash

    with pytest.raises(Crash):
        drain(port, clock, on_sent=die).drain_once(connect())
    clock.now += timedelta(minutes=11)  # after the lease
    assert drain(port, clock).drain_once(conn) == 1
    first, second = (
        [line for line in content.splitlines() if line.lower().startswith(b"message-id:")]
        for _f, _t, content in handler.received
    )
    assert first == second and len(first) == 1
    dates = [
        next(line for line in content.splitlines() if line.startswith(b"Date:"))
        for _f, _t, content in handler.received
    ]
    assert dates[0] != dates[1]  # sent at two times: the id does not come from the time


# --- 2. the stop signal reaches the drain and the fan-out ----------------------------------


class Holding(Recorder):
    """Keeps what it receives and holds back its answer to the ``at``-th mail until
    ``release`` is set (the worker is then in the middle of that mail)."""

    def __init__(self, at: int) -> None:
        super().__init__()
        self.at = at
        self.holding = threading.Event()
        self.release = threading.Event()

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        answer = await super().handle_DATA(server, session, envelope)
        if len(self.received) == self.at:
            self.holding.set()
            while not self.release.is_set():
                await asyncio.sleep(0.01)
        return answer


def start_worker(dsn: str, *options: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            *(sys.executable, "-m", "notify_cli", "worker", "--dsn", dsn),
            *("--partitions", "1", "--poll-interval", "0.05", *options),
        ],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )


def read_until(proc: subprocess.Popen[str], message: str, seen: list[dict[str, Any]]) -> None:
    """Read the worker's log lines until one says ``message``."""
    assert proc.stderr is not None
    for line in proc.stderr:
        seen.append(json.loads(line))
        if seen[-1]["msg"] == message:
            return
    raise AssertionError(f"no {message!r} line: {seen}")


def test_sigterm_reaches_the_mail_drain_between_mails_with_1000_due(
    conn: psycopg.Connection[Any], db_dsn: str
) -> None:
    """1,000 mails due: SIGTERM while the third mail is being sent. That mail completes and
    is marked; no other goes; the rest of the claim is back to ``pending`` at once with no
    attempt counted, and the worker exits 0."""
    from aiosmtpd.controller import Controller

    mails_due(conn, 1000)
    handler = Holding(at=3)
    port = free_port()
    controller = Controller(handler, hostname="127.0.0.1", port=port)
    controller.start()
    proc = start_worker(db_dsn, "--smtp-url", f"smtp://127.0.0.1:{port}", "--mail-from", SENDER)
    seen: list[dict[str, Any]] = []
    try:
        assert handler.holding.wait(60), "the worker never sent its third mail"
        proc.send_signal(signal.SIGTERM)
        read_until(proc, "stopping", seen)
        handler.release.set()
        _out, err = proc.communicate(timeout=60)
    finally:
        handler.release.set()
        proc.kill()
        controller.stop()
    assert proc.returncode == 0, err
    lines = [*seen, *(json.loads(line) for line in err.splitlines())]
    assert lines[-1]["msg"] == "worker stopped"
    assert len(handler.received) == 3
    assert mail_states(conn) == Counter({("sent", 1): 3, ("pending", 0): 997})
    stopped = [line for line in lines if line["msg"] == "mail round" and "released" in line]
    assert [line["released"] for line in stopped] == [97]  # the claim of 100 people


def test_sigterm_reaches_the_fan_out_between_events_with_120_in_the_outbox(
    conn: psycopg.Connection[Any], db_dsn: str
) -> None:
    """120 events in the outbox: SIGTERM while the first is being fanned out (held on a lock
    of the host's watchers). That event completes; no other starts; the 49 other claims of
    the round are given back at once, and the worker exits 0."""
    wiki_world(conn, 3)
    edits(conn, 120)
    locker = psycopg.connect(db_dsn, autocommit=True)
    proc: subprocess.Popen[str] | None = None
    seen: list[dict[str, Any]] = []
    try:
        with locker.transaction():
            locker.execute(f"LOCK TABLE {HOST_SCHEMA}.wiki_watchers IN ACCESS EXCLUSIVE MODE")
            proc = start_worker(db_dsn)
            deadline = time.monotonic() + 60
            while outbox(conn)[1] == 0 or not waiting(conn):
                assert time.monotonic() < deadline, "the fan-out never waited for the lock"
                time.sleep(0.05)
            assert outbox(conn) == (0, 50)
            proc.send_signal(signal.SIGTERM)
            read_until(proc, "stopping", seen)
        _out, err = proc.communicate(timeout=60)
    finally:
        locker.close()
        if proc is not None:
            proc.kill()
    assert proc.returncode == 0, err
    lines = [*seen, *(json.loads(line) for line in err.splitlines())]
    assert lines[-1]["msg"] == "worker stopped"
    assert outbox(conn) == (1, 0)  # the event in progress, and no claim left behind
    (done,) = [line for line in lines if line["msg"] == "inbox round stopped"]
    assert done["released"] == 49
    counts = conn.execute(f"SELECT DISTINCT count FROM {SCHEMA}.inbox_entries").fetchall()
    assert counts == [(1,)]


def waiting(conn: psycopg.Connection[Any]) -> bool:
    """Whether the worker's session waits for a lock."""
    row = conn.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'notify worker'"
        " AND datname = current_database() AND wait_event_type = 'Lock'"
    ).fetchone()
    return row is not None and int(row[0]) > 0


# --- 3. the fan-out's claims after a restart and a killed worker ---------------------------


def test_after_a_restart_the_fan_out_takes_its_own_claims_again_at_once(
    own_server: tuple[str, Callable[[str], None]],
) -> None:
    """`pg_ctl restart` after the third of 120 events: the round fails; the same fan-out's
    next drain takes its 47 other claims at once (not after the 5-minute claim timeout) and
    finishes every event, each counted once."""
    dsn, restart = own_server
    with psycopg.connect(dsn, autocommit=True) as conn:
        wiki = wiki_world(conn, 3)
        edits(conn, 120)
    done: list[int] = []

    def on_batch(event: int) -> None:
        done.append(event)
        if len(done) == 3:
            restart("fast")

    fanout = InboxFanOut(wiki, schema=SCHEMA, on_batch=on_batch)
    with pytest.raises((StorageError, psycopg.Error)):
        fanout.fan_out_claim(psycopg.connect(dsn, autocommit=True))
    with psycopg.connect(dsn, autocommit=True) as conn:
        assert outbox(conn) == (3, 47)
        assert fanout.drain(conn) == 117
        assert outbox(conn) == (120, 0)
        counts = conn.execute(f"SELECT DISTINCT count FROM {SCHEMA}.inbox_entries").fetchall()
    assert counts == [(120,)]


def test_another_worker_takes_a_restarted_workers_claims_at_once(
    own_server: tuple[str, Callable[[str], None]],
) -> None:
    """The claims of a worker whose session ended in a restart are free for any worker at
    once: their session is gone."""
    dsn, restart = own_server
    with psycopg.connect(dsn, autocommit=True) as conn:
        wiki = wiki_world(conn, 3)
        edits(conn, 60)
    first = InboxFanOut(wiki, schema=SCHEMA, on_batch=lambda _e: restart("immediate"))
    with pytest.raises((StorageError, psycopg.Error)):
        first.fan_out_claim(psycopg.connect(dsn, autocommit=True))
    with psycopg.connect(dsn, autocommit=True) as conn:
        assert outbox(conn) == (1, 49)
        assert InboxFanOut(wiki, schema=SCHEMA).drain(conn) == 59
        assert outbox(conn) == (60, 0)


def test_a_killed_fan_out_workers_claims_are_taken_at_once_not_after_the_timeout(
    conn: psycopg.Connection[Any], db_dsn: str
) -> None:
    """A worker process killed with SIGKILL after its first event holds 49 claims; another
    worker (5-minute claim timeout) takes them within seconds and finishes every event,
    each counted once."""
    wiki = wiki_world(conn, 3)
    edits(conn, 50)
    script = (
        "import os, signal, sys, psycopg\n"
        f"sys.path[:0] = [{str(HERE)!r}, {str(HERE.parent)!r}]\n"
        "from notify_pg.inbox.fanout import InboxFanOut\n"
        "from notify_reference_host.wiki import ReferenceWiki\n"
        f"fanout = InboxFanOut(ReferenceWiki({HOST_SCHEMA!r}), schema={SCHEMA!r},\n"
        "    on_batch=lambda _e: os.kill(os.getpid(), signal.SIGKILL))\n"
        f"fanout.fan_out_claim(psycopg.connect({db_dsn!r}, autocommit=True))\n"
    )
    killed = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=60)
    assert killed.returncode == -signal.SIGKILL, killed.stderr.decode()
    assert outbox(conn) == (1, 49)
    other = InboxFanOut(wiki, schema=SCHEMA)
    deadline = time.monotonic() + 30
    while outbox(conn)[0] < 50 and time.monotonic() < deadline:
        other.drain(conn)
        time.sleep(0.05)
    assert outbox(conn) == (50, 0), "the killed worker's claims waited for the claim timeout"
    counts = conn.execute(f"SELECT DISTINCT count FROM {SCHEMA}.inbox_entries").fetchall()
    assert counts == [(50,)]


# --- 5. a session ended by the idle-in-transaction timeout ---------------------------------


def test_a_session_ended_by_the_idle_timeout_says_its_partition_was_taken_over(
    new_database: Callable[[str | None], str],
    pg_template: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A worker that idles inside its consumer round past --partition-takeover loses its
    session (25P03): its failed round's line says the partition was taken over, and so does
    `notify db status`."""
    from click.testing import CliRunner

    from notify_cli.main import cli

    dsn = new_database(pg_template)
    with psycopg.connect(dsn, autocommit=True) as conn:
        run = PgRun(dsn, conn, policy_from_mapping(tomllib.loads(POLICY)))
        run.feed_lines(lines_of(Log().team()))
        run.worker.close()
        conn.execute(
            f"INSERT INTO {SCHEMA}.event_log (type, occurred_at, actor, payload)"
            " SELECT 'message.created', now(), 'sam', jsonb_build_object('message', 'b' || g,"
            " 'thread', 't', 'thread_seq', 100 + g, 'author', 'sam', 'origin', 'human',"
            " 'kind', 'text') FROM generate_series(1, 3) AS g"
        )
    paused: list[int] = []

    def pause(_conn: Any, _event: Any) -> None:
        if not paused:  # the first event of the round idles past the takeover
            paused.append(1)
            time.sleep(1.5)

    worker = Worker(
        lambda: psycopg.connect(dsn, autocommit=True),
        ReferenceHost(HOST_SCHEMA),
        schema=SCHEMA,
        config=WorkerConfig(partitions=1, partition_takeover=timedelta(milliseconds=500)),
        on_event=pause,
    )
    caplog.set_level("INFO", logger="notify_pg.worker")
    stop = threading.Event()
    thread = threading.Thread(target=worker.run, args=(stop,))
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while worker.stats.failures < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        stop.set()
        thread.join(30)
    failed = next(r for r in caplog.records if r.msg == "round failed")
    fields = failed.fields  # type: ignore[attr-defined]
    assert fields["sqlstate"] == "25P03" and fields["code"] == "storage_unavailable"
    assert fields["taken_over"] is True
    status = json.loads(CliRunner().invoke(cli, ["db", "status", "--dsn", dsn]).stdout)
    (consumer,) = status["consumers"]
    assert consumer["last_failure"]["sqlstate"] == "25P03"
    assert "partition was taken over" in consumer["last_failure"]["message"]
