"""A notification mail as a value (E6): strings per language, both bodies, the headers of
RFC 8058 one-click unsubscribe, escaping, and a round trip through the stdlib email package."""

from __future__ import annotations

import email
import re
import string
from email.message import EmailMessage
from email.policy import default

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from notify_core.inbox.categories import CATEGORIES, EDIT_VARIANTS, event_variant
from notify_core.mail import (
    Mail,
    MailEntry,
    MailSite,
    compose_mail,
    mail_locale,
    unsubscribe_token,
)
from notify_core.mail.catalogues import CATALOGUES
from notify_core.values.errors import InvalidInput, UsageError
from tests.strategies_mail import SECRET

SITE = MailSite(name="Ops Wiki", host="wiki.example", primary_locale="en")
TOKEN = unsubscribe_token(SECRET, "ana", ["watched_page", "mention"])
URL = f"https://wiki.example/notifications/unsubscribe?t={TOKEN}"
EDIT = MailEntry(
    category="watched_page", variant="edited", title="Runbook", path="/ops/runbook", actor="Ben"
)
MENTION = MailEntry(
    category="mention",
    variant="new",
    title="Incidents",
    path="/ops/incidents",
    actor="Cy",
    excerpt="@ana can you look?",
)


def mail(
    *entries: MailEntry, locale: str | None = "en", more: int = 0, site: MailSite = SITE
) -> Mail:
    return compose_mail(list(entries), site=site, locale=locale, token=TOKEN, more=more)


class TestSingle:
    def test_e6_names_target_actor_link_and_footer(self) -> None:
        m = mail(EDIT)
        assert m.template == "single"
        assert m.subject == "[Ops Wiki] Ben edited Runbook"
        assert m.text.splitlines()[:2] == ["Ben edited Runbook", "/ops/runbook"]
        assert "Open: https://wiki.example/ops/runbook" in m.text
        assert "Manage notifications: https://wiki.example/notifications/settings" in m.text
        assert f"Unsubscribe: {URL}" in m.text
        assert '<a href="https://wiki.example/ops/runbook">Open</a>' in m.html
        assert f'<a href="{URL}">Unsubscribe</a>' in m.html

    def test_e6_headers(self) -> None:
        assert mail(EDIT).headers == (
            ("Auto-Submitted", "auto-generated"),
            ("List-Unsubscribe", f"<{URL}>"),
            ("List-Unsubscribe-Post", "List-Unsubscribe=One-Click"),
        )

    def test_e6_a_comment_shows_its_excerpt(self) -> None:
        m = mail(MENTION)
        assert "Comment: @ana can you look?" in m.text
        assert "<blockquote>@ana can you look?</blockquote>" in m.html
        assert "Comment" not in mail(EDIT).text

    def test_e6_count_and_an_absent_actor(self) -> None:
        m = mail(attrs.evolve(EDIT, count=12, actor=None))
        assert m.text.startswith("Someone edited Runbook (12 times)\n")
        assert m.subject == "[Ops Wiki] Someone edited Runbook"
        german = mail(attrs.evolve(EDIT, count=12, actor=None), locale="de")
        assert german.text.startswith("Jemand hat Runbook bearbeitet (12-mal)\n")

    def test_e6_a_variant_without_its_own_string_uses_the_categorys(self) -> None:
        m = mail(attrs.evolve(EDIT, variant="archived"))
        assert m.subject == "[Ops Wiki] Ben changed Runbook"

    def test_e6_plain_http_site_and_quoted_paths(self) -> None:
        site = MailSite(name="Wiki", host="intranet.local", https=False)
        m = mail(attrs.evolve(EDIT, path="/Über uns/a?b#c"), site=site)
        assert "http://intranet.local/%C3%9Cber%20uns/a%3Fb%23c" in m.text
        assert dict(m.headers)["List-Unsubscribe"].startswith("<http://intranet.local/")


class TestLocale:
    def test_e6_person_then_site_then_english(self) -> None:
        assert mail_locale("de", "en") == "de"
        assert mail_locale("fr", "de-AT") == "de"
        assert mail_locale("de_CH", None) == "de"
        assert mail_locale(None, "fr") == "en"
        assert mail_locale(None, None) == "en"
        site = MailSite(name="Wiki", host="w.example", primary_locale="de")
        m = mail(EDIT, locale=None, site=site)
        assert (m.locale, m.subject) == ("de", "[Wiki] Ben hat Runbook bearbeitet")
        assert '<html lang="de">' in m.html
        assert "Abbestellen" in m.text and "Benachrichtigungen verwalten" in m.text


class TestDigest:
    def test_e6_several_entries_and_more(self) -> None:
        m = mail(MENTION, EDIT, more=3)
        assert m.template == "digest"
        assert m.subject == "[Ops Wiki] 5 notifications"
        lines = m.text.splitlines()
        assert lines[0] == "- Cy mentioned you on Incidents"
        assert lines[1] == "  https://wiki.example/ops/incidents"
        assert "- Ben edited Runbook" in lines
        assert "and 3 more: https://wiki.example/notifications" in lines
        assert m.html.index("Cy mentioned you") < m.html.index("Ben edited Runbook")

    def test_e6_digest_in_german(self) -> None:
        m = mail(MENTION, EDIT, locale="de", more=1)
        assert m.subject == "[Ops Wiki] 3 Benachrichtigungen"
        assert "und 1 weitere: https://wiki.example/notifications" in m.text


