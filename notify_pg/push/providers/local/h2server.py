"""A small HTTP/2 server over TLS on loopback, the base of the local provider servers.

`H2Server` runs an asyncio loop on its own thread, accepts connections on ``127.0.0.1`` with a
certificate of a `notify_pg.push.providers.local.tls.LocalCa` (ALPN ``h2``, or HTTP/1.1 for a
client that does not offer it) and hands every complete request to a handler, which answers
synchronously; ``latency`` delays each answer (without holding other streams), as a distant
server would. ``goaway_after`` ends a connection gracefully after that many answers: it takes
no new stream, answers those in flight, then sends a GOAWAY naming the last stream it took and
closes the connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable

import attrs
import h2.config
import h2.connection
import h2.events
import h2.exceptions
import h2.settings
from hyperframe.frame import GoAwayFrame

from notify_pg.push.providers.local.tls import LocalCa

__all__ = ["Answer", "H2Server", "Request"]


@attrs.frozen
class Request:
    """One request: its method, path, headers (lower-case names), body and connection
    number (1 for the first connection the server accepted)."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    connection: int


@attrs.frozen
class Answer:
    """One answer: the status, headers and body."""

    status: int
    headers: dict[str, str] = attrs.field(factory=dict)
    body: bytes = b""


Handler = Callable[[Request], Answer]


class _H2(h2.connection.H2Connection):
    """h2's server connection, counting its open streams by the caller's count.

    h2 counts them by walking every stream at each new one: with the 500 streams APNs allows
    on one connection that walk costs the server more than the bench's client pays for its
    push, on the same cores. h2's walk still runs at every 64th stream to drop closed ones.
    """

    def __init__(self, config: h2.config.H2Configuration, count: Callable[[], int]) -> None:
        super().__init__(config=config)
        self._count = count
        self._asked = 0

    @property
    def open_inbound_streams(self) -> int:
        """The open streams the client opened (the caller's count; h2's every 64th time)."""
        self._asked += 1
        if self._asked % 64 == 0:
            return super().open_inbound_streams
        return self._count()


class _Connection:
    def __init__(self, server: H2Server, number: int, writer: asyncio.StreamWriter) -> None:
        self.server = server
        self.number = number
        self.writer = writer
        config = h2.config.H2Configuration(client_side=False, header_encoding="utf-8")
        # Open streams: those still arriving and those dispatched and not yet answered.
        self.h2 = _H2(config, lambda: len(self.streams) + len(self.unanswered))
        self.h2.local_settings = h2.settings.Settings(
            client=False,
            initial_values={
                h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: server.max_streams,
                h2.settings.SettingCodes.MAX_HEADER_LIST_SIZE: 2**16,
            },
        )
        self.streams: dict[int, tuple[dict[str, str], bytearray]] = {}
        self.answered = 0
        self.unanswered: set[int] = set()  # streams dispatched, not answered nor reset
        self.last_dispatched = 0
        self.going_away = False
        self.goaway_sent = False
        self.closed = False
        self.flush_due = False

    def flush(self) -> None:
        self.flush_due = False
        data = self.h2.data_to_send()
        if data and not self.closed:
            self.writer.write(data)

    def received(self, data: bytes) -> None:
        try:
            events = self.h2.receive_data(data)
        except h2.exceptions.ProtocolError:
            self.close()
            return
        for event in events:
            if isinstance(event, h2.events.RequestReceived):
                self.streams[event.stream_id] = (dict(event.headers or ()), bytearray())  # type: ignore[arg-type]
                open_now = len(self.streams) + len(self.unanswered)
                self.server.peak_streams = max(self.server.peak_streams, open_now)
            elif isinstance(event, h2.events.DataReceived):
                held = self.streams.get(event.stream_id)
                if held is not None:
                    held[1].extend(event.data or b"")
                self.h2.acknowledge_received_data(
                    event.flow_controlled_length or 0, event.stream_id or 0
                )
            elif isinstance(event, h2.events.StreamEnded):
                self.dispatch(event.stream_id or 0)
            elif isinstance(event, h2.events.StreamReset):  # closed: no longer counted
                self.streams.pop(event.stream_id or 0, None)
                self.unanswered.discard(event.stream_id or 0)
            elif isinstance(event, h2.events.ConnectionTerminated):
                self.close()
        self.flush()

    def dispatch(self, stream_id: int) -> None:
        held = self.streams.pop(stream_id, None)
        if held is None or self.going_away:  # past the GOAWAY: the client sends it again
            return
        headers, body = held
        request = Request(
            method=headers.get(":method", ""),
            path=headers.get(":path", ""),
            headers=headers,
            body=bytes(body),
            connection=self.number,
        )
        self.unanswered.add(stream_id)
        self.last_dispatched = max(self.last_dispatched, stream_id)
        # A timer per answer rather than a task sleeping: a distant server's latency costs
        # this process no more than one callback (the bench's server shares the worker's cores).
        loop = asyncio.get_running_loop()
        if self.server.latency:
            loop.call_later(self.server.latency, self.respond, stream_id, request)
        else:
            loop.call_soon(self.respond, stream_id, request)

    def flush_soon(self) -> None:
        """Write at the end of this turn of the loop: answers due together go out in one
        TLS record and one system call."""
        if not self.flush_due:
            self.flush_due = True
            asyncio.get_running_loop().call_soon(self.flush)

    def respond(self, stream_id: int, request: Request) -> None:
        try:
            answer = self.server.handler(request)
        except Exception:  # a handler's fault is the client's 500, not the server's end
            answer = Answer(500, body=b'{"reason":"InternalServerError"}')
        self.unanswered.discard(stream_id)
        if self.closed:
            return
        headers = [(":status", str(answer.status))]
        headers += [(name.lower(), value) for name, value in answer.headers.items()]
        try:
            self.h2.send_headers(stream_id, headers, end_stream=not answer.body)
            if answer.body:
                self.h2.send_data(stream_id, answer.body, end_stream=True)
        except h2.exceptions.H2Error:
            return
        self.answered += 1
        limit = self.server.goaway_after
        if limit is not None and self.answered >= limit:
            self.going_away = True  # no new stream is taken from now on
        if not self.going_away:
            self.flush_soon()
            return
        self.flush()
        if self.going_away and not self.unanswered and not self.goaway_sent:
            # Every stream taken is answered: a GOAWAY naming the last one (written by hand,
            # h2 would refuse it as a server with streams open), then the end. Streams sent
            # meanwhile lie above it, and the client sends them again on a new connection.
            self.goaway_sent = True
            frame = GoAwayFrame(0, last_stream_id=self.last_dispatched, error_code=0)
            self.writer.write(frame.serialize())
            # Closed by the client, or a second later: closing at once, with the client's
            # streams still arriving, would reset the connection and lose the GOAWAY.
            asyncio.get_running_loop().call_later(1.0, self.close)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.writer.close()


