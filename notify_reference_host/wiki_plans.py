"""The reference wiki's reads as plans (`notify_pg.db.plan`): the ports ``notify serve``'s
native routes read on an asyncio connection (`notify_pg.http.shown.PLAN_PORTS`, the hidden
sites). `notify_reference_host.wiki.ReferenceWiki` has them, and runs each on a blocking
connection for its port of the same name."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from notify_core.inbox.ports import PageInfo, SiteInfo, WikiUser
from notify_core.values.links import link_templates
from notify_pg.db.plan import Plan, all_rows, one_row
from notify_pg.db.seam import Row, Seam, text_array

__all__ = ["WikiReadPlans"]


def _site(row: Row) -> SiteInfo:
    id_, host, https, locale, zone, on, links, name = row
    return SiteInfo(
        id=id_,
        host=host,
        name=name,
        https=https,
        primary_locale=locale,
        time_zone=zone,
        notifications=on,
        links=link_templates(links),
    )


def _page(row: Row) -> PageInfo:
    id_, site, path, locale, title, tags, deleted = row
    return PageInfo(
        id=id_,
        site=site,
        path=path,
        locale=locale,
        title=title,
        tags=frozenset(tags),
        deleted=deleted,
    )


class WikiReadPlans:
    """The plan forms of the reference wiki's reads (its ``_seam`` is the host's schema)."""

    _seam: Seam

    def inbox_site_plan(self, site: str) -> Plan[SiteInfo | None]:
        """`inbox_site` as a plan (`notify_pg.db.plan`; ``notify serve``'s native routes)."""
        row = yield from one_row(self._seam, "wiki_site", {"id": site})
        return None if row is None else _site(row)

    def inbox_sites_by_id_plan(self, ids: Sequence[str]) -> Plan[Mapping[str, SiteInfo]]:
        """`inbox_sites_by_id` as a plan: the known sites among ``ids`` in one read."""
        rows = yield from all_rows(self._seam, "wiki_sites_by_id", {"ids": text_array(ids)})
        return {str(row[0]): _site(row) for row in rows}

    def inbox_names_plan(self, ids: Sequence[str]) -> Plan[Mapping[str, str]]:
        """`inbox_names` as a plan."""
        return dict((yield from all_rows(self._seam, "wiki_names", {"ids": text_array(ids)})))

    def inbox_first_site_plan(self) -> Plan[str | None]:
        """`inbox_first_site` as a plan."""
        row = yield from one_row(self._seam, "wiki_first_site")
        return None if row is None else str(row[0])

    def inbox_sites_plan(self) -> Plan[list[tuple[str, str, bool, str]]]:
        """`inbox_sites` as a plan."""
        rows = yield from all_rows(self._seam, "wiki_sites_on")
        return [(str(r[0]), str(r[1]), bool(r[2]), str(r[3])) for r in rows]

    def sites_off_plan(self) -> Plan[list[str]]:
        """`sites_off` as a plan (`notify_pg.db.plan`), run by ``notify serve``'s native
        routes on their asyncio connection (``hidden_sites_plan`` of `build_app`)."""
        return [str(r[0]) for r in (yield from all_rows(self._seam, "wiki_sites_off"))]

    def inbox_page_plan(self, page: str) -> Plan[PageInfo | None]:
        """`inbox_page` as a plan."""
        row = yield from one_row(self._seam, "wiki_page", {"id": page})
        return None if row is None else _page(row)

    def inbox_pages_by_id_plan(self, ids: Sequence[str]) -> Plan[Mapping[str, PageInfo]]:
        """`inbox_pages_by_id` as a plan: the known pages among ``ids`` (a deleted one as it
        was) in one read."""
        rows = yield from all_rows(self._seam, "wiki_pages_by_id", {"ids": text_array(ids)})
        return {str(row[0]): _page(row) for row in rows}

    def inbox_users_plan(self, ids: Sequence[str]) -> Plan[Mapping[str, WikiUser]]:
        """`inbox_users` as a plan."""
        rows = yield from all_rows(self._seam, "wiki_users", {"ids": text_array(ids)})
        return {
            id_: WikiUser(
                id=id_, time_zone=zone, locale=locale, email_schedule=schedule, daily_hour=hour
            )
            for id_, zone, locale, schedule, hour in rows
        }
