"""The inbox of notify_pg (docs/inbox.md): the fan-out round and the reads of a person's inbox.

- `notify_pg.inbox.fanout`: the fan-out that turns outbox events into inbox entries, with its
  claims (`notify_pg.inbox.claims`), the event as it sees it (`notify_pg.inbox.describe`) and
  its write statements (`notify_pg.inbox.statements`);
- `notify_pg.inbox.rounds`: the fan-out and the purge as rounds of a worker's loop;
- `notify_pg.inbox.reads`: emit (the host's outbox write), a person's list, summary, reads,
  dismissals and the purge;
- `notify_pg.inbox.live`: the NOTIFY channel the inbox's triggers (migration 0020) tell of
  every write that changes a person's summary.

It imports `notify_pg.rounds` and `notify_pg.db` only. The reads are importable from here.
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
