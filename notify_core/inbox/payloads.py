"""The wiki events' payloads read as inbox values: string sets, access rules, a page after an
event. Both twins of the inbox's host facts read payloads through these (the in-memory
`notify_core.inbox.memory.wiki` and PostgreSQL's ``notify_pg.inbox``), so they agree by
construction.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from notify_core.events.log import Event
from notify_core.inbox.access import Match, Rule
from notify_core.inbox.categories import Permission
from notify_core.inbox.ports import PageInfo

__all__ = ["page_after", "rule_from_payload", "strings"]


def strings(value: object) -> frozenset[str]:
    """Return the strings of a JSON list (a checked payload member) as a set."""
    return frozenset(str(item) for item in value) if isinstance(value, list) else frozenset()


def rule_from_payload(raw: Mapping[str, object]) -> Rule:
    """Return the access rule a payload's ``rules`` member describes (already checked)."""
    value = raw.get("value")
    return Rule(
        permission=Permission(str(raw["permission"])),
        match=Match(str(raw["match"])),
        value=None if value is None else str(value),
        deny=raw.get("deny") is True,
    )


def page_after(page: PageInfo, event: Event) -> PageInfo:
    """Return a page as an edit, rename, deletion or restore leaves it."""
    p = event.payload
    if event.type == "page.edited":
        changes: dict[str, object] = {}
        if "title" in p:
            changes["title"] = str(p["title"])
        if "tags" in p:
            changes["tags"] = strings(p["tags"])
        return attrs.evolve(page, **changes)  # type: ignore[arg-type]
    if event.type == "page.renamed":
        locale = str(p["locale"]) if "locale" in p else page.locale
        return attrs.evolve(page, path=str(p["path"]), locale=locale)
    if event.type == "page.deleted":
        return attrs.evolve(page, deleted=True)
    if event.type == "page.restored":
        return attrs.evolve(page, deleted=False)
    return page
