"""One-click unsubscribe and the inbox over real HTTP (seed 004 sections 9.1 and 10.4;
docs/rules.md U3, U4, H1, H2): the reference app of notify_pg.http.app, and `notify serve` itself,
on real PostgreSQL, with the List-Unsubscribe URL of a mail received by a real SMTP server."""

from __future__ import annotations

import email
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import urllib.parse
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta
from email import policy
from typing import Any

import psycopg
import pytest
from aiosmtpd.controller import Controller
from pgworld import HOST_SCHEMA, SCHEMA
from scrape import by, scrape
from webworld import no_null

from notify_core.mail import MailEntry, MailSite, compose_mail, unsubscribe_token
from notify_pg.http.app import USER_HEADER, build_app, make_http_server, open_pool
from notify_pg.http.server import AsgiApp, ServingThread
from notify_pg.inbox.fanout import InboxFanOut
from notify_pg.inbox.reads import InboxPreferences, emit
from notify_pg.mail.secret import unsubscribe_secret
from notify_pg.mail.smtp import Outgoing, SmtpConfig, SmtpSender, mail_message
from notify_pg.mail.unsubscribe import audited_unsubscribes
from notify_reference_host.wiki import ReferenceWiki

Conn = psycopg.Connection[Any]
T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
SITE = MailSite(name="Ops Wiki", host="wiki.example.org", https=True, primary_locale="en")
SENDER = "notifications@wiki.example.org"
ONE_CLICK = {"Content-Type": "application/x-www-form-urlencoded"}


class Answer:
    """One HTTP answer: status, headers (lower-case names) and body."""

    def __init__(self, status: int, headers: Mapping[str, str], body: bytes) -> None:
        self.status, self.headers, self.body = status, headers, body

    def json(self) -> Any:
        """The body as JSON, which holds no null (G5)."""
        return no_null(json.loads(self.body))


def call(
    base: tuple[str, int],
    method: str,
    target: str,
    body: bytes | None = None,
    headers: Mapping[str, str] | None = None,
) -> Answer:
    """Send one request with no cookie and no redirect following (http.client)."""
    conn = http.client.HTTPConnection(*base, timeout=30)
    try:
        conn.request(method, target, body=body, headers=dict(headers or {}))
        response = conn.getresponse()
        return Answer(
            response.status,
            {k.lower(): v for k, v in response.getheaders()},
            response.read(),
        )
    finally:
        conn.close()


@pytest.fixture
def server(db_dsn: str) -> Iterator[tuple[str, int]]:
    """The reference app on a free loopback port, served by uvicorn (`notify serve`'s server)
    on a thread."""
    pool = open_pool(db_dsn)
    try:
        with ServingThread(AsgiApp(build_app(pool, schema=SCHEMA))) as serving:
            yield ("127.0.0.1", serving.port)
    finally:
        pool.close()


class Inbox:
    """An aiosmtpd handler that keeps the received messages."""

    def __init__(self) -> None:
        self.received: list[bytes] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.received.append(envelope.content)
        return "250 OK"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def received_mail(conn: Conn, person: str, categories: list[str]) -> email.message.EmailMessage:
    """A mail composed by the product with the instance's secret, sent over SMTP to a real
    server on loopback, and parsed from the bytes that server received."""
    token = unsubscribe_token(unsubscribe_secret(conn, schema=SCHEMA), person, categories)
    entries = [
        MailEntry(category=key, variant="new", title="Runbook", path="/ops/runbook", actor="cy")
        for key in categories
    ]
    mail = compose_mail(entries, site=SITE, locale="en", token=token)
    address = f"{person}@example.org"
    inbox = Inbox()
    controller = Controller(inbox, hostname="127.0.0.1", port=free_port())
    controller.start()
    try:
        with SmtpSender(SmtpConfig.from_url(f"smtp://127.0.0.1:{controller.port}")) as smtp:
            smtp.send(
                Outgoing(
                    sender=SENDER,
                    recipients=(address,),
                    message=mail_message(mail, sender=SENDER, to=address, date=T0),
                )
            )
    finally:
        controller.stop()
    (raw,) = inbox.received
    parsed = email.message_from_bytes(raw, policy=policy.default)
    assert isinstance(parsed, email.message.EmailMessage)
    return parsed


