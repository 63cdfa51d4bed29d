"""Keeping passwords out of what the command line prints.

A DSN (``--dsn``, ``NOTIFY_DSN``, ``--from-pg``) or an SMTP URL may carry a password, and
libpq and the standard library repeat the whole connection string in some of their errors
(``postgresql://u:PASSWORD@[bad/db``). Every option that takes such text hands it to
`remember` as it is parsed; every one-line error (`notify_cli.options.BadInput`) and every log
line of a long-running command passes through `redact`, which masks the passwords it was told
about and any ``scheme://user:password@`` or ``password=...`` it finds.
"""

from __future__ import annotations

import re
from typing import Final
from urllib.parse import unquote

__all__ = ["MASK", "redact", "remember"]

#: What a password becomes in a message.
MASK: Final = "***"
#: ``scheme://user:password@``: group 1 up to the colon, group 2 the password.
_URI: Final = re.compile(r"([a-z][a-z0-9+.-]*://[^/?#@\s:]*:)([^@\s]*)@", re.IGNORECASE)
#: libpq's ``password=...`` (bare or quoted), as in a key-value DSN.
_KEYWORD: Final = re.compile(r"(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s'\"]+)", re.IGNORECASE)
#: Shorter passwords are masked where they stand in a DSN, not wherever the letters occur.
_LITERAL_MIN: Final = 3

_seen: set[str] = set()


def remember(text: str) -> None:
    """Note the passwords ``text`` (a DSN or a URL) carries, so that `redact` masks them."""
    found = [m.group(2) for m in _URI.finditer(text)]
    found += [m.group(2).strip("'") for m in _KEYWORD.finditer(text)]
    for password in found:
        for form in {password, unquote(password)}:
            if len(form) >= _LITERAL_MIN:
                _seen.add(form)


def redact(text: str) -> str:
    """Return ``text`` with every password it holds masked (`MASK`)."""
    for secret in sorted(_seen, key=len, reverse=True):  # longest first: no partial leftovers
        text = text.replace(secret, MASK)
    text = _URI.sub(rf"\g<1>{MASK}@", text)
    return _KEYWORD.sub(rf"\g<1>{MASK}", text)
