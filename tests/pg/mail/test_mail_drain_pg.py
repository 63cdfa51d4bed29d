"""The mail drain on real PostgreSQL and a real SMTP server on loopback (docs/rules.md E4-E6).

Time is the worker's clock, moved by the tests: a retry 600 s later or a lapsed lease costs no
waiting. The mail round runs only at the instants it wakes (`MailRound.next_wake`).
"""

from __future__ import annotations

import email
import json
import socket
import struct
import threading
import time
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email import policy
from typing import Any

import dkim
import psycopg
import pytest
from aiosmtpd.controller import Controller
from mail_keys import PRIVATE_KEY, PUBLIC_KEY_B64
from mailpg import (
    NO_STOP,
    SECRET,
    SENDER,
    Clock,
    Recorder,
    Run,
    at,
    drain,
    events,
    free_port,
    mail_round_on,
    run_loader,
    smtp_server,
    states,
)
from pgworld import HOST_SCHEMA, SCHEMA

from notify_core.inbox.categories import CATEGORY_BY_KEY
from notify_core.mail import slot_offset, verify_unsubscribe_token
from notify_pg.mail.settings import change_settings
from notify_pg.mail.smtp import DkimKey, Outgoing
from notify_reference_host.wiki import ReferenceWiki

KEY = DkimKey(selector="notify", domain="wiki.example.org", private_key=PRIVATE_KEY)
READ_ALL = [
    {"permission": "read_pages", "match": "all"},
    {"permission": "read_comments", "match": "all"},
]


@pytest.fixture
def server() -> Iterator[tuple[Recorder, int]]:
    yield from smtp_server()


def _dns(name: bytes, timeout: int = 5) -> bytes:
    assert name == b"notify._domainkey.wiki.example.org."
    return b"v=DKIM1; k=rsa; p=" + PUBLIC_KEY_B64.encode()


def world(
    people: list[str], *, schedule: dict[str, Any] | None = None, zone: str = "Europe/Berlin"
) -> list[dict[str, Any]]:
    """Settings, one site, the people (verified addresses) reading everything, pages p1, p2."""
    t = "2026-11-30T08:00:00Z"
    lines: list[dict[str, Any]] = [
        {
            "type": "notifications.settings",
            "occurred_at": t,
            "payload": {"mail_configured": True, "email_delay_s": 180},
        },
        {
            "type": "site.created",
            "occurred_at": t,
            "payload": {
                "site": "s1",
                "host": "wiki.example.org",
                "https": True,
                "time_zone": zone,
            },
        },
        {"type": "group.created", "occurred_at": t, "payload": {"group": "all", "rules": READ_ALL}},
    ]
    for person in people:
        user = {
            "user": person,
            "kind": "human",
            "name": person.capitalize(),  # E6: mails name people by their display name
            "email": f"{person}@example.org",
            "verified": True,
            "locale": "en",
            **(schedule or {}),
        }
        lines += [
            {"type": "user.created", "occurred_at": t, "payload": user},
            {
                "type": "group.member_added",
                "occurred_at": t,
                "payload": {"group": "all", "user": person},
            },
        ]
    for page, title in (("p1", "Runbook"), ("p2", "Deploy notes")):
        lines.append(
            {
                "type": "page.created",
                "occurred_at": t,
                "actor": "bob",
                "payload": {
                    "page": page,
                    "site": "s1",
                    "path": f"ops/{title.split()[0].lower()}",
                    "locale": "en",
                    "title": title,
                },
            }
        )
    return lines


def watch(person: str, page: str = "p1", t: str = "2026-11-30T08:00:00Z") -> dict[str, Any]:
    return {"type": "page.watched", "occurred_at": t, "payload": {"page": page, "user": person}}


def edit(t: datetime | str, page: str = "p1", actor: str = "bob") -> dict[str, Any]:
    when = t if isinstance(t, str) else t.isoformat().replace("+00:00", "Z")
    return {"type": "page.edited", "occurred_at": when, "actor": actor, "payload": {"page": page}}


def parsed(content: bytes) -> email.message.EmailMessage:
    message = email.message_from_bytes(content, policy=policy.default)
    assert isinstance(message, email.message.EmailMessage)
    return message


def date_of(content: bytes) -> datetime:
    return parsed(content)["Date"].datetime.astimezone(UTC)


