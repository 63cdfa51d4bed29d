"""Preference records: the Message Preference pattern of seed 002 as a pure store value.

Rules: docs/rules.md#records (section 8). A `PreferenceStore` is an immutable value holding
every preference record ever made, indexed per principal. The three writes are pure
transitions that return ``(new_store, outcome)``; the three reads answer from the store alone::

    set(principal_ref, fields)  -> Ok(id) | Refused(invalid-request | undeclared-channel)
    suspend(preference_id)      -> Ok | Refused(not-known | not-active)
    delete(preference_id)       -> Ok | Refused(not-known | already-deleted)
    current_for(principal_ref)  -> the record currently in effect | None ("none")
    read(preference_id)         -> the whole record, deleted included | None ("not-known")
    in_effect_at(principal, t)  -> the record that governed t (Check 2.1, half-open 2.2)
    supersession_gaps(history, bound) -> each gap read against the bound (Check 4.1-4.2)
    check_failures(history)     -> what Check 3.1, 5.1 and 5.2 find wrong in stored records

Refusals are values, never exceptions: a refused write answers `Refused` and hands back the
very store it was given (Operation 30). What raises is a fault that must not become an outcome:
a caller's wrong type or naive datetime (`UsageError`, `NaiveDatetime`, rule G2) and the host's
faults at the seam - a degenerate declared channel set (`DegenerateChannelSet`, Instance 13-16)
or a blank or reused preference id (`InvalidPreferenceId`, Identity 2-4, Invariant 8).
``storage-failure`` is a member of `Refusal` for the PostgreSQL adapter; the pure store never
answers it.

The host supplies ``now``, the new preference id and the declared channel set at the seam; no
guard reads ``now`` (Clock dependence 1-2), it is only stamped. Preference fields and metadata
are opaque JSON values, stored deeply frozen (tuples and `FrozenMap`) and never interpreted.
"""

from __future__ import annotations

import enum
import itertools
import math
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime, timedelta
from typing import Literal, TypeAlias, TypeVar

import attrs

from notify_core.errors import InvalidInput, NotifyError, UsageError
from notify_core.instants import require_instant

__all__ = [
    "CheckFailure",
    "DegenerateChannelSet",
    "FrozenMap",
    "GapReading",
    "InvalidPreferenceId",
    "Ok",
    "Opaque",
    "Outcome",
    "PreferenceRecord",
    "PreferenceStore",
    "Refusal",
    "Refused",
    "Status",
    "SupersessionGap",
    "check_failures",
    "freeze_opaque",
    "json_pointer_token",
    "supersession_gaps",
]

_V_co = TypeVar("_V_co", covariant=True)


class Status(enum.StrEnum):
    """The lifecycle state of a preference record (seed 002 State 1, Invariant 2).

    ``active`` -> ``suspended`` -> ``deleted``, or ``active`` -> ``deleted``; never backwards.
    A record in ``active`` or ``suspended`` is *currently in effect*.
    """

    ACTIVE = "active"
    SUSPENDED = "suspended"
    DELETED = "deleted"


class Refusal(enum.StrEnum):
    """The named refusals of the three writes (seed 002 signature block)."""

    INVALID_REQUEST = "invalid-request"
    UNDECLARED_CHANNEL = "undeclared-channel"
    NOT_KNOWN = "not-known"
    NOT_ACTIVE = "not-active"
    ALREADY_DELETED = "already-deleted"
    #: Only the PostgreSQL adapter answers it (Operation 16, 23, 29); the pure store never does.
    STORAGE_FAILURE = "storage-failure"


class DegenerateChannelSet(NotifyError, ValueError):
    """The host injected a degenerate declared channel set into ``set`` (Instance 11-16).

    Degenerate: empty, repeating a channel name, or carrying a blank (empty) channel name. This
    is a deployment fault, not a caller's: ``set`` validates nothing, writes nothing and answers
    no outcome; the exception is how the fault is surfaced (Instance 16). Code
    ``degenerate_channel_set``; the pointer names the offending element, e.g.
    ``/declared_channels/2``, or ``/declared_channels`` when the set is empty.
    """


