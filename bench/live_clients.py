"""Websocket clients of bench_serve_live.py, in a process of their own (standard library only).

    python bench/live_clients.py PORT FIRST COUNT

Opens COUNT websockets on ws://127.0.0.1:PORT/notifications/live, as the people
``w{FIRST:05d}`` onwards (``X-Notify-User``), and records the time (``time.monotonic``, one
clock for every process of the machine) of each ``refresh`` each socket receives. A minimal
client on asyncio's protocols, so that the clients of 10,000 sockets cost little next to the
server measured: it answers pings (uvicorn closes a socket without pongs) and reads every
frame at once. On stdin it takes one command a line and answers one line on stdout:

- ``ready`` is printed unasked once every socket is open;
- ``count T``: how many sockets have a ``refresh`` at or after ``T``;
- ``dump``: a JSON array, per socket, of its arrival times; then the process ends.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import sys
import time

_HANDSHAKE = (
    "GET /notifications/live HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
    "Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
    "X-Notify-User: {person}\r\n\r\n"
)


class Client(asyncio.Protocol):
    """One websocket: the handshake, then every frame read as it comes."""

    def __init__(self, request: bytes, opened: asyncio.Future[None]) -> None:
        self.request = request
        self.opened = opened
        self.buffer = b""
        self.arrivals: list[float] = []
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        transport.write(self.request)

    def data_received(self, data: bytes) -> None:
        now = time.monotonic()
        buffer = self.buffer + data
        if not self.opened.done():
            head, sep, buffer = buffer.partition(b"\r\n\r\n")
            if not sep:
                self.buffer = head
                return
            if not head.startswith(b"HTTP/1.1 101"):
                self.opened.set_exception(RuntimeError(head.split(b"\r\n", 1)[0].decode()))
                return
            self.opened.set_result(None)
        while len(buffer) >= 2:
            opcode, length, start = buffer[0] & 0x0F, buffer[1] & 0x7F, 2
            if length == 126:
                length, start = int.from_bytes(buffer[2:4], "big"), 4
            if len(buffer) < start + length:
                break
            payload, buffer = buffer[start : start + length], buffer[start + length :]
            if opcode == 0x1 and payload == b"refresh":
                self.arrivals.append(now)
            elif opcode == 0x9 and self.transport is not None:  # ping: a pong, masked by zeros
                self.transport.write(bytes([0x8A, 0x80 | len(payload)]) + bytes(4) + payload)
        self.buffer = buffer

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.opened.done():
            self.opened.set_exception(RuntimeError(f"connection lost: {exc}"))


async def main(port: int, first: int, count: int) -> None:
    loop = asyncio.get_running_loop()
    clients: list[Client] = []
    for start in range(first, first + count, 100):  # in steps: no connect storm measured
        batch = []
        for n in range(start, min(start + 100, first + count)):
            key = base64.b64encode(os.urandom(16)).decode()
            request = _HANDSHAKE.format(port=port, key=key, person=f"w{n:05d}").encode()
            client = Client(request, loop.create_future())
            batch.append(client)
            await loop.create_connection(lambda c=client: c, "127.0.0.1", port)  # type: ignore[misc]
        await asyncio.wait_for(asyncio.gather(*(c.opened for c in batch)), 60)
        clients += batch
    print("ready", flush=True)
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while line := (await reader.readline()).decode().split():
        if line[0] == "count":
            since = float(line[1])
            told = sum(1 for c in clients if c.arrivals and c.arrivals[-1] >= since)
            print(told, flush=True)
        elif line[0] == "dump":
            print(json.dumps([c.arrivals for c in clients]), flush=True)
            break
    for client in clients:
        if client.transport is not None:
            client.transport.close()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])))
