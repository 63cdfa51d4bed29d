"""A small reference web app over the HTTP handlers of `notify_pg.http.handlers` (``notify serve``).

A WSGI app on Werkzeug with a `notify_pg.db.pool.FastPool` (the ``serve`` extra). It is a
reference, for the demo and for tests that send real HTTP: a host mounts the handlers of
`notify_pg.http.handlers` in its own framework behind its own authentication. Here the person of
the inbox routes is read by `notify_pg.http.identity.IdentityCheck` (``identity``): by default
whatever the ``X-Notify-User`` header says (`USER_HEADER`), for loopback or behind a proxy
that authenticates and sets it; a host proves its requests with a shared secret header or
sends a signed token instead (``notify serve --proxy-secret-file``, ``--jwt-key-file``).

Routes (`build_app` makes them; `ReferenceApp.route` adds more; handlers of
`notify_pg.http.handlers` and ``notify_pg.http.admin``):

==========  =========================================  ==========================================
method      path                                       handler
==========  =========================================  ==========================================
POST        /notifications/unsubscribe?t=TOKEN         ``unsubscribe_post`` (U3)
GET         /notifications/unsubscribe?t=TOKEN         ``unsubscribe_get`` (U4)
GET         /notifications/unsubscribe/info?t=         ``unsubscribe_info`` (U4)
GET         /sites/SITE/notifications?cursor=&unread=  ``inbox_list`` (H1)
GET         /sites/SITE/notifications/summary          ``inbox_summary`` (H1)
PUT         /sites/SITE/notifications/read             ``inbox_read`` (H2)
PUT         /sites/SITE/notifications/ID/read          ``inbox_read_one`` (H2)
DELETE      /sites/SITE/notifications/ID               ``inbox_dismiss`` (H2)
PUT         /sites/SITE/notifications/pages/PAGE/view  ``inbox_view`` (H2: the page viewed)
PUT         /sites/SITE/notifications/pages/PAGE/talk  ``inbox_view`` (H2: its talk tab)
GET         /notifications/sites                       ``inbox_sites`` (H1: the inboxes)
GET         /unsubscribe?t=TOKEN                       a stand-in for the host's unsubscribe page
GET         /notifications/preferences                 ``admin.preferences_get`` (H2a)
PATCH       /notifications/preferences                 ``admin.preferences_patch`` (H2)
GET         /notifications/admin/settings              ``admin.settings_get`` (H2a)
PATCH       /notifications/admin/settings              ``admin.settings_patch`` (H2)
==========  =========================================  ==========================================

The preference and settings routes exist only when the app is given the host's ports
(``admin_host``, `notify_pg.mail.settings.AdminHostPorts`). The person of the preference
routes is read as for the inbox; the administrator of the settings routes is the
``X-Notify-Admin`` header (`ADMIN_HEADER`) behind the shared secret, or a token with the admin
claim, and never a plain header: without a secret or token configured, ``403``.

Failures are answers, never tracebacks: ``404`` and ``405`` for unknown routes and methods,
``401`` for an inbox or preference route without its person (or its proof), ``503`` when
PostgreSQL fails, ``500`` with no detail for a bug (logged with its type only).

Every request logs one line, ``request``, with its method, the route's template (``PUT
/sites/<site>/notifications/<entry>/read``, ``unmatched`` for none), the status and the
duration: never the path as sent (it holds entry ids), a query string (unsubscribe tokens)
nor a person. The app's ``on_request`` hook gets the same values (``notify serve
--metrics-port`` counts them, `notify_pg.ops.metrics.HttpMetrics`).
"""

from __future__ import annotations

import html
import json
import logging
import socket
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Final, Protocol

import psycopg
from werkzeug.exceptions import HTTPException, MethodNotAllowed, NotFound
from werkzeug.routing import Map, Rule
from werkzeug.serving import BaseWSGIServer, WSGIRequestHandler, make_server
from werkzeug.wrappers import Request
from werkzeug.wrappers import Response as WsgiResponse

