"""One inbox path, two stores: the example wiki log gives the same entries in a replay (in
memory) and on PostgreSQL (the reference host's wiki, emit, the fan-out round, the reads).

With mail never configured, every entry decision of the log (N1-N12, H2: categories, access,
sections, preferences, coalescing, reads, dismissals, renames, deletions with their watchers,
switched-off sites) is compared entry by entry; with mail configured as the log says, the
PostgreSQL mail drain (E4-E5, E3 on a schedule change) also sends the replay's mails, at its
instants, and skips what it skips.
"""

from __future__ import annotations

import email
import email.message
import json
from collections.abc import Callable
from datetime import timedelta
from email import policy
from pathlib import Path
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner
from pgworld import HOST_SCHEMA, SCHEMA

from notify_cli.main import cli
from notify_core.events.log import parse_event
from notify_pg.inbox.fanout import InboxFanOut
from notify_reference_host.wiki import ReferenceWiki
from notify_reference_host.wiki_load import WikiLoader

ROOT = Path(__file__).resolve().parents[3]
LOG = ROOT / "examples" / "wiki-week.jsonl"
#: Issue 25's scenario: two sites, a person deactivated and one removed from the group that
#: lets them read 30 s after an edit, a deny rule after another, a deletion, views of
#: email-only entries, inbox reads and dismissals that must not reach them, deleted comments,
#: a comment edit on a switched-off site (E4, N9, H1, H2, N1, N5).
SCENARIO = ROOT / "tests" / "inbox" / "sites_and_send_time.jsonl"
#: Issue 38: pages renamed, deleted and restored after the events of entries whose mail is
#: still due, on a site with its own link templates and for an hourly digest (N11: a link
#: follows the page while it exists, the snapshot's path once it is deleted).
RENAMES = ROOT / "tests" / "inbox" / "renames_after_events.jsonl"
#: Issue 38 point 1: host categories (N13): the storage sync failure (site scope, candidates
#: by a group's host permission, German strings) and failed sign-ins (instance scope, one entry
#: per account, quiet until read), a preference on a host category, a declaration replaced.
HOST_CATEGORIES = ROOT / "examples" / "host-categories.jsonl"
#: Issue 38: people forgotten (with entries pending, as an actor, twice in a row) and created
#: again (generations 1 and 2 in their tokens), a forgotten person the host still names and
#: adds back to groups and watches (no entry, no mail: inactive), and sites named by the log
#: (one named at creation, one by an update; U1, U3, E6).
FORGOTTEN = ROOT / "tests" / "inbox" / "forgotten_and_site_names.jsonl"
#: Each log with the least entry lines and mails it must give (it exercises the inbox).
LOGS = [
    pytest.param(LOG, 200, 20, id="wiki-week"),
    pytest.param(SCENARIO, 12, 5, id="scenario"),
    pytest.param(RENAMES, 10, 8, id="renames"),
    pytest.param(HOST_CATEGORIES, 12, 4, id="host-categories"),
    pytest.param(FORGOTTEN, 15, 9, id="forgotten"),
]

Line = tuple[Any, ...]


def without_mail(lines: list[str]) -> list[str]:
    """The log with mail never configured (entries only: no drain closes any)."""
    out = []
    for text in lines:
        obj = json.loads(text)
        if obj["type"] == "notifications.settings" and "mail_configured" in obj["payload"]:
            obj["payload"]["mail_configured"] = False
        out.append(json.dumps(obj))
    return out


def replay_entries(log: Path) -> list[Line]:
    result = CliRunner().invoke(cli, ["replay", str(log)])
    assert result.exit_code == 0, result.output
    out = []
    for text in result.stdout.splitlines():
        obj = json.loads(text)
        if obj.get("trigger") != "inbox":
            continue
        out.append(
            (
                obj["seq"],
                obj["recipient"],
                obj["category"],
                obj["group_key"],
                obj["entry"],
                obj["decision"],
                obj["count"],
                obj["in_app"],
                obj["email"],
            )
        )
    return out


