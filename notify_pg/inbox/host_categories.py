"""Host categories on PostgreSQL (rule N13): the declarations a host makes, and the registry.

A host declares a category through its emit path (`notify_pg.inbox.reads.emit` of a
``category.declared``, which calls `declare_category`) or ``notify db load``; the declaration
is checked as a log line is (the event log's member table, then the core's
`notify_core.inbox.host_categories.declare`) and written to ``inbox_categories``, one row
per key (declaring a key again replaces it from then on). `registry` reads the instance's
registry: the seven launch categories and the host's own, as the replay's
`notify_core.inbox.categories.registry` builds it, so both twins read the same categories.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from psycopg.types.json import Jsonb

from notify_core.events.log import EventError, parse_event
from notify_core.inbox.categories import Category, registry
from notify_core.inbox.host_categories import declare
from notify_core.values.errors import InvalidInput
from notify_pg.db.migrate import DEFAULT_SCHEMA
from notify_pg.db.plan import Plan, all_rows, run_plan
from notify_pg.db.seam import Conn, Seam

__all__ = ["declare_category", "host_registry", "host_registry_plan"]


def _seam(schema: str) -> Seam:
    return Seam("notify_pg", schema)


def declare_category(
    conn: Conn,
    payload: Mapping[str, Any],
    *,
    at: datetime | None = None,
    schema: str = DEFAULT_SCHEMA,
) -> Category:
    """Check a ``category.declared`` payload and write it (N13); return the category.

    Runs in the caller's transaction (a host declares in the transaction of its own change).

    Raises:
        InvalidInput: a payload the log would refuse, naming the member by its pointer
            (``/payload/...``): a member of the wrong type, a built-in key
            (``builtin_category``), no English strings, a template naming anything but a
            member (``invalid_template``).
    """
    when = at or datetime.now(UTC)
    line = {
        "seq": 0,
        "type": "category.declared",
        "occurred_at": when.isoformat(),
        "payload": dict(payload),
    }
    try:
        parse_event(line)
    except EventError as exc:
        raise InvalidInput(exc.code, exc.message, exc.pointer) from None
    category = declare(payload)
    _seam(schema).run(
        conn,
        "inbox_category_put",
        {"key": category.key, "declaration": Jsonb(dict(payload)), "at": when},
    )
    return category


def host_registry(conn: Conn, *, schema: str = DEFAULT_SCHEMA) -> dict[str, Category]:
    """Return the instance's registry: the seven launch categories, then the host's own by
    key (N1, N13)."""
    return run_plan(conn, host_registry_plan(schema))


def host_registry_plan(schema: str = DEFAULT_SCHEMA) -> Plan[dict[str, Category]]:
    """`host_registry` as a plan (`notify_pg.db.plan`)."""
    rows = yield from all_rows(_seam(schema), "inbox_categories_all")
    return registry(declare(declaration) for _key, declaration in rows)
