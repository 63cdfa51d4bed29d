"""APNs: the provider API over HTTP/2 with token authentication (ES256 JWT).

`ApnsKey` is the team's ``.p8`` signing key with its key id and team id. `ApnsTokens` signs the
provider token (``{"alg":"ES256","kid":KEY}`` over ``{"iss":TEAM,"iat":...}``) and makes it
anew after ``refresh`` (50 minutes by default: before the hour APNs accepts, and never more
often than every 20 minutes, which APNs answers with ``TooManyProviderTokenUpdates``).
`ApnsProvider` keeps one HTTP/2 connection per host (production and sandbox, by the
registration's ``environment``) and sends every push of the worker's threads as a stream of
it; a GOAWAY closes it and the next request opens another (streams the server did not take
are sent again on it). Each push carries ``apns-topic`` (the registration's ``app_id``),
``apns-push-type: alert``, ``apns-priority`` 10 for a visible push and 5 for a quiet one and a
badge sync, ``apns-expiration`` ``push.max_age`` ahead and ``apns-collapse-id`` by thread
(`notify_pg.push.providers.payload.apns_payload`, R3). `ApnsProvider.send_many` hands a
worker round's pushes to the connections at once (`notify_pg.push.providers.fanout`).

Answers (R1): 200 accepted; 410 ``Unregistered`` (with its timestamp) and 400
``BadDeviceToken`` ``disable`` (``token_invalid``); ``DeviceTokenNotForTopic`` ``disable``
(``topic_mismatch``); 429 ``throttled`` and 5xx ``retry`` with the Retry-After;
``ExpiredProviderToken`` a ``retry`` with a new token; ``InvalidProviderToken`` (a bad key, a
wrong team), ``TopicDisallowed``, ``BadCertificate*``, ``Forbidden`` a configuration fault that
pauses the provider; other refusals ``program_error``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta

import attrs
import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from notify_core.hints.delivery import DisableReason, Notification, ResultClass, SendResult
from notify_core.values.kinds import Kind
from notify_pg.push.providers.fanout import Sent, Slots
from notify_pg.push.providers.h2client import ConnectionLost, H2Client, Reply, Request
from notify_pg.push.providers.health import ProviderAlerts, ProviderHealth
from notify_pg.push.providers.payload import apns_payload, is_visible
from notify_pg.push.providers.transport import log_answer, retry_after, tls_context
from notify_pg.stores.registrations import Registration

__all__ = ["APNS_PRODUCTION", "APNS_SANDBOX", "ApnsKey", "ApnsProvider", "ApnsTokens"]

#: The provider API's hosts.
APNS_PRODUCTION = "https://api.push.apple.com"
APNS_SANDBOX = "https://api.sandbox.push.apple.com"
#: APNs refuses a new provider token more often than this.
MIN_REFRESH = timedelta(minutes=20)
#: ... and a token older than this.
MAX_AGE = timedelta(hours=1)
_FAULTS = frozenset(
    {
        "InvalidProviderToken",
        "MissingProviderToken",
        "TopicDisallowed",
        "BadCertificate",
        "BadCertificateEnvironment",
        "Forbidden",
    }
)
#: The characters of a device token (APNs gives hex; anything else could leave the path).
_TOKEN_CHARS = frozenset("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_")
#: Headers whose values change from push to push (never indexed by HPACK).
_VOLATILE = frozenset({"apns-id", "apns-expiration", "apns-collapse-id"})
_RETRY = SendResult(result_class=ResultClass.RETRY)


@attrs.frozen(kw_only=True)
class ApnsKey:
    """The team's signing key (left out of ``repr``), its key id and the team id."""

    key_id: str
    team_id: str
    private_key: ec.EllipticCurvePrivateKey = attrs.field(repr=False)

    @classmethod
    def from_p8(cls, text: str, *, key_id: str, team_id: str) -> ApnsKey:
        """Read a ``.p8`` key (PEM PKCS#8, P-256).

        Raises:
            ValueError: not such a key, or an empty id (the message never holds the key).
        """
        try:
            key = serialization.load_pem_private_key(text.encode(), password=None)
        except (ValueError, TypeError):
            raise ValueError("not a .p8 key (PEM PKCS#8)") from None
        if not isinstance(key, ec.EllipticCurvePrivateKey) or not isinstance(
            key.curve, ec.SECP256R1
        ):
            raise ValueError("an APNs key is a P-256 (ES256) key")
        if not key_id or not team_id:
            raise ValueError("an APNs key needs its key_id and team_id")
        return cls(key_id=key_id, team_id=team_id, private_key=key)


