"""The preference and settings routes of ``notify serve`` answered natively (issue 39 point 3):
the same reference app served as WSGI (Werkzeug's server, a thread per request) and by the
ASGI front with a refusing executor (so every answer below is native), asked the same raw
HTTP requests: the same status, headers and body, errors included (bad JSON, unknown
members, a forbidden administrator, a missing person); and with `notify serve`'s assembly
on the reference host no built-in route reaches a thread."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import psycopg
from pgworld import HOST_SCHEMA, SCHEMA
from webworld import NoThreads, edit, make_wiki, raw, request

from notify_core.mail import unsubscribe_token
from notify_pg.http.app import ADMIN_HEADER, USER_HEADER, build_app, make_http_server, open_pool
from notify_pg.http.identity import PROXY_SECRET_HEADER, IdentityCheck
from notify_pg.http.live import LiveHub
from notify_pg.http.server import AsgiApp, ServingThread
from notify_pg.mail.secret import unsubscribe_secret
from notify_pg.mail.settings import audit_log
from notify_reference_host.wiki import ReferenceWiki

Conn = psycopg.Connection[Any]
SECRET = "s3cret-of-the-hosts-proxy-0123456789"
PROOF = {PROXY_SECRET_HEADER: SECRET}
JSON = {"Content-Type": "application/json"}
ANA = {USER_HEADER: "ana", **PROOF, **JSON}
ROOT = {ADMIN_HEADER: "root", **PROOF, **JSON}
PREFS = "/notifications/preferences"
SETTINGS = "/notifications/admin/settings"
#: The headers an answer is compared by (the server's own, Date and Server, differ).
COMPARED = ("content-type", "content-length", "cache-control", "allow", "retry-after", "etag")

Answer = tuple[int | None, dict[str, str], bytes]


def without(headers: Mapping[str, str], name: str) -> dict[str, str]:
    return {k: v for k, v in headers.items() if k != name}


def answer(port: int, method: str, target: str, body: bytes, headers: Mapping[str, str]) -> Answer:
    """Status, the compared headers and the body of one request on a new connection."""
    status, got = raw(port, request(method, target, body, headers))
    head, _, content = got.partition(b"\r\n\r\n")
    fields: dict[str, str] = {}
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.decode("latin-1").partition(":")
        if name.lower() in COMPARED:
            fields[name.lower()] = value.strip()
    return status, fields, content


@contextmanager
def both_ways(
    dsn: str, host: Any, identity: IdentityCheck | None = None
) -> Iterator[tuple[int, int, NoThreads]]:
    """One reference app with the host's ports: its WSGI port, its native port (whose
    executor refuses work) and that executor."""
    pool = open_pool(dsn)
    app = build_app(pool, schema=SCHEMA, admin_host=host, identity=identity)
    httpd = make_http_server(app, "127.0.0.1", 0)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    asgi = AsgiApp(app)
    refuse = NoThreads()
    asgi._executor = refuse  # type: ignore[assignment]
    try:
        with ServingThread(asgi) as served:
            yield httpd.server_port, served.port, refuse
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(10)
        pool.close()


def same(
    ports: tuple[int, int, NoThreads],
    method: str,
    target: str,
    body: bytes,
    headers: Mapping[str, str],
) -> Answer:
    """Ask natively first (a change is made there), then as WSGI: the answers are equal."""
    wsgi_port, native_port, refuse = ports
    native = answer(native_port, method, target, body, headers)
    assert refuse.asked == 0, (method, target)
    wsgi = answer(wsgi_port, method, target, body, headers)
    assert native == wsgi, (method, target, body)
    return native


def wiki_with_mail(conn: Conn) -> ReferenceWiki:
    wiki = make_wiki(conn, readers=("ana",))
    with conn.transaction():
        wiki.set_settings(conn, mail_configured=True)
        conn.execute(f"UPDATE {HOST_SCHEMA}.wiki_sites SET https = false WHERE id = 's1'")
    edit(conn, wiki)  # an entry whose mail is pending: the status card counts it
    return wiki


def test_h2_a_change_of_preferences_answers_the_same_natively_and_as_wsgi(
    db_dsn: str, conn: Conn
) -> None:
    wiki = wiki_with_mail(conn)
    with both_ways(db_dsn, wiki, IdentityCheck(proxy_secret=SECRET.encode())) as ports:
        ana = ANA
        change = b'{"categories":{"watched_page":{"email":false}}}'
        got = same(ports, "PATCH", PREFS, change, ana)
        assert got[0] == 200 and b'"enabled":false' in got[2]
        # E3: a schedule change moves the pending mail, in the change's transaction.
        daily = b'{"email_schedule":"daily","daily_hour":8}'
        got = same(ports, "PATCH", PREFS, daily, ana)
        assert got[0] == 200 and b'"email_schedule":"daily"' in got[2]
        assert same(ports, "GET", PREFS, b"", ana)[0] == 200
        refused = [
            (b"{not json", ana, 400),
            (b"[1]", ana, 400),
            (b"", ana, 400),
            (b'{"nope":1}', ana, 400),
            (b'{"categories":{"nope":{"email":false}}}', ana, 400),
            (b'{"daily_hour":"9"}', ana, 400),
            (b'{"email_schedule":"hourly"}', {**ana, USER_HEADER: "ghost"}, 404),
            (b"{}", {**ana, "Content-Type": "text/plain"}, 400),
            (b"{}", without(ana, USER_HEADER), 401),
            (b"{}", without(ana, PROXY_SECRET_HEADER), 401),
        ]
        for body, headers, status in refused:
            got = same(ports, "PATCH", PREFS, body, headers)
            assert got[0] == status, (body, got)
            if status == 400:
                assert got[2].startswith(b'{"error":{"code":'), got
        assert same(ports, "PUT", PREFS, b"{}", ana)[0] == 405
    # Each change wrote once (natively; the WSGI call after it found nothing to change).
    assert [row.kind for row in audit_log(conn, schema=SCHEMA)] == ["preferences"] * 2


def test_h2a_the_settings_answer_the_same_natively_and_as_wsgi(db_dsn: str, conn: Conn) -> None:
    wiki = wiki_with_mail(conn)
    with both_ways(db_dsn, wiki, IdentityCheck(proxy_secret=SECRET.encode())) as ports:
        root = ROOT
        got = same(ports, "GET", SETTINGS, b"", root)
        assert got[0] == 200 and b'"plain_http_sites":["s1"]' in got[2]
        assert b'"pending":1' in got[2]
        assert same(ports, "HEAD", SETTINGS, b"", root)[0] == 200
        got = same(ports, "PATCH", SETTINGS, b'{"mail_batch_size":250}', root)
        assert got[0] == 200 and b'"mail_batch_size":250' in got[2]
        refused = [
            (b"{not json", root, 400),
            (b'{"unsubscribe_secret":"x"}', root, 400),
            (b'{"mail_configured":false}', root, 400),
            (b'{"status":{}}', root, 400),
            (b'{"mail_batch_size":5000}', root, 400),
            (b'{"retention_days":2,"email_delay_s":259200}', root, 400),
            (b"{}", {**root, "Content-Type": "text/plain"}, 400),
            (b"{}", without(root, ADMIN_HEADER), 401),
            (b"{}", {**root, PROXY_SECRET_HEADER: SECRET[:-1] + "x"}, 401),
            (b"{}", {**without(root, ADMIN_HEADER), USER_HEADER: "ana"}, 401),
        ]
        for body, headers, status in refused:
            got = same(ports, "PATCH", SETTINGS, body, headers)
            assert got[0] == status, (body, got)
        assert same(ports, "GET", SETTINGS, b"", {USER_HEADER: "ana", **PROOF})[0] == 401
        assert same(ports, "DELETE", SETTINGS, b"", root)[0] == 405
    (audited,) = audit_log(conn, schema=SCHEMA)
    assert (audited.actor, audited.subject) == ("root", "instance")


def test_h2a_without_a_proof_configured_the_settings_are_forbidden_both_ways(
    db_dsn: str, conn: Conn
) -> None:
    """Plain headers (no secret, no token): the administrator is forbidden (403) on both
    paths, and the person of the plain header changes their preferences on both."""
    wiki = wiki_with_mail(conn)
    with both_ways(db_dsn, wiki) as ports:
        for method in ("GET", "PATCH"):
            got = same(ports, method, SETTINGS, b"{}", {ADMIN_HEADER: "root", **JSON})
            assert got[0] == 403 and b"admin_needs_proof" in got[2]
        stop = b'{"stop_all_email":true}'
        assert same(ports, "PATCH", PREFS, stop, {USER_HEADER: "ana", **JSON})[0] == 200
        assert same(ports, "PATCH", PREFS, b"{}", JSON)[0] == 401


class BlockingWiki:
    """The reference wiki without the plan forms of its ports (a host with blocking methods
    only)."""

    def __init__(self, wiki: ReferenceWiki) -> None:
        self.wiki = wiki

    def __getattr__(self, name: str) -> Any:
        if name.endswith("_plan"):
            raise AttributeError(name)
        return getattr(self.wiki, name)


def test_h2a_a_hosts_blocking_ports_keep_the_routes_on_the_threads(db_dsn: str, conn: Conn) -> None:
    """A host whose administration ports have no plan form: the routes are served, on the
    app's threads (the executor is asked), with the answers of the WSGI app."""
    wiki = wiki_with_mail(conn)
    pool = open_pool(db_dsn)
    identity = IdentityCheck(proxy_secret=SECRET.encode())
    app = build_app(pool, schema=SCHEMA, admin_host=BlockingWiki(wiki), identity=identity)
    try:
        asgi = AsgiApp(app)
        assert asgi.native is not None
        assert asgi.native.match("PATCH", PREFS) is None
        assert asgi.native.match("GET", SETTINGS) is None
        with ServingThread(asgi) as served:
            hourly = b'{"email_schedule":"hourly"}'
            status, _h, body = answer(served.port, "PATCH", PREFS, hourly, ANA)
            assert status == 200 and b'"email_schedule":"hourly"' in body
            status, _h, body = answer(served.port, "GET", SETTINGS, b"", ROOT)
            assert status == 200 and b'"plain_http_sites":["s1"]' in body
    finally:
        pool.close()


