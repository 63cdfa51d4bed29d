"""Framework-neutral HTTP handlers of the inbox (H1, H2), and the names of one-click unsubscribe.

Each handler is a plain function of request values (the query string, the ``Content-Type``
and the body bytes, an ``If-None-Match``, the person the host authenticated) that returns a
`Response` value (status, headers, body bytes). No web framework type crosses the boundary:
a host mounts them in its own framework, and `notify_pg.http.app` is a small reference app over
them. Bad input is a clean ``400``, never an exception.

One-click unsubscribe (U3, U4) lives in `notify_pg.http.unsubscribe` and the answer with its
helpers in `notify_pg.http.responses`; their names are re-exported here, as they were
defined here before.

Inbox (the person comes from the host's authentication; the site from the URL's path, as
a wiki mounts ``/_api/sites/:siteId/notifications``): each handler takes ``site``, the site
whose inbox is asked, and answers for that site's entries and those with no site (H1;
``None``: every site).

- `inbox_list`: a page of 30 entries, newest first, with an opaque ``next`` cursor (absent
  on the last page); ``?unread=1`` lists only the unread ones. Each entry carries its
  ``link`` and the sentence its mail names it by (`notify_pg.http.shown`).
- `inbox_summary`: ``{"unread", "badge", "latest_at"?}`` with an ``ETag``; ``304`` when the
  poll's ``If-None-Match`` names it.
- `inbox_read_one`, `inbox_read`, `inbox_dismiss`: reads by id, all or filter; dismissal.
  None of them reaches an email-only entry (H2: only a page view does).
- `inbox_sites`: the sites whose inboxes the person may switch between.
- `inbox_view`: what the host's page calls when the person views a page or its talk tab
  (H2): the matching entries read, email-only ones included.

No answer holds ``null`` (G5): an absent value is an omitted member.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from notify_core.values.errors import InvalidInput
from notify_core.values.instants import format_instant
from notify_pg.db.migrate import DEFAULT_SCHEMA
from notify_pg.db.plan import Plan, run_plan
from notify_pg.db.seam import Conn
from notify_pg.http.responses import MAX_BODY_BYTES, Response
from notify_pg.http.responses import bare as _bare
from notify_pg.http.responses import json_answer as _json
from notify_pg.http.responses import media_type as _media_type
from notify_pg.http.responses import one_value as _one
from notify_pg.http.responses import parse_query as _query
from notify_pg.http.responses import problem as _problem
from notify_pg.http.shown import shown_entries_plan, site_list_plan
from notify_pg.http.unsubscribe import (
    UNSUBSCRIBE_INFO_PATH,
    UNSUBSCRIBE_PAGE,
    unsubscribe_get,
    unsubscribe_info,
    unsubscribe_info_plan,
    unsubscribe_post,
    unsubscribe_post_plan,
)
from notify_pg.inbox.reads import InboxReads, InboxSummary, ListedEntry
from notify_pg.mail.ports import MailHostPorts

__all__ = [
    "MAX_BODY_BYTES",
    "UNSUBSCRIBE_INFO_PATH",
    "UNSUBSCRIBE_PAGE",
    "Response",
    "inbox_dismiss",
    "inbox_dismiss_plan",
    "inbox_list",
    "inbox_list_plan",
    "inbox_read",
    "inbox_read_one",
    "inbox_read_one_plan",
    "inbox_read_plan",
    "inbox_sites",
    "inbox_sites_plan",
    "inbox_summary",
    "inbox_summary_plan",
    "inbox_view",
    "inbox_view_plan",
    "matches",
    "summary_response",
    "unsubscribe_get",
    "unsubscribe_info",
    "unsubscribe_info_plan",
    "unsubscribe_post",
    "unsubscribe_post_plan",
]


# ASCII digits only: ``\d`` would take any script's digits ("1٢"), which int() reads too.
_CURSOR: Final = re.compile(r"([0-9]{1,18})\.([0-9]{1,18})")
_ENTRY_ID: Final = re.compile(r"[1-9][0-9]{0,17}")
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_MAX_ID: Final = 2**63 - 1
#: The values of the list's ``unread`` flag.
_FLAGS: Final[Mapping[str | None, bool]] = {
    "1": True,
    "true": True,
    "0": False,
    "false": False,
    "": False,
}


@functools.cache
def _reads(schema: str) -> InboxReads:
    return InboxReads(schema)


def _cursor_text(position: tuple[datetime, int]) -> str:
    at, entry = position
    micros = (at - _EPOCH) // timedelta(microseconds=1)
    return f"{micros}.{entry}"


def _cursor(text: str) -> tuple[datetime, int] | None:
    m = _CURSOR.fullmatch(text)
    if m is None or int(m[2]) > _MAX_ID:
        return None
    try:
        return _EPOCH + timedelta(microseconds=int(m[1])), int(m[2])
    except OverflowError:
        return None


def _entry_json(entry: ListedEntry) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": entry.id,
        "category": entry.category,
        "variant": entry.variant,
        "group_key": entry.group_key,
        "title": entry.title,
        "path": entry.path,
        "locale": entry.locale,
        "variants": list(entry.variants),
        "count": entry.count,
        "read": entry.read,
        "created_at": format_instant(entry.created_at),
        "updated_at": format_instant(entry.updated_at),
    }
    for name in ("site", "page", "comment", "actor", "excerpt"):
        value = getattr(entry, name)
        if value is not None:
            out[name] = value
    return out


def inbox_list(
    conn: Conn,
    user: str,
    *,
    query: str | bytes = "",
    hidden_sites: Sequence[str] = (),
    site: str | None = None,
    schema: str = DEFAULT_SCHEMA,
    host: MailHostPorts | None = None,
) -> Response:
    """Answer the inbox list of a site (H1): ``{"entries": [...], "next"?: cursor}``.

    30 visible entries a page by ``(updated_at, id)`` descending, of ``site`` and with no
    site; ``?cursor=`` with the previous page's ``next`` gives the following page (the last
    page has no ``next``: G5, never ``null``);
    ``?unread=1`` (or ``true``) only the unread entries (``0``, ``false`` or empty: all).

    Each entry carries its snapshot and what `notify_pg.http.shown.shown_entries` reads of
    ``host`` (the host's ports) now: its ``link`` (following the page while it exists, N11),
    ``text`` (the sentence its mail names it by, in the person's language), ``actor_name``
    and, for a review, its ``submission``.
    """
    plan = inbox_list_plan(
        user, query=query, hidden_sites=hidden_sites, site=site, schema=schema, host=host
    )
    return run_plan(conn, plan)


def inbox_list_plan(
    user: str,
    *,
    query: str | bytes = "",
    hidden_sites: Sequence[str] = (),
    site: str | None = None,
    schema: str = DEFAULT_SCHEMA,
    host: MailHostPorts | None = None,
) -> Plan[Response]:
    """`inbox_list` as a plan (`notify_pg.db.plan`: run blocking, or async when ``host`` is
    ``None`` or has the plan forms of its ports, `notify_pg.http.shown.plans_ready`)."""
    values = _query(query)
    if values is None:
        return _problem("invalid_query", "the query string is not UTF-8 form text")
    after = None
    if "cursor" in values:
        text = _one(values, "cursor")
        after = None if text is None else _cursor(text)
        if after is None:
            return _problem("invalid_cursor", "cursor is not a cursor of this list", "/cursor")
    unread_only = False
    if "unread" in values:
        flag = _one(values, "unread")
        if flag not in _FLAGS:
            return _problem("invalid_unread", "unread is 1, true, 0, false or empty", "/unread")
        unread_only = _FLAGS[flag]
    page = yield from _reads(schema).list_plan(
        user, after=after, hidden_sites=hidden_sites, site=site, unread_only=unread_only
    )
    extras = yield from shown_entries_plan(host, user, page.entries, site=site, schema=schema)
    answer: dict[str, Any] = {
        "entries": [_entry_json(e) | more for e, more in zip(page.entries, extras, strict=True)]
    }
    if page.next is not None:  # G5: the last page omits the member rather than say null
        answer["next"] = _cursor_text(page.next)
    return _json(200, answer)


def matches(if_none_match: str | None, etag: str) -> bool:
    """Whether an ``If-None-Match`` names ``etag`` (or is ``*``)."""
    if if_none_match is None:
        return False
    if if_none_match.strip() == "*":
        return True
    # A weak comparison (RFC 9110 13.1.2): W/ prefixes do not matter.
    tags = {t.strip().removeprefix("W/") for t in if_none_match.split(",")}
    return etag in tags


def inbox_summary(
    conn: Conn,
    user: str,
    *,
    if_none_match: str | None = None,
    hidden_sites: Sequence[str] = (),
    site: str | None = None,
    schema: str = DEFAULT_SCHEMA,
) -> Response:
    """Answer the summary poll of a site (H1): ``{"unread", "badge", "latest_at"?}`` and its
    ``ETag``, over the entries `inbox_list` lists for ``site``.

    ``unread`` is counted up to 100 and ``badge`` shows ``99+`` above 99; an inbox with no
    entry has no ``latest_at`` (G5: omitted, never ``null``). A poll whose
    ``If-None-Match`` names the current ``ETag`` gets ``304`` with no body.
    """
    found = _reads(schema).summary(conn, user, hidden_sites=hidden_sites, site=site)
    return summary_response(found, if_none_match)


def inbox_summary_plan(
    user: str,
    *,
    if_none_match: str | None = None,
    hidden_sites: Sequence[str] = (),
    site: str | None = None,
    schema: str = DEFAULT_SCHEMA,
) -> Plan[Response]:
    """`inbox_summary` as a plan (`notify_pg.db.plan`: run blocking or async)."""
    found = yield from _reads(schema).summary_plan(user, hidden_sites=hidden_sites, site=site)
    return summary_response(found, if_none_match)


def summary_response(found: InboxSummary, if_none_match: str | None) -> Response:
    """The summary's answer of a summary read: ``304`` when ``if_none_match`` names its
    ETag, else ``200`` with its JSON."""
    etag = ("ETag", found.etag)
    if matches(if_none_match, found.etag):
        return Response(status=304, headers=(etag, ("Cache-Control", "no-cache")))
    answer: dict[str, Any] = {"unread": found.unread, "badge": found.badge}
    if found.latest_at is not None:
        answer["latest_at"] = format_instant(found.latest_at)
    return _json(200, answer, etag)


def _entry_id(text: str) -> int | None:
    if _ENTRY_ID.fullmatch(text) is None or int(text) > _MAX_ID:
        return None
    return int(text)


def inbox_read_one(
    conn: Conn,
    user: str,
    entry: str,
    *,
    at: datetime | None = None,
    site: str | None = None,
    schema: str = DEFAULT_SCHEMA,
) -> Response:
    """Mark one of the person's entries read (H2): ``{"read": [ids read now]}``.

    ``entry`` is the id as the URL carries it; an entry already read, or not the person's,
    reads nothing (``[]``). A pending email of an entry read is cancelled (E1).
    """
    return run_plan(conn, inbox_read_one_plan(user, entry, at=at, site=site, schema=schema))


def inbox_read_one_plan(
    user: str,
    entry: str,
    *,
    at: datetime | None = None,
    site: str | None = None,
    schema: str = DEFAULT_SCHEMA,
) -> Plan[Response]:
    """`inbox_read_one` as a plan."""
    entry_id = _entry_id(entry)
    if entry_id is None:
        return _problem("invalid_id", "an entry id is a positive integer", "/id")
    read = yield from _reads(schema).read_plan(user, ids=[entry_id], at=at, site=site)
    return _json(200, {"read": read})


def _ids(value: object) -> list[int] | None:
    if not isinstance(value, list):
        return None
    out = []
    for item in value:
        if type(item) is not int or not 1 <= item <= _MAX_ID:
            return None
        out.append(item)
    return out


def _storable(text: str) -> bool:
    """Whether PostgreSQL can hold ``text``: a NUL is a bad request, not a storage failure."""
    return "\x00" not in text


def _strings(value: object) -> list[str] | None:
    if not isinstance(value, list) or not all(isinstance(v, str) and _storable(v) for v in value):
        return None
    return list(value)


def inbox_read(
    conn: Conn,
    user: str,
    *,
    content_type: str | None,
    body: bytes,
    at: datetime | None = None,
    site: str | None = None,
    schema: str = DEFAULT_SCHEMA,
) -> Response:
    """Mark the person's entries of ``site`` (and with no site) read (H2): all, or those
    matching every filter given.

    The body is a JSON object with the optional members ``ids`` (entry ids), ``page`` (a
    page id) and ``categories`` (category keys); an empty body or ``{}`` reads all. Answers
    ``{"read": [ids read now]}``; a malformed body is a ``400`` naming the member.
    """
    plan = inbox_read_plan(
        user, content_type=content_type, body=body, at=at, site=site, schema=schema
    )
    return run_plan(conn, plan)


def inbox_read_plan(
    user: str,
    *,
    content_type: str | None,
    body: bytes,
    at: datetime | None = None,
    site: str | None = None,
    schema: str = DEFAULT_SCHEMA,
) -> Plan[Response]:
    """`inbox_read` as a plan."""
    if len(body) > MAX_BODY_BYTES:
        return _problem("body_too_large", f"the body is over {MAX_BODY_BYTES} bytes")
    if body.strip() and _media_type(content_type) not in ("", "application/json"):
        return _problem("invalid_content_type", "the body must be application/json")
    try:
        value = json.loads(body.decode("utf-8")) if body.strip() else {}
    except (UnicodeDecodeError, ValueError, RecursionError):
        return _problem("invalid_json", "the body is not a JSON object")
    if not isinstance(value, dict):
        return _problem("invalid_json", "the body is not a JSON object")
    unknown = sorted(set(value) - {"ids", "page", "categories"})
    if unknown:
        return _problem("unknown_member", f"unknown member {unknown[0]!r}", f"/{unknown[0]}")
    ids = None if "ids" not in value else _ids(value["ids"])
    if "ids" in value and ids is None:
        return _problem("invalid_ids", "ids is a list of positive integers", "/ids")
    # A member given as null is refused like any other wrong type: read as "absent" it
    # would widen the filter to every unread entry.
    page = value.get("page")
    if "page" in value and (not isinstance(page, str) or not _storable(page)):
        return _problem("invalid_page", "page is a page id (a string)", "/page")
    categories = None if "categories" not in value else _strings(value["categories"])
    if "categories" in value and categories is None:
        return _problem("invalid_categories", "categories is a list of strings", "/categories")
    try:
        read = yield from _reads(schema).read_plan(
            user, ids=ids, page=page, categories=categories, at=at, site=site
        )
    except InvalidInput as exc:
        return _problem(exc.code, exc.message, exc.pointer)
    return _json(200, {"read": read})


def inbox_dismiss(
    conn: Conn, user: str, entry: str, *, site: str | None = None, schema: str = DEFAULT_SCHEMA
) -> Response:
    """Dismiss (delete) one of the person's entries of ``site`` (or with no site) (H2):
    ``204``, or ``404`` when their inbox shows no such entry."""
    return run_plan(conn, inbox_dismiss_plan(user, entry, site=site, schema=schema))


def inbox_dismiss_plan(
    user: str, entry: str, *, site: str | None = None, schema: str = DEFAULT_SCHEMA
) -> Plan[Response]:
    """`inbox_dismiss` as a plan."""
    entry_id = _entry_id(entry)
    if entry_id is None:
        return _problem("invalid_id", "an entry id is a positive integer", "/id")
    gone = yield from _reads(schema).dismiss_plan(user, entry_id, site=site)
    return _bare(204) if gone else _json(404, {"error": {"code": "not_found"}})


def inbox_view(
    conn: Conn,
    user: str,
    page: str,
    *,
    talk: bool = False,
    at: datetime | None = None,
    site: str | None = None,
    schema: str = DEFAULT_SCHEMA,
) -> Response:
    """Mark read what the person's view of ``page`` reads (H2): ``{"read": [ids read now]}``.

    The host's page calls it as the person opens the page (its ``watched_page`` and
    ``page_created`` entries) or, with ``talk``, its talk tab (its ``watched_page_comment``,
    ``comment_reply`` and ``mention`` entries). Unlike the inbox's reads it reaches email-only
    entries: the person has seen the change, so its pending email is cancelled (E1). Only
    the person's entries of ``site`` (and with no site); a page with none reads nothing
    (``[]``). A page id that is empty or holds a NUL is a ``400``.
    """
    plan = inbox_view_plan(user, page, talk=talk, at=at, site=site, schema=schema)
    return run_plan(conn, plan)


def inbox_view_plan(
    user: str,
    page: str,
    *,
    talk: bool = False,
    at: datetime | None = None,
    site: str | None = None,
    schema: str = DEFAULT_SCHEMA,
) -> Plan[Response]:
    """`inbox_view` as a plan."""
    if not page or not _storable(page):
        return _problem("invalid_page", "page is a page id (a string)", "/page")
    reads = _reads(schema)
    read = yield from reads.read_on_view_plan(user, page, talk=talk, at=at, site=site)
    return _json(200, {"read": read})


def inbox_sites(
    conn: Conn,
    user: str,
    *,
    host: object = None,
    hidden_sites: Sequence[str] = (),
    schema: str = DEFAULT_SCHEMA,
) -> Response:
    """Answer the sites whose inboxes the person may switch between (H1: one inbox per site):
    ``{"sites": [{"id", "host"?, "https"?}]}``, the host's sites with notifications on by
    creation (`notify_pg.http.shown.site_list`; without the host's ports, the sites of the
    person's entries). A demo page's site switcher reads it."""
    return run_plan(
        conn, inbox_sites_plan(user, host=host, hidden_sites=hidden_sites, schema=schema)
    )


def inbox_sites_plan(
    user: str,
    *,
    host: object = None,
    hidden_sites: Sequence[str] = (),
    schema: str = DEFAULT_SCHEMA,
) -> Plan[Response]:
    """`inbox_sites` as a plan."""
    found = yield from site_list_plan(host, user, hidden_sites=hidden_sites, schema=schema)
    return _json(200, {"sites": found})
