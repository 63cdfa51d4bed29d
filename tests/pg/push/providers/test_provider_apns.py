"""APNs against a local HTTP/2 TLS server with its own test CA that verifies the provider
token: headers, payloads, environments, one multiplexed connection, GOAWAY, the token's
refresh and every error of R1."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import attrs
import pytest
from provider_parts import HINT, QUIET, SYNC, Alerts, registration

from notify_core.hints.delivery import Notification, ResultClass, SendResult
from notify_pg.push.providers.apns import ApnsKey, ApnsProvider, ApnsTokens
from notify_pg.push.providers.local.apns import LocalApns, apns_error
from notify_pg.push.providers.local.h2server import Answer
from notify_pg.push.providers.local.tls import LocalCa

TEAM, KID, TOPIC = "TEAM123456", "KEY1234567", "com.example.chat"
DEVICE = "a1" * 32


@pytest.fixture
def apns(ca: LocalCa) -> Iterator[LocalApns]:
    server = LocalApns(ca).start()
    server.device(DEVICE, TOPIC)
    yield server
    server.close()


@pytest.fixture
def key(apns: LocalApns) -> ApnsKey:
    return ApnsKey.from_p8(apns.team_key(TEAM, KID), key_id=KID, team_id=TEAM)


def make(apns: LocalApns, key: ApnsKey, ca: LocalCa, alerts: Alerts | None = None) -> ApnsProvider:
    return ApnsProvider(
        key,
        production_url=apns.server.url,
        sandbox_url="https://localhost:1",  # nothing listens: a sandbox push would fail
        ca_file=ca.ca_file,
        max_age=timedelta(minutes=30),
        alerts=alerts,
    )


@pytest.fixture
def provider(apns: LocalApns, key: ApnsKey, ca: LocalCa, alerts: Alerts) -> Iterator[ApnsProvider]:
    provider = make(apns, key, ca, alerts)
    yield provider
    provider.close()


def test_a_hint_carries_the_headers_and_payload_of_apns(
    apns: LocalApns, provider: ApnsProvider
) -> None:
    before = datetime.now(UTC).timestamp()
    assert provider.send(registration("apns", DEVICE), HINT) == SendResult(result_class="accepted")
    got = apns.received[0]
    assert got.headers["apns-topic"] == TOPIC
    assert got.headers["apns-push-type"] == "alert"
    assert got.headers["apns-priority"] == "10"
    assert got.headers["apns-collapse-id"] == "t-42"
    assert got.headers["apns-id"] == HINT.id
    assert 1790 <= int(got.headers["apns-expiration"]) - before <= 1810
    assert got.payload == {
        "aps": {
            "alert": {"loc-key": "hint.mention"},
            "badge": 3,
            "mutable-content": 1,
            "thread-id": "t-42",
            "sound": "default",
        },
        "k": "mention",
        "id": HINT.id,
        "thread": "t-42",
        "message": "m-7",
        "badge": 3,
        "instance": "i-1",
    }


def test_quiet_goes_at_priority_5_without_sound_and_sync_is_the_badge_alone(
    apns: LocalApns, provider: ApnsProvider
) -> None:
    provider.send(registration("apns", DEVICE), QUIET)
    provider.send(registration("apns", DEVICE), SYNC)
    quiet, sync = apns.received
    assert quiet.headers["apns-priority"] == "5"
    assert "sound" not in quiet.payload["aps"]  # type: ignore[operator]
    assert sync.headers["apns-priority"] == "5"
    assert sync.headers["apns-collapse-id"] == "sync"
    assert sync.payload == {"aps": {"badge": 1}}


def test_the_environment_picks_the_host(apns: LocalApns, key: ApnsKey, ca: LocalCa) -> None:
    provider = ApnsProvider(
        key, production_url="https://localhost:1", sandbox_url=apns.server.url, ca_file=ca.ca_file
    )
    try:
        sandbox = provider.send(registration("apns", DEVICE, environment="sandbox"), HINT)
        production = provider.send(registration("apns", DEVICE), HINT)
    finally:
        provider.close()
    assert sandbox.result_class == "accepted"
    assert production.result_class == "retry"  # nothing listens on the production host
    assert len(apns.received) == 1


def test_concurrent_pushes_share_one_connection_and_survive_goaway(
    ca: LocalCa, key: ApnsKey
) -> None:
    server = LocalApns(ca, latency=0.02, goaway_after=50).start()
    server.team_key(TEAM, KID)  # another key of the same id replaces the fixture's
    key = ApnsKey.from_p8(server.team_key(TEAM, KID), key_id=KID, team_id=TEAM)
    devices = [server.device(f"{i:064x}", TOPIC) for i in range(200)]
    provider = make(server, key, ca)
    try:
        with ThreadPoolExecutor(32) as pool:
            results = list(
                pool.map(
                    lambda d: provider.send(
                        registration("apns", d[1]),
                        Notification(id=f"n-{d[0]}", kind="message", thread="t", badge=1),
                    ),
                    enumerate(devices),
                )
            )
    finally:
        provider.close()
        server.close()
    assert [r.result_class.value for r in results] == ["accepted"] * 200
    ids = sorted(p.payload["id"] for p in server.received)  # type: ignore[type-var]
    assert ids == sorted(f"n-{i}" for i in range(200))  # nothing lost, nothing doubled
    per_connection = Counter(p.connection for p in server.received)
    # A GOAWAY after 50 answers and those in flight then (at most 32 threads): 3 or 4.
    assert 3 <= server.server.connections <= 4
    assert len(per_connection) == server.server.connections
    assert all(50 <= n <= 82 for c, n in per_connection.items() if c < len(per_connection))


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (
            apns_error(410, "Unregistered", timestamp_ms=1_790_000_000_000),
            SendResult(
                result_class="disable",
                disable_reason="token_invalid",
                invalid_since=datetime.fromtimestamp(1_790_000_000, UTC),
            ),
        ),
        (
            apns_error(400, "BadDeviceToken"),
            SendResult(result_class="disable", disable_reason="token_invalid"),
        ),
        (
            apns_error(400, "DeviceTokenNotForTopic"),
            SendResult(result_class="disable", disable_reason="topic_mismatch"),
        ),
        (
            apns_error(429, "TooManyRequests", retry_after=120),
            SendResult(result_class="throttled", retry_after=timedelta(seconds=120)),
        ),
        (
            apns_error(503, "ServiceUnavailable", retry_after=5),
            SendResult(result_class="retry", retry_after=timedelta(seconds=5)),
        ),
        (apns_error(500, "InternalServerError"), SendResult(result_class="retry")),
        (apns_error(413, "PayloadTooLarge"), SendResult(result_class="program_error")),
        (apns_error(400, "BadCollapseId"), SendResult(result_class="program_error")),
    ],
)
def test_each_apns_answer_has_its_class(
    apns: LocalApns,
    provider: ApnsProvider,
    answer: Answer,
    expected: SendResult,
    caplog: pytest.LogCaptureFixture,
) -> None:
    apns.program(DEVICE, answer)
    with caplog.at_level(logging.INFO, logger="notify_pg.worker"):
        assert provider.send(registration("apns", DEVICE), HINT) == expected
    assert DEVICE not in caplog.text


def test_the_servers_own_checks_answer_as_apns(apns: LocalApns, provider: ApnsProvider) -> None:
    unknown = provider.send(registration("apns", "b2" * 32), HINT)
    assert unknown == SendResult(result_class="disable", disable_reason="token_invalid")
    other_app = attrs.evolve(registration("apns", DEVICE), app_id="com.example.other")
    assert provider.send(other_app, HINT).disable_reason == "topic_mismatch"
    not_hex = provider.send(registration("apns", "../../x"), HINT)
    assert not_hex.result_class == "disable"
    assert apns.received == []


def test_a_key_of_the_wrong_team_pauses_apns_once(
    apns: LocalApns, ca: LocalCa, alerts: Alerts, caplog: pytest.LogCaptureFixture
) -> None:
    text = apns.team_key("TEAM123456", "KEYWRONG01")
    wrong = ApnsKey.from_p8(text, key_id="KEYWRONG01", team_id="OTHERTEAM1")
    provider = make(apns, wrong, ca, alerts)
    try:
        with caplog.at_level(logging.INFO, logger="notify_pg.worker"):
            first = provider.send(registration("apns", DEVICE), HINT)
            later = [provider.send(registration("apns", DEVICE), HINT) for _ in range(4)]
    finally:
        provider.close()
    assert first.result_class is ResultClass.CONFIG_ERROR
    assert {r.result_class for r in later} == {ResultClass.THROTTLED}
    assert alerts.calls == [("paused", "apns", "InvalidProviderToken")]
    assert [r.getMessage() for r in caplog.records].count("push provider paused") == 1


def test_the_provider_token_is_made_anew_before_an_hour_and_not_before_20_minutes(
    key: ApnsKey,
) -> None:
    now = [1_800_000_000.0]
    tokens = ApnsTokens(key, clock=lambda: now[0])
    first = tokens.token()
    now[0] += 49 * 60
    assert tokens.token() == first
    tokens.expired(first)  # APNs calls it expired at 49 min: a new one is allowed
    second = tokens.token()
    assert second != first
    now[0] += 10 * 60
    tokens.expired(second)  # only 10 min old: kept (a new one would be too frequent)
    assert tokens.token() == second
    now[0] += 40 * 60 + 1  # 50 min old: made anew
    assert tokens.token() != second
    assert tokens.made == 3
    with pytest.raises(ValueError, match="between 20 and 60"):
        ApnsTokens(key, refresh=timedelta(minutes=10))


def test_an_expired_provider_token_is_a_retry(apns: LocalApns, provider: ApnsProvider) -> None:
    apns.program(DEVICE, apns_error(403, "ExpiredProviderToken"))
    assert provider.send(registration("apns", DEVICE), HINT).result_class == "retry"


def test_an_answer_that_does_not_come_in_time_is_a_retry_and_frees_its_stream(
    ca: LocalCa, key: ApnsKey
) -> None:
    slow = LocalApns(ca, latency=1.0, open_devices=True).start()
    key = ApnsKey.from_p8(slow.team_key(TEAM, KID), key_id=KID, team_id=TEAM)
    provider = ApnsProvider(key, production_url=slow.server.url, ca_file=ca.ca_file, timeout=0.2)
    try:
        results = [provider.send(registration("apns", DEVICE), HINT) for _ in range(3)]
        connections = provider._clients["production"]._connections
        assert len(connections) == 1 and connections[0].streams == {}
    finally:
        provider.close()
        slow.close()
    assert [r.result_class.value for r in results] == ["retry"] * 3