from notify_core.mail import UNSUBSCRIBE_PATH
from notify_pg import http
from notify_pg.db.errors import StorageError, translate
from notify_pg.db.migrate import DEFAULT_SCHEMA
from notify_pg.db.plan import Plan, run_plan
from notify_pg.db.pool import FastPool
from notify_pg.db.seam import Conn
from notify_pg.http.identity import ADMIN_HEADER, USER_HEADER, IdentityCheck
from notify_pg.mail.secret import unsubscribe_secret
from notify_pg.mail.settings import AdminHostPorts

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIEnvironment

__all__ = [
    "ADMIN_HEADER",
    "INBOX_PREFIX",
    "UNMATCHED",
    "USER_HEADER",
    "ConnectionSource",
    "Handler",
    "ReferenceApp",
    "RequestHook",
    "build_app",
    "make_http_server",
    "open_pool",
]

#: Where the reference app mounts the inboxes: ``/sites/<site>/notifications`` (H1: one inbox
#: per site, the site in the path as a wiki's ``/_api/sites/:siteId/notifications``).
INBOX_PREFIX: Final = "/sites"
#: A route's handler: the app, the request and the URL's variables in; a response out.
Handler = Callable[["ReferenceApp", Request, dict[str, Any]], http.Response]


class ConnectionSource(Protocol):
    """Where the app's handlers get their connection: `FastPool` (``notify serve``) or a
    host's own pool with the same method (``psycopg_pool.ConnectionPool`` has it)."""

    def connection(self, timeout: float | None = None) -> AbstractContextManager[Conn]:
        """Lend one autocommit connection for a ``with`` block."""
        ...


#: Told of every request: method, route template, status and duration in seconds.
RequestHook = Callable[[str, str, int, float], None]

#: The route of a request no route matched (404, 405): one label, whatever the path was.
UNMATCHED: Final = "unmatched"

#: Methods logged and counted by name; any other is ``other`` (a client picks the method,
#: and a label must come from a closed vocabulary).
_METHODS: Final = frozenset({"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH"})

#: ``Retry-After`` of a ``503`` while the database fails: seconds a client waits.
RETRY_AFTER: Final = "2"

#: Where `_body` keeps the body it read in the WSGI environ.
_BODY_KEY: Final = "notify.body"

_log = logging.getLogger("notify_pg.serve")


