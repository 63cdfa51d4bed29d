"""`PgPreferences`: `notify_core.hints.ports.PreferenceFacts` on the library's tables.

`notify_pg.stores.facts.FactsReader` answers levels and quiet rules, the host's settings the
switches, and following (S5) is an insert-if-absent that appends one
``notification_pref.updated`` only when it inserted.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

import attrs

from notify_core.hints.decide import Switches
from notify_core.hints.levels import Level, LevelFacts, Preference, Target, TargetKind
from notify_core.hints.quiet import QuietRule
from notify_pg.db.errors import NotFound
from notify_pg.push.session import (
    ADMIN_ENABLED_KEY,
    INPUT_NEEDED_KEY,
    Session,
    thread_path,
)
from notify_pg.stores.facts import DEFAULT_LEVEL_KEY, FactsReader
from notify_pg.stores.ports import PipelineHostPorts
from notify_pg.stores.preferences import PreferenceRepository

__all__ = ["PgPreferences"]

_log = logging.getLogger("notify_pg")


class PgPreferences:
    """`notify_core.hints.ports.PreferenceFacts` on the library's tables and the host's settings.

    Args:
        session: the transaction's session.
        host: the host's ports.
        facts: the batched reader of levels and quiet rules.
        preferences: the preference repository (for following).
        instance_default: the instance default level (for threads the host does not know).
    """

    def __init__(
        self,
        session: Session,
        host: PipelineHostPorts,
        facts: FactsReader,
        preferences: PreferenceRepository,
        instance_default: Level,
    ) -> None:
        self._s = session
        self._host = host
        self._facts = facts
        self._preferences = preferences
        self._instance_default = instance_default

    def level_facts(self, thread: str, users: Sequence[str]) -> dict[str, LevelFacts]:
        """Return the L3 facts of many people for one thread; they become the current batch."""
        if len(users) == 1:
            # The badge asks for one person per thread, thousands of times a push round.
            held = self._s.levels.get((users[0], thread))
            if held is not None:
                return {users[0]: held}
        people = list(dict.fromkeys(users))
        s = self._s
        levels = s.levels
        if len(people) > 1:
            s.batch = tuple(people)
        # Only the people not known yet are read (the session keeps the facts it read: a
        # consumer round answers the next events of a thread from them).
        missing = [p for p in people if (p, thread) not in levels]
        if missing:
            # The fan-out reads the switches next: one host call for both (`switches`).
            settings = self._host.settings(
                s.conn, missing, [DEFAULT_LEVEL_KEY, ADMIN_ENABLED_KEY, INPUT_NEEDED_KEY]
            )
            known = PgPreferences._switches_of(settings)
            for person in missing:
                s.switches[person] = known.get(person)
            try:
                found = self._facts.level_facts(
                    s.conn, thread, missing, path=thread_path(s, thread), settings=settings
                )
            except NotFound:
                found = dict.fromkeys(missing, LevelFacts(instance_default=self._instance_default))
            for person in missing:
                levels[(person, thread)] = found[person]
        return {p: levels[(p, thread)] for p in people}

    def quiet_rules(self, users: Sequence[str]) -> dict[str, tuple[QuietRule, ...]]:
        """Return the enabled quiet rules of many people (people without rules are absent).

        The people become the current batch (threadless kinds read no level facts).
        """
        cache = self._s.quiet
        missing = [p for p in dict.fromkeys(users) if p not in cache]
        if missing:
            self._s.batch = tuple(dict.fromkeys(users))
            # The pipeline takes the person's zone from `UserInfo`: only the rules are read.
            s = self._s
            found = self._facts.quiet_rules(
                s.conn, missing, zones=False, records=s.records, days=s.push_days
            )
            for person in missing:
                facts = found.get(person)
                cache[person] = facts.rules if facts is not None else ()
        return {person: cache[person] for person in users if cache[person]}

    def prefetch(self, users: Sequence[str], settings: Mapping[str, Mapping[str, object]]) -> None:
        """Load the quiet rules of many people and their switches from ``settings`` (read
        with both switch keys): `quiet_rules` and `switches` of them then read no table."""
        s = self._s
        missing = [p for p in dict.fromkeys(users) if p not in s.quiet]
        if missing:
            found = self._facts.quiet_rules(
                s.conn, missing, zones=False, records=s.records, days=s.push_days
            )
            for person in missing:
                facts = found.get(person)
                s.quiet[person] = facts.rules if facts is not None else ()
        known = self._switches_of({p: settings.get(p, {}) for p in users})
        for person in users:
            s.switches[person] = known.get(person)

    def switches(self, users: Sequence[str]) -> dict[str, Switches]:
        """Return the switches of many people; a stored non-boolean counts as unset (D3, D7)."""
        cache = self._s.switches
        if all(person in cache for person in users):
            return {p: own for p in users if (own := cache[p]) is not None}
        stored = self._host.settings(self._s.conn, users, [ADMIN_ENABLED_KEY, INPUT_NEEDED_KEY])
        return self._switches_of(stored)

    @staticmethod
    def _switches_of(stored: Mapping[str, Mapping[str, object]]) -> dict[str, Switches]:
        out = {}
        bad = 0
        for person, values in stored.items():
            admin = values.get(ADMIN_ENABLED_KEY)
            breaks = values.get(INPUT_NEEDED_KEY)
            bad += sum(v is not None and not isinstance(v, bool) for v in (admin, breaks))
            if admin is not None or breaks is not None:
                out[person] = Switches(
                    admin_enabled=admin if isinstance(admin, bool) else None,
                    input_needed_breaks_quiet_hours=breaks if isinstance(breaks, bool) else None,
                )
        if bad:
            # One warning, without the values and without the people's IDs (as L5 logs).
            _log.warning("%d stored switch value(s) are not booleans; counted as unset", bad)
        return out

    def follow(self, user: str, thread: str) -> bool:
        """S5: a row ``all`` for the thread unless the person has one; True if inserted.

        An inserted row appends one ``notification_pref.updated`` in the round's transaction,
        with the time of the event being handled (`Session.appends`: the worker appends them
        at the end of the round, in order).
        """
        key = (user, thread)
        levels = self._s.levels
        known = levels.get(key)
        if known is not None and known.thread is not None:
            # The person's row for the thread was read in this transaction, which deletes
            # no row: the insert would find it and do nothing.
            return False
        stored = self._preferences.insert_if_absent(
            self._s.conn,
            user,
            Target(kind=TargetKind.THREAD, id=thread),
            Preference(level=Level.ALL),
            actor=user,
            occurred_at=self._s.now,
            defer=self._s.appends,
        )
        if stored is not None and known is not None:
            # The facts read before, with the row just inserted (no read again).
            own = Preference(level=stored.level, muted_until=stored.muted_until)
            levels[key] = attrs.evolve(known, thread=own)
        else:
            levels.pop(key, None)
        return stored is not None
