"""A mail names the wiki it comes from by the site's ``name`` when the log gives one, else
by its host (E6 as amended by issue 38; formats.md section 4: ``site.created`` /
``site.updated`` gain ``"name"?``)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from inbox_log import WikiLog

from notify_core.events.log import EventError, parse_event
from notify_core.inbox.mailing import LineMail, line_mail, mail_site
from notify_core.inbox.pipeline import MailLine
from notify_core.inbox.ports import SiteInfo
from notify_core.replay.run import Replay


def mails(lines: list[str]) -> list[LineMail]:
    """Replay a log; the mail of every send line, composed at its drain instant."""
    run = Replay()
    out = []
    for item in run.run(lines):
        assert not isinstance(item, EventError), item
        if type(item) is MailLine and item.decision == "send":
            out.append(line_mail(item, run.inbox.wiki))
    return out


def named(**site: object) -> WikiLog:
    """A wiki whose site ``s1`` the log then updates with ``site``; Ana watches p1."""
    log = WikiLog()
    if site:
        log.add("site.updated", {"site": "s1", **site})
    log.user("ana", name="Ana A.").user("ben", name="Ben B.")
    return log.page("p1", "ops/runbook").watch("p1", "ana")


def test_e6_a_mail_names_the_wiki_by_the_site_s_name() -> None:
    (sent,) = mails(named(name="Ops Wiki").edit("p1").lines())
    assert sent.mail.subject == "[Ops Wiki] Ben B. edited p1"
    assert "Ops Wiki" in sent.mail.text and "Ops Wiki" in sent.mail.html
    # The links still go to the host.
    assert "https://wiki.example.org/ops/runbook" in sent.mail.text


def test_e6_without_a_name_the_mail_names_the_host() -> None:
    (sent,) = mails(named().edit("p1").lines())
    assert sent.mail.subject == "[wiki.example.org] Ben B. edited p1"


def test_e6_an_empty_name_reads_as_none() -> None:
    (sent,) = mails(named(name="").edit("p1").lines())
    assert sent.mail.subject == "[wiki.example.org] Ben B. edited p1"


def test_e6_site_updated_changes_the_name_member_by_member() -> None:
    log = named(name="Ops Wiki").edit("p1")
    log.tick(600).add("site.updated", {"site": "s1", "notifications": True})  # name kept
    log.add("inbox.read", {}, audience="ana")
    log.tick().edit("p1")
    log.tick(600).add("site.updated", {"site": "s1", "name": "Betriebs-Wiki"})
    log.add("inbox.read", {}, audience="ana")
    log.tick().edit("p1")
    first, second, third = mails(log.lines())
    assert first.mail.subject.startswith("[Ops Wiki] ")
    assert second.mail.subject.startswith("[Ops Wiki] ")
    assert third.mail.subject.startswith("[Betriebs-Wiki] ")


def test_e6_a_name_given_at_creation_is_the_mail_s_name() -> None:
    log = WikiLog()
    log.add(
        "site.created",
        {"site": "s2", "host": "docs.example.org", "name": "Docs", "https": True},
    )
    log.user("ana").user("ben")
    log.add(
        "page.created",
        {"page": "d1", "site": "s2", "path": "/api", "locale": "en", "title": "API"},
        actor="ben",
    )
    log.watch("d1", "ana").edit("d1")
    (sent,) = mails(log.lines())
    assert sent.mail.subject == "[Docs] Someone edited API"
    assert sent.site.host == "docs.example.org"


@pytest.mark.parametrize("name", [7, True, ["Wiki"], {"en": "Wiki"}])
def test_e6_a_name_that_is_not_a_string_is_a_bad_line(name: object) -> None:
    for kind, extra in (
        ("site.created", {"host": "w.example", "https": True}),
        ("site.updated", {}),
    ):
        line = {
            "seq": 1,
            "type": kind,
            "occurred_at": "2026-11-30T08:00:00Z",
            "payload": {"site": "s1", "name": name, **extra},
        }
        with pytest.raises(EventError) as info:
            parse_event(json.loads(json.dumps(line)))
        assert info.value.pointer == "/payload/name"


@settings(max_examples=200, deadline=None)
@given(
    host=st.text(st.characters(codec="utf-8"), min_size=1),
    name=st.none() | st.text(st.characters(codec="utf-8")),
)
def test_e6_the_mail_s_site_is_the_name_else_the_host(host: str, name: str | None) -> None:
    site = mail_site("s1", SiteInfo(id="s1", host=host, name=name))
    assert site.name == (name or host)
    assert site.host == host
    assert mail_site("s1", None).name == "s1"  # a site the host does not know: its id
