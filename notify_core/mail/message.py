"""A notification mail as a value (rule E6): subject, text and HTML bodies, and headers.

Pure: strings come from the catalogues of `notify_core.mail.catalogues`, HTML is written with
the standard library's escaping, and nothing is sent. An adapter turns a `Mail` into an RFC 5322
message (``email.message.EmailMessage``) and sends it, adding ``From``, ``To``, ``Date`` and a
DKIM signature that covers both ``List-Unsubscribe`` headers.

What a mail names, and nothing more: the target (title, path), who acted by their display
name (a neutral word for a person without one, "via storage sync" for an event without an
actor; never an id), a page created unpublished as a draft, for a comment its excerpt, one
link to the target, and a footer with "manage notifications" and "unsubscribe". Never page
content: a `MailEntry` has no member that could carry it. Every link comes from the site's
link templates (`notify_core.values.links`): the page, a comment on the talk tab, a review, the
inbox, the settings and the one-click unsubscribe URL.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from typing import Final

import attrs

from notify_core.mail.catalogues import CATALOGUES, FALLBACK_LOCALE
from notify_core.values.errors import InvalidInput, UsageError
from notify_core.values.links import LinkTemplates, expand_link

__all__ = [
    "INBOX_PATH",
    "MANAGE_PATH",
    "UNSUBSCRIBE_PATH",
    "Mail",
    "MailEntry",
    "MailSite",
    "category_name",
    "compose_mail",
    "entry_line",
    "mail_locale",
    "section_name",
    "unsubscribe_url",
]

#: Where the host serves the unsubscribe endpoint by default (U3, U4); the token goes in ``t``.
UNSUBSCRIBE_PATH: Final = "/notifications/unsubscribe"
#: The person's notification settings by default, linked from every footer.
MANAGE_PATH: Final = "/notifications/settings"
#: The inbox by default, linked from a digest with more entries than it shows.
INBOX_PATH: Final = "/notifications"

_TOKEN: Final = re.compile(r"[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+")
# Control characters, C1 included (U+0085 ends a line for the email package).
_CONTROL: Final = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")


def _positive(_instance: object, attribute: attrs.Attribute[int], value: int) -> None:
    if type(value) is not int or value < 1:
        raise InvalidInput("invalid_count", f"{attribute.name} must be an integer >= 1")


@attrs.frozen(kw_only=True)
class MailSite:
    """The site a mail comes from: its name, host name and scheme, primary locale and link
    templates (E6; absent: the default paths).

    A site served over plain HTTP gets ``http://`` links where a template is a path, the
    unsubscribe header included (where mail clients may not offer one-click, which needs
    HTTPS).
    """

    name: str
    host: str
    https: bool = True
    primary_locale: str | None = None
    links: LinkTemplates = attrs.field(factory=LinkTemplates)

    def link(self, name: str, **values: str) -> str:
        """Return one of the site's links (`notify_core.values.links.expand_link`)."""
        return expand_link(self.links, name, host=self.host, https=self.https, **values)

    @property
    def base_url(self) -> str:
        """The site's origin, ``https://HOST``."""
        return f"{'https' if self.https else 'http'}://{self.host}"


