"""The HTTP/2 client's connections (issue 36 items 1 and 7): streams never above what the
server allows, a further connection only when every open one is full, no more than
``max_connections`` of them, and every request answered once, against a real local HTTP/2
server over TLS."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import pytest

from notify_pg.push.providers import ProviderGate
from notify_pg.push.providers.h2client import H2Client, Request
from notify_pg.push.providers.local.h2server import Answer, H2Server
from notify_pg.push.providers.local.h2server import Request as Received
from notify_pg.push.providers.local.tls import LocalCa
from notify_pg.push.providers.transport import tls_context


class Echo:
    """A server whose handler answers 200 with the request's path, counting each path."""

    def __init__(self, ca: LocalCa, *, max_streams: int, latency: float) -> None:
        self.seen: Counter[str] = Counter()
        self.server = H2Server(ca, self._handle, latency=latency, max_streams=max_streams).start()

    def _handle(self, request: Received) -> Answer:
        self.seen[request.path] += 1
        return Answer(200, body=request.path.encode())


@pytest.fixture
def echo(ca: LocalCa) -> Iterator[Echo]:
    server = Echo(ca, max_streams=20, latency=0.1)
    yield server
    server.server.close()


def requests(count: int) -> list[Request]:
    return [Request("POST", f"/r/{i}", {"x-n": str(i)}, b"{}") for i in range(count)]


def send(client: H2Client, count: int, slots: int) -> list[str]:
    outcomes = client.request_many(requests(count), ProviderGate(slots))
    bodies = []
    for answer, _seconds in outcomes:
        assert not isinstance(answer, Exception), answer
        assert answer.status == 200
        bodies.append(answer.body.decode())
    return bodies


def test_a_batch_above_the_servers_stream_limit_opens_connections_up_to_the_cap(
    echo: Echo, ca: LocalCa
) -> None:
    client = H2Client(echo.server.url, context=tls_context(ca.ca_file), max_connections=3)
    try:
        bodies = send(client, 150, slots=150)
    finally:
        client.close()
    assert bodies == [f"/r/{i}" for i in range(150)]  # each its own answer, in call order
    assert echo.seen == Counter({f"/r/{i}": 1 for i in range(150)})  # none lost or doubled
    assert echo.server.peak_streams == 20  # filled, never above the server's limit
    assert client.opened == echo.server.connections == 3


def test_one_connection_serves_a_batch_in_turns_when_no_other_may_open(
    echo: Echo, ca: LocalCa
) -> None:
    client = H2Client(echo.server.url, context=tls_context(ca.ca_file), max_connections=1)
    try:
        bodies = send(client, 90, slots=90)
    finally:
        client.close()
    # 70 requests waited for a place: each freed stream let one of them go.
    assert bodies == [f"/r/{i}" for i in range(90)]
    assert echo.seen == Counter({f"/r/{i}": 1 for i in range(90)})
    assert echo.server.peak_streams == 20
    assert client.opened == echo.server.connections == 1


def test_no_second_connection_while_the_first_has_room(ca: LocalCa) -> None:
    roomy = Echo(ca, max_streams=500, latency=0.05)
    client = H2Client(roomy.server.url, context=tls_context(ca.ca_file))
    try:
        send(client, 1, slots=1)  # the server's SETTINGS (500 streams) have come
        bodies = send(client, 300, slots=300)
    finally:
        client.close()
        roomy.server.close()
    assert len(bodies) == 300 and sum(roomy.seen.values()) == 301
    assert roomy.server.peak_streams > 100  # more than another server's whole limit
    assert client.opened == 1


def test_the_apns_server_allows_500_streams_as_apns_says(ca: LocalCa) -> None:
    from notify_pg.push.providers.local.apns import LocalApns

    assert LocalApns(ca).server.max_streams == 500
