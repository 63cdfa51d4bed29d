"""What the inbox list shows of each entry beyond its snapshot (H1, N11, E6): its ``link``, a
review's ``submission``, the actor's display name and the sentence a mail names it by.

`shown_entries` reads what the host holds now, each fact once per page of the list: the
person's locale, the display names of who acted, the sites (host name, scheme, link
templates, primary locale) and the pages' current paths. The sites and the pages are each read
at once when the host has the optional batched ports ``inbox_sites_by_id(conn, ids)`` and
``inbox_pages_by_id(conn, ids)`` (the known ones among ``ids`` by id, as
`notify_reference_host.wiki.ReferenceWiki` has them): a page of the list then costs the same
few reads whatever the number of its sites and pages; a host without them is read once per
site (``inbox_site``) and once per page (``inbox_page``), for the same answer.

A link is built as the entry's mail builds it (`notify_core.inbox.mailing`): the site's
templates, a comment's talk-tab anchor while the comment exists, a review's submission, and
the page's current path while the page exists (N11: it follows a rename or move made after
the event; the snapshot's path once the page is deleted). The sentence is the mail's line
with its count ("Femi Adeyemi edited API (6 times)"), in the person's language, else the
site's, else English (`mail_locale`).

Without the host's ports (``notify serve`` without ``--host-schema``) nothing of the host is
known: a link is the default template's path on the entry's site (``/docs/start``,
``/docs/start#comment-c1``, ``/notifications/reviews/r1``, from the snapshot), no display name
is shown, and the sentence is English with the neutral word for the actor.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from notify_core.inbox.categories import CATEGORY_BY_KEY, Category
from notify_core.inbox.host_categories import render
from notify_core.inbox.mailing import mail_site, review_submission
from notify_core.inbox.ports import PageInfo, SiteInfo
from notify_core.mail import MailEntry, MailSite, entry_line, mail_locale
from notify_core.mail.catalogues import FALLBACK_LOCALE
from notify_pg.db.migrate import DEFAULT_SCHEMA
from notify_pg.db.plan import Plan, port, ports_planned, run_plan
from notify_pg.db.seam import Conn
from notify_pg.inbox.host_categories import host_registry_plan
from notify_pg.inbox.reads import InboxReads, ListedEntry
from notify_pg.mail.ports import MailHostPorts

__all__ = [
    "PLAN_PORTS",
    "plans_ready",
    "shown_entries",
    "shown_entries_plan",
    "site_list",
    "site_list_plan",
]

#: The host's ports the list and the sites route read; a host whose object also has each
#: one's plan form (``inbox_users_plan(ids)`` for ``inbox_users(conn, ids)``, and so on:
#: `notify_pg.db.plan`) is read on ``notify serve``'s asyncio connections, with no thread
#: (`notify_reference_host.wiki.ReferenceWiki` has them).
PLAN_PORTS: Final = (
    "inbox_users",
    "inbox_names",
    "inbox_first_site",
    "inbox_site",
    "inbox_page",
    "inbox_sites",
    "inbox_sites_by_id",
    "inbox_pages_by_id",
)


def plans_ready(host: object) -> bool:
    """Whether the list and the sites route can read ``host`` without a blocking connection:
    no host, or one with the plan form of each of `PLAN_PORTS` it has."""
    return ports_planned(host, PLAN_PORTS)


#: The origin a link is read against when the host is not known: the path is what is kept.
_NO_ORIGIN: Final = "https://"


def _mail_entry(
    entry: ListedEntry,
    names: Mapping[str, str],
    page: PageInfo | None,
    known: Mapping[str, Category] = CATEGORY_BY_KEY,
) -> MailEntry:
    submission = review_submission(entry.category, entry.group_key)
    category = known.get(entry.category)
    host: tuple[tuple[str, str, str], ...] = ()
    if category is not None and category.host:  # N13: the host's own strings
        members = dict(entry.members)
        host = tuple(
            (tag, render(found.subject, members), render(found.line, members))
            for tag, found in category.strings
        )
    link_path = None
    if submission is None and page is not None and not page.deleted:
        link_path = page.path  # N11: where the page is now
    return MailEntry(
        category=entry.category,
        variant=entry.variant,
        title=entry.title,
        path=entry.path,
        actor=names.get(entry.actor) if entry.actor else None,
        sync=not entry.actor,
        draft=entry.draft,
        count=entry.count,
        excerpt=entry.excerpt,
        comment=entry.comment,  # the comment's id only while it exists (N11)
        submission=submission,
        link_path=link_path,
        host=host,
    )


def _without_host(entry: ListedEntry, known: Mapping[str, Category]) -> dict[str, Any]:
    shown = _mail_entry(entry, {}, None, known)
    link = shown.link(MailSite(name="", host=""))
    out: dict[str, Any] = {
        "link": link.removeprefix(_NO_ORIGIN),
        "text": entry_line(shown, FALLBACK_LOCALE),
    }
    if shown.submission is not None:
        out["submission"] = shown.submission
    return out


def _by_id(host: object, batched: str, single: str, ids: Sequence[str]) -> Plan[dict[str, Any]]:
    """What the host knows of each of ``ids`` (``None``: nothing), each id read once: in one
    read by the host's port ``batched`` (``batched(conn, ids)``: the known ones by id) when it
    has it, else by its port ``single`` once per id (a host without the batched form)."""
    wanted = list(dict.fromkeys(ids))  # the entries' order, each once
    if not wanted:
        return {}
    if hasattr(host, batched):
        found: Mapping[str, Any] = yield from port(host, batched, wanted)
        return {key: found.get(key) for key in wanted}
    out: dict[str, Any] = {}
    for key in wanted:
        out[key] = yield from port(host, single, key)
    return out


def shown_entries(
    conn: Conn,
    host: MailHostPorts | None,
    user: str,
    entries: Sequence[ListedEntry],
    *,
    site: str | None = None,
    schema: str = DEFAULT_SCHEMA,
) -> list[dict[str, Any]]:
    """Return, per entry in order, what the list shows beyond its snapshot (H1): ``link``,
    ``text`` (the mail's sentence with its count), ``actor_name`` when the host names the
    actor, ``submission`` for a review entry.

    ``site`` is the inbox's site: an entry with no site links on it (else on the host's first
    site, as its mail would); ``host`` the host's ports (``None``: see the module).
    """
    return run_plan(conn, shown_entries_plan(host, user, entries, site=site, schema=schema))


def shown_entries_plan(
    host: MailHostPorts | None,
    user: str,
    entries: Sequence[ListedEntry],
    *,
    site: str | None = None,
    schema: str = DEFAULT_SCHEMA,
) -> Plan[list[dict[str, Any]]]:
    """`shown_entries` as a plan (the host's ports through `notify_pg.db.plan.port`)."""
    known: Mapping[str, Category] = CATEGORY_BY_KEY
    if any(e.category not in CATEGORY_BY_KEY for e in entries):  # a host category (N13)
        known = yield from host_registry_plan(schema)
    if host is None:
        return [_without_host(e, known) for e in entries]
    person = (yield from port(host, "inbox_users", [user])).get(user)
    actors = sorted({e.actor for e in entries if e.actor})
    names = (yield from port(host, "inbox_names", actors)) if actors else {}
    fallback = site
    if fallback is None and any(e.site is None for e in entries):
        fallback = yield from port(host, "inbox_first_site")
    site_of = [entry.site or fallback or "" for entry in entries]
    # A review links to its submission: its page is not read (nor shown).
    page_of = [
        entry.page if review_submission(entry.category, entry.group_key) is None else None
        for entry in entries
    ]
    sites: Mapping[str, SiteInfo | None] = yield from _by_id(
        host, "inbox_sites_by_id", "inbox_site", [s for s in site_of if s]
    )
    pages: Mapping[str, PageInfo | None] = yield from _by_id(
        host, "inbox_pages_by_id", "inbox_page", [p for p in page_of if p is not None]
    )
    out = []
    for entry, site_id, page_id in zip(entries, site_of, page_of, strict=True):
        info = sites.get(site_id)
        page = None if page_id is None else pages.get(page_id)
        shown = _mail_entry(entry, names, page, known)
        locale = mail_locale(
            person.locale if person is not None else None,
            info.primary_locale if info is not None else None,
        )
        item: dict[str, Any] = {
            "link": shown.link(mail_site(site_id, info)),
            "text": entry_line(shown, locale),
        }
        if shown.actor:
            item["actor_name"] = shown.actor
        if shown.submission is not None:
            item["submission"] = shown.submission
        out.append(item)
    return out


def site_list(
    conn: Conn,
    host: object,
    user: str,
    *,
    hidden_sites: Sequence[str] = (),
    schema: str = DEFAULT_SCHEMA,
) -> list[dict[str, Any]]:
    """Return the sites whose inboxes a person may switch between: the host's sites with
    notifications on, by creation, when the host tells them (its optional method
    ``inbox_sites(conn)`` of ``(id, host, https, name)``, as
    `notify_reference_host.wiki.ReferenceWiki` has), else the sites of the person's visible
    entries; never one in ``hidden_sites``. Each is ``{"id", "host"?, "https"?, "name"?}``
    (G5: what is not known, or an empty name, is omitted)."""
    return run_plan(conn, site_list_plan(host, user, hidden_sites=hidden_sites, schema=schema))


def site_list_plan(
    host: object,
    user: str,
    *,
    hidden_sites: Sequence[str] = (),
    schema: str = DEFAULT_SCHEMA,
) -> Plan[list[dict[str, Any]]]:
    """`site_list` as a plan."""
    hidden = set(hidden_sites)
    if not hasattr(host, "inbox_sites"):
        found = yield from InboxReads(schema).sites_plan(user)
        return [{"id": s} for s in found if s not in hidden]
    out = []
    for site, host_name, https, name in (yield from port(host, "inbox_sites")):
        if site in hidden:
            continue
        item: dict[str, Any] = {"id": site, "host": host_name, "https": https}
        if name:
            item["name"] = name
        out.append(item)
    return out
