"""The mail of a drain's send line (E6 over E4): what `compose_mail` renders for it.

A drain's `MailLine` names the entries a mail shows, how many more it marks sent and its
unsubscribe categories; this module reads the rest from the host's facts at the drain instant
(the site's host and primary locale, the person's locale and address, whether a comment still
exists) and composes the `Mail`. Pure: the unsubscribe secret comes in as an argument, and
sending is an adapter's job (`notify_pg.mail.smtp`).
"""

from __future__ import annotations

from typing import Final

import attrs

from notify_core.errors import UsageError
from notify_core.inbox.pipeline import MailLine
from notify_core.inbox.ports import Entry, WikiFacts
from notify_core.mail import Mail, MailEntry, MailSite, compose_mail, unsubscribe_token

__all__ = ["REPLAY_SECRET", "LineMail", "line_mail"]

#: The unsubscribe secret of a replay: 32 zero bytes, so that the same log writes the same
#: files. A replay sends nothing; a host signs with its own secret (U1).
REPLAY_SECRET: Final = bytes(32)


@attrs.frozen(kw_only=True)
class LineMail:
    """A composed mail with its recipient's address (``None``: the host knows none)."""

    mail: Mail
    address: str | None
    site: MailSite


def _entry(entry: Entry, wiki: WikiFacts) -> MailEntry:
    target, state = entry.target, entry.state
    # N11: a comment's excerpt shows only while the comment exists.
    exists = target.comment is not None and wiki.comment(target.comment) is not None
    return MailEntry(
        category=entry.category,
        variant=state.variant,
        title=target.title,
        path=target.path,
        actor=state.actor,
        count=state.count,
        excerpt=target.excerpt if exists else None,
    )


def line_mail(line: MailLine, wiki: WikiFacts, secret: bytes = REPLAY_SECRET) -> LineMail:
    """Compose the mail of a drain's send line, with the facts of the host now.

    The site's name in a replay is its host name (a log names no site title); a site the host
    does not know is named by its id.

    Raises:
        UsageError: ``line`` is a skip (it has no mail).
    """
    if line.decision != "send" or not line.entries:
        raise UsageError("not_a_send", "only a send line has a mail")
    info = wiki.site(line.site)
    host = (info.host if info is not None else "") or line.site
    site = MailSite(
        name=host,
        host=host,
        https=info.https if info is not None else True,
        primary_locale=info.primary_locale if info is not None else None,
    )
    user = wiki.user(line.recipient)
    facts = wiki.people([line.recipient]).get(line.recipient)
    token = unsubscribe_token(secret, line.recipient, line.unsubscribe)
    mail = compose_mail(
        [_entry(e, wiki) for e in line.entries],
        site=site,
        locale=user.locale if user is not None else None,
        token=token,
        more=line.more,
    )
    return LineMail(mail=mail, address=facts.email if facts is not None else None, site=site)
