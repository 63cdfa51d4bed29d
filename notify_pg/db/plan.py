"""Query plans: one piece of database logic run by a blocking or an asyncio connection.

A plan is a generator that yields what it needs from PostgreSQL, one `Step` (a named query
of a `Seam` and its parameters) or one `Atomic` (a plan to run in a transaction) at a time,
is sent the step's result, and returns its value. It does no I/O itself, so one plan serves
both paths:

- `run_plan` runs it on a psycopg ``Connection`` (the library's functions, a WSGI host);
- `run_plan_async` runs it on a psycopg ``AsyncConnection`` (``notify serve``'s ASGI routes,
  an asyncio host), with no thread.

The helpers `all_rows`, `one_row` and `touched` are the plans of one step, used with
``yield from``::

    def unread(seam: Seam, user: str) -> Plan[int]:
        row = yield from one_row(seam, "inbox_unread_count", {"user_id": user, ...})
        return 0 if row is None else int(row[0])

A step that fails is raised in the plan where it yielded it, a psycopg error as the
library's error (`notify_pg.db.errors.translate`), exactly as `Seam`'s own methods raise it:
a plan catches it as blocking code catches the call's (a change refused inside its
transaction step, `InvalidInput`, answered ``400`` by the plan itself).
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping
from typing import Any, Literal, TypeVar, cast

import attrs
import psycopg

from notify_pg.db.errors import translate
from notify_pg.db.seam import Conn, Row, Seam

__all__ = [
    "AsyncConn",
    "Atomic",
    "Blocking",
    "Plan",
    "Step",
    "all_rows",
    "atomic",
    "finished",
    "one_row",
    "port",
    "ports_planned",
    "run_plan",
    "run_plan_async",
    "touched",
]

T = TypeVar("T")

#: The asyncio connection the async runner takes.
AsyncConn = psycopg.AsyncConnection[Any]


@attrs.frozen
class Step:
    """One named query of ``seam`` with its parameters, and what the plan wants of it:
    ``all`` rows, ``one`` (the first row or ``None``) or ``run`` (the rows it touched)."""

    seam: Seam
    name: str
    params: Mapping[str, Any] | None
    mode: Literal["all", "one", "run"]


@attrs.frozen
class Atomic:
    """A plan to run in a transaction (a savepoint inside the caller's); its value is sent."""

    plan: Generator[Step | Atomic | Blocking, Any, Any]


@attrs.frozen
class Blocking:
    """A step only `run_plan` runs: ``call(conn)`` on its blocking connection (a host's port
    that has no plan form); `run_plan_async` refuses it (`TypeError`)."""

    call: Callable[[Conn], Any]


#: A plan of value ``T``: yields steps, is sent their results, returns ``T``.
Plan = Generator[Step | Atomic | Blocking, Any, T]


def all_rows(seam: Seam, name: str, params: Mapping[str, Any] | None = None) -> Plan[list[Row]]:
    """The plan of one query's rows."""
    return cast(list[Row], (yield Step(seam, name, params, "all")))


def one_row(seam: Seam, name: str, params: Mapping[str, Any] | None = None) -> Plan[Row | None]:
    """The plan of one query's first row (``None``: no row)."""
    return cast(Row | None, (yield Step(seam, name, params, "one")))


def touched(seam: Seam, name: str, params: Mapping[str, Any] | None = None) -> Plan[int]:
    """The plan of one statement: the number of rows it touched."""
    return cast(int, (yield Step(seam, name, params, "run")))


def atomic(plan: Plan[T]) -> Plan[T]:
    """The plan ``plan`` run in one transaction: committed at its end, rolled back by an
    exception (inside a caller's transaction, a savepoint of it)."""
    return cast(T, (yield Atomic(plan)))


def finished(plan: Plan[T]) -> T:
    """The value of a plan that needs no step (a bad request answered before any read).

    Raises:
        ValueError: the plan asked for a step.
    """
    try:
        next(plan)
    except StopIteration as done:
        return cast(T, done.value)
    plan.close()
    raise ValueError("the plan needs a connection")


def port(host: object, name: str, *args: Any) -> Plan[Any]:
    """The plan of a host's port ``name``: its plan form (``NAME_plan(*args)``) when the host
    has one, else its blocking method (``NAME(conn, *args)``) as a `Blocking` step."""
    planned = getattr(host, f"{name}_plan", None)
    if planned is not None:
        return (yield from planned(*args))
    method = getattr(host, name)
    return (yield Blocking(lambda conn: method(conn, *args)))


def ports_planned(host: object, names: tuple[str, ...]) -> bool:
    """Whether every port of ``names`` that ``host`` has has a plan form (no host: ``True``):
    then `port` never yields a `Blocking` step for them."""
    return host is None or all(
        hasattr(host, f"{name}_plan") for name in names if hasattr(host, name)
    )


def _query(step: Step) -> tuple[Any, Mapping[str, Any] | None]:
    return step.seam.query(step.name), step.seam.params(step.name, step.params)


def _result(cursor: Any, mode: str) -> Any:
    if mode == "all":
        return cursor.fetchall()
    if mode == "one":
        return cursor.fetchone()
    return cursor.rowcount


class _BlockingRefused(TypeError):
    """`run_plan_async` was given a `Blocking` step (never raised in the plan)."""


def _failure(exc: Exception) -> Exception:
    """A step's failure as the plan sees it: a psycopg error as the library's error."""
    if isinstance(exc, psycopg.Error):
        error = translate(exc)
        error.__cause__ = exc
        return error
    return exc


def run_plan(conn: Conn, plan: Plan[T]) -> T:
    """Run ``plan`` on a blocking connection and return its value.

    A step that fails is raised in the plan where it yielded it (``plan.throw``), so a plan
    catches a failure of its transaction step or of a host's port as blocking code catches
    the call's: `InvalidInput` of a change refused inside its transaction becomes the plan's
    ``400``, and the transaction is rolled back all the same.

    Raises:
        StorageError: a step failed (translated from psycopg's error) and the plan let it be.
    """
    try:
        request = next(plan)
        while True:
            try:
                if isinstance(request, Atomic):
                    with conn.transaction():
                        value = run_plan(conn, request.plan)
                elif isinstance(request, Blocking):
                    value = request.call(conn)
                else:
                    query, params = _query(request)
                    value = _result(conn.execute(query, params), request.mode)
            except Exception as exc:
                request = plan.throw(_failure(exc))
                continue
            request = plan.send(value)
    except StopIteration as done:
        return cast(T, done.value)


async def run_plan_async(conn: AsyncConn, plan: Plan[T]) -> T:
    """Run ``plan`` on an asyncio connection and return its value (`run_plan`'s twin, a
    failed step raised in the plan alike).

    Raises:
        StorageError: a step failed (translated from psycopg's error) and the plan let it be.
        TypeError: the plan yielded a `Blocking` step (a host's port without a plan form).
    """
    try:
        request = next(plan)
        while True:
            if isinstance(request, Blocking):
                plan.close()
                raise _BlockingRefused("a blocking step cannot run on an asyncio connection")
            try:
                if isinstance(request, Atomic):
                    async with conn.transaction():
                        value = await run_plan_async(conn, request.plan)
                else:
                    query, params = _query(request)
                    cursor = await conn.execute(query, params)
                    if request.mode == "all":
                        value = await cursor.fetchall()
                    elif request.mode == "one":
                        value = await cursor.fetchone()
                    else:
                        value = cursor.rowcount
            except _BlockingRefused:  # not the plan's to catch: the wrong runner for it
                plan.close()
                raise
            except Exception as exc:
                request = plan.throw(_failure(exc))
                continue
            request = plan.send(value)
    except StopIteration as done:
        return cast(T, done.value)
