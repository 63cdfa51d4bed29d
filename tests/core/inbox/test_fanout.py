"""Fan-out boundaries the plain model of tests/core/inbox/test_inbox.py rarely meets (issue 41):
earlier mentions drop only mention candidates, a section turned off skips every candidate, and
any string is a person's id, the empty one included."""

from __future__ import annotations

from notify_core.inbox import (
    Delivery,
    Group,
    InboxEvent,
    InboxSettings,
    InboxSkip,
    Match,
    PageFacts,
    Permission,
    PersonFacts,
    Rule,
    Section,
    fan_out,
)

READERS = Group(
    rules=(
        Rule(permission=Permission.READ_PAGES, match=Match.ALL),
        Rule(permission=Permission.READ_COMMENTS, match=Match.ALL),
    )
)
GROUPS = {"readers": READERS}
READER = PersonFacts(groups=frozenset({"readers"}))
PAGE = PageFacts(path="ops/runbook")


def event(type_: str, **kw: object) -> InboxEvent:
    fields: dict[str, object] = {"id": "ev1", "type": type_, "actor": "ana", "page": PAGE} | kw
    return InboxEvent(**fields)  # type: ignore[arg-type]


def reached(result: object) -> list[tuple[str, str]]:
    return [(e.recipient, e.category.key) for e in result.entries]  # type: ignore[attr-defined]


def test_n1_earlier_mentions_drop_only_mention_candidates() -> None:
    people = {"ben": READER, "cy": READER}
    edited = event("page.edited", previous_mentions=frozenset({"ben"}))
    result = fan_out(edited, {"watched_page": ["ben", "cy"]}, people, GROUPS, InboxSettings())
    assert reached(result) == [("ben", "watched_page"), ("cy", "watched_page")]
    comment = event("comment.edited", previous_mentions=frozenset({"ben"}))
    result = fan_out(comment, {"mention": ["ben", "cy"]}, people, GROUPS, InboxSettings())
    assert reached(result) == [("cy", "mention")]
    assert result.skips == ()


def test_n3_a_section_turned_off_skips_every_candidate() -> None:
    people = {"ben": READER, "cy": READER, "dee": READER}
    off = InboxSettings(sections={Section.WATCHING: Delivery.OFF})
    result = fan_out(
        event("page.edited"), {"watched_page": ["dee", "ben", "cy"]}, people, GROUPS, off
    )
    assert result.entries == ()
    assert [(s.recipient, s.reason) for s in result.skips] == [
        ("ben", InboxSkip.SECTION_OFF),
        ("cy", InboxSkip.SECTION_OFF),
        ("dee", InboxSkip.SECTION_OFF),
    ]


def test_g4_the_empty_id_is_a_person_like_any_other() -> None:
    people = {"": READER, "ben": READER}
    result = fan_out(
        event("page.edited"), {"watched_page": ["", "", "ben"]}, people, GROUPS, InboxSettings()
    )
    assert reached(result) == [("", "watched_page"), ("ben", "watched_page")]


def test_n7_several_categories_count_each_access_answer_once() -> None:
    # comment.created with a parent author fires three categories, all read_comments: two
    # group sets cost two evaluations, however many categories reach them.
    staff = PersonFacts(groups=frozenset({"readers", "staff"}))
    people = {"ben": READER, "cy": staff, "dee": READER}
    created = event("comment.created", parent_author="ben")
    candidates = {
        "comment_reply": ["ben"],
        "mention": ["ben", "cy"],
        "watched_page_comment": ["dee", "cy"],
    }
    groups = {**GROUPS, "staff": READERS}
    result = fan_out(created, candidates, people, groups, InboxSettings())
    assert reached(result) == [
        ("ben", "mention"),
        ("cy", "mention"),
        ("dee", "watched_page_comment"),
    ]
    assert result.access_evaluations == 2