class ReferenceApp:
    """The WSGI app: a Werkzeug URL map, one handler per endpoint, a connection pool.

    Args:
        pool: the connections (autocommit) the handlers use, one per request.
        schema: the library's schema.
        unsubscribe_page: where a ``GET`` on the one-click URL redirects (the host's page).
        hidden_sites: the sites whose notifications are off, read per inbox request (N5:
            their entries stay hidden); none by default.
        on_request: called after each request with its method, route template, status and
            duration in seconds (metrics); it must not raise.
        admin_host: the host's ports of the preference and settings routes (none: those
            routes are not served).
        identity: how the person and the administrator are read (`IdentityCheck`: plain
            headers by default, where the settings routes answer ``403``).
        hidden_sites_plan: ``hidden_sites`` as a plan (`notify_pg.db.plan`), which the
            native routes of `notify_pg.http.native` run on their asyncio connection too
            (``hidden_sites``, a blocking function, keeps the inbox routes on threads).
    """

    def __init__(
        self,
        pool: ConnectionSource,
        *,
        schema: str = DEFAULT_SCHEMA,
        unsubscribe_page: str = http.UNSUBSCRIBE_PAGE,
        hidden_sites: Callable[[Conn], Sequence[str]] | None = None,
        on_request: RequestHook | None = None,
        admin_host: AdminHostPorts | None = None,
        identity: IdentityCheck | None = None,
        hidden_sites_plan: Callable[[], Plan[Sequence[str]]] | None = None,
    ) -> None:
        check_page_url(unsubscribe_page)
        if hidden_sites is not None and hidden_sites_plan is not None:
            raise ValueError("give hidden_sites or hidden_sites_plan, not both")
        self.identity = identity or IdentityCheck()
        self.pool = pool
        self.admin_host = admin_host
        self.on_request = on_request
        self.schema = schema
        self.unsubscribe_page = unsubscribe_page
        self.hidden_sites_plan = hidden_sites_plan
        #: Whether the hidden sites come from a blocking function of the host.
        self.hidden_by_host = hidden_sites is not None
        if hidden_sites_plan is not None:
            self.hidden_sites: Callable[[Conn], Sequence[str]] = lambda conn: run_plan(
                conn, hidden_sites_plan()
            )
        else:
            self.hidden_sites = hidden_sites or (lambda _conn: ())
        self.url_map = Map(strict_slashes=False)
        self._handlers: dict[str, Handler] = {}
        self._secret: bytes | None = None
        self._secret_lock = threading.Lock()

    def route(self, path: str, methods: Iterable[str], endpoint: str, handler: Handler) -> None:
        """Add a route: ``path`` in Werkzeug's rule syntax, answered by ``handler``."""
        self.url_map.add(Rule(path, methods=list(methods), endpoint=endpoint))
        self._handlers[endpoint] = handler

    def is_builtin(self, endpoint: str) -> bool:
        """Whether ``endpoint`` is served by `build_app`'s own handler (not replaced with
        `route`): the native routes of `notify_pg.http.native` answer it the same way."""
        builtin = _BUILTIN.get(endpoint)
        return builtin is not None and self._handlers.get(endpoint) is builtin

    def secret(self, conn: Conn) -> bytes:
        """The unsubscribe secret, read (or generated) once per process and kept in memory."""
        with self._secret_lock:
            if self._secret is None:
                self._secret = unsubscribe_secret(conn, schema=self.schema)
            return self._secret

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        """Answer one WSGI request and log it (one ``request`` line)."""
        started = time.perf_counter()
        request = Request(environ)
        route, response = self._dispatch(request)
        seconds = time.perf_counter() - started
        method = request.method if request.method in _METHODS else "other"
        status = response.status_code
        fields = {
            "method": method,
            "route": route,
            "status": status,
            "duration_ms": round(seconds * 1000, 1),
        }
        _log.info("request", extra={"fields": fields})
        if self.on_request is not None:
            self.on_request(method, route, status, seconds)
        return response(environ, start_response)

    def dispatch(self, request: Request) -> WsgiResponse:
        """Route a request to its handler and turn every failure into a clean answer."""
        return self._dispatch(request)[1]

    def _dispatch(self, request: Request) -> tuple[str, WsgiResponse]:
        """The route's template (`UNMATCHED` for none) and the answer."""
        route = UNMATCHED
        try:
            rule, values = self.url_map.bind_to_environ(request.environ).match(return_rule=True)
            route = rule.rule
            answer = self._handlers[str(rule.endpoint)](self, request, dict(values))
        except MethodNotAllowed as exc:
            allowed = ", ".join(sorted(exc.valid_methods or ()))
            return route, _plain(405, "method not allowed", ("Allow", allowed))
        except NotFound:
            return route, _plain(404, "not found")
        except HTTPException as exc:  # e.g. a body over the size limit
            return route, _plain(exc.code or 400, exc.name.lower())
        except (StorageError, psycopg.Error) as exc:
            _log.warning("storage failed", extra={"fields": {"error_type": type(exc).__name__}})
            return route, _plain(503, "storage unavailable", ("Retry-After", RETRY_AFTER))
        except Exception as exc:  # a bug: answer without detail, keep serving
            _log.error("handler failed", extra={"fields": {"error_type": type(exc).__name__}})
            return route, _plain(500, "internal error")
        response = WsgiResponse(
            answer.body, status=answer.status, headers=list(answer.headers), direct_passthrough=True
        )
        return route, response


