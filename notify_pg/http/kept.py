"""Kept summaries: the inbox summary of a person, held until their inbox changes (H1 poll).

The page polls ``GET /sites/SITE/notifications/summary`` with the ``ETag`` it has; almost
every poll is a ``304``. `KeptSummaries` keeps each person's last summary per site (and set of
hidden sites) in memory, so that poll is answered without a database round trip, and forgets
it the moment it may be wrong:

- a summary is kept only while the live hub listens (`notify_pg.http.live.LiveHub`): the
  triggers of migration 0020 notify every write that moves a summary, and the hub hands each
  notification's people to `KeptSummaries.forget` (everyone when a notification names
  everyone, or when the hub listens again after a lost connection);
- a write made by this process's own routes forgets its person at once, before it answers,
  so a client reads its own writes (a notification arrives a few milliseconds later);
- a summary read while a notification arrived is not kept (a generation counter): it may
  predate the write the notification announced;
- at most `MAX_KEPT` summaries: over it, all are forgotten (a new poll reads them again).

Writes made elsewhere (the worker's fan-out, another ``notify serve`` process) reach a kept
summary as the live refresh does: when their notification arrives, within milliseconds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Final

from notify_pg.inbox.reads import InboxSummary

__all__ = ["MAX_KEPT", "KeptSummaries"]

#: The most summaries kept at once (about 200 bytes each).
MAX_KEPT: Final = 100_000

_Key = tuple[str, str | None, tuple[str, ...]]


class KeptSummaries:
    """The kept summaries of one process (see the module's docstring).

    Args:
        listening: tells whether the notifications that forget summaries are being
            received (the hub's ``listening`` event); while not, nothing is kept or answered.
    """

    def __init__(self, listening: Callable[[], bool]) -> None:
        self._listening = listening
        self._kept: dict[_Key, InboxSummary] = {}
        self._people: dict[str, set[_Key]] = {}
        #: Bumped by every `forget`: a read that saw it move is not kept.
        self.generation = 0

    def __len__(self) -> int:
        return len(self._kept)

    def get(self, person: str, site: str | None, hidden: Sequence[str]) -> InboxSummary | None:
        """The kept summary, or ``None`` (none kept, or the hub is not listening)."""
        if not self._listening():
            return None
        return self._kept.get((person, site, tuple(hidden)))

    def keep(
        self,
        person: str,
        site: str | None,
        hidden: Sequence[str],
        summary: InboxSummary,
        generation: int,
    ) -> None:
        """Keep ``summary``, read when `generation` was ``generation``, unless a notification
        arrived since or the hub is not listening."""
        if generation != self.generation or not self._listening():
            return
        if len(self._kept) >= MAX_KEPT:
            self._kept.clear()
            self._people.clear()
        key = (person, site, tuple(hidden))
        self._kept[key] = summary
        self._people.setdefault(person, set()).add(key)

    def forget(self, people: Iterable[str] | None) -> None:
        """Forget the summaries of ``people`` (``None``: everyone's)."""
        self.generation += 1
        if people is None:
            self._kept.clear()
            self._people.clear()
            return
        for person in people:
            for key in self._people.pop(person, ()):
                self._kept.pop(key, None)
