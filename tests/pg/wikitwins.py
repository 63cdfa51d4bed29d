"""The two twins of the inbox store and of the mail queue, driven the same way from a wiki log.

The contract suites (tests/pg/contracts/test_inbox_store_contract.py and
test_mail_queue_contract.py) feed the same `inbox_log.WikiLog` to each twin and compare what
they answer:

- `MemoryInbox`: the replay's `InboxPipeline` over `WikiMemory` and `EntryMemory`, its mail
  queue the store's due heap (`EntryMemory.due`, `next_due`) drained by `drain_mails`;
- `PgInbox`: the reference host's wiki loaded by `WikiLoader` (emit, then the fan-out at
  once), the person's inbox through `InboxReads`, the mail queue through `MailDrain` (claims
  under a lease, marks) with a sender that keeps what it is handed.

Entries are named as a replay names them (``<person>:<group_key>:<n>``) on both twins, so
that their answers compare as they are.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from typing import Any, NamedTuple, Protocol

import psycopg
import pytest
from inbox_log import START, WikiLog
from mailpg import SECRET, SENDER, Clock
from pgworld import HOST_SCHEMA, SCHEMA

from notify_core.events.log import parse_event
from notify_core.inbox.drain import MailPlan
from notify_core.inbox.memory.entries import EntryMemory
from notify_core.inbox.memory.wiki import WikiMemory
from notify_core.inbox.pipeline import InboxPipeline
from notify_core.inbox.ports import Entry
from notify_core.inbox.sending import drain_mails
from notify_core.inbox.view import inbox_summary
from notify_pg.inbox.fanout import InboxFanOut
from notify_pg.inbox.reads import InboxReads
from notify_pg.mail.drain import MailDrain, MailDrainConfig
from notify_pg.mail.smtp import MailSendError, Outgoing
from notify_reference_host.wiki import ReferenceWiki
from notify_reference_host.wiki_load import WikiLoader

#: The sites a contract's logs may create (``s1`` always, `inbox_log.WikiLog`).
SITES = ("s1", "s2")


class Row(NamedTuple):
    """An entry as both twins answer it."""

    name: str
    person: str
    category: str
    group_key: str
    count: int
    variants: tuple[str, ...]
    in_app: bool
    email: str
    email_after: datetime | None
    read: bool


class Mail(NamedTuple):
    """One mail of a drain, or one skip: what became of its entries (E4, E5)."""

    recipient: str
    site: str
    outcome: str  # sent, skipped or failed
    reason: str | None
    template: str | None
    more: int
    entries: tuple[str, ...]


class InboxTwin(Protocol):
    """What a contract asks of a twin."""

    name: str

    def feed(self, log: WikiLog) -> None:
        """Apply the log's events not fed yet, in order."""

    def rows(self) -> list[Row]:
        """Every entry, by name."""

    def unread(self, person: str, site: str = "s1") -> int:
        """The unread count of the person's inbox of a site (H1)."""

    def next_due(self) -> datetime | None:
        """When the next email falls due."""

    def drain(self, at: datetime) -> list[Mail]:
        """Drain the mail queue at ``at``: the mails and skips, by recipient then site."""


class MemoryInbox:
    """The in-memory twin: a replay's inbox pipeline."""

    name = "memory"

    def __init__(self) -> None:
        self.entries = EntryMemory()
        self.wiki = WikiMemory()
        self.pipeline = InboxPipeline(wiki=self.wiki, entries=self.entries)
        self._fed = 0

    def feed(self, log: WikiLog) -> None:
        for obj in log.events[self._fed :]:
            self.pipeline.handle(parse_event(json.loads(json.dumps(obj))))
        self._fed = len(log.events)

    def rows(self) -> list[Row]:
        return sorted(_row(e.id, e) for e in self.entries.entries.values())

    def unread(self, person: str, site: str = "s1") -> int:
        hidden = [s for s in SITES if (info := self.wiki.site(s)) and not info.notifications]
        return inbox_summary(self.entries.entries_of(person), site=site, hidden_sites=hidden).unread

    def next_due(self) -> datetime | None:
        return self.entries.next_due()

    def drain(self, at: datetime) -> list[Mail]:
        return [
            Mail(
                line.recipient,
                line.site,
                "sent" if line.decision == "send" else "skipped",
                None if line.reason is None else line.reason.value,
                line.template,
                line.more,
                tuple(e.id for e in line.entries),
            )
            for line in drain_mails(self.wiki, self.entries, at)
        ]


