"""The unsubscribe secret on PostgreSQL (rule U1, seed 004 section 10.4): 32 random bytes
generated once where missing, the same for every process, never logged."""

from __future__ import annotations

import base64
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import psycopg
import pytest
from pgworld import SCHEMA

from notify_core.mail import unsubscribe_token, verify_unsubscribe_token
from notify_pg.mail.secret import SECRET_BYTES, unsubscribe_secret

Connect = Callable[[], psycopg.Connection[Any]]


def test_u1_secret_is_32_random_bytes_generated_once_and_kept(connect: Connect) -> None:
    first = connect()
    assert first.execute(f"SELECT count(*) FROM {SCHEMA}.unsubscribe_secret").fetchone() == (0,)
    secret = unsubscribe_secret(first, schema=SCHEMA)
    assert isinstance(secret, bytes) and len(secret) == SECRET_BYTES == 32
    assert secret != bytes(32)
    # Another connection (another process of the instance) reads the same secret, and a token
    # signed by one verifies with the other's.
    again = unsubscribe_secret(connect(), schema=SCHEMA)
    assert again == secret
    token = unsubscribe_token(secret, "ana", ["mention"])
    assert verify_unsubscribe_token(again, token, known_categories={"mention"}) is not None
    assert first.execute(f"SELECT count(*) FROM {SCHEMA}.unsubscribe_secret").fetchone() == (1,)


def test_u1_two_databases_get_different_secrets(
    new_database: Callable[[str | None], str], pg_template: str
) -> None:
    secrets = []
    for _ in range(2):
        with psycopg.connect(new_database(pg_template), autocommit=True) as conn:
            secrets.append(unsubscribe_secret(conn, schema=SCHEMA))
    assert secrets[0] != secrets[1]


def waiting_on_a_lock(conn: psycopg.Connection[Any], pid: int) -> bool:
    row = conn.execute(
        "SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", [pid]
    ).fetchone()
    return row is not None and row[0] == "Lock"


def test_u1_concurrent_creators_get_the_same_secret(connect: Connect) -> None:
    first, second, watcher = connect(), connect(), connect()
    got: list[bytes] = []
    with first.transaction():
        mine = unsubscribe_secret(first, schema=SCHEMA)
        # The second process finds no committed secret and offers its own: its insert waits
        # for the first transaction, then yields to the row that won.
        racer = threading.Thread(
            target=lambda: got.append(unsubscribe_secret(second, schema=SCHEMA))
        )
        racer.start()
        deadline = time.monotonic() + 10
        while not waiting_on_a_lock(watcher, second.info.backend_pid):
            assert time.monotonic() < deadline, "the second creator never waited for the first"
            time.sleep(0.01)
    racer.join(10)
    assert got == [mine]
    assert unsubscribe_secret(watcher, schema=SCHEMA) == mine


def test_u1_secret_never_reaches_a_log(connect: Connect, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG):
        secret = unsubscribe_secret(connect(), schema=SCHEMA)
        unsubscribe_secret(connect(), schema=SCHEMA)
    spellings = {secret.hex(), base64.b64encode(secret).decode(), repr(secret)}
    logged = "\n".join(f"{r.getMessage()} {r.args!r}" for r in caplog.records)
    assert not any(s in logged for s in spellings)
