"""A host's own inbox ports for ``notify worker --inbox-host`` (tests/pg/worker/test_inbox_host.py).

`quiet_cy` is the reference wiki with one change a host might make: Cy's watches are not
read (as if a host kept a "mute" flag the reference tables lack).
"""

from __future__ import annotations

from collections.abc import Sequence

from notify_pg.db.seam import Conn
from notify_reference_host.wiki import ReferenceWiki

#: Schemas the factories were called with (the test reads them back).
CALLS: list[str] = []


class QuietCy(ReferenceWiki):
    """The reference wiki, without Cy among any page's watchers."""

    def inbox_watchers(self, conn: Conn, page: str, after: str, limit: int) -> Sequence[str]:
        """Return the page's watchers but Cy."""
        return [p for p in super().inbox_watchers(conn, page, after, limit) if p != "cy"]


def quiet_cy(schema: str) -> QuietCy:
    """The factory ``--inbox-host custom_inbox_host:quiet_cy`` names."""
    CALLS.append(schema)
    return QuietCy(schema)


class Incomplete:
    """Ports that lack most methods."""

    def inbox_site(self, conn: Conn, site: str) -> None:
        """Know no site."""


def incomplete(schema: str) -> Incomplete:
    """A factory whose ports lack methods."""
    return Incomplete()


def broken(schema: str) -> ReferenceWiki:
    """A factory that fails."""
    raise RuntimeError("no wiki configured")


NOT_CALLABLE = 42
