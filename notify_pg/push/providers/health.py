"""A provider's health: the pause after a configuration fault (R1 ``config_error``).

A configuration fault (a bad key, a wrong team or sender, a revoked service account) fails
every push of that provider alike, whatever the registration: it says nothing about a token.
`ProviderHealth` turns the first such answer into a pause of the whole provider, with one log
line and an alert (`ProviderAlerts`), instead of letting each registration's failures count
up to its deactivation. While paused, a push is not sent: it is answered ``throttled`` with
the rest of the pause as its Retry-After, so it waits (R1: the registration is unchanged) and
expires at ``push.max_age`` like any retry (R2). When the pause ends the next pushes go out
again; a fault then pauses again without another line, and the first answer that is not a
fault ends the episode with one "resumed" line.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Protocol

from notify_core.hints.delivery import ResultClass, SendResult

__all__ = ["ProviderAlerts", "ProviderHealth"]

_log = logging.getLogger("notify_pg.worker")


class ProviderAlerts(Protocol):
    """Where a provider's pause is reported (`notify_pg.ops.metrics.OtelRecorder` has both
    methods: the gauge ``notify.push.provider.paused`` and the counter
    ``notify.push.provider.faults``). Both must be cheap and must not raise."""

    def provider_paused(self, provider: str, reason: str) -> None:
        """The provider was paused by a configuration fault named by ``reason``."""
        ...

    def provider_resumed(self, provider: str) -> None:
        """The provider answered without a fault after a pause."""
        ...


class ProviderHealth:
    """The pause state of one provider, shared by the threads that call it.

    Args:
        provider: the provider's name (logs and alerts).
        pause: how long a configuration fault stops the provider's sends.
        alerts: where pauses and resumptions are reported (none: logs only).
        mismatch_limit: answers in a row that refuse a token as another sender's or
            topic's before the provider's own id is taken to be wrong (`mismatch`).
        clock: a monotonic clock in seconds (tests pass their own).
    """

    def __init__(
        self,
        provider: str,
        *,
        pause: timedelta = timedelta(minutes=5),
        alerts: ProviderAlerts | None = None,
        mismatch_limit: int = 10,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.provider = provider
        self.pause = pause
        self.alerts = alerts
        self._clock = clock
        self._lock = threading.Lock()
        self._until = 0.0
        self.mismatch_limit = mismatch_limit
        self._mismatches = 0
        #: The reason of the fault of the current episode (None: healthy).
        self.fault_reason: str | None = None

    def paused(self) -> SendResult | None:
        """While paused, the answer for a push that is not sent (``throttled`` with the rest
        of the pause as Retry-After); else None."""
        left = self._until - self._clock()
        if left <= 0:
            return None
        return SendResult(result_class=ResultClass.THROTTLED, retry_after=timedelta(seconds=left))

    def fault(self, reason: str) -> SendResult:
        """Pause the provider for a configuration fault; return the push's answer
        (``config_error``: dropped, the registration unchanged, R1).

        The first fault of an episode logs one error line and raises the alert; faults while
        the episode lasts extend the pause silently. A fault met while the pause runs (a push
        sent with others before the first fault's answer came: a batch, concurrent calls) is
        answered as a push not sent in the pause (``throttled``, `paused`): as the pushes
        after the first, it waits instead of being dropped. ``reason`` is a short code such as
        ``InvalidProviderToken`` or ``invalid_grant``: never a key, a token or an address.
        """
        with self._lock:
            now = self._clock()
            first = self.fault_reason is None
            running = not first and self._until > now
            self.fault_reason = reason
            self._until = now + self.pause.total_seconds()
        if running:
            return SendResult(result_class=ResultClass.THROTTLED, retry_after=self.pause)
        if first:
            _log.error(
                "push provider paused",
                extra={
                    "fields": {
                        "provider": self.provider,
                        "reason": reason,
                        "pause_s": self.pause.total_seconds(),
                        "hint": "a configuration fault: check the provider's keys and ids",
                    }
                },
            )
            if self.alerts is not None:
                self.alerts.provider_paused(self.provider, reason)
        return SendResult(result_class=ResultClass.CONFIG_ERROR)

    def mismatch(self, result: SendResult, reason: str) -> SendResult:
        """A token refused as another sender's or topic's: ``result`` (the registration is
        deactivated, R1), unless ``mismatch_limit`` such answers came in a row with no other
        answer between. Then the provider's own id (the FCM project, the APNs team) is
        wrong rather than every token: a configuration fault, and the provider pauses."""
        with self._lock:
            self._mismatches += 1
            many = self._mismatches >= self.mismatch_limit
        return self.fault(reason) if many else result

    def answered(self) -> None:
        """The provider gave an answer that is no configuration fault: end an episode."""
        self._mismatches = 0
        if self.fault_reason is None:  # the common case, without the lock
            return
        with self._lock:
            reason, self.fault_reason = self.fault_reason, None
        if reason is None:
            return
        _log.warning("push provider resumed", extra={"fields": {"provider": self.provider}})
        if self.alerts is not None:
            self.alerts.provider_resumed(self.provider)
