"""The inbox on PostgreSQL (docs/inbox.md): the host's emit, inbox reads and the purge.

- `emit` is what a host calls in the transaction of the action that caused an event: one
  INSERT into ``inbox_outbox`` and nothing else (H4). It never fails the host's transaction.
- `InboxReads` are the framework-neutral reads of one person's inbox (H1, H2): a keyset page,
  the summary with its ETag, reads by id, all or filter, and dismissal.
- `purge` deletes entries past retention and processed outbox events older than a day (H3).
- `InboxPreferences` stores inbox choices only where they differ from the defaults (N2).

The fan-out that turns outbox rows into entries is `notify_pg.inbox.fanout`.
"""

from __future__ import annotations

import functools
import hashlib
import logging
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Final

import attrs
from psycopg import sql
from psycopg.types.json import Jsonb

from notify_core.inbox.categories import Origin, categories_for
from notify_core.inbox.host_categories import HOST_EVENT
from notify_core.inbox.pipeline import ACTIVITY_TYPES
from notify_core.inbox.ports import PageInfo
from notify_core.values.errors import InvalidInput
from notify_pg.db.migrate import DEFAULT_SCHEMA
from notify_pg.db.plan import Plan, all_rows, one_row, run_plan, touched
from notify_pg.db.seam import Conn, Seam, load_queries, text_array, trusted_sql
from notify_pg.inbox.host_categories import declare_category, host_registry, host_registry_plan

__all__ = [
    "PAGE_SIZE",
    "UNREAD_CAP",
    "InboxPage",
    "InboxPreferences",
    "InboxReads",
    "InboxSummary",
    "ListedEntry",
    "comment_deleted",
    "emit",
    "page_payload",
    "purge",
]

_log = logging.getLogger("notify_pg.inbox")

#: Entries per page of the inbox list (H1).
PAGE_SIZE: Final = 30
#: The unread count is counted up to this many (shown as "99+" above 99, H1).
UNREAD_CAP: Final = 100
#: What viewing a page (False) or its talk tab (True) marks read (H2).
VIEW_READS: Final = {
    False: ("page_created", "watched_page"),
    True: ("comment_reply", "mention", "watched_page_comment"),
}


def _now() -> datetime:
    return datetime.now(UTC)


def emit(
    conn: Conn,
    type: str,
    payload: Mapping[str, Any],
    *,
    actor: str | None = None,
    origin: str = "user",
    occurred_at: datetime | None = None,
    capture_watchers: sql.Composed | sql.SQL | None = None,
    page_as_was: PageInfo | None = None,
    site_notifications: bool = True,
    schema: str = DEFAULT_SCHEMA,
) -> int | None:
    """Write one wiki event into the outbox; return its id, or ``None`` when nothing is written.

    Called by the host after its action succeeded, inside the action's transaction. Nothing is
    written for a site whose notifications are off (N5: ``site_notifications`` false), an
    event type that is not an activity, or an origin no category fires for (N6). A deletion
    hands ``capture_watchers``, a query of one text column (the page's watchers in the host's
    tables): the same INSERT stores its result, so the ids never pass through Python and the
    watchers are those before the page and its watch rows go (N9). A deletion also hands
    ``page_as_was``, the page as it was before it went (site, path, locale, title, tags):
    the event carries it (`page_payload`), and the fan-out checks access and takes the
    entries' snapshot from it, never from a page row the host may already have removed (N9).

    It never raises: a payload that cannot be encoded fails before anything is sent, and the
    INSERT runs inside the function ``inbox_emit`` whose exception block turns a failure into
    a WARNING and ``None`` on the server, so the host's transaction goes on (one round trip,
    no savepoint of the client's).

    A host category (N13): a ``category.declared`` is no outbox event: its declaration is
    checked and written (`notify_pg.inbox.host_categories.declare_category`, in a savepoint
    so that a refusal leaves the host's transaction going, logged with its code) and the
    answer is ``None``; a ``category.event`` goes to the outbox like an activity, its
    category's origins checked by the fan-out.
    """
    if type == "category.declared":
        _declare(conn, payload, occurred_at, schema)
        return None
    if not site_notifications or type not in ACTIVITY_TYPES:
        return None
    try:
        kind = Origin(origin)
    except ValueError:
        _log.error("emit refused", extra={"fields": {"type": type, "reason": "bad_origin"}})
        return None
    if type != HOST_EVENT and not any(kind in c.origins for c in categories_for(type)):
        return None
    try:
        params = {
            "type": type,
            "origin": origin,
            "actor": actor,
            "payload": Jsonb(
                dict(payload) if page_as_was is None else {**payload, **page_payload(page_as_was)}
            ),
            "occurred_at": occurred_at or _now(),
        }
        seam = _seam(schema)
        if capture_watchers is None:
            query: sql.Composed = seam.query("inbox_emit")
        else:
            text = trusted_sql(load_queries("notify_pg")["inbox_emit_capturing"])
            query = sql.SQL(text).format(schema=sql.Identifier(schema), recipients=capture_watchers)
        row = conn.execute(query, params).fetchone()
    except Exception as exc:  # emit must never fail the host's action
        _log.error("emit failed", extra={"fields": {"type": type, "error_type": type_name(exc)}})
        return None
    if row is None or row[0] is None:
        _log.error("emit failed", extra={"fields": {"type": type, "error_type": "server"}})
        return None
    return int(row[0])