def check_page_url(url: str) -> str:
    """Return ``url`` if it can be a ``Location`` header, else raise `ValueError`.

    A control character (CR and LF above all) would make every redirect to it fail, or split
    the header; it is refused when the app is built, not at the first ``GET``.
    """
    if not url or any(ord(c) < 0x20 or ord(c) == 0x7F for c in url):
        raise ValueError("the unsubscribe page must be a URL without control characters")
    try:
        url.encode("latin-1")
    except UnicodeEncodeError:
        raise ValueError("the unsubscribe page must be a URL in ASCII (percent-encoded)") from None
    return url


def _plain(status: int, text: str, *headers: tuple[str, str]) -> WsgiResponse:
    return WsgiResponse(
        f"{text}\n", status=status, headers=[*headers], content_type="text/plain; charset=utf-8"
    )


def _body(request: Request) -> bytes:
    """The request's body, read once (at most one byte over the limit: the handlers answer
    400 to a longer one) and kept on the request for the handler."""
    cached = request.environ.get(_BODY_KEY)
    if not isinstance(cached, bytes):
        cached = request.stream.read(http.MAX_BODY_BYTES + 1)
        request.environ[_BODY_KEY] = cached
    return cached


def _unsubscribe_post(
    app: ReferenceApp, request: Request, _values: dict[str, Any]
) -> http.Response:
    body = _body(request)  # before the connection: a slow body must not hold one
    with app.pool.connection() as conn:
        return http.unsubscribe_post(
            conn,
            secret=app.secret(conn),
            query=request.query_string,
            content_type=request.headers.get("Content-Type"),
            body=body,
            schema=app.schema,
        )


def _unsubscribe_get(app: ReferenceApp, request: Request, _values: dict[str, Any]) -> http.Response:
    return http.unsubscribe_get(query=request.query_string, page=app.unsubscribe_page)


def _unsubscribe_info(
    app: ReferenceApp, request: Request, _values: dict[str, Any]
) -> http.Response:
    with app.pool.connection() as conn:
        return http.unsubscribe_info(
            secret=app.secret(conn), query=request.query_string, conn=conn, schema=app.schema
        )


def _inbox(
    call: Callable[[ReferenceApp, Request, dict[str, Any], Conn, str], http.Response],
) -> Handler:
    """Wrap an inbox handler: the person from `ReferenceApp.identity` (its refusal without
    one), one connection.

    A body is read before the connection is taken (`_body` caches it on the request), so
    that a client sending it slowly holds a thread at most, never a database connection.
    """

    def handler(app: ReferenceApp, request: Request, values: dict[str, Any]) -> http.Response:
        user = app.identity.person(request.headers.get)
        if isinstance(user, http.Response):
            return user
        if request.method in ("PUT", "POST"):
            _body(request)
        with app.pool.connection() as conn:
            return call(app, request, values, conn, user)

    return handler


_PAGE: Final = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Unsubscribe</title></head>
<body><main>
{content}
</main></body></html>
"""


def _unsubscribe_page(
    app: ReferenceApp, request: Request, _values: dict[str, Any]
) -> http.Response:
    """The reference app's stand-in for the host's unsubscribe page (where a GET on the
    one-click URL leads): it names the token's categories, from the info call, and offers the
    one-click POST for them or for all email. It changes nothing itself."""
    with app.pool.connection() as conn:
        info = http.unsubscribe_info(
            secret=app.secret(conn), query=request.query_string, conn=conn, schema=app.schema
        )
    return unsubscribe_page_answer(info, request.args.get("t", ""))


def unsubscribe_page_answer(info: http.Response, token: str) -> http.Response:
    """The stand-in unsubscribe page for ``token``, given the info call's answer ``info``:
    its categories and the one-click POSTs for them or for all email, or "not valid" with
    the info call's status (one rendering for the WSGI app and the native route)."""
    if info.status != 200:
        content = "<p>This unsubscribe link is not valid.</p>"
    else:
        action = html.escape(f"{UNSUBSCRIBE_PATH}?{urllib.parse.urlencode({'t': token})}")
        items = "".join(f"<li>{html.escape(c)}</li>" for c in json.loads(info.body)["categories"])
        pair = '<input type="hidden" name="List-Unsubscribe" value="One-Click">'
        content = (
            f"<p>Stop email about:</p><ul>{items}</ul>"
            f'<form method="post" action="{action}">{pair}'
            '<button type="submit">Unsubscribe from these</button></form>'
            f'<form method="post" action="{action}">{pair}'
            '<input type="hidden" name="scope" value="all">'
            '<button type="submit">Stop all notification email</button></form>'
        )
    return http.Response(
        status=info.status,
        headers=(
            ("Content-Type", "text/html; charset=utf-8"),
            ("Content-Security-Policy", "default-src 'none'; form-action 'self'"),
            ("Cache-Control", "no-store"),
        ),
        body=_PAGE.format(content=content).encode("utf-8"),
    )


