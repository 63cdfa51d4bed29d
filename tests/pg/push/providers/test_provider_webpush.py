"""Web Push and UnifiedPush against a local push service: RFC 8291 decrypted by ``http_ece``,
the VAPID JWT verified, every answer of the push service sorted into R1's classes."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from datetime import timedelta

import http_ece
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from provider_parts import HINT, QUIET, SYNC, Alerts, registration

from notify_core.hints.delivery import Notification, ResultClass, SendResult
from notify_pg.push.providers.local.h2server import Answer
from notify_pg.push.providers.local.tls import LocalCa
from notify_pg.push.providers.local.webpush import LocalPushService
from notify_pg.push.providers.webpush import (
    Subscription,
    Vapid,
    WebPushProvider,
    b64url,
    encrypt,
)

SUBJECT = "mailto:ops@example.com"


@pytest.fixture
def vapid() -> Vapid:
    return Vapid(ec.generate_private_key(ec.SECP256R1()), SUBJECT)


@pytest.fixture
def service(ca: LocalCa, vapid: Vapid) -> Iterator[LocalPushService]:
    service = LocalPushService(ca, vapid.public_key).start()
    yield service
    service.close()


@pytest.fixture
def provider(ca: LocalCa, vapid: Vapid, alerts: Alerts) -> Iterator[WebPushProvider]:
    provider = WebPushProvider(
        "webpush", vapid, ca_file=ca.ca_file, max_age=timedelta(minutes=30), alerts=alerts
    )
    yield provider
    provider.close()


def decrypted(service: LocalPushService, index: int) -> dict[str, object]:
    got = service.received[index]
    key, auth = service.keys[got.subscription]
    plain = http_ece.decrypt(got.body, private_key=key, auth_secret=auth, version="aes128gcm")
    value: dict[str, object] = json.loads(plain)
    return value


def test_a_hint_arrives_encrypted_with_a_verified_vapid_jwt(
    service: LocalPushService, provider: WebPushProvider
) -> None:
    token = service.subscribe("s-1")
    result = provider.send(registration("webpush", token), HINT)
    assert result == SendResult(result_class="accepted")
    assert decrypted(service, 0) == {
        "k": "mention",
        "id": HINT.id,
        "thread": "t-42",
        "message": "m-7",
        "badge": 3,
        "instance": "i-1",
    }
    got = service.received[0]
    assert got.claims["aud"] == service.server.url
    assert got.claims["sub"] == SUBJECT
    assert got.headers["ttl"] == "1800"
    assert got.headers["urgency"] == "high"
    assert len(got.headers["topic"]) == 22


def test_quiet_and_sync_go_at_normal_urgency_and_sync_carries_cleared(
    service: LocalPushService, provider: WebPushProvider
) -> None:
    token = service.subscribe("s-1")
    assert provider.send(registration("webpush", token), QUIET).result_class == "accepted"
    assert provider.send(registration("webpush", token), SYNC).result_class == "accepted"
    assert [m.headers["urgency"] for m in service.received] == ["normal", "normal"]
    assert decrypted(service, 0)["quiet"] is True
    assert decrypted(service, 1) == {
        "k": "sync",
        "id": "n-3",
        "badge": 1,
        "instance": "i-1",
        "cleared": ["t-42", "t-43"],
    }
    assert service.received[1].headers["topic"] == "sync"


def test_unifiedpush_is_the_same_protocol(
    ca: LocalCa, service: LocalPushService, vapid: Vapid
) -> None:
    provider = WebPushProvider("unifiedpush", vapid, ca_file=ca.ca_file)
    try:
        token = service.subscribe("s-up")
        assert provider.name == "unifiedpush"
        result = provider.send(registration("unifiedpush", token), HINT)
    finally:
        provider.close()
    assert result.result_class == "accepted"
    assert decrypted(service, 0)["id"] == HINT.id


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (Answer(404), SendResult(result_class="disable", disable_reason="token_invalid")),
        (Answer(410), SendResult(result_class="disable", disable_reason="token_invalid")),
        (Answer(413), SendResult(result_class="program_error")),
        (
            Answer(429, {"retry-after": "30"}),
            SendResult(result_class="throttled", retry_after=timedelta(seconds=30)),
        ),
        (
            Answer(503, {"retry-after": "7"}),
            SendResult(result_class="retry", retry_after=timedelta(seconds=7)),
        ),
        (Answer(500), SendResult(result_class="retry")),
        (Answer(400), SendResult(result_class="program_error")),
    ],
)
def test_each_answer_of_the_push_service_has_its_class(
    service: LocalPushService,
    provider: WebPushProvider,
    answer: Answer,
    expected: SendResult,
    caplog: pytest.LogCaptureFixture,
) -> None:
    token = service.subscribe("s-1")
    service.program("s-1", answer)
    with caplog.at_level(logging.INFO, logger="notify_pg.worker"):
        assert provider.send(registration("webpush", token), HINT) == expected
    assert token not in caplog.text
    assert "s-1" not in caplog.text  # the endpoint is an address: never logged


def test_a_token_that_is_no_subscription_disables_without_a_request(
    service: LocalPushService, provider: WebPushProvider
) -> None:
    for token in ["nope", '{"endpoint": "http://localhost/x", "keys": {}}', "[]"]:
        result = provider.send(registration("webpush", token), HINT)
        assert result == SendResult(result_class="disable", disable_reason="token_invalid")
    assert service.received == []


def test_a_refused_vapid_key_pauses_the_provider_with_one_line_and_one_alert(
    ca: LocalCa,
    service: LocalPushService,
    alerts: Alerts,
    caplog: pytest.LogCaptureFixture,
) -> None:
    other = Vapid(ec.generate_private_key(ec.SECP256R1()), SUBJECT)  # not the service's key
    provider = WebPushProvider("webpush", other, ca_file=ca.ca_file, alerts=alerts)
    token = service.subscribe("s-1")
    try:
        with caplog.at_level(logging.INFO, logger="notify_pg.worker"):
            first = provider.send(registration("webpush", token), HINT)
            later = [provider.send(registration("webpush", token), HINT) for _ in range(5)]
    finally:
        provider.close()
    assert first.result_class is ResultClass.CONFIG_ERROR
    assert {r.result_class for r in later} == {ResultClass.THROTTLED}
    assert all(timedelta(minutes=4) < r.retry_after <= timedelta(minutes=5) for r in later)
    paused = [r for r in caplog.records if r.getMessage() == "push provider paused"]
    assert len(paused) == 1
    assert paused[0].fields["reason"] == "vapid_refused_401"  # type: ignore[attr-defined]
    assert alerts.calls == [("paused", "webpush", "vapid_refused_401")]
    assert service.received == []


def test_encrypt_round_trips_through_http_ece_with_a_fixed_salt() -> None:
    ua = ec.generate_private_key(ec.SECP256R1())
    ua_public = ua.public_key().public_bytes(
        serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
    )
    auth = b"\x01" * 16
    body = encrypt(b"hello", ua_public, auth, salt=b"\x02" * 16)
    assert body[:16] == b"\x02" * 16
    assert http_ece.decrypt(body, private_key=ua, auth_secret=auth, version="aes128gcm") == (
        b"hello"
    )
    token = json.dumps(
        {
            "endpoint": "https://push.example.com/x",
            "keys": {"p256dh": b64url(ua_public), "auth": b64url(auth)},
        }
    )
    assert Subscription(token).audience == "https://push.example.com"


def test_a_sync_whose_cleared_would_not_fit_one_record_leaves_cleared_out(
    service: LocalPushService, provider: WebPushProvider
) -> None:
    token = service.subscribe("s-1")
    many = [f"thread-{i:06d}" for i in range(400)]  # about 6 kB as a JSON list
    sync = Notification(id="n-9", kind="sync", badge=0, cleared=many)
    assert provider.send(registration("webpush", token), sync).result_class == "accepted"
    assert decrypted(service, 0) == {"k": "sync", "id": "n-9", "badge": 0}
    fits = Notification(id="n-10", kind="sync", badge=0, cleared=many[:100])
    provider.send(registration("webpush", token), fits)
    assert decrypted(service, 1)["cleared"] == many[:100]
