"""The wiki events of the event log (formats.md section 4): payload members and their checks.

`notify_core.events.log` joins these to its table, so a wiki log is read and checked like a
chat log; the checks share its shape: member -> (required, check, what it must be).

The event log owns this module (it was `notify_core.inbox.payloads`, which still re-exports
it): the inbox reads events, so the event log must not import the inbox (import-linter).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from notify_core.values.instants import MAX_DURATION
from notify_core.values.links import links_error

__all__ = ["USER_MEMBERS", "USER_UNSET", "WIKI_PAYLOADS", "WIKI_PERSONAL"]

Check = Callable[[object], bool]
Member = tuple[bool, Check, str]


def _id(value: object) -> bool:
    return isinstance(value, str) and value != ""


def _text(value: object) -> bool:
    return isinstance(value, str)


def _bool(value: object) -> bool:
    return isinstance(value, bool)


def _ids(value: object) -> bool:
    return isinstance(value, list) and all(_id(item) for item in value)


def _texts(value: object) -> bool:
    return isinstance(value, list) and all(_text(item) for item in value)


def _one_of(*allowed: str) -> Check:
    return lambda value: isinstance(value, str) and value in allowed


def _hour(value: object) -> bool:
    return type(value) is int and 0 <= value <= 23


def _seconds(value: object) -> bool:
    # At most MAX_DURATION, like every duration of the formats (NaN fails the comparison).
    return type(value) in (int, float) and 0 <= value <= _MAX_SECONDS  # type: ignore[operator]


_MAX_SECONDS: Final = MAX_DURATION.total_seconds()


def _days(value: object) -> bool:
    return type(value) is int and value >= 1


_PERMISSION = _one_of("read_pages", "read_comments")
_MATCH = _one_of("all", "path_prefix", "path_exact", "tag")
_SECTIONS = ("watching", "discussions", "reviews", "everything")
_DELIVERY = ("off", "in_app", "email")


def _rule(value: object) -> bool:
    if not isinstance(value, dict) or not set(value) <= {"permission", "match", "value", "deny"}:
        return False
    if not (_PERMISSION(value.get("permission")) and _MATCH(value.get("match"))):
        return False
    if value["match"] != "all" and not _text(value.get("value")):
        return False
    return "deny" not in value or _bool(value["deny"])


def _origins(value: object) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(item in ("user", "import", "bulk") for item in value)
    )


def _defaults(value: object) -> bool:
    return (
        isinstance(value, dict)
        and set(value) == {"in_app", "email"}
        and all(_bool(item) for item in value.values())
    )


def _integer(value: object) -> bool:
    return type(value) is int and -1_000_000 <= value <= 1_000_000


def _candidates(value: object) -> bool:
    if not isinstance(value, dict) or len(value) != 1:
        return False
    if "permission" in value:
        return _id(value["permission"])
    return value.get("named") is True


def _locale_strings(value: object) -> bool:
    return (
        isinstance(value, dict)
        and set(value) == {"name", "subject", "line"}
        and all(_text(item) for item in value.values())
    )


def _host_strings(value: object) -> bool:
    return (
        isinstance(value, dict)
        and bool(value)
        and all(_id(k) and _locale_strings(v) for k, v in value.items())
    )


def _rules(value: object) -> bool:
    return isinstance(value, list) and all(_rule(item) for item in value)


def _sections(value: object) -> bool:
    return isinstance(value, dict) and all(
        key in _SECTIONS and item in _DELIVERY for key, item in value.items()
    )


def _links(value: object) -> bool:
    return links_error(value) is None


_LINKS_WHAT: Final = (
    "link templates {unsubscribe, manage, inbox, page, comment, review}: each a URL or a path "
    "from /, with only its placeholders ({host}; {token} required in unsubscribe; {path} in "
    "page and comment; {comment}; {submission})"
)

_USER_FIELDS = (
    "name",
    "email",
    "verified",
    "locale",
    "system",
    "email_schedule",
    "daily_hour",
)


def _unset(value: object) -> bool:
    allowed = {*_USER_FIELDS, "time_zone"}
    return isinstance(value, list) and all(item in allowed for item in value)


#: Members ``user.created`` / ``user.updated`` gain for the inbox.
USER_MEMBERS: Final[dict[str, Member]] = {
    "name": (False, _text, "a display name"),
    "email": (False, _id, "an address"),
    "verified": (False, _bool, "a boolean"),
    "locale": (False, _id, "a locale"),
    "system": (False, _bool, "a boolean"),
    "email_schedule": (
        False,
        _one_of("immediate", "hourly", "daily"),
        "immediate, hourly or daily",
    ),
    "daily_hour": (False, _hour, "an hour 0-23"),
}

#: The member of ``user.updated`` that removes members.
USER_UNSET: Final[Member] = (False, _unset, "a list of user members (email, time_zone, ...)")

_PAGE: Final[Member] = (True, _id, "an ID")
_MATCH_MEMBERS: Final[dict[str, Member]] = {
    "match": (True, _MATCH, "all, path_prefix, path_exact or tag"),
    "value": (False, _text, "a string"),
}

#: Per wiki event type: member -> (required, check, what it must be).
WIKI_PAYLOADS: Final[dict[str, dict[str, Member]]] = {
    "site.created": {
        "site": (True, _id, "an ID"),
        "host": (True, _id, "a host name"),
        "name": (False, _text, "the wiki's name"),
        "https": (True, _bool, "a boolean"),
        "primary_locale": (False, _id, "a locale"),
        "time_zone": (False, _id, "a zone name"),
        "notifications": (False, _bool, "a boolean"),
        "links": (False, _links, _LINKS_WHAT),
    },
    "site.updated": {
        "site": (True, _id, "an ID"),
        "notifications": (False, _bool, "a boolean"),
        "host": (False, _id, "a host name"),
        "name": (False, _text, "the wiki's name"),
        "https": (False, _bool, "a boolean"),
        "primary_locale": (False, _id, "a locale"),
        "time_zone": (False, _id, "a zone name"),
        "links": (False, _links, _LINKS_WHAT),
    },
    # U3: the host forgot the person (its rows and notify's are gone) until a user.created.
    "user.forgotten": {"user": (True, _id, "an ID")},
    "group.created": {
        "group": (True, _id, "an ID"),
        "manage_system": (False, _bool, "a boolean"),
        "permissions": (False, _ids, "a list of host permissions"),
        "rules": (True, _rules, "a list of rules {permission, match, value?, deny?}"),
    },
    "group.member_added": {"group": (True, _id, "an ID"), "user": (True, _id, "an ID")},
    "review_rule.set": {
        "rule": (True, _id, "an ID"),
        "site": (True, _id, "an ID"),
        **_MATCH_MEMBERS,
        "reviewer_groups": (True, _ids, "a list of group IDs"),
        "enabled": (True, _bool, "a boolean"),
    },
    "page.watched": {"page": _PAGE, "user": (True, _id, "an ID")},
    "inbox_pref.updated": {
        # A category of the registry: the seven or the host's own (N13), checked on applying.
        "category": (True, _id, "a category"),
        "channel": (True, _one_of("in_app", "email"), "in_app or email"),
        "enabled": (True, _bool, "a boolean"),
    },
    "inbox_pref.stop_all_email": {},
    "notifications.settings": {
        "email_delay_s": (False, _seconds, "a number of seconds from 0 to ten years"),
        "retention_days": (False, _days, "an integer >= 1"),
        "mail_configured": (False, _bool, "a boolean"),
        "sections": (False, _sections, "{section: off, in_app or email}"),
    },
    "page.created": {
        "page": _PAGE,
        "site": (True, _id, "an ID"),
        "path": (True, _text, "a path"),
        "locale": (True, _id, "a locale"),
        "title": (True, _text, "a title"),
        "tags": (False, _texts, "a list of tags"),
        "publish_state": (False, _id, "a publish state"),
    },
    "page.edited": {
        "page": _PAGE,
        "variant": (
            False,
            _one_of("edited", "published", "unpublished", "scheduled"),
            "edited, published, unpublished or scheduled",
        ),
        "title": (False, _text, "a title"),
        "tags": (False, _texts, "a list of tags"),
        "publish_state": (False, _id, "a publish state"),
    },
    "page.renamed": {
        "page": _PAGE,
        "path": (True, _text, "a path"),
        "locale": (False, _id, "a locale"),
    },
    "page.deleted": {"page": _PAGE},
    "page.restored": {"page": _PAGE},
    "comment.created": {
        "comment": (True, _id, "an ID"),
        "page": _PAGE,
        "author": (False, _id, "an ID"),
        "parent": (False, _id, "an ID"),
        "mentions": (False, _ids, "a list of IDs"),
        "excerpt": (False, _text, "a string"),
    },
    "comment.edited": {
        "comment": (True, _id, "an ID"),
        "mentions": (True, _ids, "a list of IDs"),
        "excerpt": (False, _text, "a string"),
    },
    "comment.deleted": {"comment": (True, _id, "an ID")},
    "submission.created": {
        "submission": (True, _id, "an ID"),
        "page": _PAGE,
        "author": (False, _id, "an ID"),
    },
    "page.viewed": {"page": _PAGE, "talk": (False, _bool, "a boolean")},
    "inbox.read": {
        "ids": (False, _ids, "a list of entry IDs"),
        "page": (False, _id, "an ID"),
        "categories": (False, _ids, "a list of categories"),
    },
    "inbox.dismissed": {"id": (True, _id, "an entry ID")},
    # Host categories (N13): the declaration, then its events.
    "category.declared": {
        "category": (True, _id, "a category key"),
        "section": (True, _id, "a section"),
        "scope": (True, _one_of("site", "instance"), "site or instance"),
        "origins": (False, _origins, "a non-empty list of user, import, bulk"),
        "defaults": (True, _defaults, "{in_app, email}, each a boolean"),
        "priority": (True, _integer, "an integer"),
        "digest": (False, _bool, "a boolean"),
        "visible_to": (False, _id, "a host permission"),
        "candidates": (True, _candidates, '{"permission": P} or {"named": true}'),
        "group_key": (True, _ids, "a list of event members"),
        "strings": (
            True,
            _host_strings,
            "{locale: {name, subject, line}}, English required",
        ),
    },
    "category.event": {
        "category": (True, _id, "a host category"),
        "site": (False, _id, "an ID"),
        "target": (True, _id, "an ID"),
        "people": (False, _ids, "a list of IDs"),
    },
}
WIKI_PAYLOADS["group.updated"] = WIKI_PAYLOADS["group.created"]
WIKI_PAYLOADS["group.member_removed"] = WIKI_PAYLOADS["group.member_added"]
WIKI_PAYLOADS["page.unwatched"] = WIKI_PAYLOADS["page.watched"]
WIKI_PAYLOADS["submission.updated"] = WIKI_PAYLOADS["submission.created"]

#: Wiki events that are about one person and must name them in ``audience``.
WIKI_PERSONAL: Final = frozenset(
    {"inbox_pref.updated", "inbox_pref.stop_all_email", "page.viewed", "inbox.read"}
)
