"""Preferences and settings over real HTTP: the reference app of notify_pg.http.app with the
reference wiki as its host (docs/rules.md H2, H2a): the person from X-Notify-User, the
administrator from X-Notify-Admin (behind the proxy secret the settings routes always ask
for), clean 400s naming the member, and every change audited."""

from __future__ import annotations

import http.client
import json
import threading
from collections.abc import Iterator, Mapping
from typing import Any

import psycopg
import pytest
from pgworld import HOST_SCHEMA, SCHEMA
from webworld import no_null

from notify_pg.http.app import ADMIN_HEADER, USER_HEADER, build_app, make_http_server, open_pool
from notify_pg.http.identity import PROXY_SECRET_HEADER, IdentityCheck
from notify_pg.mail.settings import audit_log
from notify_reference_host.wiki import ReferenceWiki

Conn = psycopg.Connection[Any]
JSON = {"Content-Type": "application/json"}
SECRET = "s3cret-of-the-hosts-proxy-0123456789"
PROOF = {PROXY_SECRET_HEADER: SECRET}


def call(
    base: tuple[str, int],
    method: str,
    target: str,
    body: object = None,
    headers: Mapping[str, str] | None = None,
    *,
    proof: Mapping[str, str] = PROOF,
) -> tuple[int, Any]:
    conn = http.client.HTTPConnection(*base, timeout=30)
    try:
        raw = None if body is None else json.dumps(body).encode()
        conn.request(method, target, body=raw, headers={**JSON, **proof, **(headers or {})})
        response = conn.getresponse()
        data = response.read()
        kind = response.getheader("Content-Type") or ""
        # G5: no JSON answer holds null
        return response.status, no_null(json.loads(data)) if kind == "application/json" else data
    finally:
        conn.close()


@pytest.fixture
def wiki(conn: Conn) -> ReferenceWiki:
    w = ReferenceWiki(HOST_SCHEMA)
    with conn.transaction():
        w.add_user(conn, "ana", email="ana@example.org", verified=True)
        w.set_settings(conn, mail_configured=True)
    return w


@pytest.fixture
def server(db_dsn: str, wiki: ReferenceWiki) -> Iterator[tuple[str, int]]:
    pool = open_pool(db_dsn)
    identity = IdentityCheck(proxy_secret=SECRET.encode())
    app = build_app(pool, schema=SCHEMA, admin_host=wiki, identity=identity)
    httpd = make_http_server(app, "127.0.0.1", 0)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield ("127.0.0.1", httpd.server_port)
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(10)
        pool.close()


def test_h2a_preferences_over_http_read_change_and_audit(
    server: tuple[str, int], conn: Conn
) -> None:
    ana = {USER_HEADER: "ana"}
    status, grid = call(server, "GET", "/notifications/preferences", headers=ana)
    assert status == 200 and grid["email_available"] is True
    change = {"categories": {"watched_page": {"email": False}}, "email_schedule": "hourly"}
    status, grid = call(server, "PATCH", "/notifications/preferences", change, headers=ana)
    assert status == 200 and grid["email_schedule"] == "hourly"
    row = next(c for c in grid["categories"] if c["category"] == "watched_page")
    assert row["email"]["own"] is True and row["email"]["enabled"] is False
    (audited,) = audit_log(conn, schema=SCHEMA)
    assert (audited.actor, audited.subject, audited.kind) == ("ana", "ana", "preferences")
    status, error = call(
        server, "PATCH", "/notifications/preferences", {"daily_hour": "9"}, headers=ana
    )
    assert status == 400
    assert error["error"]["code"] == "invalid_daily_hour"
    assert error["error"]["pointer"] == "/daily_hour"
    # Behind the host's authentication: no header, no answer.
    assert call(server, "GET", "/notifications/preferences")[0] == 401
    assert call(server, "PATCH", "/notifications/preferences", {})[0] == 401
    assert call(server, "PUT", "/notifications/preferences", {}, headers=ana)[0] == 405


