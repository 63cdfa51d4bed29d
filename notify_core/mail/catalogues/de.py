"""German strings of notification mails (E6): the keys of the English catalogue."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

__all__ = ["STRINGS"]

#: The German catalogue.
STRINGS: Final[Mapping[str, str]] = {
    "watched_page": "{actor} hat {title} geändert",
    "watched_page.edited": "{actor} hat {title} bearbeitet",
    "watched_page.published": "{actor} hat {title} veröffentlicht",
    "watched_page.unpublished": "{actor} hat die Veröffentlichung von {title} zurückgenommen",
    "watched_page.scheduled": "{actor} hat {title} zur Veröffentlichung eingeplant",
    "watched_page.moved": "{actor} hat {title} verschoben",
    "watched_page.deleted": "{actor} hat {title} gelöscht",
    "watched_page_comment": "{actor} hat {title} kommentiert",
    "watched_page_comment.new": "{actor} hat {title} kommentiert",
    "watched_page_comment.edited": "{actor} hat einen Kommentar zu {title} bearbeitet",
    "comment_reply": "{actor} hat auf deinen Kommentar zu {title} geantwortet",
    "comment_reply.new": "{actor} hat auf deinen Kommentar zu {title} geantwortet",
    "comment_reply.edited": "{actor} hat eine Antwort auf deinen Kommentar zu {title} bearbeitet",
    "mention": "{actor} hat dich auf {title} erwähnt",
    "mention.new": "{actor} hat dich auf {title} erwähnt",
    "mention.edited": "{actor} hat dich auf {title} erwähnt",
    "review_requested": "{actor} bittet dich um eine Prüfung von {title}",
    "review_requested.new": "{actor} bittet dich um eine Prüfung von {title}",
    "review_requested.updated": "{actor} hat eine Einreichung zu {title} zur Prüfung aktualisiert",
    "page_created": "{actor} hat {title} angelegt",
    "page_created.created": "{actor} hat {title} angelegt",
    "page_deleted": "{actor} hat {title} gelöscht",
    "page_deleted.deleted": "{actor} hat {title} gelöscht",
    "page_created.created.draft": "{title} wurde von {actor} als Entwurf angelegt",
    "sync": "{title} wurde per Speichersynchronisierung geändert",
    "sync.watched_page.edited": "{title} wurde per Speichersynchronisierung bearbeitet",
    "sync.watched_page.published": "{title} wurde per Speichersynchronisierung veröffentlicht",
    "sync.watched_page.unpublished": (
        "Die Veröffentlichung von {title} wurde per Speichersynchronisierung zurückgenommen"
    ),
    "sync.watched_page.scheduled": (
        "{title} wurde per Speichersynchronisierung zur Veröffentlichung eingeplant"
    ),
    "sync.watched_page.moved": "{title} wurde per Speichersynchronisierung verschoben",
    "sync.watched_page.deleted": "{title} wurde per Speichersynchronisierung gelöscht",
    "sync.page_created.created": "{title} wurde per Speichersynchronisierung angelegt",
    "sync.page_created.created.draft": (
        "{title} wurde per Speichersynchronisierung als Entwurf angelegt"
    ),
    "sync.page_deleted.deleted": "{title} wurde per Speichersynchronisierung gelöscht",
    "someone": "Jemand",
    "count": "{count}-mal",
    "subject.single": "[{site}] {line}",
    "subject.digest": "[{site}] {total} Benachrichtigungen",
    "open": "Öffnen",
    "excerpt": "Kommentar",
    "more": "und {more} weitere",
    "open_inbox": "Benachrichtigungen öffnen",
    "manage": "Benachrichtigungen verwalten",
    "unsubscribe": "Abbestellen",
    "footer": "Du erhältst diese E-Mail wegen deiner Benachrichtigungseinstellungen auf {site}.",
    "category.watched_page": "Änderungen an beobachteten Seiten",
    "category.watched_page_comment": "Kommentare zu beobachteten Seiten",
    "category.comment_reply": "Antworten auf deine Kommentare",
    "category.mention": "Erwähnungen von dir",
    "category.review_requested": "Prüfungen, um die du gebeten wirst",
    "category.page_created": "Neue Seiten",
    "category.page_deleted": "Gelöschte Seiten",
    "section.watching": "Beobachten",
    "section.discussions": "Diskussionen",
    "section.reviews": "Prüfungen",
    "section.everything": "Alles",
}
