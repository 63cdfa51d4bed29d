"""What a worker tells its metrics: the edges of its rounds, in labels that name no person.

The worker (`notify_pg.push.worker.Worker`) calls a `Recorder` where it counts into its
`notify_pg.push.worker.WorkerStats`: once per round with the hints it decided, once per push
skipped at send time, once per provider call with its duration and once per written result.
The calls carry kinds, decisions, reasons, outcomes, provider names and round names only: never
a person, a thread, a message, a token or an address. `NullRecorder` does nothing (the
default); `notify_pg.ops.metrics.OtelRecorder` records on the OpenTelemetry API (the ``metrics``
extra). This module imports neither, so a worker without the extra runs as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from notify_core.hints.pipeline import Hint

__all__ = ["NullRecorder", "Recorder"]


class Recorder(Protocol):
    """The worker's metric edges (docs/operators.md). Every method must be cheap and must not
    raise: it runs inside the worker's rounds, some of it on provider threads."""

    def hints(self, hints: Sequence[Hint]) -> None:
        """The hint decisions of one consumer or due-work round, after it committed."""
        ...

    def push_skipped(self, reason: str, kind: int) -> None:
        """A push send ended without a provider call, with its metric reason (D10)."""
        ...

    def send_duration(self, provider: str, seconds: float) -> None:
        """One provider call took ``seconds`` (failed calls included)."""
        ...

    def push_result(
        self, provider: str, kind: int, outcome: str, action: str, deactivated: str | None
    ) -> None:
        """One provider result was written: its outcome (R1), what becomes of the send
        (``done``, ``retry``, ``drop``) and, when it deactivated the registration, why."""
        ...

    def round_done(self, round_name: str, work: int, seconds: float) -> None:
        """A round (``consumer``, ``due``, ``push``, ``inbox``) committed ``work`` items."""
        ...

    def round_failed(self, round_name: str) -> None:
        """A round failed and rolled back."""
        ...


class NullRecorder:
    """A `Recorder` that records nothing."""

    def hints(self, hints: Sequence[Hint]) -> None:
        """Record nothing."""

    def push_skipped(self, reason: str, kind: int) -> None:
        """Record nothing."""

    def send_duration(self, provider: str, seconds: float) -> None:
        """Record nothing."""

    def push_result(
        self, provider: str, kind: int, outcome: str, action: str, deactivated: str | None
    ) -> None:
        """Record nothing."""

    def round_done(self, round_name: str, work: int, seconds: float) -> None:
        """Record nothing."""

    def round_failed(self, round_name: str) -> None:
        """Record nothing."""
