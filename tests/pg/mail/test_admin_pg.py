"""A person's preference grid and the instance's settings on real PostgreSQL, read and changed
through the framework-neutral handlers of notify_pg.http.admin, every change audited in its
own transaction (docs/rules.md H2, H2a, E3, N4), and a forgotten person's token (U3)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from pgworld import HOST_SCHEMA, SCHEMA

from notify_core.inbox.categories import CATEGORIES
from notify_core.mail import unsubscribe_token
from notify_core.values.errors import InvalidInput
from notify_pg import forget_person, forgotten
from notify_pg import http as h
from notify_pg.inbox.fanout import InboxFanOut
from notify_pg.inbox.reads import InboxPreferences, emit, purge
from notify_pg.mail.secret import unsubscribe_secret
from notify_pg.mail.settings import (
    audit_log,
    change_preferences,
    change_settings,
    lock_retention,
)
from notify_pg.mail.unsubscribe import audited_unsubscribes
from notify_reference_host.wiki import ReferenceWiki

Conn = psycopg.Connection[Any]
T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
JSON = "application/json"
READ_ALL = [
    {"permission": "read_pages", "match": "all"},
    {"permission": "read_comments", "match": "all"},
]


@pytest.fixture
def wiki(conn: Conn) -> ReferenceWiki:
    """Ana (verified address) and bob (no address) on one site; mail is configured."""
    w = ReferenceWiki(HOST_SCHEMA)
    with conn.transaction():
        w.add_site(conn, "s1", host="wiki.example")
        w.add_group(conn, "readers", READ_ALL)
        w.add_user(conn, "ana", email="ana@example.org", verified=True)
        w.add_user(conn, "bob")
        for person in ("ana", "bob"):
            w.add_member(conn, "readers", person)
        w.add_page(conn, "p1", "s1", "/docs/start", title="Start")
        w.watch(conn, "p1", "ana")
        w.set_settings(conn, mail_configured=True)
    return w


def body(answer: h.Response, status: int = 200) -> Any:
    assert answer.status == status, answer.body
    assert answer.header("Content-Type") == "application/json"
    return json.loads(answer.body)


def patch_prefs(conn: Conn, wiki: ReferenceWiki, change: object, user: str = "ana") -> h.Response:
    raw = change if isinstance(change, bytes) else json.dumps(change).encode()
    return h.preferences_patch(conn, wiki, user, content_type=JSON, body=raw, at=T0, schema=SCHEMA)


def patch_settings(conn: Conn, wiki: ReferenceWiki, change: object) -> h.Response:
    raw = change if isinstance(change, bytes) else json.dumps(change).encode()
    return h.settings_patch(conn, wiki, "root", content_type=JSON, body=raw, at=T0, schema=SCHEMA)


def audits(conn: Conn, **kwargs: Any) -> list[tuple[str, str, Any, Any]]:
    rows = reversed(audit_log(conn, schema=SCHEMA, **kwargs))
    return [(r.actor, r.subject, dict(r.before), dict(r.after)) for r in rows]


def test_h2a_the_grid_names_every_category_and_channel_with_defaults_and_n4(
    conn: Conn, wiki: ReferenceWiki
) -> None:
    InboxPreferences(SCHEMA).set(conn, "ana", "page_created", "email", True)
    grid = body(h.preferences_get(conn, wiki, "ana", schema=SCHEMA))
    assert grid["email_available"] is True
    assert grid["email_schedule"] == "immediate" and "daily_hour" not in grid
    assert [c["category"] for c in grid["categories"]] == [c.key for c in CATEGORIES]
    rows = {c["category"]: c for c in grid["categories"]}
    assert rows["page_created"]["email"] == {
        "enabled": True,
        "default": False,
        "own": True,
        "effective": True,
    }
    assert rows["page_created"]["in_app"] == {
        "enabled": False,
        "default": False,
        "own": False,
        "effective": False,
    }
    assert rows["mention"]["section"] == "discussions"
    assert rows["mention"]["section_delivers"] == "email"
    # N4: bob has no address, so every email choice reads as off while in-app is unaffected.
    bob_grid = body(h.preferences_get(conn, wiki, "bob", schema=SCHEMA))
    assert bob_grid["email_available"] is False
    bob = {c["category"]: c for c in bob_grid["categories"]}
    assert bob["mention"]["email"]["enabled"] is True
    assert bob["mention"]["email"]["effective"] is False
    assert bob["mention"]["in_app"]["effective"] is True
    # A section that delivers in-app only: the choice stays, email is not effective.
    change_settings(conn, wiki, {"sections": {"discussions": "in_app"}}, actor="root")
    rows = {c["category"]: c for c in body(h.preferences_get(conn, wiki, "ana"))["categories"]}
    assert rows["mention"]["section_delivers"] == "in_app"
    assert rows["mention"]["email"]["enabled"] is True
    assert rows["mention"]["email"]["effective"] is False


def test_h2_a_change_member_by_member_writes_one_audit_row_and_a_repeat_none(
    conn: Conn, wiki: ReferenceWiki
) -> None:
    change = {"categories": {"mention": {"email": False}, "page_created": {"in_app": True}}}
    grid = body(patch_prefs(conn, wiki, change))
    rows = {c["category"]: c for c in grid["categories"]}
    assert rows["mention"]["email"]["own"] is True
    assert rows["page_created"]["in_app"]["enabled"] is True
    assert rows["watched_page"]["email"]["own"] is False  # untouched
    assert InboxPreferences(SCHEMA).rows(conn, ["ana"])["ana"] == {
        ("mention", "email"): False,
        ("page_created", "in_app"): True,
    }
    assert audits(conn, person="ana") == [
        (
            "ana",
            "ana",
            {"categories": {"mention": {"email": True}, "page_created": {"in_app": False}}},
            {"categories": {"mention": {"email": False}, "page_created": {"in_app": True}}},
        )
    ]
    (row,) = audit_log(conn, schema=SCHEMA)
    assert (row.at, row.kind) == (T0, "preferences")
    # The same change again changes nothing, and writes no audit row; back to the default
    # deletes the stored row (N2).
    body(patch_prefs(conn, wiki, change))
    assert len(audit_log(conn, schema=SCHEMA)) == 1
    body(patch_prefs(conn, wiki, {"categories": {"mention": {"email": True}}}))
    assert InboxPreferences(SCHEMA).rows(conn, ["ana"])["ana"] == {("page_created", "in_app"): True}
    assert len(audit_log(conn, schema=SCHEMA)) == 2


def test_h2_reads_and_dismissals_stay_unaudited(conn: Conn, wiki: ReferenceWiki) -> None:
    h.preferences_get(conn, wiki, "ana", schema=SCHEMA)
    h.settings_get(conn, wiki)
    h.inbox_read(conn, "ana", content_type=None, body=b"", schema=SCHEMA)
    h.inbox_dismiss(conn, "ana", "1", schema=SCHEMA)
    assert audit_log(conn, schema=SCHEMA) == []


def test_h2_e3_a_schedule_change_is_audited_and_moves_pending_emails(
    conn: Conn, wiki: ReferenceWiki
) -> None:
    with conn.transaction():
        emit(conn, "page.edited", {"page": "p1"}, actor="bob", occurred_at=T0, schema=SCHEMA)
    InboxFanOut(wiki, schema=SCHEMA).drain(conn)
    (before,) = conn.execute(f"SELECT email_after FROM {SCHEMA}.inbox_entries").fetchone() or ()
    grid = body(patch_prefs(conn, wiki, {"email_schedule": "daily", "daily_hour": 8}))
    assert (grid["email_schedule"], grid["daily_hour"]) == ("daily", 8)
    (after,) = conn.execute(f"SELECT email_after FROM {SCHEMA}.inbox_entries").fetchone() or ()
    assert after > before + timedelta(hours=12)  # E3: waits for tomorrow's 08:00 slot
    assert wiki.inbox_users(conn, ["ana"])["ana"].email_schedule == "daily"
    assert audits(conn) == [
        (
            "ana",
            "ana",
            {"email_schedule": "immediate"},
            {"email_schedule": "daily", "daily_hour": 8},
        )
    ]


@pytest.mark.parametrize(
    ("raw", "code", "pointer"),
    [
        (b"", "invalid_json", ""),
        (b"[1]", "invalid_json", ""),
        (b"{", "invalid_json", ""),
        (b'{"colour": 1}', "unknown_member", "/colour"),
        (b'{"categories": []}', "invalid_json", "/categories"),
        (b'{"categories": {"nope": {"email": false}}}', "unknown_category", "/categories/nope"),
        (b'{"categories": {"a/b": {}}}', "unknown_category", "/categories/a~1b"),
        (
            b'{"categories": {"mention": {"email": "no"}}}',
            "invalid_boolean",
            "/categories/mention/email",
        ),
        (
            b'{"categories": {"mention": {"sms": true}}}',
            "unknown_member",
            "/categories/mention/sms",
        ),
        (b'{"stop_all_email": false}', "invalid_boolean", "/stop_all_email"),
        (b'{"email_schedule": "weekly"}', "unknown_schedule", "/email_schedule"),
        (b'{"email_schedule": "daily"}', "missing_daily_hour", "/daily_hour"),
        (b'{"daily_hour": 24}', "invalid_daily_hour", "/daily_hour"),
        (b'{"daily_hour": true}', "invalid_daily_hour", "/daily_hour"),
    ],
)
def test_h2a_a_bad_preference_change_is_a_400_naming_the_member_and_writes_nothing(
    conn: Conn, wiki: ReferenceWiki, raw: bytes, code: str, pointer: str
) -> None:
    found = body(patch_prefs(conn, wiki, raw), 400)["error"]
    assert (found["code"], found["pointer"]) == (code, pointer)
    assert found["message"]
    assert InboxPreferences(SCHEMA).rows(conn, ["ana"]) == {}
    assert audit_log(conn, schema=SCHEMA) == []


def test_h2a_a_body_that_is_not_json_is_a_400(conn: Conn, wiki: ReferenceWiki) -> None:
    answer = h.preferences_patch(conn, wiki, "ana", content_type="text/plain", body=b"{}")
    assert body(answer, 400)["error"]["code"] == "invalid_content_type"
    answer = h.preferences_patch(conn, wiki, "ana", content_type=JSON, body=b"\xff")
    assert body(answer, 400)["error"]["code"] == "invalid_json"
    answer = h.settings_patch(conn, wiki, "root", content_type=JSON, body=b" " * 70_000)
    assert body(answer, 400)["error"]["code"] == "body_too_large"


def test_h2a_a_schedule_of_a_person_the_host_does_not_know_is_a_404(
    conn: Conn, wiki: ReferenceWiki
) -> None:
    answer = patch_prefs(conn, wiki, {"email_schedule": "hourly"}, user="zoe")
    assert body(answer, 404)["error"]["code"] == "not_found"
    assert audit_log(conn, schema=SCHEMA) == []


def test_h2_settings_read_and_change_member_by_member_audited_never_the_secret(
    conn: Conn, wiki: ReferenceWiki
) -> None:
    unsubscribe_secret(conn, schema=SCHEMA)
    got = body(h.settings_get(conn, wiki, schema=SCHEMA))
    assert got.pop("status")["mail_configured"] is True  # the status card (H2b)
    assert got == {
        "email_delay_s": 180,
        "retention_days": 60,
        "mail_batch_size": 100,
        "sections": {
            "watching": "email",
            "discussions": "email",
            "reviews": "email",
            "everything": "email",
        },
        "mail_configured": True,
    }
    new = body(patch_settings(conn, wiki, {"retention_days": 30, "sections": {"reviews": "off"}}))
    assert new["retention_days"] == 30 and new["sections"]["reviews"] == "off"
    assert new["sections"]["watching"] == "email" and new["mail_batch_size"] == 100
    assert wiki.inbox_retention_days(conn) == 30  # what the purge reads
    assert audits(conn, instance=True) == [
        (
            "root",
            "instance",
            {"retention_days": 60, "sections": {"reviews": "email"}},
            {"retention_days": 30, "sections": {"reviews": "off"}},
        )
    ]
    body(patch_settings(conn, wiki, {"retention_days": 30}))  # no change: no row
    assert len(audit_log(conn, schema=SCHEMA)) == 1
    assert "secret" not in json.dumps(body(h.settings_get(conn, wiki)))


@pytest.mark.parametrize(
    ("change", "code", "pointer"),
    [
        ({"unsubscribe_secret": "00"}, "unknown_member", "/unsubscribe_secret"),
        ({"mail_configured": False}, "read_only", "/mail_configured"),
        ({"mail_batch_size": 0}, "invalid_batch_size", "/mail_batch_size"),
        ({"mail_batch_size": 1001}, "invalid_batch_size", "/mail_batch_size"),
        ({"mail_batch_size": 10.0}, "invalid_batch_size", "/mail_batch_size"),
        ({"retention_days": 0}, "invalid_retention", "/retention_days"),
        ({"retention_days": "60"}, "invalid_retention", "/retention_days"),
        ({"email_delay_s": -1}, "invalid_duration", "/email_delay_s"),
        ({"email_delay_s": 10**12}, "invalid_duration", "/email_delay_s"),
        ({"sections": {"watching": "sms"}}, "invalid_delivery", "/sections/watching"),
        ({"sections": {"chat": "off"}}, "unknown_section", "/sections/chat"),
        ({"sections": "off"}, "invalid_json", "/sections"),
    ],
)
def test_h2a_a_bad_settings_change_is_a_400_naming_the_member_and_writes_nothing(
    conn: Conn, wiki: ReferenceWiki, change: object, code: str, pointer: str
) -> None:
    found = body(patch_settings(conn, wiki, change), 400)["error"]
    assert (found["code"], found["pointer"]) == (code, pointer)
    assert body(h.settings_get(conn, wiki))["mail_batch_size"] == 100
    assert audit_log(conn, schema=SCHEMA) == []


def test_h2a_retention_under_two_days_and_digests_exclude_each_other(
    conn: Conn, wiki: ReferenceWiki
) -> None:
    body(patch_prefs(conn, wiki, {"email_schedule": "hourly"}))
    found = body(patch_settings(conn, wiki, {"retention_days": 1}), 400)["error"]
    assert (found["code"], found["pointer"]) == ("invalid_retention", "/retention_days")
    assert wiki.inbox_retention_days(conn) == 60
    body(patch_prefs(conn, wiki, {"email_schedule": "immediate"}))
    # Without a digest, 1 day is refused all the same: it leaves no email delay at all.
    found = body(patch_settings(conn, wiki, {"retention_days": 1}), 400)["error"]
    assert (found["code"], found["pointer"]) == ("invalid_retention", "/retention_days")
    # A retention under 2 days that the host wrote itself still refuses a digest schedule.
    conn.execute(f"UPDATE {HOST_SCHEMA}.wiki_settings SET retention_days = 1")
    for change in ({"email_schedule": "daily", "daily_hour": 7}, {"email_schedule": "hourly"}):
        found = body(patch_prefs(conn, wiki, change, user="bob"), 400)["error"]
        assert (found["code"], found["pointer"]) == ("invalid_retention", "/email_schedule")
    assert wiki.inbox_users(conn, ["bob"])["bob"].email_schedule == "immediate"
    # A preference change that leaves the schedule alone is not refused.
    body(patch_prefs(conn, wiki, {"categories": {"mention": {"email": False}}}, user="bob"))


def test_h2a_a_delay_that_outlasts_the_retention_is_a_400_whichever_member_moves(
    conn: Conn, wiki: ReferenceWiki
) -> None:
    """H2a (issue 38): ``{"retention_days": 2, "email_delay_s": 259200}`` would let the purge
    take pending entries before their mail: refused, naming the member, nothing written; so is
    each half of it against the other's current value."""
    both = {"retention_days": 2, "email_delay_s": 259_200}
    found = body(patch_settings(conn, wiki, both), 400)["error"]
    assert (found["code"], found["pointer"]) == ("invalid_retention", "/retention_days")
    body(patch_settings(conn, wiki, {"retention_days": 2}))
    found = body(patch_settings(conn, wiki, {"email_delay_s": 86_400}), 400)["error"]
    assert (found["code"], found["pointer"]) == ("invalid_retention", "/email_delay_s")
    body(patch_settings(conn, wiki, {"email_delay_s": 86_399}))
    settings = body(h.settings_get(conn, wiki))
    assert (settings["retention_days"], settings["email_delay_s"]) == (2, 86_399)
    found = body(patch_settings(conn, wiki, {"retention_days": 1}), 400)["error"]
    assert (found["code"], found["pointer"]) == ("invalid_retention", "/retention_days")
    assert wiki.inbox_email_delay(conn) == timedelta(seconds=86_399)  # what the fan-out reads
    assert len(audit_log(conn, schema=SCHEMA)) == 2  # the two changes accepted


