"""`FastPool`'s asyncio twin: the connections of ``notify serve``'s native routes.

`AsyncFastPool` lends up to ``size`` autocommit ``psycopg.AsyncConnection`` s to coroutines,
with what an outage costs exactly as `notify_pg.db.pool.FastPool`: a request waits at most
``timeout`` for a slot or a new connection (then `StorageError`, ``storage_unavailable``,
which the app answers ``503`` with ``Retry-After``); no background reconnection with a
back-off, so the first request after the database is back is served; an idle connection
whose socket became readable (a restart closed it) is dropped before it is lent, without a
round trip; the same two log lines, ``database unavailable`` and ``database available``.

A host with its own asyncio pool hands that instead (``psycopg_pool.AsyncConnectionPool``
has the same ``connection`` method), see docs/embedding.md.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import psycopg
from psycopg import pq

from notify_pg.db.errors import StorageError, translate
from notify_pg.db.plan import AsyncConn
from notify_pg.db.pool import DEFAULT_TIMEOUT, usable

__all__ = ["AsyncFastPool"]

_log = logging.getLogger("notify_pg.pool")


class AsyncFastPool:
    """Up to ``size`` autocommit asyncio connections to ``dsn``, lent one per request.

    Args:
        dsn: the libpq connection string.
        size: the most connections open at once (and so requests at the database at once).
        timeout: the most a request waits for a free slot, and for a new connection.
        application_name: what ``pg_stat_activity`` shows for the connections.
    """

    def __init__(
        self,
        dsn: str,
        *,
        size: int = 8,
        timeout: float = DEFAULT_TIMEOUT,
        application_name: str = "notify serve",
    ) -> None:
        if size < 1:
            raise ValueError("a pool holds at least one connection")
        self.dsn = dsn
        self.size = size
        self.timeout = timeout
        self._application_name = application_name
        self._slots = asyncio.Semaphore(size)
        self._idle: list[AsyncConn] = []
        self._down = False
        self._closed = False

    @asynccontextmanager
    async def connection(self, timeout: float | None = None) -> AsyncIterator[AsyncConn]:
        """Lend a connection for the block; it returns to the pool unless it broke.

        Raises:
            StorageError: ``storage_unavailable`` when no slot is free within ``timeout`` or
                the database cannot be reached (connecting gives up after the same time).
        """
        wait = self.timeout if timeout is None else timeout
        if self._closed:
            raise StorageError("storage_unavailable", "the pool is closed", retryable=True)
        try:
            async with asyncio.timeout(wait):
                await self._slots.acquire()
        except TimeoutError:
            raise StorageError(
                "storage_unavailable",
                f"no database connection free within {wait:g} s",
                retryable=True,
            ) from None
        try:
            conn = await self._idle_connection() or await self._connect(wait)
            try:
                yield conn
            finally:
                await self._give_back(conn)
        finally:
            self._slots.release()

    async def _idle_connection(self) -> AsyncConn | None:
        while self._idle:
            conn = self._idle.pop()
            if usable(conn):
                return conn
            await conn.close()
        return None

    async def _connect(self, wait: float) -> AsyncConn:
        try:
            async with asyncio.timeout(max(wait, 0.1)):
                conn = await psycopg.AsyncConnection.connect(
                    self.dsn,
                    autocommit=True,
                    connect_timeout=max(2, round(wait)),
                    application_name=self._application_name,
                )
        except (psycopg.Error, TimeoutError) as exc:
            if isinstance(exc, psycopg.Error):
                error = translate(exc)
            else:
                error = StorageError("storage_unavailable", "connecting timed out", retryable=True)
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

    async def _give_back(self, conn: AsyncConn) -> None:
        # A connection left in a transaction or broken by the block is not reused.
        if (
            self._closed
            or conn.closed
            or conn.broken
            or conn.info.transaction_status != pq.TransactionStatus.IDLE
        ):
            await conn.close()
            return
        self._idle.append(conn)

    async def close(self) -> None:
        """Close the idle connections; those lent are closed when they come back."""
        self._closed = True
        idle, self._idle = self._idle, []
        for conn in idle:
            await conn.close()
