"""`notify serve`'s server against what the internet sends (issue 28 points 1 and 2), over real
sockets: slow bodies, short bodies, malformed chunked bodies, NUL bytes, null filters,
non-ASCII digits, a bad --unsubscribe-page, 1,000 connects at once, the Server header."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
from typing import Any

import psycopg
import pytest
from pgworld import SCHEMA
from webworld import body_json, edit, make_wiki, raw, request, serving

from notify_core.mail import unsubscribe_token
from notify_pg.inbox.reads import InboxPreferences, InboxReads
from notify_pg.mail.secret import unsubscribe_secret

Conn = psycopg.Connection[Any]
FORM = {"Content-Type": "application/x-www-form-urlencoded"}
ANA = {"X-Notify-User": "ana"}
JSON = {**ANA, "Content-Type": "application/json"}
ONE_CLICK = b"List-Unsubscribe=One-Click"


def unsubscribe_target(conn: Conn, person: str = "ana") -> str:
    token = unsubscribe_token(unsubscribe_secret(conn, schema=SCHEMA), person, ["watched_page"])
    return f"/notifications/unsubscribe?{urllib.parse.urlencode({'t': token})}"


def choices(conn: Conn, person: str = "ana") -> dict[tuple[str, str], bool]:
    return InboxPreferences(SCHEMA).rows(conn, [person]).get(person, {})


def unread(conn: Conn, person: str = "ana") -> int:
    return InboxReads(SCHEMA).summary(conn, person).unread


def test_a_dozen_slow_bodies_hold_sockets_not_connections(db_dsn: str, conn: Conn) -> None:
    """Issue 28.1: twelve clients announce 100 bytes, send 4 and wait, against a pool of 4
    connections: every other request is still answered within a second; each slow client
    gets 400 when its body deadline passes, and nothing it sent was acted on."""
    wiki = make_wiki(conn)
    edit(conn, wiki)
    target = unsubscribe_target(conn)
    with serving(db_dsn, threads=4, body_timeout=3.0) as served:
        slow = []
        for n in range(12):
            sock = socket.create_connection(("127.0.0.1", served.port), timeout=30)
            if n % 2:
                head = request("POST", target, headers={**FORM, "Content-Length": "100"})
            else:
                head = request(
                    "PUT", "/sites/s1/notifications/read", headers={**JSON, "Content-Length": "100"}
                )
            sock.sendall(head + b"List")
            slow.append(sock)
        time.sleep(0.3)  # all twelve are in, waiting for their bodies
        for _ in range(6):
            started = time.monotonic()
            status, answer = raw(
                served.port,
                request("GET", "/sites/s1/notifications/summary", headers=ANA),
                timeout=1.0,
            )
            assert status == 200, answer
            assert time.monotonic() - started < 1.0
        status, _ = raw(
            served.port, request("PUT", "/sites/s1/notifications/read", b"{}", JSON), timeout=1
        )
        assert status == 200  # a whole body is served at once (it read ana's one entry)
        for sock in slow:
            answer = sock.recv(65536)
            assert answer.startswith(b"HTTP/1.1 400 "), answer
            sock.close()
    assert choices(conn) == {}


def test_a_body_shorter_than_its_length_is_never_acted_on(db_dsn: str, conn: Conn) -> None:
    """Issue 28.2: the one-click body with a Content-Length above its size: a client that
    waits gets 400 at the deadline, one that closes its side gets nothing; no unsubscribe."""
    make_wiki(conn)
    target = unsubscribe_target(conn)
    short = request("POST", target, headers={**FORM, "Content-Length": "100"}) + ONE_CLICK
    with serving(db_dsn, body_timeout=1.0) as served:
        status, _ = raw(served.port, short)
        assert status == 400
        status, answer = raw(served.port, short, shut=True)
        assert status in (None, 400), answer
        # The same body whole goes through (the token is good).
        status, _ = raw(served.port, request("POST", target, ONE_CLICK, FORM))
        assert status == 200
    assert choices(conn) == {("watched_page", "email"): False}


def test_malformed_chunked_bodies_are_400_and_a_good_one_is_served(db_dsn: str, conn: Conn) -> None:
    make_wiki(conn)
    target = unsubscribe_target(conn)
    chunked = {**FORM, "Transfer-Encoding": "chunked"}
    head = request("POST", target, headers=chunked)
    with serving(db_dsn, body_timeout=2.0) as served:
        for bad in (
            b"zz\r\nList-Unsubscribe=One-Click\r\n0\r\n\r\n",  # not a size
            b"ffffffffffffffffffff\r\nList\r\n0\r\n\r\n",  # a size that overflows
            b"5\r\nList-Unsubscribe=One-Click\r\n0\r\n\r\n",  # longer than its size
            b"1a;\x00\r\nList-Unsubscribe=One-Click\r\n0\r\n\r\n",  # a NUL in an extension
        ):
            status, answer = raw(served.port, head + bad)
            assert status == 400, (bad, answer)
            assert b"Traceback" not in answer
        assert choices(conn) == {}
        good = b"1a\r\nList-Unsubscribe=One-Click\r\n0\r\n\r\n"
        status, _ = raw(served.port, head + good)
        assert status == 200
    assert choices(conn) == {("watched_page", "email"): False}


def test_a_nul_byte_is_a_bad_request_not_a_storage_failure(db_dsn: str, conn: Conn) -> None:
    """A NUL in X-Notify-User or in a JSON string: 400, never 503 (PostgreSQL cannot hold
    NUL, so it reached the database as a storage failure)."""
    wiki = make_wiki(conn)
    edit(conn, wiki)
    with serving(db_dsn) as served:
        for headers, body in (
            ({"X-Notify-User": "an\x00a"}, None),
            ({**JSON}, b'{"page": "p\\u0000"}'),
            ({**JSON}, b'{"categories": ["watched_page\\u0000"]}'),
        ):
            method, target = (
                ("PUT", "/sites/s1/notifications/read")
                if body
                else ("GET", "/sites/s1/notifications")
            )
            status, answer = raw(served.port, request(method, target, body or b"", headers))
            assert status == 400, answer
    assert unread(conn) == 1


@pytest.mark.parametrize(
    "body",
    [b'{"page": null}', b'{"categories": null}', b'{"ids": null}', b'{"page": 7}'],
)
def test_null_is_refused_for_every_filter(db_dsn: str, conn: Conn, body: bytes) -> None:
    """`{"page": null}` read everything; null is no filter, it is a bad one."""
    wiki = make_wiki(conn)
    edit(conn, wiki)
    with serving(db_dsn, live=False) as served:
        status, answer = raw(
            served.port, request("PUT", "/sites/s1/notifications/read", body, JSON)
        )
    assert status == 400 and body_json(answer)["error"]["pointer"].startswith("/")
    assert unread(conn) == 1


def test_entry_ids_and_cursors_are_ascii_digits_only(db_dsn: str, conn: Conn) -> None:
    wiki = make_wiki(conn)
    edit(conn, wiki)
    (entry,) = [
        r[0] for r in conn.execute(f"SELECT id FROM {SCHEMA}.inbox_entries WHERE user_id = 'ana'")
    ]
    arabic = "".join("٠١٢٣٤٥٦٧٨٩"[int(d)] for d in str(entry))
    with serving(db_dsn, live=False) as served:
        for method, target in (
            ("PUT", f"/sites/s1/notifications/{urllib.parse.quote(arabic)}/read"),
            ("PUT", f"/sites/s1/notifications/1{urllib.parse.quote('٢')}/read"),
            ("DELETE", f"/sites/s1/notifications/{urllib.parse.quote(arabic)}"),
            ("GET", f"/sites/s1/notifications?cursor={urllib.parse.quote('١٢.٣')}"),
        ):
            status, answer = raw(served.port, request(method, target, headers=ANA))
            assert status == 400, (target, answer)
    assert unread(conn) == 1


def test_an_unsubscribe_page_with_cr_lf_is_refused_at_start() -> None:
    """Checked before anything else (the DSN here reaches no database): exit 2, one line."""
    args = ["--dsn", "host=/nonexistent port=1", "--port", "0"]
    done = subprocess.run(
        [sys.executable, "-m", "notify_cli", "serve", *args, "--unsubscribe-page", "/u\r\nX: y"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("notify: --unsubscribe-page: ")
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1


async def _connect_all(port: int, count: int) -> list[bytes | str]:
    """Open ``count`` connections at once, each asking for an unknown path."""

    async def one() -> bytes | str:
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(request("GET", "/nowhere"))
            await writer.drain()
            line = await asyncio.wait_for(reader.readline(), 60)
            writer.close()
            return line
        except OSError as exc:
            return type(exc).__name__

    return await asyncio.gather(*(one() for _ in range(count)))


def test_a_thousand_simultaneous_connects_are_all_answered(db_dsn: str) -> None:
    """The backlog holds 1,000 connects at once (128 reset 138 of them): every one is
    answered, none reset."""
    with serving(db_dsn, live=False) as served:
        answers = asyncio.run(_connect_all(served.port, 1000))
    refused = [a for a in answers if not isinstance(a, bytes)]
    assert refused == []
    assert {a[:12] for a in answers if isinstance(a, bytes)} == {b"HTTP/1.1 404"}


def test_the_server_header_names_no_version_and_bodies_have_a_limit(db_dsn: str) -> None:
    with serving(db_dsn, live=False, max_body=1024) as served:
        status, answer = raw(served.port, request("GET", "/sites/s1/notifications/summary"))
        assert status == 401
        head = answer.partition(b"\r\n\r\n")[0].lower()
        servers = [line for line in head.split(b"\r\n") if line.startswith(b"server:")]
        assert servers == [b"server: notify"]
        big = request("PUT", "/sites/s1/notifications/read", b"{" + b" " * 2000 + b"}", JSON)
        status, _ = raw(served.port, big)
        assert status == 413
        announced = request(
            "PUT", "/sites/s1/notifications/read", headers={**JSON, "Content-Length": "9" * 30}
        )
        status, _ = raw(served.port, announced)
        assert status in (400, 413)


def test_json_problem_answers_keep_their_shape_over_the_server(db_dsn: str, conn: Conn) -> None:
    """The WSGI app behind the ASGI front answers as before (a 400 problem, an ETag)."""
    with serving(db_dsn, live=False) as served:
        status, answer = raw(
            served.port, request("PUT", "/sites/s1/notifications/read", b"[1]", JSON)
        )
        assert status == 400 and body_json(answer)["error"]["code"] == "invalid_json"
        status, answer = raw(
            served.port, request("GET", "/sites/s1/notifications/summary", headers=ANA)
        )
        assert status == 200 and b"etag: " in answer.lower()
        assert json.loads(answer.partition(b"\r\n\r\n")[2])["unread"] == 0


def test_notify_serve_with_two_workers_answers_and_stops_on_sigterm(db_dsn: str) -> None:
    """`--workers 2 --threads 2`: two forked processes on one socket answer, and SIGTERM
    reaches both (exit 0)."""
    args = ["serve", "--port", "0", "--schema", SCHEMA, "--workers", "2", "--threads", "2"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "notify_cli", *args],
        env={**os.environ, "NOTIFY_DSN": db_dsn},
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stderr is not None
        line = json.loads(proc.stderr.readline())
        assert (line["msg"], line["workers"]) == ("listening", 2)
        summary = request("GET", "/sites/s1/notifications/summary", headers=ANA)
        for _ in range(6):
            assert raw(int(line["port"]), summary)[0] == 200
    finally:
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "Traceback" not in err
