"""Issue 25 points 3-6 in the core and the replay: the inbox of a site (H1), the drain's check
of the person at its own instant (E4: ``inactive``, ``no_access``), a deletion carrying its
page (N9), views reaching email-only entries (H2), deleted comments (N1) and a comment edit
on a switched-off site (N5)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st
from inbox_log import WikiLog

from notify_cli.main import cli
from notify_core.events.log import EventError
from notify_core.inbox.access import Group, Match, PageFacts, Rule
from notify_core.inbox.categories import Permission, Section
from notify_core.inbox.coalesce import EmailState, EntryState
from notify_core.inbox.drain import DrainAccess, MailSkip, plan_mails
from notify_core.inbox.fanout import PersonFacts
from notify_core.inbox.memory.entries import EntryMemory
from notify_core.inbox.ports import Entry, EntryTarget
from notify_core.inbox.prefs import Delivery, InboxPrefs, InboxSettings
from notify_core.inbox.view import UNREAD_CAP, inbox_list, inbox_summary
from notify_core.replay.lines import dumps_item
from notify_core.replay.run import Replay

T0 = datetime(2026, 11, 30, 10, tzinfo=UTC)
HERE = Path(__file__).parents[2] / "inbox"
SCENARIO = HERE / "sites_and_send_time.jsonl"
READ = Group(rules=(Rule(permission=Permission.READ_PAGES, match=Match.ALL),))
READ_COMMENTS = Group(rules=(Rule(permission=Permission.READ_COMMENTS, match=Match.ALL),))


def entry(
    id_: str,
    person: str = "ana",
    *,
    site: str | None = "s1",
    category: str = "watched_page",
    page: str = "p1",
    updated: int = 0,
    in_app: bool = True,
    read: bool = False,
) -> Entry:
    state = EntryState(
        count=1,
        variant="edited",
        variants=("edited",),
        email=EmailState.PENDING,
        last_event="1",
        in_app=in_app,
        updated_at=T0 + timedelta(seconds=updated),
        email_after=T0,
        read=read,
    )
    return Entry(
        id=id_,
        person=person,
        category=category,
        group_key=f"{category}:{id_}",
        state=state,
        created_at=T0,
        target=EntryTarget(site=site, page=page),
    )


def person(**kw: object) -> PersonFacts:
    base = PersonFacts(email="x@example.org", verified=True, groups=frozenset({"readers"}))
    return base._replace(**kw)  # type: ignore[arg-type]


def replay(lines: list[str]) -> tuple[list[dict[str, object]], Replay]:
    run = Replay(include_skips=True)
    out = []
    for item in run.run(lines):
        assert not isinstance(item, EventError), item
        out.append(json.loads(dumps_item(item)))
    return out, run


def mails(out: list[dict[str, object]]) -> list[tuple[object, ...]]:
    return [(o["recipient"], o["decision"], o.get("reason")) for o in out if o["trigger"] == "mail"]


# --- E4: the drain checks the person again ---------------------------------------------------


def test_e4_a_person_deactivated_after_the_edit_gets_no_mail() -> None:
    plans = plan_mails(
        [entry("e1")],
        site_on=lambda s: True,
        people={"ana": person(active=False)},
        settings=InboxSettings(mail_configured=True),
        first_site="s1",
    )
    assert [(p.recipient, p.skip) for p in plans] == [("ana", MailSkip.INACTIVE)]


def test_e4_a_system_or_unknown_person_is_inactive_at_the_drain() -> None:
    plans = plan_mails(
        [entry("e1", "ana"), entry("e2", "ben")],
        site_on=lambda s: True,
        people={"ana": person(system=True)},
        settings=InboxSettings(mail_configured=True),
        first_site="s1",
    )
    assert [(p.recipient, p.skip) for p in plans] == [
        ("ana", MailSkip.INACTIVE),
        ("ben", MailSkip.INACTIVE),
    ]


def test_e4_an_entry_whose_page_the_person_can_no_longer_read_is_skipped_the_rest_goes() -> None:
    access = DrainAccess(
        groups={"readers": READ, "commenters": READ_COMMENTS},
        pages={"p1": PageFacts(path="ops/a"), "p2": PageFacts(path="ops/b")},
    )
    due = [
        entry("e1", page="p1"),
        entry("e2", page="p2", category="mention"),  # read_comments: held
        entry("e3", page="p2", category="review_requested"),  # reviews check none
        entry("e4", page="gone"),  # a page the host no longer knows: not checked again
    ]
    plans = plan_mails(
        due,
        site_on=lambda s: True,
        people={"ana": person(groups=frozenset({"commenters"}))},
        settings=InboxSettings(mail_configured=True),
        first_site="s1",
        access=access,
    )
    assert [(p.skip, [e.id for e in p.entries]) for p in plans] == [
        (None, ["e4", "e3", "e2"]),
        (MailSkip.NO_ACCESS, ["e1"]),
    ]


def test_e4_access_is_computed_once_per_page_and_group_set_however_many_people() -> None:
    access = DrainAccess(groups={"readers": READ}, pages={"p1": PageFacts(path="a")})
    people = {f"u{n:03d}": person() for n in range(200)}
    due = [entry(f"e{n}", p) for n, p in enumerate(people)]
    plans = plan_mails(
        due,
        site_on=lambda s: True,
        people=people,
        settings=InboxSettings(mail_configured=True),
        first_site="s1",
        access=access,
    )
    assert len(plans) == 200 and all(p.skip is None for p in plans)
    assert access.evaluations == 1


REASONS = [
    MailSkip.SITE_OFF,
    MailSkip.INACTIVE,
    MailSkip.NO_ACCESS,
    MailSkip.SECTION_OFF,
    MailSkip.PREFERENCE,
]


@given(
    site_on=st.booleans(),
    active=st.booleans(),
    readable=st.booleans(),
    section_on=st.booleans(),
    pref_on=st.booleans(),
)
def test_e4_an_entry_several_reasons_skip_takes_the_first_in_order(
    site_on: bool, active: bool, readable: bool, section_on: bool, pref_on: bool
) -> None:
    """Property: the reason is the first failing check of site_off, inactive, no_access,
    section_off, preference; with none failing, the mail goes."""
    prefs = InboxPrefs() if pref_on else InboxPrefs(rows={("watched_page", "email"): False})
    settings = InboxSettings(
        mail_configured=True,
        sections={} if section_on else {Section.WATCHING: Delivery.IN_APP},
    )
    groups = {"readers": READ if readable else Group()}
    (plan,) = plan_mails(
        [entry("e1")],
        site_on=lambda s: site_on,
        people={"ana": person(active=active, prefs=prefs)},
        settings=settings,
        first_site="s1",
        access=DrainAccess(groups=groups, pages={"p1": PageFacts(path="a")}),
    )
    failing = [site_on, active, readable, section_on, pref_on]
    expected = next((r for r, ok in zip(REASONS, failing, strict=True) if not ok), None)
    assert plan.skip == expected


# --- the replay: the scenario log -------------------------------------------------------------


def scenario() -> tuple[list[dict[str, object]], Replay]:
    return replay(SCENARIO.read_text().splitlines())


def test_e4_replay_deactivated_and_removed_from_the_group_30_s_after_the_edit() -> None:
    out, run = scenario()
    first = [m for m in mails(out)][:4]
    assert first == [
        ("ana", "send", None),
        ("cy", "skip", "inactive"),
        ("dan", "skip", "no_access"),
        ("hal", "send", None),
    ]
    # A deny rule added after the edit: the entry is skipped as no_access at the drain.
    assert mails(out)[-2:] == [("gus", "skip", "no_access"), ("hal", "skip", "no_access")]
    summary = run.summary.to_json()
    assert summary["mail_skips_by_reason"] == {"no_access": 3, "inactive": 1, "site_off": 4}


def test_e4_site_off_comes_before_inactive() -> None:
    out, _ = scenario()
    assert ("eve", "skip", "site_off") in mails(out)
    assert ("eve", "skip", "inactive") not in mails(out)


def test_h2_a_view_reaches_an_email_only_entry_inbox_reads_and_dismissals_do_not() -> None:
    out, run = scenario()
    store = run.inbox.entries
    assert isinstance(store, EntryMemory)
    gus = store.get("gus:watched_page:p1:1")
    hal = store.get("hal:watched_page:p1:1")
    assert gus is not None and gus.state.read and gus.state.email is EmailState.SKIPPED
    # hal's inbox read and dismissal did not reach it: his mail went, and it closed with it.
    assert hal is not None and hal.state.email is EmailState.SENT
    assert ("gus", "send", None) not in mails(out)[:4]


def test_n9_n1_deletion_reaches_its_watchers_and_a_reply_to_a_deleted_comment_no_one() -> None:
    out, _ = scenario()
    deleted = [o for o in out if o["trigger"] == "inbox" and o.get("variant") == "deleted"]
    assert {o["recipient"] for o in deleted} == {"ana", "fay"}
    assert not [o for o in out if o.get("category") == "comment_reply"]
    edit_of_deleted = [o for o in out if o.get("seq") == 55]
    assert edit_of_deleted == []


def test_n5_a_comment_edit_on_a_switched_off_site_names_only_real_candidates() -> None:
    """6(c): jay was mentioned before the edit: no candidate, no line (as with the site on)."""
    out, _ = scenario()
    edit = [o for o in out if o.get("seq") == 58]
    assert [(o["recipient"], o["reason"]) for o in edit] == [("ivy", "site_off")]


def test_n5_the_same_edit_with_the_site_on_gives_jay_nothing_either() -> None:
    log = WikiLog().user("ana").user("ben").user("ivy").user("jay").page("p1", "a")
    log.comment("c1", "p1", "ben", mentions=["jay"])
    log.tick().add("comment.edited", {"comment": "c1", "mentions": ["jay", "ivy"]}, actor="ben")
    out, _ = replay(log.lines())
    assert [(o["recipient"], o["decision"]) for o in out if o.get("seq") == len(log.events)] == [
        ("ivy", "new")
    ]


def test_n1_an_edit_of_a_deleted_comment_gives_nothing_even_with_new_mentions() -> None:
    log = WikiLog().user("ana").user("ben").user("ivy").page("p1", "a").watch("p1", "ana")
    log.comment("c1", "p1", "ben", excerpt="x")
    log.tick().add("comment.deleted", {"comment": "c1"}, actor="ben")
    log.tick().add("comment.edited", {"comment": "c1", "mentions": ["ivy"]}, actor="ben")
    log.comment("c2", "p1", "ana", parent="c1")
    out, _ = replay(log.lines())
    assert [o for o in out if o.get("seq") == len(log.events) - 1] == []
    reply = [o for o in out if o.get("seq") == len(log.events)]
    assert all(o["category"] != "comment_reply" for o in reply)
    assert [o["recipient"] for o in reply if o["decision"] != "skip"] == []


# --- H1: the inbox of a site ------------------------------------------------------------------


def test_h1_the_inbox_of_a_site_lists_its_entries_and_those_with_no_site() -> None:
    entries = [
        entry("a", site="s1", updated=1),
        entry("b", site="s2", updated=2),
        entry("c", site=None, updated=3),
        entry("d", site="s1", updated=4, in_app=False),
        entry("e", site="s1", updated=5, read=True),
    ]
    assert [e.id for e in inbox_list(entries, site="s1").entries] == ["e", "c", "a"]
    assert [e.id for e in inbox_list(entries, site="s1", unread_only=True).entries] == ["c", "a"]
    assert [e.id for e in inbox_list(entries, site="s2").entries] == ["c", "b"]
    assert [e.id for e in inbox_list(entries, site="s1", hidden_sites={"s1"}).entries] == ["c"]
    summary = inbox_summary(entries, site="s1")
    assert (summary.unread, summary.latest_at) == (2, T0 + timedelta(seconds=5))


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["s1", "s2", None]),
            st.integers(0, 20),
            st.booleans(),
            st.booleans(),
        ),
        max_size=80,
    ),
    st.integers(1, 7),
    st.booleans(),
)
def test_h1_pages_cover_the_shown_entries_once_newest_first(
    rows: list[tuple[str | None, int, bool, bool]], limit: int, unread_only: bool
) -> None:
    """Property: walking the pages by their ``next`` gives every shown entry of the site
    exactly once, by (updated_at, id) descending; the summary counts the unread ones."""
    entries = [
        entry(f"e{n:03d}", site=site, updated=at, in_app=in_app, read=read)
        for n, (site, at, in_app, read) in enumerate(rows)
    ]

    def pages() -> Iterator[Entry]:
        after = None
        while True:
            page = inbox_list(entries, site="s1", unread_only=unread_only, after=after, limit=limit)
            yield from page.entries
            if page.next is None:
                return
            after = page.next

    got = list(pages())
    shown = [
        e
        for e in entries
        if e.state.in_app and e.target.site in ("s1", None) and not (unread_only and e.state.read)
    ]
    shown.sort(key=lambda e: (e.state.updated_at, e.id), reverse=True)
    assert got == shown
    unread = sum(1 for e in shown if not e.state.read)
    assert inbox_summary(entries, site="s1").unread == min(
        UNREAD_CAP,
        sum(
            1
            for e in entries
            if e.state.in_app and e.target.site in ("s1", None) and not e.state.read
        ),
    )
    assert unread <= len(shown)


def test_h1_the_replay_twin_answers_per_site() -> None:
    _, run = scenario()
    store = run.inbox.entries
    assert isinstance(store, EntryMemory)
    on_s1 = inbox_list(store.entries_of("ana"), site="s1").entries
    on_s2 = inbox_list(store.entries_of("ana"), site="s2").entries
    assert {e.target.site for e in on_s1} == {"s1"} and {e.target.site for e in on_s2} == {"s2"}


def test_summary_json_of_the_cli_names_the_new_skip_reasons(tmp_path: Path) -> None:
    summary = tmp_path / "summary.json"
    result = CliRunner().invoke(
        cli, ["replay", str(SCENARIO), "--include-skips", "--summary-json", str(summary)]
    )
    assert result.exit_code == 0, result.output
    reasons = json.loads(summary.read_text())["mail_skips_by_reason"]
    assert set(reasons) == {"inactive", "no_access", "site_off"}
