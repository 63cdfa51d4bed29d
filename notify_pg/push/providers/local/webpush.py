"""A local Web Push service (RFC 8030) that checks VAPID (RFC 8292) and keeps what it gets.

`LocalPushService.subscribe` makes a subscription as a browser would (a P-256 key pair and
an auth secret; the token JSON a host stores), with its endpoint on this server. A push to
it is checked (the VAPID JWT verified with the key the ``k`` parameter names, which must be
the expected one; its audience, expiry and subject; ``Content-Encoding: aes128gcm`` and a
``TTL``) and kept encrypted in `LocalPushService.received`: a test decrypts it with an
implementation of its own, with the subscription's keys (`LocalPushService.keys`). A failed
check answers 401 (VAPID) or 400; `LocalPushService.program` makes a subscription answer any
status (404, 410, 413, 429 with Retry-After, 5xx ...).
"""

from __future__ import annotations

import json
import os
import threading
import time

import attrs
import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from notify_pg.push.providers.local.h2server import Answer, H2Server, Request
from notify_pg.push.providers.local.tls import LocalCa
from notify_pg.push.providers.webpush import b64url, unb64url

__all__ = ["LocalPushService", "Received"]


@attrs.frozen
class Received:
    """One push the service took: the subscription's id, the headers, the encrypted body
    and the VAPID claims."""

    subscription: str
    headers: dict[str, str]
    body: bytes
    claims: dict[str, object]


class LocalPushService:
    """A Web Push service on loopback (HTTP/2 over TLS).

    Args:
        ca: the test CA of its certificate.
        vapid_public_key: the application server's key (base64url) every push must carry.
        latency: seconds each answer waits.
    """

    def __init__(self, ca: LocalCa, vapid_public_key: str, *, latency: float = 0.0) -> None:
        self.vapid_public_key = vapid_public_key
        self.server = H2Server(ca, self._handle, latency=latency)
        self.received: list[Received] = []
        #: Per subscription id: its private key and auth secret (to decrypt in a test).
        self.keys: dict[str, tuple[ec.EllipticCurvePrivateKey, bytes]] = {}
        self._answers: dict[str, list[Answer]] = {}
        self._lock = threading.Lock()

    def start(self) -> LocalPushService:
        """Start serving; return self."""
        self.server.start()
        return self

    def close(self) -> None:
        """Stop serving."""
        self.server.close()

    def subscribe(self, subscription: str) -> str:
        """Make a subscription with id ``subscription``; return its token (JSON)."""
        key = ec.generate_private_key(ec.SECP256R1())
        auth = os.urandom(16)
        self.keys[subscription] = (key, auth)
        public = key.public_key().public_bytes(
            serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
        )
        return json.dumps(
            {
                "endpoint": f"{self.server.url}/push/{subscription}",
                "keys": {"p256dh": b64url(public), "auth": b64url(auth)},
            }
        )

    def program(self, subscription: str, *answers: Answer) -> None:
        """Answer pushes to ``subscription`` with these, in order (the last one repeats)."""
        with self._lock:
            self._answers[subscription] = list(answers)

    def _programmed(self, subscription: str) -> Answer | None:
        with self._lock:
            queue = self._answers.get(subscription)
            if not queue:
                return None
            return queue.pop(0) if len(queue) > 1 else queue[0]

    def _claims(self, authorization: str) -> dict[str, object]:
        scheme, _space, params = authorization.partition(" ")
        if scheme.lower() != "vapid":
            raise ValueError("not a vapid authorization")
        values = dict(part.strip().split("=", 1) for part in params.split(",") if "=" in part)
        if values.get("k") != self.vapid_public_key:
            raise ValueError("not the expected application server key")
        public = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), unb64url(values["k"]))
        claims: dict[str, object] = jwt.decode(
            values["t"],
            public,
            algorithms=["ES256"],
            audience=self.server.url,
            options={"require": ["exp", "aud", "sub"]},
        )
        exp = claims["exp"]
        if not isinstance(exp, int) or exp > time.time() + 24 * 3600:
            raise ValueError("a VAPID JWT lives at most 24 hours")
        subject = claims["sub"]
        if not isinstance(subject, str) or not subject.startswith(("mailto:", "https:")):
            raise ValueError("the subject is a mailto: or https: contact")
        return claims

    def _handle(self, request: Request) -> Answer:
        prefix = "/push/"
        if request.method != "POST" or not request.path.startswith(prefix):
            return Answer(404)
        subscription = request.path[len(prefix) :]
        if subscription not in self.keys:
            return Answer(404)
        try:
            claims = self._claims(request.headers.get("authorization", ""))
        except (ValueError, KeyError, jwt.PyJWTError):
            return Answer(401)
        if (
            request.headers.get("content-encoding") != "aes128gcm"
            or not request.headers.get("ttl", "").isdigit()
        ):
            return Answer(400)
        programmed = self._programmed(subscription)
        if programmed is not None and programmed.status >= 300:
            return programmed
        with self._lock:
            self.received.append(Received(subscription, request.headers, request.body, claims))
        return Answer(201, {"location": f"{self.server.url}/message/{len(self.received)}"})
