"""The replay's inbox reads (rule H2): page views, reads by id, all or filter, dismissals.

Only a person's own entries are reached, and only those the inbox shows: an email-only entry
(``in_app`` false) is never reached by an inbox read or a dismissal, but is by a page or
talk-tab view (the person has seen the change). Reading an entry before its email goes cancels
the email (E1). Split from `notify_core.inbox.pipeline` so that the read side of the pipeline has
a room of its own.
"""

from __future__ import annotations

from typing import Final

from notify_core.events.log import Event
from notify_core.inbox.coalesce import read
from notify_core.inbox.ports import EntryStore

__all__ = ["READ_TYPES", "VIEW_READS", "apply_read"]

#: Events that change entries: views, reads, dismissals (H2).
READ_TYPES: Final = frozenset({"page.viewed", "inbox.read", "inbox.dismissed"})
#: What viewing a page (``False``) or its talk tab (``True``) marks read (H2).
VIEW_READS: Final = {
    False: frozenset({"watched_page", "page_created"}),
    True: frozenset({"watched_page_comment", "comment_reply", "mention"}),
}


def apply_read(entries: EntryStore, event: Event) -> None:
    """Apply a ``page.viewed``, ``inbox.read`` or ``inbox.dismissed`` event to the entries."""
    p = event.payload
    if event.type == "inbox.dismissed":
        found = entries.get(str(p["id"]))
        if (
            found is not None
            and event.audience in (None, found.person)
            and found.state.in_app  # an email-only entry is in no inbox: nothing to dismiss
        ):
            entries.dismiss(found.id)
        return
    person = str(event.audience)
    if event.type == "page.viewed":
        page, categories = str(p["page"]), VIEW_READS[p.get("talk") is True]
        # A view reaches email-only entries too: the person has seen the change, so its
        # pending email is cancelled (H2, E1).
        seen = [e for e in entries.unread_of(person) if e.page == page and e.category in categories]
        for entry in seen:
            entries.save(entry._replace(state=read(entry.state)))
        return
    ids = set(p.get("ids", ())) if "ids" in p else None  # type: ignore[call-overload]
    wanted = set(p.get("categories", ())) if "categories" in p else None  # type: ignore[call-overload]
    page_filter = str(p["page"]) if "page" in p else None
    chosen = [
        e
        for e in entries.unread_of(person)
        if (ids is None or e.id in ids)
        and (wanted is None or e.category in wanted)
        and (page_filter is None or e.page == page_filter)
    ]
    for entry in chosen:
        if entry.state.in_app:  # an email-only entry is in no inbox: it closes by its email
            entries.save(entry._replace(state=read(entry.state)))