def _declare(conn: Conn, payload: Mapping[str, Any], at: datetime | None, schema: str) -> None:
    """`emit` of a ``category.declared``: the declaration written, or the refusal logged."""
    try:
        with conn.transaction():  # a savepoint inside the host's transaction
            declare_category(conn, payload, at=at, schema=schema)
    except InvalidInput as exc:
        _log.error(
            "emit refused",
            extra={"fields": {"type": "category.declared", "reason": exc.code}},
        )
    except Exception as exc:  # emit must never fail the host's action
        _log.error(
            "emit failed",
            extra={"fields": {"type": "category.declared", "error_type": type_name(exc)}},
        )


def page_payload(page: PageInfo) -> dict[str, Any]:
    """The members a deletion's outbox payload carries of its page as it was (N9): ``site``,
    ``path``, ``locale``, ``title`` and ``tags`` (sorted), as ``page.created`` names them."""
    return {
        "site": page.site,
        "path": page.path,
        "locale": page.locale,
        "title": page.title,
        "tags": sorted(page.tags),
    }


@functools.cache
def _seam(schema: str) -> Seam:
    """One seam per schema for `emit` (its composed queries are kept)."""
    return Seam("notify_pg", schema)


def type_name(exc: BaseException) -> str:
    """The name of an exception's class (for logs that never carry values)."""
    return type(exc).__name__


@attrs.frozen(kw_only=True)
class ListedEntry:
    """One entry as the inbox lists it (the snapshot of N11; no email details); ``draft``: a
    page created unpublished (E6)."""

    id: int
    site: str | None
    category: str
    variant: str
    group_key: str
    page: str | None
    comment: str | None
    actor: str | None
    title: str
    path: str
    locale: str
    excerpt: str | None
    variants: tuple[str, ...]
    count: int
    read: bool
    created_at: datetime
    updated_at: datetime
    draft: bool = False
    #: A host category's entry (N13): its latest event's members, by name.
    members: tuple[tuple[str, str], ...] = ()


@attrs.frozen(kw_only=True)
class InboxPage:
    """One page of the inbox and the keyset position of the next (``None``: the last page)."""

    entries: tuple[ListedEntry, ...]
    next: tuple[datetime, int] | None


@attrs.frozen(kw_only=True)
class InboxSummary:
    """The badge: ``unread`` (counted up to 100), ``latest_at`` and the ETag of both (H1)."""

    unread: int
    latest_at: datetime | None
    etag: str

    @property
    def badge(self) -> str:
        """The unread count as shown: ``99+`` above 99."""
        return "99+" if self.unread > 99 else str(self.unread)


def _etag(unread: int, latest_at: datetime | None) -> str:
    stamp = "" if latest_at is None else latest_at.isoformat()
    digest = hashlib.sha256(f"{unread}|{stamp}".encode()).hexdigest()[:16]
    return f'"{digest}"'