def _delay(conn: Conn, wiki: ReferenceWiki) -> None:
    # Alone, fine beside 60 days; beside 3 days it outlasts the retention.
    change_settings(conn, wiki, {"email_delay_s": 172_800}, actor="root", schema=SCHEMA)


def _retention(conn: Conn, wiki: ReferenceWiki) -> None:
    # Alone, fine beside 180 s.
    change_settings(conn, wiki, {"retention_days": 3}, actor="root", schema=SCHEMA)


def _host_retention(conn: Conn, wiki: ReferenceWiki) -> None:
    # A retention of 1 day is past the API (it leaves no delay): the host writes it itself,
    # under H2a's lock as `lock_retention` asks.
    lock_retention(conn, SCHEMA)
    conn.execute(f"UPDATE {HOST_SCHEMA}.wiki_settings SET retention_days = 1, email_delay_s = 0")


def _schedule(conn: Conn, wiki: ReferenceWiki) -> None:
    change = {"email_schedule": "daily", "daily_hour": 6}
    change_preferences(conn, wiki, "bob", change, schema=SCHEMA)


@pytest.mark.parametrize(
    ("one", "other"),
    [(_delay, _retention), (_retention, _delay), (_host_retention, _schedule)],
    ids=["delay-retention", "retention-delay", "retention-schedule"],
)
def test_h2a_two_concurrent_transactions_never_both_pass(
    connect: Callable[[], Conn],
    wiki: ReferenceWiki,
    one: Callable[[Conn, ReferenceWiki], None],
    other: Callable[[Conn, ReferenceWiki], None],
) -> None:
    """The first change holds its transaction open; the second waits on the lock and, once the
    first commits, reads its result and is refused: a delay and a retention that let the purge
    come first never exist together, nor a retention under 2 days and a daily digest."""
    a, b = connect(), connect()
    outcome: list[BaseException | None] = []

    def second() -> None:
        try:
            other(b, wiki)
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)

    with a.transaction():
        one(a, wiki)
        thread = threading.Thread(target=second)
        thread.start()
        time.sleep(0.5)
        assert thread.is_alive(), "the second change must wait for the first's lock"
    thread.join(30)
    (error,) = outcome
    assert isinstance(error, InvalidInput) and error.code == "invalid_retention"
    retention = wiki.inbox_retention_days(a)
    digests = wiki.inbox_digest_schedules(a)
    assert not (retention < 2 and digests)
    assert wiki.inbox_email_delay(a).total_seconds() < (retention - 1) * 86_400 or retention < 2
    assert len(audit_log(a, schema=SCHEMA)) == (0 if one is _host_retention else 1)


