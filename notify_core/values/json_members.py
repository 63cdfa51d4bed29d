"""Reading the members of a parsed JSON object, for the decision-table functions.

Each reader refuses what it does not expect with `InvalidInput`, whose pointer names the member
(formats.md section 1: a case can expect exactly that error), so every table module reads its
input the same way.
"""

from __future__ import annotations

from collections.abc import Mapping

from notify_core.values.errors import InvalidInput

__all__ = ["JsonObject", "as_bool", "as_object", "as_str", "member"]

JsonObject = Mapping[str, object]


def member(obj: JsonObject, name: str, at: str, required: bool = True) -> object:
    """Return member ``name`` of ``obj`` (at pointer ``at``), or None when optional and absent.

    Raises:
        InvalidInput: ``missing_member`` when required and absent; ``null_value`` for a JSON
            null (G5: an absent value is an omitted member).
    """
    if name not in obj:
        if required:
            raise InvalidInput("missing_member", f"missing member {name!r}", f"{at}/{name}")
        return None
    value = obj[name]
    if value is None:
        raise InvalidInput("null_value", f"{name!r} is null: omit it instead", f"{at}/{name}")
    return value


def as_object(value: object, at: str) -> JsonObject:
    """Return ``value`` if it is a JSON object, else raise `InvalidInput` (``invalid_type``)."""
    if not isinstance(value, dict):
        raise InvalidInput("invalid_type", "expected an object", at)
    return value


def as_str(value: object, at: str) -> str:
    """Return ``value`` if it is a string, else raise `InvalidInput` (``invalid_type``)."""
    if not isinstance(value, str):
        raise InvalidInput("invalid_type", "expected a string", at)
    return value


def as_bool(value: object, at: str) -> bool:
    """Return ``value`` if it is a boolean, else raise `InvalidInput` (``invalid_type``)."""
    if not isinstance(value, bool):
        raise InvalidInput("invalid_type", "expected true or false", at)
    return value