@_inbox
def _inbox_list(
    app: ReferenceApp, request: Request, values: dict[str, Any], conn: Conn, user: str
) -> http.Response:
    return http.inbox_list(
        conn,
        user,
        query=request.query_string,
        hidden_sites=app.hidden_sites(conn),
        site=values["site"],
        schema=app.schema,
        host=app.admin_host,
    )


@_inbox
def _inbox_summary(
    app: ReferenceApp, request: Request, values: dict[str, Any], conn: Conn, user: str
) -> http.Response:
    return http.inbox_summary(
        conn,
        user,
        if_none_match=request.headers.get("If-None-Match"),
        hidden_sites=app.hidden_sites(conn),
        site=values["site"],
        schema=app.schema,
    )


@_inbox
def _inbox_read(
    app: ReferenceApp, request: Request, values: dict[str, Any], conn: Conn, user: str
) -> http.Response:
    return http.inbox_read(
        conn,
        user,
        content_type=request.headers.get("Content-Type"),
        body=_body(request),
        site=values["site"],
        schema=app.schema,
    )


@_inbox
def _inbox_read_one(
    app: ReferenceApp, _request: Request, values: dict[str, Any], conn: Conn, user: str
) -> http.Response:
    return http.inbox_read_one(conn, user, values["entry"], site=values["site"], schema=app.schema)


@_inbox
def _inbox_dismiss(
    app: ReferenceApp, _request: Request, values: dict[str, Any], conn: Conn, user: str
) -> http.Response:
    return http.inbox_dismiss(conn, user, values["entry"], site=values["site"], schema=app.schema)


@_inbox
def _inbox_sites(
    app: ReferenceApp, _request: Request, _values: dict[str, Any], conn: Conn, user: str
) -> http.Response:
    return http.inbox_sites(
        conn, user, host=app.admin_host, hidden_sites=app.hidden_sites(conn), schema=app.schema
    )


def _view(talk: bool) -> Handler:
    """The route of a page view (``talk``: of its talk tab), H2."""

    @_inbox
    def view(
        app: ReferenceApp, _request: Request, values: dict[str, Any], conn: Conn, user: str
    ) -> http.Response:
        return http.inbox_view(
            conn, user, values["page"], talk=talk, site=values["site"], schema=app.schema
        )

    return view


_view_page = _view(talk=False)
_view_talk = _view(talk=True)


@_inbox
def _preferences_get(
    app: ReferenceApp, _request: Request, _values: dict[str, Any], conn: Conn, user: str
) -> http.Response:
    assert app.admin_host is not None  # the route exists only with the host's ports
    return http.preferences_get(conn, app.admin_host, user, schema=app.schema)


@_inbox
def _preferences_patch(
    app: ReferenceApp, request: Request, _values: dict[str, Any], conn: Conn, user: str
) -> http.Response:
    assert app.admin_host is not None
    return http.preferences_patch(
        conn,
        app.admin_host,
        user,
        content_type=request.headers.get("Content-Type"),
        body=_body(request),
        schema=app.schema,
    )


