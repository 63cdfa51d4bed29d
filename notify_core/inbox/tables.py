"""The inbox functions of the decision tables (formats.md section 4): ``inbox_fan_out`` and
``coalesce``. Each maps a decoded ``input`` to a JSON answer; bad input raises `InvalidInput`
with the pointer of the member at fault, which the table runner answers as ``{"error"}``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final

from notify_core.inbox.access import Group, Match, PageFacts, Rule
from notify_core.inbox.categories import CATEGORY_BY_KEY, Origin, Permission, Section
from notify_core.inbox.coalesce import EmailState, EntryState, coalesce
from notify_core.inbox.fanout import InboxEvent, PersonFacts, fan_out
from notify_core.inbox.prefs import Delivery, InboxPrefs, InboxSettings
from notify_core.values.errors import InvalidInput, NotifyError
from notify_core.values.instants import format_instant, parse_instant
from notify_core.values.json_members import as_bool as _bool
from notify_core.values.json_members import as_object as _object
from notify_core.values.json_members import as_str as _str
from notify_core.values.json_members import member as _member

__all__ = ["INBOX_FUNCTIONS", "entry_state_to_json"]

JsonObject = Mapping[str, object]


def _strs(value: object, at: str) -> list[str]:
    if not isinstance(value, list):
        raise InvalidInput("invalid_type", "expected an array", at)
    return [_str(item, f"{at}/{i}") for i, item in enumerate(value)]


def _choice(value: object, allowed: Mapping[str, object], at: str, code: str) -> object:
    if not isinstance(value, str) or value not in allowed:
        raise InvalidInput(code, f"expected one of {', '.join(allowed)}", at)
    return allowed[value]


_ORIGINS: Final = {o.value: o for o in Origin}
_PERMISSIONS: Final = {p.value: p for p in Permission}
_MATCHES: Final = {m.value: m for m in Match}
_SECTIONS: Final = {s.value: s for s in Section}
_DELIVERIES: Final = {d.value: d for d in Delivery}
_STATES: Final = {s.value: s for s in EmailState}


def _rule(value: object, at: str) -> Rule:
    obj = _object(value, at)
    raw_value = _member(obj, "value", at, required=False)
    deny = _member(obj, "deny", at, required=False)
    try:
        return Rule(
            permission=_choice(  # type: ignore[arg-type]
                _member(obj, "permission", at), _PERMISSIONS, f"{at}/permission", "invalid_member"
            ),
            match=_choice(_member(obj, "match", at), _MATCHES, f"{at}/match", "invalid_member"),  # type: ignore[arg-type]
            value=None if raw_value is None else _str(raw_value, f"{at}/value"),
            deny=False if deny is None else _bool(deny, f"{at}/deny"),
        )
    except NotifyError as error:
        if error.pointer and error.pointer.startswith(at):
            raise
        raise error.at(at) from None


def group_from_json(value: object, at: str) -> Group:
    """Read a group ``{"manage_system"?, "rules"}`` (formats.md section 4)."""
    obj = _object(value, at)
    rules = _member(obj, "rules", at)
    if not isinstance(rules, list):
        raise InvalidInput("invalid_type", "expected an array", f"{at}/rules")
    manage = _member(obj, "manage_system", at, required=False)
    return Group(
        rules=tuple(_rule(r, f"{at}/rules/{i}") for i, r in enumerate(rules)),
        manage_system=False if manage is None else _bool(manage, f"{at}/manage_system"),
    )


def _prefs(value: object, at: str) -> InboxPrefs:
    prefs = InboxPrefs()
    for category, raw in _object(value, at).items():
        where = f"{at}/{category}"
        if category not in CATEGORY_BY_KEY:
            raise InvalidInput("unknown_category", f"unknown category {category!r}", where)
        row = _object(raw, where)
        for channel, enabled in row.items():
            if channel not in ("in_app", "email"):
                raise InvalidInput(
                    "unknown_channel", f"unknown channel {channel!r}", f"{where}/{channel}"
                )
            prefs = prefs.set(category, channel, _bool(enabled, f"{where}/{channel}"))
    return prefs


def _person(value: object, at: str) -> PersonFacts:
    obj = _object(value, at)
    system = _member(obj, "system", at, required=False)
    email = _member(obj, "email", at, required=False)
    verified = _member(obj, "verified", at, required=False)
    prefs = _member(obj, "prefs", at, required=False)
    return PersonFacts(
        active=_bool(_member(obj, "active", at), f"{at}/active"),
        system=False if system is None else _bool(system, f"{at}/system"),
        groups=frozenset(_strs(_member(obj, "groups", at), f"{at}/groups")),
        email=None if email is None else _str(email, f"{at}/email"),
        verified=False if verified is None else _bool(verified, f"{at}/verified"),
        prefs=InboxPrefs() if prefs is None else _prefs(prefs, f"{at}/prefs"),
    )


def settings_from_json(sections: object, mail_configured: bool, at: str) -> InboxSettings:
    """Read ``sections`` (``{section: off|in_app|email}``) into settings."""
    values = {}
    if sections is not None:
        for name, raw in _object(sections, at).items():
            section = _choice(name, _SECTIONS, f"{at}/{name}", "unknown_section")
            values[section] = _choice(raw, _DELIVERIES, f"{at}/{name}", "invalid_member")
    return InboxSettings(sections=values, mail_configured=mail_configured)  # type: ignore[arg-type]


def _inbox_fan_out(inp: JsonObject) -> dict[str, object]:
    raw = _object(_member(inp, "event", ""), "/event")
    origin = _member(raw, "origin", "/event", required=False)
    actor = _member(raw, "actor", "/event", required=False)
    page = _member(raw, "page", "/event", required=False)
    parent_author = _member(raw, "parent_author", "/event", required=False)
    previous = _member(raw, "previous_mentions", "/event", required=False)
    mentions = _member(raw, "mentions", "/event", required=False)
    if mentions is not None:
        _strs(mentions, "/event/mentions")
    page_facts = None
    if page is not None:
        page_obj = _object(page, "/event/page")
        tags = _member(page_obj, "tags", "/event/page", required=False)
        page_facts = PageFacts(
            path=_str(_member(page_obj, "path", "/event/page"), "/event/page/path"),
            tags=frozenset(_strs(tags, "/event/page/tags")) if tags is not None else frozenset(),
        )
    event = InboxEvent(
        id="table",
        type=_str(_member(raw, "type", "/event"), "/event/type"),
        origin=Origin.USER
        if origin is None
        else _choice(origin, _ORIGINS, "/event/origin", "invalid_member"),  # type: ignore[arg-type]
        actor=None if actor is None else _str(actor, "/event/actor"),
        site=_str(_member(raw, "site", "/event"), "/event/site"),
        page=page_facts,
        parent_author=None
        if parent_author is None
        else _str(parent_author, "/event/parent_author"),
        previous_mentions=frozenset(_strs(previous, "/event/previous_mentions"))
        if previous is not None
        else frozenset(),
    )
    candidates: dict[str, list[str]] = {}
    for key, listed in _object(_member(inp, "candidates", ""), "/candidates").items():
        if key not in CATEGORY_BY_KEY:
            raise InvalidInput(
                "unknown_category", f"unknown category {key!r}", f"/candidates/{key}"
            )
        candidates[key] = _strs(listed, f"/candidates/{key}")
    people = {
        person: _person(value, f"/people/{person}")
        for person, value in _object(_member(inp, "people", ""), "/people").items()
    }
    groups = {
        name: group_from_json(value, f"/groups/{name}")
        for name, value in _object(_member(inp, "groups", ""), "/groups").items()
    }
    settings = settings_from_json(
        _member(inp, "sections", "", required=False),
        _bool(_member(inp, "mail_configured", ""), "/mail_configured"),
        "/sections",
    )
    result = fan_out(event, candidates, people, groups, settings)
    return {
        "entries": [
            {
                "recipient": e.recipient,
                "category": e.category.key,
                "in_app": e.in_app,
                "email": e.email,
            }
            for e in result.entries
        ],
        "skips": [
            {"recipient": s.recipient, "category": s.category.key, "reason": s.reason.value}
            for s in result.skips
        ],
    }


def entry_state_to_json(entry: EntryState) -> dict[str, object]:
    """Return the members of an entry that the ``coalesce`` table answers."""
    out: dict[str, object] = {
        "count": entry.count,
        "variant": entry.variant,
        "variants": list(entry.variants),
        "email": entry.email.value,
    }
    if entry.email_after is not None:
        out["email_after"] = format_instant(entry.email_after)
    out["last_event"] = entry.last_event
    out["in_app"] = entry.in_app
    return out


def _coalesce(inp: JsonObject) -> dict[str, object]:
    event = _object(_member(inp, "event", ""), "/event")
    at = parse_instant(_member(event, "at", "/event"), "/event/at")
    raw_entry = _member(inp, "entry", "", required=False)
    entry = None
    if raw_entry is not None:
        obj = _object(raw_entry, "/entry")
        count = _member(obj, "count", "/entry")
        if type(count) is not int or count < 1:
            raise InvalidInput("invalid_count", "count must be an integer >= 1", "/entry/count")
        due = _member(obj, "email_after", "/entry", required=False)
        entry = EntryState(
            count=count,
            variant=_str(_member(obj, "variant", "/entry"), "/entry/variant"),
            variants=tuple(_strs(_member(obj, "variants", "/entry"), "/entry/variants")),
            email=_choice(  # type: ignore[arg-type]
                _member(obj, "email", "/entry"), _STATES, "/entry/email", "invalid_member"
            ),
            email_after=None if due is None else parse_instant(due, "/entry/email_after"),
            last_event=_str(_member(obj, "last_event", "/entry"), "/entry/last_event"),
            in_app=_bool(_member(obj, "in_app", "/entry"), "/entry/in_app"),
            updated_at=at,
        )
    email_after = parse_instant(_member(inp, "email_after", ""), "/email_after")
    result = coalesce(
        entry,
        event=_str(_member(event, "id", "/event"), "/event/id"),
        variant=_str(_member(event, "variant", "/event"), "/event/variant"),
        at=at,
        in_app=_bool(_member(inp, "in_app", ""), "/in_app"),
        email_on=_bool(_member(inp, "email_on", ""), "/email_on"),
        email_after=email_after,
    )
    return entry_state_to_json(result)


#: The inbox functions of the decision tables, by name.
INBOX_FUNCTIONS: Final[dict[str, Callable[[JsonObject], dict[str, object]]]] = {
    "inbox_fan_out": _inbox_fan_out,
    "coalesce": _coalesce,
}
