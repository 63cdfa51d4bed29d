"""The mail of a drain's send line (E6 over E4): what `compose_mail` renders for it.

A drain's `MailLine` names the entries a mail shows, how many more it marks sent and its
unsubscribe categories; this module reads the rest from the host's facts at the drain instant
(the site's name and host, primary locale and link templates, the person's locale and address, the
display names of who acted, whether a comment still exists, the pages' current paths) and
composes the `Mail`. Pure:
the unsubscribe secret comes in as an argument, and sending is an adapter's job
(`notify_pg.mail.smtp`). `mail_site`, `mail_entries`, `actors_of` and `linked_pages` are
shared with the PostgreSQL drain, so that both render the same mail from the same facts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Final

import attrs

from notify_core.inbox.categories import CATEGORY_BY_KEY, Category
from notify_core.inbox.host_categories import render
from notify_core.inbox.pipeline import MailLine
from notify_core.inbox.ports import Entry, PageInfo, SiteInfo, WikiFacts, generation_of
from notify_core.mail import Mail, MailEntry, MailSite, compose_mail, unsubscribe_token
from notify_core.values.errors import UsageError

__all__ = [
    "REPLAY_SECRET",
    "LineMail",
    "actors_of",
    "line_mail",
    "linked_pages",
    "mail_entries",
    "mail_site",
    "review_submission",
]

#: The group key prefix of a review entry: ``review:<submission>`` (N1).
_REVIEW_KEY: Final = "review:"

#: The unsubscribe secret of a replay: 32 zero bytes, so that the same log writes the same
#: files. A replay sends nothing; a host signs with its own secret (U1).
REPLAY_SECRET: Final = bytes(32)


@attrs.frozen(kw_only=True)
class LineMail:
    """A composed mail with its recipient's address (``None``: the host knows none)."""

    mail: Mail
    address: str | None
    site: MailSite


def mail_site(site: str, info: SiteInfo | None) -> MailSite:
    """The site a mail comes from: named by its ``name`` (E6), else by its host name, by its
    id when the host does not know it, with its scheme, primary locale and link templates."""
    host = (info.host if info is not None else "") or site
    if info is None:
        return MailSite(name=host, host=host)
    return MailSite(
        name=info.name or host,
        host=host,
        https=info.https,
        primary_locale=info.primary_locale,
        links=info.links,
    )


def actors_of(entries: Iterable[Entry]) -> list[str]:
    """The people who acted last on the entries, each once, sorted: whose names a drain reads
    (once per batch, like the locales)."""
    return sorted({e.state.actor for e in entries if e.state.actor})


def review_submission(category: str, group_key: str) -> str | None:
    """The submission a review entry links to and names (its group key's), or ``None`` for
    any other entry (E6, H1)."""
    if category == "review_requested" and group_key.startswith(_REVIEW_KEY):
        return group_key[len(_REVIEW_KEY) :]
    return None


def _review(entry: Entry) -> bool:
    return review_submission(entry.category, entry.group_key) is not None


def linked_pages(entries: Iterable[Entry]) -> list[str]:
    """The pages whose current path the entries' links need (N11), each once, sorted: every
    entry's page but a review's (it links to its submission). What a drain reads of the host
    before `mail_entries`."""
    return sorted({e.target.page for e in entries if e.target.page is not None and not _review(e)})


def mail_entries(
    entries: Sequence[Entry],
    *,
    names: Mapping[str, str],
    comment_exists: Callable[[Entry], bool],
    pages: Mapping[str, PageInfo],
    categories: Mapping[str, Category] = CATEGORY_BY_KEY,
) -> list[MailEntry]:
    """The entries as a mail shows them (E6, N11).

    Args:
        entries: the entries the mail shows, latest first.
        names: display names by person (`WikiFacts.names`); an actor missing here is named
            by the neutral word, an entry without an actor reads "via storage sync".
        comment_exists: whether an entry's comment still exists: its excerpt shows, and its
            link anchors on the talk tab, only while it does.
        pages: the pages of `linked_pages` as the host holds them now (`WikiFacts.page`; a
            page missing here counts as gone): a link follows a page that still exists to
            its current path, and goes to the snapshot's path once it is deleted (N11). The
            mail names the snapshot's title and path.
        categories: the registry: a host category's entry (N13) shows its strings, with
            the members of its latest event in their placeholders.
    """
    out = []
    for entry in entries:
        target, state = entry.target, entry.state
        exists = target.comment is not None and comment_exists(entry)
        review = _review(entry)
        page = None if target.page is None else pages.get(target.page)
        category = categories.get(entry.category)
        host: tuple[tuple[str, str, str], ...] = ()
        if category is not None and category.host:
            members = dict(target.members)
            host = tuple(
                (locale, render(found.subject, members), render(found.line, members))
                for locale, found in category.strings
            )
        out.append(
            MailEntry(
                category=entry.category,
                variant=state.variant,
                title=target.title,
                path=target.path,
                actor=names.get(state.actor) if state.actor else None,
                sync=not state.actor,
                draft=target.draft,
                count=state.count,
                excerpt=target.excerpt if exists else None,
                comment=target.comment if exists else None,
                submission=review_submission(entry.category, entry.group_key),
                link_path=None if review else target.link_path(page),
                host=host,
            )
        )
    return out


def line_mail(line: MailLine, wiki: WikiFacts, secret: bytes = REPLAY_SECRET) -> LineMail:
    """Compose the mail of a drain's send line, with the facts of the host now.

    The site is named by the ``name`` the log gives it, else by its host name; a site the host
    does not know is named by its id.

    Raises:
        UsageError: ``line`` is a skip (it has no mail).
    """
    if line.decision != "send" or not line.entries:
        raise UsageError("not_a_send", "only a send line has a mail")
    site = mail_site(line.site, wiki.site(line.site))
    user = wiki.user(line.recipient)
    facts = wiki.people([line.recipient]).get(line.recipient)
    generation = generation_of(wiki, line.recipient)  # U3: "g" of a person created again
    token = unsubscribe_token(secret, line.recipient, line.unsubscribe, generation)
    pages = {}
    for page_id in linked_pages(line.entries):
        page = wiki.page(page_id)
        if page is not None:
            pages[page_id] = page
    shown = mail_entries(
        line.entries,
        names=wiki.names(actors_of(line.entries)),
        comment_exists=lambda e: wiki.comment(str(e.target.comment)) is not None,
        pages=pages,
        categories=wiki.categories(),
    )
    mail = compose_mail(
        shown,
        site=site,
        locale=user.locale if user is not None else None,
        token=token,
        more=line.more,
    )
    if line.plain:  # M5: the record asks for the text body only
        mail = attrs.evolve(mail, html="")
    return LineMail(mail=mail, address=facts.email if facts is not None else None, site=site)