class InvalidPreferenceId(NotifyError, ValueError):
    """The host allocated a blank preference id, or one the store already holds.

    Preference ids are host-allocated at the seam and never reused (Identity 2-4, Invariant
    8.1), so this is a host fault and never an outcome. Codes ``blank_preference_id`` and
    ``preference_id_reused``, pointer ``/preference_id``.
    """


class FrozenMap(Mapping[str, _V_co]):
    """An immutable, hashable mapping with string keys, in insertion order.

    Equal to any mapping with the same items (``FrozenMap({"a": 1}) == {"a": 1}``).

    Example:
        >>> m = FrozenMap({"email": "digest"})
        >>> m["email"], len(m), m == {"email": "digest"}
        ('digest', 1, True)
    """

    __slots__ = ("_data",)

    def __init__(self, items: Mapping[str, _V_co] | Iterable[tuple[str, _V_co]] = ()) -> None:
        self._data: dict[str, _V_co] = dict(items)

    def __getitem__(self, key: str) -> _V_co:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __hash__(self) -> int:
        return hash(frozenset(self._data.items()))

    def __repr__(self) -> str:
        return f"FrozenMap({self._data!r})"


#: An opaque JSON value as stored: strings, numbers, booleans, tuples and `FrozenMap`s.
Opaque: TypeAlias = "str | int | float | bool | tuple[Opaque, ...] | FrozenMap[Opaque]"


def json_pointer_token(key: str) -> str:
    """Escape one key as a JSON pointer reference token (RFC 6901: ``~`` and ``/``).

    Example:
        >>> json_pointer_token("a/b~c")
        'a~1b~0c'
    """
    return key.replace("~", "~0").replace("/", "~1")


def freeze_opaque(value: object, pointer: str = "") -> Opaque:
    """Return a deeply immutable copy of a JSON value (lists become tuples, objects `FrozenMap`).

    The atom never interprets an opaque value (Operation 10-11); it only makes sure that what
    it stores cannot change afterwards, whatever the caller does with its own copy
    (Invariant 1.2-1.3, Non-goal 32).

    Args:
        value: a JSON value: string, integer, finite float, boolean, list or tuple, or a
            mapping with string keys, nested freely.
        pointer: JSON pointer of ``value``, used in errors.

    Raises:
        UsageError: ``None`` anywhere (code ``null_value``: omit the member instead), a
            non-finite float, a non-string key or any other type (code
            ``invalid_opaque_value``), with the pointer of the culprit.

    Example:
        >>> freeze_opaque({"per_day": 10, "days": ["mon"]})
        FrozenMap({'per_day': 10, 'days': ('mon',)})
    """
    if isinstance(value, str | int):  # bool is an int
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise UsageError("invalid_opaque_value", f"not a JSON number: {value!r}", pointer)
        return value
    if isinstance(value, list | tuple):
        return tuple(freeze_opaque(item, f"{pointer}/{i}") for i, item in enumerate(value))
    if isinstance(value, Mapping):
        items: dict[str, Opaque] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise UsageError(
                    "invalid_opaque_value", f"an object key must be a string: {key!r}", pointer
                )
            items[key] = freeze_opaque(item, f"{pointer}/{json_pointer_token(key)}")
        return FrozenMap(items)
    if value is None:
        raise UsageError("null_value", "null is not a value: omit the member instead", pointer)
    raise UsageError("invalid_opaque_value", f"not a JSON value: {type(value).__name__}", pointer)


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
    # Operation 6-7: an empty map is the omitted field; absence is its one stored form.
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
    """One principal's stated delivery shaping (seed 002 State 2-8).

    Every field but ``status`` is fixed once recorded; ``suspended_at`` and ``deleted_at`` are
    stamped once and then fixed too (Invariant 1). Records are made by `PreferenceStore.set`;
    build one directly only to load a stored record (an adapter, an audit).

    Args:
        preference_id: the host-allocated identity (Identity 1-5).
        principal_ref: the principal, compared exactly (Identity 8-10).
        declared_channels: the channel set the record was validated against (Invariant 5, 10).
        set_at: when the record was made (State 11).
        status: its lifecycle state.
        channel_preferences: declared channel name -> opaque value; never empty (Operation 7).
        frequency_limit: opaque.
        quiet_hours: opaque.
        format: opaque.
        metadata: opaque, never a preference field (Operation 12).
        suspended_at: present once the record has been suspended (State 6-7).
        deleted_at: present exactly when the record is deleted (State 8, 13).

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
        """Tell whether ``set_at <= suspended_at <= deleted_at`` (Temporal property 1-3).

        False only when a host's clock stepped back between two writes of the record; the
        audit reports such records, whose reconstructed intervals cannot be trusted.
        """
        stamps = [t for t in (self.set_at, self.suspended_at, self.deleted_at) if t is not None]
        return all(a <= b for a, b in itertools.pairwise(stamps))

    def in_effect_at(self, instant: datetime) -> bool:
        """Tell whether ``instant`` lies in ``[set_at, deleted_at)`` (Check 2.2)."""
        status = self.status_at(instant)
        return status is not None and status is not Status.DELETED


@attrs.frozen(kw_only=True)
class Ok:
    """An accepted write: ``set`` answers the new id, ``suspend`` and ``delete`` the target's."""

    preference_id: str

    @property
    def ok(self) -> Literal[True]:
        """Always true: the write was accepted."""
        return True


