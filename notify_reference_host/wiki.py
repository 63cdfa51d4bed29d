"""The reference host's wiki: `notify_pg.inbox.fanout.InboxHostPorts` on its own tables.

Sites, people, groups with their rules, memberships, pages, watchers, comments, submissions,
review rules and the instance's settings (migration ``0003_wiki``), with the writes tests and
the demo need. A deleted page stays as it was with ``deleted`` set (the fan-out checks access
against it, N8) and its watch rows go (N9).
"""

from __future__ import annotations

from collections.abc import Callable, ItemsView, Iterator, KeysView, Mapping, Sequence, ValuesView
from datetime import timedelta
from typing import Any, Final, TypeVar

from psycopg import sql
from psycopg.types.json import Jsonb

from notify_core.inbox.access import Group, Match, Rule
from notify_core.inbox.admin import InstanceSettings
from notify_core.inbox.categories import Permission, Section
from notify_core.inbox.fanout import PersonFacts
from notify_core.inbox.ports import CommentInfo, PageInfo, SiteInfo, WikiUser
from notify_core.inbox.prefs import NO_PREFS, Delivery, InboxSettings
from notify_core.mail.cadence import EmailSchedule
from notify_pg.db.plan import Plan, all_rows, one_row, run_plan
from notify_pg.db.seam import Conn, Seam, load_queries, text_array, trusted_sql
from notify_reference_host.wiki_admin_plans import WikiAdminPlans
from notify_reference_host.wiki_plans import WikiReadPlans

__all__ = ["ReferenceWiki"]

_V = TypeVar("_V")


def _rule(raw: Mapping[str, Any]) -> Rule:
    value = raw.get("value")
    return Rule(
        permission=Permission(str(raw["permission"])),
        match=Match(str(raw["match"])),
        value=None if value is None else str(value),
        deny=raw.get("deny") is True,
    )


def _facts(
    kind: str,
    active: bool,
    system: bool,
    email: str | None,
    verified: bool,
    groups: Sequence[str],
    group_sets: dict[frozenset[str], frozenset[str]],
) -> PersonFacts:
    """One person's facts; ``group_sets`` shares one frozenset among people with equal groups.

    Built without the named tuple's Python-level ``__new__`` (every field given, in order), as
    the core builds its decisions: a fan-out builds one per candidate.
    """
    found = frozenset(groups)
    return _make(
        PersonFacts,
        (
            active,
            kind == "human",
            system,
            group_sets.setdefault(found, found),
            email,
            verified,
            NO_PREFS,
        ),
    )


#: A named tuple from all its fields in order, without its keyword ``__new__``.
_make: Final = tuple.__new__


def _people_users(
    rows: Sequence[tuple[Any, ...]],
) -> tuple[dict[str, PersonFacts], dict[str, WikiUser]]:
    """The facts and the cadence of each row of ``wiki_people_users``."""
    people: dict[str, PersonFacts] = {}
    users: dict[str, WikiUser] = {}
    group_sets: dict[frozenset[str], frozenset[str]] = {}
    for id_, kind, active, system, email, verified, groups, zone, locale, schedule, hour in rows:
        people[id_] = _facts(kind, active, system, email, verified, groups, group_sets)
        users[id_] = _make(WikiUser, (id_, zone, locale, schedule, hour))
    return people, users


class _Later(Mapping[str, _V]):
    """A read-only mapping built by ``build`` on first use, then held."""

    __slots__ = ("_build", "_data")

    def __init__(self, build: Callable[[], dict[str, _V]]) -> None:
        self._build = build
        self._data: dict[str, _V] | None = None

    def _got(self) -> dict[str, _V]:
        data = self._data
        if data is None:
            data = self._data = self._build()
        return data

    def __getitem__(self, key: str) -> _V:
        return self._got()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._got())

    def __len__(self) -> int:
        return len(self._got())

    def __contains__(self, key: object) -> bool:
        return key in self._got()

    def get(self, key: str, default: Any = None) -> Any:
        """The value of ``key``, or ``default``."""
        return self._got().get(key, default)

    def keys(self) -> KeysView[str]:
        """The keys (the built dict's own view)."""
        return self._got().keys()

    def items(self) -> ItemsView[str, _V]:
        """The items (the built dict's own view: a copy of them is made in C)."""
        return self._got().items()

    def values(self) -> ValuesView[_V]:
        """The values (the built dict's own view)."""
        return self._got().values()


