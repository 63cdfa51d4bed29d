"""``notify serve``'s native routes (issue 39 point 3): every route of the reference app is
answered in the event loop on an asyncio connection, with no thread; the summary poll is a
304 from the kept summaries, which never outlive a write; /healthz and /readyz."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from typing import Any

import psycopg
from pgworld import SCHEMA
from webworld import T0, NoThreads, body_json, edit, make_wiki, raw, request, serving

from notify_core.mail import unsubscribe_token
from notify_pg.db.pool import FastPool
from notify_pg.http import Response
from notify_pg.http.app import build_app
from notify_pg.http.server import AsgiApp, ServingThread
from notify_pg.mail.secret import unsubscribe_secret

Conn = psycopg.Connection[Any]
ANA = {"X-Notify-User": "ana"}
SUMMARY = "/sites/s1/notifications/summary"


@contextlib.contextmanager
def threadless(dsn: str, **options: Any) -> Iterator[tuple[int, NoThreads]]:
    with serving(dsn, **options) as served:
        refuse = NoThreads()
        served.asgi._executor = refuse  # type: ignore[assignment]
        yield served.port, refuse


def status(port: int, method: str, target: str, body: bytes = b"", **headers: str) -> int | None:
    return raw(port, request(method, target, body, headers))[0]


def test_h2_every_route_is_answered_in_the_event_loop_without_a_thread(
    db_dsn: str, conn: Conn
) -> None:
    wiki = make_wiki(conn, readers=("ana",))
    edit(conn, wiki)
    token = unsubscribe_token(unsubscribe_secret(conn, schema=SCHEMA), "ana", ["watched_page"])
    with threadless(db_dsn) as (port, refuse):
        got, answer = raw(port, request("GET", "/sites/s1/notifications", headers=ANA))
        (entry,) = body_json(answer)["entries"]
        got_summary, summary = raw(port, request("GET", SUMMARY, headers=ANA))
        etag = next(
            line.split(b":", 1)[1].strip().decode()
            for line in summary.split(b"\r\n")
            if line.lower().startswith(b"etag:")
        )
        one_click = b"List-Unsubscribe=One-Click"
        form = {"Content-Type": "application/x-www-form-urlencoded"}
        answers = [
            got,
            got_summary,
            status(port, "GET", SUMMARY, **ANA, **{"If-None-Match": etag}),
            status(port, "GET", "/sites/s1/notifications?unread=1", **ANA),
            status(port, "PUT", f"/sites/s1/notifications/{entry['id']}/read", **ANA),
            status(port, "PUT", "/sites/s1/notifications/read", b"{}", **ANA),
            status(port, "DELETE", f"/sites/s1/notifications/{entry['id']}", **ANA),
            status(port, "GET", "/sites/s1/notifications"),  # no person
            status(port, "GET", f"/notifications/unsubscribe/info?t={token}"),
            status(port, "GET", f"/notifications/unsubscribe?t={token}"),
            status(port, "GET", f"/unsubscribe?t={token}"),
            status(port, "POST", f"/notifications/unsubscribe?t={token}", one_click, **form),
            status(port, "POST", "/notifications/unsubscribe?t=forged", one_click, **form),
            status(port, "GET", "/healthz"),
            status(port, "GET", "/readyz"),
            status(port, "GET", "/nowhere"),
            status(port, "POST", SUMMARY, **ANA),
            status(port, "PUT", "/sites/s1/notifications/pages/p1/view", **ANA),
            status(port, "PUT", "/sites/s1/notifications/pages/p1/talk", **ANA),
            status(port, "GET", "/notifications/sites", **ANA),
        ]
        assert answers[:8] == [200, 200, 304, 200, 200, 200, 204, 401]
        assert answers[8:] == [200, 303, 200, 200, 400, 200, 200, 404, 405, 200, 200, 200]
        assert refuse.asked == 0


def test_h1_with_the_hosts_ports_the_list_and_the_sites_read_them_without_a_thread(
    db_dsn: str, conn: Conn
) -> None:
    """`notify serve --host-schema`: the reference wiki's ports have plan forms, so the list
    (links, names, sentences), the sites route and the preference grid read them on the
    asyncio connection."""
    wiki = make_wiki(conn, readers=("ana",))
    edit(conn, wiki)
    with threadless(db_dsn, admin=True) as (port, refuse):
        got, answer = raw(port, request("GET", "/sites/s1/notifications", headers=ANA))
        (entry,) = body_json(answer)["entries"]
        assert got == 200 and entry["link"].endswith("/docs/start") and entry["text"]
        got, answer = raw(port, request("GET", "/notifications/sites", headers=ANA))
        assert got == 200 and [s["id"] for s in body_json(answer)["sites"]] == ["s1"]
        assert raw(port, request("GET", SUMMARY, headers=ANA))[0] == 200
        got, answer = raw(port, request("GET", "/notifications/preferences", headers=ANA))
        assert got == 200 and "categories" in body_json(answer)
        assert refuse.asked == 0


def etag_of(answer: bytes) -> str:
    for line in answer.split(b"\r\n"):
        if line.lower().startswith(b"etag:"):
            return line.split(b":", 1)[1].strip().decode()
    raise AssertionError("no ETag")


def test_h1_a_kept_summary_is_a_304_until_a_write_moves_it_here_or_elsewhere(
    db_dsn: str, conn: Conn
) -> None:
    """The poll's 304 comes from the kept summary (no database read), a write of this
    process is seen by the very next poll, and one of another (the worker's fan-out) as soon
    as its notification arrives; the answers are always those of the database."""
    wiki = make_wiki(conn, readers=("ana",))
    edit(conn, wiki)
    with serving(db_dsn) as served:
        hub, kept = served.asgi.live, served.asgi.kept
        assert hub is not None and kept is not None
        deadline = time.monotonic() + 10
        while not hub.listening.is_set():
            assert time.monotonic() < deadline
            time.sleep(0.02)
        first = raw(served.port, request("GET", SUMMARY, headers=ANA))[1]
        assert body_json(first)["unread"] == 1 and len(kept) == 1
        poll = {**ANA, "If-None-Match": etag_of(first)}
        assert raw(served.port, request("GET", SUMMARY, headers=poll))[0] == 304
        # A read through this process: the next poll sees it, notification or not.
        assert (
            raw(served.port, request("PUT", "/sites/s1/notifications/read", b"{}", ANA))[0] == 200
        )
        second = raw(served.port, request("GET", SUMMARY, headers=poll))[1]
        assert body_json(second)["unread"] == 0
        # A write of the worker: within its notification's delay.
        edit(conn, wiki, 1)
        deadline = time.monotonic() + 5
        moved = {**ANA, "If-None-Match": etag_of(second)}
        while (got := raw(served.port, request("GET", SUMMARY, headers=moved)))[0] == 304:
            assert time.monotonic() < deadline, "the kept summary outlived a write"
            time.sleep(0.02)
        assert got[0] == 200 and body_json(got[1])["unread"] == 1


def test_readyz_says_503_while_the_database_cannot_be_reached_and_healthz_200() -> None:
    pool = FastPool("postgresql://nobody@127.0.0.1:9/none?connect_timeout=2", timeout=0.5)
    with ServingThread(AsgiApp(build_app(pool, schema=SCHEMA))) as served:
        got, answer = raw(served.port, request("GET", "/readyz"), timeout=10)
        assert got == 503 and b"retry-after: 2" in answer.lower()
        assert raw(served.port, request("GET", "/healthz"))[0] == 200
        assert raw(served.port, request("POST", "/healthz"))[0] == 405


def test_a_route_a_host_adds_to_the_app_is_still_served(db_dsn: str) -> None:
    """`ReferenceApp.route` keeps working: a route with no native handler runs on the app's
    threads (as a route whose host ports have no plan form)."""
    pool = FastPool(db_dsn)
    app = build_app(pool, schema=SCHEMA)

    def extra(_app: Any, _request: Any, values: dict[str, Any]) -> Response:
        return Response(status=200, body=json.dumps({"at": T0.isoformat()}).encode())

    app.route("/extra", ["GET"], "extra", extra)
    try:
        with ServingThread(AsgiApp(app)) as served:
            got, answer = raw(served.port, request("GET", "/extra"))
            assert got == 200 and body_json(answer) == {"at": T0.isoformat()}
    finally:
        pool.close()
