"""The server of ``notify serve``: the reference app as ASGI on uvicorn, with live updates.

`AsgiApp` serves the routes of `notify_pg.http.app.ReferenceApp` (its URL map, its identity,
its log line per request) on a production ASGI server (uvicorn here; any ASGI server will
do, see docs/embedding.md):

- a request's body is read in the event loop, with a size limit (``413`` over it, unread) and
  a deadline (``400`` when it is not all there in time, or when the client sends less than
  its ``Content-Length``), *before* a database connection is taken: a slow or hostile client
  costs a socket and a coroutine, never a connection, and a short body is never acted on;
- every route with a native handler (`notify_pg.http.native`: the inbox, unsubscribe, the
  preferences and settings, ``/healthz`` and ``/readyz``) runs in the event loop on an
  asyncio connection of the pool (``pool``; by default an `AsyncFastPool` of ``threads``
  connections), with no thread; the summary poll is answered from the kept summaries
  (`notify_pg.http.kept`) while the live hub listens;
- a route without one (a route a host added with `ReferenceApp.route`, or one whose host
  ports have no plan form) runs the WSGI app on one of ``threads`` threads (its `FastPool`
  holds as many connections);
- ``/notifications/live`` is the websocket of live updates (`notify_pg.http.live.LiveHub`,
  on the bounded protocol of `notify_pg.http.websocket`: a client that does not read is closed):
  the person read like the inbox routes' (`notify_pg.http.identity`; with ``demo`` and no
  proof asked, also the ``user`` query parameter, since a browser cannot set headers on a
  websocket);
- a header whose name has ``_`` never reaches the app: one that reads as an identity header
  once ``_`` is ``-`` (``X-Notify_User``), or an identity header given twice, is answered
  ``400`` ``invalid_header`` naming it (a websocket is refused); any other is dropped, as
  nginx drops them (in a WSGI environ ``A_B`` and ``A-B`` are one key);
- with ``demo``, ``/demo`` serves the demo page of ``static/`` (plain HTML and JavaScript);
- the ``Server`` header says ``notify``, never a version.

`bind` opens the listening socket (its backlog is the server's); `run_server` serves until
`UvicornServer.should_exit`, and `ServingThread` serves from a thread (tests, benches).
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging
import socket
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from importlib import resources
from typing import Any, Final
from urllib.parse import parse_qs

import attrs
import uvicorn

from notify_pg.db.apool import AsyncFastPool
from notify_pg.db.pool import FastPool
from notify_pg.http.app import ReferenceApp
from notify_pg.http.handlers import MAX_BODY_BYTES, Response
from notify_pg.http.identity import USER_HEADER, IdentityCheck, header_refusal, person_of
from notify_pg.http.kept import KeptSummaries
from notify_pg.http.live import LiveHub
from notify_pg.http.native import NativeRequest, NativeRoutes
from notify_pg.http.websocket import SEND_NOW, BoundedWebSocket

__all__ = [
    "DEMO_PATH",
    "LIVE_PATH",
    "AsgiApp",
    "ServeLimits",
    "ServingThread",
    "UvicornServer",
    "bind",
    "make_server",
]

#: The websocket of live updates.
LIVE_PATH: Final = "/notifications/live"
#: The demo page (``demo`` only).
DEMO_PATH: Final = "/demo"

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

_SERVER: Final = (b"server", b"notify")
_STATIC: Final = {
    DEMO_PATH: ("demo.html", b"text/html; charset=utf-8"),
    f"{DEMO_PATH}/demo.js": ("demo.js", b"text/javascript; charset=utf-8"),
    f"{DEMO_PATH}/demo.css": ("demo.css", b"text/css; charset=utf-8"),
}
_log = logging.getLogger("notify_pg.serve")


@attrs.frozen(kw_only=True)
class ServeLimits:
    """What one ``notify serve`` process allows (each a ``notify serve`` option).

    Args:
        threads: database connections of the native routes; threads (each with its own
            connection) of the routes without a native handler.
        max_body: the largest request body read, in bytes (``413`` over it).
        body_timeout: seconds a client has to send its whole body (``400`` after).
        backlog: the listening socket's queue of connections not yet accepted.
        max_connections: open connections and websockets at once (``503`` over it; ``None``:
            no limit but the process's descriptors).
        keep_alive: seconds an idle keep-alive connection stays open.
        pool_timeout: seconds a request waits for a database connection (``503`` after).
    """

    threads: int = 8
    max_body: int = MAX_BODY_BYTES
    body_timeout: float = 10.0
    backlog: int = 4096
    max_connections: int | None = None
    keep_alive: int = 5
    pool_timeout: float = 2.0


class AsgiApp:
    """The ASGI front of a `ReferenceApp` (see the module's docstring).

    Args:
        app: the WSGI reference app whose routes answer every HTTP request.
        limits: threads, body size and deadline.
        live: the hub of live updates; ``None`` answers the websocket with ``403``.
        demo: serve the demo page and take the websocket's person from ``?user=``.
        pool: the asyncio connections of the native routes (`notify_pg.http.native`;
            ``connection()`` an async context manager, as ``psycopg_pool``'s); by default
            an `AsyncFastPool` of ``limits.threads`` connections to the app's `FastPool`'s
            database. Without either, every route runs on the app's threads.
    """

    def __init__(
        self,
        app: ReferenceApp,
        *,
        limits: ServeLimits | None = None,
        live: LiveHub | None = None,
        demo: bool = False,
        pool: Any = None,
    ) -> None:
        self.app = app
        self.limits = limits or ServeLimits()
        self.live = live
        self.demo = demo
        if pool is None and isinstance(app.pool, FastPool):
            pool = AsyncFastPool(
                app.pool.dsn, size=self.limits.threads, timeout=self.limits.pool_timeout
            )
        self.pool = pool
        #: The kept summaries of the poll (with a live hub only: its notifications keep
        #: them true).
        self.kept: KeptSummaries | None = None
        if live is not None:
            self.kept = KeptSummaries(live.listening.is_set)
            live.observers.append(self.kept.forget)
        self.native = None if pool is None else NativeRoutes(app, pool, self.kept)
        self._executor = ThreadPoolExecutor(self.limits.threads, thread_name_prefix="notify-serve")
        self._listener: asyncio.Task[None] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer one ASGI connection: lifespan, HTTP or websocket."""
        kind = scope["type"]
        if kind == "http":
            await self._http(scope, receive, send)
        elif kind == "websocket":
            await self._websocket(scope, receive, send)
        elif kind == "lifespan":
            await self._lifespan(receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                if self.live is not None:
                    self._listener = asyncio.ensure_future(self.live.run())
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if self._listener is not None:
                    self._listener.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await self._listener
                self._executor.shutdown(wait=False)
                if isinstance(self.pool, AsyncFastPool):
                    await self.pool.close()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        refused = _forged(scope)
        if refused is not None:
            length = (b"content-length", str(len(refused.body)).encode("ascii"))
            await _answer(send, refused.status, refused.body, *_encoded(refused), length, *_CLOSE)
            return
        static = _STATIC.get(scope["path"]) if self.demo else None
        if static is not None and scope["method"] in ("GET", "HEAD"):
            content = _static(static[0])
            if scope["path"] == DEMO_PATH:
                # The page asks for the preference grid only where its routes are served: a
                # request bound to fail would be an error in every browser's console.
                served = getattr(self.app, "admin_host", None) is not None
                content = content.replace(
                    b"<body>", b'<body data-preferences="%s">' % (b"on" if served else b"off"), 1
                )
            await _answer(send, 200, content, (b"content-type", static[1]))
            return
        body = await self._body(scope, receive, send)
        if body is None:
            return
        method: str = scope["method"]
        found = None if self.native is None else self.native.match(method, scope["path"])
        if found is not None and self.native is not None:
            route, handler, values = found
            request = NativeRequest(method, scope.get("query_string", b""), _headers(scope), body)
            answer = await self.native.answer(method, route, handler, values, request)
            await _answer(send, answer.status, answer.body, *_native_headers(answer))
            return
        environ = _environ(scope, body)
        loop = asyncio.get_running_loop()
        status, headers, content = await loop.run_in_executor(
            self._executor, _call_wsgi, self.app, environ
        )
        await _answer(send, status, content, *headers)

    async def _body(self, scope: Scope, receive: Receive, send: Send) -> bytes | None:
        """The whole body, or ``None`` once answered (too large, too slow, short) or gone."""
        limit = self.limits.max_body
        declared = _header(scope, b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > limit):
            await _answer(send, 413, b"body too large\n", *_CLOSE)
            return None
        if declared is None and _header(scope, b"transfer-encoding") is None:
            return b""  # HTTP/1.1: no length and no chunks is no body (the poll's GET)
        parts: list[bytes] = []
        size = 0
        try:
            async with asyncio.timeout(self.limits.body_timeout):
                while True:
                    message = await receive()
                    if message["type"] == "http.disconnect":
                        return None  # the client left: nothing to answer, nothing done
                    chunk = message.get("body", b"")
                    size += len(chunk)
                    if size > limit:
                        await _answer(send, 413, b"body too large\n", *_CLOSE)
                        return None
                    parts.append(chunk)
                    if not message.get("more_body", False):
                        break
        except TimeoutError:
            await _answer(send, 400, b"body incomplete\n", *_CLOSE)
            return None
        body = b"".join(parts)
        if declared is not None and len(body) != int(declared):
            await _answer(send, 400, b"body incomplete\n", *_CLOSE)
            return None
        return body

    async def _websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        person = None if _forged(scope) is not None else self._person(scope)
        await receive()  # websocket.connect
        if scope["path"] != LIVE_PATH or self.live is None or person is None:
            # Closing before accepting is a 403 to the client's handshake.
            await send({"type": "websocket.close", "code": 1008})
            return
        await send({"type": "websocket.accept", "headers": [_SERVER]})

        async def text(value: str) -> None:
            await send({"type": "websocket.send", "text": value})

        # The server's synchronous write, where it has one (notify serve's, not every server's).
        send_now = (scope.get("extensions") or {}).get(SEND_NOW)
        await self.live.serve_socket(person, text, receive, send_now=send_now)

    def _person(self, scope: Scope) -> str | None:
        identity: IdentityCheck = getattr(self.app, "identity", None) or IdentityCheck()

        def header(name: str) -> str | None:
            return _header(scope, name.lower().encode("ascii"))

        person = identity.person(header)
        if isinstance(person, str):
            return person
        # The demo's browser cannot set a header on a websocket: ?user= instead, but only
        # where no proof is asked (the plain header's trust, on loopback).
        if not self.demo or identity.proven or header(USER_HEADER) is not None:
            return None
        try:
            values = parse_qs(scope.get("query_string", b"").decode("utf-8"), errors="strict")
        except (UnicodeDecodeError, ValueError):
            return None
        found = values.get("user", [])
        return person_of(found[0]) if len(found) == 1 else None


_CLOSE: Final = ((b"connection", b"close"),)


async def _answer(send: Send, status: int, body: bytes, *headers: tuple[bytes, bytes]) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [_SERVER, *headers],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _forged(scope: Scope) -> Response | None:
    """The ``400`` of a request whose header names could forge an identity in the environ."""
    return header_refusal([bytes(name).decode("latin-1") for name, _value in scope["headers"]])


def _encoded(response: Response) -> list[tuple[bytes, bytes]]:
    return [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in response.headers]


def _static(name: str) -> bytes:
    return resources.files("notify_pg.http").joinpath("static", name).read_bytes()


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key == name:
            return bytes(value).decode("latin-1")
    return None


def _headers(scope: Scope) -> dict[str, str]:
    """A request's headers by lower-case name, as the WSGI environ holds them: a name with
    ``_`` dropped, repeated ones joined by ``,``."""
    out: dict[str, str] = {}
    for raw_name, raw_value in scope["headers"]:
        name = bytes(raw_name).decode("latin-1").lower()
        if "_" in name:
            continue
        value = bytes(raw_value).decode("latin-1")
        out[name] = f"{out[name]},{value}" if name in out else value
    return out


_TEXT: Final = (b"content-type", b"text/plain; charset=utf-8")


def _native_headers(response: Response) -> list[tuple[bytes, bytes]]:
    """A native answer's headers as the WSGI app's: a length, and Werkzeug's default type."""
    pairs = _encoded(response)
    if response.status in (204, 304):
        return pairs
    if not any(name == b"content-type" for name, _value in pairs):
        pairs.append(_TEXT)
    pairs.append((b"content-length", str(len(response.body)).encode("ascii")))
    return pairs


def _environ(scope: Scope, body: bytes) -> dict[str, Any]:
    """The WSGI environ of an ASGI request whose whole body is ``body`` (PEP 3333)."""
    server = scope.get("server") or ("localhost", 80)
    client = scope.get("client") or ("", 0)
    environ: dict[str, Any] = {
        "REQUEST_METHOD": scope["method"],
        # PEP 3333 strings are the bytes as latin-1; ASGI's path is decoded UTF-8.
        "SCRIPT_NAME": scope.get("root_path", "").encode("utf-8").decode("latin-1"),
        "PATH_INFO": scope["path"].encode("utf-8").decode("latin-1"),
        "QUERY_STRING": bytes(scope.get("query_string", b"")).decode("latin-1"),
        "SERVER_NAME": str(server[0]),
        "SERVER_PORT": str(server[1]),
        "SERVER_PROTOCOL": f"HTTP/{scope.get('http_version', '1.1')}",
        "REMOTE_ADDR": str(client[0]),
        "CONTENT_LENGTH": str(len(body)),
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": scope.get("scheme", "http"),
        "wsgi.input": io.BytesIO(body),
        "wsgi.input_terminated": True,
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
    }
    for raw_name, raw_value in scope["headers"]:
        name = bytes(raw_name).decode("latin-1").upper()
        if "_" in name:
            # Dropped, as nginx does: "A_B" and "A-B" would be one key of the environ.
            continue
        name = name.replace("-", "_")
        value = bytes(raw_value).decode("latin-1")
        if name in ("CONTENT_LENGTH", "TRANSFER_ENCODING"):
            continue  # the body is whole: its length is the one above
        key = "CONTENT_TYPE" if name == "CONTENT_TYPE" else f"HTTP_{name}"
        environ[key] = f"{environ[key]},{value}" if key in environ else value
    return environ


def _call_wsgi(
    app: ReferenceApp, environ: dict[str, Any]
) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    """Run the WSGI app on this thread: status, headers and the whole body."""
    started: list[Any] = []

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
        started[:] = [status, headers]
        return lambda _data: None

    chunks = app(environ, start_response)
    try:
        content = b"".join(chunks)
    finally:
        close = getattr(chunks, "close", None)
        if close is not None:
            close()
    status, headers = started
    pairs = [
        (k.lower().encode("latin-1"), v.encode("latin-1"))
        for k, v in headers
        if k.lower() != "server"
    ]
    return int(status.split(" ", 1)[0]), pairs, content


class UvicornServer(uvicorn.Server):
    """uvicorn's server without its own signal handling: ``notify serve`` stops it itself
    (``should_exit``) and exits 0, where uvicorn would raise the signal again."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        """Install nothing."""
        yield


class _ServerLog(logging.Filter):
    """uvicorn's own lines in the documented format: free text becomes a known message."""

    def filter(self, record: logging.LogRecord) -> bool:
        text = str(record.msg)
        if text.startswith("Invalid HTTP request"):
            record.msg, record.args = "bad request", ()
            return True
        if record.levelno < logging.WARNING:
            return False  # "Started server process [N]" and the like: the app says listening
        error = record.exc_info[0].__name__ if record.exc_info and record.exc_info[0] else None
        record.msg, record.args, record.exc_info, record.exc_text = "server error", (), None, None
        record.fields = {"error_type": error} if error else {}
        return True


def _quiet_uvicorn() -> None:
    """Route uvicorn's loggers to ``notify_pg``'s handlers through `_ServerLog`."""
    target = logging.getLogger("notify_pg")
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logger = logging.getLogger(name)
        logger.handlers[:] = []
        logger.filters[:] = [_ServerLog()]
        logger.propagate = False
        if name == "uvicorn.error":
            for handler in target.handlers:
                logger.addHandler(handler)
        logger.setLevel(logging.INFO)


def bind(host: str, port: int, *, backlog: int = ServeLimits.backlog) -> socket.socket:
    """Return a listening socket on ``host:port`` (0: a free port) with ``backlog``.

    Raises:
        OSError: the address cannot be bound.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(backlog)
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return sock


def _http_protocol() -> str:
    try:
        import httptools  # noqa: F401
    except ImportError:  # pragma: no cover - the serve extra brings it
        return "h11"
    return "httptools"


def make_server(asgi: AsgiApp) -> UvicornServer:
    """Return a uvicorn server for ``asgi`` with its limits (serve with ``run_server``)."""
    limits = asgi.limits
    config = uvicorn.Config(
        asgi,
        http=_http_protocol(),
        ws=BoundedWebSocket,  # a client that does not read is closed, never waited on
        lifespan="on",
        log_config=None,
        access_log=False,
        server_header=False,
        proxy_headers=False,
        backlog=limits.backlog,
        limit_concurrency=limits.max_connections,
        timeout_keep_alive=limits.keep_alive,
        timeout_graceful_shutdown=5,
        ws_max_size=4096,  # the socket only speaks one way: a client's message is small
        ws_per_message_deflate=False,
    )
    _quiet_uvicorn()
    return UvicornServer(config)


async def run_server(server: UvicornServer, sock: socket.socket) -> None:
    """Serve on ``sock`` until ``server.should_exit``."""
    await server.serve(sockets=[sock])


class ServingThread:
    """A server on its own thread and event loop (tests, benches): `start`, then `stop`."""

    def __init__(self, asgi: AsgiApp, host: str = "127.0.0.1", port: int = 0) -> None:
        self.asgi = asgi
        self.sock = bind(host, port, backlog=asgi.limits.backlog)
        self.port = int(self.sock.getsockname()[1])
        self.server = make_server(asgi)
        self.loop: asyncio.AbstractEventLoop | None = None
        self._thread = threading.Thread(target=self._run, name="notify-serve", daemon=True)

    def _run(self) -> None:
        asyncio.run(self._main())

    async def _main(self) -> None:
        self.loop = asyncio.get_running_loop()
        await run_server(self.server, self.sock)

    def start(self, timeout: float = 10.0) -> ServingThread:
        """Start serving; return once the server accepts connections."""
        self._thread.start()
        deadline = threading.Event()
        for _ in range(int(timeout / 0.01)):
            if self.server.started:
                return self
            deadline.wait(0.01)
        raise RuntimeError("the server did not start")

    def stop(self, timeout: float = 10.0) -> None:
        """Stop serving and wait for the thread."""
        self.server.should_exit = True
        self._thread.join(timeout)

    def __enter__(self) -> ServingThread:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
