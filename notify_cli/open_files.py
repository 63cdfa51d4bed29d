"""The open-files limit of ``notify serve``: raised at start, and said when it stays low.

Each open websocket or connection is a file descriptor, and a process starts with the soft
limit of ``RLIMIT_NOFILE`` (often 1,024) while the hard limit may be far higher. `raise_open_files`
lifts the soft limit as far as the hard one allows (no privilege needed); `wanted_open_files`
says how many one ``notify serve`` process should be able to hold: ``--max-connections`` and a
reserve for the pool, the listener and the log, or `DEFAULT_SOCKETS` without it. Where the
limit stays under that, ``notify serve`` logs ``open files limited`` with both numbers, after
``listening`` (see docs/operators.md): the operator raises the hard limit (``ulimit -Hn``,
``LimitNOFILE=`` of a systemd unit).
"""

from __future__ import annotations

import contextlib
import resource
from typing import Final

__all__ = ["DEFAULT_SOCKETS", "RESERVE", "raise_open_files", "wanted_open_files"]

#: Sockets one process is meant to hold when ``--max-connections`` does not say (issue 39).
DEFAULT_SOCKETS: Final = 10_000
#: Descriptors besides the sockets: the database pool, the live listener, the log, imports.
RESERVE: Final = 256
#: The highest soft limit asked for when the hard limit is unlimited.
_CEILING: Final = 1 << 20


def wanted_open_files(max_connections: int | None, threads: int) -> int:
    """Descriptors one serving process should be able to open."""
    sockets = DEFAULT_SOCKETS if max_connections is None else max_connections
    return sockets + threads + RESERVE


def raise_open_files() -> int:
    """Raise the soft open-files limit to the hard one; return the soft limit in force.

    A platform that refuses (or has no such limit) keeps its limit: that one is returned.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = _CEILING if hard == resource.RLIM_INFINITY else min(hard, _CEILING)
    if soft != resource.RLIM_INFINITY and soft < target:
        # Refused: kept as it was, and the caller says so when it is too low.
        with contextlib.suppress(OSError, ValueError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return _CEILING if soft == resource.RLIM_INFINITY else int(soft)
