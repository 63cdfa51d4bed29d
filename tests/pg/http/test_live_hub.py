"""The live hub's sockets without a server (H1): a burst coalesces into one refresh per socket,
written at once where the server can (`send_now`), by the socket's coroutine where it cannot."""

from __future__ import annotations

import asyncio
from typing import Any

from notify_pg.http.live import REFRESH, LiveHub


class FakeSocket:
    """One socket's ASGI side: what was sent, each way, and a way to leave."""

    def __init__(self, can_send_now: bool | None) -> None:
        self.sent: list[str] = []
        self.sent_now: list[str] = []
        self.can_send_now = can_send_now
        self.inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

    async def send(self, text: str) -> None:
        self.sent.append(text)

    def send_now(self, text: str) -> bool:
        if self.can_send_now:
            self.sent_now.append(text)
        return bool(self.can_send_now)

    async def receive(self) -> dict[str, Any]:
        return await self.inbox.get()


async def _turns(n: int = 5) -> None:
    for _ in range(n):
        await asyncio.sleep(0)


def test_h1_a_burst_is_one_refresh_per_socket_whichever_way_it_is_sent() -> None:
    async def scenario() -> None:
        hub = LiveHub("postgresql://unused")
        plain, direct, refused = FakeSocket(None), FakeSocket(True), FakeSocket(False)
        tasks = [
            asyncio.ensure_future(
                hub.serve_socket(
                    person,
                    sock.send,
                    sock.receive,
                    send_now=None if sock.can_send_now is None else sock.send_now,
                )
            )
            for person, sock in (("ana", plain), ("bob", direct), ("cy", refused))
        ]
        await _turns()
        assert hub.open_sockets == 3
        for _ in range(3):  # a burst: three notifications read in one turn
            hub.tell(["ana", "bob", "cy", "nobody"])
        await _turns()
        assert (plain.sent, plain.sent_now) == ([REFRESH], [])
        assert (direct.sent, direct.sent_now) == ([], [REFRESH])
        assert (refused.sent, refused.sent_now) == ([REFRESH], [])  # its coroutine sent it
        hub.tell(None)  # everyone, once more
        await _turns()
        assert [len(s.sent) + len(s.sent_now) for s in (plain, direct, refused)] == [2, 2, 2]
        await plain.inbox.put({"type": "websocket.receive", "text": "hello"})  # ignored
        await _turns()
        assert plain.sent == [REFRESH, REFRESH] and hub.open_sockets == 3
        for sock in (plain, direct, refused):
            await sock.inbox.put({"type": "websocket.disconnect", "code": 1000})
        await asyncio.wait_for(asyncio.gather(*tasks), 5)
        assert hub.open_sockets == 0

    asyncio.run(scenario())