class InboxReads:
    """The reads of one person's inbox (H1, H2), framework-neutral: values in, values out.

    ``site`` is the site whose inbox is asked: its entries and those with no site (``None``:
    every site, as before inboxes were per site). ``hidden_sites`` are the sites whose
    notifications are off: their entries are kept but not shown (N5). Every call touches only
    the person's own rows, and only those the inbox shows (in-app), except a page view (H2).
    """

    def __init__(self, schema: str = DEFAULT_SCHEMA) -> None:
        self._seam = Seam("notify_pg", schema)

    def list_entries(
        self,
        conn: Conn,
        user_id: str,
        *,
        after: tuple[datetime, int] | None = None,
        hidden_sites: Sequence[str] = (),
        limit: int = PAGE_SIZE,
        site: str | None = None,
        unread_only: bool = False,
    ) -> InboxPage:
        """Return a page of the person's visible entries of ``site``, newest first
        (``(updated_at, id)``); ``unread_only``: only those not read yet."""
        return run_plan(
            conn,
            self.list_plan(
                user_id,
                after=after,
                hidden_sites=hidden_sites,
                limit=limit,
                site=site,
                unread_only=unread_only,
            ),
        )

    def list_plan(
        self,
        user_id: str,
        *,
        after: tuple[datetime, int] | None = None,
        hidden_sites: Sequence[str] = (),
        limit: int = PAGE_SIZE,
        site: str | None = None,
        unread_only: bool = False,
    ) -> Plan[InboxPage]:
        """`list_entries` as a plan (`notify_pg.db.plan`: run blocking or async)."""
        rows = yield from all_rows(
            self._seam,
            "inbox_list",
            {
                "user_id": user_id,
                "hidden_sites": list(hidden_sites),
                "site": site,
                "unread_only": unread_only,
                "before_at": after[0] if after else None,
                "before_id": after[1] if after else None,
                "limit": limit + 1,
            },
        )
        listed = tuple(_listed(r) for r in rows[:limit])
        more = len(rows) > limit
        return InboxPage(
            entries=listed,
            next=(listed[-1].updated_at, listed[-1].id) if more and listed else None,
        )

    def sites(self, conn: Conn, user_id: str) -> list[str]:
        """Return the sites of the person's visible entries, each once, sorted."""
        return run_plan(conn, self.sites_plan(user_id))

    def sites_plan(self, user_id: str) -> Plan[list[str]]:
        """`sites` as a plan."""
        rows = yield from all_rows(self._seam, "inbox_sites_of", {"user_id": user_id})
        return [str(r[0]) for r in rows]

    def summary(
        self,
        conn: Conn,
        user_id: str,
        *,
        hidden_sites: Sequence[str] = (),
        site: str | None = None,
    ) -> InboxSummary:
        """Return the unread count (up to 100), the latest time and their ETag, over the
        visible entries of ``site`` (H1)."""
        return run_plan(conn, self.summary_plan(user_id, hidden_sites=hidden_sites, site=site))

    def summary_plan(
        self, user_id: str, *, hidden_sites: Sequence[str] = (), site: str | None = None
    ) -> Plan[InboxSummary]:
        """`summary` as a plan."""
        params = {
            "user_id": user_id,
            "hidden_sites": list(hidden_sites),
            "site": site,
            "cap": UNREAD_CAP,
        }
        count = yield from one_row(self._seam, "inbox_unread_count", params)
        latest = yield from one_row(self._seam, "inbox_latest_at", params)
        unread = int(count[0]) if count else 0
        latest_at = latest[0] if latest else None
        return InboxSummary(unread=unread, latest_at=latest_at, etag=_etag(unread, latest_at))

    def read(
        self,
        conn: Conn,
        user_id: str,
        *,
        ids: Sequence[int] | None = None,
        page: str | None = None,
        categories: Sequence[str] | None = None,
        at: datetime | None = None,
        site: str | None = None,
        views: bool = False,
    ) -> list[int]:
        """Mark the person's unread entries read: all, or those matching every filter given.

        Only entries the inbox shows, of ``site`` and with no site (``None``: every site);
        ``views``: a page view, which reaches email-only entries too (H2). A pending email of
        an entry read is cancelled (``skipped``, E1). Returns the ids read.
        """
        return run_plan(
            conn,
            self.read_plan(
                user_id, ids=ids, page=page, categories=categories, at=at, site=site, views=views
            ),
        )

    def read_plan(
        self,
        user_id: str,
        *,
        ids: Sequence[int] | None = None,
        page: str | None = None,
        categories: Sequence[str] | None = None,
        at: datetime | None = None,
        site: str | None = None,
        views: bool = False,
    ) -> Plan[list[int]]:
        """`read` as a plan (an unknown category raises `InvalidInput` when it starts)."""
        if categories is not None:
            known = yield from host_registry_plan(self._seam.schema)
            for key in categories:
                if key not in known:
                    raise InvalidInput(
                        "unknown_category", f"unknown category {key!r}", "/categories"
                    )
        rows = yield from all_rows(
            self._seam,
            "inbox_read",
            {
                "user_id": user_id,
                "at": at or _now(),
                "ids": None if ids is None else list(ids),
                "page_id": page,
                "categories": None if categories is None else list(categories),
                "site": site,
                "views": views,
            },
        )
        return sorted(int(r[0]) for r in rows)

    def read_on_view(
        self,
        conn: Conn,
        user_id: str,
        page: str,
        *,
        talk: bool = False,
        at: datetime | None = None,
        site: str | None = None,
    ) -> list[int]:
        """Mark what viewing a page (or its talk tab) reads (H2), email-only entries included:
        the person has seen the change, so a pending email is cancelled (E1). ``site``: only
        the entries of that site (and with none), as the inbox reads."""
        return run_plan(conn, self.read_on_view_plan(user_id, page, talk=talk, at=at, site=site))

    def read_on_view_plan(
        self,
        user_id: str,
        page: str,
        *,
        talk: bool = False,
        at: datetime | None = None,
        site: str | None = None,
    ) -> Plan[list[int]]:
        """`read_on_view` as a plan."""
        return (
            yield from self.read_plan(
                user_id, page=page, categories=VIEW_READS[talk], at=at, site=site, views=True
            )
        )

    def dismiss(self, conn: Conn, user_id: str, entry_id: int, *, site: str | None = None) -> bool:
        """Delete one of the person's entries the inbox shows (of ``site`` or with no site);
        ``False`` when they have no such entry (an email-only one is never dismissed, H2)."""
        return run_plan(conn, self.dismiss_plan(user_id, entry_id, site=site))

    def dismiss_plan(self, user_id: str, entry_id: int, *, site: str | None = None) -> Plan[bool]:
        """`dismiss` as a plan."""
        params = {"id": entry_id, "user_id": user_id, "site": site}
        return (yield from touched(self._seam, "inbox_dismiss", params)) > 0