def _settings(app: ReferenceApp, request: Request, _values: dict[str, Any]) -> http.Response:
    """The settings routes: the administrator from `ReferenceApp.identity`, which asks for
    proof always (``403`` without a secret or token configured)."""
    admin = app.identity.admin(request.headers.get)
    if isinstance(admin, http.Response):
        return admin
    assert app.admin_host is not None
    if request.method == "PATCH":
        _body(request)  # read before a connection is taken (a slow client holds no connection)
    with app.pool.connection() as conn:
        if request.method in ("GET", "HEAD"):  # Werkzeug adds HEAD to a GET rule
            return http.settings_get(conn, app.admin_host, schema=app.schema)
        return http.settings_patch(
            conn,
            app.admin_host,
            admin,
            content_type=request.headers.get("Content-Type"),
            body=_body(request),
            schema=app.schema,
        )


def build_app(
    pool: ConnectionSource,
    *,
    schema: str = DEFAULT_SCHEMA,
    unsubscribe_page: str = http.UNSUBSCRIBE_PAGE,
    hidden_sites: Callable[[Conn], Sequence[str]] | None = None,
    on_request: RequestHook | None = None,
    admin_host: AdminHostPorts | None = None,
    unsubscribe_paths: Sequence[str] = (),
    identity: IdentityCheck | None = None,
    hidden_sites_plan: Callable[[], Plan[Sequence[str]]] | None = None,
) -> ReferenceApp:
    """Return the reference app with its routes (see the module's table).

    ``unsubscribe_paths``: more paths answering one-click unsubscribe (``POST``, ``GET`` and
    ``PATH/info``), those of the sites' unsubscribe link templates (E6: a host that mounts
    the route elsewhere sets a template and writes no code); the default path always answers.
    More routes (a ``/metrics`` endpoint, say) are added with `ReferenceApp.route` on the
    app this returns; ``on_request`` is `ReferenceApp`'s hook. The preference and settings
    routes are served only with ``admin_host``; ``identity`` and ``hidden_sites_plan`` are
    `ReferenceApp`'s.
    """
    app = ReferenceApp(
        pool,
        schema=schema,
        unsubscribe_page=unsubscribe_page,
        hidden_sites=hidden_sites,
        on_request=on_request,
        admin_host=admin_host,
        identity=identity,
        hidden_sites_plan=hidden_sites_plan,
    )
    app.route(UNSUBSCRIBE_PATH, ["POST"], "unsubscribe_post", _unsubscribe_post)
    app.route(UNSUBSCRIBE_PATH, ["GET"], "unsubscribe_get", _unsubscribe_get)
    app.route(http.UNSUBSCRIBE_INFO_PATH, ["GET"], "unsubscribe_info", _unsubscribe_info)
    for path in sorted(set(unsubscribe_paths) - {UNSUBSCRIBE_PATH}):
        # One endpoint per method whatever the path: the request log names the route's
        # template, and the metrics count one-click requests as one route.
        app.url_map.add(Rule(path, methods=["POST"], endpoint="unsubscribe_post"))
        app.url_map.add(Rule(path, methods=["GET"], endpoint="unsubscribe_get"))
        app.url_map.add(Rule(f"{path}/info", methods=["GET"], endpoint="unsubscribe_info"))
    if unsubscribe_page == http.UNSUBSCRIBE_PAGE:
        app.route(http.UNSUBSCRIBE_PAGE, ["GET"], "unsubscribe_page", _unsubscribe_page)
    # One inbox per site (H1), the site in the path as a wiki mounts its routes.
    inbox = f"{INBOX_PREFIX}/<site>/notifications"
    app.route(inbox, ["GET"], "inbox_list", _inbox_list)
    app.route(f"{inbox}/summary", ["GET"], "inbox_summary", _inbox_summary)
    app.route(f"{inbox}/read", ["PUT"], "inbox_read", _inbox_read)
    app.route(f"{inbox}/<entry>/read", ["PUT"], "inbox_read_one", _inbox_read_one)
    app.route(f"{inbox}/<entry>", ["DELETE"], "inbox_dismiss", _inbox_dismiss)
    app.route("/notifications/sites", ["GET"], "inbox_sites", _inbox_sites)
    # H2: what the host's page calls as the person views a page, or its talk tab.
    app.route(f"{inbox}/pages/<page>/view", ["PUT"], "inbox_view_page", _view_page)
    app.route(f"{inbox}/pages/<page>/talk", ["PUT"], "inbox_view_talk", _view_talk)
    if admin_host is not None:
        app.route("/notifications/preferences", ["GET"], "preferences_get", _preferences_get)
        app.route("/notifications/preferences", ["PATCH"], "preferences_patch", _preferences_patch)
        app.route("/notifications/admin/settings", ["GET", "PATCH"], "settings", _settings)
    return app


