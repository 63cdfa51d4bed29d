"""The narrow seam between the repositories and psycopg.

Repositories never call psycopg directly: they name a query of the package's ``.sql`` files
and hand its parameters to a `Seam`. The seam

- loads the named queries once (`load_queries`) into a ``dict[str, LiteralString]``;
- puts the schema name in through `psycopg.sql.Identifier` (never by string formatting);
- passes every value as a parameter;
- translates psycopg's errors into the library's errors in one place
  (`notify_pg.db.errors.translate`).

Query files hold blocks of this shape::

    -- name: list_preferences
    -- The rows of one person, in key order.
    SELECT ... FROM {schema}.notification_preferences WHERE user_id = %(user_id)s ...;

``{schema}`` is the only placeholder that is not a parameter. A block whose description is
followed by ``-- extends: OTHER`` is the text of ``OTHER`` (an earlier block of the same file)
with its own body appended: one statement held once, in two forms (``inbox_upsert`` and the
same statement with a ``RETURNING`` clause).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from importlib import resources
from typing import Any, LiteralString

import psycopg
from psycopg import sql

from notify_pg.db.errors import translate

__all__ = [
    "Conn",
    "Row",
    "Seam",
    "array_casts",
    "array_element",
    "array_literal",
    "load_queries",
    "parse_queries",
    "text_array",
    "trusted_sql",
]

#: The connection type every public function takes.
Conn = psycopg.Connection[Any]
#: One result row, as psycopg's default row factory returns it.
Row = tuple[Any, ...]

_NAME = re.compile(r"^-- name: ([a-z_][a-z0-9_]*)\s*$")
#: A parameter of a query and the cast that follows it, if any (``%(ids)s::text[]``).
_PARAMETER = re.compile(r"%\(([a-z_][a-z0-9_]*)\)s(::[a-z]+\[\])?")
#: The array casts whose lists `Seam` passes as one literal, and the element types they take.
_LITERAL_CASTS = {"::text[]": str, "::bigint[]": int, "::integer[]": int}
_EXTENDS = re.compile(r"^-- extends: ([a-z_][a-z0-9_]*)\s*$")


def array_element(text: str) -> str:
    """One element of a PostgreSQL array literal, quoted: read back as it is, whatever it holds."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def text_array(items: Sequence[str]) -> str:
    """A PostgreSQL array literal of strings, for a ``%(name)s::text[]`` parameter.

    psycopg dumps a list element by element in Python; one string built here costs about half
    as much, and the server reads it as fast. Ids seldom hold a quote or a backslash: then the
    elements are only joined (NUL, which no PostgreSQL text holds, marks their bounds).
    """
    if not items:
        return "{}"
    body = "\0".join(items)
    if '"' in body or "\\" in body or body.count("\0") != len(items) - 1:
        return "{" + ",".join([array_element(t) for t in items]) + "}"
    return '{"' + body.replace("\0", '","') + '"}'


def array_casts(text: str) -> dict[str, str]:
    """The parameters of a query text that appear only with one array cast of
    ``_LITERAL_CASTS`` (``%(ids)s::text[]`` everywhere it is named), with that cast."""
    casts: dict[str, set[str]] = {}
    for match in _PARAMETER.finditer(text):
        casts.setdefault(match[1], set()).add(match[2] or "")
    return {
        name: cast
        for name, found in casts.items()
        if len(found) == 1 and (cast := next(iter(found))) in _LITERAL_CASTS
    }


def array_literal(value: object, cast: str) -> str | None:
    """A list as one PostgreSQL array literal for a parameter of that ``cast``
    (`array_casts`), or ``None`` when it is not a list of elements of exactly its type
    (``str`` for ``::text[]``, ``int`` for the integer arrays; no ``None``, no subclass).

    psycopg dumps a list element by element in Python (a regular expression per string):
    one literal costs a fraction of that for the lists of hundreds of ids a round passes.
    """
    if type(value) is not list:
        return None
    kind = _LITERAL_CASTS[cast]
    if value and set(map(type, value)) != {kind}:
        return None
    if kind is str:
        return text_array(value)
    return "{" + ",".join(map(str, value)) + "}"


def trusted_sql(text: str) -> LiteralString:
    """Mark SQL text read from a file shipped in the package as trusted query text.

    Only texts of the package's own ``.sql`` files may pass through here, never input: they
    are the literal strings of the program, stored beside the code instead of inside it.
    """
    return text  # type: ignore[return-value,unused-ignore]


def parse_queries(text: str, origin: str = "<sql>") -> dict[str, str]:
    """Split a query file into its named blocks.

    Each block starts with ``-- name: NAME``, followed by one comment line describing it. A
    ``-- extends: BASE`` line after the description makes the block BASE's text (a block
    defined earlier in the file) followed by the block's own body.

    Raises:
        ValueError: a block without description or body, a repeated name, an extended block
            not defined before, or text before the first block (a packaging mistake, caught by
            the tests).
    """
    out: dict[str, str] = {}
    name: str | None = None
    body: list[str] = []

    def close() -> None:
        if name is None:
            return
        if len(body) < 2 or not body[0].startswith("-- ") or not "".join(body[1:]).strip():
            raise ValueError(f"{origin}: query {name!r} needs a one-line description and a body")
        if name in out:
            raise ValueError(f"{origin}: query {name!r} is defined twice")
        extends = _EXTENDS.match(body[1])
        if extends is None:
            out[name] = "\n".join(body[1:]).strip().rstrip(";")
            return
        base, own = extends[1], "\n".join(body[2:]).strip().rstrip(";")
        if base not in out:
            raise ValueError(f"{origin}: query {name!r} extends {base!r}, not defined before it")
        if not own:
            raise ValueError(f"{origin}: query {name!r} needs a body after its extends line")
        out[name] = f"{out[base]}\n{own}"

    for line in text.splitlines():
        m = _NAME.match(line)
        if m:
            close()
            name, body = m[1], []
        elif name is None:
            if line.strip() and not line.startswith("--"):
                raise ValueError(f"{origin}: text before the first named query")
        else:
            body.append(line)
    close()
    return out