class TestErrors:
    def test_no_entries_bad_more_bad_token(self) -> None:
        with pytest.raises(UsageError):
            compose_mail([], site=SITE, locale="en", token=TOKEN)
        with pytest.raises(InvalidInput):
            compose_mail([EDIT], site=SITE, locale="en", token=TOKEN, more=-1)
        with pytest.raises(UsageError):
            compose_mail([EDIT], site=SITE, locale="en", token="a b\r\nBcc: x")
        with pytest.raises(InvalidInput) as info:
            compose_mail([attrs.evolve(EDIT, category="nope")], site=SITE, locale="en", token=TOKEN)
        assert info.value.code == "unknown_category"
        with pytest.raises(InvalidInput):
            attrs.evolve(EDIT, count=0)

    def test_e6_a_mail_entry_has_no_member_for_page_content(self) -> None:
        names = {field.name for field in attrs.fields(MailEntry)}
        # E6 as amended (issue 25) adds the storage sync, the draft state and the link's
        # comment and submission ids, and N11 (issue 38) the link's path, where the page is
        # now, and N13 a host category's own strings (its subject and line per locale, with
        # the event's members): none of them can carry page content either.
        assert names == {
            "host",
            "category",
            "variant",
            "title",
            "path",
            "actor",
            "sync",
            "draft",
            "count",
            "excerpt",
            "comment",
            "submission",
            "link_path",
        }


def test_n11_the_link_goes_to_link_path_and_the_mail_names_the_snapshot() -> None:
    """N11: ``link_path`` (the page's path now) shapes the page and comment links; the mail
    still names the snapshot's title and path; a review's link is its submission's."""
    site = MailSite(name="Wiki", host="wiki.example.org")
    moved = MailEntry(
        category="mention",
        variant="new",
        title="Runbook",
        path="/ops/runbook",
        link_path="/ops/run book",
        comment="c1",
    )
    assert moved.link(site) == "https://wiki.example.org/ops/run%20book#comment-c1"
    page = attrs.evolve(moved, comment=None)
    assert page.link(site) == "https://wiki.example.org/ops/run%20book"
    assert attrs.evolve(moved, link_path=None).link(site) == (
        "https://wiki.example.org/ops/runbook#comment-c1"
    )
    mail = compose_mail([moved], site=site, locale="en", token=TOKEN)
    assert mail.text.splitlines()[1] == "/ops/runbook"
    assert "run%20book#comment-c1" in mail.text and "Runbook" in mail.subject


# -- catalogues ------------------------------------------------------------------------------


def placeholders(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


def test_e6_every_catalogue_has_the_english_keys_and_placeholders() -> None:
    english = CATALOGUES["en"]
    assert set(CATALOGUES) >= {"en", "de"}
    for language, strings in CATALOGUES.items():
        assert set(strings) == set(english), language
        for key, template in strings.items():
            assert placeholders(template) == placeholders(english[key]), (language, key)


def test_e6_every_category_and_variant_of_the_registry_has_strings() -> None:
    for category in CATEGORIES:
        variants = set()
        for event_type in category.events:
            variants |= (
                EDIT_VARIANTS if event_type == "page.edited" else {event_variant(event_type)}
            )
        for variant in variants:
            for language, strings in CATALOGUES.items():
                assert f"{category.key}.{variant}" in strings, (language, category.key, variant)


# -- escaping and the stdlib round trip -------------------------------------------------------

OUR_TAGS = re.compile(
    r'<!DOCTYPE html>|</?(?:html(?: lang="[^"<>]*")?|head|meta charset="utf-8"|title|body|p|br'
    r'|strong|blockquote|ul|li|q|hr|small|a(?: href="[^"<>]*")?)>'
)
texts = st.text(min_size=1, max_size=30)


@given(texts, texts, st.none() | texts, st.none() | texts, st.sampled_from(["en", "de"]))
def test_e6_html_escapes_every_value(
    title: str, path: str, actor: str | None, excerpt: str | None, locale: str
) -> None:
    entry = MailEntry(
        category="mention", variant="new", title=title, path=path, actor=actor, excerpt=excerpt
    )
    for m in (mail(entry, locale=locale), mail(entry, EDIT, locale=locale, more=2)):
        rest = OUR_TAGS.sub("", m.html)
        assert "<" not in rest and ">" not in rest
        assert "\n" not in m.subject and "\r" not in m.subject


@settings(max_examples=50)
@given(texts, st.sampled_from(["en", "de"]))
def test_e6_round_trip_through_the_stdlib_email_package(title: str, locale: str) -> None:
    m = mail(attrs.evolve(EDIT, title=title), locale=locale)
    message = EmailMessage(policy=default)
    message["Subject"] = m.subject
    message["From"] = "Ops Wiki <wiki@wiki.example>"
    message["To"] = "ana@example.org"
    for name, value in m.headers:
        message[name] = value
    message.set_content(m.text)
    message.add_alternative(m.html, subtype="html")
    parsed = email.message_from_bytes(message.as_bytes(), policy=default)
    # The stdlib folds long or non-ASCII subjects into RFC 2047 encoded words and may drop the
    # whitespace between two of them; everything else survives.
    assert "".join(parsed["Subject"].split()) == "".join(m.subject.split())
    assert parsed["List-Unsubscribe"] == f"<{URL}>"
    assert parsed["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    assert parsed["Auto-Submitted"] == "auto-generated"
    assert isinstance(parsed, EmailMessage)
    plain = parsed.get_body(preferencelist=("plain",))
    rich = parsed.get_body(preferencelist=("html",))
    assert plain is not None and rich is not None
    assert plain.get_content() == m.text
    assert rich.get_content() == m.html
