"""The inbox path of the replay (rules N5-N12, H2): wiki logs in, entry lines out."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import attrs
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from inbox_log import WikiLog

from notify_cli.main import cli
from notify_core.events.log import EventError
from notify_core.inbox import CATEGORY_BY_KEY, EmailState, holds
from notify_core.inbox.memory.entries import EntryMemory
from notify_core.inbox.memory.wiki import WikiMemory
from notify_core.inbox.pipeline import InboxLine
from notify_core.inbox.ports import CommentInfo
from notify_core.replay.lines import dumps_item
from notify_core.replay.run import Replay

HERE = Path(__file__).parents[2] / "inbox"


def replay(
    log: WikiLog | list[str], include_skips: bool = True, mails: bool = False
) -> tuple[list[dict], Replay]:  # type: ignore[type-arg]
    """Replay a log; the entry lines (and with ``mails`` the mail lines) as JSON objects."""
    run = Replay(include_skips=include_skips)
    out = []
    for item in run.run(log.lines() if isinstance(log, WikiLog) else log):
        assert not isinstance(item, EventError), item
        line = json.loads(dumps_item(item))
        if mails or line["trigger"] != "mail":
            out.append(line)
    return out, run


def entries(run: Replay) -> EntryMemory:
    store = run.inbox.entries
    assert isinstance(store, EntryMemory)
    return store


def test_spec_example_gives_its_expected_output_byte_for_byte() -> None:
    """formats.md section 4's example: entry lines and the drain's mail lines (E4)."""
    result = CliRunner().invoke(cli, ["replay", str(HERE / "spec_example.jsonl")])
    assert result.exit_code == 0, result.output
    assert result.stdout == (HERE / "spec_example.expected.jsonl").read_text()


def test_n9_deletion_reaches_the_watchers_of_the_moment_and_restore_brings_none_back() -> None:
    log = WikiLog().user("ana").user("ben").user("cy")
    log.page("p1", "ops/runbook").watch("p1", "ana")
    log.add(
        "inbox_pref.updated",
        {"category": "page_deleted", "channel": "in_app", "enabled": True},
        audience="cy",
    )
    log.tick().add("page.deleted", {"page": "p1"}, actor="ben")
    log.tick().add("page.restored", {"page": "p1"}, actor="ben")
    log.edit("p1")
    lines, _ = replay(log)
    assert [(x["recipient"], x["category"], x["variant"], x["decision"]) for x in lines] == [
        ("ana", "watched_page", "deleted", "new"),
        ("cy", "page_deleted", "deleted", "new"),
    ]
    assert lines[1]["email"] == "none"  # only in_app was turned on


def test_n8_a_rename_is_checked_against_the_new_path_a_deletion_against_the_old() -> None:
    log = WikiLog()
    log.add(
        "group.created",
        {
            "group": "no-secret",
            "rules": [
                {
                    "permission": "read_pages",
                    "match": "path_prefix",
                    "value": "secret/",
                    "deny": True,
                }
            ],
        },
    )
    log.user("ana", groups=("readers", "no-secret")).user("ben")
    log.page("p1", "ops/plan").page("p2", "secret/plan").watch("p1", "ana").watch("p2", "ana")
    log.tick().add("page.deleted", {"page": "p2"}, actor="ben")
    log.tick().add("page.renamed", {"page": "p1", "path": "secret/plan"}, actor="ben")
    lines, _ = replay(log)
    assert [(x["seq"], x["decision"], x.get("reason")) for x in lines] == [
        (log.events[-2]["seq"], "skip", "no_access"),
        (log.events[-1]["seq"], "skip", "no_access"),
    ]


def test_n5_a_site_switched_off_gives_no_entry_and_names_each_candidate() -> None:
    log = WikiLog().user("ana").user("cy").user("ben").page("p1", "ops/runbook")
    log.watch("p1", "ana", "cy", "ben")
    log.add("site.updated", {"site": "s1", "notifications": False})
    log.edit("p1")
    log.add("site.updated", {"site": "s1", "notifications": True})
    log.edit("p1")
    lines, _ = replay(log)
    assert [(x["recipient"], x["decision"], x.get("reason")) for x in lines] == [
        ("ana", "skip", "site_off"),
        ("ben", "skip", "site_off"),
        ("cy", "skip", "site_off"),
        ("ana", "new", None),
        ("ben", "skip", "actor"),
        ("cy", "new", None),
    ]
    quiet, _ = replay(log, include_skips=False)
    assert [x["decision"] for x in quiet] == ["new", "new"]


def test_n6_an_import_reaches_watchers_but_not_the_opted_in() -> None:
    log = WikiLog().user("ana").user("cy").page("p0", "x").watch("p0", "ana")
    log.add(
        "inbox_pref.updated",
        {"category": "page_created", "channel": "in_app", "enabled": True},
        audience="cy",
    )
    log.tick().add(
        "page.created",
        {"page": "p1", "site": "s1", "path": "a", "locale": "en", "title": "A"},
        origin="import",
    )
    log.tick().add("page.edited", {"page": "p0"}, origin="import")
    log.tick().add(
        "page.created",
        {"page": "p2", "site": "s1", "path": "b", "locale": "en", "title": "B"},
        actor="ana",
    )
    lines, _ = replay(log)
    assert [(x["recipient"], x["category"], x["decision"]) for x in lines] == [
        ("ana", "watched_page", "new"),
        ("cy", "page_created", "new"),
    ]


def test_n11_the_entry_keeps_its_snapshot_and_the_reply_and_mention_rules() -> None:
    log = WikiLog().user("ana").user("ben").user("cy").page("p1", "ops/runbook")
    log.comment("c1", "p1", "ana", excerpt="first")
    log.comment("c2", "p1", "ben", parent="c1", mentions=["cy"], excerpt="@cy see")
    log.tick().add("comment.edited", {"comment": "c2", "mentions": ["cy", "ana"]}, actor="ben")
    lines, run = replay(log)
    assert [(x["recipient"], x["category"], x["group_key"], x["decision"]) for x in lines] == [
        ("ana", "comment_reply", "reply:c1", "new"),
        ("cy", "mention", "mention:c2", "new"),
        ("ana", "mention", "mention:c2", "new"),  # only the new mention of the edit
    ]
    entry = entries(run).get("cy:mention:c2:1")
    assert entry is not None
    target = entry.target
    assert (target.title, target.path, target.excerpt, target.comment) == (
        "p1",
        "ops/runbook",
        "@cy see",
        "c2",
    )


def test_h2_reads_by_filter_dismissals_and_review_entries_belong_to_their_page() -> None:
    log = WikiLog().user("ana").user("ben").page("p1", "docs/a").page("p2", "docs/b")
    log.add("group.created", {"group": "reviewers", "rules": []})
    log.add("group.member_added", {"group": "reviewers", "user": "ana"})
    log.add(
        "review_rule.set",
        {
            "rule": "r1",
            "site": "s1",
            "match": "path_prefix",
            "value": "docs/",
            "reviewer_groups": ["reviewers"],
            "enabled": True,
        },
    )
    log.watch("p1", "ana").watch("p2", "ana")
    log.edit("p1").edit("p2")
    log.tick().add("submission.created", {"submission": "sub1", "page": "p2"}, actor="ben")
    log.tick().add("inbox.read", {"page": "p2", "categories": ["review_requested"]}, audience="ana")
    log.tick().add("inbox.dismissed", {"id": "ana:watched_page:p1:1"}, audience="ana")
    log.edit("p1").edit("p2")
    log.tick().add("inbox.read", {}, audience="ana")
    log.edit("p2")
    lines, run = replay(log)
    assert [(x["entry"], x["decision"]) for x in lines] == [
        ("ana:watched_page:p1:1", "new"),
        ("ana:watched_page:p2:1", "new"),
        ("ana:review_requested:review:sub1:1".replace("review_requested:", ""), "new"),
        ("ana:watched_page:p1:2", "new"),  # the dismissed entry freed its key
        ("ana:watched_page:p2:1", "coalesce"),
        ("ana:watched_page:p2:2", "new"),  # read all freed it
    ]
    store = entries(run)
    assert store.get("ana:watched_page:p1:1") is None
    review = store.get("ana:review:sub1:1")
    assert review is not None and review.state.read and review.page == "p2"


def test_n12_an_email_only_entry_is_not_read_by_the_inbox() -> None:
    """N12, H2 (amended by issue 25): an inbox read or a dismissal never reaches an email-only
    entry (the next edit coalesces into it); a page view does (the person has seen the change:
    the entry is read, its email cancelled, and the next edit starts a new entry). Before the
    amendment a view did not reach it either; this test then viewed the page where it now
    reads and dismisses through the inbox."""
    log = WikiLog().user("ana").user("ben").page("p1", "ops/runbook").watch("p1", "ana")
    log.add(
        "inbox_pref.updated",
        {"category": "watched_page", "channel": "in_app", "enabled": False},
        audience="ana",
    )
    log.add("notifications.settings", {"email_delay_s": 3600})  # no mail before the view
    log.edit("p1")
    log.tick().add("inbox.read", {}, audience="ana")
    log.add("inbox.dismissed", {"id": "ana:watched_page:p1:1"}, audience="ana")
    log.edit("p1")
    log.tick().add("page.viewed", {"page": "p1"}, audience="ana")
    log.edit("p1")
    lines, run = replay(log)
    assert [(x["entry"], x["decision"], x["count"], x["in_app"], x["email"]) for x in lines] == [
        ("ana:watched_page:p1:1", "new", 1, False, "pending"),
        ("ana:watched_page:p1:1", "coalesce", 2, False, "pending"),
        ("ana:watched_page:p1:2", "new", 1, False, "pending"),
    ]
    first = entries(run).get("ana:watched_page:p1:1")
    assert first is not None and first.state.read and first.state.email is EmailState.SKIPPED


def test_n4_no_mail_configured_means_no_email_and_stop_all_email() -> None:
    log = WikiLog(mail=False).user("ana").user("ben").page("p1", "x").watch("p1", "ana")
    log.edit("p1")
    log.add("notifications.settings", {"mail_configured": True})
    log.tick().add("inbox.read", {}, audience="ana")
    log.edit("p1")
    log.tick().add("inbox.read", {}, audience="ana")
    log.add("inbox_pref.stop_all_email", {}, audience="ana")
    log.edit("p1")
    lines, _ = replay(log)
    assert [(x["email"], x.get("email_after")) for x in lines] == [
        ("none", None),
        ("pending", "2026-11-30T08:06:00Z"),
        ("none", None),
    ]


def test_summary_counts_entries_by_category_and_decision(tmp_path: Path) -> None:
    summary = tmp_path / "summary.json"
    result = CliRunner().invoke(
        cli,
        [
            "replay",
            str(HERE / "spec_example.jsonl"),
            "--include-skips",
            "--summary-json",
            str(summary),
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(summary.read_text())
    assert data["entries_by_category"] == {
        "mention": {"new": 1},
        "watched_page": {"coalesce": 2, "new": 2},
        "watched_page_comment": {"skip": 1},
    }
    assert data["entry_skips_by_reason"] == {"lower_priority": 1}
    assert "entries watched_page coalesce" in result.stderr


def test_bad_wiki_lines_are_reported_with_line_and_member() -> None:
    log = WikiLog()
    log.add("page.created", {"page": "p1", "site": "s1", "locale": "en", "title": "T"})
    log.add("page.edited", {"page": "p1"}, origin="git")
    log.add(
        "group.created", {"group": "g", "rules": [{"permission": "read_pages", "match": "tag"}]}
    )
    errors = [item for item in Replay().run(log.lines()) if isinstance(item, EventError)]
    assert [(e.line, e.pointer) for e in errors] == [
        (4, "/payload/path"),
        (5, "/origin"),
        (6, "/payload/rules"),
    ]


# --- properties over random wiki logs ----------------------------------------------------

PEOPLE = ("ana", "ben", "cy", "dee", "eli")
#: Whole replays per example: a fifth of the profile's examples (40 by default, 200 in ci).
HEAVY = settings(max_examples=max(20, settings.default.max_examples // 5))
PAGES = {"p1": "ops/runbook", "p2": "secret/plan", "p3": "home"}


@st.composite
def wiki_logs(draw: st.DrawFn) -> WikiLog:
    """A small wiki: five people in random groups, three pages, random watchers, choices and
    section switches, then a random sequence of edits, comments, reads and deletions."""
    log = WikiLog(mail=draw(st.booleans()))
    log.add(
        "group.created",
        {
            "group": "no-secret",
            "rules": [
                {
                    "permission": "read_pages",
                    "match": "path_prefix",
                    "value": "secret/",
                    "deny": True,
                }
            ],
        },
    )
    log.add("group.created", {"group": "admins", "manage_system": True, "rules": []})
    log.add("group.created", {"group": "reviewers", "rules": []})
    log.add(
        "review_rule.set",
        {
            "rule": "r1",
            "site": "s1",
            "match": "all",
            "reviewer_groups": ["reviewers"],
            "enabled": True,
        },
    )
    for person in PEOPLE:
        groups = draw(
            st.lists(
                st.sampled_from(["readers", "no-secret", "admins", "reviewers"]),
                unique=True,
                max_size=3,
            )
        )
        log.user(
            person,
            groups=tuple(groups),
            verified=draw(st.booleans()),
            active=draw(st.sampled_from([True, True, False])),
        )
    for page, path in PAGES.items():
        log.page(page, path, actor="ana")
        log.watch(page, *draw(st.lists(st.sampled_from(PEOPLE), unique=True, max_size=4)))
    comments: list[str] = []
    for step in range(draw(st.integers(1, 25))):
        actor = draw(st.sampled_from(PEOPLE))
        page = draw(st.sampled_from(list(PAGES)))
        what = draw(
            st.sampled_from(
                [
                    "edit",
                    "edit",
                    "comment",
                    "view",
                    "read",
                    "pref",
                    "section",
                    "delete",
                    "submit",
                    "rename",
                ]
            )
        )
        if what == "edit":
            log.edit(page, actor=actor, variant=draw(st.sampled_from(["edited", "published"])))
        elif what == "rename":
            log.tick().add(
                "page.renamed",
                {"page": page, "path": draw(st.sampled_from(list(PAGES.values())))},
                actor=actor,
            )
        elif what == "comment":
            comment = f"c{step}"
            extra: dict[str, object] = {
                "mentions": draw(st.lists(st.sampled_from(PEOPLE), unique=True, max_size=2))
            }
            if comments and draw(st.booleans()):
                extra["parent"] = draw(st.sampled_from(comments))
            log.comment(comment, page, actor, **extra)
            comments.append(comment)
        elif what == "view":
            log.tick().add(
                "page.viewed", {"page": page, "talk": draw(st.booleans())}, audience=actor
            )
        elif what == "read":
            log.tick().add("inbox.read", {}, audience=actor)
        elif what == "pref":
            category = draw(
                st.sampled_from(["watched_page", "mention", "page_deleted", "watched_page_comment"])
            )
            log.add(
                "inbox_pref.updated",
                {
                    "category": category,
                    "channel": draw(st.sampled_from(["in_app", "email"])),
                    "enabled": draw(st.booleans()),
                },
                audience=actor,
            )
        elif what == "section":
            section = draw(st.sampled_from(["watching", "discussions", "reviews", "everything"]))
            log.add(
                "notifications.settings",
                {"sections": {section: draw(st.sampled_from(["off", "in_app", "email"]))}},
            )
        elif what == "submit":
            log.tick().add(
                draw(st.sampled_from(["submission.created", "submission.updated"])),
                {"submission": f"sub-{page}", "page": page},
                actor=actor,
            )
        else:
            log.tick().add("page.deleted", {"page": page}, actor=actor)
            log.tick().add("page.restored", {"page": page}, actor=actor)
    return log


@HEAVY
@given(wiki_logs())
def test_properties_of_a_replayed_wiki(log: WikiLog) -> None:
    """N7 the actor is never a recipient; N8 nobody without access gets an entry; N10 at most
    one unread entry per (person, key), and a key's counts add up to the events that reached
    the person on it."""
    lines, run = replay(log)
    events = {e["seq"]: e for e in log.events}
    reached: Counter[tuple[str, str]] = Counter()
    for line in lines:
        event = events[line["seq"]]
        if line["decision"] == "skip":
            continue
        assert line["recipient"] != event.get("actor")
        reached[(line["recipient"], line["group_key"])] += 1
        if line["category"] in ("watched_page", "page_created", "page_deleted"):
            assert line.get("reason") is None
    store = entries(run)
    unread: Counter[tuple[str, str]] = Counter()
    counts: Counter[tuple[str, str]] = Counter()
    for entry in store.entries.values():
        counts[(entry.person, entry.group_key)] += entry.state.count
        unread[(entry.person, entry.group_key)] += not entry.state.read
        assert entry.state.email_after is None or entry.state.email.value in ("pending", "sending")
    assert max(unread.values(), default=0) <= 1
    assert counts == reached  # nothing is dismissed in these logs


@HEAVY
@given(wiki_logs())
def test_n8_nobody_without_access_gets_an_entry(log: WikiLog) -> None:
    """Each entry's recipient holds the category's permission on the page as the fan-out saw
    it (the new path of a rename, the old page of a deletion), by the groups of that moment."""
    run = Replay()
    wiki = run.inbox.wiki
    assert isinstance(wiki, WikiMemory)
    for text, event in zip(log.lines(), log.events, strict=True):
        p = event["payload"]
        assert isinstance(p, dict)
        page_id = (
            p.get("page")
            or (wiki.comment(str(p.get("comment"))) or CommentInfo(id="", page="")).page
        )
        page = wiki.page(str(page_id))
        if page is not None and event["type"] == "page.renamed":
            page = attrs.evolve(page, path=str(p["path"]))
        groups = dict(wiki.known_groups)
        member_of = dict(wiki.groups_of)
        for item in run.feed(text, 0):
            if not isinstance(item, InboxLine) or item.entry is None:
                continue
            permission = CATEGORY_BY_KEY[item.category].access
            if permission is not None:
                assert page is not None
                person_groups = member_of.get(item.recipient, frozenset())
                assert holds(person_groups, groups, permission, page.access)


@HEAVY
@given(wiki_logs())
def test_replaying_an_event_twice_changes_nothing(log: WikiLog) -> None:
    """N10: the same event applied twice (a retried fan-out) leaves every entry as it was."""
    from notify_core.events.log import parse_event

    run = Replay()
    for text in log.lines():
        list(run.feed(text, 0))
    store = entries(run)
    before = dict(store.entries)
    last = parse_event(json.loads(log.lines()[-1]))
    run.inbox.handle(last)
    assert store.entries == before


def test_n10_an_event_that_closed_its_entry_changes_nothing_when_applied_again() -> None:
    """N10, N12: ana's open entry had its mail sent; she turns in-app off, and the next edit
    coalesces and closes the entry (email-only, sent). That edit applied again (a retried
    fan-out) starts no new entry: an event fans out once even after its entry closed."""
    from notify_core.events.log import parse_event

    log = WikiLog().user("ana").user("ben").page("p1", "ops/runbook").watch("p1", "ana")
    log.edit("p1").tick(600)
    log.add(
        "inbox_pref.updated",
        {"category": "watched_page", "channel": "in_app", "enabled": False},
        audience="ana",
    )
    log.edit("p1")
    run = Replay()
    for text in log.lines():
        list(run.feed(text, 0))
    store = entries(run)
    closed = store.entries["ana:watched_page:p1:1"]
    assert (closed.state.read, closed.state.email, closed.state.count) == (True, "sent", 2)
    before = dict(store.entries)
    assert run.inbox.handle(parse_event(json.loads(log.lines()[-1]))) == []
    assert store.entries == before


def test_e2_e3_a_daily_person_waits_for_the_slot_until_the_schedule_changes() -> None:
    """E2: digest categories wait for ana's daily slot (09:00 Tokyo plus her offset), mentions
    go at once; E3: a schedule change moves her pending entries from the change's time."""
    log = WikiLog().user("ana", email_schedule="daily", daily_hour=9, time_zone="Asia/Tokyo")
    log.user("ben").page("p1", "ops/runbook").watch("p1", "ana")
    log.now = log.now.replace(hour=10)
    log.add("page.edited", {"page": "p1"}, actor="ben")
    log.comment("c1", "p1", "ben", mentions=["ana"])
    run = Replay()
    lines = [json.loads(dumps_item(item)) for text in log.lines() for item in run.feed(text, 0)]
    assert [(x["category"], x["email_after"]) for x in lines] == [
        ("watched_page", "2026-12-01T00:56:58Z"),  # the spec's email_after_for example
        ("mention", "2026-11-30T10:04:00Z"),  # digest: no, always immediate
    ]

    def due(entry: str) -> str:
        found = entries(run).get(entry)
        assert found is not None and found.state.email_after is not None
        return found.state.email_after.isoformat()

    def update(payload: dict[str, object]) -> list[object]:
        log.tick().add("user.updated", {"user": "ana", **payload})
        return list(run.feed(log.lines()[-1], len(log.events)))

    update({"email_schedule": "immediate"})  # at 10:02
    assert due("ana:watched_page:p1:1") == "2026-11-30T10:05:00+00:00"
    assert due("ana:mention:c1:1") == "2026-11-30T10:04:00+00:00"
    update({"email_schedule": "immediate", "locale": "ja"})  # no change of the schedule
    assert due("ana:watched_page:p1:1") == "2026-11-30T10:05:00+00:00"
    update({"email_schedule": "daily"})  # the daily hour 9 is kept
    assert due("ana:watched_page:p1:1") == "2026-12-01T00:56:58+00:00"
    try:
        update({"unset": ["daily_hour"]})
    except EventError as error:
        assert error.pointer == "/payload/daily_hour"
    else:
        raise AssertionError("daily without a daily hour must be refused")
    assert due("ana:watched_page:p1:1") == "2026-12-01T00:56:58+00:00"


