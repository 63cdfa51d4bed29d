"""Entries and coalescing (rules N10-N12, E1) as pure transitions.

A person has at most one unread entry per group key. A new event on it counts one more,
takes the latest variant, actor and event, adds its variant to those seen, and moves the
entry to the top; the same event again changes nothing. The email state follows E1: a new
entry with email on is ``pending``; a coalesce leaves ``pending``, ``sending``, ``sent``,
``failed`` and ``skipped`` as they are and turns ``none`` into ``pending`` when email is now on;
reading cancels a ``pending`` email. An entry that is not in the inbox (``in_app`` false) is
closed as soon as its email is neither ``pending`` nor ``sending`` (N12).
"""

from __future__ import annotations

import enum
from datetime import datetime
from typing import Final

import attrs

from notify_core.values.errors import UsageError
from notify_core.values.instants import require_instant

__all__ = ["OPEN_EMAIL", "EmailState", "EntryState", "coalesce", "mail_done", "read", "transition"]


class EmailState(enum.StrEnum):
    """Where an entry's email stands (E1)."""

    NONE = "none"
    PENDING = "pending"
    SENDING = "sending"
    SENT = "sent"
    FAILED = "failed"
    SKIPPED = "skipped"


#: The states in which an email is still to go (an email-only entry stays open, N12).
OPEN_EMAIL: Final = frozenset({EmailState.PENDING, EmailState.SENDING})


@attrs.frozen(kw_only=True)
class EntryState:
    """What coalescing changes of an entry.

    Args:
        count: how many events reached the person on this entry.
        variant: the latest event's variant.
        variants: the variants seen, in first-seen order, each once.
        email: the email state (E1).
        email_after: when the email is due; present only while ``pending`` or ``sending``.
        last_event: the id of the latest event (idempotency, N10).
        in_app: the person's in-app choice at the latest event (N12).
        updated_at: the latest event's time (the inbox's sort key).
        actor: who acted last.
        read: the entry was read (or closed): it no longer holds its group key.
    """

    count: int
    variant: str
    variants: tuple[str, ...]
    email: EmailState
    last_event: str
    in_app: bool
    updated_at: datetime
    email_after: datetime | None = None
    actor: str | None = None
    read: bool = False

    @property
    def closed_by_email(self) -> bool:
        """An email-only entry whose email has gone (or will not go): closed at once (N12)."""
        return not self.in_app and self.email not in OPEN_EMAIL


def coalesce(
    entry: EntryState | None,
    *,
    event: str,
    variant: str,
    at: datetime,
    in_app: bool,
    email_on: bool,
    email_after: datetime | None,
    actor: str | None = None,
) -> EntryState:
    """Apply one event to a person's unread entry of a key, or start a new entry (N10, E1).

    Args:
        entry: the unread entry of the key, ``None`` when there is none.
        event: the event's id; the entry's ``last_event`` again changes nothing.
        variant: the event's variant.
        at: the event's time (the entry's ``updated_at``).
        in_app: the person's in-app choice now.
        email_on: email reaches the person now (choice, section, N4).
        email_after: when an email started now would be due (``email_after_for``); read
            only when one starts.
        actor: who acted.

    The returned entry is closed (``read``) when it is email-only and its email is neither
    ``pending`` nor ``sending`` (N12).

    Raises:
        UsageError: ``entry`` is read (a read entry gives up its key), or an email starts
            without ``email_after``.
    """
    require_instant(at, "at")
    return transition(entry, event, variant, at, in_app, email_on, email_after, actor)


def transition(
    entry: EntryState | None,
    event: str,
    variant: str,
    at: datetime,
    in_app: bool,
    email_on: bool,
    email_after: datetime | None,
    actor: str | None,
) -> EntryState:
    """`coalesce` with ``at`` already checked: the pipeline checks an event's time once and
    applies it to every recipient (arguments by position, in `coalesce`'s order)."""
    if entry is not None:
        if entry.read:
            raise UsageError("entry_read", "a read entry takes no events: start a new one")
        if entry.last_event == event:
            return entry  # idempotent by event id
        email, due = entry.email, entry.email_after
        if email is EmailState.NONE and email_on:
            email, due = EmailState.PENDING, _due(email_after)
        variants = entry.variants if variant in entry.variants else (*entry.variants, variant)
        new = EntryState(
            count=entry.count + 1,
            variant=variant,
            variants=variants,
            email=email,
            email_after=due,
            last_event=event,
            in_app=in_app,
            updated_at=at,
            actor=actor,
        )
    else:
        email = EmailState.PENDING if email_on else EmailState.NONE
        new = EntryState(
            count=1,
            variant=variant,
            variants=(variant,),
            email=email,
            email_after=_due(email_after) if email_on else None,
            last_event=event,
            in_app=in_app,
            updated_at=at,
            actor=actor,
        )
    if not in_app and new.email not in OPEN_EMAIL:  # closed_by_email, without the call
        return attrs.evolve(new, read=True)
    return new


def _due(email_after: datetime | None) -> datetime:
    if email_after is None:
        raise UsageError("missing_email_after", "an email starts: email_after is required")
    return require_instant(email_after, "email_after")


def read(entry: EntryState) -> EntryState:
    """Mark an entry read: it gives up its key, and a ``pending`` email is cancelled (E1).

    An email already being sent (``sending``) is not recalled; a read entry stays as it is.
    """
    if entry.read:
        return entry
    if entry.email is EmailState.PENDING:
        return attrs.evolve(entry, read=True, email=EmailState.SKIPPED, email_after=None)
    return attrs.evolve(entry, read=True)


def mail_done(entry: EntryState, sent: bool) -> EntryState:
    """Mark an entry's email ``sent`` (or ``skipped`` by the drain, E4); an email-only entry
    closes with it (N12).

    Raises:
        UsageError: the entry's email was not ``pending`` or ``sending``.
    """
    if entry.email not in OPEN_EMAIL:
        raise UsageError("email_not_due", f"an email in state {entry.email} is not due")
    state = EmailState.SENT if sent else EmailState.SKIPPED
    return attrs.evolve(entry, email=state, email_after=None, read=entry.read or not entry.in_app)
