"""The batched reads of the pipeline: level facts and quiet rules of many people at once.

`FactsReader.level_facts` gathers the seven facts of rule L3 for every candidate of a thread
with a constant number of queries whatever the number of candidates (L3): the
thread's path (one host call), the own rows of all candidates on the thread, its channel and
its space (one query), and their personal defaults (one host call). It never resolves the
level: `notify_core.hints.levels.resolve_level` does, at the instant the caller passes.

`FactsReader.quiet_rules` reads the enabled rules of many people in one query and their zones
in one host call; each distinct zone name is checked once per call, and a stored name that no
longer loads counts as UTC with one warning that names neither the zone nor anybody
(rule Q7).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime
from typing import Any, Protocol

from notify_core.hints.levels import Level, LevelFacts, Preference, Target, TargetKind
from notify_core.hints.quiet import QuietRule
from notify_core.records import PreferenceRecord
from notify_core.values.errors import InvalidRule
from notify_core.values.zones import validate_time_zone
from notify_pg.db.errors import NotFound
from notify_pg.db.seam import Conn, Seam, text_array
from notify_pg.stores.ports import DirectoryPort, NotificationPath, SettingsPort, StructurePort
from notify_pg.stores.record_facts import record_from_json
from notify_pg.stores.values import QuietFacts, StoreConfig

__all__ = ["DEFAULT_LEVEL_KEY", "FactsReader"]

#: The personal setting that holds a person's default level (L3 step 6).
DEFAULT_LEVEL_KEY = "notify.default_level"

_log = logging.getLogger("notify_pg")
_LEVELS = {level.value: level for level in Level}


class _Host(StructurePort, DirectoryPort, SettingsPort, Protocol):
    """The host facts the batched reads need."""


class FactsReader:
    """Batched reads of preference facts for the pipeline.

    Args:
        host: the structure, directory and settings ports of the host.
        config: the adapter's settings (the instance default level).
        schema: the library's schema.
    """

    def __init__(self, host: _Host, config: StoreConfig, schema: str) -> None:
        self._host = host
        self._config = config
        self._seam = Seam("notify_pg", schema)

    def level_facts(
        self,
        conn: Conn,
        thread_id: str,
        user_ids: Sequence[str],
        *,
        path: NotificationPath | None = None,
        settings: Mapping[str, Mapping[str, object]] | None = None,
    ) -> dict[str, LevelFacts]:
        """Return the L3 facts of each person for one thread (L3).

        Args:
            conn: the connection (reads only).
            thread_id: the thread.
            user_ids: the candidates; repeats are answered once, unknown people get the facts
                without own rows.
            path: the thread's path when the caller knows it already (no host call then).
            settings: the candidates' settings when the caller read them already, with
                `DEFAULT_LEVEL_KEY` among the keys (no host call then).

        Returns:
            One `LevelFacts` per distinct person. People with equal facts share one value.

        Raises:
            NotFound: the thread does not exist.
        """
        people = list(dict.fromkeys(user_ids))
        if not people:
            return {}
        if path is None:
            path = self._host.notification_path(conn, Target(kind=TargetKind.THREAD, id=thread_id))
        if path is None:
            raise NotFound(message="unknown thread")
        rows = self._seam.all(
            conn,
            "level_rows",
            {
                "user_ids": people,
                "thread": thread_id,
                "channel": path.channel_id,
                "space": path.space_id,
            },
        )
        if settings is None:
            settings = self._host.settings(conn, people, [DEFAULT_LEVEL_KEY])

        prefs: dict[tuple[str, datetime | None], Preference] = {}
        own: dict[str, dict[str, Preference]] = {}
        for user_id, kind, level, muted_until in rows:
            until = None if muted_until is None else muted_until.astimezone(UTC)
            pref = prefs.get((level, until))
            if pref is None:
                pref = prefs[level, until] = Preference(level=level, muted_until=until)
            own.setdefault(user_id, {})[kind] = pref

        unknown_defaults = 0
        shared: dict[tuple[object, ...], LevelFacts] = {}
        out: dict[str, LevelFacts] = {}
        for user_id in people:
            stored = settings.get(user_id, {}).get(DEFAULT_LEVEL_KEY)
            personal = _LEVELS.get(stored) if isinstance(stored, str) else None
            if stored is not None and personal is None:
                unknown_defaults += 1
            mine = own.get(user_id, {})
            key = (mine.get("thread"), mine.get("channel"), mine.get("space"), personal)
            facts = shared.get(key)
            if facts is None:
                facts = shared[key] = LevelFacts(
                    thread=key[0],
                    channel=key[1],
                    space=key[2],
                    channel_default=path.channel_default,
                    direct_message=path.direct_message,
                    personal_default=personal,
                    instance_default=self._config.instance_default_level,
                )
            out[user_id] = facts
        if unknown_defaults:
            # L5: without the value and without the people's IDs.
            _log.warning(
                "%d stored personal default level(s) are not a level; counted as unset",
                unknown_defaults,
            )
        return out

    def user_level_facts(
        self, conn: Conn, user_id: str, paths: Mapping[str, NotificationPath]
    ) -> dict[str, LevelFacts]:
        """Return one person's L3 facts for many threads whose paths the caller knows.

        The person's own rows on all the threads, their channels and their spaces in one
        query, the personal default in one host call (the badge of B1 reads every thread a
        person can read).

        Args:
            conn: the connection (reads only).
            user_id: the person.
            paths: per thread, its path (space, channel, channel kind, channel default).
        """
        if not paths:
            return {}
        channels = sorted({p.channel_id for p in paths.values() if p.channel_id is not None})
        spaces = sorted({p.space_id for p in paths.values() if p.space_id is not None})
        rows = self._seam.all(
            conn,
            "user_level_rows",
            {"user_id": user_id, "threads": list(paths), "channels": channels, "spaces": spaces},
        )
        own: dict[tuple[str, str], Preference] = {}
        for kind, target_id, level, muted_until in rows:
            until = None if muted_until is None else muted_until.astimezone(UTC)
            own[kind, target_id] = Preference(level=level, muted_until=until)
        stored = self._host.settings(conn, [user_id], [DEFAULT_LEVEL_KEY]).get(user_id, {})
        value = stored.get(DEFAULT_LEVEL_KEY)
        personal = _LEVELS.get(value) if isinstance(value, str) else None
        if value is not None and personal is None:
            _log.warning("1 stored personal default level(s) are not a level; counted as unset")
        return {
            thread: LevelFacts(
                thread=own.get(("thread", thread)),
                channel=own.get(("channel", path.channel_id or "")),
                space=own.get(("space", path.space_id or "")),
                channel_default=path.channel_default,
                direct_message=path.direct_message,
                personal_default=personal,
                instance_default=self._config.instance_default_level,
            )
            for thread, path in paths.items()
        }

    def pairs_level_facts(
        self,
        conn: Conn,
        paths: Mapping[tuple[str, str], NotificationPath],
        settings: Mapping[str, Mapping[str, object]] | None = None,
        *,
        by_people: bool = False,
    ) -> dict[tuple[str, str], LevelFacts]:
        """Return the L3 facts of many (person, thread) pairs whose paths the caller knows.

        The own rows of every pair's thread, channel and space in one query, the personal
        defaults in one host call (or from ``settings``, values the caller read with
        `DEFAULT_LEVEL_KEY` among the keys): the facts of a whole batch of due work or of the
        badges of a push round. With ``by_people`` the query asks for the rows of the pairs'
        people on all the pairs' targets at once (the badges: every person on most threads,
        thousands of pairs that three ids each would make arrays of); the rows are looked up
        by pair either way.
        """
        if not paths:
            return {}
        if by_people:
            rows = self._people_level_rows(conn, paths)
        else:
            rows = self._pairs_level_rows(conn, paths)
        own: dict[tuple[str, str, str], Preference] = {}
        for user_id, kind, target_id, level, muted_until in rows:
            until = None if muted_until is None else muted_until.astimezone(UTC)
            own[user_id, kind, target_id] = Preference(level=level, muted_until=until)
        people = list(dict.fromkeys(user_id for user_id, _t in paths))
        if settings is None:
            settings = self._host.settings(conn, people, [DEFAULT_LEVEL_KEY])
        personal: dict[str, Level | None] = {}
        unknown_defaults = 0
        for user_id in people:
            stored = settings.get(user_id, {}).get(DEFAULT_LEVEL_KEY)
            personal[user_id] = _LEVELS.get(stored) if isinstance(stored, str) else None
            if stored is not None and personal[user_id] is None:
                unknown_defaults += 1
        if unknown_defaults:
            _log.warning(
                "%d stored personal default level(s) are not a level; counted as unset",
                unknown_defaults,
            )
        # Most pairs have the same inputs (no own rows, one channel): equal facts are built
        # once and shared (frozen values; a badge of a push round asks for every thread).
        # Keyed by the identities of the values (rows, levels and None are held objects):
        # hashing ints is cheaper than hashing rows and enum members, thousands of times.
        shared: dict[tuple[int, int, int, int, bool, int], LevelFacts] = {}
        out: dict[tuple[str, str], LevelFacts] = {}
        instance = self._config.instance_default_level
        for key, path in paths.items():
            user_id, thread = key
            values = (
                own.get((user_id, "thread", thread)),
                own.get((user_id, "channel", path.channel_id or "")),
                own.get((user_id, "space", path.space_id or "")),
                path.channel_default,
                path.direct_message,
                personal[user_id],
            )
            ids = (
                id(values[0]),
                id(values[1]),
                id(values[2]),
                id(values[3]),
                values[4],
                id(values[5]),
            )
            facts = shared.get(ids)
            if facts is None:
                facts = shared[ids] = LevelFacts(
                    thread=values[0],
                    channel=values[1],
                    space=values[2],
                    channel_default=values[3],
                    direct_message=values[4],
                    personal_default=values[5],
                    instance_default=instance,
                )
            out[key] = facts
        return out

    def _people_level_rows(
        self, conn: Conn, paths: Mapping[tuple[str, str], NotificationPath]
    ) -> list[tuple[Any, ...]]:
        """The own rows of the pairs' people on any of the pairs' threads, channels, spaces."""
        # One path per thread (hashing the paths themselves would cost more than the query).
        by_thread: dict[str, NotificationPath] = {}
        for (_user_id, thread), path in paths.items():
            if thread not in by_thread:
                by_thread[thread] = path
        channels = {p.channel_id for p in by_thread.values() if p.channel_id is not None}
        spaces = {p.space_id for p in by_thread.values() if p.space_id is not None}
        return self._seam.all(
            conn,
            "people_level_rows",
            {
                "user_ids": text_array(list(dict.fromkeys(u for u, _t in paths))),
                "threads": text_array(list(by_thread)),
                "channels": text_array(sorted(channels)),
                "spaces": text_array(sorted(spaces)),
            },
        )

    def _pairs_level_rows(
        self, conn: Conn, paths: Mapping[tuple[str, str], NotificationPath]
    ) -> list[tuple[Any, ...]]:
        """The own rows of each pair's person on the pair's thread, channel and space."""
        wanted: dict[tuple[str, str, str], None] = {}
        for (user_id, thread), path in paths.items():
            wanted[(user_id, "thread", thread)] = None
            if path.channel_id is not None:
                wanted[(user_id, "channel", path.channel_id)] = None
            if path.space_id is not None:
                wanted[(user_id, "space", path.space_id)] = None
        return self._seam.all(
            conn,
            "pairs_level_rows",
            {
                "user_ids": text_array([u for u, _k, _t in wanted]),
                "kinds": text_array([k for _u, k, _t in wanted]),
                "ids": text_array([t for _u, _k, t in wanted]),
            },
        )

    def quiet_rules(
        self,
        conn: Conn,
        user_ids: Sequence[str],
        *,
        zones: bool = True,
        records: dict[str, tuple[PreferenceRecord, ...]] | None = None,
        days: dict[tuple[str, date], int] | None = None,
    ) -> dict[str, QuietFacts]:
        """Return each person's zone and enabled rules, ready for `in_quiet_hours` (Q5, Q7).

        A rule without zone follows the person's zone (absent: UTC; not read with ``zones``
        false, for a caller that takes the zone from elsewhere). A stored zone name that
        no longer loads, the rule's or the person's, becomes ``"UTC"``; one warning per such
        name and call is logged, without the name and without IDs (Q7).

        With ``records`` the same query also reads each person's preference records
        (recording order) into it, every person of ``user_ids`` set (M1: the pipeline reads
        the record in effect at each decision from them), and into ``days`` the person's push
        deliveries per local day (M4), where ``days`` has none of that person and day yet.

        Raises:
            InvalidRule: a stored rule is malformed in another way (not a whole minute).
        """
        people = list(dict.fromkeys(user_ids))
        if not people:
            return {}
        if records is None:
            rows = self._seam.all(conn, "enabled_rules", {"user_ids": people})
        else:
            rows = []
            history: dict[str, list[PreferenceRecord]] = {}
            for row in self._seam.all(conn, "enabled_rules_and_records", {"user_ids": people}):
                if row[6] is None:
                    rows.append(row[:6])
                elif row[7] is not None:
                    history.setdefault(row[0], []).append(record_from_json(row[6]))
                elif days is not None:
                    day, count = row[6]
                    days.setdefault((row[0], date.fromisoformat(day)), int(count))
            for person in people:
                records[person] = tuple(history.get(person, ()))
        stored = self._host.time_zones(conn, people) if zones else {}
        loadable: dict[str, bool] = {}

        def zone(name: str | None) -> str | None:
            if name is None:
                return None
            ok = loadable.get(name)
            if ok is None:
                try:
                    validate_time_zone(name)
                    ok = True
                except InvalidRule:
                    ok = False
                    _log.warning("a stored time zone no longer loads; UTC is used instead")
                loadable[name] = ok
            return name if ok else "UTC"

        rules: dict[str, list[QuietRule]] = {}
        for user_id, _rule_id, weekdays, start_local, end_local, time_zone in rows:
            rules.setdefault(user_id, []).append(
                QuietRule(
                    weekdays=weekdays,
                    start_local=start_local,
                    end_local=end_local,
                    time_zone=zone(time_zone),
                    enabled=True,
                )
            )
        return {
            user_id: QuietFacts(
                user_zone=zone(stored.get(user_id)), rules=tuple(rules.get(user_id, ()))
            )
            for user_id in people
        }