def test_h2a_h3_the_purge_never_takes_an_entry_whose_daily_digest_is_pending(
    conn: Conn, wiki: ReferenceWiki
) -> None:
    """Retention at its least (2 days) for a daily person: at the instant the entry's email
    falls due, and just before, the purge keeps it; entries older than that go."""
    body(patch_settings(conn, wiki, {"retention_days": 2}))
    # 08:00 UTC plus ana's offset (56:58): tomorrow's slot, almost a day after the edit.
    body(patch_prefs(conn, wiki, {"email_schedule": "daily", "daily_hour": 8}))
    with conn.transaction():
        emit(conn, "page.edited", {"page": "p1"}, actor="bob", occurred_at=T0, schema=SCHEMA)
    InboxFanOut(wiki, schema=SCHEMA).drain(conn)
    state, due = conn.execute(
        f"SELECT email_state, email_after FROM {SCHEMA}.inbox_entries"
    ).fetchone() or (None, None)
    assert state == "pending" and due > T0 + timedelta(hours=23)
    for at in (due - timedelta(seconds=1), due, due + timedelta(minutes=30)):
        assert (
            purge(conn, retention_days=wiki.inbox_retention_days(conn), now=at, schema=SCHEMA)[
                "entries"
            ]
            == 0
        )
    assert (
        purge(conn, retention_days=2, now=T0 + timedelta(days=2, seconds=1), schema=SCHEMA)[
            "entries"
        ]
        == 1
    )


