"""The values of preference records: a record, its status, refusals and the errors at the seam.

See `notify_core.records` for the pattern and its rules (docs/rules.md#records).
"""

from __future__ import annotations

import enum
import itertools
from collections.abc import Iterable, Mapping
from datetime import datetime

import attrs

from notify_core.values.errors import InvalidInput, NotifyError, UsageError
from notify_core.values.instants import require_instant
from notify_core.values.opaque import FrozenMap, Opaque, freeze_opaque

__all__ = [
    "DegenerateChannelSet",
    "InvalidPreferenceId",
    "PreferenceRecord",
    "Refusal",
    "Status",
]


class Status(enum.StrEnum):
    """The lifecycle state of a preference record (records invariant 2, docs/rules.md#records).

    ``active`` -> ``suspended`` -> ``deleted``, or ``active`` -> ``deleted``; never backwards.
    A record in ``active`` or ``suspended`` is *currently in effect*.
    """

    ACTIVE = "active"
    SUSPENDED = "suspended"
    DELETED = "deleted"


class Refusal(enum.StrEnum):
    """The named refusals of the three writes (docs/rules.md#records)."""

    INVALID_REQUEST = "invalid-request"
    UNDECLARED_CHANNEL = "undeclared-channel"
    NOT_KNOWN = "not-known"
    NOT_ACTIVE = "not-active"
    ALREADY_DELETED = "already-deleted"
    #: Only the PostgreSQL adapter answers it (a refused database write); the pure store never does.
    STORAGE_FAILURE = "storage-failure"


class DegenerateChannelSet(NotifyError, ValueError):
    """The host injected a degenerate declared channel set into ``set`` (docs/rules.md#records).

    Degenerate: empty, repeating a channel name, or carrying a blank (empty) channel name. This
    is a deployment fault, not a caller's: ``set`` validates nothing, writes nothing and answers
    no outcome; the exception is how the fault is surfaced. Code
    ``degenerate_channel_set``; the pointer names the offending element, e.g.
    ``/declared_channels/2``, or ``/declared_channels`` when the set is empty.
    """


class InvalidPreferenceId(NotifyError, ValueError):
    """The host allocated a blank preference id, or one the store already holds.

    Preference ids are host-allocated at the seam and never reused (invariant 8), so this is
    a host fault and never an outcome. Codes ``blank_preference_id`` and
    ``preference_id_reused``, pointer ``/preference_id``.
    """


def _optional_opaque(value: object, name: str) -> Opaque | None:
    return None if value is None else freeze_opaque(value, f"/{name}")


def _frequency_limit(value: object) -> Opaque | None:
    return _optional_opaque(value, "frequency_limit")


def _quiet_hours(value: object) -> Opaque | None:
    return _optional_opaque(value, "quiet_hours")


def _format(value: object) -> Opaque | None:
    return _optional_opaque(value, "format")


def _metadata(value: object) -> Opaque | None:
    return _optional_opaque(value, "metadata")


def _channel_preferences(value: object) -> FrozenMap[Opaque] | None:
    # An empty map is the omitted field; absence is its one stored form.
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise UsageError(
            "invalid_type",
            f"channel_preferences must be a mapping, not {type(value).__name__}",
            "/channel_preferences",
        )
    frozen = freeze_opaque(value, "/channel_preferences")
    assert isinstance(frozen, FrozenMap)
    return frozen or None


def _preference_id(value: object) -> str:
    _require_text(value, "preference_id")
    assert isinstance(value, str)
    return value


def _principal_ref(value: object) -> str:
    _require_text(value, "principal_ref")
    assert isinstance(value, str)
    return value


def _channel_names(value: object) -> tuple[str, ...]:
    """Check the type of a declared channel set and return its names in the given order."""
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise UsageError(
            "invalid_type",
            f"declared_channels must be a collection of strings, not {type(value).__name__}",
            "/declared_channels",
        )
    names = tuple(value)
    for i, name in enumerate(names):
        if not isinstance(name, str):
            raise UsageError(
                "invalid_type",
                f"a channel name must be a string, not {type(name).__name__}",
                f"/declared_channels/{i}",
            )
    return names


def _declared_channels(value: object) -> frozenset[str]:
    return frozenset(_channel_names(value))


def _status(value: object) -> Status:
    if isinstance(value, Status):
        return value
    if isinstance(value, str) and value in Status.__members__.values():
        return Status(value)
    raise InvalidInput("invalid_status", f"not a status: {value!r}", "/status")


def _optional_instant(
    _inst: object, attribute: attrs.Attribute[datetime | None], value: datetime | None
) -> None:
    if value is not None:
        require_instant(value, attribute.name)