@attrs.frozen(kw_only=True)
class Refused:
    """A refused write and its named reason; the store is handed back unchanged (Operation 30).

    Args:
        refusal: the seed's name for the refusal.
        pointer: for ``invalid-request`` and ``undeclared-channel``, the JSON pointer of the
            argument at fault (``/principal_ref``, ``/channel_preferences/carrier-pigeon``);
            absent when the request as a whole is at fault (no preference field at all).
    """

    refusal: Refusal = attrs.field(converter=Refusal)
    pointer: str | None = None

    @property
    def ok(self) -> Literal[False]:
        """Always false: the write was refused."""
        return False


#: What a write answers.
Outcome: TypeAlias = Ok | Refused


@attrs.frozen(kw_only=True)
class PreferenceStore:
    """Every preference record of one store instance, as an immutable value (section 8).

    Start from ``PreferenceStore()`` (empty) or `PreferenceStore.from_records`; every write
    returns a new store and leaves this one as it was. Records are kept in recording order and
    indexed per principal; nothing is ever removed (Invariant 9).

    Example:
        >>> from datetime import datetime, UTC
        >>> t = datetime(2026, 3, 1, 9, tzinfo=UTC)
        >>> store, outcome = PreferenceStore().set(
        ...     "user_u", channel_preferences={"email": "digest"}, format="plain",
        ...     now=t, preference_id="pref_001", declared_channels=["email", "sms"])
        >>> outcome
        Ok(preference_id='pref_001')
        >>> store.current_for("user_u").status
        <Status.ACTIVE: 'active'>
    """

    _records: FrozenMap[PreferenceRecord] = attrs.field(factory=FrozenMap)
    _by_principal: FrozenMap[tuple[str, ...]] = attrs.field(factory=FrozenMap)

    @classmethod
    def from_records(cls, records: Iterable[PreferenceRecord]) -> PreferenceStore:
        """Build a store holding ``records``, taken to be in recording order.

        Used to load a stored history (an adapter, an audit). The records are kept as given;
        nothing checks the invariants across them, that is the audit's job.

        Raises:
            UsageError: an item is not a `PreferenceRecord` (pointer ``/<index>``).
            InvalidPreferenceId: two records share a preference id (code
                ``preference_id_reused``, pointer ``/<index>/preference_id``).
        """
        by_id: dict[str, PreferenceRecord] = {}
        by_principal: dict[str, tuple[str, ...]] = {}
        for i, record in enumerate(records):
            if not isinstance(record, PreferenceRecord):
                raise UsageError(
                    "invalid_type", f"not a PreferenceRecord: {type(record).__name__}", f"/{i}"
                )
            if record.preference_id in by_id:
                raise InvalidPreferenceId(
                    "preference_id_reused",
                    f"two records carry the preference id {record.preference_id!r}",
                    f"/{i}/preference_id",
                )
            by_id[record.preference_id] = record
            ids = by_principal.get(record.principal_ref, ())
            by_principal[record.principal_ref] = (*ids, record.preference_id)
        return cls(records=FrozenMap(by_id), by_principal=FrozenMap(by_principal))

    # -- reads ---------------------------------------------------------------------------

    @property
    def records(self) -> Mapping[str, PreferenceRecord]:
        """Every record by preference id, in recording order, deleted ones included."""
        return self._records

    def history(self, principal_ref: str) -> tuple[PreferenceRecord, ...]:
        """Return every record of a principal in recording order (exact match, Identity 10)."""
        _require_text(principal_ref, "principal_ref")
        return tuple(self._records[i] for i in self._by_principal.get(principal_ref, ()))

    def current_for(self, principal_ref: str) -> PreferenceRecord | None:
        """Return the record currently in effect for a principal, or ``None`` (seed "none").

        Never refuses: a blank reference simply matches nothing (Operation 31-33, Invariant 7).

        Raises:
            UsageError: ``principal_ref`` is not a string.
        """
        _require_text(principal_ref, "principal_ref")
        for pid in reversed(self._by_principal.get(principal_ref, ())):
            record = self._records[pid]
            if record.in_effect:
                return record
        return None

    def read(self, preference_id: str) -> PreferenceRecord | None:
        """Return the whole record with that id in any status, or ``None`` (seed "not-known").

        Never refuses (Operation 34-36, Invariant 9.3).

        Raises:
            UsageError: ``preference_id`` is not a string.
        """
        _require_text(preference_id, "preference_id")
        return self._records.get(preference_id)

    def in_effect_at(self, principal_ref: str, instant: datetime) -> PreferenceRecord | None:
        """Return the record that governed a principal at a past ``instant``, or ``None``.

        The audit reconstruction of Check 2.1 from ``set_at`` and ``deleted_at`` alone: a
        record governs ``[set_at, deleted_at)`` (half-open, Check 2.2), so at the instant of a
        supersession the successor governs. A suspended record still governs (it is in
        effect; see `PreferenceRecord.status_at`). Intervals of one principal overlap only if
        the host's clock stepped back (Temporal property 5); then the record recorded last wins.

        Raises:
            UsageError: ``principal_ref`` is not a string.
            NaiveDatetime: ``instant`` has no time zone.
        """
        _require_text(principal_ref, "principal_ref")
        require_instant(instant, "instant")
        for pid in reversed(self._by_principal.get(principal_ref, ())):
            record = self._records[pid]
            if record.in_effect_at(instant):
                return record
        return None

    # -- writes --------------------------------------------------------------------------

    def set(
        self,
        principal_ref: str,
        *,
        now: datetime,
        preference_id: str,
        declared_channels: Iterable[str],
        channel_preferences: Mapping[str, object] | None = None,
        frequency_limit: object = None,
        quiet_hours: object = None,
        format: object = None,
        metadata: object = None,
    ) -> tuple[PreferenceStore, Outcome]:
        """Record a new preference set for a principal, superseding the one in effect.

        Seed 002 Operation 1-16. The new record stands in active with ``set_at = now`` and
        the injected channel set stamped on it; a prior record in effect for the principal
        moves to deleted with ``deleted_at = now`` in the same new store (Invariant 4).

        Args:
            principal_ref: the principal; blank (``""``) is refused, nothing is trimmed.
            now: the host's clock reading (seam); only stamped, never consulted.
            preference_id: the host-allocated id of the new record (seam).
            declared_channels: the deployment's declared channel set (seam), any collection
                of strings; stamped onto the record.
            channel_preferences: declared channel name -> opaque value; an empty mapping is
                the omitted field (Operation 6-7).
            frequency_limit: opaque JSON value, ``None`` when omitted.
            quiet_hours: opaque JSON value, ``None`` when omitted.
            format: opaque JSON value, ``None`` when omitted.
            metadata: opaque JSON value, ``None`` when omitted; not a preference field.

        Returns:
            ``(new_store, Ok(preference_id))``, or ``(self, Refused(...))`` with
            ``invalid-request`` (blank principal, pointer ``/principal_ref``; no preference
            field, no pointer) or ``undeclared-channel`` (pointer of the first undeclared key
            in the mapping's order), checked in that order (Operation 4-9).

        Raises:
            NaiveDatetime: ``now`` has no time zone.
            DegenerateChannelSet: the declared set is empty, repeats a name or holds ``""``;
                checked before anything about the request (Instance 13-15).
            InvalidPreferenceId: ``preference_id`` is blank or already in the store.
            UsageError: an argument of the wrong type, or an opaque value that is not JSON.

        Example:
            >>> from datetime import datetime, UTC
            >>> store, out = PreferenceStore().set("user_u", now=datetime(2026, 3, 1, tzinfo=UTC),
            ...     preference_id="p1", declared_channels=["email"])
            >>> out
            Refused(refusal=<Refusal.INVALID_REQUEST: 'invalid-request'>, pointer=None)
        """
        require_instant(now, "now")
        declared = _require_declared(declared_channels)
        _require_text(preference_id, "preference_id")
        if preference_id == "":
            raise InvalidPreferenceId(
                "blank_preference_id", "the host allocated a blank preference id", "/preference_id"
            )
        if preference_id in self._records:
            raise InvalidPreferenceId(
                "preference_id_reused",
                f"the preference id {preference_id!r} is already taken (never reused)",
                "/preference_id",
            )
        _require_text(principal_ref, "principal_ref")
        channels = _channel_preferences(channel_preferences)
        fields = {
            "frequency_limit": frequency_limit,
            "quiet_hours": quiet_hours,
            "format": format,
            "metadata": metadata,
        }
        frozen = {name: _optional_opaque(value, name) for name, value in fields.items()}

        if principal_ref == "":
            return self, Refused(refusal=Refusal.INVALID_REQUEST, pointer="/principal_ref")
        stated = (channels, frozen["frequency_limit"], frozen["quiet_hours"], frozen["format"])
        if all(value is None for value in stated):
            return self, Refused(refusal=Refusal.INVALID_REQUEST)
        for key in channels or ():
            if key not in declared:
                pointer = f"/channel_preferences/{json_pointer_token(key)}"
                return self, Refused(refusal=Refusal.UNDECLARED_CHANNEL, pointer=pointer)

        record = PreferenceRecord(
            preference_id=preference_id,
            principal_ref=principal_ref,
            declared_channels=declared,
            set_at=now,
            status=Status.ACTIVE,
            channel_preferences=channels,
            frequency_limit=frozen["frequency_limit"],
            quiet_hours=frozen["quiet_hours"],
            format=frozen["format"],
            metadata=frozen["metadata"],
        )
        records = dict(self._records)
        prior = self.current_for(principal_ref)
        if prior is not None:
            records[prior.preference_id] = attrs.evolve(
                prior, status=Status.DELETED, deleted_at=now
            )
        records[preference_id] = record
        by_principal = dict(self._by_principal)
        by_principal[principal_ref] = (*by_principal.get(principal_ref, ()), preference_id)
        store = PreferenceStore(records=FrozenMap(records), by_principal=FrozenMap(by_principal))
        return store, Ok(preference_id=preference_id)

    def suspend(self, preference_id: str, *, now: datetime) -> tuple[PreferenceStore, Outcome]:
        """Pause an active record: status and ``suspended_at`` change, nothing else.

        Seed 002 Operation 17-22, Invariant 6. The id is the whole authorization.

        Returns:
            ``(new_store, Ok(preference_id))``, or ``(self, Refused(not-known))`` for an id
            no record carries (blank included), ``(self, Refused(not-active))`` for a
            suspended or deleted record.

        Raises:
            NaiveDatetime: ``now`` has no time zone.
            UsageError: ``preference_id`` is not a string.
        """
        require_instant(now, "now")
        record = self.read(preference_id)
        if record is None:
            return self, Refused(refusal=Refusal.NOT_KNOWN)
        if record.status is not Status.ACTIVE:
            return self, Refused(refusal=Refusal.NOT_ACTIVE)
        changed = attrs.evolve(record, status=Status.SUSPENDED, suspended_at=now)
        return self._replace(changed), Ok(preference_id=preference_id)

    def delete(self, preference_id: str, *, now: datetime) -> tuple[PreferenceStore, Outcome]:
        """Retire an active or suspended record; it stays in the store (Invariant 9).

        Seed 002 Operation 24-28. A suspended record keeps its ``suspended_at``.

        Returns:
            ``(new_store, Ok(preference_id))``, or ``(self, Refused(not-known))`` for an id
            no record carries (blank included), ``(self, Refused(already-deleted))`` for a
            deleted record.

        Raises:
            NaiveDatetime: ``now`` has no time zone.
            UsageError: ``preference_id`` is not a string.
        """
        require_instant(now, "now")
        record = self.read(preference_id)
        if record is None:
            return self, Refused(refusal=Refusal.NOT_KNOWN)
        if record.status is Status.DELETED:
            return self, Refused(refusal=Refusal.ALREADY_DELETED)
        changed = attrs.evolve(record, status=Status.DELETED, deleted_at=now)
        return self._replace(changed), Ok(preference_id=preference_id)

    def _replace(self, record: PreferenceRecord) -> PreferenceStore:
        records = dict(self._records)
        records[record.preference_id] = record
        return PreferenceStore(records=FrozenMap(records), by_principal=self._by_principal)


