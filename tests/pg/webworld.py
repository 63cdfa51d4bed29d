"""Helpers of the tests of `notify serve`'s server (issue 28): a served app with its pool and
live hub, a small wiki with entries, and raw HTTP over real sockets."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Executor, Future
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
from pgworld import HOST_SCHEMA, SCHEMA

from notify_pg.http.app import build_app, open_pool
from notify_pg.http.live import LiveHub
from notify_pg.http.server import AsgiApp, ServeLimits, ServingThread
from notify_pg.inbox.fanout import InboxFanOut
from notify_pg.inbox.reads import emit
from notify_reference_host.wiki import ReferenceWiki

Conn = psycopg.Connection[Any]
T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


class NoThreads(Executor):
    """An executor that refuses work: a request that reaches it is answered 500."""

    def __init__(self) -> None:
        self.asked = 0

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        self.asked += 1
        raise RuntimeError("a thread was asked for")


@contextmanager
def serving(
    dsn: str, *, live: bool = True, demo: bool = False, admin: bool = False, **limits: Any
) -> Iterator[ServingThread]:
    """`notify serve`'s app (uvicorn, a pool of ``threads`` connections, the live hub) on a
    free loopback port, served by a thread; with ``admin`` the preference and settings routes
    on the reference wiki (``notify serve --host-schema``)."""
    config = ServeLimits(**limits)
    pool = open_pool(dsn, size=config.threads, timeout=config.pool_timeout)
    hub = LiveHub(dsn, schema=SCHEMA, reconnect_delay=0.2) if live else None
    host = ReferenceWiki(HOST_SCHEMA) if admin else None
    app = build_app(pool, schema=SCHEMA, admin_host=host)
    asgi = AsgiApp(app, limits=config, live=hub, demo=demo)
    try:
        with ServingThread(asgi) as served:
            yield served
    finally:
        pool.close()


def make_wiki(conn: Conn, readers: tuple[str, ...] = ("ana", "bob")) -> ReferenceWiki:
    """A site, a page every reader watches, people ``readers`` (all in one group)."""
    w = ReferenceWiki(HOST_SCHEMA)
    rules = [{"permission": "read_pages", "match": "all"}]
    with conn.transaction():
        w.add_site(conn, "s1", host="wiki.example")
        w.add_group(conn, "readers", rules)
        for person in (*readers, "editor"):
            w.add_user(conn, person, email=f"{person}@example.org", verified=True)
            w.add_member(conn, "readers", person)
        w.add_page(conn, "p1", "s1", "/docs/start", title="Start")
        for person in readers:
            w.watch(conn, "p1", person)
    return w


def edit(conn: Conn, wiki: ReferenceWiki, n: int = 0, page: str = "p1") -> int:
    """The editor edits ``page`` (an event at T0 + n s), and the fan-out writes its entries;
    returns the events done."""
    emit(
        conn,
        "page.edited",
        {"page": page},
        actor="editor",
        occurred_at=T0 + timedelta(seconds=n),
        schema=SCHEMA,
    )
    return InboxFanOut(wiki, schema=SCHEMA).drain(conn)


def raw(
    port: int, data: bytes, *, timeout: float = 10.0, shut: bool = False
) -> tuple[int | None, bytes]:
    """Send ``data`` as is on a new connection and read the answer until the server closes
    (or ``timeout``): its status (``None`` when there is none) and its bytes."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(data)
        if shut:
            sock.shutdown(socket.SHUT_WR)
        got = b""
        try:
            while chunk := sock.recv(65536):
                got += chunk
                if b"\r\n\r\n" in got and _complete(got):
                    break
        except (TimeoutError, ConnectionResetError):
            pass
    if not got.startswith(b"HTTP/1.1 "):
        return None, got
    return int(got[9:12]), got


def _complete(got: bytes) -> bool:
    head, _, body = got.partition(b"\r\n\r\n")
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            return len(body) >= int(line.split(b":", 1)[1])
    return False


def request(
    method: str,
    target: str,
    body: bytes = b"",
    headers: Mapping[str, str] | None = None,
) -> bytes:
    """One HTTP/1.1 request as bytes, with ``Content-Length`` and ``Connection: close``."""
    lines = [f"{method} {target} HTTP/1.1", "Host: localhost", "Connection: close"]
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    framed = {"Content-Length", "Transfer-Encoding"} & set(headers or {})
    if not framed and (body or method in ("POST", "PUT")):
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def no_null(value: Any, where: str = "") -> Any:
    """Return a JSON answer after checking that it holds no ``null`` anywhere (G5: an absent
    value is an omitted member); fails naming the JSON pointer of the first one."""
    assert value is not None, f"null at {where or '/'}"
    if isinstance(value, dict):
        for key, member in value.items():
            no_null(member, f"{where}/{key}")
    elif isinstance(value, list):
        for n, item in enumerate(value):
            no_null(item, f"{where}/{n}")
    return value


def body_json(answer: bytes) -> Any:
    return no_null(json.loads(answer.partition(b"\r\n\r\n")[2]))
