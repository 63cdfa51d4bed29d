"""A local FCM HTTP v1 endpoint with its OAuth token endpoint (HTTP/2 over TLS).

`LocalFcm.service_account` writes a service account key file whose ``token_uri`` is this
server's ``/token``. The token endpoint verifies the JWT bearer grant (RS256 with the
account's public key; issuer, audience, scope, lifetime) and hands out access tokens that
live ``token_lifetime`` seconds. ``/v1/projects/PROJECT/messages:send`` takes only a token it
handed out and still valid (else 401 ``UNAUTHENTICATED``) and checks the message (a token,
data values that are strings, data within FCM's limit, an Android priority), then keeps it
(`LocalFcm.received`). `LocalFcm.program` makes a device token answer FCM's errors on demand
(`fcm_error`), and `LocalFcm.token_answers` the token endpoint.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from pathlib import Path
from urllib.parse import parse_qs

import attrs
import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from notify_pg.push.providers.fcm import FCM_SCOPE
from notify_pg.push.providers.local.h2server import Answer, H2Server, Request
from notify_pg.push.providers.local.tls import LocalCa
from notify_pg.push.providers.payload import FCM_DATA_LIMIT

__all__ = ["LocalFcm", "ReceivedMessage", "fcm_error"]


def fcm_error(
    status: int,
    grpc_status: str,
    code: str | None = None,
    *,
    field: str | None = None,
    retry_after: int | None = None,
) -> Answer:
    """An FCM error answer: the gRPC status, an ``FcmError`` code, a field violation."""
    details: list[dict[str, object]] = []
    if code is not None:
        details.append(
            {"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": code}
        )
    if field is not None:
        details.append(
            {
                "@type": "type.googleapis.com/google.rpc.BadRequest",
                "fieldViolations": [{"field": field, "description": "invalid"}],
            }
        )
    body = {"error": {"code": status, "message": grpc_status, "status": grpc_status}}
    if details:
        body["error"]["details"] = details
    headers = {"content-type": "application/json"}
    if retry_after is not None:
        headers["retry-after"] = str(retry_after)
    return Answer(status, headers, json.dumps(body).encode())


@attrs.frozen
class ReceivedMessage:
    """One message FCM took: the project and the ``message`` object."""

    project: str
    message: dict[str, object]


class LocalFcm:
    """FCM's send and token endpoints on loopback.

    Args:
        ca: the test CA of its certificate.
        latency: seconds each answer waits.
        token_lifetime: seconds an access token lives.
    """

    def __init__(self, ca: LocalCa, *, latency: float = 0.0, token_lifetime: int = 3600) -> None:
        self.server = H2Server(ca, self._handle, latency=latency)
        self.token_lifetime = token_lifetime
        self.received: list[ReceivedMessage] = []
        self.token_requests = 0
        self._accounts: dict[str, rsa.RSAPublicKey] = {}
        self._tokens: dict[str, float] = {}
        self._answers: dict[str, list[Answer]] = {}
        #: Answers of the token endpoint, in order (empty: grant tokens).
        self.token_answers: list[Answer] = []
        self._lock = threading.Lock()

    def start(self) -> LocalFcm:
        """Start serving; return self."""
        self.server.start()
        return self

    def close(self) -> None:
        """Stop serving."""
        self.server.close()

    @property
    def token_uri(self) -> str:
        """The token endpoint."""
        return f"{self.server.url}/token"

    def service_account(self, path: str | Path, project: str = "notify-test") -> str:
        """Write a service account key file for ``project`` to ``path``; return the path."""
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        email = f"notify@{project}.iam.example.com"
        self._accounts[email] = key.public_key()
        pem = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ).decode()
        account = {
            "type": "service_account",
            "project_id": project,
            "client_email": email,
            "private_key": pem,
            "token_uri": self.token_uri,
        }
        Path(path).write_text(json.dumps(account))
        Path(path).chmod(0o600)
        return str(path)

    def revoke_all(self) -> None:
        """Forget every access token handed out (they answer 401 from now on)."""
        with self._lock:
            self._tokens.clear()

    def program(self, device_token: str, *answers: Answer) -> None:
        """Answer messages to ``device_token`` with these, in order (the last one repeats)."""
        with self._lock:
            self._answers[device_token] = list(answers)

    def _grant(self, request: Request) -> Answer:
        with self._lock:
            self.token_requests += 1
            if self.token_answers:
                return self.token_answers.pop(0)
        form = {k: v[0] for k, v in parse_qs(request.body.decode()).items()}
        if form.get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer":
            return _oauth("unsupported_grant_type")
        try:
            unverified = jwt.decode(form["assertion"], options={"verify_signature": False})
            public = self._accounts[unverified["iss"]]
            claims = jwt.decode(
                form["assertion"],
                public,
                algorithms=["RS256"],
                audience=self.token_uri,
                options={"require": ["iss", "aud", "iat", "exp"]},
            )
        except (KeyError, jwt.PyJWTError):
            return _oauth("invalid_grant")
        if FCM_SCOPE not in str(claims.get("scope", "")).split():
            return _oauth("invalid_scope")
        if int(claims["exp"]) - int(claims["iat"]) > 3600:
            return _oauth("invalid_grant")
        token = secrets.token_urlsafe(24)
        with self._lock:
            self._tokens[token] = time.time() + self.token_lifetime
        body = {"access_token": token, "expires_in": self.token_lifetime, "token_type": "Bearer"}
        return Answer(200, {"content-type": "application/json"}, json.dumps(body).encode())

    def _handle(self, request: Request) -> Answer:
        if request.method == "POST" and request.path == "/token":
            return self._grant(request)
        prefix, suffix = "/v1/projects/", "/messages:send"
        if request.method != "POST" or not (
            request.path.startswith(prefix) and request.path.endswith(suffix)
        ):
            return fcm_error(404, "NOT_FOUND")
        project = request.path[len(prefix) : -len(suffix)]
        bearer = request.headers.get("authorization", "").removeprefix("Bearer ")
        with self._lock:
            valid = self._tokens.get(bearer, 0) > time.time()
        if not valid:
            return fcm_error(401, "UNAUTHENTICATED")
        try:
            message = json.loads(request.body)["message"]
            device_token = message["token"]
            data = message["data"]
            android = message["android"]
        except (ValueError, KeyError, TypeError):
            return fcm_error(400, "INVALID_ARGUMENT", "INVALID_ARGUMENT")
        size = len(json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode())
        if (
            not isinstance(data, dict)
            or not all(isinstance(v, str) for v in data.values())
            or size > FCM_DATA_LIMIT
            or android.get("priority") not in ("high", "normal")
        ):
            return fcm_error(400, "INVALID_ARGUMENT", "INVALID_ARGUMENT", field="message.data")
        with self._lock:
            queue = self._answers.get(device_token)
            answer = (queue.pop(0) if len(queue) > 1 else queue[0]) if queue else None
            if answer is None or answer.status == 200:
                self.received.append(ReceivedMessage(project, message))
        if answer is not None:
            return answer
        name = f"projects/{project}/messages/{len(self.received)}"
        return Answer(
            200, {"content-type": "application/json"}, json.dumps({"name": name}).encode()
        )


def _oauth(error: str) -> Answer:
    body = json.dumps({"error": error, "error_description": error}).encode()
    return Answer(400, {"content-type": "application/json"}, body)
