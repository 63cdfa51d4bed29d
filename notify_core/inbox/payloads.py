"""The wiki events' payload members: moved to `notify_core.wiki_payloads`, re-exported here.

The event log checks these payloads and the inbox depends on the event log, so the tables
live beside the event log; this module keeps the old import path working.
"""

from __future__ import annotations

from notify_core.wiki_payloads import USER_MEMBERS, USER_UNSET, WIKI_PAYLOADS, WIKI_PERSONAL

__all__ = ["USER_MEMBERS", "USER_UNSET", "WIKI_PAYLOADS", "WIKI_PERSONAL"]
