"""Live inbox updates over websockets (H1): LISTEN, then say "refresh".

`LiveHub` keeps the open websockets of ``notify serve`` by person and one listening connection
to PostgreSQL on `notify_pg.inbox.live.live_channel`. A notification names the people a write
touched; each of their sockets is sent the text ``refresh`` (`REFRESH`), and the page calls
the summary, which stays the only source of truth: a pushed refresh and a polled one leave the
same state. Bursts coalesce: a socket with a refresh not yet sent gets no second one.

One process holds 10,000 sockets: a socket is a `LiveSocket` (a flag, and a future while its
coroutine sleeps) and one task waiting on the client. Where the server writes a text at once
(``notify serve``'s `notify_pg.http.websocket.SEND_NOW`), the refreshes of the notifications
read in one turn of the event loop are written in the next, all in one go, without waking a
coroutine per socket; under any other ASGI server each socket's coroutine sends its own.

When the listening connection is lost (a database restart, a network cut) the hub connects
again, retrying every `RECONNECT_DELAY` seconds, and once it listens again it sends ``refresh``
to every open socket: whatever was notified while nobody listened is lost, and a refresh
covers it. A page whose own socket broke refreshes when it connects again.

Log lines (the documented format): ``live lost`` with ``error_type`` once when the connection
breaks (or cannot be made), ``live listening`` with ``reconnected`` and ``sockets`` when it is
back (the first connection logs it at debug level only).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Final

import psycopg
from psycopg import sql

from notify_pg.db.migrate import DEFAULT_SCHEMA
from notify_pg.inbox.live import live_channel, people_of

__all__ = ["RECONNECT_DELAY", "REFRESH", "LiveHub", "LiveSocket", "SendNow"]

#: What a socket is sent when its person's summary may have changed.
REFRESH: Final = "refresh"
#: Seconds between two attempts to listen again after the connection was lost.
RECONNECT_DELAY: Final = 0.5

_log = logging.getLogger("notify_pg.serve")

#: Sends one text message on a socket (the ASGI ``send`` wrapped).
SendText = Callable[[str], Awaitable[None]]
#: Writes one text message on a socket at once; ``False`` when it cannot (closing, too long).
SendNow = Callable[[str], bool]


class LiveSocket:
    """One open websocket of a person: at most one refresh waiting to be sent.

    Cheap at 10,000 sockets: a flag and, while its coroutine sleeps, one future. With
    ``send_now`` (a server that can write a text at once, `notify_pg.http.websocket`) the hub
    writes the refresh itself; otherwise a poke wakes the socket's coroutine, which sends it.
    """

    __slots__ = ("_due", "_waiter", "person", "send_now")

    def __init__(self, person: str, send_now: SendNow | None = None) -> None:
        self.person = person
        self.send_now = send_now
        self._due = False  # a refresh waits: it covers every later poke (coalescing)
        self._waiter: asyncio.Future[None] | None = None

    def poke(self) -> bool:
        """Ask for a refresh to be sent; whether it was not due already."""
        if self._due:
            return False
        self._due = True
        return True

    def wake(self) -> None:
        """Wake the socket's coroutine (a refresh is due, or the client spoke or left)."""
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def sleep(self) -> None:
        """Wait until woken; return at once while a refresh is due."""
        if not self._due:
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None

    def take(self) -> bool:
        """Whether a refresh is due; it is no longer (the caller sends it)."""
        due, self._due = self._due, False
        return due


