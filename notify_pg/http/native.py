"""The native routes of ``notify serve``: one coroutine per route, asyncio connections, no thread.

`NativeRoutes` answers, in the event loop, every route of a `notify_pg.http.app.ReferenceApp`
that has a native handler here: the routes' templates and methods are the app's own (its
Werkzeug URL map, so `notify_pg.http.app.build_app`'s options, the unsubscribe paths of E6
included, shape both), and each handler runs the plan of its framework-neutral handler
(`notify_pg.http.handlers`, `notify_pg.db.plan`) on a connection of an `AsyncFastPool`
(``async psycopg``). The answers are the same bytes the WSGI app gives.

- ``GET /healthz``: ``200 ok`` while the process serves (no database read);
- ``GET /readyz``: ``200 ready`` when a database connection answers within the pool's
  timeout, else ``503`` with ``Retry-After`` (a load balancer's readiness check);
- the summary poll is answered from `notify_pg.http.kept.KeptSummaries` while the live hub
  listens: a ``304`` without a database round trip.

The preference and settings routes run the plans of `notify_pg.http.admin` (the changes in
one transaction step, the status card's reads), reading and writing the host's
`AdminHostPorts` through their plan forms (`notify_pg.db.plan.port`), as the list and the
sites route read theirs. A route the app serves that has no native handler here (one a host
added with `ReferenceApp.route`), or whose host ports lack a plan form (`_HOST_PORTS`: a
host with blocking methods only), is not matched here: `notify_pg.http.server.AsgiApp`
runs it on the app's thread pool. `notify_reference_host.wiki.ReferenceWiki` has every plan
form, so ``notify serve`` runs each built-in route here.
"""

from __future__ import annotations

import logging
import time
import urllib.parse
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final

import psycopg
from werkzeug.exceptions import MethodNotAllowed, NotFound
from werkzeug.routing import MapAdapter

from notify_pg import http
from notify_pg.db.apool import AsyncFastPool
from notify_pg.db.errors import StorageError
from notify_pg.db.plan import AsyncConn, Plan, one_row, ports_planned, run_plan_async
from notify_pg.db.seam import Seam
from notify_pg.http import handlers
from notify_pg.http.admin import (
    preferences_get_plan,
    preferences_patch_plan,
    settings_get_plan,
    settings_patch_plan,
)
from notify_pg.http.app import RETRY_AFTER, UNMATCHED, ReferenceApp, unsubscribe_page_answer
from notify_pg.http.kept import KeptSummaries
from notify_pg.http.shown import PLAN_PORTS
from notify_pg.mail.secret import unsubscribe_secret_plan
from notify_pg.mail.settings import (
    PREFERENCE_CHANGE_PORTS,
    PREFERENCE_PORTS,
    SETTINGS_CHANGE_PORTS,
)

__all__ = ["HEALTH_PATH", "READY_PATH", "NativeRequest", "NativeRoutes"]

#: Liveness: the process answers.
HEALTH_PATH: Final = "/healthz"
#: Readiness: the process answers and reaches its database.
READY_PATH: Final = "/readyz"

_log = logging.getLogger("notify_pg.serve")
#: The most routes' matches `NativeRoutes.match` keeps (then it forgets them all).
_MATCHES_KEPT: Final = 10_000
_MISSING: Final = object()
_METHODS: Final = frozenset({"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH"})


class NativeRequest:
    """What a native handler reads of a request: method, query, headers, body."""

    __slots__ = ("body", "headers", "method", "query")

    def __init__(self, method: str, query: bytes, headers: Mapping[str, str], body: bytes):
        self.method = method
        self.query = query
        #: By lower-case name; repeated headers joined by ``,`` (as a WSGI environ joins them).
        self.headers = headers
        self.body = body


NativeHandler = Callable[["NativeRoutes", NativeRequest, dict[str, Any]], Awaitable[http.Response]]


def _text(status: int, text: str, *headers: tuple[str, str]) -> http.Response:
    return http.Response(
        status=status,
        headers=(("Content-Type", "text/plain; charset=utf-8"), *headers),
        body=f"{text}\n".encode(),
    )