class ReferenceWiki(WikiReadPlans, WikiAdminPlans):
    """The inbox's host ports on the reference host's wiki tables, plus writes for tests.

    Args:
        schema: the reference host's schema.
    """

    def __init__(self, schema: str) -> None:
        self.schema = schema
        self._seam = Seam("notify_reference_host", schema)

    # -- ports ---------------------------------------------------------------------------------

    def inbox_site(self, conn: Conn, site: str) -> SiteInfo | None:
        """Return a site, or ``None``."""
        return run_plan(conn, self.inbox_site_plan(site))

    def inbox_sites_by_id(self, conn: Conn, ids: Sequence[str]) -> Mapping[str, SiteInfo]:
        """Return the known sites among ``ids`` by id, in one read (the inbox list's page)."""
        return run_plan(conn, self.inbox_sites_by_id_plan(ids))

    def inbox_names(self, conn: Conn, ids: Sequence[str]) -> Mapping[str, str]:
        """Return the display names of the people among ``ids`` who have one (E6)."""
        return run_plan(conn, self.inbox_names_plan(ids))

    def unsubscribe_links(self, conn: Conn) -> list[str]:
        """Return the unsubscribe templates the sites set: `notify serve --host-schema`
        answers one-click unsubscribe on their paths too (U3, E6)."""
        return [str(row[0]) for row in self._seam.all(conn, "wiki_unsubscribe_links")]

    def inbox_first_site(self, conn: Conn) -> str | None:
        """Return the instance's first site by creation, or ``None`` without sites (E4)."""
        return run_plan(conn, self.inbox_first_site_plan())

    def inbox_sites(self, conn: Conn) -> list[tuple[str, str, bool, str]]:
        """Return the sites whose notifications are on, by creation: ``(id, host, https,
        name)`` each, ``name`` empty when the site has none (the inboxes a person may switch
        between, `notify serve --demo`)."""
        return run_plan(conn, self.inbox_sites_plan())

    def sites_off(self, conn: Conn) -> list[str]:
        """Return the sites whose notifications are switched off (the inbox hides their
        entries, N5): what `notify serve --host-schema` hides (`sites_off_plan`)."""
        return run_plan(conn, self.sites_off_plan())

    def inbox_page(self, conn: Conn, page: str) -> PageInfo | None:
        """Return a page (a deleted one as it was), or ``None``."""
        return run_plan(conn, self.inbox_page_plan(page))

    def inbox_pages_by_id(self, conn: Conn, ids: Sequence[str]) -> Mapping[str, PageInfo]:
        """Return the known pages among ``ids`` by id (a deleted one as it was), in one read
        (the inbox list's page)."""
        return run_plan(conn, self.inbox_pages_by_id_plan(ids))

    def inbox_comment(self, conn: Conn, comment: str) -> CommentInfo | None:
        """Return a comment, or ``None``."""
        row = self._seam.one(conn, "wiki_comment", {"id": comment})
        if row is None:
            return None
        id_, page, author, parent, mentions, excerpt = row
        return CommentInfo(
            id=id_,
            page=page,
            author=author,
            parent=parent,
            mentions=frozenset(mentions),
            excerpt=excerpt,
        )

    def inbox_watchers(self, conn: Conn, page: str, after: str, limit: int) -> Sequence[str]:
        """Return a keyset batch of a page's watchers."""
        rows = self._seam.all(
            conn, "wiki_watchers", {"page_id": page, "after": after, "limit": limit}
        )
        return [r[0] for r in rows]

    def inbox_reviewers(self, conn: Conn, page: PageInfo, after: str, limit: int) -> Sequence[str]:
        """Return a keyset batch of the reviewers of a page (its own site's rules only)."""
        groups: set[str] = set()
        for match, value, reviewer_groups in self._seam.all(
            conn, "wiki_review_rules", {"site_id": page.site}
        ):
            rule = _rule({"permission": "read_pages", "match": match, "value": value})
            if rule.matches(page.access):
                groups.update(reviewer_groups)
        if not groups:
            return []
        rows = self._seam.all(
            conn, "wiki_members", {"groups": sorted(groups), "after": after, "limit": limit}
        )
        return [r[0] for r in rows]

    def inbox_people(self, conn: Conn, ids: Sequence[str]) -> Mapping[str, PersonFacts]:
        """Return the facts of the known people among ``ids``."""
        return run_plan(conn, self.inbox_people_plan(ids))

    def inbox_people_plan(self, ids: Sequence[str]) -> Plan[Mapping[str, PersonFacts]]:
        """`inbox_people` as a plan."""
        out: dict[str, PersonFacts] = {}
        group_sets: dict[frozenset[str], frozenset[str]] = {}
        rows = yield from all_rows(self._seam, "wiki_people", {"ids": text_array(ids)})
        for id_, kind, active, system, email, verified, groups in rows:
            out[id_] = _facts(kind, active, system, email, verified, groups, group_sets)
        return out

    def inbox_people_and_users(
        self, conn: Conn, ids: Sequence[str]
    ) -> tuple[Mapping[str, PersonFacts], Mapping[str, WikiUser]]:
        """Return `inbox_people` and `inbox_users` of ``ids``, read in one query.

        A subclass that overrides either of them is answered through them, so that its change
        holds (the one query would go around it).
        """
        cls = type(self)
        if cls.inbox_people is not ReferenceWiki.inbox_people or (
            cls.inbox_users is not ReferenceWiki.inbox_users
        ):
            return self.inbox_people(conn, ids), self.inbox_users(conn, ids)
        # The server answers now; the rows become facts on first use (the fan-out decides a
        # batch while the server writes the one before: the conversion runs then).
        rows = self._seam.later(conn, "wiki_people_users", {"ids": text_array(ids)})
        both: list[tuple[dict[str, PersonFacts], dict[str, WikiUser]]] = []

        def converted() -> tuple[dict[str, PersonFacts], dict[str, WikiUser]]:
            if not both:
                both.append(_people_users(rows()))
            return both[0]

        return _Later(lambda: converted()[0]), _Later(lambda: converted()[1])

    def inbox_groups(self, conn: Conn) -> Mapping[str, Group]:
        """Return every group and its rules."""
        return run_plan(conn, self.inbox_groups_plan())

    def inbox_groups_plan(self) -> Plan[Mapping[str, Group]]:
        """`inbox_groups` as a plan."""
        rows = yield from all_rows(self._seam, "wiki_groups")
        return {
            id_: Group(
                rules=tuple(_rule(r) for r in rules),
                manage_system=manage,
                permissions=frozenset(permissions),
            )
            for id_, manage, rules, permissions in rows
        }

    def inbox_holders(self, conn: Conn, permission: str, after: str, limit: int) -> Sequence[str]:
        """Return a keyset batch of the people holding a host permission (N8, N13)."""
        params = {"permission": permission, "after": after, "limit": limit}
        return [r[0] for r in self._seam.all(conn, "wiki_permission_holders", params)]

    def inbox_settings(self, conn: Conn) -> InboxSettings:
        """Return the sections and whether mail is configured."""
        return run_plan(conn, self.inbox_settings_plan())

    def inbox_settings_plan(self) -> Plan[InboxSettings]:
        """`inbox_settings` as a plan."""
        row = yield from one_row(self._seam, "wiki_settings")
        if row is None:
            return InboxSettings()
        sections = {Section(k): Delivery(v) for k, v in row[3].items()}
        return InboxSettings(sections=sections, mail_configured=row[2])

    def inbox_email_delay(self, conn: Conn) -> timedelta:
        """Return the instance's email delay (default 180 s)."""
        return run_plan(conn, self.inbox_email_delay_plan())

    def inbox_retention_days(self, conn: Conn) -> int:
        """Return how many days entries are kept (60 by default)."""
        return run_plan(conn, self.inbox_retention_days_plan())

    def inbox_users(self, conn: Conn, ids: Sequence[str]) -> Mapping[str, WikiUser]:
        """Return what the cadence reads of the known people among ``ids``."""
        return run_plan(conn, self.inbox_users_plan(ids))

    # -- the administration's ports (notify_pg.mail.settings.AdminHostPorts) ------------------

    def inbox_instance_settings(self, conn: Conn) -> InstanceSettings:
        """Return the settings an administrator changes (the defaults without a row)."""
        return run_plan(conn, self.inbox_instance_settings_plan())

    def inbox_set_instance_settings(self, conn: Conn, settings: InstanceSettings) -> None:
        """Store the settings an administrator changed (``mail_configured`` is kept)."""
        run_plan(conn, self.inbox_set_instance_settings_plan(settings))

    def inbox_digest_schedules(self, conn: Conn) -> bool:
        """Tell whether anyone has an hourly or daily email schedule (H2a)."""
        return run_plan(conn, self.inbox_digest_schedules_plan())

    def inbox_set_schedule(self, conn: Conn, person: str, schedule: EmailSchedule) -> bool:
        """Set a person's email schedule; ``False`` when the wiki has no such person."""
        return run_plan(conn, self.inbox_set_schedule_plan(person, schedule))

    def inbox_plain_http_sites(self, conn: Conn) -> list[str]:
        """Return the sites served over plain http (the operator is warned, E6)."""
        return run_plan(conn, self.inbox_plain_http_sites_plan())

    def watchers_query(self, page: str) -> sql.Composed:
        """The query an emit of a page's deletion captures its watchers with (N9)."""
        text = trusted_sql(load_queries("notify_reference_host")["wiki_watchers_query"])
        return sql.SQL(text).format(schema=sql.Identifier(self.schema), page_id=sql.Literal(page))

    # -- writes --------------------------------------------------------------------------------

    def add_site(
        self, conn: Conn, site: str, *, host: str = "", notifications: bool = True
    ) -> None:
        """Create or replace a site."""
        self._seam.run(
            conn, "wiki_add_site", {"id": site, "host": host, "notifications": notifications}
        )

    def add_user(
        self,
        conn: Conn,
        user: str,
        *,
        kind: str = "human",
        active: bool = True,
        system: bool = False,
        email: str | None = None,
        verified: bool = False,
    ) -> None:
        """Create or replace a person."""
        self._seam.run(
            conn,
            "wiki_add_user",
            {
                "id": user,
                "kind": kind,
                "active": active,
                "system": system,
                "email": email,
                "verified": verified,
            },
        )

    def add_group(
        self,
        conn: Conn,
        group: str,
        rules: Sequence[Mapping[str, Any]],
        *,
        manage_system: bool = False,
        permissions: Sequence[str] = (),
    ) -> None:
        """Create or replace a group with its complete rule list and its host permissions."""
        self._seam.run(
            conn,
            "wiki_add_group",
            {
                "id": group,
                "manage_system": manage_system,
                "rules": Jsonb(list(rules)),
                "permissions": sorted(set(permissions)),
            },
        )

    def add_member(self, conn: Conn, group: str, user: str) -> None:
        """Add a person to a group."""
        self._seam.run(conn, "wiki_add_member", {"group_id": group, "user_id": user})

    def add_page(
        self,
        conn: Conn,
        page: str,
        site: str,
        path: str,
        *,
        locale: str = "en",
        title: str = "",
        tags: Sequence[str] = (),
    ) -> None:
        """Create a page."""
        self._seam.run(
            conn,
            "wiki_add_page",
            {
                "id": page,
                "site_id": site,
                "path": path,
                "locale": locale,
                "title": title,
                "tags": list(tags),
            },
        )

    def delete_page(self, conn: Conn, page: str) -> None:
        """Delete a page: flagged, as it was; its watchers go (N9)."""
        self._seam.run(conn, "wiki_delete_page", {"id": page})

    def watch(self, conn: Conn, page: str, user: str) -> None:
        """A person watches a page."""
        self._seam.run(conn, "wiki_watch", {"page_id": page, "user_id": user})

    def add_comment(
        self,
        conn: Conn,
        comment: str,
        page: str,
        *,
        author: str | None = None,
        parent: str | None = None,
        mentions: Sequence[str] = (),
        excerpt: str | None = None,
    ) -> None:
        """Create a comment."""
        self._seam.run(
            conn,
            "wiki_add_comment",
            {
                "id": comment,
                "page_id": page,
                "author": author,
                "parent": parent,
                "mentions": list(mentions),
                "excerpt": excerpt,
            },
        )

    def add_review_rule(
        self,
        conn: Conn,
        rule: str,
        site: str,
        match: str,
        reviewer_groups: Sequence[str],
        *,
        value: str | None = None,
        enabled: bool = True,
    ) -> None:
        """Create a review rule."""
        self._seam.run(
            conn,
            "wiki_add_review_rule",
            {
                "id": rule,
                "site_id": site,
                "match": match,
                "value": value,
                "reviewer_groups": list(reviewer_groups),
                "enabled": enabled,
            },
        )

    def set_settings(
        self,
        conn: Conn,
        *,
        email_delay_s: int = 180,
        mail_configured: bool = False,
        sections: Mapping[str, str] | None = None,
    ) -> None:
        """Set the instance's notification settings."""
        self._seam.run(
            conn,
            "wiki_set_settings",
            {
                "email_delay_s": email_delay_s,
                "mail_configured": mail_configured,
                "sections": Jsonb(dict(sections or {})),
            },
        )
