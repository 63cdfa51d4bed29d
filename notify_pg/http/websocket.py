"""The websocket protocol of ``notify serve``: a client that does not read is closed, not awaited.

`BoundedWebSocket` is uvicorn's ``websockets-sansio`` protocol with bounded queues. Where
uvicorn's own waits, on its next send, for a client that does not read to drain what is queued
(holding the bytes, the socket and the coroutine as long as the client keeps it open), this
one closes that client once its queue is full:

- the kernel keeps at most `KERNEL_BUFFER` bytes (``SO_SNDBUF``, which Linux doubles) for the
  socket, then the process queues at most `QUEUE_BYTES` more; past them the socket is closed
  at once (``live slow client closed``, with ``queued_bytes``), its ``receive`` says
  ``websocket.disconnect`` and its hub entry goes;
- a write never waits: a fan-out that tells 10,000 sockets ``refresh`` writes each without a
  pause, so a client that does not read delays nobody else.

A ``refresh`` is 9 bytes on the wire and a burst coalesces into one per socket
(`notify_pg.http.live`), so a client that reads at all never comes near the bound. A client
that stops reading altogether and is not told anything is closed by uvicorn's keep-alive
ping (no pong within 20 s of a ping sent every 20 s).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from typing import Final

from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

__all__ = ["KERNEL_BUFFER", "QUEUE_BYTES", "BoundedWebSocket"]

#: ``SO_SNDBUF`` of an accepted websocket (the kernel doubles it for its own bookkeeping).
KERNEL_BUFFER: Final = 16 * 1024
#: Bytes queued in the process for one socket, past the kernel's, before it is closed.
QUEUE_BYTES: Final = 16 * 1024

_log = logging.getLogger("notify_pg.serve")


class BoundedWebSocket(WebSocketsSansIOProtocol):
    """uvicorn's websocket protocol that closes a client whose queue is full (module docs)."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """Take the upgraded connection, with the kernel's and the process's bounds."""
        super().connection_made(transport)
        sock = transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, KERNEL_BUFFER)
        if isinstance(transport, asyncio.WriteTransport):
            transport.set_write_buffer_limits(high=QUEUE_BYTES)

    def pause_writing(self) -> None:
        """The queue is full: close the socket now (uvicorn would wait for it to drain)."""
        queued = self.transport.get_write_buffer_size()
        _log.warning("live slow client closed", extra={"fields": {"queued_bytes": queued}})
        # abort, not close: close would keep the queued bytes until the client reads them.
        self.transport.abort()