def _instant(_inst: object, attribute: attrs.Attribute[datetime], value: datetime) -> None:
    require_instant(value, attribute.name)


@attrs.frozen(kw_only=True)
class PreferenceRecord:
    """One principal's stated delivery shaping (docs/rules.md#records).

    Every field but ``status`` is fixed once recorded; ``suspended_at`` and ``deleted_at`` are
    stamped once and then fixed too (Invariant 1). Records are made by `PreferenceStore.set`;
    build one directly only to load a stored record (an adapter, an audit).

    Args:
        preference_id: the host-allocated identity, never reused (invariant 8).
        principal_ref: the principal, compared exactly (no case folding, no trimming).
        declared_channels: the channel set the record was validated against (Invariant 5, 10).
        set_at: when the record was made (the injected ``now``).
        status: its lifecycle state.
        channel_preferences: declared channel name -> opaque value; never empty (an empty
            map is the omitted field).
        frequency_limit: opaque.
        quiet_hours: opaque.
        format: opaque.
        metadata: opaque, never a preference field.
        suspended_at: present once the record has been suspended.
        deleted_at: present exactly when the record is deleted.

    Raises:
        UsageError: a field of the wrong type (code ``invalid_type``, ``invalid_opaque_value``
            or ``null_value``) with its pointer.
        NaiveDatetime: an instant without time zone.
        InvalidInput: an unknown status (code ``invalid_status``).
    """

    preference_id: str = attrs.field(converter=_preference_id)
    principal_ref: str = attrs.field(converter=_principal_ref)
    declared_channels: frozenset[str] = attrs.field(converter=_declared_channels)
    set_at: datetime = attrs.field(validator=_instant)
    status: Status = attrs.field(converter=_status)
    channel_preferences: FrozenMap[Opaque] | None = attrs.field(
        default=None, converter=_channel_preferences
    )
    frequency_limit: Opaque | None = attrs.field(default=None, converter=_frequency_limit)
    quiet_hours: Opaque | None = attrs.field(default=None, converter=_quiet_hours)
    format: Opaque | None = attrs.field(default=None, converter=_format)
    metadata: Opaque | None = attrs.field(default=None, converter=_metadata)
    suspended_at: datetime | None = attrs.field(default=None, validator=_optional_instant)
    deleted_at: datetime | None = attrs.field(default=None, validator=_optional_instant)

    @property
    def in_effect(self) -> bool:
        """Tell whether the record is currently in effect (active or suspended)."""
        return self.status is not Status.DELETED

    def status_at(self, instant: datetime) -> Status | None:
        """Return the status the record stood in at ``instant``, ``None`` before ``set_at``.

        Reconstructed from the stamps alone with half-open intervals (Check 2.1-2.2): at
        ``set_at`` the record is active, at ``deleted_at`` it is deleted, at ``suspended_at``
        it is suspended.

        Raises:
            NaiveDatetime: ``instant`` has no time zone.

        Example:
            >>> from datetime import datetime, UTC
            >>> r = PreferenceRecord(preference_id="p1", principal_ref="u", status="deleted",
            ...     declared_channels=["email"], format="plain",
            ...     set_at=datetime(2026, 1, 1, tzinfo=UTC),
            ...     deleted_at=datetime(2026, 2, 1, tzinfo=UTC))
            >>> r.status_at(datetime(2026, 1, 15, tzinfo=UTC))
            <Status.ACTIVE: 'active'>
        """
        require_instant(instant, "instant")
        if instant < self.set_at:
            return None
        if self.deleted_at is not None and instant >= self.deleted_at:
            return Status.DELETED
        if self.suspended_at is not None and instant >= self.suspended_at:
            return Status.SUSPENDED
        return Status.ACTIVE

    @property
    def stamps_in_order(self) -> bool:
        """Tell whether ``set_at <= suspended_at <= deleted_at`` (a record's own stamps in order).

        False only when a host's clock stepped back between two writes of the record; the
        audit reports such records, whose reconstructed intervals cannot be trusted.
        """
        stamps = [t for t in (self.set_at, self.suspended_at, self.deleted_at) if t is not None]
        return all(a <= b for a, b in itertools.pairwise(stamps))

    def in_effect_at(self, instant: datetime) -> bool:
        """Tell whether ``instant`` lies in ``[set_at, deleted_at)`` (Check 2.2)."""
        status = self.status_at(instant)
        return status is not None and status is not Status.DELETED


def _require_text(value: object, name: str) -> None:
    if not isinstance(value, str):
        raise UsageError(
            "invalid_type", f"{name} must be a string, not {type(value).__name__}", f"/{name}"
        )
