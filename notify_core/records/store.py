"""`PreferenceStore`: every preference record ever made, as one immutable value.

The writes are pure transitions returning ``(new_store, outcome)`` (`Ok` or `Refused`); the
reads answer from the store alone. See `notify_core.records` for the rules.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Literal, TypeAlias

import attrs

from notify_core.records.values import (
    DegenerateChannelSet,
    InvalidPreferenceId,
    PreferenceRecord,
    Refusal,
    Status,
    _channel_names,
    _channel_preferences,
    _optional_opaque,
    _require_text,
)
from notify_core.values.errors import UsageError
from notify_core.values.instants import require_instant
from notify_core.values.opaque import FrozenMap, json_pointer_token

__all__ = ["Ok", "Outcome", "PreferenceStore", "Refused"]


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
    """A refused write and its named reason; the store is handed back unchanged.

    Args:
        refusal: the refusal's name, as docs/rules.md#records lists it.
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
        """Return every record of a principal in recording order (exact match)."""
        _require_text(principal_ref, "principal_ref")
        return tuple(self._records[i] for i in self._by_principal.get(principal_ref, ()))

    def current_for(self, principal_ref: str) -> PreferenceRecord | None:
        """Return the record currently in effect for a principal, or ``None`` (none in effect).

        Never refuses: a blank reference simply matches nothing (invariant 7).

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
        """Return the whole record with that id in any status, or ``None`` (not known).

        Never refuses; deleted records included (invariant 9).

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
        the host's clock stepped back; then the record recorded last wins.

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

        The ``set`` of docs/rules.md#records. The new record stands in active with
        ``set_at = now`` and the injected channel set stamped on it; a prior record in effect
        for the principal moves to deleted with ``deleted_at = now`` in the same new store
        (Invariant 4).

        Args:
            principal_ref: the principal; blank (``""``) is refused, nothing is trimmed.
            now: the host's clock reading (seam); only stamped, never consulted.
            preference_id: the host-allocated id of the new record (seam).
            declared_channels: the deployment's declared channel set (seam), any collection
                of strings; stamped onto the record.
            channel_preferences: declared channel name -> opaque value; an empty mapping is
                the omitted field.
            frequency_limit: opaque JSON value, ``None`` when omitted.
            quiet_hours: opaque JSON value, ``None`` when omitted.
            format: opaque JSON value, ``None`` when omitted.
            metadata: opaque JSON value, ``None`` when omitted; not a preference field.

        Returns:
            ``(new_store, Ok(preference_id))``, or ``(self, Refused(...))`` with
            ``invalid-request`` (blank principal, pointer ``/principal_ref``; no preference
            field, no pointer) or ``undeclared-channel`` (pointer of the first undeclared key
            in the mapping's order), checked in that order.

        Raises:
            NaiveDatetime: ``now`` has no time zone.
            DegenerateChannelSet: the declared set is empty, repeats a name or holds ``""``;
                checked before anything about the request.
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

        The ``suspend`` of docs/rules.md#records, invariant 6. The id is the whole authorization.

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

        The ``delete`` of docs/rules.md#records. A suspended record keeps its ``suspended_at``.

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