class KeptSender:
    """A `notify_pg.mail.ports.MailSender` that keeps each message, or refuses those to the
    addresses in ``refuse`` (a permanent refusal, E5)."""

    def __init__(self) -> None:
        self.sent: list[Outgoing] = []
        self.refuse: set[str] = set()

    def send(self, outgoing: Outgoing) -> None:
        if set(outgoing.recipients) & self.refuse:
            raise MailSendError("smtp_rejected", "refused by the test", temporary=False)
        self.sent.append(outgoing)

    def close(self) -> None:
        """Nothing to release."""


class PgInbox:
    """The PostgreSQL twin: the reference host's wiki, the fan-out, the reads and the drain."""

    name = "postgresql"

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.conn = conn
        self.wiki = ReferenceWiki(HOST_SCHEMA)
        self.loader = WikiLoader(self.wiki, InboxFanOut(self.wiki, schema=SCHEMA), schema=SCHEMA)
        self.clock = Clock(START)
        self.sender = KeptSender()
        self._done: list[tuple[MailPlan, str]] = []
        self.mail = MailDrain(
            self.wiki,
            lambda: self.sender,
            secret=lambda conn: SECRET,
            config=MailDrainConfig(sender=SENDER),
            schema=SCHEMA,
            clock=self.clock,
            on_done=lambda now, plan, outcome: self._done.append((plan, outcome)),
        )
        self._fed = 0

    def feed(self, log: WikiLog) -> None:
        for obj in log.events[self._fed :]:
            self.loader.feed(self.conn, parse_event(json.loads(json.dumps(obj))))
        self._fed = len(log.events)

    def _name(self, table_id: int) -> str:
        return self.loader.name_of(table_id)

    def rows(self) -> list[Row]:
        found = self.conn.execute(
            "SELECT id, user_id, category, group_key, count, variants, in_app, email_state, "
            f"email_after, read_at IS NOT NULL FROM {SCHEMA}.inbox_entries"
        ).fetchall()
        return sorted(
            Row(self._name(r[0]), r[1], r[2], r[3], r[4], tuple(r[5]), r[6], r[7], r[8], r[9])
            for r in found
        )

    def unread(self, person: str, site: str = "s1") -> int:
        hidden = [
            s
            for s in SITES
            if (info := self.wiki.inbox_site(self.conn, s)) and not info.notifications
        ]
        reads = InboxReads(SCHEMA)
        return reads.summary(self.conn, person, site=site, hidden_sites=hidden).unread

    def next_due(self) -> datetime | None:
        return self.mail.next_due(self.conn)

    def drain(self, at: datetime) -> list[Mail]:
        self.clock.now = at
        self._done.clear()
        self.mail.drain(self.conn)
        return sorted(
            (
                Mail(
                    plan.recipient,
                    plan.site,
                    outcome,
                    None if plan.skip is None else plan.skip.value,
                    plan.template,
                    plan.more,
                    tuple(self._name(int(e.id)) for e in plan.entries),
                )
                for plan, outcome in self._done
            ),
            key=_by_recipient,
        )


def _by_recipient(mail: Mail) -> tuple[str, str, bool]:
    # A replay's lines come by recipient, then site, the send before the skips; the drain's
    # rounds by claim: compare in the replay's order.
    return (mail.recipient, mail.site, mail.outcome == "skipped")


def _row(name: str, entry: Entry) -> Row:
    state = entry.state
    return Row(
        name,
        entry.person,
        entry.category,
        entry.group_key,
        state.count,
        tuple(state.variants),
        state.in_app,
        state.email.value,
        state.email_after,
        state.read,
    )


def twin_fixture(request: pytest.FixtureRequest) -> Iterator[InboxTwin]:
    """The body of a contract's ``twin`` fixture: the memory twin, or the PostgreSQL one on a
    fresh clone of the template database (asked for only then)."""
    if request.param == "memory":
        yield MemoryInbox()
        return
    conn: psycopg.Connection[Any] = request.getfixturevalue("conn")
    yield PgInbox(conn)


#: The twins a contract runs over (the ``twin`` fixture's params).
TWINS = ["memory", "postgresql"]
