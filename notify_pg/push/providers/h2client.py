"""One HTTP/2 connection over TLS to one origin, shared by the worker's threads.

`H2Client.request` may be called from any thread: the connection lives on an event loop
thread of its own (so TLS and the HTTP/2 state are only ever touched there), each request is
one stream of it, and as many streams run at once as the server's
``SETTINGS_MAX_CONCURRENT_STREAMS`` allows. A GOAWAY is honoured as RFC 9113 6.8 says: the
streams up to its last stream id still get their answers, the streams above it were not taken
and go again on a new connection, which the next request opens. A connection lost under a
stream raises `ConnectionLost` (the request may have been taken: at least once).

`H2Client.request_many` hands a whole batch over at once (`notify_pg.push.providers.fanout`):
the loop starts a stream for each request as soon as a request slot is free (the process-wide
limit, taken without waiting) and gives the slot back with the answer, so one hand-over
between threads serves the batch instead of one per request.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import ssl
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import attrs
import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions
from hpack import HeaderTuple, NeverIndexedHeaderTuple

if TYPE_CHECKING:
    from notify_pg.push.providers.fanout import Slots

__all__ = ["Batch", "ConnectionLost", "H2Client", "Outcome", "Reply", "Request"]

#: Seconds between looks for a free request slot while a batch has none and no stream open
#: (the other threads of the process hold every slot).
_SLOT_POLL = 0.002


#: Requests written together at most: one write per turn of the loop saves system calls, but
#: a turn that starts a hundred streams would hold the first ones back for all of it.
_FLUSH_EVERY = 16


#: One header field of a request: a plain pair, or one HPACK must never index.
_Field = tuple[str, str] | HeaderTuple


class ConnectionLost(Exception):
    """The connection ended under a stream: the request may or may not have been taken."""


class _NotTaken(Exception):
    """The server did not take the stream (above a GOAWAY's last stream): send it again."""


#: The outcome of a batch's request before it is answered (never returned).
_NOT_SENT = ConnectionLost("the request was not sent")


@attrs.frozen
class Reply:
    """One answer: the status, the headers (lower-case names) and the body."""

    status: int
    headers: dict[str, str]
    body: bytes


@attrs.frozen
class Request:
    """One request of a batch (`H2Client.request_many`): as `H2Client.request`'s arguments."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    volatile: frozenset[str] = frozenset()


class _H2(h2.connection.H2Connection):
    """h2's client connection, counting its open streams by the caller's count.

    h2 counts them by walking every stream at each new one (dropping the closed ones as it
    goes): with a hundred streams open that walk is a tenth of the loop's time per request.
    `_Connection.request` opens a stream only below the server's limit, by its own count of
    the streams awaiting answers; h2's walk still runs at every 64th stream to drop the
    closed ones.
    """

    def __init__(self, config: h2.config.H2Configuration, count: Callable[[], int]) -> None:
        super().__init__(config=config)
        self._count = count
        self._asked = 0

    @property
    def open_outbound_streams(self) -> int:
        """The open streams this side opened (the caller's count; h2's every 64th time)."""
        self._asked += 1
        if self._asked % 64 == 0:
            return super().open_outbound_streams
        return self._count()


class _Connection:
    """One connection; every method runs on the loop thread."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        # The headers are the provider's own: checking each one again costs a third of a
        # request's CPU time (bench/bench_push_providers.py).
        config = h2.config.H2Configuration(
            client_side=True,
            header_encoding="utf-8",
            validate_outbound_headers=False,
            normalize_outbound_headers=False,
            validate_inbound_headers=False,
        )
        self.h2 = _H2(config, lambda: len(self.streams))
        # Huffman coding of every literal costs more CPU time than its few bytes save on a
        # request of some hundred bytes (a device token in the path, ids): plain literals.
        encode = self.h2.encoder.encode
        self.h2.encoder.encode = lambda headers, huffman=False: encode(headers, huffman=False)  # type: ignore[method-assign]
        self.h2.initiate_connection()
        self.h2.increment_flow_control_window(2**24)
        self.streams: dict[int, tuple[asyncio.Future[Reply], list[tuple[str, str]], bytearray]] = {}
        self.usable = True
        self.settled = asyncio.Event()  # the server's first SETTINGS came (or the end)
        self.flush_due = False
        self.unflushed = 0  # requests made since the last write
        self.changed = asyncio.Event()  # settings, windows or streams changed
        # Requests waiting for a stream's place, first come first served: a freed place wakes
        # one of them, not all (every answer waking every waiter costs each answer a walk
        # through all of them when a batch holds more requests than the server's limit).
        self.waiting: deque[asyncio.Future[None]] = deque()
        self.flush()
        self.task = asyncio.get_running_loop().create_task(self.read())

    def flush(self) -> None:
        self.flush_due = False
        self.unflushed = 0
        data = self.h2.data_to_send()
        if data:
            self.writer.write(data)

    def flush_soon(self) -> None:
        """Write at the end of this turn of the loop: the requests started in one turn go
        out in one TLS record and one system call, not one each."""
        self.unflushed += 1
        if self.unflushed >= _FLUSH_EVERY:
            self.flush()  # a long turn of the loop does not hold the first requests back
        elif not self.flush_due:
            self.flush_due = True
            asyncio.get_running_loop().call_soon(self.flush)

    async def read(self) -> None:
        try:
            while True:
                data = await self.reader.read(65536)
                if not data:
                    break
                self.received(data)
        except (ConnectionError, OSError, h2.exceptions.ProtocolError, ssl.SSLError):
            pass
        self.usable = False
        self.settled.set()  # nothing more comes: whoever waits for the SETTINGS goes on
        self.fail(lambda _sid: ConnectionLost("the connection ended"))
        with contextlib.suppress(Exception):
            self.writer.close()

    def fail(self, error: object) -> None:
        for stream_id, (future, _h, _b) in list(self.streams.items()):
            if not future.done():
                future.set_exception(error(stream_id))  # type: ignore[operator]
        self.streams.clear()
        self.changed.set()
        self.wake(len(self.waiting))

    def received(self, data: bytes) -> None:
        for event in self.h2.receive_data(data):
            if isinstance(event, h2.events.ResponseReceived):
                held = self.streams.get(event.stream_id or 0)
                if held is not None:
                    held[1].extend(event.headers or ())  # type: ignore[arg-type]
            elif isinstance(event, h2.events.DataReceived):
                held = self.streams.get(event.stream_id or 0)
                if held is not None:
                    held[2].extend(event.data or b"")
                self.h2.acknowledge_received_data(
                    event.flow_controlled_length or 0, event.stream_id or 0
                )
            elif isinstance(event, h2.events.StreamEnded):
                self.finish(event.stream_id or 0)
            elif isinstance(event, h2.events.StreamReset):
                held = self.streams.pop(event.stream_id or 0, None)
                if held is not None:
                    if not held[0].done():
                        held[0].set_exception(ConnectionLost("the server reset the stream"))
                    self.wake(1)
                self.changed.set()
            elif isinstance(event, h2.events.ConnectionTerminated):
                self.usable = False
                last = event.last_stream_id or 0
                above = {sid for sid in self.streams if sid > last}
                for sid in above:
                    future = self.streams.pop(sid)[0]
                    if not future.done():
                        future.set_exception(_NotTaken())
                self.changed.set()
                self.wake(len(self.waiting))  # they go to the next connection
                self.close_when_done()
            elif isinstance(event, h2.events.RemoteSettingsChanged):
                self.settled.set()
                self.changed.set()
                self.wake(len(self.waiting))  # the limit may have grown
            elif isinstance(event, h2.events.WindowUpdated):
                self.changed.set()
        self.flush()

    def close_when_done(self) -> None:
        """After a GOAWAY, close once the last stream it left open is answered."""
        if not self.usable and not self.streams:
            with contextlib.suppress(Exception):
                self.writer.close()

    def limit(self) -> int:
        """Streams the server allows at once (its SETTINGS came before any stream started:
        `H2Client._usable` waits for them)."""
        return self.h2.remote_settings.max_concurrent_streams

    def has_room(self) -> bool:
        """Whether a stream would start now."""
        return len(self.streams) < self.limit()

    def wake(self, count: int) -> None:
        """Let up to ``count`` waiting requests look for a stream's place again."""
        while count > 0 and self.waiting:
            waiter = self.waiting.popleft()
            if not waiter.done():
                waiter.set_result(None)
                count -= 1

    def finish(self, stream_id: int) -> None:
        held = self.streams.pop(stream_id, None)
        if held is not None:
            self.wake(1)
        self.changed.set()
        self.close_when_done()
        if held is None or held[0].done():
            return
        future, headers, body = held
        values = dict(headers)
        status = int(values.pop(":status", "0"))
        future.set_result(Reply(status, values, bytes(body)))

    async def request(
        self, headers: list[_Field], body: bytes
    ) -> tuple[int, asyncio.Future[Reply]]:
        """Open one stream and send the request; the stream's id and the future of its
        answer."""
        # len(self.streams): h2's own count walks every stream at each call.
        while len(self.streams) >= self.limit():
            if not self.usable:
                raise _NotTaken()
            waiter = asyncio.get_running_loop().create_future()
            self.waiting.append(waiter)
            try:
                await waiter
            except asyncio.CancelledError:
                if waiter.done() and not waiter.cancelled():
                    self.wake(1)  # the place it was given goes to the next one
                raise
        if not self.usable:
            raise _NotTaken()
        stream_id = self.h2.get_next_available_stream_id()
        future: asyncio.Future[Reply] = asyncio.get_running_loop().create_future()
        self.h2.send_headers(stream_id, headers, end_stream=not body)
        self.streams[stream_id] = (future, [], bytearray())  # counted by `_H2` after it opened
        sent = 0
        while sent < len(body):
            window = min(
                self.h2.local_flow_control_window(stream_id),
                self.h2.max_outbound_frame_size,
                len(body) - sent,
            )
            if window <= 0:
                self.flush()
                self.changed.clear()
                await self.changed.wait()
                if future.done():
                    return stream_id, future
                continue
            chunk = body[sent : sent + window]
            sent += len(chunk)
            self.h2.send_data(stream_id, chunk, end_stream=sent == len(body))
        self.flush_soon()
        return stream_id, future

    def abandon(self, stream_id: int) -> None:
        """Give up a stream whose answer did not come in time: reset it and free its place."""
        if self.streams.pop(stream_id, None) is None:
            return
        self.wake(1)
        with contextlib.suppress(h2.exceptions.H2Error):
            self.h2.reset_stream(stream_id, error_code=h2.errors.ErrorCodes.CANCEL)
        self.flush_soon()
        self.changed.set()
        self.close_when_done()

    def close(self) -> None:
        self.usable = False
        self.wake(len(self.waiting))
        with contextlib.suppress(Exception):
            self.h2.close_connection()
            self.flush()
            self.writer.close()
        self.task.cancel()


class H2Client:
    """HTTP/2 over TLS to one origin (``https://host[:port]``), on a loop thread of its own.

    Args:
        url: the origin.
        context: the TLS context (its CA decides whom the client trusts); ALPN ``h2`` is set.
        timeout: seconds to connect, and for each answer.
        max_connections: connections open at once at most. A second one opens only when
            every open one holds as many streams as its server allows at once
            (``SETTINGS_MAX_CONCURRENT_STREAMS``: APNs says 500, Google's front ends 100), so
            that the worker's ``push.max_concurrent_requests`` are not capped by one
            connection's limit; APNs and FCM both allow several connections per sender.

    Attributes:
        opened: connections opened so far.
    """

    def __init__(
        self,
        url: str,
        *,
        context: ssl.SSLContext,
        timeout: float = 10.0,
        max_connections: int = 4,
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme != "https" or not parts.hostname:
            raise ValueError("an HTTP/2 provider URL is https://host[:port]")
        self.host = parts.hostname
        self.port = parts.port or 443
        self.authority = parts.netloc
        self.timeout = timeout
        context.set_alpn_protocols(["h2"])
        self._context = context
        self.max_connections = max_connections
        self._connections: list[_Connection] = []
        self._opening: asyncio.Lock | None = None
        self.opened = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="notify-h2", daemon=True
        )
        self._thread.start()

    def request(
        self,
        method: str,
        path: str,
        headers: dict[str, str],
        body: bytes,
        volatile: frozenset[str] = frozenset(),
    ) -> Reply:
        """Send one request and wait for its answer (from any thread). ``headers`` have
        lower-case names; those in ``volatile`` change with each request (never indexed).

        Raises:
            ConnectionLost: the connection ended under the stream.
            TimeoutError: no answer within the timeout.
            OSError: no connection could be opened.
        """
        future = asyncio.run_coroutine_threadsafe(
            self._request(method, path, headers, body, volatile), self._loop
        )
        return future.result()

    def request_many(
        self, requests: Sequence[Request], slots: Slots
    ) -> list[tuple[Reply | Exception, float]]:
        """Send every request as a stream, each once one of ``slots`` is free, and wait for
        all; per request, in order, its answer or its exception (`request`'s) and the
        seconds from its start to its answer. One hand-over between threads."""
        batch = self.batch(slots)
        batch.add(requests)
        return batch.close()

    def batch(self, slots: Slots) -> Batch:
        """A `Batch` of this client: requests handed over while more are being made."""
        return Batch(self, slots)

    async def _usable(self) -> _Connection:
        """The connection for the next stream: the least busy one with room, else a new one
        while fewer than ``max_connections`` are open, else the least busy (its streams wait
        there for a place)."""
        connection = self._least_busy()
        if connection is not None and (
            connection.has_room() or len(self._connections) >= self.max_connections
        ):
            return connection
        if self._opening is None:
            self._opening = asyncio.Lock()
        async with self._opening:
            connection = self._least_busy()  # another request may have opened one meanwhile
            if connection is not None and (
                connection.has_room() or len(self._connections) >= self.max_connections
            ):
                return connection
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(
                    self.host, self.port, ssl=self._context, server_hostname=self.host
                ),
                self.timeout,
            )
            protocol = writer.get_extra_info("ssl_object").selected_alpn_protocol()
            if protocol != "h2":
                writer.close()
                raise ConnectionLost(f"the server does not speak HTTP/2 ({protocol})")
            connection = _Connection(reader, writer)
            self.opened += 1
            # Streams start only once the server said how many it allows: its SETTINGS are
            # the first frame it sends, and a burst above a lower limit would be refused.
            try:
                await asyncio.wait_for(connection.settled.wait(), self.timeout)
            except TimeoutError:
                connection.close()
                raise
            if not connection.usable:
                raise ConnectionLost("the connection ended before the server's SETTINGS")
            self._connections.append(connection)
            return connection

    def _least_busy(self) -> _Connection | None:
        """The usable connection with the fewest streams awaiting answers (the unusable ones
        are dropped: they close once their last answer came)."""
        if any(not c.usable for c in self._connections):
            self._connections = [c for c in self._connections if c.usable]
        if len(self._connections) == 1:
            return self._connections[0]
        return min(self._connections, key=lambda c: len(c.streams), default=None)

    async def _request(
        self,
        method: str,
        path: str,
        headers: dict[str, str],
        body: bytes,
        volatile: frozenset[str],
    ) -> Reply:
        # Values that change with each request are never indexed: HPACK's dynamic table then
        # holds only the repeated ones, and its linear search stays short.
        fields: list[_Field] = [
            (":method", method),
            (":authority", self.authority),
            (":scheme", "https"),
            NeverIndexedHeaderTuple(":path", path),
            *(
                NeverIndexedHeaderTuple(name, value) if name in volatile else (name, value)
                for name, value in headers.items()
            ),
            NeverIndexedHeaderTuple("content-length", str(len(body))),
        ]
        for _attempt in range(5):  # streams not taken go again on the next connection
            connection = await self._usable()
            try:
                stream_id, future = await connection.request(fields, body)
                try:
                    return await asyncio.wait_for(future, self.timeout)
                except TimeoutError:
                    connection.abandon(stream_id)
                    raise
            except _NotTaken:
                continue
        raise ConnectionLost("the server took the request on no connection")

    def close(self) -> None:
        """Close the connection and stop the loop thread."""

        async def stop() -> None:
            for connection in self._connections:
                connection.close()

        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(stop(), self._loop).result(timeout=5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        self._loop.close()


#: One request's outcome: its answer or its exception, and the seconds it took.
Outcome = tuple[Reply | Exception, float]


#: A request of a batch, or what makes it on the loop just before its stream starts.
Pending = Request | Callable[[], Request]


class Batch:
    """Requests of one client handed to its loop (`H2Client.batch`): each starts as a stream
    once one of ``slots`` (the process-wide request limit, taken without waiting) is free, and
    gives its slot back with its answer. A request may be handed over as a callable that
    makes it: the loop makes it when its stream starts, so the making is spread over the
    round on the one thread that holds the interpreter's lock meanwhile, instead of a
    second thread taking the lock from the loop while the first streams wait for it. An
    exception of a maker is its request's outcome. `add` and `close` are called from the
    caller's thread; the rest runs on the loop.

    Args:
        client: the client whose connection carries the streams.
        slots: the request slots.
    """

    def __init__(self, client: H2Client, slots: Slots) -> None:
        self._client = client
        self._slots = slots
        self._requests: list[Pending] = []
        self._outcomes: list[Outcome] = []
        self._next = 0  # the first request not started
        self._open = 0  # requests started and not answered
        self._closed = False
        self._polling = False
        self._done: concurrent.futures.Future[list[Outcome]] = concurrent.futures.Future()

    def add(self, requests: Sequence[Pending]) -> None:
        """Hand ``requests`` over (they start as slots free up)."""
        if requests:
            self._client._loop.call_soon_threadsafe(self._extend, list(requests))

    def close(self) -> list[Outcome]:
        """Hand nothing more over and wait for every answer: per request, in the order they
        were added, its answer or its exception and the seconds from its start to its
        answer."""
        self._client._loop.call_soon_threadsafe(self._close)
        return self._done.result()

    def _extend(self, requests: list[Pending]) -> None:
        self._requests += requests
        self._outcomes += [(_NOT_SENT, 0.0)] * len(requests)
        self._start()

    def _close(self) -> None:
        self._closed = True
        self._finish_if_done()

    def _start(self) -> None:
        first = self._next
        taken = self._slots.take(len(self._requests) - first)
        self._next += taken
        self._open += taken
        loop = self._client._loop
        for index in range(first, first + taken):
            loop.create_task(self._one(index)).add_done_callback(self._answered)
        if self._open == 0 and self._next < len(self._requests) and not self._polling:
            self._polling = True  # other threads hold every slot: look again shortly
            loop.call_later(_SLOT_POLL, self._poll)

    def _poll(self) -> None:
        self._polling = False
        self._start()

    async def _one(self, index: int) -> None:
        started = time.perf_counter()
        try:
            request = self._requests[index]
            if not isinstance(request, Request):
                request = request()
            answer: Reply | Exception = await self._client._request(
                request.method, request.path, request.headers, request.body, request.volatile
            )
        except Exception as exc:  # this request's failure only
            answer = exc
        self._outcomes[index] = (answer, time.perf_counter() - started)

    def _answered(self, _task: asyncio.Task[None]) -> None:
        self._slots.give(1)
        self._open -= 1
        if self._next < len(self._requests):
            self._start()
        self._finish_if_done()

    def _finish_if_done(self) -> None:
        if (
            self._closed
            and self._open == 0
            and self._next == len(self._requests)
            and not self._done.done()
        ):
            self._done.set_result(self._outcomes)
