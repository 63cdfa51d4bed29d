"""The fan-out's claims on outbox events, tied to the claiming session (`InboxFanOut`).

A claim names its worker (``claimed_by``) and the server process of the session that took it
(``claimed_pid``, migration 0018). Another worker takes an event back at once when that
process is gone (its worker was killed, lost its session to the idle-in-transaction timeout,
or the server restarted: ``pg_stat_activity`` no longer lists it), and in any case once the
claim is older than the timeout (the backstop for a session that lives on while its worker
does nothing, e.g. one frozen outside a transaction). A worker takes its own claims again at
once, whatever their session: after a database failure it goes on where it stopped. A stop
between events gives the claims not started back (`OutboxClaims.release`).

Every batch of an event locks its row and checks the claim (`OutboxClaims.hold`), so an event
taken back from a worker that was only slow is never worked by two at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import attrs

from notify_core.events.log import Event
from notify_pg.db.seam import Conn, Seam

__all__ = ["Claimed", "OutboxClaims", "claimed_row"]


@attrs.frozen
class Claimed:
    """A claimed outbox event: its id, the event, a deletion's captured watchers and the
    cursor a fan-out reached (the last candidate done; ``None``: not started)."""

    id: int
    event: Event
    recipients: tuple[str, ...] | None
    cursor: str | None


class OutboxClaims:
    """The claims of one fan-out worker.

    Args:
        seam: the fan-out's queries.
        worker: the worker's name (unique per `InboxFanOut`).
        timeout: a claim older than this is taken again even while its session lives.
        limit: events claimed at once.
    """

    def __init__(self, seam: Seam, worker: str, timeout: timedelta, limit: int) -> None:
        self._seam = seam
        self.worker = worker
        self.timeout = timeout
        self.limit = limit

    def claim(self, conn: Conn) -> list[Claimed]:
        """Claim up to ``limit`` events, oldest first, in one transaction: free ones, this
        worker's own, those of a session that is gone and those older than the timeout."""
        with self._seam.transaction(conn):
            rows = self._seam.all(
                conn,
                "inbox_claim",
                {"worker": self.worker, "timeout": self.timeout, "limit": self.limit},
            )
        return sorted((claimed_row(r) for r in rows), key=lambda c: c.id)

    def hold(self, conn: Conn, event_id: int) -> bool:
        """Lock a claimed event for one batch (in the batch's transaction); ``False``: the
        claim went to another worker."""
        params = {"id": event_id, "worker": self.worker}
        return self._seam.one(conn, "inbox_hold_claim", params) is not None

    def mark(self, conn: Conn, event_id: int, end: str | None) -> None:
        """Record the cursor of a batch, renewing the claim, or (``end`` is ``None``) the
        event done (in the batch's transaction)."""
        if end is None:
            self._seam.run(conn, "inbox_processed", {"id": event_id, "worker": self.worker})
        else:
            self._seam.run(
                conn, "inbox_set_cursor", {"id": event_id, "worker": self.worker, "cursor": end}
            )

    def finish(self, conn: Conn, event_id: int) -> None:
        """Mark an event done that gives nobody anything, in its own transaction."""
        with self._seam.transaction(conn):
            self._seam.run(conn, "inbox_processed", {"id": event_id, "worker": self.worker})

    def release(self, conn: Conn, ids: Sequence[int]) -> int:
        """Give claims back (the cursor stays: a fan-out begun goes on from it); return how
        many were still this worker's."""
        if not ids:
            return 0
        return self._seam.run(conn, "inbox_release", {"ids": list(ids), "worker": self.worker})


def claimed_row(row: tuple[Any, ...]) -> Claimed:
    """Read a row of ``inbox_claim``."""
    id_, type_, origin, actor, payload, recipients, occurred_at, cursor = row
    event = Event(
        seq=int(id_),
        type=type_,
        occurred_at=occurred_at,
        payload=payload,
        actor=actor,
        origin=origin,
    )
    return Claimed(
        id=int(id_),
        event=event,
        recipients=None if recipients is None else tuple(sorted(recipients)),
        cursor=cursor,
    )
