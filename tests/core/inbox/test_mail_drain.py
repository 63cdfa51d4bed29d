"""E4: the drain's plan (`plan_mails`), one mail per (person, site) of the due entries, and
its properties: every due entry in exactly one mail or skip, at most 50 rendered, the order."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import attrs
from hypothesis import given
from hypothesis import strategies as st

from notify_core.inbox.categories import CATEGORY_BY_KEY, Section
from notify_core.inbox.coalesce import EmailState, EntryState
from notify_core.inbox.drain import MAX_SHOWN, MailSkip, plan_mails
from notify_core.inbox.fanout import PersonFacts
from notify_core.inbox.ports import Entry, EntryTarget
from notify_core.inbox.prefs import NO_PREFS, Delivery, InboxSettings

T0 = datetime(2026, 11, 30, 10, tzinfo=UTC)
ON = InboxSettings(mail_configured=True)
ANA = PersonFacts(email="ana@example.org", verified=True)
PEOPLE = {p: PersonFacts(email=f"{p}@example.org", verified=True) for p in ("ana", "ben", "cy")}


def entry(
    id_: str,
    person: str = "ana",
    site: str | None = "s1",
    category: str = "watched_page",
    updated: int = 0,
) -> Entry:
    state = EntryState(
        count=1,
        variant="edited",
        variants=("edited",),
        email=EmailState.PENDING,
        last_event="1",
        in_app=True,
        updated_at=T0 + timedelta(seconds=updated),
        email_after=T0,
    )
    return Entry(
        id=id_,
        person=person,
        category=category,
        group_key=f"{category}:{id_}",
        state=state,
        created_at=T0,
        target=EntryTarget(site=site, page="p1"),
    )


def test_e4_one_entry_is_a_single_mail() -> None:
    (mail,) = plan_mails(
        [entry("e1")], site_on=lambda s: True, people={"ana": ANA}, settings=ON, first_site="s1"
    )
    assert (mail.recipient, mail.site, mail.template, mail.more, mail.skip) == (
        "ana",
        "s1",
        "single",
        0,
        None,
    )
    assert mail.unsubscribe == ("watched_page",)


def test_e4_a_digest_renders_latest_first_ties_by_id_descending() -> None:
    due = [
        entry("a", updated=5, category="mention"),
        entry("b", updated=9),
        entry("c", updated=5, category="mention"),
        entry("d", updated=1, category="comment_reply"),
    ]
    (mail,) = plan_mails(
        due, site_on=lambda s: True, people={"ana": ANA}, settings=ON, first_site="s1"
    )
    assert mail.template == "digest"
    assert [e.id for e in mail.entries] == ["b", "c", "a", "d"]
    assert mail.unsubscribe == ("comment_reply", "mention", "watched_page")


def test_e4_more_than_50_entries_render_50_and_mark_all_sent() -> None:
    due = [
        entry(f"e{n:03}", updated=n, category="mention" if n == 0 else "watched_page")
        for n in range(60)
    ]
    (mail,) = plan_mails(
        due, site_on=lambda s: True, people={"ana": ANA}, settings=ON, first_site="s1"
    )
    assert len(mail.entries) == MAX_SHOWN == 50 and mail.more == 10 and len(mail.sent) == 60
    assert mail.entries[0].id == "e059"
    assert mail.unsubscribe == ("mention", "watched_page")  # e000 is sent, not shown


def test_e4_no_site_goes_with_the_first_site() -> None:
    due = [entry("a1"), entry("a2", site="s2"), entry("a3", site=None, updated=1)]
    plans = plan_mails(
        due, site_on=lambda s: True, people={"ana": ANA}, settings=ON, first_site="s1"
    )
    assert [(p.site, [e.id for e in p.sent]) for p in plans] == [
        ("s1", ["a3", "a1"]),
        ("s2", ["a2"]),
    ]


def test_e4_skips_site_off_section_off_and_preference_after_the_send() -> None:
    prefs = NO_PREFS.set("mention", "email", False)
    people = {"ana": PersonFacts(email="a@x", verified=True, prefs=prefs)}
    settings = InboxSettings(sections={Section.EVERYTHING: Delivery.IN_APP}, mail_configured=True)
    due = [
        entry("off", site="s2"),
        entry("sec", category="page_created"),
        entry("pref", category="mention"),
        entry("ok"),
    ]
    plans = plan_mails(
        due, site_on=lambda s: s != "s2", people=people, settings=settings, first_site="s1"
    )
    assert [(p.site, p.skip, [e.id for e in p.entries]) for p in plans] == [
        ("s1", None, ["ok"]),
        ("s1", MailSkip.PREFERENCE, ["pref"]),
        ("s1", MailSkip.SECTION_OFF, ["sec"]),
        ("s2", MailSkip.SITE_OFF, ["off"]),
    ]


def test_e4_n4_mail_not_configured_or_unverified_is_preference() -> None:
    due = [entry("a"), entry("b", person="ben")]
    people = {"ana": ANA, "ben": PersonFacts(email="b@x", verified=False)}
    plans = plan_mails(due, site_on=lambda s: True, people=people, settings=ON, first_site="s1")
    assert [(p.recipient, p.skip) for p in plans] == [("ana", None), ("ben", MailSkip.PREFERENCE)]
    off = plan_mails(
        due, site_on=lambda s: True, people=people, settings=InboxSettings(), first_site="s1"
    )
    assert {p.skip for p in off} == {MailSkip.PREFERENCE}


# --- properties -------------------------------------------------------------------------------

CATEGORIES = ("watched_page", "mention", "comment_reply", "page_created")
queued = st.lists(
    st.builds(
        lambda n, person, site, category, updated: entry(f"e{n}", person, site, category, updated),
        st.integers(0, 10_000),
        st.sampled_from(["ana", "ben", "cy", "dan"]),  # dan: unknown to the host
        st.sampled_from(["s1", "s2", "s3", None]),
        st.sampled_from(CATEGORIES),
        st.integers(-5, 5),
    ),
    max_size=150,
    unique_by=lambda e: e.id,
)


@given(
    queued,
    st.frozensets(st.sampled_from(["s1", "s2"])),
    st.dictionaries(st.sampled_from(list(Section)), st.sampled_from(list(Delivery))),
    st.frozensets(st.tuples(st.sampled_from(["ana", "ben", "cy"]), st.sampled_from(CATEGORIES))),
    st.booleans(),
)
def test_e4_every_due_entry_is_in_exactly_one_mail_or_skip(
    due: list[Entry],
    sites_off: frozenset[str],
    sections: dict[Section, Delivery],
    off: frozenset[tuple[str, str]],
    configured: bool,
) -> None:
    people = {}
    for person, facts in PEOPLE.items():
        prefs = NO_PREFS
        for p, category in off:
            if p == person:
                prefs = prefs.set(category, "email", False)
        people[person] = PersonFacts(email=facts.email, verified=True, prefs=prefs)
    settings = InboxSettings(sections=sections, mail_configured=configured)
    plans = plan_mails(
        due,
        site_on=lambda s: s not in sites_off,
        people=people,
        settings=settings,
        first_site="s1",
    )
    touched = [e.id for p in plans for e in (p.sent if p.skip is None else p.entries)]
    assert len(touched) == len(set(touched))
    assert set(touched) == {e.id for e in due}  # nothing else: only given entries appear
    pairs = [(p.recipient, p.site) for p in plans if p.skip is None]
    assert len(pairs) == len(set(pairs))  # one mail per (person, site)
    order = [(p.recipient, p.site, "" if p.skip is None else p.skip.value) for p in plans]
    assert order == sorted(order)
    for plan in plans:
        listed = plan.sent if plan.skip is None else plan.entries
        keys = [(e.state.updated_at, e.id) for e in listed]
        assert keys == sorted(keys, reverse=True)
        for e in listed:
            assert (e.person, e.target.site or "s1") == (plan.recipient, plan.site)
        if plan.skip is not None:
            continue
        assert len(plan.entries) <= MAX_SHOWN
        assert plan.entries == plan.sent[: len(plan.entries)]
        assert plan.more == len(plan.sent) - len(plan.entries)
        assert plan.template == ("single" if len(plan.sent) == 1 else "digest")
        assert plan.unsubscribe == tuple(sorted({e.category for e in plan.sent}))
        assert configured and plan.recipient in people
        for e in plan.sent:
            category = CATEGORY_BY_KEY[e.category]
            assert plan.site not in sites_off
            assert sections.get(category.section, Delivery.EMAIL) is Delivery.EMAIL
            assert (e.person, e.category) not in off


@given(st.integers(1, 130))
def test_e4_at_most_50_rendered_whatever_the_count(n: int) -> None:
    (mail,) = plan_mails(
        [entry(f"e{i}", updated=i) for i in range(n)],
        site_on=lambda s: True,
        people={"ana": ANA},
        settings=ON,
        first_site="s1",
    )
    assert len(mail.entries) == min(n, MAX_SHOWN) and mail.more == max(0, n - MAX_SHOWN)


@given(
    st.lists(
        st.tuples(
            st.integers(-5, 5), st.sampled_from(list(EmailState)), st.sampled_from(["ana", "ben"])
        ),
        max_size=60,
    ),
    st.integers(-5, 5),
)
def test_e4_the_drain_touches_no_entry_that_is_not_due(
    rows: list[tuple[int, EmailState, str]], at_s: int
) -> None:
    from notify_core.inbox.memory.entries import EntryMemory
    from notify_core.inbox.memory.wiki import WikiMemory
    from notify_core.inbox.pipeline import InboxPipeline

    store = EntryMemory()
    for n, (after, email, person) in enumerate(rows):
        e = entry(f"e{n}", person=person)
        due_at = T0 + timedelta(seconds=after) if email in (EmailState.PENDING,) else None
        store.save(e._replace(state=attrs.evolve(e.state, email=email, email_after=due_at)))
    before = dict(store.entries)
    at = T0 + timedelta(seconds=at_s)
    wiki = WikiMemory()
    lines = InboxPipeline(wiki=wiki, entries=store).drain(at)
    expected = {
        key
        for key, e in before.items()
        if e.state.email is EmailState.PENDING
        and e.state.email_after is not None
        and e.state.email_after <= at
    }
    changed = {key for key, e in store.entries.items() if e != before[key]}
    assert changed == expected
    assert {e.id for line in lines for e in line.entries} == expected  # all skipped: no people
    assert all(store.entries[key].state.email is EmailState.SKIPPED for key in expected)