def _require_text(value: object, name: str) -> None:
    if not isinstance(value, str):
        raise UsageError(
            "invalid_type", f"{name} must be a string, not {type(value).__name__}", f"/{name}"
        )


def _require_declared(value: object) -> frozenset[str]:
    """Return the injected declared channel set, or fail-stop if it is degenerate."""
    names = _channel_names(value)
    if not names:
        raise DegenerateChannelSet(
            "degenerate_channel_set", "the declared channel set is empty", "/declared_channels"
        )
    seen: set[str] = set()
    for i, name in enumerate(names):
        if name == "":
            raise DegenerateChannelSet(
                "degenerate_channel_set",
                "the declared channel set holds a blank channel name",
                f"/declared_channels/{i}",
            )
        if name in seen:
            raise DegenerateChannelSet(
                "degenerate_channel_set",
                f"the declared channel set repeats {name!r}",
                f"/declared_channels/{i}",
            )
        seen.add(name)
    return frozenset(names)


class GapReading(enum.StrEnum):
    """How an auditor reads one supersession gap against the declared bound (Check 4.1-4.2)."""

    #: ``0 <= gap <= bound``: the deletion and the successor came from one supersession.
    SUPERSESSION = "supersession"
    #: ``gap > bound``: a supersession or a delete followed by a later set; the records alone
    #: cannot tell (Check 4.2), an attributed event trail can.
    AMBIGUOUS = "ambiguous"
    #: ``gap < 0``: the successor was stamped before its predecessor's deletion, so a clock
    #: stepped back (Temporal property 5); reconstructions around it are not reliable.
    BACKWARD = "backward"


