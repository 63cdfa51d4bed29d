"""Query plans (notify_pg.db.plan): one plan, the same answers on a blocking and on an asyncio
connection; a transaction step commits or rolls back as a block; errors are the library's."""

from __future__ import annotations

import asyncio
from typing import Any

import psycopg
import pytest
from pgworld import SCHEMA
from webworld import edit, make_wiki

from notify_pg import StorageError
from notify_pg.db.plan import (
    Plan,
    all_rows,
    atomic,
    finished,
    one_row,
    run_plan,
    run_plan_async,
    touched,
)
from notify_pg.db.seam import Seam
from notify_pg.http import handlers
from notify_pg.http.shown import plans_ready
from notify_pg.mail.secret import unsubscribe_secret, unsubscribe_secret_plan

Conn = psycopg.Connection[Any]


def both(dsn: str, conn: Conn, make: Any) -> tuple[Any, Any]:
    """The value of ``make()``'s plan run blocking on ``conn`` and async on a new connection."""

    async def run_async() -> Any:
        async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as aconn:
            return await run_plan_async(aconn, make())

    return run_plan(conn, make()), asyncio.run(run_async())


def test_h1_every_inbox_answer_is_the_same_blocking_and_async(db_dsn: str, conn: Conn) -> None:
    wiki = make_wiki(conn)
    for n in range(3):
        edit(conn, wiki, n, page="p1")
    plans = [
        lambda: handlers.inbox_list_plan("ana", site="s1", schema=SCHEMA),
        lambda: handlers.inbox_list_plan("ana", query="unread=1&cursor=x", schema=SCHEMA),
        lambda: handlers.inbox_summary_plan("ana", site="s1", schema=SCHEMA),
        lambda: handlers.inbox_summary_plan("bob", if_none_match="*", schema=SCHEMA),
    ]
    for make in plans:
        blocking, native = both(db_dsn, conn, make)
        assert blocking == native
    first, second = both(db_dsn, conn, lambda: unsubscribe_secret_plan(schema=SCHEMA))
    assert first == second == unsubscribe_secret(conn, schema=SCHEMA) and len(first) == 32


def rollback_after_insert(seam: Seam) -> Plan[int]:
    yield from touched(seam, "unsubscribe_secret_create", {"secret": b"x" * 32})
    raise RuntimeError("after the write")


def test_an_atomic_step_rolls_back_on_an_exception_and_commits_otherwise(
    db_dsn: str, conn: Conn
) -> None:
    seam = Seam("notify_pg", SCHEMA)
    conn.execute(f"DELETE FROM {SCHEMA}.unsubscribe_secret")
    with pytest.raises(RuntimeError):
        run_plan(conn, atomic(rollback_after_insert(seam)))
    assert run_plan(conn, one_row(seam, "unsubscribe_secret_get")) is None

    async def async_rollback() -> None:
        async with await psycopg.AsyncConnection.connect(db_dsn, autocommit=True) as aconn:
            await run_plan_async(aconn, atomic(rollback_after_insert(seam)))

    with pytest.raises(RuntimeError):
        asyncio.run(async_rollback())
    assert run_plan(conn, all_rows(seam, "unsubscribe_secret_get")) == []
    created = run_plan(
        conn, atomic(touched(seam, "unsubscribe_secret_create", {"secret": b"y" * 32}))
    )
    assert created == 1
    assert run_plan(conn, one_row(seam, "unsubscribe_secret_get")) == (b"y" * 32,)


def test_a_failed_step_is_the_librarys_error_on_both_paths(db_dsn: str, conn: Conn) -> None:
    seam = Seam("notify_pg", "no_such_schema")
    with pytest.raises(StorageError) as info:
        run_plan(conn, one_row(seam, "unsubscribe_secret_get"))
    assert info.value.code == "schema_missing"

    async def run_async() -> None:
        async with await psycopg.AsyncConnection.connect(db_dsn, autocommit=True) as aconn:
            await run_plan_async(aconn, one_row(seam, "unsubscribe_secret_get"))

    with pytest.raises(StorageError) as again:
        asyncio.run(run_async())
    assert again.value.code == "schema_missing"


def caught(seam: Seam, missing: Seam) -> Plan[list[str]]:
    """A plan that answers its steps' failures itself, as blocking code catches a call's."""
    seen = []
    try:
        yield from atomic(rollback_after_insert(seam))
    except RuntimeError as exc:
        seen.append(str(exc))
    try:
        yield from one_row(missing, "unsubscribe_secret_get")
    except StorageError as exc:
        seen.append(exc.code)
    rows = yield from all_rows(seam, "unsubscribe_secret_get")
    seen.append(f"{len(rows)} rows")
    return seen


def test_a_failed_step_is_raised_in_the_plan_where_it_can_be_answered(
    db_dsn: str, conn: Conn
) -> None:
    """A transaction step that raises (rolled back) and a query that fails are raised at the
    plan's ``yield``, on both paths: the plan goes on with its answer."""
    seam, missing = Seam("notify_pg", SCHEMA), Seam("notify_pg", "no_such_schema")
    conn.execute(f"DELETE FROM {SCHEMA}.unsubscribe_secret")
    blocking, native = both(db_dsn, conn, lambda: caught(seam, missing))
    assert blocking == native == ["after the write", "schema_missing", "0 rows"]


def test_finished_answers_a_plan_without_steps_and_refuses_one_with_steps() -> None:
    bad = handlers.inbox_list_plan("ana", query=b"cursor=nope", schema=SCHEMA)
    assert finished(bad).status == 400
    with pytest.raises(ValueError, match="needs a connection"):
        finished(handlers.inbox_list_plan("ana", schema=SCHEMA))


class BlockingWiki:
    """A host whose ports have no plan form (only the blocking methods)."""

    def __init__(self, wiki: Any) -> None:
        self.wiki = wiki

    def __getattr__(self, name: str) -> Any:
        if name.endswith("_plan"):
            raise AttributeError(name)
        return getattr(self.wiki, name)


def test_a_hosts_blocking_port_runs_on_a_blocking_connection_and_is_refused_async(
    db_dsn: str, conn: Conn
) -> None:
    wiki = make_wiki(conn)
    edit(conn, wiki)
    host = BlockingWiki(wiki)
    assert not plans_ready(host) and plans_ready(wiki) and plans_ready(None)
    blocking = run_plan(conn, handlers.inbox_list_plan("ana", site="s1", host=host, schema=SCHEMA))
    planned = run_plan(conn, handlers.inbox_list_plan("ana", site="s1", host=wiki, schema=SCHEMA))
    assert blocking == planned and blocking.status == 200

    async def run_async() -> None:
        async with await psycopg.AsyncConnection.connect(db_dsn, autocommit=True) as aconn:
            plan = handlers.inbox_list_plan("ana", site="s1", host=host, schema=SCHEMA)
            await run_plan_async(aconn, plan)

    with pytest.raises(TypeError, match="blocking step"):
        asyncio.run(run_async())
