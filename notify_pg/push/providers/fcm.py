"""FCM HTTP v1: ``messages:send`` with a data message, authorised by a service account.

`ServiceAccount` is the JSON key file Firebase gives (``client_email``, ``private_key``,
``token_uri``, ``project_id``). `OAuthTokens` trades a JWT signed with it for an access token
(the JWT bearer grant, RFC 7523) and keeps that token until five minutes before it ends, so
the worker's threads share one token and one trade at a time. `FcmProvider` sends each push
as a data message (`notify_pg.push.providers.payload.fcm_data`, R3) with Android priority
``high`` for a visible push and ``normal`` for a quiet one and a badge sync, a ``ttl`` of
``push.max_age`` and the thread as ``collapse_key``; `FcmProvider.send_many` hands a worker
round's pushes to the connection at once (`notify_pg.push.providers.fanout`).

Answers (R1), by FCM's error code: ``UNREGISTERED`` and ``INVALID_ARGUMENT`` on the token
``disable`` (``token_invalid``); ``SENDER_ID_MISMATCH`` ``disable`` (``sender_mismatch``, unless
every answer mismatches: then the project is wrong, `ProviderHealth.mismatch`);
``QUOTA_EXCEEDED`` ``throttled`` and ``UNAVAILABLE`` and ``INTERNAL`` ``retry``, with the
Retry-After; a refused or revoked service account (the token endpoint's ``invalid_grant`` or
``invalid_client``, ``PERMISSION_DENIED``, ``THIRD_PARTY_AUTH_ERROR``, a second
``UNAUTHENTICATED`` with a fresh token, an unknown project) is a configuration fault that
pauses the provider; other refusals ``program_error``.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from typing import Any

import attrs
import httpx
import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from notify_core.hints.delivery import DisableReason, Notification, ResultClass, SendResult
from notify_core.values.kinds import Kind
from notify_pg.push.providers.fanout import Sent, Slots
from notify_pg.push.providers.h2client import ConnectionLost, H2Client, Reply, Request
from notify_pg.push.providers.health import ProviderAlerts, ProviderHealth
from notify_pg.push.providers.payload import FCM_DATA_LIMIT, fcm_data, is_visible
from notify_pg.push.providers.transport import client, log_answer, retry_after, tls_context
from notify_pg.stores.registrations import Registration

__all__ = ["FCM_SCOPE", "FcmProvider", "OAuthTokens", "ServiceAccount", "TokenFault"]

#: The OAuth scope of ``messages:send``.
FCM_SCOPE = "https://www.googleapis.com/auth/firebase.messaging"
_GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"
#: A token is traded anew this long before it ends.
_TOKEN_MARGIN = 300.0
_RETRY = SendResult(result_class=ResultClass.RETRY)


@attrs.frozen(kw_only=True)
class ServiceAccount:
    """A Firebase service account (its private key is left out of ``repr``)."""

    client_email: str
    project_id: str
    token_uri: str
    private_key: rsa.RSAPrivateKey = attrs.field(repr=False)

    @classmethod
    def from_json(cls, text: str) -> ServiceAccount:
        """Read a service account's JSON key file.

        Raises:
            ValueError: not a service account key (the message never holds the key).
        """
        try:
            data = json.loads(text)
            email, project, uri = data["client_email"], data["project_id"], data["token_uri"]
            key = serialization.load_pem_private_key(data["private_key"].encode(), None)
        except (ValueError, KeyError, TypeError, AttributeError):
            raise ValueError(
                "not a service account key file (client_email, project_id, token_uri and "
                "an RSA private_key)"
            ) from None
        if not isinstance(key, rsa.RSAPrivateKey):
            raise ValueError("a service account's private_key is an RSA key")
        if not all(isinstance(v, str) and v for v in (email, project, uri)):
            raise ValueError("client_email, project_id and token_uri must be non-empty strings")
        return cls(client_email=email, project_id=project, token_uri=uri, private_key=key)


class TokenFault(Exception):
    """The token endpoint refused the service account (a configuration fault).

    Attributes:
        reason: the OAuth error code (``invalid_grant``, ``invalid_client`` ...).
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class OAuthTokens:
    """Access tokens of a service account, traded when none is held or it ends soon.

    Args:
        account: the service account.
        http: the client to reach the token endpoint.
        token_uri: the token endpoint (default: the account's ``token_uri``).
        clock: seconds since the epoch (tests pass their own).
    """

    def __init__(
        self,
        account: ServiceAccount,
        http: httpx.Client,
        *,
        token_uri: str | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.account = account
        self.token_uri = token_uri or account.token_uri
        self._http = http
        self._clock = clock
        self._lock = threading.Lock()
        self._token: tuple[str, float] | None = None
        #: Trades made so far.
        self.trades = 0

    def token(self) -> str:
        """The access token to use now.

        Raises:
            TokenFault: the endpoint refused the account.
            httpx.HTTPError: the endpoint could not be reached, or failed (transient).
        """
        held = self._token
        if held is not None and held[1] - _TOKEN_MARGIN > self._clock():
            return held[0]
        with self._lock:  # one trade at a time; the others wait and take its token
            held = self._token
            if held is not None and held[1] - _TOKEN_MARGIN > self._clock():
                return held[0]
            self._token = self._trade()
            return self._token[0]

    def forget(self, token: str) -> None:
        """Drop ``token`` (FCM refused it): the next `token` trades a new one."""
        with self._lock:
            if self._token is not None and self._token[0] == token:
                self._token = None

    def _trade(self) -> tuple[str, float]:
        now = int(self._clock())
        assertion = jwt.encode(
            {
                "iss": self.account.client_email,
                "scope": FCM_SCOPE,
                "aud": self.token_uri,
                "iat": now,
                "exp": now + 3600,
            },
            self.account.private_key,
            algorithm="RS256",
        )
        self.trades += 1
        answer = self._http.post(
            self.token_uri, data={"grant_type": _GRANT, "assertion": assertion}
        )
        if answer.status_code in (400, 401, 403):
            raise TokenFault(_oauth_error(answer))
        answer.raise_for_status()
        try:
            body = answer.json()
            token, lifetime = body["access_token"], float(body["expires_in"])
        except (ValueError, KeyError, TypeError):
            raise TokenFault("unreadable_token_answer") from None
        return str(token), now + lifetime


def _oauth_error(answer: httpx.Response) -> str:
    try:
        error = answer.json().get("error")
    except (ValueError, AttributeError):
        error = None
    return (
        error if isinstance(error, str) and error.isidentifier() else f"token_{answer.status_code}"
    )


def _fcm_error(body: bytes) -> tuple[str, str, bool]:
    """The answer's FCM error code, its status and whether a field violation names the
    token."""
    try:
        error: Mapping[str, Any] = json.loads(body).get("error") or {}
    except (ValueError, AttributeError):
        return "", "", False
    status = str(error.get("status", ""))
    code, on_token = "", False
    for detail in error.get("details") or ():
        if not isinstance(detail, Mapping):
            continue
        if str(detail.get("@type", "")).endswith("FcmError"):
            code = str(detail.get("errorCode", ""))
        for violation in detail.get("fieldViolations") or ():
            if isinstance(violation, Mapping) and violation.get("field") == "message.token":
                on_token = True
    return code, status, on_token


class FcmProvider:
    """A `notify_pg.push.providers.PushProvider` for FCM HTTP v1 (``fcm``).

    Args:
        account: the service account.
        url: FCM's base URL (tests and staging point it at a local server).
        token_uri: the OAuth token endpoint (default: the account's).
        ca_file: trust this CA instead of the system's (tests, staging).
        timeout: seconds per request.
        max_age: the message's ``ttl`` (``push.max_age``).
        pause: how long a configuration fault pauses the provider.
        alerts: where a pause is reported.
        data_limit: the data message's limit in bytes.
    """

    def __init__(
        self,
        account: ServiceAccount,
        *,
        url: str = "https://fcm.googleapis.com",
        token_uri: str | None = None,
        ca_file: str | None = None,
        timeout: float = 10.0,
        max_age: timedelta = timedelta(hours=1),
        pause: timedelta = timedelta(minutes=5),
        alerts: ProviderAlerts | None = None,
        data_limit: int = FCM_DATA_LIMIT,
    ) -> None:
        self.account = account
        self._send_path = f"/v1/projects/{account.project_id}/messages:send"
        # Sends share one HTTP/2 connection; the token trades (one at a time) go over HTTP/1.1.
        self._h2 = H2Client(url.rstrip("/"), context=tls_context(ca_file), timeout=timeout)
        self._http = client(http2=False, ca_file=ca_file, timeout=timeout)
        self.tokens = OAuthTokens(account, self._http, token_uri=token_uri)
        self.ttl = f"{int(max_age.total_seconds())}s"
        self.data_limit = data_limit
        self.health = ProviderHealth("fcm", pause=pause, alerts=alerts)

    @property
    def name(self) -> str:
        """The provider value it serves."""
        return "fcm"

    def close(self) -> None:
        """Close the connections."""
        self._h2.close()
        self._http.close()

    def message(self, registration: Registration, notification: Notification) -> bytes:
        """The ``messages:send`` body for one push."""
        android: dict[str, str] = {
            "priority": "high" if is_visible(notification) else "normal",
            "ttl": self.ttl,
        }
        if notification.thread is not None:
            android["collapse_key"] = notification.thread
        elif notification.kind is Kind.SYNC:
            android["collapse_key"] = "sync"
        message = {
            "token": registration.token,
            "data": fcm_data(notification, self.data_limit),
            "android": android,
        }
        return json.dumps({"message": message}, separators=(",", ":")).encode()

    def send(self, registration: Registration, notification: Notification) -> SendResult:
        """Send one data message; the answer sorted into a class (R1)."""
        paused = self.health.paused()
        if paused is not None:
            return paused
        body = self.message(registration, notification)
        try:
            answer = self._post(body)
            if answer.status == 401 and _fcm_error(answer.body)[1] == "UNAUTHENTICATED":
                # The token may have been revoked early: one more try with a fresh one.
                answer = self._post(body, fresh=True)
        except TokenFault as fault:
            log_answer("fcm", 0, fault.reason, registration.token_ref)
            return self.health.fault(fault.reason)
        except (httpx.HTTPError, ConnectionLost, TimeoutError, OSError):
            return SendResult(result_class=ResultClass.RETRY)
        return self._sorted(answer, registration)

    def _post(self, body: bytes, *, fresh: bool = False) -> Reply:
        token = self.tokens.token()
        if fresh:
            self.tokens.forget(token)
            token = self.tokens.token()
        request = self._request(body, token)
        return self._h2.request(request.method, request.path, request.headers, request.body)

    def _request(self, body: bytes, token: str) -> Request:
        headers = {"authorization": f"Bearer {token}", "content-type": "application/json"}
        return Request("POST", self._send_path, headers, body)

    def send_many(
        self, calls: Sequence[tuple[Registration, Notification]], slots: Slots
    ) -> list[Sent]:
        """Send every push as a stream of the connection, all handed over at once with one
        access token (`notify_pg.push.providers.fanout`); each answer sorted as `send` sorts
        it, in the order of ``calls`` (a 401 ``UNAUTHENTICATED`` goes once more with a fresh
        token, as in `send`)."""
        outcomes: list[Sent] = [(_RETRY, 0.0)] * len(calls)
        ready: list[int] = []
        for index in range(len(calls)):
            paused = self.health.paused()
            if paused is None:
                ready.append(index)
            else:
                outcomes[index] = (paused, 0.0)
        bodies: dict[int, bytes] = {}
        spent = dict.fromkeys(ready, 0.0)
        stale: str | None = None
        while ready:
            try:
                if stale is not None:
                    self.tokens.forget(stale)
                token = self.tokens.token()
            except TokenFault as fault:
                log_answer("fcm", 0, fault.reason, calls[ready[0]][0].token_ref)
                for index in ready:  # the first is dropped, the others wait out the pause
                    outcomes[index] = (self.health.fault(fault.reason), spent[index])
                break
            except (httpx.HTTPError, ConnectionLost, TimeoutError, OSError):
                for index in ready:  # the token endpoint failed: a transient failure
                    outcomes[index] = (_RETRY, spent[index])
                break
            batch = self._h2.batch(slots)
            # Each message is made on the loop as its stream starts (`Batch`), once.
            batch.add([self._maker(calls, index, bodies, token) for index in ready])
            again: list[int] = []
            for index, (answer, seconds) in zip(ready, batch.close(), strict=True):
                spent[index] += seconds
                if (
                    stale is None
                    and isinstance(answer, Reply)
                    and answer.status == 401
                    and _fcm_error(answer.body)[1] == "UNAUTHENTICATED"
                ):
                    again.append(index)  # revoked early: once more with a fresh token
                    continue
                outcomes[index] = (self._answered(answer, calls[index][0]), spent[index])
            ready, stale = again, token
        return outcomes

    def _maker(
        self,
        calls: Sequence[tuple[Registration, Notification]],
        index: int,
        bodies: dict[int, bytes],
        token: str,
    ) -> Callable[[], Request]:
        """What makes the request of push ``index`` (its body kept for a second try)."""

        def make() -> Request:
            body = bodies.get(index)
            if body is None:
                body = bodies[index] = self.message(*calls[index])
            return self._request(body, token)

        return make

    def _answered(
        self, answer: Reply | Exception, registration: Registration
    ) -> SendResult | Exception:
        if isinstance(answer, Reply):
            return self._sorted(answer, registration)
        if isinstance(answer, ConnectionLost | TimeoutError | OSError):
            return _RETRY
        return answer

    def _sorted(self, answer: Reply, registration: Registration) -> SendResult:
        status = answer.status
        if status == 200:
            self.health.answered()
            return SendResult(result_class=ResultClass.ACCEPTED)
        code, grpc_status, on_token = _fcm_error(answer.body)
        reason = code or grpc_status or str(status)
        log_answer("fcm", status, reason, registration.token_ref)
        if code == "UNREGISTERED":
            self.health.answered()
            return SendResult(
                result_class=ResultClass.DISABLE, disable_reason=DisableReason.TOKEN_INVALID
            )
        if code == "SENDER_ID_MISMATCH":
            return self.health.mismatch(
                SendResult(
                    result_class=ResultClass.DISABLE,
                    disable_reason=DisableReason.SENDER_MISMATCH,
                ),
                reason,
            )
        if status in (401, 403) or code == "THIRD_PARTY_AUTH_ERROR" or status == 404:
            # A refused account, a missing role, an unknown project: no token's fault.
            return self.health.fault(reason)
        self.health.answered()
        if code == "INVALID_ARGUMENT" or grpc_status == "INVALID_ARGUMENT":
            if on_token:
                return SendResult(
                    result_class=ResultClass.DISABLE, disable_reason=DisableReason.TOKEN_INVALID
                )
            return SendResult(result_class=ResultClass.PROGRAM_ERROR)
        if status == 429 or code == "QUOTA_EXCEEDED":
            return SendResult(
                result_class=ResultClass.THROTTLED, retry_after=retry_after(answer.headers)
            )
        if status >= 500:
            return SendResult(
                result_class=ResultClass.RETRY, retry_after=retry_after(answer.headers)
            )
        return SendResult(result_class=ResultClass.PROGRAM_ERROR)