def _listed(row: tuple[Any, ...]) -> ListedEntry:
    (
        id_,
        site,
        category,
        variant,
        group_key,
        page,
        comment,
        actor,
        title,
        path,
        locale,
        excerpt,
        variants,
        count,
        _in_app,
        _email,
        read_at,
        created_at,
        updated_at,
        draft,
        members,
    ) = row
    return ListedEntry(
        id=int(id_),
        site=site,
        category=category,
        variant=variant,
        group_key=group_key,
        page=page,
        comment=comment,
        actor=actor,
        title=title,
        path=path,
        locale=locale,
        excerpt=excerpt if comment is not None else None,  # N11: only while it exists
        variants=tuple(variants),
        count=int(count),
        read=read_at is not None,
        created_at=created_at,
        updated_at=updated_at,
        draft=bool(draft),
        members=tuple(sorted(members.items())) if members else (),
    )


class InboxPreferences:
    """Inbox choices per person, category and channel, stored only off their default (N2)."""

    def __init__(self, schema: str = DEFAULT_SCHEMA) -> None:
        self._seam = Seam("notify_pg", schema)

    def set(self, conn: Conn, user_id: str, category: str, channel: str, enabled: bool) -> None:
        """Set one choice; the category's default deletes the row instead of storing it.
        A category of the registry: the seven or the host's own (N13)."""
        run_plan(conn, self.set_plan(user_id, category, channel, enabled))

    def set_plan(self, user_id: str, category: str, channel: str, enabled: bool) -> Plan[None]:
        """`set` as a plan."""
        found = (yield from host_registry_plan(self._seam.schema)).get(category)
        if found is None:
            raise InvalidInput("unknown_category", f"unknown category {category!r}", "/category")
        if channel not in ("in_app", "email"):
            raise InvalidInput("unknown_channel", f"unknown channel {channel!r}", "/channel")
        params = {"user_id": user_id, "category": category, "channel": channel}
        if enabled == getattr(found.defaults, channel):
            yield from touched(self._seam, "inbox_pref_delete", params)
        else:
            yield from touched(self._seam, "inbox_pref_put", {**params, "enabled": enabled})

    def stop_all_email(self, conn: Conn, user_id: str) -> None:
        """Turn email off for every category (N2)."""
        with self._seam.transaction(conn):
            for category in host_registry(conn, schema=self._seam.schema):
                self.set(conn, user_id, category, "email", False)

    def rows(self, conn: Conn, user_ids: Sequence[str]) -> dict[str, dict[tuple[str, str], bool]]:
        """Return the stored choices of many people."""
        return run_plan(conn, self.rows_plan(user_ids))

    def rows_plan(self, user_ids: Sequence[str]) -> Plan[dict[str, dict[tuple[str, str], bool]]]:
        """`rows` as a plan."""
        out: dict[str, dict[tuple[str, str], bool]] = {}
        found = yield from all_rows(
            self._seam, "inbox_prefs_of", {"ids": text_array(list(user_ids))}
        )
        for user, category, channel, enabled in found:
            out.setdefault(user, {})[(category, channel)] = bool(enabled)
        return out


