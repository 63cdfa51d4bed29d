"""What a worker says about its providers: those it serves, and those it lacks, once.

`announce_providers` logs at start the providers a worker serves and warns, once per provider,
when active registrations exist for one it does not serve (their pushes are skipped as
``no_provider``). `warn_unserved` is the same warning for the send round, which meets such a
registration at each push: the warning is given once per provider and worker (the set of
names warned about is the worker's), never per push (the metric ``notify.push.skipped`` still
counts each one).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence

from notify_pg.db.seam import Conn, Seam
from notify_pg.push.providers import PushProvider

__all__ = ["announce_providers", "close_providers", "warn_unserved"]

_log = logging.getLogger("notify_pg.worker")
_lock = threading.Lock()


def warn_unserved(provider: str, warned: set[str], registrations: int | None = None) -> bool:
    """Warn that pushes of ``provider`` are skipped (no provider of that name is configured),
    unless ``provider`` is in ``warned`` (the worker's names warned about, which it joins);
    return whether it warned."""
    with _lock:
        if provider in warned:
            return False
        warned.add(provider)
    fields: dict[str, object] = {
        "provider": provider,
        "hint": "configure it (notify worker --providers FILE) or its pushes are skipped "
        "as no_provider",
    }
    if registrations is not None:
        fields["registrations"] = registrations
    _log.warning("push provider missing", extra={"fields": fields})
    return True


def announce_providers(
    connect: Callable[[], Conn],
    schema: str,
    providers: Sequence[PushProvider],
    warned: set[str],
) -> list[str]:
    """Log the providers served and warn for each provider with active registrations that
    none serves (`warn_unserved` with the worker's ``warned``); return the names of those.
    When the registrations cannot be counted (PostgreSQL failed), says so in a warning and
    returns none: the send round still warns once per provider it lacks.
    """
    served = sorted(provider.name for provider in providers)
    _log.info("push providers", extra={"fields": {"providers": served}})
    try:
        conn = connect()
        try:
            rows = Seam("notify_pg", schema).all(conn, "metrics_registrations")
        finally:
            conn.close()
    except Exception as exc:  # a count for a warning must not stop the worker
        _log.warning(
            "push registrations not counted", extra={"fields": {"error_type": type(exc).__name__}}
        )
        return []
    unserved = [(str(name), int(count)) for name, count in rows if name not in served]
    for name, count in unserved:
        warn_unserved(name, warned, count)
    return [name for name, _count in unserved]


def close_providers(providers: Sequence[object]) -> None:
    """Close the providers that hold connections (those with a ``close`` method)."""
    for provider in providers:
        close = getattr(provider, "close", None)
        if callable(close):
            close()
