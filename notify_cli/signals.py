"""Stop a long-running command on SIGTERM or SIGINT, and give the signals back afterwards."""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

Handler = Callable[[int, FrameType | None], None]


@contextmanager
def handling_stop_signals(handler: Handler) -> Iterator[None]:
    """Install *handler* for SIGTERM and SIGINT while the block runs, then restore the old ones.

    Restoring matters when a command runs inside another program (a test runner calling the
    CLI in process, a host embedding it): without it Ctrl-C would stay swallowed afterwards.

    Example::

        with handling_stop_signals(lambda number, frame: stop.set()):
            worker.run(stop)
    """
    previous = {number: signal.getsignal(number) for number in (signal.SIGTERM, signal.SIGINT)}
    for number in previous:
        signal.signal(number, handler)
    try:
        yield
    finally:
        for number, old in previous.items():
            signal.signal(number, old)