@pytest.mark.parametrize(("source", "least", "_mails"), LOGS)
def test_n10_the_wiki_week_gives_the_same_entries_in_a_replay_and_on_postgresql(
    tmp_path: Path,
    db_dsn: str,
    conn: psycopg.Connection[Any],
    source: Path,
    least: int,
    _mails: int,
) -> None:
    """N1-N12 and H2 on both stores: every entry decision of the log, in order, is equal."""
    log = tmp_path / "no-mail.jsonl"
    lines = without_mail(source.read_text().splitlines())
    log.write_text("\n".join(lines) + "\n")
    expected = replay_entries(log)
    assert len(expected) > least  # the log exercises the inbox

    wiki = ReferenceWiki(HOST_SCHEMA)
    loader = WikiLoader(wiki, InboxFanOut(wiki, schema=SCHEMA), schema=SCHEMA)
    got: list[Line] = []
    for text in lines:
        event = parse_event(json.loads(text))
        before = len(loader.written)
        loader.feed(conn, event)
        got.extend(
            sorted(
                (
                    event.seq,
                    w.user_id,
                    w.category,
                    w.group_key,
                    loader.name_of(w.id),
                    "new" if w.inserted else "coalesce",
                    w.count,
                    w.in_app,
                    w.email_state,
                )
                for w in loader.written[before:]
            )
        )
    by_seq: Callable[[Line], tuple[Any, ...]] = lambda line: (line[0], line[1], line[2])  # noqa: E731
    assert sorted(got, key=by_seq) == sorted(expected, key=by_seq)


