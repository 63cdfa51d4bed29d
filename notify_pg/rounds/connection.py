"""The worker's connection: one session shared by every round of a loop, bounded by timeouts.

Every round of a worker (consumer, due work, push sends, the inbox's fan-out, the mail drain,
the purge) runs on the same connection, in autocommit mode, so that the server's
``idle_in_transaction_session_timeout`` ends a frozen worker's session with everything it
holds, and the loop can drop the connection after any failure and open a new one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta

import psycopg

from notify_pg.db.errors import translate
from notify_pg.db.migrate import DEFAULT_SCHEMA
from notify_pg.db.seam import Conn, Seam

__all__ = ["RoundConnection"]


def _milliseconds(span: timedelta) -> str:
    # PostgreSQL takes a bare number of milliseconds; 0 would switch the limit off.
    return str(max(1, int(span.total_seconds() * 1000)))


class RoundConnection:
    """Opens, bounds, hands out and drops the connection the rounds of one worker share.

    Args:
        connect: opens a new connection in autocommit mode (called again after a failure).
        schema: the library's schema.
        idle_timeout: PostgreSQL's ``idle_in_transaction_session_timeout`` of the session: a
            worker that stops inside a transaction loses its session (and its locks) after it.
        statement_timeout: PostgreSQL's ``statement_timeout`` of the session.
        on_open: called after each new connection is opened and bounded (e.g. the consumer
            round forgets that its cursors were prepared on the old one).
    """

    def __init__(
        self,
        connect: Callable[[], Conn],
        *,
        schema: str = DEFAULT_SCHEMA,
        idle_timeout: timedelta = timedelta(seconds=30),
        statement_timeout: timedelta = timedelta(seconds=60),
        on_open: Callable[[], None] | None = None,
    ) -> None:
        self.connect = connect
        self.idle_timeout = idle_timeout
        self.statement_timeout = statement_timeout
        self.on_open: list[Callable[[], None]] = [] if on_open is None else [on_open]
        self.conn: Conn | None = None
        self._seam = Seam("notify_pg", schema)

    def get(self) -> Conn:
        """Return the open connection, opening and bounding a new one when there is none.

        Raises:
            StorageError: PostgreSQL cannot be reached (``storage_unavailable``) or refused
                the session's limits.
        """
        if self.conn is None or self.conn.closed:
            try:
                conn = self.connect()
            except psycopg.Error as exc:
                raise translate(exc) from exc
            try:
                # A worker that stops working inside a transaction (frozen, paused) must not
                # hold its partition's cursor or its due work: the server ends its session.
                limits = {
                    "idle": _milliseconds(self.idle_timeout),
                    "statement": _milliseconds(self.statement_timeout),
                }
                self._seam.one(conn, "worker_session", limits)
            except BaseException:
                conn.close()
                raise
            self.conn = conn
            for hook in self.on_open:
                hook()
        return self.conn

    @contextmanager
    def transaction(self) -> Iterator[Conn]:
        """Run a block in a transaction of the shared connection.

        Raises:
            StorageError: PostgreSQL failed (translated); a broken connection is forgotten,
                so the next call opens a new one.
        """
        conn = self.get()
        try:
            with conn.transaction():
                yield conn
        except psycopg.Error as exc:
            if conn.broken or conn.closed:
                self.conn = None
            raise translate(exc) from exc
        except BaseException:
            if conn.broken or conn.closed:
                self.conn = None
            raise

    def drop(self) -> None:
        """Close the connection after a failure (the next round opens a new one)."""
        if self.conn is not None:
            try:
                self.conn.close()
            finally:
                self.conn = None

    def close(self) -> None:
        """Close the connection (the loop's end)."""
        if self.conn is not None:
            self.conn.close()
            self.conn = None
