"""The docs name no file that does not exist (issue 27, point 5): every path into the
repository (``examples/``, ``docs/``, ``tests/``, ``bench/``, a package) that README.md or a
page of docs/ names is there, and the inputs of their commands are files of the repository."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
REPO_PATH = re.compile(
    r"(?<![\w./-])((?:examples|docs|tests|bench|notify_core|notify_pg|notify_reference_host|notify_cli|\.ci)/"
    r"[\w./-]*[\w])"
)


def test_every_repository_path_the_docs_name_exists() -> None:
    missing = []
    for page in PAGES:
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), start=1):
            for path in REPO_PATH.findall(line):
                placeholder = any(mark in path for mark in ("*", "<", "NNNN"))
                if not placeholder and not (ROOT / path).exists():
                    missing.append(f"{page.relative_to(ROOT)}:{number}: {path}")
    assert not missing, "\n".join(missing)


def test_the_inputs_the_issue_found_missing_are_named_no_more() -> None:
    gone = ("policy.toml", "event-log-example.jsonl", "inbox-log-example.jsonl")
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for name in gone:
            assert re.search(rf"(?<![\w/-]){re.escape(name)}", text) is None, (page, name)
        assert re.search(r"(?<![\w/-])no-windows\.toml", text) is None, page
