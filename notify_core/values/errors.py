"""The error tree of notify: one base class, caller mistakes and bad data kept apart.

Every error carries a machine-readable ``code`` (the codes of docs/rules.md) and, where a
field is at fault, a JSON ``pointer`` (RFC 6901) naming it, so that the CLI and a host's HTTP layer
can map errors without parsing messages.
"""

from __future__ import annotations

__all__ = [
    "InvalidDelivery",
    "InvalidFacts",
    "InvalidInput",
    "InvalidKind",
    "InvalidLevel",
    "InvalidRule",
    "InvalidSchedule",
    "InvalidUnsubscribe",
    "NaiveDatetime",
    "NotifyError",
    "UsageError",
]


class NotifyError(Exception):
    """Base of every error notify raises on purpose.

    Args:
        code: machine-readable code, e.g. ``"unknown_time_zone"``.
        message: one readable sentence for people.
        pointer: JSON pointer of the member at fault, e.g. ``"/time_zone"``; absent when the
            error concerns the input as a whole.

    Example:
        >>> err = InvalidRule("unknown_time_zone", "unknown time zone 'Mars/Olympus'", "/time_zone")
        >>> err.as_json()
        {'code': 'unknown_time_zone', 'pointer': '/time_zone'}
    """

    def __init__(self, code: str, message: str, pointer: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.pointer = pointer

    def as_json(self) -> dict[str, str]:
        """Return the error as the ``{"code", "pointer"?}`` member of the public formats."""
        out = {"code": self.code}
        if self.pointer is not None:
            out["pointer"] = self.pointer
        return out

    def at(self, prefix: str) -> NotifyError:
        """Return the same error with ``prefix`` put in front of its pointer.

        Used by decoders that validate a nested value and report where it sits in the
        whole document.
        """
        pointer = prefix + (self.pointer or "")
        clone = type(self)(self.code, self.message, pointer)
        return clone

    def __str__(self) -> str:
        where = f" at {self.pointer}" if self.pointer else ""
        return f"{self.message} ({self.code}{where})"


class UsageError(NotifyError, TypeError):
    """A caller's mistake: a value of the wrong type handed to a public function."""


class NaiveDatetime(UsageError):
    """A datetime without time zone given where an instant is required (rule G2)."""

    def __init__(self, code: str = "naive_datetime", message: str = "", pointer: str | None = None):
        super().__init__(
            code, message or "a naive datetime is not an instant: give it a time zone", pointer
        )


class InvalidInput(NotifyError, ValueError):
    """Bad input data: a value that has the right type but breaks a rule of the spec."""


class InvalidLevel(InvalidInput):
    """A notification level or preference target outside the allowed values (rule L1)."""


class InvalidRule(InvalidInput):
    """A malformed quiet-hours rule (rules Q2, Q3)."""


class InvalidKind(InvalidInput):
    """An unknown hint kind or kind code (rule K1)."""


class InvalidFacts(InvalidInput):
    """Facts handed to a decision that contradict each other (rules D5, D8)."""


class InvalidDelivery(InvalidInput):
    """A delivery result or retry input outside the allowed values (rules R1, R2)."""


class InvalidSchedule(InvalidInput):
    """An email schedule or daily hour outside the allowed values (rule E2).

    Codes: ``unknown_schedule``, ``missing_daily_hour`` (``daily`` without an hour),
    ``invalid_daily_hour`` (not an integer 0-23).
    """


class InvalidUnsubscribe(InvalidInput):
    """An unsubscribe token that cannot be written (rule U1).

    Codes: ``no_categories`` (a token must name at least one category), ``invalid_category``,
    ``invalid_person`` (not encodable as UTF-8) and ``weak_secret`` (fewer than 32 bytes).
    A token that does not verify is no error: verification answers ``None`` (rule U2).
    """