class ApnsTokens:
    """The provider token, made anew after ``refresh`` (between 20 and 60 minutes).

    Args:
        key: the team's key.
        refresh: the token's age at which the next one is made.
        clock: seconds since the epoch (tests pass their own).
    """

    def __init__(
        self,
        key: ApnsKey,
        *,
        refresh: timedelta = timedelta(minutes=50),
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not MIN_REFRESH <= refresh < MAX_AGE:
            raise ValueError("the APNs token refresh lies between 20 and 60 minutes")
        self.key = key
        self.refresh = refresh.total_seconds()
        self._clock = clock
        self._lock = threading.Lock()
        self._token: tuple[str, float] | None = None
        #: Tokens made so far.
        self.made = 0

    def token(self) -> str:
        """The provider token to use now."""
        held = self._token
        now = self._clock()
        if held is not None and now - held[1] < self.refresh:
            return held[0]
        with self._lock:
            held = self._token
            if held is None or now - held[1] >= self.refresh:
                issued = int(now)
                signed = jwt.encode(
                    {"iss": self.key.team_id, "iat": issued},
                    self.key.private_key,
                    algorithm="ES256",
                    headers={"kid": self.key.key_id},
                )
                held = self._token = (signed, float(issued))
                self.made += 1
            return held[0]

    def expired(self, token: str) -> None:
        """APNs called ``token`` expired: make a new one, unless it is younger than 20
        minutes (a clock fault; a new token would be refused as too frequent)."""
        with self._lock:
            held = self._token
            if (
                held is not None
                and held[0] == token
                and self._clock() - held[1] >= MIN_REFRESH.total_seconds()
            ):
                self._token = None


def _collapse_id(notification: Notification) -> str | None:
    """``apns-collapse-id`` (at most 64 bytes): the thread, or a hash of a long one."""
    if notification.thread is not None:
        thread = notification.thread
        return thread if len(thread.encode()) <= 64 else hashlib.sha256(thread.encode()).hexdigest()
    return "sync" if notification.kind is Kind.SYNC else None


class ApnsProvider:
    """A `notify_pg.push.providers.PushProvider` for APNs (``apns``).

    Args:
        key: the team's signing key.
        production_url: the production host (tests and staging point it at a local server).
        sandbox_url: the sandbox host.
        ca_file: trust this CA instead of the system's (tests, staging).
        timeout: seconds per request.
        max_age: how long APNs keeps a push for an offline device (``push.max_age``).
        pause: how long a configuration fault pauses the provider.
        alerts: where a pause is reported.
        refresh: the provider token's age at which the next one is made.
    """

    def __init__(
        self,
        key: ApnsKey,
        *,
        production_url: str = APNS_PRODUCTION,
        sandbox_url: str = APNS_SANDBOX,
        ca_file: str | None = None,
        timeout: float = 10.0,
        max_age: timedelta = timedelta(hours=1),
        pause: timedelta = timedelta(minutes=5),
        alerts: ProviderAlerts | None = None,
        refresh: timedelta = timedelta(minutes=50),
    ) -> None:
        self.tokens = ApnsTokens(key, refresh=refresh)
        self._urls = {
            "production": production_url.rstrip("/"),
            "sandbox": sandbox_url.rstrip("/"),
        }
        # One client, one connection per host: HTTP/2 multiplexes the threads' streams.
        self._clients = {
            environment: H2Client(url, context=tls_context(ca_file), timeout=timeout)
            for environment, url in self._urls.items()
        }
        self.max_age = max_age.total_seconds()
        self.health = ProviderHealth("apns", pause=pause, alerts=alerts)

    @property
    def name(self) -> str:
        """The provider value it serves."""
        return "apns"

    def close(self) -> None:
        """Close the connections."""
        for http in self._clients.values():
            http.close()

    def headers(self, registration: Registration, notification: Notification) -> dict[str, str]:
        """The request's headers but the authorization."""
        headers = {
            "apns-topic": registration.app_id,
            "apns-push-type": "alert",
            "apns-priority": "10" if is_visible(notification) else "5",
            "apns-expiration": str(int(time.time() + self.max_age)),
            "content-type": "application/json",
        }
        collapse = _collapse_id(notification)
        if collapse is not None:
            headers["apns-collapse-id"] = collapse
        # APNs makes its own id when the notification's is no UUID.
        with contextlib.suppress(ValueError):
            headers["apns-id"] = str(uuid.UUID(notification.id))
        return headers

    def _prepare(
        self, registration: Registration, notification: Notification
    ) -> SendResult | tuple[str, str, Request]:
        """The answer of a push not sent (paused, a bad device token), or its provider token,
        environment and request."""
        refused = self._refused(registration)
        if refused is not None:
            return refused
        token, request = self._request(registration, notification)
        return token, registration.environment, request

    def _refused(self, registration: Registration) -> SendResult | None:
        """The answer of a push not sent: the provider paused, or a bad device token."""
        paused = self.health.paused()
        if paused is not None:
            return paused
        device = registration.token
        if (
            not device
            or not set(device) <= _TOKEN_CHARS
            or registration.environment not in self._urls
        ):
            log_answer("apns", 0, "BadDeviceToken", registration.token_ref)
            return SendResult(
                result_class=ResultClass.DISABLE, disable_reason=DisableReason.TOKEN_INVALID
            )
        return None

    def _request(
        self, registration: Registration, notification: Notification
    ) -> tuple[str, Request]:
        """The provider token and the request of one push."""
        headers = self.headers(registration, notification)
        token = self.tokens.token()
        headers["authorization"] = f"bearer {token}"
        body = apns_payload(notification)
        path = f"/3/device/{registration.token}"
        return token, Request("POST", path, headers, body, _VOLATILE)

    def send(self, registration: Registration, notification: Notification) -> SendResult:
        """Send one push as a stream of the host's connection; the answer sorted (R1)."""
        prepared = self._prepare(registration, notification)
        if isinstance(prepared, SendResult):
            return prepared
        token, environment, request = prepared
        try:
            answer = self._clients[environment].request(
                request.method, request.path, request.headers, request.body, request.volatile
            )
        except (ConnectionLost, TimeoutError, OSError):
            # A push whose connection ended under it may have been taken: at least once (the
            # app replaces a push by its id, R1 and docs/push-providers.md).
            return SendResult(result_class=ResultClass.RETRY)
        return self._sorted(answer, registration, token)

    def send_many(
        self, calls: Sequence[tuple[Registration, Notification]], slots: Slots
    ) -> list[Sent]:
        """Send every push as a stream of its host's connection, all handed over at once
        (`notify_pg.push.providers.fanout`); each answer sorted as `send` sorts it, in the
        order of ``calls``."""
        outcomes: list[Sent] = [(_RETRY, 0.0)] * len(calls)
        hosts: dict[str, list[int]] = {}
        for index, (registration, _notification) in enumerate(calls):
            refused = self._refused(registration)
            if refused is None:
                hosts.setdefault(registration.environment, []).append(index)
            else:
                outcomes[index] = (refused, 0.0)
        # Each request is made on its host's loop as its stream starts (`Batch`); the
        # provider token it carries is kept for its answer (`ExpiredProviderToken`).
        tokens: dict[int, str] = {}

        def maker(index: int) -> Callable[[], Request]:
            def make() -> Request:
                tokens[index], request = self._request(*calls[index])
                return request

            return make

        batches = []
        for environment, indexes in hosts.items():
            batch = self._clients[environment].batch(slots)
            batch.add([maker(index) for index in indexes])
            batches.append((indexes, batch))  # the hosts' batches run side by side
        for indexes, batch in batches:
            for index, (answer, seconds) in zip(indexes, batch.close(), strict=True):
                token = tokens.get(index, "")
                outcomes[index] = (self._answered(answer, calls[index][0], token), seconds)
        return outcomes

    def _answered(
        self, answer: Reply | Exception, registration: Registration, token: str
    ) -> SendResult | Exception:
        if isinstance(answer, Reply):
            return self._sorted(answer, registration, token)
        if isinstance(answer, ConnectionLost | TimeoutError | OSError):
            return _RETRY  # may have been taken: at least once, as in `send`
        return answer

    def _sorted(self, answer: Reply, registration: Registration, token: str) -> SendResult:
        status = answer.status
        if status == 200:
            self.health.answered()
            return SendResult(result_class=ResultClass.ACCEPTED)
        try:
            body = json.loads(answer.body)
            reason = str(body.get("reason", ""))
            stamp = body.get("timestamp")
        except (ValueError, AttributeError):
            reason, stamp = "", None
        log_answer("apns", status, reason or str(status), registration.token_ref)
        if reason in _FAULTS:
            return self.health.fault(reason)
        if reason == "DeviceTokenNotForTopic":
            return self.health.mismatch(
                SendResult(
                    result_class=ResultClass.DISABLE, disable_reason=DisableReason.TOPIC_MISMATCH
                ),
                reason,
            )
        self.health.answered()
        if reason == "ExpiredProviderToken":
            self.tokens.expired(token)
            return SendResult(result_class=ResultClass.RETRY)
        if status == 410 or reason == "BadDeviceToken":
            since = None
            if isinstance(stamp, int | float) and not isinstance(stamp, bool):
                since = datetime.fromtimestamp(stamp / 1000, UTC)
            return SendResult(
                result_class=ResultClass.DISABLE,
                disable_reason=DisableReason.TOKEN_INVALID,
                invalid_since=since,
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