def one_click_target(mail: email.message.Message) -> str:
    """The path and query of the mail's List-Unsubscribe URL (the host is the wiki's)."""
    assert mail["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    url = urllib.parse.urlsplit(str(mail["List-Unsubscribe"]).strip("<>"))
    assert (url.scheme, url.netloc, url.path) == (
        "https",
        "wiki.example.org",
        "/notifications/unsubscribe",
    )
    return f"{url.path}?{url.query}"


def email_choices(conn: Conn, person: str) -> dict[tuple[str, str], bool]:
    return InboxPreferences(SCHEMA).rows(conn, [person]).get(person, {})


def test_u3_the_list_unsubscribe_url_of_a_received_mail_works_over_http(
    conn: Conn, server: tuple[str, int]
) -> None:
    InboxPreferences(SCHEMA).set(conn, "ana", "mention", "in_app", False)
    target = one_click_target(received_mail(conn, "ana", ["mention", "watched_page_comment"]))
    # RFC 8058: the mail client POSTs the List-Unsubscribe-Post pair, with no cookie.
    first = call(server, "POST", target, b"List-Unsubscribe=One-Click", ONE_CLICK)
    assert (first.status, first.body) == (200, b"")
    assert "set-cookie" not in first.headers
    after = email_choices(conn, "ana")
    assert after == {
        ("mention", "in_app"): False,
        ("mention", "email"): False,
        ("watched_page_comment", "email"): False,
    }
    # Twice: the same answer, nothing more changed.
    second = call(server, "POST", target, b"List-Unsubscribe=One-Click", ONE_CLICK)
    assert (second.status, second.body) == (200, b"")
    assert email_choices(conn, "ana") == after
    audits = audited_unsubscribes(conn, "ana", schema=SCHEMA)
    assert [(a.scope, a.categories, a.changed) for a in audits] == [
        ("token", ("mention", "watched_page_comment"), ("mention", "watched_page_comment")),
        ("token", ("mention", "watched_page_comment"), ()),
    ]


def test_u3_a_tampered_token_gets_400_with_no_detail(conn: Conn, server: tuple[str, int]) -> None:
    target = one_click_target(received_mail(conn, "ana", ["mention"]))
    path, _, query = target.partition("?t=")
    payload, mac = query.split(".")
    # Another person's id in the payload, the MAC kept: a forgery.
    forged = unsubscribe_token(bytes(32), "bob", ["mention"]).split(".")[0]
    for token in (f"{forged}.{mac}", f"{payload}.{mac[:-2]}", f"{payload}x.{mac}", "nonsense"):
        answer = call(server, "POST", f"{path}?t={token}", b"List-Unsubscribe=One-Click", ONE_CLICK)
        assert (answer.status, answer.body) == (400, b"")
    # A valid token without the one-click body is refused alike.
    bare = call(server, "POST", target, b"", ONE_CLICK)
    assert (bare.status, bare.body) == (400, b"")
    assert email_choices(conn, "ana") == email_choices(conn, "bob") == {}


def test_u4_a_get_on_the_url_redirects_and_changes_nothing(
    conn: Conn, server: tuple[str, int]
) -> None:
    target = one_click_target(received_mail(conn, "ana", ["mention"]))
    for _ in range(2):  # a mail scanner fetching every link
        answer = call(server, "GET", target)
        assert answer.status == 303
        assert answer.headers["location"] == "/unsubscribe?" + target.split("?")[1]
    assert email_choices(conn, "ana") == {}
    assert audited_unsubscribes(conn, "ana", schema=SCHEMA) == []
    # The reference app's stand-in page names the categories and offers both POSTs.
    page = call(server, "GET", answer.headers["location"])
    assert page.status == 200 and page.headers["content-type"].startswith("text/html")
    assert b"<li>mention</li>" in page.body and b'name="scope" value="all"' in page.body
    assert b"ana" not in page.body
    invalid = call(server, "GET", "/unsubscribe?t=nonsense")
    assert invalid.status == 400 and b"not valid" in invalid.body
    # The page's info call names the categories, nothing about the person.
    info = call(server, "GET", target.replace("/unsubscribe?", "/unsubscribe/info?"))
    assert (info.status, info.json()) == (200, {"categories": ["mention"]})
    # The page's "stop all notification email": the same POST with scope=all.
    stop = call(server, "POST", target, b"List-Unsubscribe=One-Click&scope=all", ONE_CLICK)
    assert stop.status == 200
    assert len(email_choices(conn, "ana")) == 5  # the five categories whose email is on


@pytest.fixture
def wiki(conn: Conn) -> ReferenceWiki:
    """One page ana watches, edited by bob three times a second apart (three entries? no:
    one coalesced entry) and commented on twice."""
    w = ReferenceWiki(HOST_SCHEMA)
    rules = [{"permission": "read_pages", "match": "all"}]
    rules.append({"permission": "read_comments", "match": "all"})
    with conn.transaction():
        w.add_site(conn, "s1", host="wiki.example")
        w.add_group(conn, "readers", rules)
        for person in ("ana", "bob"):
            w.add_user(conn, person, email=f"{person}@example.org", verified=True)
            w.add_member(conn, "readers", person)
        w.add_page(conn, "p1", "s1", "/docs/start", title="Start")
        w.watch(conn, "p1", "ana")
        emit(conn, "page.edited", {"page": "p1"}, actor="bob", occurred_at=T0, schema=SCHEMA)
        for n in range(2):
            w.add_comment(conn, f"c{n}", "p1", author="bob", mentions=["ana"])
            emit(
                conn,
                "comment.created",
                {"comment": f"c{n}", "page": "p1", "mentions": ["ana"]},
                actor="bob",
                occurred_at=T0 + timedelta(seconds=n + 1),
                schema=SCHEMA,
            )
    InboxFanOut(w, schema=SCHEMA).drain(conn)
    return w


def test_h1_list_and_summary_over_http_with_etag_and_not_modified(
    wiki: ReferenceWiki, server: tuple[str, int]
) -> None:
    ana = {USER_HEADER: "ana"}
    listed = call(server, "GET", "/sites/s1/notifications", headers=ana)
    assert listed.status == 200 and listed.headers["content-type"] == "application/json"
    entries = listed.json()["entries"]
    assert [e["category"] for e in entries] == ["mention", "mention", "watched_page"]
    assert "next" not in listed.json()  # G5: the last page omits it, never null
    summary = call(server, "GET", "/sites/s1/notifications/summary", headers=ana)
    assert summary.json() == {"unread": 3, "badge": "3", "latest_at": "2026-11-30T09:00:02Z"}
    etag = summary.headers["etag"]
    polled = call(
        server, "GET", "/sites/s1/notifications/summary", headers={**ana, "If-None-Match": etag}
    )
    assert (polled.status, polled.body, polled.headers["etag"]) == (304, b"", etag)
    # Another person's summary is theirs; no header is no person.
    assert (
        call(server, "GET", "/sites/s1/notifications/summary", headers={USER_HEADER: "bob"}).json()[
            "unread"
        ]
        == 0
    )
    assert call(server, "GET", "/sites/s1/notifications/summary").status == 401


def test_h2_read_and_dismiss_over_http(wiki: ReferenceWiki, server: tuple[str, int]) -> None:
    ana = {USER_HEADER: "ana"}
    etag = call(server, "GET", "/sites/s1/notifications/summary", headers=ana).headers["etag"]
    ids = [
        e["id"]
        for e in call(server, "GET", "/sites/s1/notifications", headers=ana).json()["entries"]
    ]
    one = call(server, "PUT", f"/sites/s1/notifications/{ids[0]}/read", b"", ana)
    assert (one.status, one.json()) == (200, {"read": [ids[0]]})
    # The read moved the summary: the old ETag gets a fresh answer.
    polled = call(
        server, "GET", "/sites/s1/notifications/summary", headers={**ana, "If-None-Match": etag}
    )
    assert polled.status == 200 and polled.json()["unread"] == 2
    by_filter = call(
        server,
        "PUT",
        "/sites/s1/notifications/read",
        json.dumps({"categories": ["watched_page"]}).encode(),
        {**ana, "Content-Type": "application/json"},
    )
    assert by_filter.json() == {"read": [ids[2]]}
    assert call(server, "DELETE", f"/sites/s1/notifications/{ids[1]}", headers=ana).status == 204
    assert call(server, "DELETE", f"/sites/s1/notifications/{ids[1]}", headers=ana).status == 404
    left = call(server, "GET", "/sites/s1/notifications", headers=ana).json()["entries"]
    assert [(e["id"], e["read"]) for e in left] == [(ids[0], True), (ids[2], True)]


def test_h1_the_inbox_of_a_site_over_http_with_the_unread_filter(
    wiki: ReferenceWiki, server: tuple[str, int]
) -> None:
    """H1: the site is in the path; another site's inbox lists none of s1's entries; unread=1
    lists only unread entries; a bad flag is a clean 400."""
    ana = {USER_HEADER: "ana"}
    assert call(server, "GET", "/sites/s2/notifications", headers=ana).json()["entries"] == []
    other = call(server, "GET", "/sites/s2/notifications/summary", headers=ana).json()
    assert other == {"unread": 0, "badge": "0"}  # G5: no latest_at rather than null
    ids = [
        e["id"]
        for e in call(server, "GET", "/sites/s1/notifications", headers=ana).json()["entries"]
    ]
    # A read or dismissal through s2's inbox does not reach s1's entries.
    assert call(server, "PUT", f"/sites/s2/notifications/{ids[0]}/read", b"", ana).json() == {
        "read": []
    }
    assert call(server, "DELETE", f"/sites/s2/notifications/{ids[0]}", headers=ana).status == 404
    assert call(server, "PUT", f"/sites/s1/notifications/{ids[0]}/read", b"", ana).status == 200
    unread = call(server, "GET", "/sites/s1/notifications?unread=1", headers=ana).json()
    assert [e["id"] for e in unread["entries"]] == ids[1:]
    everything = call(server, "GET", "/sites/s1/notifications?unread=0", headers=ana).json()
    assert [e["id"] for e in everything["entries"]] == ids
    bad = call(server, "GET", "/sites/s1/notifications?unread=maybe", headers=ana)
    assert bad.status == 400 and bad.json()["error"]["code"] == "invalid_unread"


def test_h2_bad_requests_get_clean_answers_over_http(server: tuple[str, int]) -> None:
    ana = {USER_HEADER: "ana"}
    cases = [
        ("PUT", "/sites/s1/notifications/read", b"{not json", 400),
        ("PUT", "/sites/s1/notifications/abc/read", b"", 400),
        ("DELETE", "/sites/s1/notifications/-3", b"", 400),
        ("GET", "/sites/s1/notifications?cursor=zzz", None, 400),
        ("GET", "/nowhere", None, 404),
        ("POST", "/sites/s1/notifications/summary", b"", 405),
        ("PUT", "/notifications/unsubscribe", None, 405),
    ]
    for method, target, body, status in cases:
        answer = call(server, method, target, body, {**ana, "Content-Type": "application/json"})
        assert answer.status == status, (method, target)
        assert b"Traceback" not in answer.body
    refused = call(server, "POST", "/notifications/unsubscribe/info", b"")
    assert (refused.status, refused.headers["allow"]) == (405, "GET, HEAD")


def test_u3_notify_serve_answers_and_stops_on_sigterm(db_dsn: str) -> None:
    """`notify serve` as a user starts it: it logs the port it took, answers, exits 0."""
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        token = unsubscribe_token(unsubscribe_secret(conn, schema=SCHEMA), "ana", ["mention"])
    env = {**os.environ, "NOTIFY_DSN": db_dsn}
    args = ["serve", "--schema", SCHEMA, "--port", "0", "--host-schema", HOST_SCHEMA]
    proc = subprocess.Popen(
        [sys.executable, "-m", "notify_cli", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        line = json.loads(proc.stderr.readline())
        assert line["msg"] == "listening"
        base = ("127.0.0.1", int(line["port"]))
        target = f"/notifications/unsubscribe?t={token}"
        answer = call(base, "POST", target, b"List-Unsubscribe=One-Click", ONE_CLICK)
        assert (answer.status, answer.body) == (200, b"")
        access = json.loads(proc.stderr.readline())
        # The access log names the route, never the token.
        assert access["route"] == "/notifications/unsubscribe" and token not in str(access)
        assert (access["method"], access["status"]) == ("POST", 200)
    finally:
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        assert email_choices(conn, "ana") == {("mention", "email"): False}


@pytest.mark.parametrize("workers", [1, 2])
def test_notify_serve_stopped_the_moment_it_says_listening_exits_0(
    db_dsn: str, workers: int
) -> None:
    """The stop signals are handled before ``listening`` is logged: a SIGTERM sent as soon
    as that line appears stops the server cleanly (exit 0, as the other stop tests expect),
    never kills it (-15)."""
    args = ["serve", "--schema", SCHEMA, "--port", "0", "--workers", str(workers)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "notify_cli", *args],
        env={**os.environ, "NOTIFY_DSN": db_dsn},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert json.loads(line)["msg"] == "listening", line
    finally:
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "Traceback" not in err


def test_notify_serve_logs_each_request_as_text_and_counts_it_in_its_metrics(
    db_dsn: str,
) -> None:
    """`notify serve --log-format text --metrics-port 0`: one line per request with its
    method, route template, status and duration (no entry id, person or token), and the
    requests by route and status with their durations on /metrics, over real HTTP."""
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        token = unsubscribe_token(unsubscribe_secret(conn, schema=SCHEMA), "ana", ["mention"])
    args = ["serve", "--schema", SCHEMA, "--port", "0", "--log-format", "text"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "notify_cli", *args, "--metrics-port", "0"],
        env={**os.environ, "NOTIFY_DSN": db_dsn},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    seen: list[str] = []
    try:
        assert proc.stderr is not None
        ports: dict[str, int] = {}
        while "listening" not in ports:
            line = proc.stderr.readline()
            assert line, "notify serve ended before listening"
            seen.append(line)
            fields = dict(w.split("=", 1) for w in line.split() if "=" in w)
            if " metrics serving " in line or " listening " in line:
                ports["listening" if " listening " in line else "metrics"] = int(fields["port"])
        base = ("127.0.0.1", ports["listening"])
        ana = {USER_HEADER: "ana"}
        requests = [
            ("POST", f"/notifications/unsubscribe?t={token}", b"List-Unsubscribe=One-Click", 200),
            ("PUT", "/sites/s1/notifications/4242/read", b"", 200),
            ("PUT", "/sites/s1/notifications/4343/read", b"", 200),
            ("DELETE", "/sites/s1/notifications/4444", None, 404),
            ("GET", "/nowhere/4545", None, 404),
        ]
        for method, target, body, status in requests:
            answer = call(base, method, target, body, {**ana, **ONE_CLICK})
            assert answer.status == status, (method, target, answer.body)
        _text, samples = scrape(ports["metrics"])
    finally:
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    lines = [*seen, *err.splitlines()]
    logged = [line for line in lines if " request " in line]
    assert len(logged) == len(requests)
    routes = []
    for line in logged:
        fields = dict(w.split("=", 1) for w in line.split()[3:])
        assert set(fields) == {"method", "route", "status", "duration_ms"}, line
        assert float(fields["duration_ms"]) >= 0
        routes.append((fields["method"], fields["route"], int(fields["status"])))
    assert routes == [
        ("POST", "/notifications/unsubscribe", 200),
        ("PUT", "/sites/<site>/notifications/<entry>/read", 200),
        ("PUT", "/sites/<site>/notifications/<entry>/read", 200),
        ("DELETE", "/sites/<site>/notifications/<entry>", 404),
        ("GET", "unmatched", 404),
    ]
    for secret in (token, "ana", "4242", "4343", "4444", "4545"):
        assert not any(secret in line for line in lines), secret
    counted = by(
        samples,
        "notify_http_requests_total",
        "http_request_method",
        "http_route",
        "http_response_status_code",
    )
    assert counted == {
        ("POST", "/notifications/unsubscribe", "200"): 1,
        ("PUT", "/sites/<site>/notifications/<entry>/read", "200"): 2,
        ("DELETE", "/sites/<site>/notifications/<entry>", "404"): 1,
        ("GET", "unmatched", "404"): 1,
    }
    durations = by(
        samples, "notify_http_request_duration_seconds_count", "http_request_method", "http_route"
    )
    assert durations[("PUT", "/sites/<site>/notifications/<entry>/read")] == 2
    assert sum(durations.values()) == len(requests)
    assert not any(secret in str(samples) for secret in (token, "ana", "4242"))


def test_notify_serve_without_a_database_is_one_line_and_exit_2(tmp_path: Any) -> None:
    dsn = f"host={tmp_path} port=1 dbname=none connect_timeout=1"
    done = subprocess.run(
        [sys.executable, "-m", "notify_cli", "serve", "--dsn", dsn, "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("notify: --dsn: ") and "Traceback" not in done.stderr


def test_h1_entries_of_a_site_switched_off_are_hidden_and_come_back(
    db_dsn: str, conn: Conn, wiki: ReferenceWiki
) -> None:
    """N5 over HTTP: with the host's switches (`notify serve --host-schema`), a site's
    entries are hidden while its notifications are off, and kept."""
    pool = open_pool(db_dsn)
    app = build_app(pool, schema=SCHEMA, hidden_sites=ReferenceWiki(HOST_SCHEMA).sites_off)
    httpd = make_http_server(app, "127.0.0.1", 0)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    base = ("127.0.0.1", httpd.server_port)
    ana = {USER_HEADER: "ana"}
    try:
        seen = []
        for on in (False, True):
            conn.execute("UPDATE host.wiki_sites SET notifications = %s", [on])
            listed = call(base, "GET", "/sites/s1/notifications", headers=ana).json()["entries"]
            unread = call(base, "GET", "/sites/s1/notifications/summary", headers=ana).json()[
                "unread"
            ]
            seen.append((len(listed), unread))
        assert seen == [(0, 0), (3, 3)]
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(10)
        pool.close()


def test_notify_serve_on_a_port_in_use_is_one_line_and_exit_2(db_dsn: str) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = str(taken.getsockname()[1])
        done = subprocess.run(
            [sys.executable, "-m", "notify_cli", "serve", "--dsn", db_dsn, "--port", port],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 2
    assert done.stderr == f"notify: cannot listen on 127.0.0.1:{port}: Address already in use\n"
