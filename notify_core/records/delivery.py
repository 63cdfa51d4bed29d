"""Preference records composed into delivery (M1-M6): the governing record and its audit.

- `rules_in_effect`: a stored record read at an instant, as the `RecordInEffect` fact the
  push path and the mail drain receive (``None`` when the record did not govern then).
- `governing_record`: M1, the record of a principal in effect at a delivery's instant.
- `audit_delivery`: M6, for one delivery (a push send or a mail), the record in effect at
  its decision and at its send, its status then, and whether the delivery was allowed.

Rules: docs/rules.md#records (M1-M6); the rules themselves are values of
`notify_core.values.record_rules`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime

import attrs

from notify_core.records.store import PreferenceStore
from notify_core.records.values import PreferenceRecord, Status
from notify_core.values.errors import UsageError
from notify_core.values.instants import require_instant
from notify_core.values.opaque import Opaque
from notify_core.values.record_rules import (
    DeliveryChannel,
    RecordInEffect,
    RecordReason,
    channel_rule,
    verdict,
)

__all__ = [
    "DeliveryAudit",
    "RecordReading",
    "audit_delivery",
    "governing_record",
    "rules_in_effect",
]


def rules_in_effect(record: PreferenceRecord, instant: datetime) -> RecordInEffect | None:
    """Read a record as the fact of a delivery at ``instant`` (M1-M5), ``None`` if not in effect.

    The status is the one the record stood in at ``instant`` (`PreferenceRecord.status_at`),
    so a stored record answers for any past moment. The ``push`` and ``email`` values are read
    by `channel_rule`; what cannot be read is listed in ``not_applied``.

    Raises:
        NaiveDatetime: ``instant`` has no time zone.

    Example:
        >>> from datetime import datetime, UTC
        >>> r = PreferenceRecord(preference_id="p1", principal_ref="u", status="suspended",
        ...     declared_channels=["push"], channel_preferences={"push": {"max_per_day": 3}},
        ...     set_at=datetime(2026, 1, 1, tzinfo=UTC),
        ...     suspended_at=datetime(2026, 2, 1, tzinfo=UTC))
        >>> rules_in_effect(r, datetime(2026, 1, 15, tzinfo=UTC)).suspended
        False
        >>> rules_in_effect(r, datetime(2026, 2, 15, tzinfo=UTC)).suspended
        True
    """
    status = record.status_at(instant)
    if status is None or status is Status.DELETED:
        return None
    values: Mapping[str, Opaque] = record.channel_preferences or {}
    push, bad_push = channel_rule(values.get("push"), "push")
    email, bad_email = channel_rule(values.get("email"), "email")
    return RecordInEffect(
        preference_id=record.preference_id,
        suspended=status is Status.SUSPENDED,
        push=push,
        email=email,
        not_applied=bad_push + bad_email,
    )


def governing_record(
    store: PreferenceStore, principal_ref: str, instant: datetime
) -> RecordInEffect | None:
    """Return the record that governs a delivery to ``principal_ref`` at ``instant`` (M1).

    The one in effect at the instant (`PreferenceStore.in_effect_at`, half-open intervals),
    read by `rules_in_effect`; ``None`` when the person has none (shaped by nothing).

    Raises:
        UsageError: ``principal_ref`` is not a string.
        NaiveDatetime: ``instant`` has no time zone.
    """
    record = store.in_effect_at(principal_ref, instant)
    return None if record is None else rules_in_effect(record, instant)


@attrs.frozen(kw_only=True)
class RecordReading:
    """One reading of the audit: the record in effect at one instant and its answer.

    Args:
        preference_id: the record's id.
        status: ``active`` or ``suspended``, its status at the instant.
        reason: why it held the delivery back, ``None`` when it allowed it.
        not_applied: pointers of the record's values notify could not read (M6).
    """

    preference_id: str
    status: Status
    reason: RecordReason | None
    not_applied: tuple[str, ...] = ()

    @property
    def allowed(self) -> bool:
        """Tell whether the record allowed the delivery."""
        return self.reason is None


@attrs.frozen(kw_only=True)
class DeliveryAudit:
    """What the audit answers for one delivery (M6).

    Args:
        channel: ``push`` (a push send) or ``email`` (a mail).
        at_decision: the reading at the decision (push: the hint's decision; mail: the
            fan-out of its latest entry), ``None`` when no record was in effect.
        at_send: the reading at the send (push: the send; mail: the drain).

    ``allowed`` tells whether both readings allowed the delivery (no reading allows anything).
    """

    channel: DeliveryChannel
    at_decision: RecordReading | None
    at_send: RecordReading | None

    @property
    def allowed(self) -> bool:
        """Tell whether the delivery was allowed under the records that governed it."""
        return all(r is None or r.allowed for r in (self.at_decision, self.at_send))


def _reading(
    history: tuple[PreferenceRecord, ...],
    instant: datetime,
    channel: DeliveryChannel,
    delivered_before: int,
) -> RecordReading | None:
    for record in reversed(history):
        if record.in_effect_at(instant):
            rules = rules_in_effect(record, instant)
            assert rules is not None
            return RecordReading(
                preference_id=record.preference_id,
                status=Status.SUSPENDED if rules.suspended else Status.ACTIVE,
                reason=verdict(rules, channel, delivered_before),
                not_applied=rules.not_applied,
            )
    return None


def audit_delivery(
    history: Iterable[PreferenceRecord],
    *,
    channel: DeliveryChannel | str,
    decided_at: datetime,
    sent_at: datetime,
    delivered_before_decision: int = 0,
    delivered_before_send: int = 0,
) -> DeliveryAudit:
    """Answer for one delivery from the principal's stored records (M6).

    Args:
        history: every record of the delivery's principal in recording order (the store's
            `PreferenceStore.history`, or the rows an adapter read).
        channel: ``push`` or ``email``.
        decided_at: the instant of the decision (push: the hint's decision; mail: the fan-out).
        sent_at: the instant of the send (push: the send; mail: the drain).
        delivered_before_decision: deliveries on the channel to the person earlier in the
            local day of the decision (M4), for the cap.
        delivered_before_send: the same for the local day of the send.

    Raises:
        UsageError: an unknown channel, or a history item that is not a `PreferenceRecord`.
        NaiveDatetime: an instant without time zone.

    Example:
        >>> from datetime import datetime, UTC
        >>> r = PreferenceRecord(preference_id="p1", principal_ref="u", status="active",
        ...     declared_channels=["email"], channel_preferences={"email": {"enabled": False}},
        ...     set_at=datetime(2026, 1, 1, tzinfo=UTC))
        >>> t = datetime(2026, 1, 2, tzinfo=UTC)
        >>> audit = audit_delivery([r], channel="email", decided_at=t, sent_at=t)
        >>> audit.allowed, audit.at_send.reason.value
        (False, 'record_channel_off')
    """
    if channel not in ("push", "email"):
        raise UsageError("unknown_channel", f"not a delivery channel: {channel!r}", "/channel")
    which = DeliveryChannel(channel)
    require_instant(decided_at, "decided_at")
    require_instant(sent_at, "sent_at")
    records = tuple(history)
    for i, record in enumerate(records):
        if not isinstance(record, PreferenceRecord):
            raise UsageError(
                "invalid_type", f"not a PreferenceRecord: {type(record).__name__}", f"/{i}"
            )
    return DeliveryAudit(
        channel=which,
        at_decision=_reading(records, decided_at, which, delivered_before_decision),
        at_send=_reading(records, sent_at, which, delivered_before_send),
    )