def test_u3_a_token_of_a_forgotten_person_is_invalid_and_writes_nothing(
    conn: Conn, wiki: ReferenceWiki
) -> None:
    secret = unsubscribe_secret(conn, schema=SCHEMA)
    token = unsubscribe_token(secret, "ana", ["mention"])
    body(patch_prefs(conn, wiki, {"categories": {"watched_page": {"in_app": False}}}))
    forget_person(conn, "ana", SCHEMA)
    assert forgotten(conn, "ana", SCHEMA) and not forgotten(conn, "bob", SCHEMA)
    assert audit_log(conn, schema=SCHEMA) == []  # her audited changes went with her
    query = f"t={token}"
    form = "application/x-www-form-urlencoded"
    answer = h.unsubscribe_post(
        conn,
        secret=secret,
        query=query,
        content_type=form,
        body=b"List-Unsubscribe=One-Click",
        schema=SCHEMA,
    )
    assert (answer.status, answer.body) == (400, b"")
    info = h.unsubscribe_info(secret=secret, query=query, conn=conn, schema=SCHEMA)
    assert (info.status, info.body) == (400, b"")
    assert InboxPreferences(SCHEMA).rows(conn, ["ana"]) == {}
    assert audited_unsubscribes(conn, "ana", schema=SCHEMA) == []
    # Nobody else's token is touched by it.
    other = unsubscribe_token(secret, "bob", ["mention"])
    answer = h.unsubscribe_post(
        conn,
        secret=secret,
        query=f"t={other}",
        content_type=form,
        body=b"List-Unsubscribe=One-Click",
        schema=SCHEMA,
    )
    assert answer.status == 200
    # The digest is keyed with the secret: the id itself is not stored.
    stored = conn.execute(f"SELECT digest FROM {SCHEMA}.forgotten_people").fetchall()
    assert len(stored) == 1 and b"ana" not in stored[0][0]


