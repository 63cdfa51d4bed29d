"""The demo page as people read it (H1, issue 38) in headless Chromium, on the shipped wiki
(examples/wiki-week.jsonl loaded as `notify db load` loads it, served with the host's ports as
`notify serve --host-schema host --demo`): each entry is the sentence its mail names it by,
in the person's language, with its time and its link; the grid names categories and
sections; the site switcher offers the wiki's sites and shows each site's inbox."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from pgworld import HOST_SCHEMA, SCHEMA
from playwright.sync_api import BrowserContext, expect, sync_playwright
from test_demo_page import CHROMIUM, FLAGS, open_demo
from webworld import T0, edit, make_wiki, serving

from notify_core.events.log import parse_event
from notify_pg.http.handlers import inbox_list
from notify_pg.inbox.fanout import InboxFanOut
from notify_pg.inbox.reads import emit
from notify_reference_host.wiki import ReferenceWiki
from notify_reference_host.wiki_load import WikiLoader

Conn = psycopg.Connection[Any]
WIKI = Path(__file__).resolve().parents[3] / "examples" / "wiki-week.jsonl"


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrowserContext]:
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")),
            executable_path=CHROMIUM,
            headless=True,
            args=FLAGS,
        )
        yield context
        context.close()


def load_wiki(conn: Conn) -> ReferenceWiki:
    wiki = ReferenceWiki(HOST_SCHEMA)
    loader = WikiLoader(wiki, InboxFanOut(wiki, schema=SCHEMA), schema=SCHEMA)
    for text in WIKI.read_text(encoding="utf-8").splitlines():
        loader.feed(conn, parse_event(json.loads(text)))
    return wiki


def listed(conn: Conn, wiki: ReferenceWiki, person: str, site: str) -> list[dict[str, Any]]:
    """The person's first page of a site's inbox, as the API answers it."""
    answer = inbox_list(
        conn, person, site=site, hidden_sites=wiki.sites_off(conn), schema=SCHEMA, host=wiki
    )
    assert answer.status == 200
    found: list[dict[str, Any]] = json.loads(answer.body)["entries"]
    return found


def test_h1_the_demo_page_reads_each_entry_as_a_sentence_with_its_time_and_link(
    db_dsn: str, conn: Conn, browser: BrowserContext, tmp_path: Path
) -> None:
    wiki = load_wiki(conn)
    sites = [site[0] for site in wiki.inbox_sites(conn)]
    assert sites == ["docs", "handbook"]  # archive has notifications off
    person = next(
        p
        for p in ("ben", "dara", "eli", "femi", "gus", "hana")
        if all(listed(conn, wiki, p, s) for s in sites)
    )
    docs = listed(conn, wiki, person, "docs")
    handbook = listed(conn, wiki, person, "handbook")
    errors: list[str] = []
    with serving(db_dsn, demo=True, admin=True) as served:
        page = open_demo(browser, f"http://127.0.0.1:{served.port}/demo?user={person}", errors)
        # The switcher offers the shipped wiki's sites; the first one's inbox shows.
        options = page.eval_on_selector_all("#site option", "os => os.map(o => o.value)")
        assert options == sites
        expect(page.locator("#site")).to_have_value("docs")
        items = page.locator("#entries li")
        expect(items).to_have_count(len(docs))
        first = items.first.locator("a.text")
        expect(first).to_have_text(docs[0]["text"])
        assert first.get_attribute("href") == docs[0]["link"]
        assert docs[0]["link"].startswith("https://docs.example.org/")
        time = items.first.locator("time")
        assert time.get_attribute("datetime") == docs[0]["updated_at"]
        expect(time).not_to_be_empty()
        if "actor_name" in docs[0]:
            expect(items.first.locator(".actor")).to_contain_text(docs[0]["actor_name"])
            assert docs[0]["actor_name"] in docs[0]["text"]
        # Every sentence is a person's: a display name or the neutral word, never an id.
        texts = page.eval_on_selector_all("#entries a.text", "as => as.map(a => a.textContent)")
        assert texts == [e["text"] for e in docs]
        # The grid names categories and sections as the mails' catalogue does.
        expect(page.locator('tr[data-category="watched_page"] td').first).to_have_text(
            "Changes to pages you watch"
        )
        expect(page.locator('tr[data-category="mention"] td').nth(1)).to_have_text("Discussions")
        # Switching the site shows that site's inbox and keeps it in the address.
        page.select_option("#site", "handbook")
        expect(items.first.locator("a.text")).to_have_text(handbook[0]["text"])
        expect(items).to_have_count(len(handbook))
        assert "site=handbook" in page.url
        links = page.eval_on_selector_all("#entries a.text", "as => as.map(a => a.href)")
        assert all(link.startswith("https://handbook.example.org/") for link in links)
        page.screenshot(path=str(tmp_path / "demo-reading.png"), full_page=True)
        page.close()
    assert errors == []


def test_h1_the_demo_page_speaks_the_persons_language(
    db_dsn: str, conn: Conn, browser: BrowserContext
) -> None:
    """Ana's locale is German in the shipped wiki: her entries read in German, and the grid
    names the categories in German."""
    wiki = load_wiki(conn)
    docs = listed(conn, wiki, "ana", "docs")
    assert docs and all(" hat " in e["text"] or " wurde " in e["text"] for e in docs)
    errors: list[str] = []
    with serving(db_dsn, demo=True, admin=True) as served:
        page = open_demo(browser, f"http://127.0.0.1:{served.port}/demo?user=ana&site=docs", errors)
        expect(page.locator("#entries a.text").first).to_have_text(docs[0]["text"])
        expect(page.locator('tr[data-category="watched_page"] td').first).to_have_text(
            "Änderungen an beobachteten Seiten"
        )
        page.close()
    assert errors == []


def test_h2_opening_an_entry_on_the_demo_page_reads_what_its_view_reads(
    db_dsn: str, conn: Conn, browser: BrowserContext
) -> None:
    """Opening a comment's entry is a view of the talk tab: it reads the comment's entry and
    leaves the page's; opening the page's entry then reads that one (the host's page calls,
    PUT .../pages/PAGE/talk and .../view)."""
    wiki = make_wiki(conn, readers=("ana",))
    with conn.transaction():
        wiki.add_group(conn, "talkers", [{"permission": "read_comments", "match": "all"}])
        wiki.add_member(conn, "talkers", "ana")
    edit(conn, wiki)
    wiki.add_comment(conn, "c1", "p1", author="editor", excerpt="hello")
    emit(
        conn,
        "comment.created",
        {"comment": "c1", "page": "p1"},
        actor="editor",
        occurred_at=T0 + timedelta(minutes=1),
        schema=SCHEMA,
    )
    InboxFanOut(wiki, schema=SCHEMA).drain(conn)
    # The wiki's own pages, where the entries' links go, answered here.
    browser.route("https://wiki.example/**", lambda route: route.fulfill(body="a wiki page"))
    errors: list[str] = []
    try:
        with serving(db_dsn, demo=True, admin=True) as served:
            url = f"http://127.0.0.1:{served.port}/demo?user=ana"
            page = open_demo(browser, url, errors)
            expect(page.locator("#badge")).to_have_text("2")
            talk = page.locator('#entries li[data-category="watched_page_comment"]')
            assert talk.locator("a.text").get_attribute("href") == (
                "https://wiki.example/docs/start#comment-c1"
            )
            with browser.expect_page() as opened:
                talk.locator("a.text").click()
            opened.value.close()
            expect(page.locator("#badge")).to_have_text("1")
            expect(talk).to_have_class("read")
            expect(page.locator('#entries li[data-category="watched_page"]')).to_have_class(
                "unread"
            )
            with browser.expect_page() as opened:
                page.locator('#entries li[data-category="watched_page"] a.text').click()
            opened.value.close()
            expect(page.locator("#badge")).to_have_text("0")
            page.close()
    finally:
        browser.unroute("https://wiki.example/**")
    assert errors == []
