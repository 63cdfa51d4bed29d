"""A person's inbox of one site (rule H1), as pure functions over their entries.

The inbox of a site lists the person's visible entries (in-app, their site switched on) of
that site and those with no site, by ``(updated_at, id)`` descending, 30 per page,
keyset-paginated, optionally only the unread ones; its summary answers ``unread`` (counted
up to 100) and ``latest_at`` over the same entries. The in-memory twin of
`notify_pg.inbox.reads.InboxReads` (a replay's store hands the person's entries in), so
that one log gives the same inbox on both stores.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from datetime import datetime
from typing import Final

import attrs

from notify_core.inbox.ports import Entry

__all__ = ["PAGE_SIZE", "UNREAD_CAP", "InboxCount", "InboxView", "inbox_list", "inbox_summary"]

#: Entries per page of the inbox list (H1).
PAGE_SIZE: Final = 30
#: The unread count is counted up to this many (shown as "99+" above 99, H1).
UNREAD_CAP: Final = 100


@attrs.frozen(kw_only=True)
class InboxView:
    """One page of a site's inbox and the keyset position of the next (``None``: the last)."""

    entries: tuple[Entry, ...]
    next: tuple[datetime, str] | None


@attrs.frozen(kw_only=True)
class InboxCount:
    """The summary of a site's inbox: unread entries (up to `UNREAD_CAP`) and the latest time."""

    unread: int
    latest_at: datetime | None


def shows(entry: Entry, site: str, hidden_sites: Collection[str] = ()) -> bool:
    """Whether the inbox of ``site`` shows an entry: in-app, of that site or of none, and its
    site not switched off (N5, N12, H1)."""
    if not entry.state.in_app:
        return False
    own = entry.target.site
    return own is None or (own == site and own not in hidden_sites)


def _key(entry: Entry) -> tuple[datetime, str]:
    return (entry.state.updated_at, entry.id)


def inbox_list(
    entries: Iterable[Entry],
    *,
    site: str,
    hidden_sites: Collection[str] = (),
    unread_only: bool = False,
    after: tuple[datetime, str] | None = None,
    limit: int = PAGE_SIZE,
) -> InboxView:
    """Return a page of the inbox of ``site`` from a person's entries (H1).

    Args:
        entries: the person's entries (read or not).
        site: the site whose inbox is asked.
        hidden_sites: the sites whose notifications are switched off (N5).
        unread_only: only the entries not read yet.
        after: the keyset position of the page before (its ``next``).
        limit: entries per page.
    """
    shown = [
        e
        for e in entries
        if shows(e, site, hidden_sites)
        and not (unread_only and e.state.read)
        and (after is None or _key(e) < after)
    ]
    shown.sort(key=_key, reverse=True)
    page = tuple(shown[:limit])
    more = len(shown) > limit
    return InboxView(entries=page, next=_key(page[-1]) if more and page else None)


def inbox_summary(
    entries: Iterable[Entry], *, site: str, hidden_sites: Collection[str] = ()
) -> InboxCount:
    """Return the summary of the inbox of ``site``: unread entries (counted up to 100) and the
    latest ``updated_at`` over the entries its list shows (H1)."""
    unread = 0
    latest: datetime | None = None
    for entry in entries:
        if not shows(entry, site, hidden_sites):
            continue
        if not entry.state.read and unread < UNREAD_CAP:
            unread += 1
        at = entry.state.updated_at
        if latest is None or at > latest:
            latest = at
    return InboxCount(unread=unread, latest_at=latest)
