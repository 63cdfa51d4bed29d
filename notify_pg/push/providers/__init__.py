"""Push providers (R1, R3): the port, the process-wide request limit, a fake, the real ones.

A provider sends one `notify_core.hints.delivery.Notification` to one `Registration` and sorts the
answer into a `notify_core.hints.delivery.SendResult`. `FakeProvider` is the test double:
programmable results per registration and a record of every call. The real providers are the
modules of this package, one per provider: `apns` (HTTP/2, ES256 provider tokens), `fcm` (FCM
HTTP v1, a service account's OAuth tokens), `webpush` (Web Push and UnifiedPush: VAPID and
aes128gcm), built from a TOML file by `config`; `health` pauses a provider after a
configuration fault, `announce` names the providers a worker serves and lacks, `payload` builds
what each carries, `local` holds local servers that speak their protocols (tests, bench,
staging). A notification carries only IDs, the kind, flags, a count and the badge (R3), so
nothing a provider receives is text of a message.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import ClassVar, Protocol

import attrs

from notify_core.hints.delivery import Notification, ResultClass, SendResult
from notify_pg.stores.registrations import Registration

__all__ = ["FakeCall", "FakeProvider", "ProviderGate", "PushProvider"]


class PushProvider(Protocol):
    """Sends one hint to one registration (R3: ids, never text).

    ``name`` is the value of ``push_registrations.provider`` it serves (``apns``, ``fcm`` ...).
    ``send`` may raise: the worker counts any exception as a transient failure (class
    ``retry``). It must never log the token (use ``registration.token_ref``).
    """

    @property
    def name(self) -> str:
        """The provider value of the registrations this provider serves."""
        ...

    def send(self, registration: Registration, notification: Notification) -> SendResult:
        """Send one push and return the provider's answer, sorted into a class."""
        ...


class ProviderGate:
    """The process-wide limit on concurrent provider requests (``push.max_concurrent_requests``).

    `ProviderGate.for_process` returns the one gate of the process, so every worker and thread
    of a process shares it.

    Args:
        limit: the largest number of provider requests running at once.
    """

    _process: ClassVar[ProviderGate | None] = None
    _process_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError("the provider request limit must be at least 1")
        self.limit = limit
        self._semaphore = threading.BoundedSemaphore(limit)

    @classmethod
    def for_process(cls, limit: int) -> ProviderGate:
        """Return the gate of this process, created with ``limit`` on first use."""
        with cls._process_lock:
            if cls._process is None:
                cls._process = ProviderGate(limit)
            return cls._process

    @contextmanager
    def slot(self) -> Iterator[None]:
        """Hold one request slot for the duration of the block (waits for a free one)."""
        with self._semaphore:
            yield

    def take(self, wanted: int) -> int:
        """Take up to ``wanted`` free slots without waiting; return how many were taken
        (each is given back with `give`). The batch path (`fanout`) takes its slots so,
        from the connection's event loop, which must never wait."""
        taken = 0
        acquire = self._semaphore.acquire
        while taken < wanted and acquire(blocking=False):
            taken += 1
        return taken

    def give(self, count: int = 1) -> None:
        """Give back ``count`` slots taken with `take`."""
        self._semaphore.release(count)


@attrs.frozen(kw_only=True)
class FakeCall:
    """One call a `FakeProvider` received: the registration, a token hash prefix, the push."""

    registration_id: str
    token_ref: str
    notification: Notification


_ACCEPTED = SendResult(result_class=ResultClass.ACCEPTED)


class FakeProvider:
    """A `PushProvider` for tests: programmable answers per registration, a record of calls.

    Args:
        name: the provider value it serves.
        results: per registration id, the answers in order (the last one repeats); an
            ``Exception`` in the list is raised instead of answered.
        default: the answer for registrations without a program.
        gate: if given, every call waits until it is set (to hold calls open in a test).

    Attributes:
        calls: every call so far, in order.
        max_active: the largest number of calls that ran at once.
    """

    def __init__(
        self,
        name: str,
        results: Mapping[str, Sequence[SendResult | Exception]] | None = None,
        *,
        default: SendResult = _ACCEPTED,
        gate: threading.Event | None = None,
    ) -> None:
        self._name = name
        self._results = {key: list(value) for key, value in (results or {}).items()}
        self._default = default
        self._gate = gate
        self._lock = threading.Lock()
        self.calls: list[FakeCall] = []
        self.active = 0
        self.max_active = 0

    @property
    def name(self) -> str:
        """The provider value it serves."""
        return self._name

    def program(self, registration_id: str, *results: SendResult | Exception) -> None:
        """Set the answers for one registration (the last one repeats)."""
        with self._lock:
            self._results[registration_id] = list(results)

    def _next_answer(self, registration_id: str) -> SendResult | Exception:
        queue = self._results.get(registration_id)
        if not queue:
            return self._default
        return queue.pop(0) if len(queue) > 1 else queue[0]

    def send(self, registration: Registration, notification: Notification) -> SendResult:
        """Record the call and answer from the program."""
        with self._lock:
            self.active += 1
            self.max_active = max(self.max_active, self.active)
            self.calls.append(
                FakeCall(
                    registration_id=registration.id,
                    token_ref=registration.token_ref,
                    notification=notification,
                )
            )
            answer = self._next_answer(registration.id)
        try:
            if self._gate is not None:
                self._gate.wait()
            if isinstance(answer, Exception):
                raise answer
            return answer
        finally:
            with self._lock:
                self.active -= 1
