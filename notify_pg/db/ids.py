"""Identifiers the adapter creates: UUIDv7 text, so that ascending id is creation order."""

from __future__ import annotations

import os
import threading
import time
import uuid

__all__ = ["new_id"]


def new_id() -> str:
    """Return a new UUID version 7 (RFC 9562) as lowercase text.

    The first 48 bits are the Unix time in milliseconds, the rest random, so ids created later
    sort after earlier ones in plain string order; within one millisecond this process counts
    up from the last id (RFC 9562, monotonic random), so its ids never go back.
    """
    millis = time.time_ns() // 1_000_000
    rand = int.from_bytes(os.urandom(10), "big")
    value = (millis & (2**48 - 1)) << 80
    value |= 0x7 << 76
    value |= (rand >> 68 & 0xFFF) << 64
    value |= 0b10 << 62
    value |= rand & (2**62 - 1)
    global _last
    with _lock:
        if value <= _last:
            value = _last + 1
        _last = value
    return str(uuid.UUID(int=value))


_lock = threading.Lock()
_last = 0
