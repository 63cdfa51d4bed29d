"""The pages say what exists: docs/index.md against the packages and the command line, the
README's links and its 5-minute tour against the files and the library's real output."""

from __future__ import annotations

import ast
import importlib
import inspect
import itertools
import pkgutil
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import click

import notify_cli
import notify_core
import notify_pg
import notify_reference_host
from notify_cli.main import cli
from tests.docs.test_rule_ids import NOT_BUILT
from tests.docs.test_rules_doc import refs

ROOT = Path(__file__).resolve().parents[2]
INDEX = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
README = (ROOT / "README.md").read_text(encoding="utf-8")
PACKAGES = (notify_core, notify_pg, notify_reference_host, notify_cli)


def modules() -> set[str]:
    """The modules and subpackages directly inside the packages."""
    return {
        f"{package.__name__}.{info.name}"
        for package in PACKAGES
        for info in pkgutil.iter_modules(package.__path__)
        if info.name != "__main__" and not info.name.startswith("_")
    }


def status_rows() -> list[list[str]]:
    section = INDEX.split("## Status", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ")]
    # The header and the |---| line.
    return [[cell.strip() for cell in row.strip("|").split("|")] for row in rows[1:]]


def test_index_lists_the_commands_of_the_cli() -> None:
    block = re.search(r"^notify_cli +commands: (.*)$", INDEX, re.MULTILINE)
    assert block is not None, "docs/index.md: the notify_cli line of 'The packages' is gone"
    listed = [name.strip() for name in block.group(1).split(",")]
    assert listed == cli.list_commands(click.Context(cli)), (
        "docs/index.md: name the commands of `notify --help`"
    )


def test_index_status_names_every_module_and_only_modules_that_exist() -> None:
    named = {name for row in status_rows() for name in re.findall(r"`(notify_\w+\.\w+)`", row[1])}
    assert sorted(modules() - named) == [], "docs/index.md: add these modules to the status table"
    assert sorted(named - modules()) == [], "docs/index.md: the status table names modules gone"


def test_index_status_says_not_built_exactly_for_rules_not_built() -> None:
    for part, _, rules in status_rows():
        ids = refs.ids_in(rules)
        if "not built" in rules:
            built = sorted(ids - NOT_BUILT)
            assert built == [], f"docs/index.md: '{part}': move the rules built now to their row"
        else:
            assert not ids & NOT_BUILT, f"docs/index.md: '{part}' cites rules not built yet"
    assert all(any(rule in refs.ids_in(row[2]) for row in status_rows()) for rule in NOT_BUILT)


def test_index_and_readme_say_nothing_is_half_written() -> None:
    for text in (INDEX, README):
        assert re.search(r"in progress|being written|not started", text) is None


def test_readme_links_lead_to_files() -> None:
    links = re.findall(r"\]\(([^)]+)\)", README)
    local = [link.split("#", 1)[0] for link in links if "://" not in link]
    assert local, "README.md has no local links any more: adjust this test"
    assert [link for link in local if not (ROOT / link).exists()] == []


def test_readme_names_every_command() -> None:
    docs_line = re.search(r"\[docs/cli\.md\]\(docs/cli\.md\): (.*?);\n", README, re.DOTALL)
    assert docs_line is not None
    assert sorted(re.findall(r"`(?:notify )?(\w+)`", docs_line.group(1))) == cli.list_commands(
        click.Context(cli)
    )


def test_readme_tour_prints_what_the_readme_shows(tmp_path: Path) -> None:
    tour = README.split("## 5-minute tour", 1)[1]
    code = re.search(r"```python\n(.*?)```", tour, re.DOTALL)
    shown = re.search(r"Output:\n\n```\n(.*?)```", tour, re.DOTALL)
    assert code is not None and shown is not None
    result = subprocess.run(
        [sys.executable, "-c", code.group(1)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == shown.group(1)


def docstrings() -> list[tuple[str, str]]:
    found = []
    for package in PACKAGES:
        for path in sorted(Path(package.__path__[0]).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in [tree, *ast.walk(tree)]:
                if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef):
                    text = ast.get_docstring(node, clean=True)
                    if text:
                        found.append(
                            (f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', 1)}", text)
                        )
    return found


def glued_lists(text: str) -> list[str]:
    """The first items of lists that follow a paragraph line without a blank line between.

    Markdown (the API reference renders docstrings as markdown) reads such a list as part of
    the paragraph: one run-on line.
    """
    glued = []
    lines = text.splitlines()
    for before, line in itertools.pairwise(lines):
        indent = len(line) - len(line.lstrip())
        before_indent = len(before) - len(before.lstrip())
        if (
            line.lstrip().startswith("- ")
            and before.strip()
            and not before.lstrip().startswith("- ")
            and before_indent <= indent
            and not before.rstrip().endswith("::")
        ):
            glued.append(line.strip())
    return glued


def test_docstring_lists_start_after_a_blank_line() -> None:
    glued = [f"{where}: {item}" for where, text in docstrings() for item in glued_lists(text)]
    assert glued == []


def test_glued_lists_finds_a_list_glued_to_its_paragraph() -> None:
    assert glued_lists("Rules:\n- one\n- two\n  more") == ["- one"]
    assert glued_lists("Rules:\n\n- one\n  more\n- two") == []


def subpackages(*packages: ModuleType) -> list[ModuleType]:
    return [
        importlib.import_module(f"{package.__name__}.{info.name}")
        for package in packages
        for info in pkgutil.iter_modules(package.__path__)
        if info.ispkg
    ]


#: The API reference: an overview and one page per package wing (mkdocs.yml's nav).
API_PAGES = [ROOT / "docs" / "api.md", *sorted((ROOT / "docs").glob("api-*.md"))]
#: A ``:::`` line, and the options under it (``members: false`` renders a docstring only).
DIRECTIVE = re.compile(r"^::: ([\w.]+)\n((?:    .*\n)*)", re.MULTILINE)


def api_directives(page: Path) -> list[tuple[str, bool]]:
    """The modules a page renders, in order, each with whether its members are rendered."""
    text = page.read_text(encoding="utf-8")
    return [
        (name, re.search(r"^ +members: false$", options, re.MULTILINE) is None)
        for name, options in DIRECTIVE.findall(text)
    ]


def exported_homes() -> dict[str, set[str]]:
    """The modules that hold the names a package or a wing exports -> those packages."""
    homes: dict[str, set[str]] = {}
    for package in (
        notify_core,
        notify_pg,
        notify_reference_host,
        *subpackages(notify_core, notify_pg),
    ):
        for name in getattr(package, "__all__", ()):
            value = getattr(package, name)
            if inspect.isclass(value) or inspect.isfunction(value):
                homes.setdefault(value.__module__, set()).add(package.__name__)
    return homes


def test_api_reference_renders_every_module_a_package_exports_from() -> None:
    """Over the split pages of the reference: every module that holds an exported name is
    rendered with its members, by a ``:::`` line of its own or of a subpackage whose members
    are rendered (a ``members: false`` line shows the docstring only: it covers nothing)."""
    rendered = {name for page in API_PAGES for name, members in api_directives(page) if members}
    missing = {
        home
        for home in exported_homes()
        if home not in rendered and not any(home.startswith(f"{r}.") for r in rendered)
    }
    assert sorted(missing) == [], "docs/api-*.md: add a ::: line for these modules"
    in_nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert [page.name for page in API_PAGES if page.name not in in_nav] == []


def test_api_reference_pages_show_the_public_names_first() -> None:
    """On each page, the modules of exported names come before the per-module helpers, and
    no module is rendered twice (issue 40 point 8: the reference split by wing)."""
    homes = exported_homes()
    seen: list[str] = []
    for page in API_PAGES:
        order = [
            name in homes or any(h.startswith(f"{name}.") for h in homes)
            for name, members in api_directives(page)
            if members
        ]
        assert order == sorted(order, reverse=True), f"{page.name}: exported names first"
        seen += [name for name, members in api_directives(page) if members]
    assert len(seen) == len(set(seen)), "a module rendered on two pages"
    assert len(API_PAGES) >= 10  # one page per wing, not one page of everything


def fenced_blocks(text: str) -> list[str]:
    """The bodies of the fenced blocks of a page, dedented (a block in a list is indented)."""
    return [
        textwrap.dedent(body).strip("\n")
        for _, body in re.findall(r"^( *)```[^\n]*\n(.*?)^ *```$", text, re.DOTALL | re.M)
    ]


def test_the_start_page_and_the_landing_show_the_readme_blocks_verbatim() -> None:
    """docs/start.md and the top of docs/index.md bring the README's start to the site: each
    of their blocks is one of the README's (which tests run as written)."""
    readme = fenced_blocks(README)
    start = fenced_blocks((ROOT / "docs" / "start.md").read_text(encoding="utf-8"))
    landing = fenced_blocks(INDEX.split("## The packages", 1)[0])
    assert len(start) >= 5 and len(landing) == 2
    assert [block for block in start + landing if block not in readme] == []