def comment_deleted(conn: Conn, comment: str, *, schema: str = DEFAULT_SCHEMA) -> int:
    """Tell the inbox a comment is gone (the host calls it in the deleting transaction).

    Its entries stay, but no longer show its excerpt (N11). Returns the entries touched.
    """
    return _seam(schema).run(conn, "inbox_comment_deleted", {"comment_id": comment})


#: Entries and outbox rows deleted per statement by the purge (H3).
PURGE_BATCH: Final = 10_000


def purge(
    conn: Conn,
    *,
    retention_days: int = 60,
    now: datetime | None = None,
    batch: int = PURGE_BATCH,
    schema: str = DEFAULT_SCHEMA,
) -> dict[str, int]:
    """Delete entries not changed for ``retention_days`` (read or not) and outbox events
    processed more than a day ago, in batches of ``batch`` rows, each batch its own
    transaction (H3); with the entries, the audit of push deliveries older than
    ``retention_days`` (ended push sends, hints records held back, the days of push caps:
    ``deliveries``, M6). Returns how many of each went."""
    seam = Seam("notify_pg", schema)
    at = now or _now()
    counts = {"entries": 0, "outbox": 0, "deliveries": 0}
    before = at - timedelta(days=retention_days)
    after = ""  # the entries' walk over the people resumes at the last person of a batch
    while True:
        with seam.transaction(conn):
            gone, last = seam.one(
                conn, "inbox_purge_entries", {"before": before, "batch": batch, "after": after}
            ) or (0, None)
        counts["entries"] += gone
        if gone < batch or last is None:
            break
        after = last
    while True:
        with seam.transaction(conn):
            row = seam.one(conn, "purge_push_deliveries", {"before": before, "batch": batch})
        gone_each = (0, 0, 0) if row is None else tuple(int(n) for n in row)
        counts["deliveries"] += sum(gone_each)
        if max(gone_each) < batch:
            break
    before = at - timedelta(days=1)
    while True:
        with seam.transaction(conn):
            gone = seam.run(conn, "inbox_purge_outbox", {"before": before, "batch": batch})
        counts["outbox"] += gone
        if gone < batch:
            break
    return counts