class NativeRoutes:
    """The native routes of one app (see the module's docstring).

    Args:
        app: the reference app whose routes, identity, schema and hooks are served.
        pool: the asyncio connections (``connection()`` as an async context manager).
        kept: the kept summaries (``None``: every poll reads the database).
    """

    def __init__(
        self, app: ReferenceApp, pool: AsyncFastPool | Any, kept: KeptSummaries | None = None
    ) -> None:
        self.app = app
        self.pool = pool
        self.kept = kept
        self._adapter: MapAdapter = app.url_map.bind("notify", "/")
        self._secret: bytes | None = None
        self._matches: dict[tuple[str, str], object] = {}
        # The inbox routes read the hidden sites, and some routes the host's ports: natively
        # only when those have plan forms.
        self._native = {
            endpoint
            for endpoint in _HANDLERS
            if app.is_builtin(endpoint)
            and not (app.hidden_by_host and endpoint.startswith("inbox_"))
            and ports_planned(app.admin_host, _HOST_PORTS.get(endpoint, ()))
        }

    def match(
        self, method: str, path: str
    ) -> tuple[str, NativeHandler | None, dict[str, Any]] | None:
        """The route's template, its native handler (``None``: a 404 or 405 answer, given
        in the handler's place by `answer`) and the URL's values; ``None`` when the app has
        the route but no native handler for it (the caller runs the app).

        The answers are kept per method and path (up to `_MATCHES_KEPT`): the poll asks the
        same path again and again, and Werkzeug's matcher is most of its cost."""
        key = (method, path)
        found = self._matches.get(key, _MISSING)
        if found is _MISSING:
            if len(self._matches) >= _MATCHES_KEPT:
                self._matches.clear()
            found = self._matches[key] = self._match(method, path)
        return found  # type: ignore[return-value]

    def _match(
        self, method: str, path: str
    ) -> tuple[str, NativeHandler | None, dict[str, Any]] | None:
        if path in (HEALTH_PATH, READY_PATH):
            if method in ("GET", "HEAD"):
                return path, _health if path == HEALTH_PATH else _ready, {}
            return path, None, {"allow": "GET, HEAD"}
        try:
            rule, values = self._adapter.match(path, method, return_rule=True)
        except MethodNotAllowed as exc:
            return UNMATCHED, None, {"allow": ", ".join(sorted(exc.valid_methods or ()))}
        except NotFound:
            return UNMATCHED, None, {}
        endpoint = str(rule.endpoint)
        if endpoint not in self._native:
            return None
        return rule.rule, _HANDLERS[endpoint], dict(values)

    async def answer(
        self,
        method: str,
        route: str,
        handler: NativeHandler | None,
        values: dict[str, Any],
        request: NativeRequest,
    ) -> http.Response:
        """Run a matched route's handler and log the request (one ``request`` line, as the
        WSGI app logs it; ``on_request`` told); every failure is an answer."""
        started = time.perf_counter()
        if handler is None:
            allow = values.get("allow")
            if allow is None:
                response = _text(404, "not found")
            else:
                response = _text(405, "method not allowed", ("Allow", allow))
        else:
            try:
                response = await handler(self, request, values)
            except (StorageError, psycopg.Error) as exc:
                failed = {"error_type": type(exc).__name__}
                _log.warning("storage failed", extra={"fields": failed})
                response = _text(503, "storage unavailable", ("Retry-After", RETRY_AFTER))
            except Exception as exc:  # a bug: answer without detail, keep serving
                _log.error("handler failed", extra={"fields": {"error_type": type(exc).__name__}})
                response = _text(500, "internal error")
        seconds = time.perf_counter() - started
        label = method if method in _METHODS else "other"
        if _log.isEnabledFor(logging.INFO):
            fields: dict[str, Any] = {
                "method": label,
                "route": route,
                "status": response.status,
                "duration_ms": round(seconds * 1000, 1),
            }
            _log.info("request", extra={"fields": fields})
        if self.app.on_request is not None:
            self.app.on_request(label, route, response.status, seconds)
        return response

    async def run(self, plan: Plan[http.Response]) -> http.Response:
        """Run a plan on one connection of the pool."""
        async with self.pool.connection() as conn:
            return await run_plan_async(conn, plan)

    async def secret(self, conn: AsyncConn) -> bytes:
        """The unsubscribe secret, read (or generated) once per process and kept."""
        if self._secret is None:
            self._secret = await run_plan_async(conn, unsubscribe_secret_plan(schema=self.schema))
        return self._secret

    @property
    def schema(self) -> str:
        """The library's schema."""
        return self.app.schema

    def hidden(self) -> Plan[Sequence[str]]:
        """The plan of the sites hidden from the inbox (N5): the app's, or none."""
        plan = self.app.hidden_sites_plan
        if plan is None:
            return ()
        return (yield from plan())


async def _health(routes: NativeRoutes, request: NativeRequest, values: dict[str, Any]) -> Any:
    return _text(200, "ok", ("Cache-Control", "no-store"))