def test_e4_one_mail_per_person_and_site_digest_more_and_skips() -> None:
    log = WikiLog().user("ana").user("ben").user("cy")
    log.add("site.created", {"site": "s2", "host": "two.example.org", "https": True})
    for n in range(53):
        log.page(f"p{n}", f"docs/{n}").watch(f"p{n}", "ana")
    log.add(
        "page.created",
        {"page": "q1", "site": "s2", "path": "x", "locale": "en", "title": "Q"},
        actor="ben",
    )
    log.watch("q1", "ana", "cy")
    log.add(
        "inbox_pref.updated",
        {"category": "watched_page", "channel": "in_app", "enabled": False},
        audience="cy",
    )
    for n in range(53):
        log.add("page.edited", {"page": f"p{n}"}, actor="ben")
        log.tick(1)
    log.add("page.edited", {"page": "q1"}, actor="ben")
    log.add("site.updated", {"site": "s2", "notifications": False})
    lines, run = replay(log, mails=True)
    mails = [x for x in lines if x["trigger"] == "mail"]
    # ana's 53 entries of s1 fall due one second apart: each drain sends what is due then.
    assert (
        mails[0]["template"] == "single"
        and mails[0]["entries"][0]["entry"] == "ana:watched_page:p0:1"
    )
    sends = [m for m in mails if m["decision"] == "send"]
    assert len(sends) == 53 and all(m["site"] == "s1" for m in sends)
    skips = [m for m in mails if m["decision"] == "skip"]
    assert [(m["recipient"], m["site"], m["reason"]) for m in skips] == [
        ("ana", "s2", "site_off"),
        ("cy", "s2", "site_off"),
    ]
    assert all("template" not in m and "unsubscribe" not in m for m in skips)
    store = entries(run)
    cy = store.get("cy:watched_page:q1:1")
    assert cy is not None and cy.state.read and cy.state.email is EmailState.SKIPPED  # N12
    ana = store.get("ana:watched_page:p0:1")
    assert ana is not None and ana.state.email is EmailState.SENT and not ana.state.read


