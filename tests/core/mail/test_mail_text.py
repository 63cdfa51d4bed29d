"""What a mail says in a replay (E6 as amended by issue 25): who acted by display name (a
neutral word for a person without one or no longer known, "via storage sync" for an event
without an actor, never an id), a page created unpublished as a draft, a comment's excerpt
only while it exists, and every link from the site's link templates."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from inbox_log import WikiLog
from wiki_mail_logs import person_ids, wiki_mail_log

from notify_core.events.log import EventError
from notify_core.inbox.mailing import LineMail, line_mail
from notify_core.inbox.pipeline import MailLine
from notify_core.mail import Mail
from notify_core.replay.run import Replay
from notify_core.values.errors import InvalidInput
from notify_core.values.links import (
    DEFAULT_LINKS,
    LinkTemplates,
    expand_link,
    link_path,
    link_templates,
    links_error,
)


def mails(lines: list[str]) -> list[LineMail]:
    """Replay a log; the mail of every send line, composed at its drain instant."""
    run = Replay()
    out = []
    for item in run.run(lines):
        assert not isinstance(item, EventError), item
        if type(item) is MailLine and item.decision == "send":
            out.append(line_mail(item, run.inbox.wiki))
    return out


def said(mail: Mail) -> str:
    return "\n".join([mail.subject, mail.text, mail.html])


def world(**site: object) -> WikiLog:
    log = WikiLog()
    if site:
        log.add("site.updated", {"site": "s1", **site})
    log.user("ana", name="Ana A.").user("ben", name="Ben B.").user("u-cy-93af")
    return log.page("p1", "ops/runbook").watch("p1", "ana")


# -- names -----------------------------------------------------------------------------------


def test_e6_the_actor_is_named_by_the_display_name_read_at_the_drain() -> None:
    log = world().edit("p1", actor="ben")
    log.add("user.updated", {"user": "ben", "name": "Benedikt"})  # before the mail goes
    (sent,) = mails(log.lines())
    assert sent.mail.subject == "[wiki.example.org] Benedikt edited p1"
    assert "ben" not in said(sent.mail).replace("Benedikt", "")


def test_e6_a_person_without_a_name_or_no_longer_known_is_someone_never_an_id() -> None:
    log = world().edit("p1", actor="u-cy-93af")  # no name
    (sent,) = mails(log.lines())
    assert sent.mail.subject == "[wiki.example.org] Someone edited p1"
    log.tick(600).edit("p1", actor="ghost-7f3a")  # nobody the wiki knows
    log.add("inbox.read", {}, audience="ana")
    log.tick(600).edit("p1", actor="ghost-7f3a")
    *_, last = mails(log.lines())
    assert last.mail.subject == "[wiki.example.org] Someone edited p1"
    for found in mails(log.lines()):
        assert "u-cy-93af" not in said(found.mail)
        assert "ghost" not in said(found.mail)


def test_e6_a_name_removed_reads_as_someone() -> None:
    log = world().edit("p1", actor="ben")
    log.add("user.updated", {"user": "ben", "unset": ["name"]})
    (sent,) = mails(log.lines())
    assert sent.mail.subject == "[wiki.example.org] Someone edited p1"


def test_e6_an_event_without_an_actor_reads_via_storage_sync() -> None:
    log = world().tick().add("page.edited", {"page": "p1"}, origin="import")
    (sent,) = mails(log.lines())
    assert sent.mail.subject == "[wiki.example.org] p1 was edited via storage sync"
    assert "Someone" not in said(sent.mail)


@pytest.mark.parametrize(
    ("state", "subject"),
    [
        ("draft", "[wiki.example.org] Draft was created as a draft by Ben B."),
        ("scheduled", "[wiki.example.org] Draft was created as a draft by Ben B."),
        ("published", "[wiki.example.org] Ben B. created Draft"),
        (None, "[wiki.example.org] Ben B. created Draft"),
    ],
)
def test_e6_a_page_created_unpublished_says_created_as_a_draft(
    state: str | None, subject: str
) -> None:
    log = world()
    log.add(
        "inbox_pref.updated",
        {"category": "page_created", "channel": "email", "enabled": True},
        audience="ana",
    )
    extra = {} if state is None else {"publish_state": state}
    log.tick().page("p2", "drafts/x", actor="ben", title="Draft", **extra)
    (sent,) = mails(log.lines())
    assert sent.mail.subject == subject


def test_e6_a_draft_created_by_a_sync() -> None:
    log = world()
    log.add(
        "inbox_pref.updated",
        {"category": "page_created", "channel": "email", "enabled": True},
        audience="ana",
    )
    payload = {"page": "p2", "site": "s1", "path": "x", "locale": "en", "title": "Draft"}
    log.tick().add("page.created", {**payload, "publish_state": "draft"})
    (sent,) = mails(log.lines())
    assert sent.mail.subject == "[wiki.example.org] Draft was created as a draft via storage sync"


# -- N11: the excerpt only while the comment exists ------------------------------------------


def test_n11_a_deleted_comment_s_excerpt_leaves_the_mail_and_its_anchor() -> None:
    log = world().comment("c1", "p1", "ben", mentions=["ana"], excerpt="secret plan")
    kept = mails(log.lines())
    (before,) = kept
    assert "secret plan" in said(before.mail)
    assert "https://wiki.example.org/ops/runbook#comment-c1" in before.mail.text
    log.add("comment.deleted", {"comment": "c1"}, actor="ben")
    (after,) = mails(log.lines())
    assert "secret plan" not in said(after.mail)
    assert "#comment-" not in said(after.mail)
    assert "https://wiki.example.org/ops/runbook" in after.mail.text


# -- N11: a link follows its page while the page exists -----------------------------------


def renamed_after_the_mention() -> WikiLog:
    """Issue 38: ana is mentioned at 08:0x, the page moves a minute later, the mail goes at
    the mention's due time (180 s after it)."""
    log = WikiLog().user("ana", name="Ana A.").user("ben", name="Ben B.")
    log.page("p1", "ops/runbook").comment("c1", "p1", "ben", mentions=["ana"], excerpt="look")
    return log.tick().add("page.renamed", {"page": "p1", "path": "ops/run-book"}, actor="ben")


