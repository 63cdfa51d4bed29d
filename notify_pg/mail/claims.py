"""The mail drain's claimed rows and its writes to them (`notify_pg.mail.drain`).

A round's writes to the rows it claimed (a mail's mark, a failed send, the release of the
rows it did not try) go through `MailWrites`: when PostgreSQL fails, the write is held and
written first once the database is back. A held mark applies only while its claim's lease
holds (``email_after`` is the lease, an identity rather than a time compared with now), so
after an outage of any length it marks the rows unless another worker claimed them anew.
"""

from __future__ import annotations

import hashlib
import logging
from collections import Counter
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Final, Protocol

import attrs
import psycopg

from notify_core.inbox.coalesce import EmailState, EntryState
from notify_core.inbox.drain import MailPlan
from notify_core.inbox.ports import Entry, EntryTarget
from notify_pg.db.errors import StorageError
from notify_pg.db.seam import Conn, Seam

__all__ = ["DB_ERRORS", "Claimed", "Counts", "MailWrites", "Write", "claimed_row", "message_id"]

_log = logging.getLogger("notify_pg.mail")


@attrs.frozen
class Claimed:
    """A claimed row: its entry, its table id, its comment and its due time before the claim."""

    entry: Entry
    table_id: int
    comment: str | None
    #: The row's due time before the claim (a release puts it back).
    due_at: datetime


@attrs.frozen
class Write:
    """One write of a round (a mark, a failure, a release), held when the database failed
    before it was taken; ``fields``: what its log line adds."""

    query: str
    params: dict[str, Any]
    fields: dict[str, Any] = attrs.field(factory=dict)


#: What a failed database gives: the library's translated error, or psycopg's own from a
#: host's port.
DB_ERRORS: Final = (StorageError, psycopg.Error)


class Counts(Protocol):
    """The counts `MailWrites` keeps up to date."""

    entries: Counter[str]
    released: int


class MailWrites:
    """The writes of a drain to its claimed rows, held over a database failure.

    Args:
        seam: the drain's queries.
        stats: the drain's counts (`notify_pg.mail.drain.MailDrainStats`): the entries of a
            failed send by the state they end in, the rows released.
    """

    def __init__(self, seam: Seam, stats: Counts) -> None:
        self._seam = seam
        self._stats = stats
        self._held: list[Write] = []

    @property
    def held(self) -> int:
        """How many writes wait for the database (marks of mails sent, releases)."""
        return len(self._held)

    def hold(self, write: Write) -> None:
        """Keep a write for when the database is back (it failed before the write)."""
        self._held.append(write)

    def write_held(self, conn: Conn) -> int:
        """Write what the database did not take, in order, in one transaction; return how
        many writes went.

        Raises:
            StorageError: PostgreSQL failed again; everything stays held.
        """
        if not self._held:
            return 0
        held = list(self._held)
        try:
            with self._seam.transaction(conn):
                for write in held:
                    self._run(conn, write)
        except DB_ERRORS:
            _log.warning("mail writes held", extra={"fields": {"held": len(held)}})
            raise
        del self._held[: len(held)]
        _log.info("mail writes done", extra={"fields": {"written": len(held)}})
        return len(held)

    def write(self, conn: Conn, write: Write) -> None:
        """Run one write; on a database failure hold it and raise."""
        try:
            self._run(conn, write)
        except DB_ERRORS:
            self._held.append(write)
            raise

    def _run(self, conn: Conn, write: Write) -> None:
        if write.query == "mail_failed":
            rows = self._seam.all(conn, write.query, write.params)
            states = Counter(str(r[1]) for r in rows)
            self._stats.entries.update(states)
            _log.warning(
                "mail failed",
                extra={
                    "fields": {
                        **write.fields,
                        "entries": len(write.params["ids"]),
                        "retry": states.get("pending", 0),
                        "given_up": states.get("failed", 0),
                    }
                },
            )
            return
        done = self._seam.run(conn, write.query, write.params)
        if write.query == "mail_release":
            self._stats.released += done


def message_id(plan: MailPlan, claimed: Mapping[str, Claimed], sender: str) -> str:
    """The ``Message-ID`` of a mail, from stable ids: the person, the site and each entry
    sent with the last event it holds. A mail sent again (its worker died between the send
    and the mark) keeps its id, so a receiver can tell it is the same mail; an entry that
    took a new event meanwhile makes it another mail."""
    parts = [plan.recipient, plan.site]
    parts += sorted(f"{claimed[e.id].table_id}:{e.state.last_event}" for e in plan.sent)
    digest = hashlib.sha256("\0".join(parts).encode()).hexdigest()
    return f"{digest[:32]}@{sender.rpartition('@')[2] or 'localhost'}"


def claimed_row(row: tuple[Any, ...]) -> Claimed:
    """Read a row of ``mail_claim``."""
    (
        id_,
        user,
        site,
        category,
        variant,
        variants,
        group_key,
        page,
        comment,
        actor,
        title,
        path,
        locale,
        excerpt,
        count,
        last_event,
        in_app,
        _attempts,
        read_at,
        created_at,
        updated_at,
        due_at,
        draft,
        members,
    ) = row
    state = EntryState(
        count=int(count),
        variant=variant,
        variants=tuple(variants),
        email=EmailState.SENDING,
        last_event=str(last_event),
        in_app=bool(in_app),
        updated_at=updated_at.astimezone(UTC),
        actor=actor,
        read=read_at is not None,
    )
    entry = Entry(
        # Zero-padded: the plan orders ties of updated_at by id as text (E4: id descending).
        id=f"{int(id_):020d}",
        person=user,
        category=category,
        group_key=group_key,
        state=state,
        created_at=created_at.astimezone(UTC),
        target=EntryTarget(
            site=site,
            page=page,
            comment=comment,
            title=title,
            path=path,
            locale=locale,
            excerpt=excerpt,
            draft=bool(draft),
            members=tuple(sorted(members.items())) if members else (),
        ),
    )
    return Claimed(entry=entry, table_id=int(id_), comment=comment, due_at=due_at)
