"""Host categories (rule N13): a host declares its own categories.

A ``category.declared`` event (formats.md section 4) becomes a `Category` of the registry
beside the seven launch ones: its section, scope (``site`` or ``instance``), origins,
defaults, priority, digest, ``visible_to`` (a host permission), its candidates (the holders
of a host permission, or the people its event names), its group key (its key and the listed
event members) and its strings per locale. A ``category.event`` then goes through the same
fan-out, coalescing, cadence, mail, unsubscribe and preferences as a built-in category.

Pure: the replay's `notify_core.inbox.memory` and PostgreSQL's ``notify_pg`` read a
declaration through `declare`, and an event's members through `event_members`, so both
twins agree by construction.
"""

from __future__ import annotations

import json
import string
from collections.abc import Mapping
from typing import Any, Final

from notify_core.events.log import Event, EventError
from notify_core.inbox.categories import (
    CATEGORY_BY_KEY,
    Candidates,
    Category,
    Channels,
    HostStrings,
    Origin,
    Section,
)
from notify_core.inbox.columns import EventValues
from notify_core.inbox.fanout import InboxEvent, firing
from notify_core.inbox.payloads import strings
from notify_core.inbox.ports import EntryTarget, WikiFacts
from notify_core.values.errors import InvalidInput
from notify_core.values.instants import require_instant

__all__ = [
    "HOST_EVENT",
    "HOST_VARIANT",
    "declare",
    "event_members",
    "host_event",
    "render",
]

#: The event type of a host category's events.
HOST_EVENT: Final = "category.event"
#: The variant of every host category's entry (a host category names no variants).
HOST_VARIANT: Final = "new"
#: The members of a ``category.event`` that are no placeholder: which category, who.
_NOT_MEMBERS: Final = frozenset({"category", "people"})
_FORMATTER: Final = string.Formatter()
_SECTIONS: Final = frozenset(s.value for s in Section)


def _template(text: str, where: str) -> None:
    """Refuse a template whose placeholders are not plain member names (``{target}``)."""
    try:
        fields = [field for _, field, spec, conv in _FORMATTER.parse(text) if field is not None]
        specs = [(spec, conv) for _, field, spec, conv in _FORMATTER.parse(text) if field]
    except ValueError:
        fields, specs = [""], []
    if any(not f.isidentifier() for f in fields) or any(s or c for s, c in specs):
        raise InvalidInput(
            "invalid_template",
            "a host category's strings name event members as {member}, nothing else",
            where,
        )


def declare(payload: Mapping[str, Any]) -> Category:
    """Return the category a ``category.declared`` payload declares (N13).

    The payload's members are already checked for their types (the event log's table);
    this checks what a table cannot.

    Raises:
        InvalidInput: a key of a built-in category (``builtin_category``), strings without
            English (``missing_member``), a template naming anything but a member
            (``invalid_template``), a section of the four given as another (never).
    """
    key = str(payload["category"])
    if key in CATEGORY_BY_KEY:
        raise InvalidInput("builtin_category", f"{key} is a built-in category", "/payload/category")
    raw_strings = payload["strings"]
    if "en" not in raw_strings:
        raise InvalidInput(
            "missing_member", "a host category needs English strings", "/payload/strings/en"
        )
    locales = []
    for locale in sorted(raw_strings):
        item = raw_strings[locale]
        for member in ("subject", "line"):
            _template(str(item[member]), f"/payload/strings/{locale}/{member}")
        locales.append(
            (
                locale,
                HostStrings(
                    name=str(item["name"]), subject=str(item["subject"]), line=str(item["line"])
                ),
            )
        )
    section_name = str(payload["section"])
    section: Section | str = Section(section_name) if section_name in _SECTIONS else section_name
    candidates = payload["candidates"]
    permission = candidates.get("permission")
    defaults = payload["defaults"]
    origins = payload.get("origins", ["user", "import", "bulk"])
    visible = payload.get("visible_to")
    return Category(
        key=key,
        events=frozenset({HOST_EVENT}),
        origins=frozenset(Origin(o) for o in origins),
        candidates=Candidates.PERMISSION if permission is not None else Candidates.NAMED,
        access=None,
        defaults=Channels(in_app=defaults["in_app"] is True, email=defaults["email"] is True),
        priority=int(payload["priority"]),
        section=section,
        key_member="",
        key_prefix=key,
        digest=payload.get("digest", False) is True,
        key_members=tuple(str(m) for m in payload["group_key"]),
        visible_to=None if visible is None else str(visible),
        permission=None if permission is None else str(permission),
        scope=str(payload["scope"]),
        host=True,
        strings=tuple(locales),
    )


def _text(value: object) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def event_members(payload: Mapping[str, Any]) -> dict[str, str]:
    """Return a ``category.event``'s members as texts (its group key and its strings'
    placeholders read them): every member but ``category`` and ``people``."""
    return {k: _text(v) for k, v in sorted(payload.items()) if k not in _NOT_MEMBERS}


class _Members(dict[str, str]):
    """Members for `str.format_map`: a placeholder the event does not carry stays as written."""

    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def render(text: str, members: Mapping[str, str]) -> str:
    """Return a host category's template with the event's members in its placeholders."""
    return text.format_map(_Members(members))


def host_event(
    wiki: WikiFacts, event: Event
) -> tuple[InboxEvent, dict[str, list[str]], EventValues]:
    """A host category's event (N13) as the fan-out sees it, its candidates (the holders
    of the category's permission, or the people the event names) and its values.

    Raises:
        EventError: a category the host never declared (``unknown_category``), a site
            category's event without ``site`` (``missing_member``).
    """
    p = event.payload
    category = wiki.categories().get(str(p["category"]))
    if category is None or not category.host:
        raise EventError(
            "unknown_category",
            f"category.event of a category never declared: {p['category']!r}",
            "/payload/category",
        )
    if category.scope == "site" and "site" not in p:
        raise EventError(
            "missing_member",
            f"{category.key} is a site category: it needs payload.site",
            "/payload/site",
        )
    # An instance entry has no site: every site's inbox shows it (N13).
    site = str(p["site"]) if category.scope == "site" else None
    members = event_members(p)
    inbox = InboxEvent(
        id=str(event.seq),
        type=event.type,
        origin=Origin(event.origin or "user"),
        actor=event.actor,
        site=site,
        ids=members,
        variant=HOST_VARIANT,
        host=category,
    )
    listed: list[str] = []
    if not firing(inbox):  # N6: not for this origin
        pass
    elif category.permission is not None:
        listed = list(wiki.holders(category.permission))
    else:
        listed = sorted(strings(p.get("people")))
    target = EntryTarget(
        site=site, page=None, title=members.get("target", ""), members=tuple(members.items())
    )
    values = EventValues(
        event.seq,
        require_instant(event.occurred_at, "at"),
        inbox.id,
        inbox.variant,
        event.actor,
        site,
        target,
        wiki.email_delay(),
        None if site is None else wiki.site(site),
    )
    return inbox, ({category.key: listed} if listed else {}), values
