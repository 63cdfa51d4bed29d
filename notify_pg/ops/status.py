"""How far the pipeline on PostgreSQL is behind: consumer lag, due-work backlog, the inbox's
outbox backlog and its mail queue; and the operator's warnings (a site served over plain
http, where mailbox providers ignore one-click unsubscribe: E6)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any, Final

import psycopg

from notify_core.values.errors import NotifyError
from notify_core.values.instants import format_instant
from notify_pg.db.errors import translate
from notify_pg.db.migrate import DEFAULT_SCHEMA
from notify_pg.db.plan import Plan, all_rows, one_row, port, run_plan
from notify_pg.db.seam import Conn, Seam

__all__ = [
    "PLAIN_HTTP",
    "operator_status",
    "operator_status_plan",
    "pipeline_status",
    "plain_http_sites",
    "plain_http_sites_plan",
    "plain_http_warning",
    "warn_plain_http",
]

#: The code of the warning about sites served over plain http.
PLAIN_HTTP: Final = "plain_http"

_log = logging.getLogger("notify_pg.worker")


def pipeline_status(
    conn_or_dsn: Conn | str,
    schema: str = DEFAULT_SCHEMA,
    *,
    mail_configured: Callable[[Conn], bool | None] | None = None,
    plain_http: Callable[[Conn], Sequence[str] | None] | None = None,
) -> dict[str, Any]:
    """Return the consumers' lag and the due-work backlog of ``schema`` as a JSON object.

    ``consumers``: per consumer its ``name``, ``partitions`` (the count), ``position`` (the
    lowest of its partitions: every event up to it is handled for everybody), ``lag`` (events
    after that position), ``updated_at`` (the latest move of any partition), and ``parts``:
    per partition its ``part``, ``position``, ``lag`` and ``updated_at``; and, once a round
    of the consumer failed, ``last_failure``: ``at``, ``round`` (``consumer``, ``due`` or
    ``push``), ``code``, ``sqlstate`` (when PostgreSQL gave one), ``message`` (PostgreSQL's
    message, never a value) and ``failures`` (failed rounds so far). A consumer that failed
    before it had cursors is listed with its name and ``last_failure`` only.
    ``due``: ``windows`` (open, ended), ``releases`` (pending, due), ``badge_syncs``
    (pending, due) and ``push_sends`` (pending, due, leased, oldest ``next_at``), counted at
    the database's clock. ``inbox``: ``outbox`` (``backlog``: events not fanned out yet,
    ``oldest_at`` and ``oldest_age_s`` of the oldest), ``email`` (entries whose email is
    ``pending``, of them ``due`` now, ``sending``, ``next_due_at``, and ``sent_24h`` and
    ``failed_24h``: entries sent and given up over the last 24 hours, ``skipped_24h``: the
    drain's skips over the last 24 hours by reason, E4: ``site_off``, ``inactive``,
    ``no_access``, ``section_off``, ``preference``) and
    ``mail_configured``, the host's answer (N4) when ``mail_configured`` reads it (``None``:
    left out). ``records``: what preference records held back over the last 24 hours by
    reason (M2-M4: ``suspended``, ``record_channel_off``, ``frequency_cap``):
    ``push_skipped_24h`` (hints left with no route) and ``email_skipped_24h`` (the drain's
    skips of those reasons, also in ``inbox.email.skipped_24h``). ``warnings``, only when
    there is one: ``[{"code": "plain_http", "sites",
    "message"}]`` when ``plain_http`` (the host's sites served over plain http) names any
    (`plain_http_warning`). Instants are RFC 3339 UTC text; absent values are omitted (G5).

    Raises:
        StorageError: PostgreSQL is unreachable or the schema is missing.
    """
    if isinstance(conn_or_dsn, str):
        try:
            with psycopg.connect(conn_or_dsn, autocommit=True, connect_timeout=10) as conn:
                return _with_warnings(conn, _status(conn, schema, mail_configured), plain_http)
        except psycopg.Error as exc:
            raise translate(exc) from exc
    return _with_warnings(conn_or_dsn, _status(conn_or_dsn, schema, mail_configured), plain_http)


def _with_warnings(
    conn: Conn, report: dict[str, Any], plain_http: Callable[[Conn], Sequence[str] | None] | None
) -> dict[str, Any]:
    sites = plain_http(conn) if plain_http is not None else None
    message = plain_http_warning(sites or ())
    if message is not None:
        report["warnings"] = [
            {"code": PLAIN_HTTP, "sites": sorted(sites or ()), "message": message}
        ]
    return report


def operator_status(
    conn: Conn,
    schema: str = DEFAULT_SCHEMA,
    *,
    mail_configured: bool | None = None,
    plain_http: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Return the operator's status card (H2b) as a JSON object.

    The figures of ``notify db status``'s ``inbox`` (`pipeline_status`, read by the same
    queries): ``outbox`` (``backlog``, and ``oldest_at`` and ``oldest_age_s`` while there is
    one), ``email`` (``pending``, ``due``, ``sending``, ``next_due_at`` while one is due,
    ``sent_24h``, ``failed_24h`` and ``skipped_24h`` by reason), then ``mail_configured`` when
    given, ``plain_http_sites`` (the sites served over plain http, sorted; empty for none) and
    ``warnings`` as ``notify db status`` words them, only when there is one. Read-only; no
    member is ``null`` (G5).
    """
    plan = operator_status_plan(schema, mail_configured=mail_configured, plain_http=plain_http)
    return run_plan(conn, plan)


def operator_status_plan(
    schema: str = DEFAULT_SCHEMA,
    *,
    mail_configured: bool | None = None,
    plain_http: Sequence[str] | None = None,
) -> Plan[dict[str, Any]]:
    """`operator_status` as a plan (`notify_pg.db.plan`: run blocking or async)."""
    report = yield from _inbox_plan(Seam("notify_pg", schema))
    if mail_configured is not None:
        report["mail_configured"] = mail_configured
    sites = sorted(plain_http or ())
    report["plain_http_sites"] = sites
    message = plain_http_warning(sites)
    if message is not None:
        report["warnings"] = [{"code": PLAIN_HTTP, "sites": sites, "message": message}]
    return report


def plain_http_warning(sites: Sequence[str]) -> str | None:
    """The one warning about sites served over plain http, or ``None`` when there is none.

    Their mails still carry both ``List-Unsubscribe`` headers (E6), but mailbox providers
    ignore one-click unsubscribe on an http URL (E6).
    """
    if not sites:
        return None
    names = ", ".join(sorted(sites))
    return (
        f"served over plain http: {names}; mailbox providers ignore one-click unsubscribe "
        "(List-Unsubscribe-Post) on an http URL: serve the site over https"
    )


def plain_http_sites(conn: Conn, host: object) -> list[str] | None:
    """The host's sites served over plain http, when the host tells (its optional method
    ``inbox_plain_http_sites(conn)``, as `notify_reference_host.wiki.ReferenceWiki` has);
    ``None`` when it cannot."""
    return run_plan(conn, plain_http_sites_plan(host))


def plain_http_sites_plan(host: object) -> Plan[list[str] | None]:
    """`plain_http_sites` as a plan: the host's ``inbox_plain_http_sites_plan()`` where it
    has one, else its blocking method (`notify_pg.db.plan.port`)."""
    if not hasattr(host, "inbox_plain_http_sites"):
        return None
    return sorted(str(site) for site in (yield from port(host, "inbox_plain_http_sites")))


def warn_plain_http(
    connect: Callable[[], AbstractContextManager[Conn]],
    host: object,
    log: logging.Logger | None = None,
) -> str | None:
    """Log the plain-http warning once (a worker calls it as it starts); return it.

    A warning never stops a start: a database that cannot be read now logs nothing here (the
    worker itself reports that).
    """
    try:
        with connect() as conn:
            sites = plain_http_sites(conn, host)
    except (psycopg.Error, NotifyError):
        return None
    message = plain_http_warning(sites or ())
    if message is not None:
        fields = {"code": PLAIN_HTTP, "sites": sites, "message": message}
        (log or _log).warning("plain http", extra={"fields": fields})
    return message


def _inbox(
    seam: Seam, conn: Conn, mail_configured: Callable[[Conn], bool | None] | None
) -> dict[str, Any]:
    out = run_plan(conn, _inbox_plan(seam))
    configured = mail_configured(conn) if mail_configured is not None else None
    if configured is not None:
        out["mail_configured"] = configured
    return out


def _inbox_plan(seam: Seam) -> Plan[dict[str, Any]]:
    row = yield from one_row(seam, "status_inbox")
    assert row is not None
    backlog, oldest, pending, due, sending, next_due, sent, failed, now = row
    outbox: dict[str, Any] = {"backlog": backlog}
    if oldest is not None:
        outbox["oldest_at"] = format_instant(oldest)
        outbox["oldest_age_s"] = max(0, int((now - oldest).total_seconds()))
    email: dict[str, Any] = {"pending": pending, "due": due, "sending": sending}
    if next_due is not None:
        email["next_due_at"] = format_instant(next_due)
    email["sent_24h"] = sent
    email["failed_24h"] = failed
    # The drain's skips by reason (E4), only the reasons that occurred.
    skips = yield from all_rows(seam, "status_mail_skips")
    email["skipped_24h"] = {str(r[0]): int(r[1]) for r in skips}
    return {"outbox": outbox, "email": email}


def _status(
    conn: Conn, schema: str, mail_configured: Callable[[Conn], bool | None] | None = None
) -> dict[str, Any]:
    seam = Seam("notify_pg", schema)
    head = seam.one(conn, "head_seq")
    by_name: dict[str, list[tuple[Any, ...]]] = {}
    for cursor in seam.all(conn, "status_consumers"):
        by_name.setdefault(cursor[0], []).append(tuple(cursor))
    consumers = []
    for name, rows in by_name.items():
        slowest = min(rows, key=lambda r: (r[3], r[1]))
        consumers.append(
            {
                "name": name,
                "partitions": slowest[2],
                "position": slowest[3],
                "lag": slowest[4],
                "updated_at": format_instant(max(r[5] for r in rows)),
                "parts": [
                    {
                        "part": part,
                        "position": position,
                        "lag": lag,
                        "updated_at": format_instant(updated_at),
                    }
                    for _name, part, _parts, position, lag, updated_at in rows
                ],
            }
        )
    failures = {row[0]: row for row in seam.all(conn, "status_failures")}
    for consumer in consumers:
        failure = failures.pop(consumer["name"], None)
        if failure is not None:
            consumer["last_failure"] = _failure(failure)
    consumers.extend({"name": name, "last_failure": _failure(f)} for name, f in failures.items())
    row = seam.one(conn, "status_backlog")
    assert row is not None
    windows, ended, releases, due_releases, syncs, due_syncs, sends, due_sends, leased = row[:9]
    oldest, now = row[9:]
    inbox = _inbox(seam, conn, mail_configured)
    push_sends: dict[str, Any] = {"pending": sends, "due": due_sends, "leased": leased}
    if oldest is not None:
        push_sends["oldest_next_at"] = format_instant(oldest)
    return {
        "schema": schema,
        "head_seq": head[0] if head is not None else 0,
        "at": format_instant(now),
        "consumers": consumers,
        "due": {
            "windows": {"open": windows, "ended": ended},
            "releases": {"pending": releases, "due": due_releases},
            "badge_syncs": {"pending": syncs, "due": due_syncs},
            "push_sends": push_sends,
        },
        "inbox": inbox,
        "records": _records(seam, conn, inbox["email"]["skipped_24h"]),
    }


#: The skip reasons of preference records (M2-M4).
_RECORD_REASONS: Final = ("suspended", "record_channel_off", "frequency_cap")


def _records(seam: Seam, conn: Conn, email_skips: dict[str, int]) -> dict[str, Any]:
    """What preference records held back over the last 24 hours, by reason (M2-M4): hints
    left with no route, and mails the drain skipped."""
    push = {str(r[0]): int(r[1]) for r in seam.all(conn, "status_push_holds")}
    email = {r: n for r, n in email_skips.items() if r in _RECORD_REASONS}
    return {"push_skipped_24h": push, "email_skipped_24h": email}


def _failure(row: tuple[Any, ...]) -> dict[str, Any]:
    _name, at, round_, code, sqlstate, message, failures = row
    out: dict[str, Any] = {"at": format_instant(at), "round": round_, "code": code}
    if sqlstate is not None:
        out["sqlstate"] = sqlstate
    out["message"] = message
    out["failures"] = failures
    return out
