"""IANA time zones from the tzdata package (Q3, G1): which names are zones, and loading them.

Every wing that reads a local time (quiet hours, mail cadence, the event log's checks) loads
its zones here, so one log gives the same local times on every machine.
"""

from __future__ import annotations

import functools
import importlib.resources
from datetime import UTC, tzinfo
from typing import Final
from zoneinfo import ZoneInfo
from zoneinfo._common import load_tzdata

import tzdata  # type: ignore[import-untyped]  # the package ships no type hints

from notify_core.values.errors import InvalidRule

__all__ = ["TZDATA_VERSION", "load_zone", "validate_time_zone", "zone_or_utc"]

#: The IANA release of the zone data every decision reads (G1), named by the replay summary.
TZDATA_VERSION: Final[str] = str(tzdata.IANA_VERSION)

_REFUSED_ZONES: Final = frozenset({"Local", "localtime", "Factory", "posixrules"})


@functools.cache
def _known_zones() -> frozenset[str]:
    # G1: the zone list shipped by the tzdata package, never ``available_timezones()``, which
    # also walks the host's TZPATH (a name only the host knows would load there and not here).
    listed = importlib.resources.files("tzdata").joinpath("zones").read_text(encoding="utf-8")
    return frozenset(line.strip() for line in listed.splitlines() if line.strip()) - _REFUSED_ZONES


def validate_time_zone(name: object, pointer: str = "/time_zone") -> str:
    """Return ``name`` if it is a zone of the IANA database shipped by tzdata (Q3).

    Raises:
        InvalidRule: ``Local``, ``localtime``, ``Factory``, ``posixrules``, names under
            ``posix/`` or ``right/``, the empty string, paths and unknown names
            (code ``unknown_time_zone``).
    """
    if (
        not isinstance(name, str)
        or name.startswith(("posix/", "right/"))
        or name not in _known_zones()
    ):
        raise InvalidRule("unknown_time_zone", f"unknown time zone: {name!r}", pointer)
    return name


@functools.cache
def load_zone(name: str) -> ZoneInfo:
    """Load a validated zone from the tzdata package, once per process (G1).

    Never ``ZoneInfo(name)``: that reads the host's zone files first (``TZPATH``) and shares
    a process-wide cache a host may already have filled from them, so one log would give
    different due times on a machine with older zone files. The stdlib's own tzdata reader
    (``zoneinfo._common.load_tzdata``, what ``ZoneInfo`` uses when no host file exists)
    opens the package's resource; the cache only avoids repeated parsing.

    Raises:
        InvalidRule: the name is refused by `validate_time_zone`.
    """
    key = validate_time_zone(name)
    with load_tzdata(key) as data:
        return ZoneInfo.from_file(data, key=key)


def zone_or_utc(name: str | None) -> tzinfo:
    """Return the zone of a person, UTC when absent or unloadable (Q1, Q7).

    The adapters log the fallback; the core only applies it.
    """
    if name is None:
        return UTC
    try:
        return load_zone(name)
    except InvalidRule:
        return UTC
