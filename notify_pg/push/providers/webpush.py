"""Web Push (RFC 8030) with VAPID (RFC 8292) and aes128gcm encryption (RFC 8291).

`WebPushProvider` serves the provider ``webpush`` (browsers) and, under the name
``unifiedpush``, UnifiedPush distributors, which speak the same protocol. A registration's
token is the subscription as a browser's ``PushSubscription.toJSON()`` gives it:
``{"endpoint": "https://...", "keys": {"p256dh": "...", "auth": "..."}}``. The push's members
(`notify_pg.push.providers.payload.webpush_payload`, R3) are encrypted for the subscription's
key (`encrypt`) and posted to its endpoint with a VAPID authorisation (`Vapid`), a ``TTL`` of
``push.max_age``, an ``Urgency`` (``high`` for a visible push, ``normal`` for a quiet one and a
badge sync) and a ``Topic`` per thread, so a push service keeps only the newest push of a
thread for an offline device.

Answers (R1): 2xx accepted; 404 and 410 ``disable`` (``token_invalid``: the subscription is
gone); 429 ``throttled`` and 5xx ``retry``, both with the service's Retry-After; 401 and 403
refuse the VAPID key, a configuration fault that pauses the provider
(`notify_pg.push.providers.health`); 413 and other refusals ``program_error``. A token that is
no subscription is ``disable`` (``token_invalid``) without a request.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import struct
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from urllib.parse import urlsplit

import httpx
import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from notify_core.hints.delivery import DisableReason, Notification, ResultClass, SendResult
from notify_core.values.kinds import Kind
from notify_pg.push.providers.health import ProviderAlerts, ProviderHealth
from notify_pg.push.providers.payload import is_visible, webpush_payload
from notify_pg.push.providers.transport import client, log_answer, retry_after
from notify_pg.stores.registrations import Registration

__all__ = ["Subscription", "Vapid", "WebPushProvider", "b64url", "encrypt", "unb64url"]

_RECORD_SIZE = 4096
#: A VAPID JWT is valid this long (RFC 8292 allows at most 24 hours) ...
_VAPID_LIFETIME = 12 * 3600
#: ... and made anew this long before it ends.
_VAPID_MARGIN = 3600


def b64url(data: bytes) -> str:
    """Base64url without padding (RFC 8291, RFC 8292)."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def unb64url(text: str) -> bytes:
    """Decode base64url with or without padding.

    Raises:
        ValueError: not base64url.
    """
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _hmac(key: bytes, data: bytes) -> bytes:
    return hmac.new(key, data, hashlib.sha256).digest()


def encrypt(
    plaintext: bytes,
    ua_public: bytes,
    auth_secret: bytes,
    *,
    salt: bytes | None = None,
    private_key: ec.EllipticCurvePrivateKey | None = None,
) -> bytes:
    """Encrypt one push message for a subscription (RFC 8291 with RFC 8188 aes128gcm).

    Args:
        plaintext: the message (at most 3993 bytes: one record).
        ua_public: the subscription's ``p256dh`` key, an uncompressed P-256 point.
        auth_secret: the subscription's 16-byte ``auth`` secret.
        salt: 16 random bytes (tests pass their own).
        private_key: the sender's ephemeral key (tests pass their own).

    Returns:
        The body: the aes128gcm header (salt, record size, the sender's public key) and one
        record.

    Raises:
        ValueError: a key that is no P-256 point, or a message too long for one record.
    """
    if len(plaintext) > _RECORD_SIZE - 17 - 86:
        raise ValueError("a push message must fit one record")
    salt = salt if salt is not None else os.urandom(16)
    private_key = private_key or ec.generate_private_key(ec.SECP256R1())
    peer = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), ua_public)
    as_public = private_key.public_key().public_bytes(
        serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
    )
    shared = private_key.exchange(ec.ECDH(), peer)
    # RFC 8291 3.3/3.4: the input keying material binds both public keys and the auth secret.
    prk_key = _hmac(auth_secret, shared)
    ikm = _hmac(prk_key, b"WebPush: info\x00" + ua_public + as_public + b"\x01")
    prk = _hmac(salt, ikm)
    cek = _hmac(prk, b"Content-Encoding: aes128gcm\x00\x01")[:16]
    nonce = _hmac(prk, b"Content-Encoding: nonce\x00\x01")[:12]
    # 0x02: the delimiter of the last (and only) record, no padding.
    record = AESGCM(cek).encrypt(nonce, plaintext + b"\x02", None)
    header = salt + struct.pack("!IB", _RECORD_SIZE, len(as_public)) + as_public
    return header + record


