"""An outbox event as the fan-out sees it (`notify_pg.inbox.fanout.InboxFanOut`): its kind,
ids, page as it is now (or was, for a deletion), variant and the mentions before an edit."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any, Protocol

from psycopg.types.json import Jsonb

from notify_core.inbox.categories import Origin, event_variant
from notify_core.inbox.fanout import InboxEvent
from notify_core.inbox.host_categories import HOST_VARIANT, event_members
from notify_core.inbox.payloads import page_after, strings
from notify_core.inbox.ports import CommentInfo, PageInfo
from notify_pg.db.seam import Conn
from notify_pg.inbox.claims import Claimed
from notify_pg.inbox.host_categories import host_registry

__all__ = ["EventHost", "describe", "describe_host", "host_values", "page_as_was"]


class EventHost(Protocol):
    """What `describe` reads of the host (part of `notify_pg.inbox.fanout.InboxHostPorts`)."""

    def inbox_page(self, conn: Conn, page: str) -> PageInfo | None:
        """Return a page as it is now; a deleted page as it was, with ``deleted`` set."""

    def inbox_comment(self, conn: Conn, comment: str) -> CommentInfo | None:
        """Return a comment, or ``None``."""


def page_as_was(page: str, payload: Mapping[str, Any]) -> PageInfo | None:
    """The page a deletion's payload carries as it was (N9, `notify_pg.inbox.reads.page_payload`),
    or ``None`` when the host emitted it without (then its flagged row is read)."""
    if "site" not in payload or "path" not in payload:
        return None
    return PageInfo(
        id=page,
        site=str(payload["site"]),
        path=str(payload["path"]),
        locale=str(payload.get("locale", "")),
        title=str(payload.get("title", "")),
        tags=strings(payload.get("tags")),
        deleted=True,
    )


def describe(
    conn: Conn, host: EventHost, claimed: Claimed, dropped: Counter[str]
) -> tuple[InboxEvent, PageInfo] | None:
    """The event as the fan-out sees it, with its page; ``None``: nothing to fan out (the
    reason counted in ``dropped``: ``unknown_page``, ``page_exists``)."""
    event = claimed.event
    p, kind = event.payload, event.type
    ids: dict[str, str] = {}
    parent_author = None
    previous: frozenset[str] = frozenset()
    page_id: str | None
    if kind.startswith("comment."):
        comment_id = str(p["comment"])
        ids["comment"] = comment_id
        comment = host.inbox_comment(conn, comment_id)
        page_id = str(p["page"]) if "page" in p else (comment.page if comment else None)
        if kind == "comment.edited":
            # The host hands the mentions before the edit in the payload: by the time the
            # fan-out runs, its comment row holds the new ones.
            previous = strings(p.get("previous_mentions"))
        elif "parent" in p:
            ids["parent"] = str(p["parent"])
            parent = host.inbox_comment(conn, ids["parent"])
            parent_author = parent.author if parent is not None else None
    else:
        page_id = str(p["page"])
        if kind.startswith("submission."):
            ids["submission"] = str(p["submission"])
    if page_id is None:
        dropped["unknown_page"] += 1
        return None
    ids["page"] = page_id
    page = host.inbox_page(conn, page_id)
    if kind == "page.deleted":
        if page is not None and not page.deleted:
            dropped["page_exists"] += 1
            return None  # page_exists: the delete failed after its emit
        # N9: the page as it was comes with the event; the host's row (flagged, or gone
        # altogether) is read only for an event emitted without it.
        page = page_as_was(page_id, p) or page
    if page is None:
        dropped["unknown_page"] += 1
        return None
    if kind in ("page.edited", "page.renamed"):
        page = page_after(page, event)
    inbox = InboxEvent(
        id=str(claimed.id),
        type=kind,
        origin=Origin(event.origin or "user"),
        actor=event.actor,
        site=page.site,
        page=page.access,
        ids=ids,
        variant=event_variant(kind, None if p.get("variant") is None else str(p["variant"])),
        parent_author=parent_author,
        previous_mentions=previous,
    )
    return inbox, page


def describe_host(
    conn: Conn, claimed: Claimed, dropped: Counter[str], schema: str
) -> tuple[InboxEvent, PageInfo] | None:
    """A host category's event (N13) as the fan-out sees it, with a page of no path (it is
    about no page); ``None``: nothing to fan out (``unknown_category``: never declared;
    ``missing_site``: a site category's event without its site)."""
    event = claimed.event
    p = event.payload
    category = host_registry(conn, schema=schema).get(str(p.get("category", "")))
    if category is None or not category.host:
        dropped["unknown_category"] += 1
        return None
    if category.scope == "site" and "site" not in p:
        dropped["missing_site"] += 1
        return None
    # An instance entry has no site: every site's inbox shows it (N13).
    site = str(p["site"]) if category.scope == "site" else None
    inbox = InboxEvent(
        id=str(claimed.id),
        type=event.type,
        origin=Origin(event.origin or "user"),
        actor=event.actor,
        site=site,
        ids=event_members(p),
        variant=HOST_VARIANT,
        host=category,
    )
    return inbox, PageInfo(id="", site=site or "", path="")


def host_values(claimed: Claimed, inbox: InboxEvent) -> dict[str, Any]:
    """The columns every entry of a host category's event shares (N13): no page, the event's
    ``target`` as the title, its members for the strings' placeholders."""
    event = claimed.event
    return {
        "site_id": inbox.site,
        "variant": inbox.variant,
        "page_id": None,
        "comment_id": None,
        "actor_id": event.actor,
        "title": inbox.ids.get("target", ""),
        "path": "",
        "locale": "",
        "excerpt": None,
        "draft": False,
        "last_event": claimed.id,
        "at": event.occurred_at,
        "members": Jsonb(dict(inbox.ids)),
    }
