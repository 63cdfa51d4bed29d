"""The inbox of notify_pg (seed 004): the fan-out round and the reads of a person's inbox.

- `notify_pg.inbox.fanout`: the round that turns outbox events into inbox entries;
- `notify_pg.inbox.reads`: emit (the host's outbox write), a person's list, summary, reads,
  dismissals and the purge;
- `notify_pg.inbox.live`: the NOTIFY channel the inbox's triggers (migration 0020) tell of
  every write that changes a person's summary.

It imports `notify_pg.db` only. The names of the old module ``notify_pg.inbox`` (the reads)
are re-exported here.
"""

from notify_pg.inbox.reads import (
    PAGE_SIZE,
    UNREAD_CAP,
    InboxPage,
    InboxPreferences,
    InboxReads,
    InboxSummary,
    ListedEntry,
    comment_deleted,
    emit,
    purge,
)

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
    "purge",
]
