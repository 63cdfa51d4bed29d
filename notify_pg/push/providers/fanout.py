"""The send step's two paths: a round's pushes in one batch per provider, or one call each.

A provider that sends over one multiplexed connection (APNs and FCM over HTTP/2) offers
``send_many`` (`BatchProvider`): with ``WorkerConfig.batch_sends`` the worker hands it every
push of a round for it at once, and the provider makes each request and starts it as a stream
of its connection on its event loop (`notify_pg.push.providers.h2client.Batch`), as many at a
time as the process-wide `notify_pg.push.providers.ProviderGate` has free slots, instead of
one pool thread per call waiting on one stream each. Each slot is taken when its stream
starts and given back when its answer came, so the limit (``push.max_concurrent_requests``)
holds for both paths together. A provider without it (Web Push: one HTTP/1.1 exchange per push
service; test doubles) gets one `PushProvider.send` per push, up to ``limit`` at once on the
worker's pool, each holding a slot (`send_all` with ``batch=False`` sends every push so: the
per-call path, the bench's baseline).

Either way `send_all` returns one outcome per push in the order of the calls: the answer (a
`notify_core.hints.delivery.SendResult`) or the exception of that push alone, and the seconds
its request took. A failed push never changes another's outcome; the batch path sends each
push once (a stream the server did not take, above a GOAWAY, goes again on the next
connection: `notify_pg.push.providers.h2client`).
"""

from __future__ import annotations

import functools
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from typing import Protocol

from notify_core.hints.delivery import Notification, SendResult
from notify_pg.push.providers import ProviderGate, PushProvider
from notify_pg.stores.registrations import Registration

__all__ = ["BatchProvider", "Sent", "Slots", "batch_of", "send_all"]

#: One push's outcome: its answer or its exception, and the seconds its request took.
Sent = tuple[SendResult | Exception, float]


class Slots(Protocol):
    """Request slots taken without waiting (`ProviderGate.take`, `ProviderGate.give`)."""

    def take(self, wanted: int) -> int:
        """Take up to ``wanted`` free slots at once; return how many."""
        ...

    def give(self, count: int = 1) -> None:
        """Give back ``count`` slots."""
        ...


class BatchProvider(PushProvider, Protocol):
    """A `PushProvider` that also sends many pushes at once over its connection."""

    def send_many(
        self, calls: Sequence[tuple[Registration, Notification]], slots: Slots
    ) -> list[Sent]:
        """Send every push, each holding one of ``slots`` while its request runs; the
        outcome of each in the order of ``calls``."""
        ...


def batch_of(provider: PushProvider) -> BatchProvider | None:
    """``provider`` as a `BatchProvider`, or None if it sends one push per call only."""
    send_many = getattr(provider, "send_many", None)
    return provider if callable(send_many) else None  # type: ignore[return-value]


def _one(
    provider: PushProvider, gate: ProviderGate, call: tuple[Registration, Notification]
) -> Sent:
    started = time.perf_counter()
    try:
        with gate.slot():
            result: SendResult | Exception = provider.send(*call)
    except Exception as exc:  # the push's own failure (the caller sorts it: a retry)
        result = exc
    return result, time.perf_counter() - started


def _many(
    provider: BatchProvider, gate: ProviderGate, calls: Sequence[tuple[Registration, Notification]]
) -> list[Sent]:
    try:
        outcomes = provider.send_many(calls, gate)
    except Exception as exc:  # the whole batch failed: every push of it has that failure
        return [(exc, 0.0)] * len(calls)
    if len(outcomes) != len(calls):
        error = RuntimeError(f"{provider.name} answered {len(outcomes)} of {len(calls)} pushes")
        return [(error, 0.0)] * len(calls)
    return outcomes


def send_all(
    calls: Sequence[tuple[PushProvider, Registration, Notification]],
    *,
    gate: ProviderGate,
    pool: Callable[[], Executor],
    limit: int,
    batch: bool = True,
) -> list[Sent]:
    """Send every push; the outcome of each in the order of ``calls``.

    Args:
        calls: each push's provider, registration and notification.
        gate: the process-wide request limit; every request holds one of its slots.
        pool: the worker's thread pool (asked for only when more than one unit of work runs:
            the batches of several providers, or per-call pushes).
        limit: pool tasks of the per-call path at most (``push.max_concurrent_requests``).
        batch: hand the pushes of a `BatchProvider` to it in one batch (False: one
            `PushProvider.send` per push for every provider).
    """
    outcomes: list[Sent | None] = [None] * len(calls)
    groups: dict[int, tuple[BatchProvider, list[int]]] = {}
    single: list[int] = []
    for index, (provider, _r, _n) in enumerate(calls):
        many = batch_of(provider) if batch else None
        if many is None:
            single.append(index)
        else:
            groups.setdefault(id(provider), (many, []))[1].append(index)

    def run_group(provider: BatchProvider, indexes: list[int]) -> None:
        sent = _many(provider, gate, [(calls[i][1], calls[i][2]) for i in indexes])
        for index, outcome in zip(indexes, sent, strict=True):
            outcomes[index] = outcome

    # A deque's pops are thread-safe: each index goes to exactly one task.
    pending = deque(single)

    def run_single() -> None:
        while pending:
            try:
                index = pending.popleft()
            except IndexError:  # another task took the last one meanwhile
                return
            try:
                provider, registration, notification = calls[index]
                outcomes[index] = _one(provider, gate, (registration, notification))
            except BaseException:
                pending.clear()  # the round fails: no more calls start (as pool.map's)
                raise

    units: list[Callable[[], None]] = [
        functools.partial(run_group, provider, indexes) for provider, indexes in groups.values()
    ]
    units += [run_single] * min(limit, len(single))
    if len(units) == 1:  # one provider's batch, or one push: in the calling thread
        units[0]()
    elif units:
        executor = pool()
        for task in [executor.submit(unit) for unit in units]:
            task.result()
    return [outcome for outcome in outcomes if outcome is not None]
