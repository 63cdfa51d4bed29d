"""A site's link templates (rule E6): where a mail's buttons and footer links go.

Each site may set six templates, each with a default that reproduces the fixed paths of
before: ``unsubscribe``, ``manage``, ``inbox``, ``page``, ``comment`` (a page's talk tab with
the comment anchored) and ``review``. A host that mounts its routes elsewhere (a wiki that serves
``/_api/notifications/unsubscribe`` and ``/_profile/notifications``, say) sets templates in the
site's settings and writes no code.

A template is an absolute ``https://`` or ``http://`` URL, or a path starting with ``/`` (or
with ``{path}``, which expands to one) that is read against the site's origin
(``https://HOST``, or ``http://`` for a site served over plain HTTP). Placeholders are
``str.format`` fields: ``{host}`` in every template, and ``{token}`` (unsubscribe,
required), ``{path}`` (page, comment), ``{comment}`` (comment) and ``{submission}`` (review).
``{path}`` expands to the page's path with one leading ``/`` and
is percent-encoded as a path; ``{comment}`` and ``{submission}`` are percent-encoded whole.

The event log checks templates with `links_error` (it must not import the mail), and the
mail expands them with `expand_link`. Pure: strings in, strings out.
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from typing import Final

import attrs

from notify_core.values.errors import InvalidInput

__all__ = [
    "DEFAULT_LINKS",
    "LINK_NAMES",
    "LinkTemplates",
    "expand_link",
    "link_path",
    "link_templates",
    "links_error",
]

#: The link templates of a site that sets none (E6), each as a path on the site's origin.
DEFAULT_LINKS: Final[Mapping[str, str]] = {
    "unsubscribe": "/notifications/unsubscribe?t={token}",
    "manage": "/notifications/settings",
    "inbox": "/notifications",
    "page": "{path}",
    "comment": "{path}#comment-{comment}",
    "review": "/notifications/reviews/{submission}",
}
#: The names of the templates, in the order of the formats.
LINK_NAMES: Final = tuple(DEFAULT_LINKS)

#: The placeholders each template may use, and those it must use.
_ALLOWED: Final[Mapping[str, frozenset[str]]] = {
    "unsubscribe": frozenset({"host", "token"}),
    "manage": frozenset({"host"}),
    "inbox": frozenset({"host"}),
    "page": frozenset({"host", "path"}),
    "comment": frozenset({"host", "path", "comment"}),
    "review": frozenset({"host", "submission"}),
}
_REQUIRED: Final[Mapping[str, frozenset[str]]] = {
    # Without its token an unsubscribe link cannot say whom it is for (U1); the others may
    # well go to a fixed page (a host's own review queue, say).
    "unsubscribe": frozenset({"token"}),
}
_UNRESERVED: Final = frozenset(string.ascii_letters + string.digits + "-._~")
_FORMATTER: Final = string.Formatter()


def _fields(template: str) -> list[str] | None:
    """The placeholders of a template, or ``None`` when it is no valid format string (or
    uses a conversion, a format spec, an index or an attribute)."""
    try:
        parsed = list(_FORMATTER.parse(template))
    except ValueError:
        return None
    fields = []
    for _literal, field, spec, conversion in parsed:
        if field is None:
            continue
        if spec or conversion or not field.isidentifier():
            return None
        fields.append(field)
    return fields


def links_error(value: object) -> str | None:
    """Return what is wrong with a ``links`` member of a site (``None``: nothing).

    A JSON object whose members are template names, each an absolute ``http(s)://`` URL or a
    path from ``/``, with only its own placeholders (and the unsubscribe one with ``{token}``);
    an empty string stands for the default.
    """
    if not isinstance(value, dict):
        return "links must be an object"
    for name, template in value.items():
        if name not in _ALLOWED:
            return f"unknown link template {name!r}"
        if template == "":
            continue  # back to the default (a site.updated undoing its template)
        # ``{path}`` expands to a path from /, so a template may start with it.
        starts = ("/", "https://", "http://", "{path}")
        if not isinstance(template, str) or not template.startswith(starts):
            return f"link template {name!r} must be a URL or a path from /"
        if template.startswith("//") or any(c.isspace() for c in template):
            return f"link template {name!r} must be a URL or a path from /"
        fields = _fields(template)
        if fields is None or not set(fields) <= _ALLOWED[name]:
            allowed = ", ".join(f"{{{f}}}" for f in sorted(_ALLOWED[name]))
            return f"link template {name!r} may only use {allowed}"
        missing = _REQUIRED.get(name, frozenset()) - set(fields)
        if missing:
            return f"link template {name!r} must use {{{min(missing)}}}"
    return None


@attrs.frozen
class LinkTemplates:
    """A site's link templates: the defaults of E6 overlaid with those the site sets.

    Build it with `link_templates`; ``own`` holds the site's own, checked.
    """

    own: Mapping[str, str] = attrs.field(factory=dict)

    def template(self, name: str) -> str:
        """Return the template of a link, the site's own or the default."""
        return self.own.get(name) or DEFAULT_LINKS[name]


def link_templates(value: Mapping[str, str] | None) -> LinkTemplates:
    """Return a site's templates from its ``links`` (absent: every default).

    Raises:
        InvalidInput: a template `links_error` refuses (code ``invalid_links``).
    """
    if not value:
        return LinkTemplates()
    error = links_error(dict(value))
    if error is not None:
        raise InvalidInput("invalid_links", error, "/links")
    return LinkTemplates(own={name: value[name] for name in sorted(value) if value[name]})


def _quote(text: str, safe: frozenset[str]) -> str:
    # Percent-encode everything outside ``safe``, as UTF-8 (RFC 3986); a lone surrogate of a
    # host's text is written as its bytes rather than failing the mail.
    out = []
    for char in text:
        if char in safe:
            out.append(char)
        else:
            out.extend(f"%{byte:02X}" for byte in char.encode("utf-8", "surrogatepass"))
    return "".join(out)


_PATH_SAFE: Final = _UNRESERVED | {"/"}


def expand_link(
    templates: LinkTemplates,
    name: str,
    *,
    host: str,
    https: bool,
    token: str = "",
    path: str = "",
    comment: str = "",
    submission: str = "",
) -> str:
    """Return one link of a mail: the site's template with its placeholders filled in.

    Example:
        >>> expand_link(LinkTemplates(), "page", host="wiki.example.org", https=True,
        ...             path="ops/run book")
        'https://wiki.example.org/ops/run%20book'
    """
    values = {
        "host": host,
        "token": token,  # base64url and one dot: nothing to escape in a query
        "path": "/" + _quote(path.lstrip("/"), _PATH_SAFE),
        "comment": _quote(comment, _UNRESERVED),
        "submission": _quote(submission, _UNRESERVED),
    }
    link = templates.template(name).format_map(values)
    if link.startswith("/"):
        return f"{'https' if https else 'http'}://{host}{link}"
    return link


def link_path(template: str) -> str | None:
    """Return the path a template's links are served on (``None``: it varies by link).

    What a web app mounts for a site's template: the one-click unsubscribe route of
    ``notify serve`` follows the sites' ``unsubscribe`` templates (U3, E6).

    Example:
        >>> link_path("https://{host}/_api/notifications/unsubscribe?t={token}")
        '/_api/notifications/unsubscribe'
    """
    rest = template
    if "://" in rest:
        rest = rest.split("://", 1)[1]
        rest = "/" + rest.split("/", 1)[1] if "/" in rest else "/"
    path = rest.split("?", 1)[0].split("#", 1)[0]
    if not path.startswith("/") or "{" in path or "}" in path:
        return None
    return path
