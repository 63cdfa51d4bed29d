"""What the mail drain asks of its host and of its sender (`notify_pg.mail.drain`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from notify_core.inbox.access import Group
from notify_core.inbox.fanout import PersonFacts
from notify_core.inbox.ports import PageInfo, SiteInfo, WikiUser
from notify_core.inbox.prefs import InboxSettings
from notify_pg.db.seam import Conn
from notify_pg.mail.smtp import Outgoing

__all__ = ["MailHostPorts", "MailSender"]


class MailHostPorts(Protocol):
    """What the drain reads of the host (a wiki), each on the worker's connection."""

    def inbox_site(self, conn: Conn, site: str) -> SiteInfo | None:
        """Return a site (host, scheme, primary locale, its switch N5), or ``None``.

        The inbox list reads the sites of a page of entries in one call of the host's optional
        ``inbox_sites_by_id(conn, ids)`` (the known sites among ``ids`` by id) when it has it,
        else this port once per site (`notify_pg.http.shown`)."""

    def inbox_first_site(self, conn: Conn) -> str | None:
        """Return the instance's first site by creation (entries without a site, E4)."""

    def inbox_people(self, conn: Conn, ids: Sequence[str]) -> Mapping[str, PersonFacts]:
        """Return the facts (address, verified, ...) of the known people among ``ids``."""

    def inbox_settings(self, conn: Conn) -> InboxSettings:
        """Return the sections and whether mail is configured."""

    def inbox_users(self, conn: Conn, ids: Sequence[str]) -> Mapping[str, WikiUser]:
        """Return the locale (and schedule) of the known people among ``ids``."""

    def inbox_page(self, conn: Conn, page: str) -> PageInfo | None:
        """Return a page as it is now (a deleted one as it was), or ``None``: the drain checks
        access again against it (E4).

        The inbox list reads the pages of a page of entries in one call of the host's optional
        ``inbox_pages_by_id(conn, ids)`` (the known pages among ``ids`` by id) when it has it,
        else this port once per page (`notify_pg.http.shown`)."""

    def inbox_groups(self, conn: Conn) -> Mapping[str, Group]:
        """Return every group and its rules (E4: access checked again at the drain)."""

    def inbox_names(self, conn: Conn, ids: Sequence[str]) -> Mapping[str, str]:
        """Return the display names (E6) of the people among ``ids`` who have one; a person
        without a name, or no longer known, is left out (a mail names them neutrally)."""


class MailSender(Protocol):
    """Sends one message (`notify_pg.mail.smtp.SmtpSender` is one); closed after each round."""

    def send(self, outgoing: Outgoing) -> None:
        """Send one message; raise `MailSendError` when it was not sent."""

    def close(self) -> None:
        """Release the connection."""