def test_n11_a_rename_after_the_event_moves_the_mail_s_link_to_the_new_path() -> None:
    (sent,) = mails(renamed_after_the_mention().lines())
    text, html = sent.mail.text, sent.mail.html
    assert "https://wiki.example.org/ops/run-book#comment-c1" in text
    assert 'href="https://wiki.example.org/ops/run-book#comment-c1"' in html
    assert "/ops/runbook#" not in said(sent.mail)  # the old path, now a 404, is no link
    # The mail names the snapshot: the title and path as they were at the event.
    assert text.splitlines()[1] == "ops/runbook"
    assert sent.mail.subject == "[wiki.example.org] Ben B. mentioned you on p1"


def test_n11_a_page_deleted_after_the_event_links_to_the_snapshot_s_path() -> None:
    log = renamed_after_the_mention().add("page.deleted", {"page": "p1"}, actor="ben")
    (sent,) = mails(log.lines())
    assert "https://wiki.example.org/ops/runbook#comment-c1" in sent.mail.text
    assert "run-book" not in said(sent.mail)
    # Restored before the mail goes: the page exists again, at its current path.
    log.add("page.restored", {"page": "p1"}, actor="ben")
    (sent,) = mails(log.lines())
    assert "https://wiki.example.org/ops/run-book#comment-c1" in sent.mail.text


def test_n11_a_digest_links_each_entry_to_its_page_now_through_the_site_s_template() -> None:
    log = WikiLog().user("ana", name="Ana A.", email_schedule="hourly").user("ben")
    log.add("site.updated", {"site": "s1", "links": {"page": "/wiki{path}"}})
    log.page("p1", "a/one").page("p2", "b/two").watch("p1", "ana").watch("p2", "ana")
    log.edit("p1").edit("p2")
    # No longer watching, ana gets no "moved" entry: her entries keep the old snapshots.
    log.add("page.unwatched", {"page": "p1", "user": "ana"})
    log.add("page.unwatched", {"page": "p2", "user": "ana"})
    log.tick().add("page.renamed", {"page": "p2", "path": "b/deux"}, actor="ben")
    log.tick().add("page.renamed", {"page": "p1", "path": "a/uno"}, actor="ben")
    (sent,) = mails(log.lines())
    assert sent.mail.template == "digest"
    for link in ("https://wiki.example.org/wiki/a/uno", "https://wiki.example.org/wiki/b/deux"):
        assert link in sent.mail.text and f'href="{link}"' in sent.mail.html
    assert "/wiki/a/one" not in said(sent.mail) and "/wiki/b/two" not in said(sent.mail)


