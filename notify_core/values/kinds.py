"""Kinds of hints, their fixed codes, and run states (rules K1-K3).

The tables below are the rules: tests and docs read them instead of restating them.
"""

from __future__ import annotations

import enum
from typing import Final

from notify_core.values.errors import InvalidKind

__all__ = [
    "KIND_CODES",
    "THREAD_KINDS",
    "URGENT_KINDS",
    "Kind",
    "RunState",
    "kind_code",
    "kind_from_code",
    "kind_name",
    "run_active",
]


class Kind(enum.StrEnum):
    """What a hint is about (K1); ``sync`` is the badge sync of B2, never a decided hint."""

    MESSAGE = "message"
    MENTION = "mention"
    DM = "dm"
    RUN_DONE = "run_done"
    RUN_FAILED = "run_failed"
    INPUT_NEEDED = "input_needed"
    SECURITY = "security"
    ADMIN = "admin"
    SYNC = "sync"


#: K1: the fixed codes, never renumbered.
KIND_CODES: Final[dict[Kind, int]] = {
    Kind.MESSAGE: 1,
    Kind.MENTION: 2,
    Kind.DM: 3,
    Kind.RUN_DONE: 4,
    Kind.RUN_FAILED: 5,
    Kind.INPUT_NEEDED: 6,
    Kind.SECURITY: 7,
    Kind.ADMIN: 8,
    Kind.SYNC: 9,
}
_KINDS_BY_CODE: Final = {code: kind for kind, code in KIND_CODES.items()}

#: K2: kinds that belong to a thread; the others (security, admin) have none.
THREAD_KINDS: Final = frozenset(
    {Kind.MESSAGE, Kind.MENTION, Kind.DM, Kind.RUN_DONE, Kind.RUN_FAILED, Kind.INPUT_NEEDED}
)
#: K2: every kind but ``message`` is urgent.
URGENT_KINDS: Final = frozenset(set(Kind) - {Kind.MESSAGE, Kind.SYNC})
#: D1: kinds that only the run's starter receives.
RUN_KINDS: Final = frozenset({Kind.RUN_DONE, Kind.RUN_FAILED, Kind.INPUT_NEEDED})


def parse_kind(value: object, pointer: str = "") -> Kind:
    """Return the `Kind` named by ``value``.

    Raises:
        InvalidKind: ``value`` names no kind (code ``unknown_kind``).
    """
    try:
        return Kind(value)  # type: ignore[arg-type]
    except ValueError:
        raise InvalidKind("unknown_kind", f"unknown kind: {value!r}", pointer) from None


def kind_code(kind: Kind | str) -> int:
    """Return the fixed code of a kind (K1).

    Raises:
        InvalidKind: ``kind`` is not a kind (code ``unknown_kind``).

    Example:
        >>> kind_code("dm")
        3
    """
    return KIND_CODES[parse_kind(kind)]


def kind_from_code(code: object) -> Kind:
    """Return the kind with the fixed code ``code`` (K1).

    Raises:
        InvalidKind: ``code`` is not one of 1..9; booleans and non-integers are refused too
            (code ``unknown_kind_code``).

    Example:
        >>> kind_from_code(9)
        <Kind.SYNC: 'sync'>
    """
    kind = _KINDS_BY_CODE.get(code) if type(code) is int else None
    if kind is None:
        raise InvalidKind("unknown_kind_code", f"unknown kind code: {code!r}")
    return kind


def kind_name(code: int) -> str:
    """Return the name of the kind with code ``code`` as logs and metrics write it; a code
    this version does not know (a newer writer's) as its digits, so that it is not lost.

    Example:
        >>> kind_name(9), kind_name(42)
        ('sync', '42')
    """
    kind = _KINDS_BY_CODE.get(code) if type(code) is int else None
    return str(code) if kind is None else kind.value


class RunState(enum.StrEnum):
    """States of an agent run (K3)."""

    QUEUED = "queued"
    RUNNING = "running"
    WAITING_INPUT = "waiting_input"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


_ACTIVE_RUN_STATES: Final = frozenset({RunState.QUEUED, RunState.RUNNING, RunState.WAITING_INPUT})


def run_active(state: RunState | str) -> bool:
    """Tell whether a run in ``state`` is still active (K3).

    Raises:
        InvalidKind: ``state`` is not a run state (code ``unknown_run_state``).
    """
    try:
        return RunState(state) in _ACTIVE_RUN_STATES
    except ValueError:
        raise InvalidKind("unknown_run_state", f"unknown run state: {state!r}") from None
