"""The demo page of `notify serve --demo` in headless Chromium (issue 28 point 5): the badge
follows a write within a second without a poll, a dismissal in one tab shows in another,
reading, paging and both unsubscribe actions work from the page."""

from __future__ import annotations

import shutil
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from pgworld import SCHEMA
from playwright.sync_api import BrowserContext, Page, expect, sync_playwright
from webworld import edit, make_wiki, serving

from notify_core.mail import unsubscribe_token
from notify_pg.inbox.reads import InboxPreferences
from notify_pg.mail.secret import unsubscribe_secret

Conn = psycopg.Connection[Any]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


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


def open_demo(browser: BrowserContext, url: str, errors: list[str]) -> Page:
    page = browser.new_page()
    page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(url)
    expect(page.locator("#live")).to_have_text("live")
    return page


def counts(page: Page) -> dict[str, int]:
    found: dict[str, int] = page.evaluate("() => ({...window.notifyDemo.counts})")
    return found


def test_the_badge_follows_a_write_without_a_poll_and_tabs_follow_each_other(
    db_dsn: str, conn: Conn, browser: BrowserContext, tmp_path: Path
) -> None:
    wiki = make_wiki(conn, readers=("ana",))
    for n in range(2, 34):  # 32 more pages ana watches: 33 entries, two pages of the list
        wiki.add_page(conn, f"p{n}", "s1", f"/docs/p{n}", title=f"Page {n}")
        wiki.watch(conn, f"p{n}", "ana")
    errors: list[str] = []
    with serving(db_dsn, demo=True) as served:
        url = f"http://127.0.0.1:{served.port}/demo?user=ana"
        one = open_demo(browser, url, errors)
        other = open_demo(browser, url, errors)
        expect(one.locator("#badge")).to_have_text("0")
        before = counts(one)
        edit(conn, wiki)  # committed: the fan-out's NOTIFY goes now
        # Within a second (with margin for a loaded machine), and by the push, not a poll.
        expect(one.locator("#badge")).to_have_text("1", timeout=2000)
        expect(other.locator("#badge")).to_have_text("1", timeout=2000)
        after = counts(one)
        assert after["poll"] == before["poll"] and after["push"] > before["push"]
        expect(one.locator("#entries li")).to_have_count(1)
        # A dismissal in one tab empties the other's list and badge.
        one.locator("#entries li .dismiss").click()
        expect(other.locator("#entries li")).to_have_count(0, timeout=2000)
        expect(other.locator("#badge")).to_have_text("0")
        # Many entries: a page of 30, "Older" loads the rest; reading one moves the badge.
        for n in range(2, 34):
            edit(conn, wiki, n, page=f"p{n}")
        expect(one.locator("#badge")).to_have_text("32", timeout=5000)
        expect(one.locator("#entries li")).to_have_count(30)
        one.locator("#more").click()
        expect(one.locator("#entries li")).to_have_count(32)
        one.locator("#entries li.unread .read").first.click()
        expect(other.locator("#badge")).to_have_text("31", timeout=2000)
        one.locator("#read-all").click()
        expect(other.locator("#badge")).to_have_text("0", timeout=2000)
        one.screenshot(path=str(tmp_path / "demo.png"), full_page=True)
        one.close()
        other.close()
    assert errors == []


def test_the_demo_page_unsubscribes_from_a_token_both_ways(
    db_dsn: str, conn: Conn, browser: BrowserContext
) -> None:
    make_wiki(conn, readers=("ana",))
    token = unsubscribe_token(unsubscribe_secret(conn, schema=SCHEMA), "ana", ["watched_page"])
    errors: list[str] = []
    with serving(db_dsn, demo=True) as served:
        query = urllib.parse.urlencode({"user": "ana", "t": token})
        page = open_demo(browser, f"http://127.0.0.1:{served.port}/demo?{query}", errors)
        expect(page.locator("#unsub-categories li")).to_have_text(["watched_page"])
        page.locator("#unsub-these").click()
        expect(page.locator("#unsub-result")).to_have_text("You will get no email about these.")
        choices = InboxPreferences(SCHEMA).rows(conn, ["ana"])["ana"]
        assert choices == {("watched_page", "email"): False}
        page.locator("#unsub-all").click()
        expect(page.locator("#unsub-result")).to_have_text("You will get no notification email.")
        assert len(InboxPreferences(SCHEMA).rows(conn, ["ana"])["ana"]) == 5
        page.locator("#token").fill("nonsense")
        page.locator("#unsub-form button").click()
        expect(page.locator("#unsub-result")).to_have_text("This unsubscribe link is not valid.")
        # Without the host's ports the preference routes are not served: the page says so.
        expect(page.locator("#prefs-unavailable")).to_be_visible()
        page.close()
    # The invalid token's 400 is a failed fetch the console reports; nothing else.
    assert [e for e in errors if "400" not in e] == []


def test_the_demo_page_draws_the_preference_grid_and_changes_it_member_by_member(
    db_dsn: str, conn: Conn, browser: BrowserContext
) -> None:
    """H2a on the page: every category with both channels, default or own; a click is one
    PATCH of that member, kept and audited by the server; the schedule changes the same way."""
    make_wiki(conn, readers=("ana",))
    errors: list[str] = []
    with serving(db_dsn, demo=True, admin=True) as served:
        url = f"http://127.0.0.1:{served.port}/demo?user=ana"
        page = open_demo(browser, url, errors)
        rows = page.locator("#prefs-rows tr")
        expect(rows.first).to_be_visible()
        categories = page.eval_on_selector_all(
            "#prefs-rows tr", "rows => rows.map(r => r.dataset.category)"
        )
        assert "watched_page" in categories and len(categories) == rows.count() >= 7
        email = page.locator('input[data-category="watched_page"][data-channel="email"]')
        expect(email).to_be_checked()
        email.uncheck()
        expect(page.locator("#prefs-result")).to_have_text("Saved.")
        assert InboxPreferences(SCHEMA).rows(conn, ["ana"])["ana"] == {
            ("watched_page", "email"): False
        }
        page.select_option("#prefs-schedule", "hourly")
        expect(page.locator("#prefs-result")).to_have_text("Saved.")
        page.close()
        again = open_demo(browser, url, errors)  # what the server keeps, drawn anew
        email = again.locator('input[data-category="watched_page"][data-channel="email"]')
        expect(email).not_to_be_checked()
        expect(
            again.locator('tr[data-category="watched_page"] td:nth-child(4) .note')
        ).to_contain_text("your choice")
        expect(again.locator("#prefs-schedule")).to_have_value("hourly")
        again.close()
    audited = conn.execute(
        f"SELECT count(*) FROM {SCHEMA}.inbox_audit WHERE user_id = 'ana'"
    ).fetchone()
    assert audited is not None and audited[0] == 2
    assert errors == []