async def _ready(routes: NativeRoutes, request: NativeRequest, values: dict[str, Any]) -> Any:
    seam = Seam("notify_pg", routes.schema)
    try:
        async with routes.pool.connection() as conn:
            await run_plan_async(conn, one_row(seam, "unsubscribe_secret_get"))
    except (StorageError, psycopg.Error):
        return _text(503, "not ready", ("Retry-After", RETRY_AFTER), ("Cache-Control", "no-store"))
    return _text(200, "ready", ("Cache-Control", "no-store"))


def _person(routes: NativeRoutes, request: NativeRequest) -> str | http.Response:
    return routes.app.identity.person(lambda name: request.headers.get(name.lower()))


async def _unsubscribe_post(
    routes: NativeRoutes, request: NativeRequest, _values: dict[str, Any]
) -> http.Response:
    async with routes.pool.connection() as conn:
        plan = handlers.unsubscribe_post_plan(
            secret=await routes.secret(conn),
            query=request.query,
            content_type=request.headers.get("content-type"),
            body=request.body,
            schema=routes.schema,
        )
        return await run_plan_async(conn, plan)


async def _unsubscribe_get(
    routes: NativeRoutes, request: NativeRequest, _values: dict[str, Any]
) -> http.Response:
    return handlers.unsubscribe_get(query=request.query, page=routes.app.unsubscribe_page)


async def _info(routes: NativeRoutes, request: NativeRequest) -> http.Response:
    async with routes.pool.connection() as conn:
        plan = handlers.unsubscribe_info_plan(
            secret=await routes.secret(conn), query=request.query, schema=routes.schema
        )
        return await run_plan_async(conn, plan)


async def _unsubscribe_info(
    routes: NativeRoutes, request: NativeRequest, _values: dict[str, Any]
) -> http.Response:
    return await _info(routes, request)


async def _unsubscribe_page(
    routes: NativeRoutes, request: NativeRequest, _values: dict[str, Any]
) -> http.Response:
    """The stand-in unsubscribe page (`notify_pg.http.app`'s, the same bytes)."""
    info = await _info(routes, request)
    found = urllib.parse.parse_qs(request.query.decode("latin-1")).get("t", [""])
    return unsubscribe_page_answer(info, found[0])


def _inbox(
    make: Callable[[NativeRoutes, NativeRequest, dict[str, Any], str], Plan[http.Response]],
    *,
    writes: bool = False,
) -> NativeHandler:
    """An inbox route: the person from the app's identity (its refusal without one), the
    hidden sites and the handler's plan on one connection; a write forgets the person's
    kept summaries before it answers."""

    async def handler(
        routes: NativeRoutes, request: NativeRequest, values: dict[str, Any]
    ) -> http.Response:
        user = _person(routes, request)
        if isinstance(user, http.Response):
            return user
        try:
            return await routes.run(make(routes, request, values, user))
        finally:
            if writes and routes.kept is not None:
                routes.kept.forget([user])

    return handler


def _list(
    routes: NativeRoutes, request: NativeRequest, values: dict[str, Any], user: str
) -> Plan[http.Response]:
    hidden = yield from routes.hidden()
    return (
        yield from handlers.inbox_list_plan(
            user,
            query=request.query,
            hidden_sites=hidden,
            site=values["site"],
            schema=routes.schema,
            host=routes.app.admin_host,
        )
    )


def _sites(
    routes: NativeRoutes, request: NativeRequest, values: dict[str, Any], user: str
) -> Plan[http.Response]:
    hidden = yield from routes.hidden()
    return (
        yield from handlers.inbox_sites_plan(
            user, host=routes.app.admin_host, hidden_sites=hidden, schema=routes.schema
        )
    )


def _preferences(
    routes: NativeRoutes, request: NativeRequest, values: dict[str, Any], user: str
) -> Plan[http.Response]:
    host = routes.app.admin_host
    assert host is not None  # the route exists only with the host's ports
    return (yield from preferences_get_plan(host, user, schema=routes.schema))


def _preferences_patch(
    routes: NativeRoutes, request: NativeRequest, values: dict[str, Any], user: str
) -> Plan[http.Response]:
    host = routes.app.admin_host
    assert host is not None  # the route exists only with the host's ports
    plan = preferences_patch_plan(
        host,
        user,
        content_type=request.headers.get("content-type"),
        body=request.body,
        schema=routes.schema,
    )
    return (yield from plan)


