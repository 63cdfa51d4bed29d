"""A local APNs provider API (HTTP/2 over TLS) that checks every request as APNs does.

`LocalApns.team_key` makes a team's ``.p8`` key and keeps its public half; `LocalApns.device`
registers a device token for a topic (an app id). A push to ``/3/device/TOKEN`` is checked:
the provider token (ES256, verified with the public key its ``kid`` names, the team as issuer,
at most an hour old), ``apns-topic`` (the device's), ``apns-push-type``, ``apns-priority``,
``apns-expiration``, ``apns-collapse-id`` (at most 64 bytes) and the payload (JSON with
``aps``, at most 4096 bytes); each failed check answers APNs' status and reason. Pushes that
pass are kept (`LocalApns.received`); `LocalApns.program` makes a device answer any error on
demand (`apns_error`). ``goaway_after`` ends each connection after that many answers.
"""

from __future__ import annotations

import json
import threading
import time
import uuid

import attrs
import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from notify_pg.push.providers.local.h2server import Answer, H2Server, Request
from notify_pg.push.providers.local.tls import LocalCa

__all__ = ["LocalApns", "ReceivedPush", "apns_error"]


def apns_error(
    status: int, reason: str, *, timestamp_ms: int | None = None, retry_after: int | None = None
) -> Answer:
    """An APNs error answer: ``{"reason": ...}`` with a timestamp for a 410."""
    body: dict[str, object] = {"reason": reason}
    if timestamp_ms is not None:
        body["timestamp"] = timestamp_ms
    headers = {"content-type": "application/json", "apns-id": str(uuid.uuid4())}
    if retry_after is not None:
        headers["retry-after"] = str(retry_after)
    return Answer(status, headers, json.dumps(body).encode())


@attrs.frozen
class ReceivedPush:
    """One push APNs took: the device token, the headers, the payload and the connection."""

    device: str
    headers: dict[str, str]
    payload: dict[str, object]
    connection: int


class LocalApns:
    """The APNs provider API on loopback.

    Args:
        ca: the test CA of its certificate.
        latency: seconds each answer waits.
        goaway_after: answers per connection before a GOAWAY (None: never).
        open_devices: take pushes to any device token, for any topic (a demo whose devices
            were never registered here); the other checks stay.
    """

    def __init__(
        self,
        ca: LocalCa,
        *,
        latency: float = 0.0,
        goaway_after: int | None = None,
        open_devices: bool = False,
    ) -> None:
        self.open_devices = open_devices
        # 500 streams at once per connection: what APNs' SETTINGS frame says.
        self.server = H2Server(
            ca, self._handle, latency=latency, goaway_after=goaway_after, max_streams=500
        )
        self.received: list[ReceivedPush] = []
        #: Distinct provider tokens seen.
        self.provider_tokens: set[str] = set()
        self._verified: dict[str, int] = {}
        self._keys: dict[str, tuple[str, ec.EllipticCurvePublicKey]] = {}
        self._devices: dict[str, str] = {}
        self._answers: dict[str, list[Answer]] = {}
        self._lock = threading.Lock()

    def start(self) -> LocalApns:
        """Start serving; return self."""
        self.server.start()
        return self

    def close(self) -> None:
        """Stop serving."""
        self.server.close()

    def team_key(self, team_id: str, key_id: str) -> str:
        """Make a signing key of ``team_id`` named ``key_id``; return it as ``.p8`` text."""
        key = ec.generate_private_key(ec.SECP256R1())
        self._keys[key_id] = (team_id, key.public_key())
        return key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ).decode()

    def device(self, token: str, topic: str) -> str:
        """Register a device token of the app ``topic``; return the token."""
        self._devices[token.lower()] = topic
        return token

    def program(self, device: str, *answers: Answer) -> None:
        """Answer pushes to ``device`` with these, in order (the last one repeats)."""
        with self._lock:
            self._answers[device.lower()] = list(answers)

    def _provider_token(self, request: Request) -> Answer | None:
        scheme, _space, token = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not token:
            return apns_error(403, "MissingProviderToken")
        issued = self._verified.get(token)
        if issued is not None:  # verified before (as APNs keeps a token it checked)
            if issued < time.time() - 3600:
                return apns_error(403, "ExpiredProviderToken")
            return None
        try:
            kid = jwt.get_unverified_header(token).get("kid")
            team, public = self._keys[str(kid)]
            claims = jwt.decode(
                token, public, algorithms=["ES256"], options={"require": ["iss", "iat"]}
            )
        except (KeyError, jwt.PyJWTError):
            return apns_error(403, "InvalidProviderToken")
        if claims["iss"] != team:
            return apns_error(403, "InvalidProviderToken")
        if int(claims["iat"]) < time.time() - 3600:
            return apns_error(403, "ExpiredProviderToken")
        with self._lock:
            self.provider_tokens.add(token)
            self._verified[token] = int(claims["iat"])
        return None

    def _checked(self, request: Request, device: str) -> Answer | None:
        headers = request.headers
        topic = headers.get("apns-topic")
        if not topic:
            return apns_error(400, "MissingTopic")
        if not self.open_devices:
            if device not in self._devices:
                return apns_error(400, "BadDeviceToken")
            if self._devices[device] != topic:
                return apns_error(400, "DeviceTokenNotForTopic")
        if headers.get("apns-push-type") not in ("alert", "background"):
            return apns_error(400, "InvalidPushType")
        if headers.get("apns-priority") not in ("5", "10"):
            return apns_error(400, "BadPriority")
        if not headers.get("apns-expiration", "").isdigit():
            return apns_error(400, "BadExpirationDate")
        if len(headers.get("apns-collapse-id", "").encode()) > 64:
            return apns_error(400, "BadCollapseId")
        if len(request.body) > 4096:
            return apns_error(413, "PayloadTooLarge")
        try:
            payload = json.loads(request.body)
        except ValueError:
            return apns_error(400, "BadPayload")
        if not isinstance(payload, dict) or not isinstance(payload.get("aps"), dict):
            return apns_error(400, "PayloadEmpty")
        return None

    def _handle(self, request: Request) -> Answer:
        prefix = "/3/device/"
        if not request.path.startswith(prefix):
            return apns_error(404, "BadPath")
        if request.method != "POST":
            return apns_error(405, "MethodNotAllowed")
        refused = self._provider_token(request)
        device = request.path[len(prefix) :].lower()
        refused = refused or self._checked(request, device)
        if refused is not None:
            return refused
        with self._lock:
            queue = self._answers.get(device)
            answer = (queue.pop(0) if len(queue) > 1 else queue[0]) if queue else None
            if answer is None or answer.status == 200:
                self.received.append(
                    ReceivedPush(
                        device, request.headers, json.loads(request.body), request.connection
                    )
                )
        if answer is not None:
            return answer
        apns_id = request.headers.get("apns-id") or str(uuid.uuid4())
        return Answer(200, {"apns-id": apns_id})
