"""The example reports committed under docs/report/ are what the code writes today (issue 27,
point 7: the committed page said 469 messages reported by flushes when the code gave 462).

Refresh them, and the screenshot docs/report.md shows, after a change to the report or to the
example week::

    .venv/bin/python -m tests.cli.test_report_example

The check is byte for byte when the installed Altair and vl-convert are those that wrote the
files (the page's ``generator`` meta names them); under other versions the same specs may
draw other SVG, so the check compares the page with each chart's drawing left out (every
table, caption, title and figure) and says the drawings went unchecked.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from click.testing import CliRunner

from notify_cli.main import cli
from notify_cli.report import generator

ROOT = Path(__file__).resolve().parents[2]
FOLDER = ROOT / "docs" / "report"
REFRESH = ".venv/bin/python -m tests.cli.test_report_example"
#: Each committed report and the arguments of `notify replay` that write it, run from the
#: repository's root with the paths as docs/report.md gives them (the page shows them).
REPORTS = {
    "team-week.html": ["examples/team-week.jsonl"],
    "team-week-compare.html": [
        "examples/team-week.jsonl",
        "--compare",
        "docs/report/no-windows.toml",
    ],
}
SCREENSHOT = "team-week.png"  # of team-week.html


@contextmanager
def _at_root() -> Iterator[None]:
    before = Path.cwd()
    os.chdir(ROOT)
    try:
        yield
    finally:
        os.chdir(before)


def write_reports(folder: Path) -> dict[str, str]:
    """Write every example report into ``folder`` as the code does now; answer the pages."""
    pages = {}
    with _at_root():
        for name, args in REPORTS.items():
            result = CliRunner().invoke(cli, ["replay", *args, "--report", str(folder / name)])
            assert result.exit_code == 0, result.output
            pages[name] = (folder / name).read_text(encoding="utf-8")
    return pages


def _generator(page: str) -> str | None:
    found = re.search(r'<meta name="generator" content="([^"]*)">', page)
    return found.group(1) if found else None


def _without_drawings(page: str) -> str:
    """The page with each chart's SVG and its size (what vl-convert's version decides) cut out."""
    page = re.sub(r"<svg\b.*?</svg>", "<svg/>", page, flags=re.S)
    page = re.sub(r' data-width="[^"]*" data-height="[^"]*"', "", page)
    return re.sub(r'<meta name="generator" content="[^"]*">', "", page)


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The example reports as the code writes them, once for the module."""
    return write_reports(tmp_path_factory.mktemp("report"))


@pytest.mark.parametrize("name", sorted(REPORTS))
def test_the_committed_report_is_what_the_code_writes(written: dict[str, str], name: str) -> None:
    committed = (FOLDER / name).read_text(encoding="utf-8")
    stale = f"docs/report/{name} is stale; refresh it with: {REFRESH}"
    if _generator(committed) == generator():
        assert committed == written[name], stale
    else:
        # Drawn by other versions of altair and vl-convert (a fresh install may take newer
        # ones): the tables and the text are compared, the drawings are theirs to decide.
        assert _without_drawings(committed) == _without_drawings(written[name]), stale


def test_under_other_versions_all_but_the_drawings_is_compared() -> None:
    page = (FOLDER / "team-week.html").read_text(encoding="utf-8")
    redrawn = re.sub(r"(<svg\b[^>]*>)", r"\1<g/>", page).replace(generator(), "other versions")
    redrawn = re.sub(r'data-width="[^"]*"', 'data-width="1"', redrawn)
    assert _without_drawings(redrawn) == _without_drawings(page)
    # The total the issue found stale (462 then; 385 since the week has preference records).
    assert "<td>385</td>" in page
    stale = page.replace("<td>385</td>", "<td>469</td>")
    assert _without_drawings(stale) != _without_drawings(page)


def test_the_refresh_command_is_the_one_documented() -> None:
    assert REFRESH in (ROOT / "docs" / "report.md").read_text(encoding="utf-8")


def refresh() -> None:
    """Rewrite docs/report/'s reports, and the screenshot when Chromium and Playwright are here."""
    write_reports(FOLDER)
    print("wrote", *(f"docs/report/{name}" for name in REPORTS))
    try:
        from playwright.sync_api import sync_playwright

        from tests.docs.test_docs_site import CHROMIUM, FLAGS
    except ImportError:
        print(f"no Playwright: docs/report/{SCREENSHOT} is unchanged", file=sys.stderr)
        return
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        # The width of the screenshot the docs have shown since the first report.
        page = browser.new_page(viewport={"width": 760, "height": 1000})
        page.goto((FOLDER / "team-week.html").as_uri(), wait_until="networkidle")
        page.screenshot(path=str(FOLDER / SCREENSHOT), full_page=True)
        browser.close()
    print(f"wrote docs/report/{SCREENSHOT}")


if __name__ == "__main__":
    refresh()
