"""Live inbox updates (seed 004 section 9.3, issue 28 point 4) and `notify serve` during a
database outage (issue 29 point 4), on real PostgreSQL and real sockets."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import logging
import os
import shutil
import socket
import subprocess
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from pgworld import HOST_SCHEMA, SCHEMA
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict
from websockets.exceptions import InvalidStatus
from websockets.sync.client import ClientConnection
from websockets.sync.client import connect as ws_connect
from webworld import T0, edit, make_wiki, raw, request, serving

from notify_cli.logs import JsonLines
from notify_pg import migrate
from notify_pg.inbox.live import MAX_PAYLOAD_BYTES, live_channel
from notify_pg.inbox.reads import InboxReads, purge
from notify_reference_host import migrate_reference_host

Conn = psycopg.Connection[Any]
ANA = {"X-Notify-User": "ana"}


def listener(dsn: str) -> Conn:
    conn = psycopg.connect(dsn, autocommit=True)
    conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(live_channel(SCHEMA))))
    return conn


def heard(conn: Conn) -> list[str]:
    """The payloads notified so far (waiting briefly for them to arrive)."""
    return [n.payload for n in conn.notifies(timeout=0.3)]


def people(payloads: list[str]) -> set[str]:
    return {p for payload in payloads for p in json.loads(payload)}


def test_every_write_that_moves_a_summary_notifies_its_people(db_dsn: str, conn: Conn) -> None:
    """Fan-out, read, dismissal, purge: one NOTIFY naming the people touched, at commit; a
    rolled-back write and a mail-state update send nothing."""
    wiki = make_wiki(conn, readers=("ana", "bob"))
    ear = listener(db_dsn)
    try:
        edit(conn, wiki)
        assert people(heard(ear)) == {"ana", "bob"}
        reads = InboxReads(SCHEMA)
        with conn.transaction():
            reads.read(conn, "ana")
            assert heard(ear) == []  # not before the commit
        assert people(heard(ear)) == {"ana"}
        (bob_entry,) = [e.id for e in reads.list_entries(conn, "bob").entries]
        conn.execute(f"UPDATE {SCHEMA}.inbox_entries SET email_attempts = email_attempts + 1")
        assert heard(ear) == []  # the mail drain's bookkeeping moves no summary
        with pytest.raises(RuntimeError), conn.transaction():
            reads.dismiss(conn, "bob", bob_entry)
            raise RuntimeError("rolled back")
        assert heard(ear) == []
        assert reads.dismiss(conn, "bob", bob_entry)
        assert people(heard(ear)) == {"bob"}
        edit(conn, wiki, 1)
        heard(ear)
        gone = purge(conn, retention_days=0, now=T0 + timedelta(days=1), schema=SCHEMA)
        assert gone["entries"] == 3 and people(heard(ear)) == {"ana", "bob"}
    finally:
        ear.close()


def test_many_people_are_chunked_under_the_payload_limit(db_dsn: str, conn: Conn) -> None:
    """3,000 people of 40-byte ids in one statement: several payloads, each under 8 kB, naming
    everyone once; an id too long for any payload says '*' (everyone)."""
    ear = listener(db_dsn)
    try:
        ids = [f"person-{n:05d}-" + "x" * 27 for n in range(3000)]
        conn.execute(
            f"""INSERT INTO {SCHEMA}.inbox_entries (user_id, category, variant, group_key,
                variants, last_event, in_app, created_at, updated_at)
            SELECT u, 'watched_page', 'edited', 'k', ARRAY['edited'], 1, true, now(), now()
            FROM unnest(%s::text[]) AS u""",
            [ids],
        )
        payloads = heard(ear)
        assert len(payloads) > 10
        assert all(len(p.encode()) <= MAX_PAYLOAD_BYTES for p in payloads)
        named = [p for payload in payloads for p in json.loads(payload)]
        assert sorted(named) == ids
        conn.execute(
            f"SELECT {SCHEMA}.inbox_live_send(%s, ARRAY['ana', repeat('y', 7100), 'bob'])",
            [live_channel(SCHEMA)],
        )
        assert heard(ear) == ["*", '["ana","bob"]']
    finally:
        ear.close()


def socket_of(port: int, person: str | None) -> ClientConnection:
    headers = {} if person is None else {"X-Notify-User": person}
    return ws_connect(
        f"ws://127.0.0.1:{port}/notifications/live", additional_headers=headers, open_timeout=10
    )


def test_a_fanout_tells_each_open_socket_of_its_people_refresh(db_dsn: str, conn: Conn) -> None:
    """ana's two tabs and bob's get "refresh" after an edit they watch; carol's gets nothing;
    the summary each then reads is the one a poll reads (the only source of truth)."""
    wiki = make_wiki(conn, readers=("ana", "bob"))
    with serving(db_dsn) as served, contextlib.ExitStack() as stack:
        hub = served.asgi.live
        assert hub is not None
        with pytest.raises(InvalidStatus):
            socket_of(served.port, None)  # no person: refused at the handshake
        tabs = {
            (name, n): stack.enter_context(socket_of(served.port, name))
            for name, n in (("ana", 1), ("ana", 2), ("bob", 1), ("carol", 1))
        }
        _wait(lambda: hub.open_sockets == 4 and hub.listening.is_set())
        edit(conn, wiki)
        for key in (("ana", 1), ("ana", 2), ("bob", 1)):
            assert tabs[key].recv(timeout=5) == "refresh"
        with pytest.raises(TimeoutError):
            tabs[("carol", 1)].recv(timeout=0.5)
        status, pushed = raw(
            served.port, request("GET", "/sites/s1/notifications/summary", headers=ANA)
        )
        assert status == 200
        assert json.loads(pushed.partition(b"\r\n\r\n")[2])["unread"] == 1
        stack.close()
        _wait(lambda: hub.open_sockets == 0)


def test_h1_a_client_that_does_not_read_is_closed_and_delays_nobody(
    db_dsn: str, conn: Conn
) -> None:
    """A socket whose client never reads is closed once its queue is full (a bounded number
    of refreshes, logged), while the socket of a client that reads is told every time and
    stays open, and a fan-out after it still reaches that one."""
    wiki = make_wiki(conn, readers=("slow", "fast"))
    lines = io.StringIO()
    handler = logging.StreamHandler(lines)
    handler.setFormatter(JsonLines())
    serve_log = logging.getLogger("notify_pg.serve")
    serve_log.addHandler(handler)
    # Another test's logging set-up may have left the logger at WARNING (run after
    # tests/pg/push the closing line went unseen): this test reads an INFO line.
    level = serve_log.level
    serve_log.setLevel(logging.INFO)
    try:
        with serving(db_dsn) as served, contextlib.ExitStack() as stack:
            hub, loop = served.asgi.live, served.loop
            assert hub is not None and loop is not None
            tight = socket.create_connection(("127.0.0.1", served.port))
            tight.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            stack.callback(tight.close)
            stack.enter_context(
                ws_connect(
                    f"ws://127.0.0.1:{served.port}/notifications/live",
                    sock=tight,
                    additional_headers={"X-Notify-User": "slow"},
                    max_queue=1,  # reads nothing once one message waits (never read here)
                )
            )
            fast = stack.enter_context(
                ws_connect(
                    f"ws://127.0.0.1:{served.port}/notifications/live",
                    additional_headers={"X-Notify-User": "fast"},
                    max_queue=None,
                )
            )
            _wait(lambda: hub.open_sockets == 2 and hub.listening.is_set())

            async def flood() -> int:
                """Refreshes, each one sent before the next, until the slow one is gone."""
                for told in range(200_000):
                    if hub.open_sockets < 2:
                        return told
                    hub.tell(["slow", "fast"])
                    for _ in range(4):
                        await asyncio.sleep(0)
                return -1

            told = asyncio.run_coroutine_threadsafe(flood(), loop).result(timeout=120)
            assert 0 < told < 20_000  # the bound: 16 KiB queued past the kernel's buffers
            assert hub.open_sockets == 1
            got = 0
            with contextlib.suppress(TimeoutError):
                while fast.recv(timeout=1) == "refresh":
                    got += 1
            assert got >= told - 10  # every refresh told (a burst coalesces into one)
            edit(conn, wiki)
            assert fast.recv(timeout=5) == "refresh"
    finally:
        serve_log.removeHandler(handler)
        serve_log.setLevel(level)
    closed = [json.loads(line) for line in lines.getvalue().splitlines()]
    closed = [r for r in closed if r["msg"] == "live slow client closed"]
    assert len(closed) == 1 and closed[0]["queued_bytes"] > 0


def _wait(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


@pytest.fixture
def own_server() -> Iterator[tuple[str, Callable[[str], None]]]:
    """A PostgreSQL server of this test alone, migrated: its DSN and ``pg_ctl(action)`` for
    ``stop`` and ``start`` (as pgserver started it: no TCP, its socket directory)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pgserver
        from pgserver._commands import POSTGRES_BIN_PATH

    base = tempfile.mkdtemp(prefix="notify-outage-")
    data = os.path.join(base, "data")
    server = pgserver.get_server(data, cleanup_mode=None)
    dsn = str(server.get_uri())
    sockets = conninfo_to_dict(dsn)["host"]
    user = "pgserver" if os.geteuid() == 0 else None

    def pg_ctl(action: str) -> None:
        options = ["-m", "fast"] if action == "stop" else ["-o", '-h ""', "-o", f"-k {sockets}"]
        command = [str(POSTGRES_BIN_PATH / "pg_ctl"), "-D", data, "-w", "-l", f"{data}/log"]
        subprocess.run(
            [*command, *options, action],
            user=user,
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=60,
        )

    with psycopg.connect(dsn, autocommit=True) as conn:
        migrate(conn, SCHEMA)
        migrate_reference_host(conn, HOST_SCHEMA)
    try:
        yield dsn, pg_ctl
    finally:
        subprocess.run(
            [str(POSTGRES_BIN_PATH / "pg_ctl"), "-D", data, "-m", "immediate", "stop"],
            user=user,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=60,
        )
        shutil.rmtree(base, ignore_errors=True)