def test_h2a_settings_over_http_for_the_administrator_only(
    server: tuple[str, int], conn: Conn
) -> None:
    admin = {ADMIN_HEADER: "root"}
    status, settings = call(server, "GET", "/notifications/admin/settings", headers=admin)
    assert status == 200 and settings["mail_batch_size"] == 100
    assert "unsubscribe_secret" not in settings
    status, settings = call(
        server, "PATCH", "/notifications/admin/settings", {"mail_batch_size": 250}, headers=admin
    )
    assert status == 200 and settings["mail_batch_size"] == 250
    (audited,) = audit_log(conn, schema=SCHEMA)
    assert (audited.actor, audited.subject) == ("root", "instance")
    assert (dict(audited.before), dict(audited.after)) == (
        {"mail_batch_size": 100},
        {"mail_batch_size": 250},
    )
    status, error = call(
        server, "PATCH", "/notifications/admin/settings", {"mail_batch_size": 5000}, headers=admin
    )
    assert (status, error["error"]["pointer"]) == (400, "/mail_batch_size")
    # A person who is only signed in is no administrator: the settings need X-Notify-Admin.
    user = {USER_HEADER: "ana"}
    assert call(server, "GET", "/notifications/admin/settings", headers=user)[0] == 401
    assert call(server, "PATCH", "/notifications/admin/settings", {}, headers=user)[0] == 401
    # Without the proxy's secret, or with another, X-Notify-Admin names nobody.
    for proof in ({}, {PROXY_SECRET_HEADER: SECRET[:-1] + "x"}):
        status, error = call(
            server,
            "PATCH",
            "/notifications/admin/settings",
            {"mail_batch_size": 7},
            headers=admin,
            proof=proof,
        )
        assert (status, error["error"]["code"]) == (401, "invalid_proof")
    assert len(audit_log(conn, schema=SCHEMA)) == 1


def test_h2a_settings_need_a_proof_even_on_loopback(db_dsn: str, wiki: ReferenceWiki) -> None:
    """With plain headers (no secret, no token) the settings routes answer 403, whatever
    X-Notify-Admin says; the preference routes still serve the X-Notify-User person."""
    pool = open_pool(db_dsn)
    httpd = make_http_server(build_app(pool, schema=SCHEMA, admin_host=wiki), "127.0.0.1", 0)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        base = ("127.0.0.1", httpd.server_port)
        admin = {ADMIN_HEADER: "root"}
        status, error = call(base, "GET", "/notifications/admin/settings", headers=admin)
        assert (status, error["error"]["code"]) == (403, "admin_needs_proof")
        status, _ = call(base, "PATCH", "/notifications/admin/settings", {}, headers=admin)
        assert status == 403
        status, _ = call(base, "GET", "/notifications/preferences", headers={USER_HEADER: "ana"})
        assert status == 200
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(10)
        pool.close()


def test_h2a_without_the_hosts_ports_the_routes_are_not_served(db_dsn: str) -> None:
    pool = open_pool(db_dsn)
    try:
        app = build_app(pool, schema=SCHEMA)
        rules = {rule.rule for rule in app.url_map.iter_rules()}
        assert "/notifications/preferences" not in rules
        assert "/notifications/admin/settings" not in rules
    finally:
        pool.close()


def test_h2a_a_pair_that_lets_the_purge_come_first_is_a_400_over_http(
    server: tuple[str, int], conn: Conn, wiki: ReferenceWiki
) -> None:
    """H2a (issue 38): the PATCH ``{"retention_days": 2, "email_delay_s": 259200}`` would purge
    pending entries before their mail goes: 400 naming the member, nothing written."""
    admin = {ADMIN_HEADER: "root"}
    change = {"retention_days": 2, "email_delay_s": 259_200}
    status, error = call(server, "PATCH", "/notifications/admin/settings", change, headers=admin)
    assert (status, error["error"]["code"], error["error"]["pointer"]) == (
        400,
        "invalid_retention",
        "/retention_days",
    )
    late = {"email_delay_s": 5_097_600}  # 59 days, beside a retention of 60
    status, error = call(server, "PATCH", "/notifications/admin/settings", late, headers=admin)
    assert (status, error["error"]["pointer"]) == (400, "/email_delay_s")
    assert wiki.inbox_retention_days(conn) == 60
    assert audit_log(conn, schema=SCHEMA) == []