@attrs.frozen(kw_only=True)
class MailEntry:
    """One inbox entry as a mail shows it (a snapshot, N11).

    Args:
        category: the entry's category key; ``variant``: its latest variant.
        title: the target's title; ``path``: its path on the site, as the mail names it
            (the entry's snapshot, N11).
        link_path: the path the link goes to when it differs from ``path``: the page's
            current path while the page exists (N11: a rename after the event); absent:
            ``path``.
        actor: the display name of who acted last; absent or empty: a person without a
            name, or no longer known (a neutral word, "Someone").
        sync: the latest event had no actor ("via storage sync"); ``actor`` is then unused.
        draft: a page created unpublished ("created as a draft").
        count: how many events the entry holds.
        excerpt: a comment's excerpt, only while the comment exists.
        comment: the comment the link anchors on the talk tab (only while it exists).
        submission: the review submission the link goes to.
        host: a host category's entry (N13): its subject and line per locale, rendered
            with the event's members, as ``(locale, subject, line)``; English among them.
            Its link goes to the inbox.
    """

    category: str
    variant: str
    title: str
    path: str
    actor: str | None = None
    sync: bool = False
    draft: bool = False
    count: int = attrs.field(default=1, validator=_positive)
    excerpt: str | None = None
    comment: str | None = None
    submission: str | None = None
    link_path: str | None = None
    host: tuple[tuple[str, str, str], ...] = ()

    def link(self, site: MailSite) -> str:
        """Return the entry's one link (E6): a review, a comment on the talk tab, or the page
        (at ``link_path`` when given, N11); a host category's entry: the inbox (N13)."""
        if self.host:
            return site.link("inbox")
        if self.submission is not None:
            return site.link("review", submission=self.submission)
        path = self.path if self.link_path is None else self.link_path
        if self.comment is not None:
            return site.link("comment", path=path, comment=self.comment)
        return site.link("page", path=path)


@attrs.frozen(kw_only=True)
class Mail:
    """A rendered notification mail: what an adapter needs to build and send the message.

    ``headers`` are ``Auto-Submitted``, ``List-Unsubscribe`` and ``List-Unsubscribe-Post``, in
    that order; ``template`` is ``single`` for one entry and ``digest`` for several.
    """

    template: str
    locale: str
    subject: str
    text: str
    html: str
    headers: tuple[tuple[str, str], ...]


def mail_locale(person_locale: str | None, site_locale: str | None) -> str:
    """Return the language of a mail: the person's, else the site's primary, else English.

    A regional tag falls back to its language (``de-AT`` is German); a language without a
    catalogue counts as absent.

    Example:
        >>> mail_locale("fr", "de-CH")
        'de'
    """
    for tag in (person_locale, site_locale):
        if not tag:
            continue
        for candidate in (tag, tag.replace("_", "-").split("-")[0].lower()):
            if candidate in CATALOGUES:
                return candidate
    return FALLBACK_LOCALE


def _one_line(text: str) -> str:
    return _CONTROL.sub(" ", text)


def unsubscribe_url(site: MailSite, token: str) -> str:
    """Return the one-click unsubscribe URL of a mail (``List-Unsubscribe``, U1): the site's
    ``unsubscribe`` template with the token.

    A token is base64url and one dot, which need no escaping in a query.
    """
    return site.link("unsubscribe", token=token)


def _template(strings: Mapping[str, str], entry: MailEntry) -> str | None:
    keys = [f"{entry.category}.{entry.variant}", entry.category]
    if entry.draft:
        keys.insert(0, f"{entry.category}.{entry.variant}.draft")
    if entry.sync:
        keys = [f"sync.{key}" for key in keys] + ["sync"]
    for key in keys:
        found = strings.get(key)
        if found is not None:
            return found
    return None


def _host_strings(entry: MailEntry, locale: str) -> tuple[str, str]:
    """A host category's subject and line in the mail's locale, else English (N13)."""
    found = {loc: (subject, line) for loc, subject, line in entry.host}
    subject, line = found.get(locale) or found.get(FALLBACK_LOCALE) or entry.host[0][1:]
    return _one_line(subject), _one_line(line)


def _line(strings: Mapping[str, str], entry: MailEntry, locale: str = FALLBACK_LOCALE) -> str:
    if entry.host:
        return _host_strings(entry, locale)[1]
    if entry.category not in strings:
        raise InvalidInput(
            "unknown_category", f"no mail strings for category {entry.category!r}", "/category"
        )
    template = _template(strings, entry)
    assert template is not None  # the category's own key is there
    # E6: a display name, else a neutral word; a sync's strings have no {actor}.
    actor = entry.actor if entry.actor else strings["someone"]
    return template.format(actor=actor, title=entry.title)