class Subscription:
    """A registration's token read as a Web Push subscription.

    Args:
        token: the subscription JSON.

    Raises:
        ValueError: not a subscription (no https endpoint, or keys of the wrong size).
    """

    def __init__(self, token: str) -> None:
        try:
            data = json.loads(token)
            endpoint = data["endpoint"]
            keys = data["keys"]
            self.p256dh = unb64url(keys["p256dh"])
            self.auth = unb64url(keys["auth"])
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ValueError("not a push subscription") from exc
        if not isinstance(endpoint, str):
            raise ValueError("not a push subscription")
        parts = urlsplit(endpoint)
        if parts.scheme != "https" or not parts.hostname:
            raise ValueError("a subscription's endpoint must be an https URL")
        if len(self.p256dh) != 65 or self.p256dh[0] != 4 or len(self.auth) != 16:
            raise ValueError("a subscription's keys have the wrong size")
        self.endpoint = endpoint
        self.audience = f"{parts.scheme}://{parts.netloc}"


class Vapid:
    """The application server's VAPID key and the JWTs made with it (RFC 8292).

    Args:
        private_key: the P-256 private key.
        subject: a ``mailto:`` or ``https:`` contact for the push services.
        clock: seconds since the epoch (tests pass their own).
    """

    def __init__(
        self,
        private_key: ec.EllipticCurvePrivateKey,
        subject: str,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not isinstance(private_key.curve, ec.SECP256R1):
            raise ValueError("a VAPID key is a P-256 key")
        self._key = private_key
        self.subject = subject
        self._clock = clock
        self.public_key = b64url(
            private_key.public_key().public_bytes(
                serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
            )
        )
        self._lock = threading.Lock()
        self._tokens: dict[str, tuple[str, float]] = {}

    @classmethod
    def from_text(cls, text: str, subject: str) -> Vapid:
        """Read the key from a PEM private key or a base64url raw 32-byte scalar (the form
        web-push tools print).

        Raises:
            ValueError: neither (the message never holds the key).
        """
        text = text.strip()
        if text.startswith("-----BEGIN"):
            try:
                key = serialization.load_pem_private_key(text.encode(), password=None)
            except (ValueError, TypeError):
                raise ValueError("not a PEM private key") from None
            if not isinstance(key, ec.EllipticCurvePrivateKey):
                raise ValueError("not an EC private key")
            return cls(key, subject)
        try:
            raw = unb64url(text)
        except ValueError:
            raise ValueError("not a base64url key") from None
        if len(raw) != 32:
            raise ValueError("a raw VAPID key has 32 bytes")
        return cls(ec.derive_private_key(int.from_bytes(raw, "big"), ec.SECP256R1()), subject)

    def header(self, audience: str) -> str:
        """The ``Authorization`` value for a push service's origin, its JWT made anew an
        hour before it ends."""
        now = self._clock()
        with self._lock:
            cached = self._tokens.get(audience)
            if cached is None or cached[1] - _VAPID_MARGIN <= now:
                expires = int(now) + _VAPID_LIFETIME
                claims = {"aud": audience, "exp": expires, "sub": self.subject}
                token = jwt.encode(claims, self._key, algorithm="ES256", headers={"typ": "JWT"})
                cached = self._tokens[audience] = (token, expires)
        return f"vapid t={cached[0]}, k={self.public_key}"


def _topic(notification: Notification) -> str | None:
    """The ``Topic`` (at most 32 base64url characters, RFC 8030 5.4): a hash of the thread,
    ``sync`` for a badge sync."""
    if notification.thread is not None:
        return b64url(hashlib.sha256(notification.thread.encode()).digest()[:16])
    return "sync" if notification.kind is Kind.SYNC else None


class WebPushProvider:
    """A `notify_pg.push.providers.PushProvider` for Web Push or UnifiedPush.

    Args:
        name: ``webpush`` or ``unifiedpush`` (the registrations' provider value).
        vapid: the application server's key.
        ca_file: trust this CA instead of the system's (tests, staging).
        timeout: seconds per request.
        max_age: the push's ``TTL`` (``push.max_age``).
        pause: how long a configuration fault pauses the provider.
        alerts: where a pause is reported.
        connections: connections kept per push service.
    """

    def __init__(
        self,
        name: str,
        vapid: Vapid,
        *,
        ca_file: str | None = None,
        timeout: float = 10.0,
        max_age: timedelta = timedelta(hours=1),
        pause: timedelta = timedelta(minutes=5),
        alerts: ProviderAlerts | None = None,
        connections: int = 32,
    ) -> None:
        self._name = name
        self.vapid = vapid
        self.ttl = str(int(max_age.total_seconds()))
        self.health = ProviderHealth(name, pause=pause, alerts=alerts)
        # HTTP/1.1: a push service per browser vendor, a connection per concurrent push.
        self._client = client(
            http2=False, ca_file=ca_file, timeout=timeout, connections=connections
        )

    @property
    def name(self) -> str:
        """The provider value it serves."""
        return self._name

    def close(self) -> None:
        """Close the connections."""
        self._client.close()

    def send(self, registration: Registration, notification: Notification) -> SendResult:
        """Encrypt and post one push; the answer sorted into a class (R1)."""
        paused = self.health.paused()
        if paused is not None:
            return paused
        try:
            subscription = Subscription(registration.token)
        except ValueError:
            log_answer(self._name, 0, "not_a_subscription", registration.token_ref)
            return SendResult(result_class="disable", disable_reason="token_invalid")
        body = encrypt(webpush_payload(notification), subscription.p256dh, subscription.auth)
        headers = {
            "authorization": self.vapid.header(subscription.audience),
            "ttl": self.ttl,
            "content-encoding": "aes128gcm",
            "content-type": "application/octet-stream",
            "urgency": "high" if is_visible(notification) else "normal",
        }
        topic = _topic(notification)
        if topic is not None:
            headers["topic"] = topic
        try:
            answer = self._client.post(subscription.endpoint, content=body, headers=headers)
        except httpx.HTTPError:
            return SendResult(result_class=ResultClass.RETRY)
        return self._sorted(answer, registration)

    def _sorted(self, answer: httpx.Response, registration: Registration) -> SendResult:
        status = answer.status_code
        if 200 <= status < 300:
            self.health.answered()
            return SendResult(result_class=ResultClass.ACCEPTED)
        if status in (401, 403):
            log_answer(self._name, status, "vapid_refused", registration.token_ref)
            return self.health.fault(f"vapid_refused_{status}")
        self.health.answered()
        log_answer(self._name, status, answer.reason_phrase, registration.token_ref)
        if status in (404, 410):
            return SendResult(
                result_class=ResultClass.DISABLE, disable_reason=DisableReason.TOKEN_INVALID
            )
        if status == 429:
            return SendResult(
                result_class=ResultClass.THROTTLED, retry_after=retry_after(answer.headers)
            )
        if status >= 500:
            return SendResult(
                result_class=ResultClass.RETRY, retry_after=retry_after(answer.headers)
            )
        return SendResult(result_class=ResultClass.PROGRAM_ERROR)