def replay_lines(log: Path, mail_dir: Path | None = None) -> tuple[list[Line], list[Line]]:
    """The replay's entry decisions and mail lines (sends and skips); with ``mail_dir`` its
    mails written there too."""
    args = ["replay", str(log), "--include-skips"]
    if mail_dir is not None:
        args += ["--mail-dir", str(mail_dir)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    entries, mails = [], []
    for text in result.stdout.splitlines():
        obj = json.loads(text)
        if obj.get("trigger") == "inbox" and obj["decision"] != "skip":
            entries.append(
                (
                    obj["seq"],
                    obj["recipient"],
                    obj["category"],
                    obj["group_key"],
                    obj["entry"],
                    obj["decision"],
                    obj["count"],
                    obj["in_app"],
                    obj["email"],
                )
            )
        elif obj.get("trigger") == "mail":
            mails.append(
                (
                    obj["at"],
                    obj["recipient"],
                    obj["site"],
                    obj["decision"],
                    obj.get("reason"),
                    obj.get("template"),
                    tuple(
                        (e["entry"], e["category"], e["variant"], e["count"])
                        for e in obj["entries"]
                    ),
                    obj.get("more", 0),
                    tuple(obj.get("unsubscribe", ())),
                )
            )
    return entries, mails


def rendered(message: email.message.EmailMessage) -> tuple[str, str, str, str]:
    """What a person reads of a mail: its subject, unsubscribe header and both bodies."""
    text, html = message.get_body(("plain",)), message.get_body(("html",))
    assert text is not None and html is not None
    return (
        str(message["Subject"]),
        str(message["List-Unsubscribe"]),
        text.get_content(),
        html.get_content(),
    )


@pytest.mark.parametrize(("source", "_least", "least_mails"), LOGS)
def test_e4_e5_the_wiki_week_with_mail_gives_the_same_entries_and_mails_on_postgresql(
    db_dsn: str,
    conn: psycopg.Connection[Any],
    tmp_path: Path,
    source: Path,
    _least: int,
    least_mails: int,
) -> None:
    """E4-E5 on both stores: with mail configured, the PostgreSQL drain (run by the worker's
    clock at each instant it wakes, sending to an SMTP server on loopback) sends the replay's
    mails at the replay's instants, skips what it skips (E4 with the person checked again at
    the drain: ``inactive``, ``no_access``), every entry decision is equal, and at the end
    every person's inbox of every site lists the same entries (H1).
    E6: each mail reads the same, word for word (subject, both bodies, the unsubscribe URL):
    the same display names (a neutral word, "via storage sync") and the same links from the
    same templates (the handbook's follow seed 004's routes)."""
    from mailpg import NO_STOP, Clock, drain, mail_round_on, smtp_server

    from notify_cli.replay import _file_part
    from notify_core.inbox.drain import MailPlan
    from notify_core.inbox.mailing import REPLAY_SECRET
    from notify_core.values.instants import format_instant
    from notify_pg.mail.smtp import Outgoing

    mail_dir = tmp_path / "mails"
    mail_dir.mkdir()
    expected_entries, expected_mails = replay_lines(source, mail_dir)
    assert sum(1 for m in expected_mails if m[3] == "send") > least_mails
    server = smtp_server()
    handler, port = next(server)
    try:
        wiki = ReferenceWiki(HOST_SCHEMA)
        loader = WikiLoader(wiki, InboxFanOut(wiki, schema=SCHEMA), schema=SCHEMA)
        mails: list[Line] = []
        sent: list[Outgoing] = []
        texts: dict[str, tuple[str, str, str, str]] = {}

        def record(at: Any, plan: MailPlan, outcome: str) -> None:
            assert outcome != "failed"
            if outcome == "sent":
                # on_sent came first, with this plan's message: the .eml name of the replay
                name = f"{format_instant(at)}-{_file_part(plan.recipient)}-{_file_part(plan.site)}"
                texts[name] = rendered(
                    email.message_from_bytes(sent.pop().message.as_bytes(), policy=policy.default)
                )  # type: ignore[arg-type]
            shown = plan.entries
            mails.append(
                (
                    format_instant(at),
                    plan.recipient,
                    plan.site,
                    "send" if plan.skip is None else "skip",
                    None if plan.skip is None else plan.skip.value,
                    plan.template,
                    tuple(
                        (loader.name_of(int(e.id)), e.category, e.state.variant, e.state.count)
                        for e in shown
                    ),
                    plan.more,
                    plan.unsubscribe,
                )
            )

        events = [parse_event(json.loads(text)) for text in source.read_text().splitlines()]
        clock = Clock(events[0].occurred_at)
        mail_round = mail_round_on(
            conn,
            drain(port, clock, on_done=record, on_sent=sent.append, secret=REPLAY_SECRET),
            poll=timedelta(days=30),
        )

        def mail_until(until: Any) -> None:
            while True:
                wake = mail_round.next_wake() or clock.now
                if wake > until:
                    return
                clock.now = max(clock.now, wake)
                mail_round.run(NO_STOP)

        got: list[Line] = []
        for event in events:
            mail_until(event.occurred_at)  # due work at or before an event runs before it
            clock.now = max(clock.now, event.occurred_at)
            before = len(loader.written)
            loader.feed(conn, event)
            written = loader.written[before:]
            mail_round.notice([w.email_after for w in written])
            if event.type == "user.updated":
                # A schedule change moves due times (E3) behind the round's back: a worker
                # hears of it by its poll; here the round looks again at once.
                mail_round.notice([clock.now])
            got.extend(
                (
                    event.seq,
                    w.user_id,
                    w.category,
                    w.group_key,
                    loader.name_of(w.id),
                    "new" if w.inserted else "coalesce",
                    w.count,
                    w.in_app,
                    w.email_state,
                )
                for w in written
            )
        mail_until(events[-1].occurred_at + timedelta(days=2))
    finally:
        next(server, None)
    by_seq: Callable[[Line], tuple[Any, ...]] = lambda line: (line[0], line[1], line[2])  # noqa: E731
    assert sorted(got, key=by_seq) == sorted(expected_entries, key=by_seq)

    # The mails of one drain instant: by recipient, site, the send first, then skips by reason.
    def order(m: Line) -> tuple[Any, ...]:
        return (m[0], m[1], m[2], m[3] != "send", m[4] or "")

    assert sorted(mails, key=order) == sorted(expected_mails, key=order)
    assert len(handler.received) == sum(1 for m in expected_mails if m[3] == "send")

    # E6: the replay's .eml files and PostgreSQL's mails read the same.
    expected_texts = {}
    for path in mail_dir.iterdir():
        message = email.message_from_bytes(path.read_bytes(), policy=policy.default)
        assert isinstance(message, email.message.EmailMessage)
        expected_texts[path.name.removesuffix(".eml")] = rendered(message)
    assert len(expected_texts) == len(handler.received)
    assert texts == expected_texts
    if source == LOG:
        everything = "\n".join("\n".join(parts) for parts in texts.values())
        # The week names people (Ivo has no name), a sync, and the handbook's routes (a draft:
        # tests/pg/mail/test_mail_text_pg.py).
        for words in (
            "Ben Okafor",
            "Someone",
            "via storage sync",
            "https://handbook.example.org/_api/notifications/unsubscribe?t=",
            "https://handbook.example.org/_profile/notifications",
            "https://docs.example.org/notifications/settings",
            "#comment-",
        ):
            assert words in everything, words
    if source == RENAMES:
        # N11: the links go where the pages are at the drain (the snapshot's path for the
        # page deleted), on both stores alike (compared above).
        everything = "\n".join(parts[2] + parts[3] for parts in texts.values())
        for link in (
            "https://wiki.example.org/ops/run-book#comment-c1",
            "https://wiki.example.org/team/notes#comment-c2",
            "https://wiki.example.org/guides/install#comment-c3",
            "https://docs.example.org/wiki/api/v2/auth",
            "https://wiki.example.org/ops/runbooks/primary#comment-c6",
        ):
            assert link in everything, link
        for gone in ("/ops/runbook#", "/team/old-notes", "/guides/setup#", "/wiki/api/auth"):
            assert gone not in everything, gone
    if source == FORGOTTEN:
        forgotten_mails(texts)
    same_inboxes(source, conn, wiki, loader)


def forgotten_mails(texts: dict[str, tuple[str, str, str, str]]) -> None:
    """U1, U3, E6 on both stores alike (compared above): each mail's token carries its
    recipient's generation, nobody is mailed while forgotten, a forgotten actor is
    "Someone", and the sites are named by the log (the second only once it names it)."""
    from notify_core.inbox.categories import CATEGORY_BY_KEY
    from notify_core.inbox.mailing import REPLAY_SECRET
    from notify_core.mail import verify_unsubscribe_token

    seen = []
    for name, (subject, header, _text, _html) in sorted(texts.items()):
        token = header.split("?t=", 1)[1].rstrip(">")
        found = verify_unsubscribe_token(
            REPLAY_SECRET, token, known_categories=frozenset(CATEGORY_BY_KEY)
        )
        assert found is not None
        seen.append((name[:20], found.person, found.generation, subject))
    ana = [(at, g) for at, person, g, _ in seen if person == "ana"]
    # Generation 0 at first; none while forgotten (09:11:30 to 09:34:05); 1, then 2.
    assert ana == [
        ("2026-12-01T09:04:00Z", 0),
        ("2026-12-01T09:37:25Z", 1),
        ("2026-12-01T09:37:35Z", 1),
        ("2026-12-01T09:47:35Z", 1),
        ("2026-12-01T10:01:05Z", 2),
        ("2026-12-01T10:01:15Z", 2),
        ("2026-12-01T11:02:15Z", 2),
    ]
    cy = [(at, g) for at, person, g, _ in seen if person == "cy"]
    assert cy == [
        ("2026-12-01T09:04:00Z", 0),
        ("2026-12-01T09:25:00Z", 0),
        ("2026-12-01T11:02:15Z", 1),
    ]
    subjects = [subject for *_, subject in seen]
    assert "[Ops Wiki] Someone mentioned you on Runbook" in subjects  # Dee, forgotten
    assert "[Docs Hub] Ben Okafor mentioned you on Auth API" in subjects
    assert all(s.startswith(("[Ops Wiki] ", "[Docs Hub] ")) for s in subjects)


def same_inboxes(
    source: Path, conn: psycopg.Connection[Any], wiki: ReferenceWiki, loader: WikiLoader
) -> None:
    """H1 on both stores: the inbox of every site, of every person with entries (all and
    unread only), and its unread count, as the replay's twin and PostgreSQL answer them."""
    from notify_core.inbox.memory.entries import EntryMemory
    from notify_core.inbox.memory.wiki import WikiMemory
    from notify_core.inbox.view import inbox_list, inbox_summary
    from notify_core.replay.run import Replay
    from notify_pg.inbox.reads import InboxReads

    run = Replay()
    for _ in run.run(source.read_text().splitlines()):
        pass
    store, facts = run.inbox.entries, run.inbox.wiki
    assert isinstance(store, EntryMemory) and isinstance(facts, WikiMemory)
    people = sorted({e.person for e in store.entries.values()})
    sites = sorted({str(e.target.site) for e in store.entries.values() if e.target.site})
    hidden = wiki.sites_off(conn)
    assert sorted(s for s in sites if not (info := facts.site(s)) or not info.notifications) == (
        sorted(s for s in hidden if s in sites)
    )
    reads = InboxReads(SCHEMA)
    for person in people:
        for site in sites:
            for unread_only in (False, True):
                mine = inbox_list(
                    store.entries_of(person),
                    site=site,
                    hidden_sites=hidden,
                    unread_only=unread_only,
                    limit=10_000,
                ).entries
                theirs = reads.list_entries(
                    conn,
                    person,
                    site=site,
                    hidden_sites=hidden,
                    unread_only=unread_only,
                    limit=10_000,
                ).entries
                assert [e.id for e in mine] == [loader.name_of(e.id) for e in theirs], (
                    person,
                    site,
                    unread_only,
                )
            count = inbox_summary(store.entries_of(person), site=site, hidden_sites=hidden)
            summary = reads.summary(conn, person, site=site, hidden_sites=hidden)
            assert (count.unread, count.latest_at) == (summary.unread, summary.latest_at)
