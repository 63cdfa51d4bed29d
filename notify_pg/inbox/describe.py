"""An outbox event as the fan-out sees it (`notify_pg.inbox.fanout.InboxFanOut`): its kind,
ids, page as it is now (or was, for a deletion), variant and the mentions before an edit."""

from __future__ import annotations

from collections import Counter
from typing import Protocol

from notify_core.inbox.categories import Origin, event_variant
from notify_core.inbox.fanout import InboxEvent
from notify_core.inbox.memory import page_after, strings
from notify_core.inbox.ports import CommentInfo, PageInfo
from notify_pg.db.seam import Conn
from notify_pg.inbox.claims import Claimed

__all__ = ["EventHost", "describe"]


class EventHost(Protocol):
    """What `describe` reads of the host (part of `notify_pg.inbox.fanout.InboxHostPorts`)."""

    def inbox_page(self, conn: Conn, page: str) -> PageInfo | None:
        """Return a page as it is now; a deleted page as it was, with ``deleted`` set."""

    def inbox_comment(self, conn: Conn, comment: str) -> CommentInfo | None:
        """Return a comment, or ``None``."""


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
    if page is None:
        dropped["unknown_page"] += 1
        return None
    if kind == "page.deleted":
        if not page.deleted:
            dropped["page_exists"] += 1
            return None  # page_exists: the delete failed after its emit
    elif kind in ("page.edited", "page.renamed"):
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
