"""The replay report in headless Chromium: it loads offline without console errors and every
chart has drawn an SVG of the size vl-convert gave it. The example week's screenshot is
written here too (docs/report/team-week.png is one such screenshot).

Chromium and the browser fixture are those of tests/docs/test_docs_site.py.
"""

from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from playwright.sync_api import BrowserContext

from notify_cli.main import cli
from tests.docs import test_docs_site as docs_site_tests

ROOT = Path(__file__).resolve().parents[2]
WEEK = ROOT / "examples" / "team-week.jsonl"

browser = docs_site_tests.browser  # the same fixture: Debian's Chromium through Playwright


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """The example week's reports (one policy, and a comparison) served over HTTP."""
    folder = tmp_path_factory.mktemp("report")
    (folder / "no-windows.toml").write_text("coalesce_window_s = 0\n")
    runs = [
        ["--report", str(folder / "week.html")],
        ["--compare", str(folder / "no-windows.toml"), "--report", str(folder / "compare.html")],
    ]
    for args in runs:
        result = CliRunner().invoke(cli, ["replay", str(WEEK), *args])
        assert result.exit_code == 0, result.output
    handler = functools.partial(docs_site_tests.QuietHandler, directory=str(folder))
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        yield f"http://127.0.0.1:{server.server_address[1]}/", folder
        server.shutdown()


@pytest.mark.parametrize(("name", "charts"), [("week", 5), ("compare", 6)])
def test_report_draws_every_chart(
    browser: BrowserContext, reports: tuple[str, Path], name: str, charts: int
) -> None:
    url, folder = reports
    requests: list[str] = []
    browser.on("request", lambda r: requests.append(r.url))
    page, errors = docs_site_tests.open_page(browser, f"{url}{name}.html")
    figures = page.locator("figure.chart")
    assert figures.count() == charts
    for index in range(charts):
        figure = figures.nth(index)
        svg = figure.locator("svg")
        assert svg.count() == 1
        box = svg.bounding_box()
        assert box is not None
        width = float(figure.get_attribute("data-width") or 0)
        height = float(figure.get_attribute("data-height") or 0)
        assert width > 100 and height > 50
        assert (round(box["width"]), round(box["height"])) == (round(width), round(height))
        # Drawn: marks with a shape (bars are paths of non-zero extent).
        drawn = svg.evaluate(
            "s => [...s.querySelectorAll('.mark-rect path, .mark-rule line')]"
            ".filter(e => { const b = e.getBBox(); return b.width > 0 || b.height > 0; }).length"
        )
        assert drawn > 0, figure.get_attribute("data-chart")
    page.screenshot(path=str(folder / f"{name}.png"), full_page=True)
    page.close()
    assert errors == []
    # Offline: the page itself is all the browser asked for (its icon is an inline one).
    assert [r for r in requests if not r.startswith("data:")] == [f"{url}{name}.html"]
