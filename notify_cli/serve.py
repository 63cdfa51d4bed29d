"""``notify serve``: the reference web app of `notify_pg.http.app` (needs the ``serve`` extra).

Serves the one-click unsubscribe routes and the inbox routes over HTTP until SIGTERM or
SIGINT. A reference for the demo and tests: the inbox's person is the ``X-Notify-User``
header, so a host puts its own authentication in front. Logs are JSON lines (or text) on
stderr, one per request with its route's template, never with a path as sent, a query string
(unsubscribe tokens), a person or the secret.
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
from types import FrameType
from typing import Any

import click

from notify_cli.options import (
    BadInput,
    Utf8Text,
    dsn_option,
    log_format_option,
    log_level_option,
    metrics_host_option,
    schema_option,
)
from notify_cli.signals import handling_stop_signals
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
    metrics_port: int | None,
    metrics_host: str,
    log_level: str,
    log_format: str,
) -> None:
    """Serve one-click unsubscribe, the inbox and preferences over HTTP (a reference web app).

    POST /notifications/unsubscribe?t=TOKEN with the form body List-Unsubscribe=One-Click
    (and scope=all to stop all email) turns email off for the token's categories: 200 with no
    body, 400 with no body for an invalid token. GET on the same URL changes nothing and
    redirects (303) to --unsubscribe-page; GET /notifications/unsubscribe/info?t=TOKEN names
    the token's categories. The inbox routes (GET /notifications, GET /notifications/summary,
    PUT /notifications/read, PUT /notifications/ID/read, DELETE /notifications/ID) act for
    the person named by the X-Notify-User header: put a proxy that authenticates in front;
    with --host-schema the entries of the reference wiki's sites switched off are hidden, and
    one-click unsubscribe also answers on the paths of the sites' unsubscribe link templates
    (read at start, e.g. /_api/notifications/unsubscribe).
    With --host-schema also: GET and PATCH /notifications/preferences (the X-Notify-User
    person's preference grid and email schedule) and GET and PATCH
    /notifications/admin/settings (the instance's settings, for the administrator named by
    the X-Notify-Admin header, which the proxy sets only for someone allowed to manage the
    instance); every change is audited (notify records inbox-audit).
    The schema must be migrated (notify db migrate). Each request logs one line (method,
    route template, status, duration). With --metrics-port the requests (by route and
    status, with a duration histogram) and the database's gauges of docs/operators.md are
    served for Prometheus on their own port. SIGTERM or SIGINT
    stop it (exit 0). A database that cannot be reached or an address that cannot be bound: a
    message on stderr and exit code 2.
    """
    try:
        import psycopg

        from notify_core.errors import NotifyError
        from notify_pg.http.app import build_app, make_http_server, open_pool
        from notify_pg.reference_host.wiki import ReferenceWiki
    except ImportError as exc:  # werkzeug or psycopg_pool missing: no serve extra
        raise BadInput(
            f"serve needs the serve extra (pip install 'notify-engine[serve]'): {exc}"
        ) from None
    if not schema or host_schema == "":
        raise BadInput("--schema and --host-schema must not be empty")
    wiki = None if host_schema is None else ReferenceWiki(host_schema)
    hidden = None if wiki is None else wiki.sites_off
    paths: list[str] = []
    _logging(log_level, log_format)
    log = logging.getLogger("notify_pg.serve")
    # The pool's own warnings (a lost connection) go to the same log lines.
    pool_log = logging.getLogger("psycopg.pool")
    pool_log.handlers[:] = logging.getLogger("notify_pg").handlers
    pool_log.propagate = False
    try:
        pool = open_pool(dsn)
    except NotifyError as exc:
        raise BadInput(f"--dsn: {exc.message}") from None
    metrics = None
    on_request = None
    try:
        if metrics_port is not None:
            metrics = _metrics(metrics_port, metrics_host, service="notify-serve")
            from notify_pg.ops.metrics import HttpMetrics  # there: _metrics checked the extra

            metrics.observe_database(
                lambda: psycopg.connect(dsn, autocommit=True, connect_timeout=10), schema
            )
            on_request = HttpMetrics(metrics.meter).request
            log.info("metrics serving", extra={"fields": {"port": metrics.port}})
        if host_schema is not None:
            paths = _unsubscribe_paths(pool, ReferenceWiki(host_schema), log)
        app = build_app(
            pool,
            schema=schema,
            unsubscribe_page=unsubscribe_page,
            hidden_sites=hidden,
            on_request=on_request,
            admin_host=wiki,
            unsubscribe_paths=paths,
        )
        try:
            server = make_http_server(app, host, port)
        except OSError as exc:
            raise BadInput(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
        done = threading.Event()

        def on_signal(number: int, frame: FrameType | None) -> None:
            log.info("stopping", extra={"fields": {"signal": signal.Signals(number).name}})
            # shutdown() waits for serve_forever to return: call it off the main thread.
            threading.Thread(target=server.shutdown, daemon=True).start()
            done.set()

        with handling_stop_signals(on_signal):
            log.info(
                "listening",
                extra={"fields": {"host": host, "port": server.server_port, "schema": schema}},
            )
            sys.stderr.flush()
            server.serve_forever()
        server.server_close()
    finally:
        if metrics is not None:
            metrics.close()
        pool.close()


def _unsubscribe_paths(pool: Any, wiki: Any, log: logging.Logger) -> list[str]:
    """The paths of the reference wiki's unsubscribe link templates (E6), read once at start;
    a template whose path holds a placeholder cannot be mounted and is logged."""
    from notify_core.links import link_path

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
