"""Griffe extensions for the API reference (loaded by mkdocs.yml; not part of the package).

``AttrsInit``: griffe reads the source without importing it, so it does not see the
``__init__`` that ``@attrs.frozen`` / ``@attrs.define`` generate at import time, and the
``Args:`` of a class docstring would name parameters that "do not appear in the signature".
This builds that ``__init__`` as attrs does: the annotated class attributes in order,
keyword-only when the decorator or the field says ``kw_only=True``, without ``init=False``
fields, with the leading underscore of a private name dropped (or the field's ``alias``), and
with the field's default.

``ExampleSections``: a Google-style ``Example:`` section (singular, as the docstrings of
notify write it) is read like ``Examples:``, so its doctest lines render as code instead of
as a quotation.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_DECORATORS = frozenset(
    {"attrs.frozen", "attrs.define", "attrs.mutable", "attr.s", "attr.attrs", "attr.define"}
)
_FIELDS = frozenset({"attrs.field", "attr.ib", "attr.attrib", "attr.field"})


def _call_arguments(expr: object) -> dict[str, Any]:
    if not isinstance(expr, griffe.ExprCall):
        return {}
    return {arg.name: arg.value for arg in expr.arguments if isinstance(arg, griffe.ExprKeyword)}


def _attrs_decorator(cls: griffe.Class) -> griffe.Expr | None:
    for decorator in cls.decorators:
        value = decorator.value
        if isinstance(value, griffe.Expr):
            path = value.canonical_path
            if path in _DECORATORS:
                return value
    return None


def _parameter(member: griffe.Attribute, kw_only: bool) -> griffe.Parameter | None:
    value = member.value
    field = (
        _call_arguments(value)
        if isinstance(value, griffe.ExprCall) and value.canonical_path in _FIELDS
        else None
    )
    if field is not None and str(field.get("init")) == "False":
        return None
    if field is None:
        default = value
    elif "default" in field:
        default = field["default"]
    elif "factory" in field:
        default = griffe.ExprCall(function=field["factory"], arguments=[])
    else:
        default = None
    alias = field.get("alias") if field else None
    name = str(alias).strip("'\"") if alias is not None else member.name.lstrip("_")
    kw = kw_only or (field is not None and str(field.get("kw_only")) == "True")
    kind = griffe.ParameterKind.keyword_only if kw else griffe.ParameterKind.positional_or_keyword
    return griffe.Parameter(
        name, annotation=member.annotation, kind=kind, default=default, docstring=member.docstring
    )


class AttrsInit(griffe.Extension):
    """Give every attrs class without an explicit ``__init__`` the one attrs generates."""

    def on_class_members(self, *, cls: griffe.Class, **kwargs: Any) -> None:
        """Add ``__init__`` once the class's members are known."""
        decorator = _attrs_decorator(cls)
        if decorator is None or "__init__" in cls.members:
            return
        kw_only = str(_call_arguments(decorator).get("kw_only")) == "True"
        parameters = [
            griffe.Parameter("self", kind=griffe.ParameterKind.positional_or_keyword),
        ]
        for member in cls.members.values():
            if not isinstance(member, griffe.Attribute) or member.annotation is None:
                continue
            if "property" in member.labels:
                continue
            parameter = _parameter(member, kw_only)
            if parameter is not None:
                parameters.append(parameter)
        init = griffe.Function(
            "__init__",
            lineno=0,
            endlineno=0,
            parent=cls,
            parameters=griffe.Parameters(*parameters),
            returns="None",
        )
        cls.set_member("__init__", init)


_EXAMPLE_TITLE = re.compile(r"^(\s*)Example:[ \t]*$", re.MULTILINE)


class ExampleSections(griffe.Extension):
    """Read a docstring's ``Example:`` section as an ``Examples:`` section."""

    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        """Retitle the section before the docstring is parsed (parsing is lazy)."""
        docstring = obj.docstring
        if docstring is not None and "Example:" in docstring.value:
            docstring.value = _EXAMPLE_TITLE.sub(r"\1Examples:", docstring.value)