@attrs.frozen(kw_only=True)
class SupersessionGap:
    """The interval from a deleted record's ``deleted_at`` to its successor's ``set_at``.

    Args:
        prior: the preference id of the deleted record.
        successor: the preference id of the record recorded next for the same principal.
        gap: ``successor.set_at - prior.deleted_at`` (negative when the clock stepped back).
        reading: how the gap reads against the bound.
    """

    prior: str
    successor: str
    gap: timedelta
    reading: GapReading


def supersession_gaps(
    history: Iterable[PreferenceRecord], bound: timedelta
) -> tuple[SupersessionGap, ...]:
    """Read every supersession gap of one principal's history against the declared bound.

    Seed 002 Check 4.1 (a gap within the bound reads as a supersession) and Check 4.2 (a gap
    beyond it is marked ambiguous: the same records come from an atomic supersession and from
    a delete followed by a later set). The deployment declares the bound (Capability
    requirement 5); the PostgreSQL store declares zero
    (`notify_pg.stores.records.SUPERSESSION_GAP_BOUND`).

    Args:
        history: one principal's records in recording order (`PreferenceStore.history`).
        bound: the supersession gap bound, zero or more.

    Returns:
        One `SupersessionGap` per pair of consecutive records whose first is deleted, in
        recording order. A record followed by another while it is still in effect (a store
        that breaks Invariant 3, Check 3.1) has no gap.

    Raises:
        UsageError: ``bound`` is not a `timedelta` or is negative (code ``invalid_bound``,
            pointer ``/bound``), or ``history`` holds something else than records.

    Example:
        >>> from datetime import UTC, datetime, timedelta
        >>> t = datetime(2026, 3, 1, 9, tzinfo=UTC)
        >>> store, _ = PreferenceStore().set("u", format="plain", now=t, preference_id="p1",
        ...                                  declared_channels=["email"])
        >>> store, _ = store.set("u", format="rich", now=t, preference_id="p2",
        ...                      declared_channels=["email"])
        >>> [g.reading.value for g in supersession_gaps(store.history("u"), timedelta(0))]
        ['supersession']
    """
    if not isinstance(bound, timedelta) or bound < timedelta(0):
        raise UsageError(
            "invalid_bound",
            "the supersession gap bound must be a timedelta of zero or more",
            "/bound",
        )
    records = tuple(history)
    for i, record in enumerate(records):
        if not isinstance(record, PreferenceRecord):
            raise UsageError(
                "invalid_type", f"not a PreferenceRecord: {type(record).__name__}", f"/{i}"
            )
    gaps: list[SupersessionGap] = []
    for prior, successor in itertools.pairwise(records):
        if prior.deleted_at is None:
            continue
        gap = successor.set_at - prior.deleted_at
        if gap < timedelta(0):
            reading = GapReading.BACKWARD
        elif gap <= bound:
            reading = GapReading.SUPERSESSION
        else:
            reading = GapReading.AMBIGUOUS
        gaps.append(
            SupersessionGap(
                prior=prior.preference_id,
                successor=successor.preference_id,
                gap=gap,
                reading=reading,
            )
        )
    return tuple(gaps)


