"""The embedding examples of docs/embedding.md (issue 28 point 6): notify's handlers mounted in
Flask (WSGI, through Flask's test client) and in Starlette (ASGI, served by uvicorn on a
thread, over real HTTP), on real PostgreSQL: list, summary with its ETag, read, a refused
null filter, dismiss, one-click unsubscribe and its GET."""

from __future__ import annotations

import http.client
import importlib.util
import json
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import psycopg
import pytest
import uvicorn
from pgworld import SCHEMA
from webworld import edit, make_wiki

from notify_core.mail import unsubscribe_token
from notify_pg.inbox.reads import InboxPreferences
from notify_pg.mail.secret import unsubscribe_secret

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def load_example(name: str) -> ModuleType:
    """Import ``examples/<name>.py`` (the folder is not a package)."""
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


embed_flask = load_example("embed_flask")
embed_starlette = load_example("embed_starlette")

Conn = psycopg.Connection[Any]
ANA = {"X-Notify-User": "ana"}
#: method, target, body, headers -> status, headers (lower-case names), body
Call = Callable[[str, str, bytes | None, dict[str, str]], tuple[int, dict[str, str], bytes]]


@contextmanager
def flask_calls(dsn: str) -> Iterator[Call]:
    app = embed_flask.create_app(dsn, schema=SCHEMA)
    client = app.test_client()

    def call(
        method: str, target: str, body: bytes | None, headers: dict[str, str]
    ) -> tuple[int, dict[str, str], bytes]:
        answer = client.open(target, method=method, data=body, headers=headers)
        return answer.status_code, {k.lower(): v for k, v in answer.headers}, answer.data

    try:
        yield call
    finally:
        app.extensions["notify_pool"].close()


@contextmanager
def starlette_calls(dsn: str) -> Iterator[Call]:
    config = uvicorn.Config(
        embed_starlette.create_app(dsn, schema=SCHEMA), port=0, log_config=None, lifespan="on"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]

    def call(
        method: str, target: str, body: bytes | None, headers: dict[str, str]
    ) -> tuple[int, dict[str, str], bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        try:
            conn.request(method, target, body=body, headers=headers)
            answer = conn.getresponse()
            return answer.status, {k.lower(): v for k, v in answer.getheaders()}, answer.read()
        finally:
            conn.close()

    try:
        yield call
    finally:
        server.should_exit = True
        thread.join(10)


@pytest.mark.parametrize("framework", [flask_calls, starlette_calls], ids=["flask", "starlette"])
def test_the_handlers_mounted_in_a_framework_answer_as_notify_serve_does(
    framework: Callable[[str], Any], db_dsn: str, conn: Conn
) -> None:
    wiki = make_wiki(conn, readers=("ana",))
    edit(conn, wiki)
    token = unsubscribe_token(unsubscribe_secret(conn, schema=SCHEMA), "ana", ["watched_page"])
    as_json = {**ANA, "Content-Type": "application/json"}
    with framework(db_dsn) as call:
        assert call("GET", "/sites/s1/notifications/summary", None, {})[0] == 401
        status, headers, body = call("GET", "/sites/s1/notifications/summary", None, ANA)
        assert status == 200 and json.loads(body)["unread"] == 1
        again = call(
            "GET",
            "/sites/s1/notifications/summary",
            None,
            {**ANA, "If-None-Match": headers["etag"]},
        )
        assert again[0] == 304
        (entry,) = json.loads(call("GET", "/sites/s1/notifications", None, ANA)[2])["entries"]
        status, _, body = call(
            "PUT", "/sites/s1/notifications/read", b'{"ids": [%d]}' % entry["id"], as_json
        )
        assert (status, json.loads(body)) == (200, {"read": [entry["id"]]})
        assert call("PUT", "/sites/s1/notifications/read", b'{"page": null}', as_json)[0] == 400
        assert call("DELETE", f"/sites/s1/notifications/{entry['id']}", None, ANA)[0] == 204
        target = f"/notifications/unsubscribe?{urllib.parse.urlencode({'t': token})}"
        assert call("GET", target, None, {})[0] == 303
        form = {"Content-Type": "application/x-www-form-urlencoded"}
        assert call("POST", target, b"List-Unsubscribe=One-Click", form)[0] == 200
    assert InboxPreferences(SCHEMA).rows(conn, ["ana"])["ana"] == {("watched_page", "email"): False}