def test_h2_with_notify_serves_assembly_no_built_in_route_reaches_a_thread(
    db_dsn: str, conn: Conn
) -> None:
    """`notify serve --host-schema` (the reference wiki's ports, its hidden sites, its
    unsubscribe paths, a proof, the live hub): every route of the app's URL map is native,
    and a request to each is answered with the executor refusing work."""
    wiki = wiki_with_mail(conn)
    token = unsubscribe_token(unsubscribe_secret(conn, schema=SCHEMA), "ana", ["watched_page"])
    pool = open_pool(db_dsn)
    app = build_app(
        pool,
        schema=SCHEMA,
        hidden_sites_plan=wiki.sites_off_plan,
        admin_host=wiki,
        unsubscribe_paths=["/u"],
        identity=IdentityCheck(proxy_secret=SECRET.encode()),
    )
    asgi = AsgiApp(app, live=LiveHub(db_dsn, schema=SCHEMA, reconnect_delay=0.2))
    assert asgi.native is not None
    values = {"site": "s1", "entry": "1", "page": "p1"}
    for rule in app.url_map.iter_rules():
        path = rule.rule.replace("<", "{").replace(">", "}").format(**values)
        for method in sorted(rule.methods or ()):
            if method != "OPTIONS":
                assert asgi.native.match(method, path) is not None, (method, rule.rule)
    refuse = NoThreads()
    asgi._executor = refuse  # type: ignore[assignment]
    one_click = b"List-Unsubscribe=One-Click"
    form = {**PROOF, "Content-Type": "application/x-www-form-urlencoded"}
    asked = [
        ("GET", "/sites/s1/notifications", b"", ANA, 200),
        ("GET", "/sites/s1/notifications/summary", b"", ANA, 200),
        ("PUT", "/sites/s1/notifications/read", b"{}", ANA, 200),
        ("PUT", "/sites/s1/notifications/1/read", b"", ANA, 200),
        ("DELETE", "/sites/s1/notifications/999", b"", ANA, 404),
        ("PUT", "/sites/s1/notifications/pages/p1/view", b"", ANA, 200),
        ("PUT", "/sites/s1/notifications/pages/p1/talk", b"", ANA, 200),
        ("GET", "/notifications/sites", b"", ANA, 200),
        ("GET", PREFS, b"", ANA, 200),
        ("PATCH", PREFS, b'{"stop_all_email":true}', ANA, 200),
        ("GET", SETTINGS, b"", ROOT, 200),
        ("PATCH", SETTINGS, b'{"mail_batch_size":50}', ROOT, 200),
        ("GET", f"/notifications/unsubscribe/info?t={token}", b"", PROOF, 200),
        ("GET", f"/notifications/unsubscribe?t={token}", b"", PROOF, 303),
        ("GET", f"/unsubscribe?t={token}", b"", PROOF, 200),
        ("POST", f"/notifications/unsubscribe?t={token}", one_click, form, 200),
        ("POST", f"/u?t={token}", one_click, form, 200),
        ("GET", f"/u/info?t={token}", b"", PROOF, 200),
        ("GET", "/healthz", b"", {}, 200),
        ("GET", "/readyz", b"", {}, 200),
    ]
    try:
        with ServingThread(asgi) as served:
            for method, target, body, headers, status in asked:
                got = answer(served.port, method, target, body, headers)
                assert got[0] == status, (method, target, got)
        assert refuse.asked == 0
    finally:
        pool.close()
