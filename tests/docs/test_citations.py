"""No file cites a document the repository does not have (issue 35, point 6): every ``*.md``
that the packages, the tests, the docs, the benchmarks, the examples, README.md, CHANGELOG.md
or the site's configuration name is a file of the repository, and a section named after a
page of docs/ (``docs/cli.md#exit-codes``) is one of that page's anchors.

A bare page name (``formats.md``, ``rules.md#records``) is the page of docs/ of that name; a
path is read from the repository's root or from the citing file's folder.
"""

from __future__ import annotations

import re
from pathlib import Path

from markdown.extensions.toc import slugify

ROOT = Path(__file__).resolve().parents[2]
PLACES = ("notify_core", "notify_pg", "notify_cli", "tests", "docs", "bench", "examples", ".ci")
FILES = ("README.md", "CHANGELOG.md", "mkdocs.yml", "pyproject.toml", "noxfile.py")
SUFFIXES = {".py", ".md", ".sql", ".toml", ".yml", ".jsonl", ".txt", ".html", ".js", ".css"}
# Applied migrations never change (their checksums are recorded) and schema.sql mirrors them;
# tests/docs/test_rule_ids.py reads the specification where it exists, by its path; the rulings
# of docs/decisions.md keep, as written then, the documents they were made against.
EXEMPT = {"notify_pg/schema.sql", "tests/docs/test_rule_ids.py"}
CITATION = re.compile(r"(?<![\w/.-])((?:\.\./|[\w.-]+/)*[\w.-]*\w\.md)(?![\w-])(?:#([\w-]+))?")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*$", re.MULTILINE)
ANCHOR = re.compile(r"\{#([\w-]+)\}")


def citing_files() -> list[Path]:
    files = [ROOT / name for name in FILES]
    for place in PLACES:
        files.extend(sorted((ROOT / place).rglob("*")))
    return [
        path
        for path in files
        if path.is_file()
        and path.suffix in SUFFIXES
        and "__pycache__" not in path.parts
        and "migrations" not in path.relative_to(ROOT).parts
        and path.relative_to(ROOT).as_posix() not in EXEMPT
    ]


def resolve(name: str, citing: Path) -> Path | None:
    """The file a citation names, or ``None`` when the repository has none."""
    for base in (ROOT, citing.parent, ROOT / "docs"):
        path = (base / name).resolve()
        if path.is_file() and path.is_relative_to(ROOT):
            return path
    return None


def anchors(page: Path) -> set[str]:
    """The anchors of a Markdown page: its headings' slugs (as the site's table of contents
    makes them, code marks and links dropped) and its explicit ``{#id}`` marks."""
    text = page.read_text(encoding="utf-8")
    found = set(ANCHOR.findall(text))
    for heading in HEADING.findall(text):
        plain = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "")
        found.add(slugify(ANCHOR.sub("", plain), "-"))
    return found


def wrong_citations(text: str, citing: Path) -> list[str]:
    """Each citation of ``text`` that names no file of the repository, or a section that the
    named page of docs/ does not have."""
    wrong = []
    for name, section in CITATION.findall(text):
        path = resolve(name, citing)
        if path is None:
            wrong.append(name)
        elif section and path.parent == ROOT / "docs" and section not in anchors(path):
            wrong.append(f"{name}#{section}")
    return wrong


def test_every_document_a_file_cites_is_in_the_repository() -> None:
    found = [
        f"{path.relative_to(ROOT)}: {name}"
        for path in citing_files()
        if path != Path(__file__)
        for name in wrong_citations(path.read_text(encoding="utf-8", errors="replace"), path)
    ]
    assert found == [], "cite a page of docs/ (and a section it has), or say it in words"


def test_the_check_finds_what_it_looks_for() -> None:
    here = ROOT / "tests" / "docs" / "test_x.py"
    assert wrong_citations("(style.md) and architecture.md", here) == ["style.md"]
    assert wrong_citations("docs/cli.md#exit-codes, rules.md#records, formats.md", here) == []
    assert wrong_citations("docs/cli.md#no-such-section", here) == ["docs/cli.md#no-such-section"]
    assert wrong_citations("see ../../README.md and docs/inbox.md", here) == []
    assert wrong_citations("input.md-search__input, https://example.org/a/NOTES.md", here) == []
    assert wrong_citations("seed 001 note 2, a.mdx", here) == []
    assert wrong_citations("the spec's notes.md section 8", here) == ["notes.md"]