# -- links -----------------------------------------------------------------------------------


def test_e6_the_default_links_are_today_s_paths() -> None:
    log = world().comment("c1", "p1", "ben", mentions=["ana"])
    (sent,) = mails(log.lines())
    text = sent.mail.text
    assert "https://wiki.example.org/notifications/settings" in text
    assert "https://wiki.example.org/notifications/unsubscribe?t=" in text
    assert "https://wiki.example.org/ops/runbook#comment-c1" in text


def test_e6_a_site_s_templates_shape_every_link_and_update_member_by_member() -> None:
    links = {
        "unsubscribe": "/_api/notifications/unsubscribe?t={token}",
        "manage": "/_profile/notifications",
        "page": "https://docs.example.org/{host}{path}",
        "review": "/_inbox/review/{submission}",
    }
    log = world(links=links)
    log.add("group.created", {"group": "rev", "rules": []})
    log.add("group.member_added", {"group": "rev", "user": "ana"})
    log.add(
        "review_rule.set",
        {"rule": "r", "site": "s1", "match": "all", "reviewer_groups": ["rev"], "enabled": True},
    )
    log.edit("p1", actor="ben")
    log.tick().add("submission.created", {"submission": "sub 1", "page": "p1"}, actor="ben")
    log.add("site.updated", {"site": "s1", "links": {"manage": "", "inbox": "/_inbox"}})
    sent = mails(log.lines())
    assert len(sent) == 2  # the edit's, then the review's (both after the update)
    text = "\n".join(found.mail.text for found in sent)
    assert "https://docs.example.org/wiki.example.org/ops/runbook" in text
    assert "https://wiki.example.org/_inbox/review/sub%201" in text
    # "manage" went back to its default; "unsubscribe" was kept.
    assert "https://wiki.example.org/notifications/settings" in text
    assert "https://wiki.example.org/_api/notifications/unsubscribe?t=" in text
    assert dict(sent[0].mail.headers)["List-Unsubscribe"].startswith(
        "<https://wiki.example.org/_api/notifications/unsubscribe?t="
    )


@pytest.mark.parametrize(
    "links",
    [
        {"unsubscribe": "/u"},  # no token
        {"page": "/x/{comment}"},  # not its placeholder
        {"nope": "/x"},
        {"manage": "settings"},  # neither a URL nor a path from /
        {"manage": "//evil.example/x"},
        {"manage": "/a b"},
        {"page": "{path!r}"},
        {"page": "{path"},
        [],
    ],
)
def test_e6_a_bad_template_is_a_bad_line(links: object) -> None:
    assert links_error(links) is not None
    log = WikiLog().add("site.updated", {"site": "s1", "links": links})
    run = Replay()
    found = list(run.run(log.lines()))
    assert any(isinstance(item, EventError) and item.pointer == "/payload/links" for item in found)
    if links:
        with pytest.raises(InvalidInput):
            link_templates(links)  # type: ignore[arg-type]


def test_e6_the_defaults_are_valid_templates_and_their_paths() -> None:
    assert links_error(dict(DEFAULT_LINKS)) is None
    assert link_path(DEFAULT_LINKS["unsubscribe"]) == "/notifications/unsubscribe"
    assert link_path("https://{host}/_api/u?t={token}") == "/_api/u"
    assert link_path("/u/{token}") is None


@settings(max_examples=200)
@given(
    path=st.text(max_size=30),
    comment=st.text(min_size=1, max_size=10),
    https=st.booleans(),
)
def test_e6_expanded_links_are_one_url_without_spaces_or_controls(
    path: str, comment: str, https: bool
) -> None:
    for name in ("page", "comment"):
        link = expand_link(
            LinkTemplates(), name, host="wiki.example.org", https=https, path=path, comment=comment
        )
        assert link.startswith(("https://" if https else "http://") + "wiki.example.org/")
        assert all(c.isascii() and c.isprintable() and not c.isspace() for c in link)
        assert link.count("#") == (1 if name == "comment" else 0)


# -- never an id: a property over generated wiki logs --------------------------------------


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32))
def test_e6_no_user_id_appears_in_any_subject_or_body_of_a_generated_wiki(seed: int) -> None:
    lines = wiki_mail_log(seed)
    ids = person_ids(seed)
    sent = mails(lines)
    for found in sent:
        text = said(found.mail)
        for person in ids:
            assert person not in text, (person, found.mail.subject)
