"""Access of inbox recipients (rules N8): group rules, deny wins, ``manage_system``.

Access depends only on a person's set of groups, so the fan-out asks `AccessCache` once per
distinct group set and permission per event, never once per person.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Final

import attrs

from notify_core.inbox.categories import Permission
from notify_core.values.errors import InvalidInput

__all__ = [
    "PAGE_PERMISSIONS",
    "AccessCache",
    "Group",
    "Match",
    "PageFacts",
    "Rule",
    "holds",
    "holds_host",
]


class Match(enum.StrEnum):
    """How a rule matches a page."""

    ALL = "all"
    PATH_PREFIX = "path_prefix"
    PATH_EXACT = "path_exact"
    TAG = "tag"


@attrs.frozen(kw_only=True)
class Rule:
    """One rule of a group: allows (or, with ``deny``, denies) a permission on the pages it matches.

    Raises:
        InvalidInput: a ``path_prefix``, ``path_exact`` or ``tag`` rule without ``value``
            (code ``missing_member``, pointer ``/value``).
    """

    permission: Permission
    match: Match
    value: str | None = None
    deny: bool = False

    def __attrs_post_init__(self) -> None:
        if self.match is not Match.ALL and self.value is None:
            raise InvalidInput("missing_member", f"a {self.match} rule needs a value", "/value")

    def matches(self, page: PageFacts) -> bool:
        """Tell whether the rule covers a page (N8: plain prefix, equality, case-sensitive tag)."""
        match = self.match
        if match is Match.ALL:
            return True
        value = self.value or ""
        if match is Match.PATH_PREFIX:
            return page.path.startswith(value)
        if match is Match.PATH_EXACT:
            return page.path == value
        return value in page.tags


@attrs.frozen(kw_only=True)
class Group:
    """A group: its rules, whether it may manage the system (which grants everything), and
    the host permissions its members hold outright, on no page (N8, N13)."""

    rules: tuple[Rule, ...] = ()
    manage_system: bool = False
    permissions: frozenset[str] = frozenset()


@attrs.frozen(kw_only=True)
class PageFacts:
    """What access reads of a page: its path and tags (as they were, for a deleted page)."""

    path: str
    tags: frozenset[str] = frozenset()


_NO_GROUP: Final = Group()


#: The page permissions of the rules; any other is a host permission (N13).
PAGE_PERMISSIONS: Final = frozenset(Permission)


def holds_host(groups: frozenset[str], known: Mapping[str, Group], permission: str) -> bool:
    """Tell whether members of ``groups`` hold a host permission (N8, N13): some group's
    ``permissions`` name it, or some group has ``manage_system``."""
    for name in groups:
        group = known.get(name, _NO_GROUP)
        if group.manage_system or permission in group.permissions:
            return True
    return False


def holds(
    groups: frozenset[str],
    known: Mapping[str, Group],
    permission: Permission | str,
    page: PageFacts | None,
) -> bool:
    """Tell whether members of ``groups`` hold ``permission`` on ``page`` (N8).

    ``manage_system`` in any group grants every permission; otherwise some rule of one of
    the groups must allow it and none may deny it. A group not in ``known`` has no rules.
    A host permission (`holds_host`) is held on no page: ``page`` is not read.
    """
    if permission not in PAGE_PERMISSIONS:
        return holds_host(groups, known, permission)
    if page is None:
        return False
    allowed = False
    for name in groups:
        group = known.get(name, _NO_GROUP)
        if group.manage_system:
            return True
    for name in groups:
        for rule in known.get(name, _NO_GROUP).rules:
            if rule.permission is permission and rule.matches(page):
                if rule.deny:
                    return False
                allowed = True
    return allowed


@attrs.define
class AccessCache:
    """The answers of `holds` for one page and one set of groups, each computed once.

    Args:
        groups: the instance's groups.
        page: the page of the event (as it was, for a deletion).
    """

    groups: Mapping[str, Group]
    page: PageFacts | None
    answers: dict[tuple[frozenset[str], Permission | str], bool] = attrs.field(factory=dict)
    evaluations: int = 0

    def holds(self, person_groups: frozenset[str], permission: Permission | str) -> bool:
        """Return whether a person with these groups holds ``permission`` on the page (a
        host permission: on no page)."""
        key = (person_groups, permission)
        answer = self.answers.get(key)
        if answer is None:
            self.evaluations += 1
            answer = holds(person_groups, self.groups, permission, self.page)
            self.answers[key] = answer
        return answer