def test_h2a_the_loader_on_postgresql_refuses_what_a_replay_refuses(conn: Conn) -> None:
    """The reference host's log loader (the PostgreSQL side of the replay parity) writes
    settings and schedules as a host would: a retention under 2 days while someone has an
    hourly schedule, and a delay and a retention that let the purge come first (issue 38),
    are the replay's bad lines, and change nothing."""
    from inbox_log import WikiLog

    from notify_core.events.log import EventError, parse_event
    from notify_core.replay.run import Replay
    from notify_reference_host.wiki_load import WikiLoader

    log = WikiLog().user("ana", email_schedule="hourly").user("ben")
    log.tick().add("notifications.settings", {"retention_days": 1})
    log.tick().add("user.updated", {"user": "ana", "email_schedule": "immediate"})
    log.tick().add("notifications.settings", {"retention_days": 1, "email_delay_s": 60})
    log.tick().add("notifications.settings", {"retention_days": 2, "email_delay_s": 259_200})
    log.tick().add("notifications.settings", {"retention_days": 2, "email_delay_s": 60})
    log.tick().add("notifications.settings", {"email_delay_s": 86_400})
    log.tick().add("notifications.settings", {"email_delay_s": 86_399})
    log.tick().add("user.updated", {"user": "ben", "email_schedule": "daily", "daily_hour": 3})
    replayed = [
        (e.line, e.code, e.pointer) for e in Replay().run(log.lines()) if isinstance(e, EventError)
    ]
    wiki = ReferenceWiki(HOST_SCHEMA)
    loader = WikiLoader(wiki, InboxFanOut(wiki, schema=SCHEMA), schema=SCHEMA)
    loaded = []
    for number, line in enumerate(log.lines(), start=1):
        try:
            loader.feed(conn, parse_event(json.loads(line)))
        except EventError as exc:
            loaded.append((number, exc.code, exc.pointer))
    assert [(code, pointer) for _line, code, pointer in loaded] == [
        ("invalid_retention", "/payload/retention_days"),
        ("invalid_retention", "/payload/retention_days"),
        ("invalid_retention", "/payload/retention_days"),
        ("invalid_retention", "/payload/email_delay_s"),
    ]
    assert loaded == replayed
    assert (wiki.inbox_retention_days(conn), wiki.inbox_email_delay(conn)) == (
        2,
        timedelta(seconds=86_399),
    )
    assert wiki.inbox_users(conn, ["ben"])["ben"].email_schedule == "daily"
    # A retention under 2 days the host wrote itself refuses a digest schedule in the log.
    conn.execute(f"UPDATE {HOST_SCHEMA}.wiki_settings SET retention_days = 1, email_delay_s = 0")
    log.tick().add("user.updated", {"user": "ana", "email_schedule": "hourly"})
    with pytest.raises(EventError) as info:
        loader.feed(conn, parse_event(json.loads(log.lines()[-1])))
    assert (info.value.code, info.value.pointer) == ("invalid_retention", "/payload/email_schedule")
    assert wiki.inbox_users(conn, ["ana"])["ana"].email_schedule == "immediate"