@functools.cache
def load_queries(package: str, folder: str = "queries") -> Mapping[str, LiteralString]:
    """Load every ``.sql`` file of ``package/folder`` once into one mapping of named queries.

    The texts come from files shipped inside the package, never from input, which is why they
    may be typed ``LiteralString``.
    """
    out: dict[str, LiteralString] = {}
    for entry in sorted(resources.files(package).joinpath(folder).iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".sql"):
            continue
        for name, text in parse_queries(entry.read_text("utf-8"), entry.name).items():
            if name in out:
                raise ValueError(f"{entry.name}: query {name!r} is defined in two files")
            out[name] = trusted_sql(text)
    return out


class Seam:
    """Named queries of one package, bound to one schema, with psycopg errors translated.

    Args:
        package: the package whose ``queries`` folder holds the ``.sql`` files.
        schema: the schema the queries' ``{schema}`` stands for.

    Example:
        >>> seam = Seam("notify_pg", "notify")
        >>> "upsert_preference" in seam.names()
        True
    """

    def __init__(self, package: str, schema: str) -> None:
        if not schema:
            raise ValueError("the schema name must not be empty")
        self.schema = schema
        self._texts = load_queries(package)
        self._composed: dict[str, sql.Composed] = {}
        self._casts: dict[str, dict[str, str]] = {}

    def names(self) -> frozenset[str]:
        """Return the names of the loaded queries."""
        return frozenset(self._texts)

    def query(self, name: str) -> sql.Composed:
        """Return the named query with the schema put in (composed once per seam)."""
        composed = self._composed.get(name)
        if composed is None:
            composed = sql.SQL(self._texts[name]).format(schema=sql.Identifier(self.schema))
            self._composed[name] = composed
        return composed

    def params(self, name: str, params: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
        """The parameters of a named query as they are sent: each list for a parameter the
        query only casts to a text or integer array, one array literal (`array_literal`)."""
        if not params:
            return params
        casts = self._casts.get(name)
        if casts is None:
            casts = self._casts[name] = array_casts(self._texts[name])
        out: dict[str, Any] | None = None
        for key, cast in casts.items():
            literal = array_literal(params.get(key), cast)
            if literal is not None:
                if out is None:
                    out = dict(params)
                out[key] = literal
        return params if out is None else out

    @contextmanager
    def translated(self) -> Iterator[None]:
        """Run a block and turn any psycopg error raised in it into the library's error."""
        try:
            yield
        except psycopg.Error as exc:
            raise translate(exc) from exc

    @contextmanager
    def transaction(self, conn: Conn) -> Iterator[None]:
        """Run a block in a transaction: a new one, or a savepoint of the caller's.

        On an idle connection the block commits at its end; inside a caller's transaction it
        becomes part of it (the caller commits). An exception rolls the block back.
        """
        with self.translated(), conn.transaction():
            yield

    def all(self, conn: Conn, name: str, params: Mapping[str, Any] | None = None) -> list[Row]:
        """Run a named query and return all rows."""
        with self.translated():
            return conn.execute(self.query(name), self.params(name, params)).fetchall()

    def later(
        self, conn: Conn, name: str, params: Mapping[str, Any] | None = None
    ) -> Callable[[], list[Row]]:
        """Run a named query now; return a function that reads its rows when called.

        The server's work and the transfer are done on return; what waits is psycopg's
        conversion of the rows into Python values, which a caller can then run while the
        server works on something else (the result stays with its own cursor).
        """
        with self.translated():
            cursor = conn.execute(self.query(name), self.params(name, params))

        def rows() -> list[Row]:
            with self.translated():
                return cursor.fetchall()

        return rows

    def one(self, conn: Conn, name: str, params: Mapping[str, Any] | None = None) -> Row | None:
        """Run a named query and return its first row, or ``None``."""
        with self.translated():
            return conn.execute(self.query(name), self.params(name, params)).fetchone()

    def run(self, conn: Conn, name: str, params: Mapping[str, Any] | None = None) -> int:
        """Run a named statement and return the number of rows it touched."""
        with self.translated():
            return conn.execute(self.query(name), self.params(name, params)).rowcount

    def one_each(self, conn: Conn, name: str, params: Sequence[Mapping[str, Any]]) -> list[Row]:
        """Run a named query once per parameter set, in order (pipelined by psycopg), and
        return the first row of each."""
        rows: list[Row] = []
        if not params:
            return rows
        with self.translated(), conn.cursor() as cur:
            cur.executemany(self.query(name), params, returning=True)
            while True:
                row = cur.fetchone()
                assert row is not None, f"{name} returned no row"
                rows.append(row)
                if not cur.nextset():
                    break
        return rows

    def run_many(self, conn: Conn, name: str, params: Sequence[Mapping[str, Any]]) -> None:
        """Run a named statement once per parameter set, in order (pipelined by psycopg)."""
        if not params:
            return
        with self.translated(), conn.cursor() as cur:
            cur.executemany(self.query(name), params)
