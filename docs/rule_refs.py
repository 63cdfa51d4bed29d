"""Link every rule of docs/rules.md to the code and the tests that cite it.

As a mkdocs hook (mkdocs.yml ``hooks``) it searches the packages and the tests for each rule
id of rules.md at build time, adds under each rule a line "Code: ... Tests: ..." with links to
those files (or "Not built yet." for an id of ``NOT_BUILT`` in tests/docs/test_rule_ids.py), and
adds each linked file to the site as a page of its own (``source/<path>/``), highlighted, with
an anchor per line; the links point at the first line that cites the id. A search, not a
hand-kept list, so the links stay true as code moves (docs/decisions.md).

tests/docs/test_rules_doc.py loads this file too: the same search decides which ids are cited.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PAGE = "rules.md"
SOURCE_DIR = "source"
CODE_DIRS = ("notify_core", "notify_pg", "notify_reference_host", "notify_cli")
CODE_SUFFIXES = (".py", ".sql")
TEST_SUFFIXES = (".py", ".jsonl")
# tests/docs/test_rule_ids.py names every id to check the others: it cites none.
NOT_CITING = frozenset({"tests/docs/test_rule_ids.py", "tests/docs/test_rules_doc.py"})

LETTERS = "GLQKDSRBMNEUH"
# "AZ-M48" names a scenario of seed 001's test plan and "ticket M3-20" one of its tickets, not
# rules of those numbers.
RULE_ID = re.compile(
    rf"(?<![A-Za-z0-9_])(?<!AZ-)(?<!ticket )([{LETTERS}])(\d{{1,2}})([ab]?)(?![A-Za-z0-9_])"
)
# "D1-D7" or "D1-7" cites D1 to D7 (B1a-B2 is not a range of the same letter family).
RULE_RANGE = re.compile(
    rf"(?<![A-Za-z0-9_])(?<!AZ-)(?<!ticket )([{LETTERS}])(\d{{1,2}})\s?[-\u2013]\s?\1?(\d{{1,2}})\b"
)
ANCHOR = re.compile(r"^\{#([A-Za-z0-9-]+)\}$", re.MULTILINE)
# The preference records of rules.md have no letter ids: code and tests name their section.
RECORDS = "records"
RECORDS_CITATION = re.compile(r"section 8|behaviour\.md 8|seed 002|rules\.md#records")
# Tests also cite a rule in their name, in any case: ``def test_g3_values_are_frozen``.
TEST_NAME = re.compile(r"\bdef (test_\w+)")
NAME_PART = re.compile(rf"[{LETTERS}]\d{{1,2}}[ab]?", re.IGNORECASE)


def rule_anchors(markdown: str) -> list[str]:
    """Return the anchors of rules.md that name a rule (letter ids and ``records``)."""
    return [
        anchor
        for anchor in ANCHOR.findall(markdown)
        if anchor == RECORDS or RULE_ID.fullmatch(anchor)
    ]


def ids_in(text: str) -> set[str]:
    """Return the rule ids a text cites, ranges such as ``D1-D7`` expanded."""
    found = {"".join(m.groups()) for m in RULE_ID.finditer(text)}
    for letter, first, last in RULE_RANGE.findall(text):
        found.update(f"{letter}{n}" for n in range(int(first), int(last) + 1))
    if RECORDS_CITATION.search(text):
        found.add(RECORDS)
    for name in TEST_NAME.findall(text):
        found.update(
            part[0].upper() + part[1:].lower()
            for part in name.split("_")[1:]
            if NAME_PART.fullmatch(part)
        )
    return found


def first_lines(text: str) -> dict[str, int]:
    """Return, for each id a text cites, the number of the first line citing it."""
    lines: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        for rule in ids_in(line):
            lines.setdefault(rule, number)
    return lines


def _files(directories: Iterable[str], suffixes: tuple[str, ...]) -> list[Path]:
    return sorted(
        path
        for directory in directories
        for path in (ROOT / directory).rglob("*")
        if path.suffix in suffixes
        and path.is_file()
        and "__pycache__" not in path.parts
        and path.relative_to(ROOT).as_posix() not in NOT_CITING
    )


class Citations:
    """Which files of the code and of the tests cite which rule, and at which line."""

    def __init__(self) -> None:
        self.code: dict[str, dict[str, int]] = {}
        self.tests: dict[str, dict[str, int]] = {}
        for target, paths in (
            (self.code, _files(CODE_DIRS, CODE_SUFFIXES)),
            (self.tests, _files(["tests"], TEST_SUFFIXES)),
        ):
            for path in paths:
                # tests/hostile holds bytes that are not UTF-8 on purpose: read them anyway.
                relative = path.relative_to(ROOT).as_posix()
                for rule, line in first_lines(
                    path.read_text(encoding="utf-8", errors="replace")
                ).items():
                    target.setdefault(rule, {})[relative] = line

    def files(self) -> set[str]:
        """Every file that cites a rule."""
        return {
            path for table in (self.code, self.tests) for files in table.values() for path in files
        }


def not_built() -> frozenset[str]:
    """Return ``NOT_BUILT`` of tests/docs/test_rule_ids.py (the one list of ids not built yet)."""
    path = ROOT / "tests" / "docs" / "test_rule_ids.py"
    spec = importlib.util.spec_from_file_location("_rule_ids", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return frozenset(module.NOT_BUILT)


def source_uri(path: str) -> str:
    """The site page that shows the file ``path`` of the repository."""
    return f"{SOURCE_DIR}/{path}.md"


def _links(files: dict[str, int]) -> str:
    return ", ".join(
        f"[`{path}`]({source_uri(path)}#__codelineno-0-{line})"
        for path, line in sorted(files.items())
    )


def refs_line(rule: str, citations: Citations, unbuilt: frozenset[str]) -> str:
    """The line shown under a rule: where its code and tests live, or that it is not built."""
    parts = []
    if rule in unbuilt:
        parts.append("*Not built yet.*")
    code = citations.code.get(rule, {})
    tests = citations.tests.get(rule, {})
    if code:
        parts.append(f"Code: {_links(code)}.")
    if tests:
        parts.append(f"Tests: {_links(tests)}.")
    return " ".join(parts) or "*Cited by no code and no test.*"


def with_refs(markdown: str, citations: Citations, unbuilt: frozenset[str]) -> str:
    """Return rules.md with the line of `refs_line` after each rule's anchor."""

    def add(match: re.Match[str]) -> str:
        anchor = match.group(1)
        if anchor != RECORDS and not RULE_ID.fullmatch(anchor):
            return match.group(0)
        line = refs_line(anchor, citations, unbuilt)
        return f'{match.group(0)}\n\n<div class="rule-refs" markdown>\n{line}\n</div>'

    return ANCHOR.sub(add, markdown)