@attrs.frozen(kw_only=True)
class CheckFailure:
    """One conformance check an auditor cannot clear on a principal's stored records.

    Args:
        check: ``3.1`` (two records in effect), ``5.1`` (a channel key outside the record's
            own declared channels) or ``5.2`` (a record whose declared channels are empty).
        preference_ids: the records at fault, in recording order.
        channel: for ``5.1``, the undeclared channel key.
    """

    check: str
    preference_ids: tuple[str, ...]
    channel: str | None = None


def check_failures(history: Iterable[PreferenceRecord]) -> tuple[CheckFailure, ...]:
    """Run seed 002 Check 3.1, 5.1 and 5.2 over one principal's stored records.

    The store's own writes never produce a failure (Invariant 3, 5, 10; the PostgreSQL schema
    refuses such rows too); an audit runs the checks anyway, because it must clear them from
    the stored fields alone (Generation acceptance), whoever wrote the rows.

    Args:
        history: one principal's records in recording order (`PreferenceStore.history`).

    Returns:
        The failures: one ``3.1`` naming every record in effect when there are two or more,
        then per record in recording order one ``5.2`` if its declared channels are empty and
        one ``5.1`` per undeclared channel key (in the map's order).

    Raises:
        UsageError: ``history`` holds something else than records (pointer ``/<index>``).

    Example:
        >>> check_failures(())
        ()
    """
    records = tuple(history)
    for i, record in enumerate(records):
        if not isinstance(record, PreferenceRecord):
            raise UsageError(
                "invalid_type", f"not a PreferenceRecord: {type(record).__name__}", f"/{i}"
            )
    failures: list[CheckFailure] = []
    in_effect = tuple(r.preference_id for r in records if r.in_effect)
    if len(in_effect) > 1:
        failures.append(CheckFailure(check="3.1", preference_ids=in_effect))
    for record in records:
        ids = (record.preference_id,)
        if not record.declared_channels:
            failures.append(CheckFailure(check="5.2", preference_ids=ids))
        for key in record.channel_preferences or ():
            if key not in record.declared_channels:
                failures.append(CheckFailure(check="5.1", preference_ids=ids, channel=key))
    return tuple(failures)
