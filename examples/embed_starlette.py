"""Mounting notify's framework-neutral HTTP handlers in Starlette (ASGI): docs/embedding.md.

Each handler has a plan form (``http.inbox_list_plan`` and so on, `notify_pg.db.plan`): the
same logic, run here on an asyncio connection of a ``psycopg_pool.AsyncConnectionPool`` with
`run_plan_async`, in the event loop, with no thread. The body is awaited before a connection
is taken, so a slow client never holds one. Run it with any ASGI server, e.g.
``uvicorn --factory examples.embed_starlette:create_app`` with ``NOTIFY_DSN`` set.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from typing import Any

from psycopg_pool import AsyncConnectionPool
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from notify_pg import http
from notify_pg.db.plan import Plan, run_plan_async
from notify_pg.mail.secret import unsubscribe_secret_plan

SCHEMA = os.environ.get("NOTIFY_SCHEMA", "notify")


def current_person(request: Request) -> str | None:
    """The host's authentication; this example trusts a header a proxy would set."""
    return request.headers.get("x-notify-user") or None


def to_starlette(answer: http.Response) -> Response:
    """A handler's `Response` as Starlette's."""
    return Response(answer.body, status_code=answer.status, headers=dict(answer.headers))


def create_app(dsn: str | None = None, *, schema: str = SCHEMA) -> Starlette:
    """The host's Starlette app with notify's inbox and one-click unsubscribe routes."""
    pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
        dsn or os.environ["NOTIFY_DSN"],
        min_size=1,
        max_size=4,
        timeout=2,
        kwargs={"autocommit": True},
        open=False,  # opened by the lifespan, in the server's event loop
    )
    secret: list[bytes] = []

    async def run(plan: Plan[http.Response]) -> Response:
        async with pool.connection() as conn:
            return to_starlette(await run_plan_async(conn, plan))

    async def inbox_list(request: Request) -> Response:
        person = current_person(request)
        if person is None:
            return Response(status_code=401)
        query, site = request.url.query, request.path_params["site"]
        return await run(http.inbox_list_plan(person, query=query, site=site, schema=schema))

    async def inbox_summary(request: Request) -> Response:
        person = current_person(request)
        if person is None:
            return Response(status_code=401)
        tag, site = request.headers.get("if-none-match"), request.path_params["site"]
        return await run(
            http.inbox_summary_plan(person, if_none_match=tag, site=site, schema=schema)
        )

    async def inbox_read(request: Request) -> Response:
        person = current_person(request)
        if person is None:
            return Response(status_code=401)
        body = await request.body()  # in the event loop, before any connection
        kind = request.headers.get("content-type")
        site = request.path_params["site"]  # /sites/{site}/notifications/read (H1)
        plan = http.inbox_read_plan(person, content_type=kind, body=body, site=site, schema=schema)
        async with pool.connection() as conn:  # then a connection, no thread
            answer = await run_plan_async(conn, plan)
        return Response(answer.body, status_code=answer.status, headers=dict(answer.headers))

    async def inbox_dismiss(request: Request) -> Response:
        person = current_person(request)
        if person is None:
            return Response(status_code=401)
        entry, site = request.path_params["entry"], request.path_params["site"]
        return await run(http.inbox_dismiss_plan(person, entry, site=site, schema=schema))

    async def unsubscribe_post(request: Request) -> Response:
        body = await request.body()
        query, kind = request.url.query, request.headers.get("content-type")
        async with pool.connection() as conn:
            if not secret:
                secret.append(await run_plan_async(conn, unsubscribe_secret_plan(schema=schema)))
            plan = http.unsubscribe_post_plan(
                secret=secret[0], query=query, content_type=kind, body=body, schema=schema
            )
            return to_starlette(await run_plan_async(conn, plan))

    async def unsubscribe_get(request: Request) -> Response:
        return to_starlette(http.unsubscribe_get(query=request.url.query))

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        await pool.open()
        yield
        await pool.close()

    app = Starlette(
        routes=[
            # One inbox per site (H1): the site is part of the route, as in seed 004.
            Route("/sites/{site}/notifications", inbox_list, methods=["GET"]),
            Route("/sites/{site}/notifications/summary", inbox_summary, methods=["GET"]),
            Route("/sites/{site}/notifications/read", inbox_read, methods=["PUT"]),
            Route("/sites/{site}/notifications/{entry}", inbox_dismiss, methods=["DELETE"]),
            Route("/notifications/unsubscribe", unsubscribe_post, methods=["POST"]),
            Route("/notifications/unsubscribe", unsubscribe_get, methods=["GET"]),
        ],
        lifespan=lifespan,
    )
    app.state.pool = pool
    return app