def test_e6_a_site_over_plain_http_is_one_warning_in_db_status_and_at_the_worker_start(
    conn: Conn, wiki: ReferenceWiki, db_dsn: str
) -> None:
    """Seed 004 section 12.2: mailbox providers ignore one-click unsubscribe over http."""
    from click.testing import CliRunner

    from notify_cli.main import cli

    runner = CliRunner()
    status = ["db", "status", "--dsn", db_dsn, "--host-schema", HOST_SCHEMA]
    clean = runner.invoke(cli, status)
    assert clean.exit_code == 0 and "warnings" not in json.loads(clean.stdout)
    assert "warning" not in clean.stderr
    wiki.add_site(conn, "s2", host="old.example")
    conn.execute(f"UPDATE {HOST_SCHEMA}.wiki_sites SET https = false WHERE id IN ('s1', 's2')")
    result = runner.invoke(cli, status)
    assert result.exit_code == 0
    (warning,) = json.loads(result.stdout)["warnings"]
    assert (warning["code"], warning["sites"]) == ("plain_http", ["s1", "s2"])
    assert "one-click unsubscribe" in warning["message"]
    assert result.stderr.count("warning:") == 1 and "s1, s2" in result.stderr
    worker = runner.invoke(cli, ["worker", "--dsn", db_dsn, "--host-schema", HOST_SCHEMA, "--once"])
    assert worker.exit_code == 0, worker.output
    lines = [json.loads(x) for x in worker.stderr.splitlines() if x.startswith("{")]
    (warned,) = [x for x in lines if x["msg"] == "plain http"]
    assert warned["level"].lower().startswith("warn") and warned["sites"] == ["s1", "s2"]


