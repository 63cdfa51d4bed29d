"""Mounting notify's framework-neutral HTTP handlers in Starlette (ASGI): docs/embedding.md.

The handlers are plain blocking functions: an ASGI host reads the body in the event loop,
then runs the handler with its connection on a thread (`run_in_threadpool`), so a slow client
never holds a thread or a connection. Run it with any ASGI server, e.g.
``uvicorn --factory examples.embed_starlette:create_app`` with ``NOTIFY_DSN`` set.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Callable
from typing import Any

from psycopg_pool import ConnectionPool
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from notify_pg import http
from notify_pg.mail.secret import unsubscribe_secret

SCHEMA = os.environ.get("NOTIFY_SCHEMA", "notify")


def current_person(request: Request) -> str | None:
    """The host's authentication; this example trusts a header a proxy would set."""
    return request.headers.get("x-notify-user") or None


def to_starlette(answer: http.Response) -> Response:
    """A handler's `Response` as Starlette's."""
    return Response(answer.body, status_code=answer.status, headers=dict(answer.headers))


def create_app(dsn: str | None = None, *, schema: str = SCHEMA) -> Starlette:
    """The host's Starlette app with notify's inbox and one-click unsubscribe routes."""
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

    async def with_conn(call: Callable[[Any], http.Response]) -> Response:
        def run() -> http.Response:
            with pool.connection() as conn:
                return call(conn)

        return to_starlette(await run_in_threadpool(run))

    async def inbox_list(request: Request) -> Response:
        person = current_person(request)
        if person is None:
            return Response(status_code=401)
        query = request.url.query
        return await with_conn(lambda c: http.inbox_list(c, person, query=query, schema=schema))

    async def inbox_summary(request: Request) -> Response:
        person = current_person(request)
        if person is None:
            return Response(status_code=401)
        tag = request.headers.get("if-none-match")
        return await with_conn(
            lambda c: http.inbox_summary(c, person, if_none_match=tag, schema=schema)
        )

    async def inbox_read(request: Request) -> Response:
        person = current_person(request)
        if person is None:
            return Response(status_code=401)
        body = await request.body()  # in the event loop, before any connection
        kind = request.headers.get("content-type")
        return await with_conn(
            lambda c: http.inbox_read(c, person, content_type=kind, body=body, schema=schema)
        )

    async def inbox_dismiss(request: Request) -> Response:
        person = current_person(request)
        if person is None:
            return Response(status_code=401)
        entry = request.path_params["entry"]
        return await with_conn(lambda c: http.inbox_dismiss(c, person, entry, schema=schema))

    async def unsubscribe_post(request: Request) -> Response:
        body = await request.body()
        query, kind = request.url.query, request.headers.get("content-type")
        return await with_conn(
            lambda c: http.unsubscribe_post(
                c, secret=the_secret(c), query=query, content_type=kind, body=body, schema=schema
            )
        )

    async def unsubscribe_get(request: Request) -> Response:
        return to_starlette(http.unsubscribe_get(query=request.url.query))

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        yield
        pool.close()

    app = Starlette(
        routes=[
            Route("/notifications", inbox_list, methods=["GET"]),
            Route("/notifications/summary", inbox_summary, methods=["GET"]),
            Route("/notifications/read", inbox_read, methods=["PUT"]),
            Route("/notifications/{entry}", inbox_dismiss, methods=["DELETE"]),
            Route("/notifications/unsubscribe", unsubscribe_post, methods=["POST"]),
            Route("/notifications/unsubscribe", unsubscribe_get, methods=["GET"]),
        ],
        lifespan=lifespan,
    )
    app.state.pool = pool
    return app