class LiveHub:
    """The open sockets by person, and the LISTEN loop that pokes them.

    Args:
        dsn: the database to listen on (its own connection, outside the request pool).
        schema: the library's schema (its channel).
        reconnect_delay: seconds between attempts to listen again.
    """

    def __init__(
        self,
        dsn: str,
        *,
        schema: str = DEFAULT_SCHEMA,
        reconnect_delay: float = RECONNECT_DELAY,
    ) -> None:
        self.dsn = dsn
        self.channel = live_channel(schema)
        self.reconnect_delay = reconnect_delay
        self._sockets: dict[str, set[LiveSocket]] = {}
        self._direct: list[LiveSocket] = []  # due, written by `_flush` in one go
        self._flushing: asyncio.Handle | None = None
        self.listening = asyncio.Event()
        self.notifications = 0
        #: Also told the people of every notification (``None``: everyone), before the
        #: sockets (`notify_pg.http.kept.KeptSummaries.forget`).
        self.observers: list[Callable[[list[str] | None], None]] = []

    @property
    def open_sockets(self) -> int:
        """How many sockets are open."""
        return sum(len(s) for s in self._sockets.values())

    def attach(self, person: str, send_now: SendNow | None = None) -> LiveSocket:
        """Register a new socket of ``person`` (``send_now``: see `LiveSocket`)."""
        sock = LiveSocket(person, send_now)
        self._sockets.setdefault(person, set()).add(sock)
        return sock

    def detach(self, sock: LiveSocket) -> None:
        """Forget a closed socket."""
        mine = self._sockets.get(sock.person)
        if mine is not None:
            mine.discard(sock)
            if not mine:
                del self._sockets[sock.person]

    def tell(self, people: list[str] | None) -> None:
        """Poke the sockets of ``people`` (``None``: every socket); call it in the event loop.

        The refreshes are written at the loop's next turn, so that the notifications read
        together (a burst) send one per socket. The observers are told first.
        """
        for observer in self.observers:
            observer(people)
        if people is None:
            socks: Iterable[LiveSocket] = [s for group in self._sockets.values() for s in group]
        else:
            socks = [s for person in people for s in self._sockets.get(person, ())]
        direct = self._direct
        for sock in socks:
            if sock.poke():
                if sock.send_now is None:
                    sock.wake()
                else:
                    direct.append(sock)
        if direct and self._flushing is None:
            self._flushing = asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        """Write the refresh of every socket poked since the last turn, each at once; a socket
        that cannot take it now (closing, or a long text) is left to its coroutine."""
        self._flushing = None
        socks, self._direct = self._direct, []
        for sock in socks:
            if sock.take() and sock.send_now is not None and not sock.send_now(REFRESH):
                sock.poke()
                sock.wake()

    async def serve_socket(
        self,
        person: str,
        send: SendText,
        receive: Callable[[], Awaitable[Any]],
        send_now: SendNow | None = None,
    ) -> None:
        """Serve one accepted websocket until the client leaves: send ``refresh`` when poked.

        ``receive`` is the ASGI receive; what the client sends is ignored (the socket only
        speaks one way), a ``websocket.disconnect`` ends it. ``send_now`` (the server's, when
        it has one) writes a text at once, ``False`` when it cannot.
        """
        sock = self.attach(person, send_now)

        def listen() -> asyncio.Task[Any]:
            task: asyncio.Task[Any] = asyncio.ensure_future(receive())
            task.add_done_callback(lambda _task: sock.wake())
            return task

        incoming = listen()
        try:
            while True:
                if not incoming.done():  # done: its wake came while this one was not asleep
                    await sock.sleep()
                if incoming.done():
                    if incoming.result().get("type") == "websocket.disconnect":
                        return
                    incoming = listen()
                if sock.take():
                    await send(REFRESH)
        finally:
            self.detach(sock)
            incoming.cancel()

    async def run(self) -> None:
        """Listen until cancelled, connecting again whenever the connection is lost."""
        ever = False
        warned = False  # one "live lost" per outage, not one per attempt
        while True:
            try:
                conn = await psycopg.AsyncConnection.connect(
                    self.dsn,
                    autocommit=True,
                    connect_timeout=5,
                    application_name="notify serve live",
                    # A cut network shows as a dead connection within about a minute.
                    keepalives=1,
                    keepalives_idle=30,
                    keepalives_interval=10,
                    keepalives_count=3,
                )
                async with conn:
                    await conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self.channel)))
                    fields: dict[str, Any] = {"reconnected": ever, "sockets": self.open_sockets}
                    # The first time at debug: "listening" said the server is up already.
                    level = logging.INFO if ever else logging.DEBUG
                    _log.log(level, "live listening", extra={"fields": fields})
                    if ever:
                        # Notifications sent while nobody listened are lost: refresh everyone.
                        self.tell(None)
                    ever = True
                    warned = False
                    self.listening.set()
                    async for note in conn.notifies():
                        self.notifications += 1
                        self.tell(people_of(note.payload))
            except psycopg.Error as exc:
                if not warned:
                    warned = True
                    _log.warning("live lost", extra={"fields": {"error_type": type(exc).__name__}})
                self.listening.clear()
            await asyncio.sleep(self.reconnect_delay)
