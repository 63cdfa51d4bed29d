"""The test world and small helpers shared by the PostgreSQL tests."""

from __future__ import annotations

from typing import Any

import psycopg

from notify_core.hints.levels import Target, TargetKind
from notify_pg import read_event_log

SCHEMA = "notify"
HOST_SCHEMA = "host"

# The world of seed 000's tests, white-labelled: space Support with channels Allgemein and
# Eskalation; Alex reads Support, Sam reads Allgemein, Robin reads neither; the Owner reads all.
ALEX, SAM, ROBIN, OWNER = "u-alex", "u-sam", "u-robin", "u-owner"
SUPPORT, OTHER = "s-support", "s-other"
ALLGEMEIN, ESKALATION, OTHER_CHANNEL, DM = "c-allgemein", "c-eskalation", "c-other", "c-dm"
T, M, T_ESK, T_OTHER, T_DM = "t-t", "t-main", "t-esk", "t-other", "t-dm"


def space(i: str) -> Target:
    return Target(kind=TargetKind.SPACE, id=i)


def channel(i: str) -> Target:
    return Target(kind=TargetKind.CHANNEL, id=i)


def thread(i: str) -> Target:
    return Target(kind=TargetKind.THREAD, id=i)


def events(conn: psycopg.Connection[Any], after_seq: int = 0) -> list[dict[str, object]]:
    """The events of the test database, as read_event_log yields them."""
    return list(read_event_log(conn, SCHEMA, after_seq))


def last_seq(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute(f"SELECT coalesce(max(seq), 0) FROM {SCHEMA}.event_log").fetchone()
    assert row is not None
    return int(row[0])
