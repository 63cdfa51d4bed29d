"""The string catalogues of notification mails, one module per language (E6).

A language is one module here with the keys of `en` (tests check that every catalogue has
exactly those keys and the same placeholders).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from notify_core.mail.catalogues import de, en

__all__ = ["CATALOGUES", "FALLBACK_LOCALE"]

#: Language code -> catalogue.
CATALOGUES: Final[Mapping[str, Mapping[str, str]]] = {"en": en.STRINGS, "de": de.STRINGS}
#: The language of last resort (E6: the person's, else the site's primary, else English).
FALLBACK_LOCALE: Final = "en"