def _counted(strings: Mapping[str, str], entry: MailEntry, line: str) -> str:
    if entry.count == 1:
        return line
    return f"{line} ({strings['count'].format(count=entry.count)})"


def entry_line(entry: MailEntry, locale: str) -> str:
    """Return the sentence a mail names ``entry`` by, with its count: "Femi Adeyemi edited
    API (6 times)", in the language of ``locale`` (`mail_locale` chooses it, E6).

    The strings are those of the mail's lines (its catalogue), so an inbox that shows this
    sentence and the mail of the same entry say the same thing.

    Raises:
        InvalidInput: a category without strings (``unknown_category``).

    Example:
        >>> entry_line(MailEntry(category="watched_page", variant="edited", title="API",
        ...                      path="/api", actor="Femi Adeyemi", count=6), "en")
        'Femi Adeyemi edited API (6 times)'
    """
    strings = CATALOGUES[mail_locale(locale, None)]
    one = attrs.evolve(
        entry,
        title=_one_line(entry.title),
        actor=None if entry.actor is None else _one_line(entry.actor),
    )
    return _counted(strings, one, _line(strings, one))


def category_name(category: str, locale: str) -> str:
    """Return a category's name as the preferences screen shows it, in the language of
    ``locale`` (the key itself for a category without a name in the catalogue)."""
    return CATALOGUES[mail_locale(locale, None)].get(f"category.{category}", category)


def section_name(section: str, locale: str) -> str:
    """Return a section's name as the preferences screen shows it, in the language of
    ``locale`` (the key itself for a section without a name in the catalogue)."""
    return CATALOGUES[mail_locale(locale, None)].get(f"section.{section}", section)


def _text(
    strings: Mapping[str, str],
    site: MailSite,
    entries: Sequence[MailEntry],
    lines: Sequence[str],
    more: int,
    token: str,
) -> str:
    out: list[str] = []
    if len(entries) == 1:
        entry = entries[0]
        out += [lines[0], entry.path, ""] if entry.path else [lines[0], ""]
        if entry.excerpt:
            out += [f"{strings['excerpt']}: {entry.excerpt}", ""]
        out += [f"{strings['open']}: {entry.link(site)}", ""]
    else:
        for entry, line in zip(entries, lines, strict=True):
            out += [f"- {line}", f"  {entry.link(site)}"]
            if entry.excerpt:
                out.append(f"  {strings['excerpt']}: {entry.excerpt}")
        if more:
            more_line = strings["more"].format(more=more)
            out.append(f"{more_line}: {site.link('inbox')}")
        out.append("")
    out += [
        "-- ",
        strings["footer"].format(site=site.name),
        f"{strings['manage']}: {site.link('manage')}",
        f"{strings['unsubscribe']}: {unsubscribe_url(site, token)}",
    ]
    return "\n".join(out) + "\n"