def test_an_outage_is_503_at_once_and_a_restart_loses_no_refresh(
    own_server: tuple[str, Callable[[str], None]],
) -> None:
    """Issue 29.4 and 28.4: while the database is down every request is a 503 with
    Retry-After within about 2 s (not a 30 s wait holding a thread), the pool logs in the
    documented format (no address), the first request after it is back is served, and the
    live listener comes back and tells every open socket "refresh"."""
    dsn, pg_ctl = own_server
    lines = io.StringIO()
    handler = logging.StreamHandler(lines)
    handler.setFormatter(JsonLines())
    pool_log = logging.getLogger("notify_pg.pool")
    pool_log.addHandler(handler)
    pool_log.setLevel(logging.INFO)
    with psycopg.connect(dsn, autocommit=True) as conn:
        wiki = make_wiki(conn, readers=("ana",))
        edit(conn, wiki)
    summary = request("GET", "/sites/s1/notifications/summary", headers=ANA)
    try:
        with serving(dsn, threads=2) as served, contextlib.ExitStack() as stack:
            hub = served.asgi.live
            assert hub is not None
            assert raw(served.port, summary)[0] == 200
            tab = stack.enter_context(socket_of(served.port, "ana"))
            other = stack.enter_context(socket_of(served.port, "bob"))
            _wait(lambda: hub.open_sockets == 2 and hub.listening.is_set())
            pg_ctl("stop")
            for _ in range(4):
                started = time.monotonic()
                status, answer = raw(served.port, summary, timeout=30)
                assert status == 503 and b"retry-after: 2" in answer.lower()
                assert time.monotonic() - started < 4.0  # about 2 s at most, with margin
            pg_ctl("start")
            assert raw(served.port, summary)[0] == 200  # the first request after: served
            # The listener is back and refreshed the sockets it could not tell while away,
            # once each.
            assert tab.recv(timeout=10) == "refresh"
            assert other.recv(timeout=5) == "refresh"
            for socket_ in (tab, other):
                with pytest.raises(TimeoutError):
                    socket_.recv(timeout=1)
            with psycopg.connect(dsn, autocommit=True) as conn:
                edit(conn, wiki, 1)
            assert tab.recv(timeout=5) == "refresh"
    finally:
        pool_log.removeHandler(handler)
    logged = [json.loads(line) for line in lines.getvalue().splitlines()]
    assert [r["msg"] for r in logged] == ["database unavailable", "database available"]
    assert logged[0]["code"] == "storage_unavailable" and "error_type" in logged[0]
    socket_dir = conninfo_to_dict(dsn)["host"]
    assert socket_dir not in lines.getvalue() and "PGSQL" not in lines.getvalue()
