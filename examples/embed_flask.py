"""Mounting notify's framework-neutral HTTP handlers in Flask (WSGI): docs/embedding.md.

The host authenticates (here a stand-in, `current_person`), reads the body *before* it takes a
database connection, passes plain values to a handler and turns its `Response` into Flask's.
Run it with any WSGI server, e.g. ``gunicorn 'examples.embed_flask:create_app()'`` with
``NOTIFY_DSN`` set.
"""

from __future__ import annotations

import os
from typing import Any

import flask
from psycopg_pool import ConnectionPool

from notify_pg import http
from notify_pg.mail.secret import unsubscribe_secret

SCHEMA = os.environ.get("NOTIFY_SCHEMA", "notify")


def current_person() -> str | None:
    """The host's authentication; this example trusts a header a proxy would set.

    Only under a WSGI server that drops header names with ``_`` (Werkzeug's, gunicorn 22's
    default): ``X-Notify_User`` is the same environ key (docs/embedding.md).
    """
    return flask.request.headers.get("X-Notify-User") or None


def to_flask(answer: http.Response) -> flask.Response:
    """A handler's `Response` as Flask's: status, headers and body as they are."""
    return flask.Response(answer.body, status=answer.status, headers=list(answer.headers))


def create_app(dsn: str | None = None, *, schema: str = SCHEMA) -> flask.Flask:
    """The host's Flask app with notify's inbox and one-click unsubscribe routes."""
    app = flask.Flask(__name__)
    app.config["MAX_CONTENT_LENGTH"] = http.MAX_BODY_BYTES  # larger bodies: 413 unread
    pool: ConnectionPool[Any] = ConnectionPool(
        dsn or os.environ["NOTIFY_DSN"],
        min_size=1,
        max_size=4,
        timeout=2,
        kwargs={"autocommit": True},
        open=True,
    )
    secret: list[bytes] = []

    def the_secret(conn: Any) -> bytes:
        if not secret:
            secret.append(unsubscribe_secret(conn, schema=schema))
        return secret[0]

    # One inbox per site (H1): the site is part of the route, as in seed 004.
    @app.get("/sites/<site>/notifications")
    def inbox_list(site: str) -> flask.Response:
        person = current_person()
        if person is None:
            flask.abort(401)
        with pool.connection() as conn:
            return to_flask(
                http.inbox_list(
                    conn, person, query=flask.request.query_string, site=site, schema=schema
                )
            )

    @app.get("/sites/<site>/notifications/summary")
    def inbox_summary(site: str) -> flask.Response:
        person = current_person()
        if person is None:
            flask.abort(401)
        with pool.connection() as conn:
            return to_flask(
                http.inbox_summary(
                    conn,
                    person,
                    if_none_match=flask.request.headers.get("If-None-Match"),
                    site=site,
                    schema=schema,
                )
            )

    @app.put("/sites/<site>/notifications/read")
    def inbox_read(site: str) -> flask.Response:
        person = current_person()
        if person is None:
            flask.abort(401)
        body = flask.request.get_data()  # the whole body first, then a connection
        with pool.connection() as conn:
            return to_flask(
                http.inbox_read(
                    conn,
                    person,
                    content_type=flask.request.content_type,
                    body=body,
                    site=site,
                    schema=schema,
                )
            )

    @app.delete("/sites/<site>/notifications/<entry>")
    def inbox_dismiss(site: str, entry: str) -> flask.Response:
        person = current_person()
        if person is None:
            flask.abort(401)
        with pool.connection() as conn:
            return to_flask(http.inbox_dismiss(conn, person, entry, site=site, schema=schema))

    @app.post("/notifications/unsubscribe")
    def unsubscribe_post() -> flask.Response:
        # No session, no cookie: the token is the only credential (RFC 8058).
        body = flask.request.get_data()
        with pool.connection() as conn:
            return to_flask(
                http.unsubscribe_post(
                    conn,
                    secret=the_secret(conn),
                    query=flask.request.query_string,
                    content_type=flask.request.content_type,
                    body=body,
                    schema=schema,
                )
            )

    @app.get("/notifications/unsubscribe")
    def unsubscribe_get() -> flask.Response:
        return to_flask(http.unsubscribe_get(query=flask.request.query_string))

    app.extensions["notify_pool"] = pool
    return app
