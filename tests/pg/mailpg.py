"""Helpers of the mail drain tests: an SMTP server on loopback, a clock the tests move, and a
wiki log fed event by event with the worker's mail round run at every instant it wakes."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
from aiosmtpd.controller import Controller
from pgworld import HOST_SCHEMA, SCHEMA

from notify_core.events.log import Event, parse_event
from notify_pg.inbox.fanout import InboxFanOut
from notify_pg.mail.drain import MailDrain, MailDrainConfig
from notify_pg.mail.rounds import MailRound
from notify_pg.mail.smtp import DkimKey, SmtpConfig, SmtpSender
from notify_pg.push.recorder import NullRecorder
from notify_pg.rounds.connection import RoundConnection
from notify_reference_host.wiki import ReferenceWiki
from notify_reference_host.wiki_load import WikiLoader

SECRET = bytes(range(32))
SENDER = "notifications@wiki.example.org"


class Recorder:
    """An aiosmtpd handler that keeps what it receives, or answers DATA with a refusal."""

    def __init__(self) -> None:
        self.received: list[tuple[str, list[str], bytes]] = []
        self.refuse: dict[str, str] = {}  # recipient -> answer to DATA
        self.refused: list[str] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        for rcpt in envelope.rcpt_tos:
            if rcpt in self.refuse:
                self.refused.append(rcpt)
                return self.refuse[rcpt]
        self.received.append((envelope.mail_from, list(envelope.rcpt_tos), envelope.content))
        return "250 OK"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def smtp_server() -> Iterator[tuple[Recorder, int]]:
    """Start an SMTP server on loopback for one test (a fixture's body)."""
    handler = Recorder()
    port = free_port()
    controller = Controller(handler, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield handler, port
    finally:
        controller.stop()


class Clock:
    """The worker's clock, moved by the test."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def drain(
    port: int,
    clock: Clock,
    *,
    dkim_key: DkimKey | None = None,
    people: int | None = 100,
    secret: bytes = SECRET,
    **kwargs: Any,
) -> MailDrain:
    """A drain that sends to the loopback server on ``port`` (signing its unsubscribe tokens
    with ``secret``)."""
    config = SmtpConfig.from_url(f"smtp://127.0.0.1:{port}?timeout=10")
    return MailDrain(
        ReferenceWiki(HOST_SCHEMA),
        lambda: SmtpSender(config, dkim_key=dkim_key),
        secret=lambda conn: secret,
        config=MailDrainConfig(sender=SENDER, people=people),
        schema=SCHEMA,
        clock=clock,
        **kwargs,
    )


def events(lines: Iterable[Mapping[str, Any]]) -> list[Event]:
    """Parse wiki log lines (seq numbered in order)."""
    out = []
    for seq, line in enumerate(lines, 1):
        out.append(parse_event(json.loads(json.dumps({"seq": seq, **line}))))
    return out


def at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


#: A stop event nobody sets: a round run by hand.
NO_STOP = threading.Event()


def mail_round_on(conn: psycopg.Connection[Any], mail: MailDrain, **options: Any) -> MailRound:
    """The drain's round of a worker's loop, run on the test's connection."""
    connection = RoundConnection(lambda: conn, schema=SCHEMA)
    return MailRound(mail, connection, NullRecorder(), **options)


class Run:
    """A worker's life over a wiki log: each event written as a host writes it (emit, then
    the fan-out at once), and the mail round run whenever it wakes before the next event.

    ``wakes`` records every instant the mail round ran.
    """

    def __init__(self, conn: psycopg.Connection[Any], mail_drain: MailDrain, clock: Clock) -> None:
        self.conn = conn
        self.clock = clock
        self.mail_round = mail_round_on(conn, mail_drain, poll=timedelta(days=30))
        self.loader = WikiLoader(
            ReferenceWiki(HOST_SCHEMA),
            InboxFanOut(ReferenceWiki(HOST_SCHEMA), schema=SCHEMA),
            schema=SCHEMA,
        )
        self.wakes: list[datetime] = []

    def _mail_until(self, until: datetime, *, inclusive: bool) -> None:
        while True:
            wake = self.mail_round.next_wake()
            if wake is None:
                wake = self.clock.now
            if wake > until or (wake == until and not inclusive):
                return
            self.clock.now = max(self.clock.now, wake)
            self.wakes.append(self.clock.now)
            self.mail_round.run(NO_STOP)

    def feed(self, log: Sequence[Event]) -> None:
        for event in log:
            # Due work at or before an event's time runs before the event (E4).
            self._mail_until(event.occurred_at, inclusive=True)
            self.clock.now = max(self.clock.now, event.occurred_at)
            seen = len(self.loader.written)
            self.loader.feed(self.conn, event)
            self.mail_round.notice([w.email_after for w in self.loader.written[seen:]])

    def until(self, end: datetime) -> None:
        self._mail_until(end, inclusive=True)
        self.clock.now = max(self.clock.now, end)


def states(conn: psycopg.Connection[Any]) -> list[tuple[Any, ...]]:
    return conn.execute(
        "SELECT user_id, category, email_state, email_after, emailed_at, email_attempts "
        "FROM notify.inbox_entries ORDER BY id"
    ).fetchall()


def run_loader(conn: psycopg.Connection[Any]) -> Callable[[Sequence[Event]], WikiLoader]:
    """Feed a log without any mail round (the drain is driven by hand)."""

    def feed(log: Sequence[Event]) -> WikiLoader:
        wiki = ReferenceWiki(HOST_SCHEMA)
        loader = WikiLoader(wiki, InboxFanOut(wiki, schema=SCHEMA), schema=SCHEMA)
        for event in log:
            loader.feed(conn, event)
        return loader

    return feed