async def _settings(
    routes: NativeRoutes, request: NativeRequest, values: dict[str, Any]
) -> http.Response:
    """The settings routes: the administrator from the app's identity, which asks for proof
    always (``403`` without a secret or token configured), then the read or the change."""
    admin = routes.app.identity.admin(lambda name: request.headers.get(name.lower()))
    if isinstance(admin, http.Response):
        return admin
    host = routes.app.admin_host
    assert host is not None
    if request.method in ("GET", "HEAD"):  # Werkzeug adds HEAD to a GET rule
        return await routes.run(settings_get_plan(host, schema=routes.schema))
    plan = settings_patch_plan(
        host,
        admin,
        content_type=request.headers.get("content-type"),
        body=request.body,
        schema=routes.schema,
    )
    return await routes.run(plan)


async def _inbox_summary(
    routes: NativeRoutes, request: NativeRequest, values: dict[str, Any]
) -> http.Response:
    """The summary poll: from the kept summaries when the app hides no site by a query,
    else one connection for the hidden sites (and the summary when it is not kept)."""
    user = _person(routes, request)
    if isinstance(user, http.Response):
        return user
    site: str = values["site"]
    tag = request.headers.get("if-none-match")
    kept = routes.kept
    if kept is not None and routes.app.hidden_sites_plan is None:
        found = kept.get(user, site, ())
        if found is not None:
            return handlers.summary_response(found, tag)
    async with routes.pool.connection() as conn:
        hidden = await run_plan_async(conn, routes.hidden())
        if kept is not None:
            found = kept.get(user, site, hidden)
            if found is not None:
                return handlers.summary_response(found, tag)
            generation = kept.generation
        reads = handlers._reads(routes.schema)
        found = await run_plan_async(conn, reads.summary_plan(user, hidden_sites=hidden, site=site))
    if kept is not None:
        kept.keep(user, site, hidden, found, generation)
    return handlers.summary_response(found, tag)


def _read(
    routes: NativeRoutes, request: NativeRequest, values: dict[str, Any], user: str
) -> Plan[http.Response]:
    return handlers.inbox_read_plan(
        user,
        content_type=request.headers.get("content-type"),
        body=request.body,
        site=values["site"],
        schema=routes.schema,
    )


def _read_one(
    routes: NativeRoutes, request: NativeRequest, values: dict[str, Any], user: str
) -> Plan[http.Response]:
    return handlers.inbox_read_one_plan(
        user, values["entry"], site=values["site"], schema=routes.schema
    )


def _dismiss(
    routes: NativeRoutes, request: NativeRequest, values: dict[str, Any], user: str
) -> Plan[http.Response]:
    return handlers.inbox_dismiss_plan(
        user, values["entry"], site=values["site"], schema=routes.schema
    )


def _view(talk: bool) -> Callable[..., Plan[http.Response]]:
    def view(
        routes: NativeRoutes, request: NativeRequest, values: dict[str, Any], user: str
    ) -> Plan[http.Response]:
        return handlers.inbox_view_plan(
            user, values["page"], talk=talk, site=values["site"], schema=routes.schema
        )

    return view


#: The native handler of each endpoint of `notify_pg.http.app.build_app`.
_HANDLERS: Final[dict[str, NativeHandler]] = {
    "unsubscribe_post": _unsubscribe_post,
    "unsubscribe_get": _unsubscribe_get,
    "unsubscribe_info": _unsubscribe_info,
    "unsubscribe_page": _unsubscribe_page,
    "inbox_list": _inbox(_list),
    "inbox_summary": _inbox_summary,
    "inbox_read": _inbox(_read, writes=True),
    "inbox_read_one": _inbox(_read_one, writes=True),
    "inbox_dismiss": _inbox(_dismiss, writes=True),
    "inbox_view_page": _inbox(_view(talk=False), writes=True),
    "inbox_view_talk": _inbox(_view(talk=True), writes=True),
    "inbox_sites": _inbox(_sites),
    "preferences_get": _inbox(_preferences),
    # A change of choices may hide or show entries: the person's kept summaries go.
    "preferences_patch": _inbox(_preferences_patch, writes=True),
    "settings": _settings,
}

#: The host's ports a route reads or writes: it is native only when the host has each one's
#: plan form (`notify_pg.db.plan.ports_planned`), else it runs on the app's threads.
_HOST_PORTS: Final[dict[str, tuple[str, ...]]] = {
    "inbox_list": PLAN_PORTS,
    "inbox_sites": PLAN_PORTS,
    "preferences_get": PREFERENCE_PORTS,
    "preferences_patch": PREFERENCE_CHANGE_PORTS,
    "settings": (*SETTINGS_CHANGE_PORTS, "inbox_plain_http_sites"),
}
