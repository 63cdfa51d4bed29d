"""Where the inbox says "something changed" (H1): the NOTIFY channel.

Migration 0020 puts statement-level triggers on ``inbox_entries``: every write that changes
what a person's summary answers (the fan-out's inserts and coalescings, reads, dismissals, the
purge, a forgotten person) sends, in its own transaction, ``NOTIFY`` on `live_channel` with a
JSON array of the people it touched, chunked under PostgreSQL's 8 kB payload limit
(`MAX_PAYLOAD_BYTES`), or `EVERYONE` when a person id is too long for a payload. A listener
(`notify_pg.http.live.LiveHub`) only ever says "refresh": the summary stays the one source of
truth.
"""

from __future__ import annotations

import hashlib
import json
from typing import Final

from notify_pg.db.migrate import DEFAULT_SCHEMA

__all__ = ["EVERYONE", "MAX_PAYLOAD_BYTES", "live_channel", "people_of"]

#: The payload that tells every listener to refresh every person.
EVERYONE: Final = "*"
#: The most bytes of one payload the triggers send (PostgreSQL refuses 8,000).
MAX_PAYLOAD_BYTES: Final = 7900


def live_channel(schema: str = DEFAULT_SCHEMA) -> str:
    """The channel the triggers of ``schema`` notify on: ``notify_inbox_`` and the MD5 of the
    schema's name (one channel per schema, always a valid channel name)."""
    return "notify_inbox_" + hashlib.md5(schema.encode("utf-8"), usedforsecurity=False).hexdigest()


def people_of(payload: str) -> list[str] | None:
    """The people a payload names; ``None`` for `EVERYONE` or a payload it cannot read (both
    mean: refresh everyone, the safe answer)."""
    if payload == EVERYONE:
        return None
    try:
        value = json.loads(payload)
    except ValueError:
        return None
    if not isinstance(value, list) or not all(isinstance(p, str) for p in value):
        return None
    return value
