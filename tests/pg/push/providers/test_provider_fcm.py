"""FCM HTTP v1 against a local FCM endpoint and OAuth token endpoint: the JWT bearer grant,
the cached token, the data message, priorities, the data limit and every error of R1."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from provider_parts import HINT, QUIET, SYNC, Alerts, registration

from notify_core.hints.delivery import Notification, ResultClass, SendResult
from notify_pg.push.providers.fcm import FcmProvider, ServiceAccount
from notify_pg.push.providers.local.fcm import LocalFcm, fcm_error
from notify_pg.push.providers.local.h2server import Answer
from notify_pg.push.providers.local.tls import LocalCa


@pytest.fixture
def fcm(ca: LocalCa) -> Iterator[LocalFcm]:
    server = LocalFcm(ca).start()
    yield server
    server.close()


@pytest.fixture
def account(fcm: LocalFcm, tmp_path: Path) -> ServiceAccount:
    path = fcm.service_account(tmp_path / "fcm.json")
    return ServiceAccount.from_json(Path(path).read_text())


@pytest.fixture
def provider(
    fcm: LocalFcm, account: ServiceAccount, ca: LocalCa, alerts: Alerts
) -> Iterator[FcmProvider]:
    provider = FcmProvider(
        account,
        url=fcm.server.url,
        ca_file=ca.ca_file,
        max_age=timedelta(minutes=30),
        alerts=alerts,
    )
    yield provider
    provider.close()


def test_a_hint_is_a_data_message_at_high_priority_with_one_token_trade(
    fcm: LocalFcm, provider: FcmProvider
) -> None:
    for _ in range(3):
        assert provider.send(registration("fcm", "tok-1"), HINT) == SendResult(
            result_class="accepted"
        )
    assert fcm.token_requests == 1  # the access token is kept until shortly before its end
    got = fcm.received[0]
    assert got.project == "notify-test"
    assert got.message == {
        "token": "tok-1",
        "data": {
            "k": "mention",
            "id": HINT.id,
            "thread": "t-42",
            "message": "m-7",
            "badge": "3",
            "instance": "i-1",
        },
        "android": {"priority": "high", "ttl": "1800s", "collapse_key": "t-42"},
    }


def test_quiet_and_sync_go_at_normal_priority_and_sync_joins_cleared(
    fcm: LocalFcm, provider: FcmProvider
) -> None:
    provider.send(registration("fcm", "tok-1"), QUIET)
    provider.send(registration("fcm", "tok-1"), SYNC)
    quiet, sync = (m.message for m in fcm.received)
    assert quiet["android"]["priority"] == "normal"  # type: ignore[index]
    assert quiet["data"]["quiet"] == "1"  # type: ignore[index]
    assert sync["android"] == {"priority": "normal", "ttl": "1800s", "collapse_key": "sync"}
    assert sync["data"] == {  # type: ignore[comparison-overlap]
        "k": "sync",
        "id": "n-3",
        "badge": "1",
        "instance": "i-1",
        "cleared": "t-42,t-43",
    }


def test_cleared_is_left_out_entirely_when_it_would_not_fit(
    fcm: LocalFcm, provider: FcmProvider
) -> None:
    many = [f"thread-{i:06d}" for i in range(400)]  # about 5 kB joined
    sync = Notification(id="n-9", kind="sync", badge=0, cleared=many)
    assert provider.send(registration("fcm", "tok-1"), sync).result_class == "accepted"
    data = fcm.received[0].message["data"]
    assert data == {"k": "sync", "id": "n-9", "badge": "0"}
    fits = Notification(id="n-9", kind="sync", badge=0, cleared=many[:200])
    provider.send(registration("fcm", "tok-1"), fits)
    assert fcm.received[1].message["data"]["cleared"] == ",".join(many[:200])  # type: ignore[index]


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (
            fcm_error(404, "NOT_FOUND", "UNREGISTERED"),
            SendResult(result_class="disable", disable_reason="token_invalid"),
        ),
        (
            fcm_error(400, "INVALID_ARGUMENT", "INVALID_ARGUMENT", field="message.token"),
            SendResult(result_class="disable", disable_reason="token_invalid"),
        ),
        (
            fcm_error(400, "INVALID_ARGUMENT", "INVALID_ARGUMENT", field="message.data"),
            SendResult(result_class="program_error"),
        ),
        (
            fcm_error(403, "PERMISSION_DENIED", "SENDER_ID_MISMATCH"),
            SendResult(result_class="disable", disable_reason="sender_mismatch"),
        ),
        (
            fcm_error(429, "RESOURCE_EXHAUSTED", "QUOTA_EXCEEDED", retry_after=60),
            SendResult(result_class="throttled", retry_after=timedelta(seconds=60)),
        ),
        (
            fcm_error(503, "UNAVAILABLE", "UNAVAILABLE", retry_after=9),
            SendResult(result_class="retry", retry_after=timedelta(seconds=9)),
        ),
        (fcm_error(500, "INTERNAL", "INTERNAL"), SendResult(result_class="retry")),
    ],
)
def test_each_fcm_error_has_its_class(
    fcm: LocalFcm,
    provider: FcmProvider,
    answer: Answer,
    expected: SendResult,
    caplog: pytest.LogCaptureFixture,
) -> None:
    fcm.program("tok-secret-1", answer)
    with caplog.at_level(logging.INFO, logger="notify_pg.worker"):
        assert provider.send(registration("fcm", "tok-secret-1"), HINT) == expected
    assert "tok-secret-1" not in caplog.text


def test_a_revoked_service_account_pauses_fcm_once(
    fcm: LocalFcm, provider: FcmProvider, alerts: Alerts, caplog: pytest.LogCaptureFixture
) -> None:
    fcm.token_answers = [Answer(400, {}, b'{"error":"invalid_grant"}')]
    with caplog.at_level(logging.INFO, logger="notify_pg.worker"):
        first = provider.send(registration("fcm", "tok-1"), HINT)
        later = [provider.send(registration("fcm", "tok-1"), HINT) for _ in range(3)]
    assert first.result_class is ResultClass.CONFIG_ERROR
    assert {r.result_class for r in later} == {ResultClass.THROTTLED}
    assert alerts.calls == [("paused", "fcm", "invalid_grant")]
    assert [r.getMessage() for r in caplog.records].count("push provider paused") == 1
    assert fcm.received == [] and fcm.token_requests == 1


def test_a_token_revoked_early_is_traded_again_once(fcm: LocalFcm, provider: FcmProvider) -> None:
    assert provider.send(registration("fcm", "tok-1"), HINT).result_class == "accepted"
    fcm.revoke_all()
    assert provider.send(registration("fcm", "tok-1"), HINT).result_class == "accepted"
    assert fcm.token_requests == 2


def test_a_wrong_project_pauses_instead_of_deactivating_every_registration(
    fcm: LocalFcm, provider: FcmProvider, alerts: Alerts
) -> None:
    mismatch = fcm_error(403, "PERMISSION_DENIED", "SENDER_ID_MISMATCH")
    results = []
    for i in range(15):
        fcm.program(f"tok-{i}", mismatch)
        results.append(provider.send(registration("fcm", f"tok-{i}", id=f"r-{i}"), HINT))
    classes = [r.result_class.value for r in results]
    assert classes == ["disable"] * 9 + ["config_error"] + ["throttled"] * 5
    assert alerts.calls == [("paused", "fcm", "SENDER_ID_MISMATCH")]


def test_the_token_endpoint_verifies_the_grant(fcm: LocalFcm, ca: LocalCa, tmp_path: Path) -> None:
    path = fcm.service_account(tmp_path / "a.json")
    other = LocalFcm(ca)  # another server never saw this account
    other.start()
    try:
        account = ServiceAccount.from_json(Path(path).read_text())
        provider = FcmProvider(
            account, url=other.server.url, token_uri=other.token_uri, ca_file=ca.ca_file
        )
        result = provider.send(registration("fcm", "tok-1"), HINT)
        provider.close()
    finally:
        other.close()
    assert result.result_class is ResultClass.CONFIG_ERROR
    assert provider.health.fault_reason == "invalid_grant"