def test_h2_notify_records_inbox_audit_lists_the_changes(
    conn: Conn, wiki: ReferenceWiki, db_dsn: str
) -> None:
    from click.testing import CliRunner

    from notify_cli.main import cli

    body(patch_prefs(conn, wiki, {"categories": {"mention": {"email": False}}}))
    body(patch_settings(conn, wiki, {"email_delay_s": 60}))
    runner = CliRunner()
    base = ["records", "inbox-audit", "--dsn", db_dsn]
    listed = runner.invoke(cli, [*base, "--json"])
    assert listed.exit_code == 0, listed.output
    rows = [json.loads(line) for line in listed.stdout.splitlines()]
    assert [(r["actor"], r["kind"], r["subject"]) for r in rows] == [
        ("ana", "preferences", "ana"),
        ("root", "settings", "instance"),
    ]
    assert rows[1]["before"] == {"email_delay_s": 180}
    assert rows[1]["after"] == {"email_delay_s": 60}
    assert rows[0]["at"] == "2026-11-30T09:00:00Z"
    only = runner.invoke(cli, [*base, "--json", "--instance"])
    assert [json.loads(x)["subject"] for x in only.stdout.splitlines()] == ["instance"]
    ana = runner.invoke(cli, [*base, "--json", "--person", "ana"])
    assert [json.loads(x)["subject"] for x in ana.stdout.splitlines()] == ["ana"]
    table = runner.invoke(cli, base)
    assert table.exit_code == 0 and "instance" in table.stdout and "email_delay_s" in table.stdout
    bad = runner.invoke(cli, [*base, "--person", "ana", "--instance"])
    assert bad.exit_code == 2 and "exclude" in bad.output
