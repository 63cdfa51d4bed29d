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
  pause, so a client that does not read delays nobody else;
- a short text (125 bytes at most, ``refresh``) is written as its frame's bytes straight away,
  without the general path's frame objects: 10,000 of them at once are the fan-out's cost;
- the app finds that write, synchronous, in the scope's extensions under `SEND_NOW`
  (``scope["extensions"][SEND_NOW](text) -> bool``, ``False`` when it cannot write now), so
  the live hub writes 10,000 refreshes in one turn of the loop instead of waking 10,000
  coroutines (`notify_pg.http.live.LiveHub.tell`).

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
from typing import Any, Final

from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.protocol import State

__all__ = ["KERNEL_BUFFER", "QUEUE_BYTES", "SEND_NOW", "BoundedWebSocket"]

#: ``SO_SNDBUF`` of an accepted websocket (the kernel doubles it for its own bookkeeping).
KERNEL_BUFFER: Final = 16 * 1024
#: Bytes queued in the process for one socket, past the kernel's, before it is closed.
QUEUE_BYTES: Final = 16 * 1024

#: The scope extension under which the app finds `BoundedWebSocket.send_now`.
SEND_NOW: Final = "notify.send_now"

_log = logging.getLogger("notify_pg.serve")
#: The first byte of a final text frame; a server's frames are not masked (RFC 6455 5.2).
_TEXT_FIN: Final = 0x81
#: The longest payload whose length fits the frame's second byte.
_SHORT: Final = 125


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

    def handle_connect(self, event: Any) -> None:
        """Start the app on the handshake, with `send_now` among the scope's extensions."""
        super().handle_connect(event)
        scope: Any = getattr(self, "scope", None)  # absent when the handshake was refused
        if scope is not None:
            scope["extensions"][SEND_NOW] = self.send_now

    def send_now(self, text: str) -> bool:
        """Write a short text message at once; ``False`` when it cannot be written now (not
        open, closing, or over 125 bytes): the app sends it the ASGI way instead."""
        if not (
            self.handshake_complete
            and self.initial_response is None
            and not self.close_sent
            and not self.disconnected
            and self.conn.state is State.OPEN
            and not self.transport.is_closing()
        ):
            return False
        data = text.encode()
        if len(data) > _SHORT:
            return False
        self.transport.write(bytes((_TEXT_FIN, len(data))) + data)
        return True

    async def send(self, message: Any) -> None:
        """Send an ASGI message; a short text on an open socket as its frame's bytes."""
        text = message.get("text") if message["type"] == "websocket.send" else None
        if message.get("bytes") is None and isinstance(text, str) and self.send_now(text):
            return
        await super().send(message)
