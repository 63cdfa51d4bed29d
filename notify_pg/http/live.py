"""Live inbox updates over websockets (H1): LISTEN, then say "refresh".

`LiveHub` keeps the open websockets of ``notify serve`` by person and one listening connection
to PostgreSQL on `notify_pg.inbox.live.live_channel`. A notification names the people a write
touched; each of their sockets is sent the text ``refresh`` (`REFRESH`), and the page calls
the summary, which stays the only source of truth: a pushed refresh and a polled one leave the
same state. Bursts coalesce: a socket with a refresh not yet sent gets no second one.

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
from collections.abc import Awaitable, Callable
from typing import Any, Final

import psycopg
from psycopg import sql

from notify_pg.db.migrate import DEFAULT_SCHEMA
from notify_pg.inbox.live import live_channel, people_of

__all__ = ["RECONNECT_DELAY", "REFRESH", "LiveHub", "LiveSocket"]

#: What a socket is sent when its person's summary may have changed.
REFRESH: Final = "refresh"
#: Seconds between two attempts to listen again after the connection was lost.
RECONNECT_DELAY: Final = 0.5

_log = logging.getLogger("notify_pg.serve")

#: Sends one text message on a socket (the ASGI ``send`` wrapped).
SendText = Callable[[str], Awaitable[None]]


class LiveSocket:
    """One open websocket of a person: at most one refresh waiting to be sent."""

    __slots__ = ("_wake", "person")

    def __init__(self, person: str) -> None:
        self.person = person
        # maxsize 1: a refresh waiting covers every later one (coalescing).
        self._wake: asyncio.Queue[None] = asyncio.Queue(maxsize=1)

    def poke(self) -> None:
        """Ask for a refresh to be sent (a no-op while one is waiting)."""
        if self._wake.empty():
            self._wake.put_nowait(None)

    async def next_refresh(self) -> None:
        """Wait until a refresh is due."""
        await self._wake.get()


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
        self.listening = asyncio.Event()
        self.notifications = 0
        #: Also told the people of every notification (``None``: everyone), before the
        #: sockets (`notify_pg.http.kept.KeptSummaries.forget`).
        self.observers: list[Callable[[list[str] | None], None]] = []

    @property
    def open_sockets(self) -> int:
        """How many sockets are open."""
        return sum(len(s) for s in self._sockets.values())

    def attach(self, person: str) -> LiveSocket:
        """Register a new socket of ``person``."""
        sock = LiveSocket(person)
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
        """Poke the sockets of ``people`` (``None``: every socket); tell the observers."""
        for observer in self.observers:
            observer(people)
        if people is None:
            for socks in self._sockets.values():
                for sock in socks:
                    sock.poke()
            return
        for person in people:
            for sock in self._sockets.get(person, ()):
                sock.poke()

    async def serve_socket(
        self, person: str, send: SendText, receive: Callable[[], Awaitable[Any]]
    ) -> None:
        """Serve one accepted websocket until the client leaves: send ``refresh`` when poked.

        ``receive`` is the ASGI receive; what the client sends is ignored (the socket only
        speaks one way), a ``websocket.disconnect`` ends it.
        """
        sock = self.attach(person)
        incoming: asyncio.Task[Any] = asyncio.ensure_future(receive())
        waking: asyncio.Task[None] = asyncio.ensure_future(sock.next_refresh())
        try:
            while True:
                await asyncio.wait({incoming, waking}, return_when=asyncio.FIRST_COMPLETED)
                if incoming.done():
                    if incoming.result().get("type") == "websocket.disconnect":
                        return
                    incoming = asyncio.ensure_future(receive())
                if waking.done():
                    await send(REFRESH)
                    waking = asyncio.ensure_future(sock.next_refresh())
        finally:
            self.detach(sock)
            for task in (incoming, waking):
                task.cancel()

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
