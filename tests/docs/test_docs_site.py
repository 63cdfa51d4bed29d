"""The built site in headless Chromium: the pages a new user opens first render without
console errors, with the theme's code-copy buttons, working search and rule links.

Chromium is Debian's (``chromium``; .ci/run installs it when missing), driven by Playwright
without Playwright's own browser download.
"""

from __future__ import annotations

import functools
import http.server
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import BrowserContext, Page, sync_playwright

from tests.docs.test_rules_doc import refs

ROOT = Path(__file__).resolve().parents[2]

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


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def site_url(docs_site: tuple[subprocess.CompletedProcess[str], Path]) -> Iterator[str]:
    """The built site served over HTTP (search runs in a web worker, which file:// forbids)."""
    result, site = docs_site
    assert result.returncode == 0, result.stdout + result.stderr
    handler = functools.partial(QuietHandler, directory=str(site))
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        yield f"http://127.0.0.1:{server.server_address[1]}/"
        server.shutdown()


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


def open_page(browser: BrowserContext, url: str) -> tuple[Page, list[str]]:
    """Open ``url``; answer the page and every console error, page error and failed request."""
    page = browser.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(f"console: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
    page.on("requestfailed", lambda r: errors.append(f"request failed: {r.url}"))
    response = page.goto(url, wait_until="networkidle")
    assert response is not None and response.ok, url
    return page, errors


@pytest.mark.parametrize(
    ("path", "title", "anchors"),
    [
        ("", "notify", ["the-packages", "status"]),
        (
            "architecture/",
            "Architecture",
            [
                "packages",
                "the-contracts",
                "a-chat-message-in-a-replay",
                "a-wiki-edit-on-postgresql",
            ],
        ),
        ("api/", "API reference", ["notify_core", "notify_pg"]),
        # The reference is split by wing (issue 40 point 8): each name on its wing's page.
        ("api-core-hints/", "Core: hints", ["notify_core.hints.decide.decide"]),
        (
            "api-pg-stores/",
            "Adapter: database and stores",
            [
                "notify_pg.db.migrate.migrate",
                "notify_pg.stores.store.NotifyStore",
                "notify_pg.stores.ports.PipelineHostPorts",
                "notify_pg.db.errors.StorageError",
            ],
        ),
        (
            "api-pg-push/",
            "Adapter: push path",
            ["notify_pg.push.worker.WorkerConfig"],
        ),
        (
            "api-pg-worker/",
            "Adapter: loop, worker, operations",
            ["notify_pg.ops.status.pipeline_status"],
        ),
        # Every rule's anchor (no id written here: tests/docs/test_rule_ids.py would read it as
        # cited).
        ("rules/", "Rules", refs.rule_anchors((ROOT / "docs" / "rules.md").read_text("utf-8"))),
    ],
    ids=[
        "index",
        "architecture",
        "api",
        "api-core-hints",
        "api-pg-stores",
        "api-pg-push",
        "api-pg-worker",
        "rules",
    ],
)
def test_page_renders_without_errors(
    browser: BrowserContext, site_url: str, path: str, title: str, anchors: list[str]
) -> None:
    page, errors = open_page(browser, site_url + path)
    assert page.title().split(" - ")[0] == title
    for anchor in anchors:
        assert page.locator(f"[id='{anchor}']").count() == 1, anchor
    # The theme's script ran: it adds a copy button to every code block.
    blocks = page.locator("article pre > code").count()
    assert page.locator("article pre [data-md-type='copy']").count() == blocks
    page.close()
    assert errors == []


def test_search_finds_a_function_of_the_api(browser: BrowserContext, site_url: str) -> None:
    page, errors = open_page(browser, site_url)
    search = page.locator("input.md-search__input")
    search.click()
    # Typed key by key: the theme searches on keyboard events.
    search.press_sequentially("pipeline_status")
    result = page.locator(".md-search-result__item mark", has_text="pipeline_status")
    result.first.wait_for(timeout=10_000)
    assert "notify_pg.ops.status.pipeline_status" in (
        page.locator(".md-search-result__item a").nth(1).get_attribute("href") or ""
    )
    page.close()
    assert errors == []


def test_a_rule_id_in_the_text_leads_to_its_rule(browser: BrowserContext, site_url: str) -> None:
    page, errors = open_page(browser, site_url + "concepts/")
    link = page.locator("a.rule-id").first
    rule = link.inner_text()
    link.click()
    page.wait_for_url(f"**/rules/#{rule}")
    assert page.locator(f"[id='{rule}']").inner_text().startswith(f"{rule}.")
    page.close()
    assert errors == []


def test_the_architecture_picture_is_served_with_the_site(
    browser: BrowserContext, site_url: str
) -> None:
    """The picture is an SVG file of docs/, served by the site itself (no third party)."""
    page, errors = open_page(browser, site_url + "architecture/")
    picture = page.locator("article img[src$='architecture.svg']")
    assert picture.count() == 1
    assert picture.evaluate("img => img.complete && img.naturalWidth") > 0
    page.close()
    assert errors == []