class H2Server:
    """An HTTP/2 TLS server on ``127.0.0.1`` (a free port) answering with ``handler``.

    Args:
        ca: the test CA whose server certificate it presents.
        handler: answers one request (called on the server's thread; must be quick).
        latency: seconds each answer waits, streams in parallel.
        goaway_after: answers per connection before it goes away (None: never).
        max_streams: streams a connection may hold at once (``SETTINGS_MAX_CONCURRENT_STREAMS``;
            100 is h2's default and Google's front ends', APNs says 500).

    Attributes:
        url: ``https://localhost:PORT``.
        connections: connections accepted so far.
        peak_streams: the most streams one connection held open at once so far.
    """

    def __init__(
        self,
        ca: LocalCa,
        handler: Handler,
        *,
        latency: float = 0.0,
        goaway_after: int | None = None,
        max_streams: int = 100,
    ) -> None:
        self.ca = ca
        self.max_streams = max_streams
        self.handler = handler
        self.latency = latency
        self.goaway_after = goaway_after
        self.connections = 0
        self.peak_streams = 0
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        """The server's base URL."""
        return f"https://localhost:{self.port}"

    def start(self) -> H2Server:
        """Bind and serve on a thread of its own; return self."""
        self._thread.start()
        context = self.ca.server_context(["h2", "http/1.1"])
        future = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._accept, "127.0.0.1", 0, ssl=context), self._loop
        )
        self._server = future.result(timeout=10)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        ssl_object = writer.get_extra_info("ssl_object")
        if ssl_object is not None and ssl_object.selected_alpn_protocol() != "h2":
            await self._http1(reader, writer, self.connections)
            return
        connection = _Connection(self, self.connections, writer)
        connection.h2.initiate_connection()
        # A large window: the answers are small, the requests many.
        connection.h2.increment_flow_control_window(2**24)
        connection.flush()
        try:
            while not connection.closed:
                data = await reader.read(65536)
                if not data:
                    break
                connection.received(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            connection.close()

    async def _http1(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, number: int
    ) -> None:
        """HTTP/1.1 with keep-alive, for clients that do not offer h2 (requests with a
        Content-Length body only)."""
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                line, *fields = head.decode("latin-1").split("\r\n")
                method, path, _version = line.split(" ", 2)
                headers = {}
                for field in fields:
                    if ":" in field:
                        name, value = field.split(":", 1)
                        headers[name.strip().lower()] = value.strip()
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                if self.latency:
                    await asyncio.sleep(self.latency)
                try:
                    answer = self.handler(Request(method, path, headers, body, number))
                except Exception:
                    answer = Answer(500)
                lines = [f"HTTP/1.1 {answer.status} X", f"content-length: {len(answer.body)}"]
                lines += [f"{name}: {value}" for name, value in answer.headers.items()]
                writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + answer.body)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, OSError, ValueError):
            pass
        finally:
            writer.close()

    def close(self) -> None:
        """Stop serving and end the thread."""
        if self._server is not None:
            server = self._server

            async def stop() -> None:
                server.close()
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(server.wait_closed(), 2)

            with contextlib.suppress(Exception):
                asyncio.run_coroutine_threadsafe(stop(), self._loop).result(timeout=5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        self._loop.close()