def test_e5_seed_example_two_mails_at_their_due_times_signed_with_dkim(
    conn: psycopg.Connection[Any], server: tuple[Recorder, int]
) -> None:
    """Seed 004 10.2: Alice watches Runbook, Bob saves it twelve times between 10:00 and 10:40,
    Carol mentions Alice on another page at 10:05: exactly two mails, "Runbook was edited" at
    10:03 and the mention at 10:08, and nothing more about Runbook."""
    handler, port = server
    clock = Clock(at("2026-11-30T08:00:00Z"))
    start = at("2026-11-30T10:00:00Z")
    saves = [edit(start + timedelta(seconds=218 * i)) for i in range(12)]
    mention = {
        "type": "comment.created",
        "occurred_at": "2026-11-30T10:05:00Z",
        "actor": "carol",
        "payload": {
            "comment": "c1",
            "page": "p2",
            "mentions": ["alice"],
            "excerpt": "@alice can you check the deploy steps?",
        },
    }
    log = events([*world(["alice", "bob", "carol"]), watch("alice"), *saves, mention])
    log.sort(key=lambda e: (e.occurred_at, e.seq))
    run = Run(conn, drain(port, clock, dkim_key=KEY), clock)
    run.feed(log)
    run.until(at("2026-11-30T12:00:00Z"))

    assert len(handler.received) == 2
    (from1, to1, first), (from2, to2, second) = handler.received
    assert (from1, to1, from2, to2) == (
        SENDER,
        ["alice@example.org"],
        SENDER,
        ["alice@example.org"],
    )
    assert date_of(first) == at("2026-11-30T10:03:00Z")
    assert date_of(second) == at("2026-11-30T10:08:00Z")
    # The round ran when the mails fell due, not every second (nor every minute).
    assert at("2026-11-30T10:03:00Z") in run.wakes and at("2026-11-30T10:08:00Z") in run.wakes
    assert len(run.wakes) < 40
    for content, category, words in (
        (first, "watched_page", ("Runbook", "edited", "https://wiki.example.org/ops/runbook")),
        # E6 as amended (issue 25): Carol by her display name, never by her id "carol".
        (second, "mention", ("Deploy notes", "Carol", "check the deploy steps")),
    ):
        message = parsed(content)
        for header in ("From", "To", "Subject", "Date", "Message-ID", "MIME-Version"):
            assert message[header], header
        assert message["From"] == SENDER and message["To"] == "alice@example.org"
        assert message["Auto-Submitted"] == "auto-generated"
        assert message["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
        url = message["List-Unsubscribe"]
        prefix = "<https://wiki.example.org/notifications/unsubscribe?t="
        assert url.startswith(prefix) and url.endswith(">")
        found = verify_unsubscribe_token(
            SECRET, url[len(prefix) : -1], known_categories=set(CATEGORY_BY_KEY)
        )
        assert found is not None
        assert (found.person, list(found.categories)) == ("alice", [category])
        text, html = message.get_body(("plain",)), message.get_body(("html",))
        assert text is not None and html is not None
        for word in words:
            assert word in text.get_content() or word in html.get_content(), word
        for person in ("bob", "carol"):  # who acted (the excerpt is the host's own text)
            assert person not in str(message["Subject"]) + text.get_content() + html.get_content()
        # DKIM verifies on the received bytes and covers both List-Unsubscribe headers.
        assert dkim.verify(content, dnsfunc=_dns)
        signature = "".join(str(message["DKIM-Signature"]).split())
        tags = dict(part.split("=", 1) for part in signature.split(";") if part)
        signed = {h.lower() for h in tags["h"].split(":")}
        assert {"list-unsubscribe", "list-unsubscribe-post"} <= signed
    assert "Runbook" in parsed(first)["Subject"]
    rows = conn.execute(
        "SELECT category, count, email_state, emailed_at, email_attempts "
        "FROM notify.inbox_entries WHERE user_id = 'alice' ORDER BY id"
    ).fetchall()
    assert rows == [
        ("watched_page", 12, "sent", at("2026-11-30T10:03:00Z"), 1),
        ("mention", 1, "sent", at("2026-11-30T10:08:00Z"), 1),
    ]


def test_e5_three_451_answers_mark_the_entry_failed_600_s_apart(
    conn: psycopg.Connection[Any], server: tuple[Recorder, int]
) -> None:
    handler, port = server
    handler.refuse["alice@example.org"] = "451 4.3.0 try again later"
    clock = Clock(at("2026-11-30T08:00:00Z"))
    log = events([*world(["alice", "bob"]), watch("alice"), edit("2026-11-30T10:00:00Z")])
    run = Run(conn, drain(port, clock), clock)
    run.feed(log)
    run.until(at("2026-11-30T10:13:00Z"))
    ((_u, _c, state, after, emailed, attempts),) = states(conn)
    assert (state, after, emailed, attempts) == ("pending", at("2026-11-30T10:23:00Z"), None, 2)
    run.until(at("2026-11-30T12:00:00Z"))
    assert handler.refused == ["alice@example.org"] * 3
    assert handler.received == []
    attempts_at = [t for t in run.wakes if t >= at("2026-11-30T10:00:00Z")]
    assert attempts_at[:3] == [
        at("2026-11-30T10:03:00Z"),
        at("2026-11-30T10:13:00Z"),
        at("2026-11-30T10:23:00Z"),
    ]
    assert states(conn) == [
        ("alice", "watched_page", "failed", None, at("2026-11-30T10:23:00Z"), 3)
    ]
    assert run.mail_round.drain.stats.entries["failed"] == 1


def test_e5_one_failing_person_never_stops_the_batch(
    conn: psycopg.Connection[Any], server: tuple[Recorder, int]
) -> None:
    handler, port = server
    handler.refuse["bea@example.org"] = "554 5.7.1 refused"
    people = ["alice", "bea", "bob", "cleo"]
    log = events([*world(people), *(watch(p) for p in people), edit("2026-11-30T10:00:00Z")])
    run_loader(conn)(log)
    clock = Clock(at("2026-11-30T10:03:00Z"))
    mail = drain(port, clock)
    assert mail.drain_once(conn) == 3
    assert sorted(to for _f, (to,), _c in handler.received) == [
        "alice@example.org",
        "cleo@example.org",
    ]
    assert [(s[0], s[2], s[3]) for s in states(conn)] == [
        ("alice", "sent", None),
        ("bea", "pending", at("2026-11-30T10:13:00Z")),
        ("cleo", "sent", None),
    ]


class Unreachable:
    """A loopback port with no SMTP service, counting the connections tried on it.

    ``refused``: nothing listens (the connection is refused; attempts are counted where
    smtplib opens its socket). ``closed``: a listener accepts and resets the connection at
    once, before any greeting (counted by the listener).
    """

    def __init__(self, kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
        self.attempts = 0
        self._listener: socket.socket | None = None
        if kind == "refused":
            self.port = free_port()
            create = socket.create_connection

            def counting(address: Any, *args: Any, **kwargs: Any) -> socket.socket:
                if address[1] == self.port:
                    self.attempts += 1
                return create(address, *args, **kwargs)

            monkeypatch.setattr(socket, "create_connection", counting)
            return
        listener = self._listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        self.port = int(listener.getsockname()[1])
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        assert self._listener is not None
        while True:
            try:
                client, _address = self._listener.accept()
            except OSError:  # closed by stop()
                return
            self.attempts += 1
            # Closed with a reset: no TIME_WAIT keeps the port from the server started later.
            client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            client.close()

    def stop(self) -> None:
        if self._listener is not None:
            # shutdown() wakes the blocked accept(): close() alone leaves the port listening.
            self._listener.shutdown(socket.SHUT_RDWR)
            self._listener.close()


@pytest.mark.parametrize("kind", ["refused", "closed"])
def test_e5_an_unreachable_smtp_server_stops_the_round_after_one_connection_attempt(
    conn: psycopg.Connection[Any], kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the server down, a round tries one connection (not one per person): that mail
    failed (E5: 600 s later), the others go back to pending at their due time with no attempt
    counted; the round backs off; once the server is back every entry goes exactly once."""
    people = ["alice", "bea", "bob", "cleo", "dan"]
    recipients = [p for p in people if p != "bob"]
    log = events([*world(people), *(watch(p) for p in people), edit("2026-11-30T10:00:00Z")])
    run_loader(conn)(log)
    due = at("2026-11-30T10:03:00Z")
    clock = Clock(due)
    down = Unreachable(kind, monkeypatch)
    try:
        mail_round = mail_round_on(
            conn,
            drain(down.port, clock),
            poll=timedelta(minutes=5),
            backoff=timedelta(seconds=5),
        )
        assert mail_round.run(NO_STOP) == 4
        assert down.attempts == 1
        mail = mail_round.drain
        assert (mail.unreachable, mail.stats.unreachable, mail.stats.released) == (True, 1, 3)
        rows = states(conn)
        assert [r[2] for r in rows] == ["pending"] * 4
        tried = [r for r in rows if r[5] == 1]
        assert [(r[3], r[5]) for r in tried] == [(at("2026-11-30T10:13:00Z"), 1)]
        assert sorted((r[3], r[5]) for r in rows if r not in tried) == [(due, 0)] * 3
        # The backoff doubles while the server stays down, one connection attempt a round.
        assert mail_round.next_wake() == due + timedelta(seconds=5)
        clock.now = due + timedelta(seconds=4)
        assert mail_round.run(NO_STOP) == 0
        assert down.attempts == 1
        clock.now = due + timedelta(seconds=5)
        assert mail_round.run(NO_STOP) == 3
        assert down.attempts == 2
        assert mail_round.next_wake() == clock.now + timedelta(seconds=10)
        assert sum(1 for r in states(conn) if r[5] == 1) == 2
        # drain() stops too: one attempt, not a round per released row.
        clock.now = due + timedelta(seconds=15)
        assert mail.drain(conn) == 2
        assert down.attempts == 3
    finally:
        down.stop()
    # The server is back on that port: every entry goes once, none is lost.
    handler = Recorder()
    controller = Controller(handler, hostname="127.0.0.1", port=down.port)
    controller.start()
    try:
        clock.now = at("2026-11-30T11:00:00Z")
        mail_round.drain.drain(conn)
    finally:
        controller.stop()
    assert sorted(to for _f, (to,), _c in handler.received) == [
        f"{p}@example.org" for p in recipients
    ]
    assert [r[2] for r in states(conn)] == ["sent"] * 4
    assert sorted(r[5] for r in states(conn)) == [1, 2, 2, 2]


class Crash(Exception):
    """A worker dying between its send and its mark."""


def test_e5_a_worker_killed_between_send_and_mark_sends_again_after_the_lease(
    conn: psycopg.Connection[Any], connect: Any, server: tuple[Recorder, int]
) -> None:
    handler, port = server
    log = events([*world(["alice", "bob"]), watch("alice"), edit("2026-11-30T10:00:00Z")])
    run_loader(conn)(log)
    clock = Clock(at("2026-11-30T10:03:00Z"))

    def die(outgoing: Outgoing) -> None:
        raise Crash

    with pytest.raises(Crash):
        drain(port, clock, on_sent=die).drain_once(connect())
    assert len(handler.received) == 1
    ((_u, _c, state, lease, _e, attempts),) = states(conn)
    assert (state, lease, attempts) == ("sending", at("2026-11-30T10:13:00Z"), 1)
    # While the lease holds nobody sends it again; after it, another worker does.
    other = drain(port, clock)
    clock.now = at("2026-11-30T10:12:59Z")
    assert other.drain_once(conn) == 0 and len(handler.received) == 1
    clock.now = at("2026-11-30T10:13:00Z")
    assert other.drain_once(conn) == 1
    assert len(handler.received) == 2
    assert [s[2:5] for s in states(conn)] == [("sent", None, at("2026-11-30T10:13:00Z"))]


def test_e5_a_mark_after_the_lease_was_taken_over_changes_nothing(
    conn: psycopg.Connection[Any], connect: Any, server: tuple[Recorder, int]
) -> None:
    """A worker paused after its send past the lease: another claims and sends; the first
    worker's late mark finds the row claimed anew and leaves it alone."""
    handler, port = server
    log = events([*world(["alice", "bob"]), watch("alice"), edit("2026-11-30T10:00:00Z")])
    run_loader(conn)(log)
    clock = Clock(at("2026-11-30T10:03:00Z"))
    other_clock = Clock(at("2026-11-30T10:14:00Z"))
    other = drain(port, other_clock)
    other_conn = connect()
    taken: list[int] = []

    def pause(outgoing: Outgoing) -> None:
        # The first worker stalls here until the second one has claimed and sent anew.
        taken.append(other.drain_once(other_conn))
        clock.now = at("2026-11-30T10:15:00Z")

    first = drain(port, clock, on_sent=pause)
    assert first.drain_once(conn) == 1
    assert taken == [1]
    assert len(handler.received) == 2
    assert [s[2:6] for s in states(conn)] == [("sent", None, at("2026-11-30T10:14:00Z"), 2)]


def test_e5_two_workers_draining_at_once_never_send_an_entry_twice(
    conn: psycopg.Connection[Any], connect: Any, server: tuple[Recorder, int]
) -> None:
    handler, port = server
    people = [f"p{i:03d}" for i in range(60)]
    log = events(
        [
            *world(["bob", *people]),
            *(watch(p) for p in people),
            edit("2026-11-30T10:00:00Z"),
            edit("2026-11-30T10:00:00Z", page="p2"),
            *(watch(p, "p2", "2026-11-30T09:00:00Z") for p in people[::2]),
        ]
    )
    log.sort(key=lambda e: (e.occurred_at, e.seq))
    run_loader(conn)(log)
    clock = Clock(at("2026-11-30T10:03:00Z"))
    # Each worker, after its first send, waits for the other to send once: both take part.
    sent = [threading.Event(), threading.Event()]

    def hook(i: int) -> Any:
        def after_send(outgoing: Outgoing) -> None:
            sent[i].set()
            sent[1 - i].wait(10)

        return after_send

    drains = [drain(port, clock, people=4, on_sent=hook(i)) for i in range(2)]
    conns = [connect(), connect()]
    barrier = threading.Barrier(2)
    done: list[int] = []
    errors: list[BaseException] = []

    def work(i: int) -> None:
        # A drain that finds every due row claimed by the other worker returns 0 (SKIP LOCKED):
        # under load that can happen before the other commits its claim, so each worker
        # drains again until all 90 rows are taken.
        try:
            barrier.wait()
            deadline = time.monotonic() + 60
            while sum(done) < 90 and time.monotonic() < deadline:
                done.append(drains[i].drain(conns[i]))
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    assert sum(done) == 90  # 60 watchers of p1, 30 of them watch p2 too
    # One mail per person (the p2 watchers get a digest of both pages), never two.
    per_person = Counter(to for _f, (to,), _c in handler.received)
    assert per_person == Counter(f"{p}@example.org" for p in people)
    assert all(d.stats.claimed for d in drains)  # both workers took part
    assert {s[2] for s in states(conn)} == {"sent"}
    bodies = [parsed(c).get_body(("plain",)) for _f, _t, c in handler.received]
    texts = [b.get_content() for b in bodies if b is not None]
    assert sum("Runbook" in t and "Deploy notes" in t for t in texts) == 30


def test_e2_e5_a_daily_digest_across_the_spring_change_goes_once_at_the_local_hour(
    conn: psycopg.Connection[Any], server: tuple[Recorder, int]
) -> None:
    """Berlin springs forward on 2026-03-29 at 01:00 UTC. Alice takes a daily digest at 08:00:
    edits before and after the change go in one digest at 08:00 CEST (06:00 UTC) plus her
    offset, not at 07:00 UTC."""
    handler, port = server
    clock = Clock(at("2026-03-28T08:00:00Z"))
    lines = world(["alice", "bob"], schedule={"email_schedule": "daily", "daily_hour": 8})
    for line in lines:
        line["occurred_at"] = "2026-03-28T08:00:00Z"
    log = events(
        [
            *lines,
            watch("alice", "p1", "2026-03-28T08:00:00Z"),
            watch("alice", "p2", "2026-03-28T08:00:00Z"),
            edit("2026-03-28T20:00:00Z", "p1"),
            edit("2026-03-29T00:30:00Z", "p1"),
            edit("2026-03-29T01:30:00Z", "p2"),
        ]
    )
    run = Run(conn, drain(port, clock), clock)
    run.feed(log)
    run.until(at("2026-03-30T12:00:00Z"))
    ((_f, (to,), content),) = handler.received
    due = at("2026-03-29T06:00:00Z") + timedelta(seconds=slot_offset("alice"))
    assert to == "alice@example.org" and date_of(content) == due
    assert parsed(content)["Date"].datetime.astimezone(UTC) == due
    text = parsed(content).get_body(("plain",))
    assert text is not None and "Runbook" in text.get_content()
    assert "Deploy notes" in text.get_content()
    assert [s[2] for s in states(conn)] == ["sent", "sent"]


def test_e5_nothing_due_claims_nothing_and_the_round_sleeps_until_the_next_due(
    conn: psycopg.Connection[Any], server: tuple[Recorder, int]
) -> None:
    _handler, port = server
    log = events([*world(["alice", "bob"]), watch("alice"), edit("2026-11-30T10:00:00Z")])
    run_loader(conn)(log)
    clock = Clock(at("2026-11-30T10:01:00Z"))
    mail_round = mail_round_on(conn, drain(port, clock), poll=timedelta(minutes=5))
    assert mail_round.run(NO_STOP) == 0
    assert mail_round.next_wake() == at("2026-11-30T10:03:00Z")
    clock.now = at("2026-11-30T10:02:59Z")
    assert mail_round.run(NO_STOP) == 0  # not due yet: no query at all
    clock.now = at("2026-11-30T10:03:00Z")
    assert mail_round.run(NO_STOP) == 1
    assert mail_round.next_wake() == at("2026-11-30T10:08:00Z")  # the poll: nothing pending


def test_e5_an_open_claim_locks_only_the_people_it_takes(
    conn: psycopg.Connection[Any], connect: Any
) -> None:
    """While one worker's claim is open, another claims the next people, never the same."""
    from notify_pg.db.seam import Seam

    people = [f"p{i:03d}" for i in range(12)]
    run_loader(conn)(
        events(
            [*world(["bob", *people]), *(watch(p) for p in people), edit("2026-11-30T10:00:00Z")]
        )
    )
    seam = Seam("notify_pg", "notify")
    params = {
        "now": at("2026-11-30T10:03:00Z"),
        "lease_until": at("2026-11-30T10:13:00Z"),
        "people": 4,
        "lock": "notify_mail:notify",
    }
    first, second = connect(), connect()
    with first.transaction():
        taken = {r[1] for r in seam.all(first, "mail_claim", params)}
        locks = first.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()"
        ).fetchone()
        assert locks == (4,)
        other = {r[1] for r in seam.all(second, "mail_claim", params)}
    assert taken == set(people[:4]) and other == set(people[4:8])


def test_e5_notify_worker_once_drains_the_mail_queue_over_smtp_with_dkim(
    conn: psycopg.Connection[Any], db_dsn: str, server: tuple[Recorder, int], tmp_path: Any
) -> None:
    from click.testing import CliRunner

    from notify_cli.main import cli

    handler, port = server
    log = events([*world(["alice", "bob"]), watch("alice"), edit("2026-11-30T10:00:00Z")])
    run_loader(conn)(log)
    key = tmp_path / "dkim.pem"
    key.write_bytes(PRIVATE_KEY)
    args = ["worker", "--dsn", db_dsn, "--once", "--smtp-url", f"smtp://127.0.0.1:{port}"]
    args += ["--mail-from", SENDER, "--dkim-key", str(key), "--dkim-selector", "notify"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    ((_f, (to,), content),) = handler.received
    assert to == "alice@example.org" and dkim.verify(content, dnsfunc=_dns)
    assert [s[2] for s in states(conn)] == ["sent"]
    # Signed with the instance's stored secret (U1), which the log never shows.
    stored = conn.execute("SELECT secret FROM notify.unsubscribe_secret").fetchone()
    assert stored is not None
    url = parsed(content)["List-Unsubscribe"].split("t=", 1)[1].rstrip(">")
    found = verify_unsubscribe_token(bytes(stored[0]), url, known_categories=set(CATEGORY_BY_KEY))
    assert found is not None and found.person == "alice"
    assert bytes(stored[0]).hex() not in result.output
    lines = [json.loads(line) for line in result.stderr.splitlines()]
    assert any(line["msg"] == "mail round" for line in lines)
    assert "alice" not in result.stderr


def test_notify_worker_bad_mail_options_are_one_line_and_exit_2(db_dsn: str, tmp_path: Any) -> None:
    from click.testing import CliRunner

    from notify_cli.main import cli

    bad_key = tmp_path / "bad.pem"
    bad_key.write_bytes(b"not a key")
    base = ["worker", "--dsn", db_dsn, "--once"]
    url = ["--smtp-url", "smtp://127.0.0.1:2525"]
    cases = [
        (url, "--smtp-url needs --mail-from"),
        (["--mail-from", SENDER], "need --smtp-url"),
        (["--smtp-url", "http://x", "--mail-from", SENDER], "--smtp-url: bad SMTP URL"),
        ([*url, "--mail-from", "no address"], "--mail-from 'no address'"),
        (
            [*url, "--mail-from", SENDER, "--dkim-selector", "s", "--dkim-key", "/no/key.pem"],
            "cannot read",
        ),
        ([*url, "--mail-from", SENDER, "--dkim-key", str(bad_key)], "--dkim-key needs"),
        (
            [*url, "--mail-from", SENDER, "--dkim-key", str(bad_key), "--dkim-selector", "s"],
            "bad.pem: bad DKIM private key: not an unencrypted PEM private key",
        ),
        ([*url, "--mail-from", SENDER, "--dkim-selector", "s"], "need --dkim-key"),
    ]
    for extra, message in cases:
        result = CliRunner().invoke(cli, [*base, *extra])
        assert result.exit_code == 2, (extra, result.output)
        assert message in result.stderr, (extra, result.stderr)
        assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.output


def test_notify_worker_names_why_a_dkim_key_is_refused(tmp_path: Any) -> None:
    """A refused --dkim-key says which file and what is wrong with it, on one line, exit 2
    (the database is never reached: the options are checked first)."""
    from click.testing import CliRunner
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    from notify_cli.main import cli

    ec_key = ec.generate_private_key(ec.SECP256R1())
    keys = {
        "garbage.pem": (b"not a key", "not an unencrypted PEM private key"),
        "ec.pem": (
            ec_key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            ),
            "neither RSA nor Ed25519",
        ),
        "locked.pem": (
            ec_key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.BestAvailableEncryption(b"secret"),
            ),
            "not an unencrypted PEM private key",
        ),
    }
    for name, (pem, reason) in keys.items():
        path = tmp_path / name
        path.write_bytes(pem)
        result = CliRunner().invoke(
            cli,
            [
                "worker",
                "--dsn",
                "postgresql://127.0.0.1:1/never",
                "--once",
                "--smtp-url",
                "smtp://127.0.0.1:2525",
                "--mail-from",
                SENDER,
                "--dkim-selector",
                "s",
                "--dkim-key",
                str(path),
            ],
        )
        assert result.exit_code == 2, (name, result.output)
        assert result.stderr.strip() == f"notify: --dkim-key {path}: bad DKIM private key: {reason}"
        assert "Traceback" not in result.output and "PRIVATE KEY" not in result.output


def test_e5_db_status_shows_outbox_backlog_and_the_mail_queue(
    conn: psycopg.Connection[Any], db_dsn: str, server: tuple[Recorder, int]
) -> None:
    from click.testing import CliRunner

    from notify_cli.main import cli
    from notify_pg.inbox.reads import emit

    handler, port = server
    handler.refuse["bea@example.org"] = "451 4.3.0 later"
    now = datetime.now(UTC).replace(microsecond=0)
    lines = world(["alice", "bea", "bob", "cleo"])
    two_hours_ago = (now - timedelta(hours=2)).isoformat().replace("+00:00", "Z")
    for line in lines:
        line["occurred_at"] = two_hours_ago
    log = events(
        [
            *lines,
            *(watch(p, t=two_hours_ago) for p in ("alice", "bea", "cleo")),
            edit(now - timedelta(hours=1)),
            edit(now - timedelta(hours=1), page="p2"),
        ]
    )
    run_loader(conn)(log)
    # cleo: due in an hour.
    conn.execute(
        "UPDATE notify.inbox_entries SET email_after = %s WHERE user_id = 'cleo'",
        [now + timedelta(hours=1)],
    )
    clock = Clock(now)
    mail = drain(port, clock)
    for _ in range(3):  # bea's three refused attempts, 600 s apart
        mail.drain_once(conn)
        clock.now += timedelta(seconds=600)
    # An event not fanned out yet: the outbox's backlog.
    emit(conn, "page.edited", {"page": "p1"}, actor="bob", occurred_at=now)
    result = CliRunner().invoke(cli, ["db", "status", "--dsn", db_dsn])
    assert result.exit_code == 0, result.output
    inbox = json.loads(result.stdout)["inbox"]
    assert inbox["outbox"]["backlog"] == 1 and inbox["outbox"]["oldest_age_s"] >= 0
    assert inbox["email"] == {
        "pending": 1,
        "due": 0,
        "sending": 0,
        "next_due_at": (now + timedelta(hours=1)).isoformat().replace("+00:00", "Z"),
        "sent_24h": 1,
        "failed_24h": 1,
        "skipped_24h": {},
    }
    assert inbox["mail_configured"] is True
    other = CliRunner().invoke(cli, ["db", "status", "--dsn", db_dsn, "--host-schema", "none"])
    assert other.exit_code == 0 and "mail_configured" not in json.loads(other.stdout)["inbox"]


def test_e3_a_schedule_change_moves_pending_digest_emails_on_postgresql(
    conn: psycopg.Connection[Any],
) -> None:
    """Daily at 08:00 to immediate at 10:02: the page's pending digest email is due at 10:05
    (the change's time plus the delay); the mention (never a digest) keeps 10:04."""
    log = events(
        [
            *world(["alice", "bob"], schedule={"email_schedule": "daily", "daily_hour": 8}),
            watch("alice"),
            edit("2026-11-30T10:00:00Z"),
            {
                "type": "comment.created",
                "occurred_at": "2026-11-30T10:01:00Z",
                "actor": "bob",
                "payload": {"comment": "c1", "page": "p2", "mentions": ["alice"]},
            },
        ]
    )
    run_loader(conn)(log)
    daily = at("2026-12-01T07:00:00Z") + timedelta(seconds=slot_offset("alice"))
    assert [(s[1], s[3]) for s in states(conn)] == [
        ("watched_page", daily),
        ("mention", at("2026-11-30T10:04:00Z")),
    ]
    change = {
        "type": "user.updated",
        "occurred_at": "2026-11-30T10:02:00Z",
        "payload": {"user": "alice", "email_schedule": "immediate", "unset": ["daily_hour"]},
    }
    run_loader(conn)(events([*world([]), change])[-1:])
    assert [(s[1], s[3]) for s in states(conn)] == [
        ("watched_page", at("2026-11-30T10:05:00Z")),
        ("mention", at("2026-11-30T10:04:00Z")),
    ]


def test_e5_the_worker_sleeps_until_the_next_email_falls_due_not_its_poll_interval(
    conn: psycopg.Connection[Any], db_dsn: str, server: tuple[Recorder, int]
) -> None:
    """A worker polling every 60 s wakes for a mail due 1 s from now: the mail round's
    ``next_wake`` cuts the idle pause short."""
    import time

    from pgworld import HOST_SCHEMA

    from notify_pg.mail.rounds import MailRound
    from notify_pg.push.recorder import NullRecorder
    from notify_pg.push.worker import Worker, WorkerConfig, worker_connection
    from notify_reference_host import ReferenceHost

    handler, port = server
    log = events([*world(["alice", "bob"]), watch("alice"), edit("2026-11-30T10:00:00Z")])
    run_loader(conn)(log)
    conn.execute("UPDATE notify.inbox_entries SET email_after = now() + interval '1 second'")
    config = WorkerConfig(poll_interval=timedelta(seconds=60))
    connection = worker_connection(lambda: psycopg.connect(db_dsn, autocommit=True), config)
    mail = drain(port, lambda: datetime.now(UTC))
    mail_round = MailRound(mail, connection, NullRecorder(), poll=timedelta(seconds=60))
    worker = Worker(connection, ReferenceHost(HOST_SCHEMA), config=config, rounds=[mail_round])
    stop = threading.Event()
    thread = threading.Thread(target=worker.run, args=(stop,))
    started = time.monotonic()
    thread.start()
    try:
        while not handler.received and time.monotonic() - started < 30:
            time.sleep(0.05)
    finally:
        stop.set()
        thread.join(30)
    assert len(handler.received) == 1
    assert time.monotonic() - started < 30  # long before the worker's 60 s poll
    assert [s[2] for s in states(conn)] == ["sent"]


def test_e5_a_worker_process_killed_after_its_send_never_loses_the_entry(
    conn: psycopg.Connection[Any], db_dsn: str, server: tuple[Recorder, int]
) -> None:
    """A real process ends (``os._exit``) right after the SMTP server accepted its mail, before
    the mark: the row stays ``sending`` under its lease, and once the lease ends another
    worker sends it again and marks it (at least once, never lost)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    handler, port = server
    log = events([*world(["alice", "bob"]), watch("alice"), edit("2026-11-30T10:00:00Z")])
    run_loader(conn)(log)
    here = Path(__file__).resolve().parents[1]
    script = (
        "import os, sys, psycopg\n"
        f"sys.path[:0] = [{str(here)!r}, {str(here.parent)!r}]\n"
        "from mailpg import Clock, at, drain\n"
        f"mail = drain({port}, Clock(at('2026-11-30T10:03:00Z')), on_sent=lambda o: os._exit(9))\n"
        f"mail.drain_once(psycopg.connect({db_dsn!r}, autocommit=True))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, timeout=60, env=dict(os.environ)
    )
    assert done.returncode == 9, done.stderr.decode()
    assert len(handler.received) == 1
    ((_u, _c, state, lease, _e, attempts),) = states(conn)
    assert (state, lease, attempts) == ("sending", at("2026-11-30T10:13:00Z"), 1)
    clock = Clock(at("2026-11-30T10:13:00Z"))
    assert drain(port, clock).drain_once(conn) == 1
    assert len(handler.received) == 2
    assert [s[2:6] for s in states(conn)] == [("sent", None, at("2026-11-30T10:13:00Z"), 2)]


def test_h2a_the_instance_mail_batch_size_an_administrator_sets_is_the_drain_batch(
    conn: psycopg.Connection[Any], server: tuple[Recorder, int]
) -> None:
    """Without ``--mail-batch`` the drain claims the instance's ``mail_batch_size`` people a
    round, read anew each round."""
    _handler, port = server
    people = ["alice", "bea", "bob", "cleo"]
    log = events([*world(people), *(watch(p) for p in people), edit("2026-11-30T10:00:00Z")])
    run_loader(conn)(log)
    wiki = ReferenceWiki(HOST_SCHEMA)
    change_settings(conn, wiki, {"mail_batch_size": 1}, actor="admin", schema=SCHEMA)
    mail = drain(port, Clock(at("2026-11-30T10:03:00Z")), people=None)
    assert mail.drain_once(conn) == 1  # three watchers are due (bob edited), one a round
    change_settings(conn, wiki, {"mail_batch_size": 1000}, actor="admin", schema=SCHEMA)
    assert mail.drain_once(conn) == 2