def test_e4_a_digest_shows_fifty_latest_first_and_counts_the_rest() -> None:
    log = WikiLog().user("ana").user("ben")
    log.add("notifications.settings", {"email_delay_s": 3600})
    for n in range(55):
        log.page(f"p{n:02d}", f"docs/{n}").watch(f"p{n:02d}", "ana")
    log.add("page.edited", {"page": "p00"}, actor="ben")  # the first: due at 09:00
    log.tick(600)
    for n in range(1, 55):
        log.add("page.edited", {"page": f"p{n:02d}"}, actor="ben")
    log.tick(600).add("notifications.settings", {"sections": {"everything": "off"}})
    log.add("inbox_pref.stop_all_email", {}, audience="ana")
    log.add("notifications.settings", {"email_delay_s": 0})
    lines, _ = replay(log, mails=True)
    mails = [x for x in lines if x["trigger"] == "mail"]
    assert [(m["decision"], m.get("reason"), len(m["entries"])) for m in mails] == [
        ("skip", "preference", 1),  # p00 at 09:00: ana stopped all email since
        ("skip", "preference", 54),
    ]


def test_e4_a_digest_of_several_entries() -> None:
    log = WikiLog().user("ana").user("ben").user("cy")
    for n in range(55):
        log.page(f"p{n:02d}", f"docs/{n}").watch(f"p{n:02d}", "ana")
    for n in range(55):
        log.add("page.edited", {"page": f"p{n:02d}"}, actor="ben")  # all at 08:01, due 08:04
    log.comment("c1", "p00", "cy", mentions=["ana"])
    log.add("notifications.settings", {"sections": {"discussions": "in_app"}})
    lines, _ = replay(log, mails=True)
    mails = [x for x in lines if x["trigger"] == "mail"]
    assert [(m["decision"], m.get("template"), m.get("reason")) for m in mails] == [
        ("send", "digest", None),
        ("skip", None, "section_off"),
    ]
    digest = mails[0]
    assert len(digest["entries"]) == 50 and digest["more"] == 5
    ids = [e["entry"] for e in digest["entries"]]
    assert ids == sorted(ids, reverse=True)  # the same time: by id, descending
    assert digest["unsubscribe"] == ["watched_page"]


def test_n4_the_summary_says_when_the_log_never_configured_mail(tmp_path: Path) -> None:
    log = WikiLog(mail=False).user("ana").user("ben").page("p1", "x").watch("p1", "ana")
    log.edit("p1")
    path = tmp_path / "wiki.jsonl"
    path.write_text("\n".join(log.lines()) + "\n")
    summary = tmp_path / "summary.json"
    result = CliRunner().invoke(cli, ["replay", str(path), "--summary-json", str(summary)])
    assert result.exit_code == 0, result.output
    assert json.loads(summary.read_text())["mail_configured"] is False
    assert "no email is sent" in result.stderr
