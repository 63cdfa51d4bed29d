"""Opaque JSON values, deeply frozen: what a preference record stores without reading it.

`freeze_opaque` turns a JSON value into tuples and `FrozenMap`s (hashable, immutable);
`json_pointer_token` escapes a key for the JSON pointer of an error (RFC 6901).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from typing import TypeAlias, TypeVar

from notify_core.values.errors import UsageError

__all__ = ["FrozenMap", "Opaque", "freeze_opaque", "json_pointer_token"]

_V_co = TypeVar("_V_co", covariant=True)


class FrozenMap(Mapping[str, _V_co]):
    """An immutable, hashable mapping with string keys, in insertion order.

    Equal to any mapping with the same items (``FrozenMap({"a": 1}) == {"a": 1}``).

    Example:
        >>> m = FrozenMap({"email": "digest"})
        >>> m["email"], len(m), m == {"email": "digest"}
        ('digest', 1, True)
    """

    __slots__ = ("_data",)

    def __init__(self, items: Mapping[str, _V_co] | Iterable[tuple[str, _V_co]] = ()) -> None:
        self._data: dict[str, _V_co] = dict(items)

    def __getitem__(self, key: str) -> _V_co:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __hash__(self) -> int:
        return hash(frozenset(self._data.items()))

    def __repr__(self) -> str:
        return f"FrozenMap({self._data!r})"


#: An opaque JSON value as stored: strings, numbers, booleans, tuples and `FrozenMap`s.
Opaque: TypeAlias = "str | int | float | bool | tuple[Opaque, ...] | FrozenMap[Opaque]"


def json_pointer_token(key: str) -> str:
    """Escape one key as a JSON pointer reference token (RFC 6901: ``~`` and ``/``).

    Example:
        >>> json_pointer_token("a/b~c")
        'a~1b~0c'
    """
    return key.replace("~", "~0").replace("/", "~1")


def freeze_opaque(value: object, pointer: str = "") -> Opaque:
    """Return a deeply immutable copy of a JSON value (lists become tuples, objects `FrozenMap`).

    The store never interprets an opaque value; it only makes sure that what it stores
    cannot change afterwards, whatever the caller does with its own copy (records
    invariant 1).

    Args:
        value: a JSON value: string, integer, finite float, boolean, list or tuple, or a
            mapping with string keys, nested freely.
        pointer: JSON pointer of ``value``, used in errors.

    Raises:
        UsageError: ``None`` anywhere (code ``null_value``: omit the member instead), a
            non-finite float, a non-string key or any other type (code
            ``invalid_opaque_value``), with the pointer of the culprit.

    Example:
        >>> freeze_opaque({"per_day": 10, "days": ["mon"]})
        FrozenMap({'per_day': 10, 'days': ('mon',)})
    """
    if isinstance(value, str | int):  # bool is an int
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise UsageError("invalid_opaque_value", f"not a JSON number: {value!r}", pointer)
        return value
    if isinstance(value, list | tuple):
        return tuple(freeze_opaque(item, f"{pointer}/{i}") for i, item in enumerate(value))
    if isinstance(value, Mapping):
        items: dict[str, Opaque] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise UsageError(
                    "invalid_opaque_value", f"an object key must be a string: {key!r}", pointer
                )
            items[key] = freeze_opaque(item, f"{pointer}/{json_pointer_token(key)}")
        return FrozenMap(items)
    if value is None:
        raise UsageError("null_value", "null is not a value: omit the member instead", pointer)
    raise UsageError("invalid_opaque_value", f"not a JSON value: {type(value).__name__}", pointer)
