"""What an auditor reads in stored preference records (docs/rules.md#records).

`supersession_gaps` reads each gap between a deleted record and its successor against the
declared bound (Check 4.1-4.2); `check_failures` finds what Check 3.1, 5.1 and 5.2 find wrong.
Rules: docs/rules.md#records (section 8).
"""

from __future__ import annotations

import enum
import itertools
from collections.abc import Iterable
from datetime import timedelta

import attrs

from notify_core.records.values import PreferenceRecord
from notify_core.values.errors import UsageError

__all__ = ["CheckFailure", "GapReading", "SupersessionGap", "check_failures", "supersession_gaps"]


class GapReading(enum.StrEnum):
    """How an auditor reads one supersession gap against the declared bound (Check 4.1-4.2)."""

    #: ``0 <= gap <= bound``: the deletion and the successor came from one supersession.
    SUPERSESSION = "supersession"
    #: ``gap > bound``: a supersession or a delete followed by a later set; the records alone
    #: cannot tell (Check 4.2), an attributed event trail can.
    AMBIGUOUS = "ambiguous"
    #: ``gap < 0``: the successor was stamped before its predecessor's deletion, so a clock
    #: stepped back; reconstructions around it are not reliable.
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

    Check 4.1 (a gap within the bound reads as a supersession) and Check 4.2 (a gap beyond it
    is marked ambiguous: the same records come from an atomic supersession and from a
    delete followed by a later set). The deployment declares the bound; the PostgreSQL
    store declares zero (`notify_pg.stores.records.SUPERSESSION_GAP_BOUND`).

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
    """Run the checks 3.1, 5.1 and 5.2 (see `CheckFailure`) over one principal's stored records.

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
