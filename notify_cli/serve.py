"""``notify serve``: the reference web app of `notify_pg.http.app` (needs the ``serve`` extra).

Serves the one-click unsubscribe routes, the inbox routes and the websocket of live updates
on uvicorn (`notify_pg.http.server`, the routes native in its event loop) until SIGTERM or
SIGINT. A reference for the demo and
tests: the inbox's person is the ``X-Notify-User`` header, so a host puts its own
authentication in front, proven by a shared secret or a signed token (`notify_cli.serve_identity`,
`notify_pg.http.identity`). Logs are JSON lines (or text) on stderr, one per request with its
route's template, never with a path as sent, a query string (unsubscribe tokens), a person or
the secrets. ``--workers N`` forks N serving processes on one listening socket.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

import click

from notify_cli.install import install_hint
from notify_cli.open_files import raise_open_files, wanted_open_files
from notify_cli.options import (
    BadInput,
    Seconds,
    Utf8Text,
    dsn_option,
    log_format_option,
    log_level_option,
    metrics_host_option,
    schema_option,
)
from notify_cli.serve_identity import identity_options, is_loopback, read_identity
from notify_cli.signals import handling_stop_signals
from notify_cli.startup import require_schemas
from notify_cli.worker import _logging, _metrics


@click.command()
@dsn_option
@schema_option
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    metavar="ADDRESS",
    type=Utf8Text(),
    help="Address to listen on.",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8080,
    show_default=True,
    metavar="N",
    help="Port to listen on (0: any free port; the one taken is logged).",
)
@click.option(
    "--unsubscribe-page",
    default="/unsubscribe",
    show_default=True,
    metavar="URL",
    type=Utf8Text(),
    help="The host's unsubscribe page a GET on the one-click URL redirects to (303); "
    "the default is a stand-in page served by this app.",
)
@click.option(
    "--host-schema",
    metavar="NAME",
    type=Utf8Text(),
    help="Schema of the reference host's wiki: its sites switched off are hidden from the "
    "inbox, and the preference and settings routes read and write its people and settings "
    "(absent: no site is hidden and those routes are not served).",
)
@click.option(
    "--workers",
    type=click.IntRange(1, 64),
    default=1,
    show_default=True,
    metavar="N",
    help="Serving processes sharing the listening socket (each with its own threads, "
    "connections and live listener).",
)
@click.option(
    "--threads",
    type=click.IntRange(1, 256),
    default=8,
    show_default=True,
    metavar="N",
    help="Database connections per process for the routes served in the event loop, and "
    "threads (one connection each) for routes a host adds or whose host ports are blocking.",
)
@click.option(
    "--max-connections",
    type=click.IntRange(min=1),
    metavar="N",
    help="Open connections and websockets per process; more are answered 503 (default: "
    "no limit but the process's file descriptors).",
)
@click.option(
    "--backlog",
    type=click.IntRange(1, 65535),
    default=4096,
    show_default=True,
    metavar="N",
    help="Connections the kernel queues before they are accepted (capped by net.core.somaxconn).",
)
@click.option(
    "--max-body",
    type=click.IntRange(1, 16 * 1024 * 1024),
    default=64 * 1024,
    show_default=True,
    metavar="BYTES",
    help="Largest request body read; a longer one is answered 413 unread.",
)
@click.option(
    "--body-timeout",
    type=Seconds(0.1, 600),
    default=10.0,
    show_default=True,
    metavar="SECONDS",
    help="Time a client has to send its whole body (400 after), before any database "
    "connection is taken.",
)
@click.option(
    "--keep-alive",
    type=click.IntRange(1, 600),
    default=5,
    show_default=True,
    metavar="SECONDS",
    help="How long an idle keep-alive connection stays open.",
)
@click.option(
    "--pool-timeout",
    type=Seconds(0.1, 60),
    default=2.0,
    show_default=True,
    metavar="SECONDS",
    help="Longest wait for a database connection; then 503 with Retry-After.",
)
@click.option(
    "--demo",
    is_flag=True,
    help="Serve the demo page at /demo (inbox, badge, live updates, unsubscribe, and the "
    "preference grid with --host-schema); its "
    "websocket takes the person from ?user= as well as from X-Notify-User.",
)
@identity_options
@click.option(
    "--metrics-port",
    type=click.IntRange(0, 65535),
    metavar="PORT",
    help="Serve Prometheus metrics (requests by route and status, their durations, and the "
    "database's gauges: lag, due work, outbox, mails, registrations) at "
    "http://HOST:PORT/metrics (0: a free port, logged); needs the metrics extra.",
)
@metrics_host_option
@log_level_option
@log_format_option
def serve(
    dsn: str,
    schema: str,
    host: str,
    port: int,
    unsubscribe_page: str,
    host_schema: str | None,
    workers: int,
    threads: int,
    max_connections: int | None,
    backlog: int,
    max_body: int,
    body_timeout: float,
    keep_alive: int,
    pool_timeout: float,
    demo: bool,
    proxy_secret_file: str | None,
    jwt_key_file: str | None,
    jwt_audience: str | None,
    jwt_issuer: str | None,
    jwt_algorithm: str,
    insecure_identity_header: bool,
    metrics_port: int | None,
    metrics_host: str,
    log_level: str,
    log_format: str,
) -> None:
    """Serve one-click unsubscribe, the inbox, its live updates and preferences over HTTP.

    POST /notifications/unsubscribe?t=TOKEN with the form body List-Unsubscribe=One-Click
    (and scope=all to stop all email) turns email off for the token's categories: 200 with no
    body, 400 with no body for an invalid token. GET on the same URL changes nothing and
    redirects (303) to --unsubscribe-page; GET /notifications/unsubscribe/info?t=TOKEN names
    the token's categories. The inbox routes, one inbox per site (GET
    /sites/SITE/notifications?unread=1, GET .../summary, PUT .../read, PUT .../ID/read,
    DELETE .../ID, and the host page's calls PUT .../pages/PAGE/view and PUT
    .../pages/PAGE/talk under /sites/SITE/notifications; GET /notifications/sites lists the
    inboxes' sites) act for the person named by the
    X-Notify-User header: put a proxy that authenticates in front, and make it prove its
    requests with --proxy-secret-file (the X-Notify-Proxy-Secret header) or send a signed
    token with --jwt-key-file (X-Notify-Identity) instead; an address that is not loopback
    is refused without one of them unless --insecure-identity-header. A header name with
    "_" that reads as one of these (X-Notify_User) is answered 400, any other is dropped;
    with --host-schema the entries of the reference wiki's sites switched off are hidden, and
    one-click unsubscribe also answers on the paths of the sites' unsubscribe link templates
    (read at start, e.g. /_api/notifications/unsubscribe).
    With --host-schema also: GET and PATCH /notifications/preferences (the X-Notify-User
    person's preference grid and email schedule) and GET and PATCH
    /notifications/admin/settings (the instance's settings, for the administrator named by
    the X-Notify-Admin header behind the proxy secret, or by a token with "notify_admin":
    true; without a secret or token key they answer 403); every change is audited (notify
    records inbox-audit).
    The websocket /notifications/live (same header) is sent "refresh" whenever that person's
    summary may have changed. The schema (and --host-schema) must be migrated: if not, one
    line names the notify db migrate to run and the exit code is 2. Served by
    uvicorn: bodies are read (--max-body, --body-timeout) before a database connection is
    taken; while the database is down requests get 503 with Retry-After within
    --pool-timeout. Each request logs one line (method, route template, status, duration).
    With --metrics-port the requests (by route and status, with a duration histogram) and the
    database's gauges of docs/operators.md are served for Prometheus on their own port.
    GET /healthz answers 200 while the process serves; GET /readyz 200 when the database
    answers, else 503 (docs/production.md). SIGTERM or SIGINT stop it (exit 0). A database
    that cannot be reached, an address that cannot be bound or a bad option: a message on
    stderr and exit code 2.
    """
    try:
        import psycopg

        from notify_pg.http.app import build_app, check_page_url, open_pool
        from notify_pg.http.live import LiveHub
        from notify_pg.http.server import AsgiApp, ServeLimits, bind, make_server, run_server
        from notify_reference_host.wiki import ReferenceWiki
    except ImportError as exc:  # werkzeug or uvicorn missing: no serve extra
        raise BadInput(f"serve needs the serve extra ({install_hint('serve')}): {exc}") from None
    if not schema or host_schema == "":
        raise BadInput("--schema and --host-schema must not be empty")
    try:
        check_page_url(unsubscribe_page)
    except ValueError as exc:
        raise BadInput(f"--unsubscribe-page: {exc}") from None
    if workers > 1 and metrics_port is not None:
        raise BadInput("--metrics-port serves one process: use it with --workers 1")
    identity = read_identity(
        host=host,
        proxy_secret_file=proxy_secret_file,
        jwt_key_file=jwt_key_file,
        jwt_audience=jwt_audience,
        jwt_issuer=jwt_issuer,
        jwt_algorithm=jwt_algorithm,
        insecure_identity_header=insecure_identity_header,
    )
    wiki = None if host_schema is None else ReferenceWiki(host_schema)
    hidden = None if wiki is None else wiki.sites_off_plan
    limits = ServeLimits(
        threads=threads,
        max_body=max_body,
        body_timeout=body_timeout,
        backlog=backlog,
        max_connections=max_connections,
        keep_alive=keep_alive,
        pool_timeout=pool_timeout,
    )
    _logging(log_level, log_format)
    log = logging.getLogger("notify_pg.serve")
    # One connection first: a database that cannot be reached, or a schema not migrated, is
    # one line and exit 2, before the port is bound.
    require_schemas(dsn, schema, host_schema=host_schema, command="serve")
    try:
        sock = bind(host, port, backlog=backlog)
    except OSError as exc:
        raise BadInput(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None

    # Each socket is a descriptor: the soft limit as high as the hard one allows (the
    # children of --workers inherit it).
    open_files = raise_open_files()
    wanted = wanted_open_files(max_connections, threads)
    proofs = [n for n, on in (("proxy_secret", identity.proxy_secret), ("jwt", identity.jwt)) if on]
    fields: dict[str, Any] = {
        "host": host,
        "port": sock.getsockname()[1],
        "schema": schema,
        "identity": "+".join(proofs) or "header",
        "open_files": open_files,
    }
    if not proofs and not is_loopback(host):
        log.warning("identity header trusted from any client", extra={"fields": {"host": host}})

    def announce() -> None:
        log.info("listening", extra={"fields": {**fields, "workers": workers}})
        if open_files < wanted:  # after "listening": the first line stays the port
            hint = "raise the hard limit: ulimit -Hn, or LimitNOFILE= in a systemd unit"
            limited = {"open_files": open_files, "wanted": wanted, "hint": hint}
            log.warning("open files limited", extra={"fields": limited})
        sys.stderr.flush()

    def serve_here() -> None:
        """Serve on ``sock`` in this process until a stop signal."""
        pool = open_pool(dsn, size=threads, timeout=pool_timeout)
        metrics = None
        on_request = None
        try:
            if metrics_port is not None:
                metrics = _metrics(metrics_port, metrics_host, service="notify-serve")
                from notify_pg.ops.metrics import HttpMetrics  # there: _metrics checked it

                metrics.observe_database(
                    lambda: psycopg.connect(dsn, autocommit=True, connect_timeout=10), schema
                )
                on_request = HttpMetrics(metrics.meter).request
                log.info("metrics serving", extra={"fields": {"port": metrics.port}})
            # E6: one-click unsubscribe also on the paths of the sites' templates.
            paths = [] if wiki is None else _unsubscribe_paths(pool, wiki, log)
            app = build_app(
                pool,
                schema=schema,
                unsubscribe_page=unsubscribe_page,
                hidden_sites_plan=hidden,
                on_request=on_request,
                admin_host=wiki,
                unsubscribe_paths=paths,
                identity=identity,
            )
            asgi = AsgiApp(app, limits=limits, live=LiveHub(dsn, schema=schema), demo=demo)
            server = make_server(asgi)

            def on_signal(number: int, frame: FrameType | None) -> None:
                log.info("stopping", extra={"fields": {"signal": signal.Signals(number).name}})
                server.should_exit = True

            with handling_stop_signals(on_signal):
                # "listening" once a stop signal is handled: a SIGTERM sent on that line stops
                # the server (exit 0), where before its handler it killed the process (-15).
                if workers == 1:
                    announce()  # after "metrics serving": a reader of the log has both ports
                asyncio.run(run_server(server, sock))
        finally:
            if metrics is not None:
                metrics.close()
            pool.close()

    if workers == 1:
        serve_here()
    else:
        _supervise(workers, serve_here, sock, log, announce)
    sock.close()


def _supervise(
    workers: int,
    serve_here: Any,
    sock: socket.socket,
    log: logging.Logger,
    announce: Callable[[], None],
) -> None:
    """Fork ``workers`` processes that serve on ``sock``; pass them the stop signal and wait
    (``announce`` logs ``listening`` once the stop signals are passed on).

    The children are forked before any thread, pool or event loop exists in this process. A
    child that ends on its own (a crash) stops the others: the command ends with its status.
    """
    children: list[int] = []
    # The stop signals wait (blocked, pending) until each process has its handler: a child
    # stopped between its fork and its handler would die of the signal (-15), and the parent
    # would take that for a crash.
    stops = {signal.SIGTERM, signal.SIGINT}
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, stops)
    for _ in range(workers):
        try:
            pid = os.fork()
        except OSError:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            raise
        if pid == 0:  # the child serves, then leaves without the parent's exit handlers
            # Stopped while it starts (before serve_here installs its handler): nothing is
            # served yet, so it leaves at once, with success, as a stop asked.
            signal.signal(signal.SIGTERM, lambda _number, _frame: os._exit(0))
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            code = 0
            try:
                serve_here()
            except BaseException:  # a child reports by its exit status, whatever it was
                code = 1
            finally:
                sys.stderr.flush()
                os._exit(code)
        children.append(pid)

    def forward(number: int, frame: FrameType | None) -> None:
        log.info("stopping", extra={"fields": {"signal": signal.Signals(number).name}})
        for child in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGTERM)

    failed = False
    with handling_stop_signals(forward):
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        announce()
        while children:
            pid, status = os.wait()
            if pid in children:
                children.remove(pid)
                if os.waitstatus_to_exitcode(status) != 0 and not failed:
                    failed = True
                    forward(signal.SIGTERM, None)
    if failed:
        raise click.exceptions.Exit(1)


def _unsubscribe_paths(pool: Any, wiki: Any, log: logging.Logger) -> list[str]:
    """The paths of the reference wiki's unsubscribe link templates (E6), read once at start;
    a template whose path holds a placeholder cannot be mounted and is logged."""
    from notify_core.values.links import link_path

    with pool.connection() as conn:
        templates = wiki.unsubscribe_links(conn)
    paths = []
    for template in templates:
        path = link_path(template)
        if path is None:
            log.warning(
                "unsubscribe template not mounted", extra={"fields": {"template": template}}
            )
        else:
            paths.append(path)
    return paths