#: `build_app`'s handler of each endpoint (`ReferenceApp.is_builtin`).
_BUILTIN: Final[dict[str, Handler]] = {
    "unsubscribe_post": _unsubscribe_post,
    "unsubscribe_get": _unsubscribe_get,
    "unsubscribe_info": _unsubscribe_info,
    "unsubscribe_page": _unsubscribe_page,
    "inbox_list": _inbox_list,
    "inbox_summary": _inbox_summary,
    "inbox_read": _inbox_read,
    "inbox_read_one": _inbox_read_one,
    "inbox_dismiss": _inbox_dismiss,
    "inbox_view_page": _view_page,
    "inbox_view_talk": _view_talk,
    "inbox_sites": _inbox_sites,
    "preferences_get": _preferences_get,
    "preferences_patch": _preferences_patch,
    "settings": _settings,
}


class _QuietHandler(WSGIRequestHandler):
    """Werkzeug's request handler without its access log: the app logs each request with
    its route's template (`ReferenceApp.__call__`), where Werkzeug's line would carry the
    path and query as sent (entry ids, unsubscribe tokens)."""

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        """Log nothing (the app did)."""

    def log_error(self, format: str, *args: Any) -> None:
        """Log the server's own errors (bad request lines) with no values."""
        _log.warning("bad request")


def make_http_server(app: ReferenceApp, host: str, port: int) -> BaseWSGIServer:
    """Return Werkzeug's threaded development server for ``app`` on ``host:port`` (0: free).

    For tests and local trials only: it reads bodies on its request threads without a
    deadline. ``notify serve`` serves with `notify_pg.http.server` (uvicorn) instead.

    ``server.serve_forever()`` serves until ``server.shutdown()`` from another thread.

    Raises:
        OSError: the address cannot be bound (in use, not this machine's); the socket is
            bound here so that the caller sees the error instead of Werkzeug's exit.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
        # Werkzeug serves a duplicate of the descriptor; this one is closed on leaving.
        server = make_server(
            host,
            sock.getsockname()[1],
            app,
            threaded=True,
            request_handler=_QuietHandler,
            fd=sock.fileno(),
        )
    # What http.server's own bind would have set (skipped for a given descriptor).
    server.server_name = host
    server.server_port = int(server.server_address[1])
    return server


def open_pool(dsn: str, *, size: int = 4, timeout: float = 2.0) -> FastPool:
    """Open a `FastPool` of up to ``size`` autocommit connections to ``dsn``.

    One connection is made first, so that a database that cannot be reached is one clear
    error at start. Later a request waits at most ``timeout`` seconds for a connection: while
    the database is down it gets ``503`` with ``Retry-After`` at once, and the first request
    after it is back is served.

    Raises:
        StorageError: no connection within 10 s (``storage_unavailable``).
    """
    try:
        # Not through the pool: this failure is the caller's one line, not a log line.
        psycopg.connect(dsn, connect_timeout=10).close()
    except psycopg.Error as exc:
        raise translate(exc) from exc
    return FastPool(dsn, size=size, timeout=timeout)