def _html(
    strings: Mapping[str, str],
    site: MailSite,
    entries: Sequence[MailEntry],
    lines: Sequence[str],
    more: int,
    token: str,
    locale: str,
    subject: str,
) -> str:
    def esc(text: str) -> str:
        return html.escape(text, quote=True)

    def anchor(href: str, label: str) -> str:
        return f'<a href="{esc(href)}">{esc(label)}</a>'

    body: list[str] = []
    if len(entries) == 1:
        entry = entries[0]
        path = f"<br>{esc(entry.path)}" if entry.path else ""
        body.append(f"<p><strong>{esc(lines[0])}</strong>{path}</p>")
        if entry.excerpt:
            body.append(f"<blockquote>{esc(entry.excerpt)}</blockquote>")
        body.append(f"<p>{anchor(entry.link(site), strings['open'])}</p>")
    else:
        items = []
        for entry, line in zip(entries, lines, strict=True):
            item = anchor(entry.link(site), line)
            if entry.excerpt:
                item += f"<br><q>{esc(entry.excerpt)}</q>"
            items.append(f"<li>{item}</li>")
        body.append("<ul>" + "".join(items) + "</ul>")
        if more:
            label = f"{strings['more'].format(more=more)}: {strings['open_inbox']}"
            body.append(f"<p>{anchor(site.link('inbox'), label)}</p>")
    footer = (
        f"<p><small>{esc(strings['footer'].format(site=site.name))}<br>"
        f"{anchor(site.link('manage'), strings['manage'])} · "
        f"{anchor(unsubscribe_url(site, token), strings['unsubscribe'])}</small></p>"
    )
    return (
        f'<!DOCTYPE html>\n<html lang="{esc(locale)}"><head><meta charset="utf-8">'
        f"<title>{esc(subject)}</title></head>\n<body>\n"
        + "\n".join([*body, "<hr>", footer])
        + "\n</body></html>\n"
    )


def compose_mail(
    entries: Sequence[MailEntry],
    *,
    site: MailSite,
    locale: str | None,
    token: str,
    more: int = 0,
) -> Mail:
    """Return the mail of one (person, site) drain (rule E6).

    Args:
        entries: the entries the mail shows, latest first (the drain's order, E4); one gives
            the ``single`` template, several the ``digest``.
        site: the site the mail comes from (name, host, scheme, primary locale).
        locale: the person's locale; the mail falls back to the site's, then English
            (`mail_locale`).
        token: the mail's unsubscribe token (`unsubscribe_token` over the categories of
            every entry the mail marks sent).
        more: entries marked sent but not shown ("and N more", E4).

    Raises:
        UsageError: no entries, or arguments of the wrong type.
        InvalidInput: a category without strings (``unknown_category``), a negative ``more``
            (``invalid_count``).
    """
    if not isinstance(site, MailSite):
        raise UsageError("invalid_type", "site must be a MailSite")
    if not entries or not all(isinstance(e, MailEntry) for e in entries):
        raise UsageError("invalid_type", "a mail shows at least one MailEntry")
    if type(more) is not int or more < 0:
        raise InvalidInput("invalid_count", "more must be an integer >= 0", "/more")
    if not isinstance(token, str) or _TOKEN.fullmatch(token) is None:
        raise UsageError("invalid_type", "token must be an unsubscribe token (base64url.base64url)")
    # The host's texts are single lines in a mail: a line break in a title must neither start
    # a header nor reshape the text body.
    entries = [
        attrs.evolve(
            e,
            title=_one_line(e.title),
            path=_one_line(e.path),
            link_path=None if e.link_path is None else _one_line(e.link_path),
            actor=None if e.actor is None else _one_line(e.actor),
            excerpt=None if e.excerpt is None else _one_line(e.excerpt),
        )
        for e in entries
    ]
    chosen = mail_locale(locale, site.primary_locale)
    strings = CATALOGUES[chosen]
    lines = [_counted(strings, entry, _line(strings, entry, chosen)) for entry in entries]
    if len(entries) == 1 and not more:
        template = "single"
        first = entries[0]
        line = _host_strings(first, chosen)[0] if first.host else _line(strings, first)
        subject = strings["subject.single"].format(site=site.name, line=line)
    else:
        template = "digest"
        subject = strings["subject.digest"].format(site=site.name, total=len(entries) + more)
    headers = (
        ("Auto-Submitted", "auto-generated"),
        ("List-Unsubscribe", f"<{unsubscribe_url(site, token)}>"),
        ("List-Unsubscribe-Post", "List-Unsubscribe=One-Click"),
    )
    return Mail(
        template=template,
        locale=chosen,
        subject=subject,
        text=_text(strings, site, entries, lines, more, token),
        html=_html(strings, site, entries, lines, more, token, chosen, subject),
        headers=headers,
    )
