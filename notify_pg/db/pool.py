"""A small connection pool that fails fast while PostgreSQL is down (``notify serve``).

`FastPool` keeps up to ``size`` autocommit connections for request handlers. It differs from
a general-purpose pool in what an outage costs:

- a request never waits longer than ``timeout`` (2 s by default) for a connection: no free
  slot, or a database that cannot be reached, raises `StorageError` (``storage_unavailable``,
  retryable), which the reference app answers as ``503`` with ``Retry-After``;
- there is no background reconnection with a growing back-off: each request that needs a new
  connection makes it itself, so the first request after the database is back gets one
  (recovery at once, not after the pool's next scheduled attempt);
- an idle connection whose socket has become readable (the server closed it, as a restart
  does) is dropped before it is handed out, so a restart costs no failed request;
- its log lines are the library's (``database unavailable`` once when connecting starts to
  fail, ``database available`` once when it works again, with the error's type, code and
  SQLSTATE), never libpq's text, which names the server's address.
"""

from __future__ import annotations

import logging
import select
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Final

import psycopg
from psycopg import pq

from notify_pg.db.errors import StorageError, translate
from notify_pg.db.seam import Conn

__all__ = ["DEFAULT_TIMEOUT", "FastPool", "usable"]

#: The longest a request waits for a connection, in seconds.
DEFAULT_TIMEOUT: Final = 2.0

_log = logging.getLogger("notify_pg.pool")


class FastPool:
    """Up to ``size`` autocommit connections to ``dsn``, handed out one per request.

    Args:
        dsn: the libpq connection string.
        size: the most connections open at once (and so requests served at once).
        timeout: the most a request waits for a free slot, and for a new connection.
        application_name: what ``pg_stat_activity`` shows for the connections.
    """

    def __init__(
        self,
        dsn: str,
        *,
        size: int = 4,
        timeout: float = DEFAULT_TIMEOUT,
        application_name: str = "notify serve",
    ) -> None:
        if size < 1:
            raise ValueError("a pool holds at least one connection")
        self.dsn = dsn
        self.size = size
        self.timeout = timeout
        self._application_name = application_name
        self._slots = threading.BoundedSemaphore(size)
        self._lock = threading.Lock()
        self._idle: list[Conn] = []
        self._down = False
        self._closed = False

    @contextmanager
    def connection(self, timeout: float | None = None) -> Iterator[Conn]:
        """Lend a connection for the block; it returns to the pool unless it broke.

        Raises:
            StorageError: ``storage_unavailable`` when no slot is free within ``timeout`` or
                the database cannot be reached (connecting gives up after the same time).
        """
        wait = self.timeout if timeout is None else timeout
        if self._closed:
            raise StorageError("storage_unavailable", "the pool is closed", retryable=True)
        if not self._slots.acquire(timeout=wait):
            raise StorageError(
                "storage_unavailable",
                f"no database connection free within {wait:g} s",
                retryable=True,
            )
        try:
            conn = self._idle_connection() or self._connect(wait)
            try:
                yield conn
            finally:
                self._give_back(conn)
        finally:
            self._slots.release()

    def _idle_connection(self) -> Conn | None:
        while True:
            with self._lock:
                if not self._idle:
                    return None
                conn = self._idle.pop()
            if usable(conn):
                return conn
            conn.close()

    def _connect(self, wait: float) -> Conn:
        try:
            conn: Conn = psycopg.connect(
                self.dsn,
                autocommit=True,
                # libpq counts whole seconds, at least 2.
                connect_timeout=max(2, round(wait)),
                application_name=self._application_name,
            )
        except psycopg.Error as exc:
            error = translate(exc)
            if not self._down:
                self._down = True
                fields: dict[str, Any] = {"error_type": type(exc).__name__, "code": error.code}
                if isinstance(error, StorageError) and error.sqlstate:
                    fields["sqlstate"] = error.sqlstate
                _log.warning("database unavailable", extra={"fields": fields})
            raise error from None
        if self._down:
            self._down = False
            _log.info("database available")
        return conn

    def _give_back(self, conn: Conn) -> None:
        # A connection left in a transaction or broken by the block is not reused.
        if (
            self._closed
            or conn.closed
            or conn.broken
            or conn.info.transaction_status != pq.TransactionStatus.IDLE
        ):
            conn.close()
            return
        with self._lock:
            self._idle.append(conn)

    def close(self) -> None:
        """Close the idle connections; those lent are closed when they come back."""
        self._closed = True
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    def wait(self, timeout: float = 10.0) -> None:
        """Make one connection within ``timeout`` seconds and keep it idle (a start check).

        Raises:
            StorageError: ``storage_unavailable`` when the database cannot be reached.
        """
        deadline = time.monotonic() + timeout
        with self.connection(timeout=max(0.0, deadline - time.monotonic())):
            pass

    def __enter__(self) -> FastPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def usable(conn: Conn | psycopg.AsyncConnection[Any]) -> bool:
    """Whether an idle connection still looks alive, without a round trip.

    An idle autocommit connection has nothing to read; a readable socket means the server
    closed it (a restart, a terminated backend) or sent something unasked, and either way a
    new connection is the safer one to hand out.
    """
    if conn.closed or conn.broken:
        return False
    try:
        # poll, not select: a server holding many sockets has descriptors above 1024.
        poller = select.poll()
        poller.register(conn.fileno(), select.POLLIN)
        return not poller.poll(0)
    except (OSError, ValueError, psycopg.Error):
        return False