def source_page(path: str) -> str:
    """The markdown of the page showing the file ``path``, one anchor per line."""
    text = (ROOT / path).read_text(encoding="utf-8", errors="replace")
    fence = "`" * max(3, 1 + max((len(run) for run in re.findall(r"`+", text)), default=0))
    language = {".py": "python", ".sql": "sql", ".jsonl": "json"}[Path(path).suffix]
    up = "../" * (path.count("/") + 1)
    return (
        "---\nsearch:\n  exclude: true\n---\n\n"
        f"# `{path}`\n\n"
        f"A file of the repository that [Rules]({up}rules.md) links to.\n\n"
        f'{fence}{language} linenums="1"\n{text}{fence}\n'
    )


_state: dict[str, Any] = {}


def on_files(files: Any, config: Any, **kwargs: Any) -> Any:
    """Add a page for every file that cites a rule (mkdocs hook)."""
    from mkdocs.structure.files import File

    citations = Citations()
    _state["citations"] = citations
    rules = Path(config["docs_dir"]) / PAGE
    _state["anchors"] = frozenset(rule_anchors(rules.read_text(encoding="utf-8")))
    for path in sorted(citations.files()):
        files.append(File.generated(config, source_uri(path), content=source_page(path)))
    return files


def on_page_markdown(markdown: str, page: Any, **kwargs: Any) -> str:
    """Add the code and test links under every rule of rules.md (mkdocs hook)."""
    if page.file.src_uri != PAGE:
        return markdown
    citations = _state.get("citations") or Citations()
    return with_refs(markdown, citations, not_built())


_TAG = re.compile(r"(<[^>]*>)")
_SKIP = frozenset({"a", "code", "pre", "script", "style", "h1", "h2", "h3", "h4", "h5", "h6"})


def link_ids(html: str, rules_url: str, anchors: frozenset[str]) -> str:
    """Return ``html`` with each rule id of its text linked to its rule on the rules page.

    Text inside links, code and headings stays as it is; so do ids rules.md does not state.
    """

    def link(match: re.Match[str]) -> str:
        rule = match.group(0)
        if rule not in anchors:
            return rule
        return f'<a class="rule-id" href="{rules_url}#{rule}">{rule}</a>'

    out = []
    skipping: list[str] = []
    for piece in _TAG.split(html):
        if piece.startswith("<"):
            name = re.match(r"</?([A-Za-z0-9]+)", piece)
            if name and name.group(1).lower() in _SKIP and not piece.endswith("/>"):
                if piece.startswith("</"):
                    if skipping and skipping[-1] == name.group(1).lower():
                        skipping.pop()
                else:
                    skipping.append(name.group(1).lower())
            out.append(piece)
        elif skipping or not piece.strip():
            out.append(piece)
        else:
            out.append(RULE_ID.sub(link, piece))
    return "".join(out)


def on_page_content(html: str, page: Any, files: Any, **kwargs: Any) -> str:
    """Link rule ids to rules.md; make a source page's line anchors known (mkdocs hook).

    The highlighter writes the line anchors as raw HTML, which mkdocs does not read for its
    anchor check.
    """
    uri = page.file.src_uri
    if uri.startswith(f"{SOURCE_DIR}/"):
        if page.present_anchor_ids is not None:
            page.present_anchor_ids.update(re.findall(r'id="(__codelineno-[0-9-]+)"', html))
        return html
    if uri == PAGE:
        return html
    rules = files.get_file_from_path(PAGE)
    anchors = _state.get("anchors")
    if rules is None or anchors is None:
        return html
    from mkdocs.utils import get_relative_url

    return link_ids(html, get_relative_url(rules.url, page.file.url), anchors)
