"""The provider configuration (TOML, secrets from files or the environment) and the alert
metric of a paused provider."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from scrape import by, scrape

from notify_pg.ops.metrics import Metrics
from notify_pg.push.providers.announce import close_providers
from notify_pg.push.providers.apns import ApnsProvider
from notify_pg.push.providers.config import ProviderConfigError, load_providers, read_providers
from notify_pg.push.providers.fcm import FcmProvider
from notify_pg.push.providers.health import ProviderHealth
from notify_pg.push.providers.webpush import WebPushProvider, b64url


def _pem(key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> str:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()


@pytest.fixture
def secrets(tmp_path: Path) -> dict[str, str]:
    account = {
        "client_email": "notify@project.iam.example.com",
        "project_id": "project",
        "token_uri": "https://oauth.example.com/token",
        "private_key": _pem(rsa.generate_private_key(public_exponent=65537, key_size=2048)),
    }
    raw = ec.generate_private_key(ec.SECP256R1()).private_numbers().private_value
    (tmp_path / "apns.p8").write_text(_pem(ec.generate_private_key(ec.SECP256R1())))
    return {
        "NOTIFY_FCM": json.dumps(account),
        "NOTIFY_VAPID": b64url(raw.to_bytes(32, "big")),
    }


TEXT = """
pause_s = 60
[apns]
team_id = "TEAM123456"
key_id = "KEY1234567"
key_file = "apns.p8"
timeout_s = 3
[fcm]
service_account_env = "NOTIFY_FCM"
[webpush]
vapid_key_env = "NOTIFY_VAPID"
subject = "mailto:ops@example.com"
[unifiedpush]
vapid_key_env = "NOTIFY_VAPID"
subject = "https://example.com/contact"
pause_s = 30
"""


def test_every_provider_is_built_from_files_and_the_environment(
    tmp_path: Path, secrets: dict[str, str]
) -> None:
    (tmp_path / "providers.toml").write_text(TEXT)
    providers = load_providers(
        str(tmp_path / "providers.toml"), max_age=timedelta(minutes=20), environ=secrets
    )
    try:
        assert [p.name for p in providers] == ["apns", "fcm", "webpush", "unifiedpush"]
        apns, fcm, webpush, unifiedpush = providers
        assert isinstance(apns, ApnsProvider) and apns.max_age == 1200
        assert apns.health.pause == timedelta(seconds=60)
        assert isinstance(fcm, FcmProvider) and fcm.account.project_id == "project"
        assert fcm.ttl == "1200s"
        assert isinstance(webpush, WebPushProvider) and webpush.ttl == "1200"
        assert isinstance(unifiedpush, WebPushProvider)
        assert unifiedpush.health.pause == timedelta(seconds=30)
        assert webpush.vapid.public_key == unifiedpush.vapid.public_key
        # No secret in a repr a log or a traceback could show.
        assert secrets["NOTIFY_VAPID"] not in repr(vars(webpush))
        assert "PRIVATE" not in repr(fcm.account)
    finally:
        close_providers(providers)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("pause_s = -1\n[fcm]\nservice_account_env = 'NOTIFY_FCM'\n", "must be a positive"),
        ("[fcm]\nservice_account_env = 'NOTIFY_VAPID'\n", "not a service account key file"),
        ("[webpush]\nvapid_key_env = 'NOTIFY_FCM'\nsubject = 'mailto:a@example.com'\n", "key"),
        (
            "[apns]\nteam_id = 'T'\nkey_id = 'K'\nkey_file = 'apns.p8'\ntoken_refresh_s = 600\n",
            "between 1200 and 3599",
        ),
        ("[apns]\nteam_id = 'T'\nkey_id = 'K'\nkey_file = 'apns.p8'\nca_file = 'x'\n", "no such"),
        ("not toml [", "not TOML"),
    ],
)
def test_a_bad_value_is_refused_with_its_place(
    tmp_path: Path, secrets: dict[str, str], text: str, message: str
) -> None:
    with pytest.raises(ProviderConfigError, match=message) as caught:
        read_providers(text, base=tmp_path, environ=secrets)
    for secret in secrets.values():
        assert secret[:40] not in str(caught.value)


def test_a_pause_raises_the_alert_metric_and_a_resumption_lowers_it() -> None:
    metrics = Metrics.start(0)
    try:
        now = [0.0]
        health = ProviderHealth(
            "apns", pause=timedelta(seconds=10), alerts=metrics.recorder, clock=lambda: now[0]
        )
        health.fault("InvalidProviderToken")
        health.fault("InvalidProviderToken")  # the same episode: no second alert
        _text, samples = scrape(metrics.port)
        paused = by(samples, "notify_push_provider_paused", "notify_push_provider")
        faults = by(samples, "notify_push_provider_faults_total", "notify_push_provider")
        assert paused == {("apns",): 1.0} and faults == {("apns",): 1.0}
        now[0] = 11.0
        assert health.paused() is None  # the pause is over: the next push goes out
        health.answered()
        _text, samples = scrape(metrics.port)
        assert by(samples, "notify_push_provider_paused", "notify_push_provider") == {
            ("apns",): 0.0
        }
    finally:
        metrics.close()
