"""docs/rules.md states every rule: each id cited anywhere has an anchor there, and each anchor
is cited by a test (except the ids of ``NOT_BUILT``)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest

from tests.docs.test_rule_ids import KNOWN, NOT_BUILT, SPEC, rule_ids

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "docs" / "rules.md"
# This file names no id that a test does not cite elsewhere: tests/docs/test_rule_ids.py reads it.
# Where ids are cited: the packages (docstrings and error messages), tests, docs, bench,
# examples, README and CHANGELOG.
CITING = [
    *(
        ROOT / d
        for d in (
            "notify_core",
            "notify_pg",
            "notify_reference_host",
            "notify_cli",
            "tests",
            "docs",
            "bench",
        )
    ),
    ROOT / "examples",
    ROOT / "README.md",
    ROOT / "CHANGELOG.md",
]
SUFFIXES = {".py", ".md", ".jsonl", ".sql", ".toml"}


def load_rule_refs() -> ModuleType:
    spec = importlib.util.spec_from_file_location("rule_refs", ROOT / "docs" / "rule_refs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


refs = load_rule_refs()


@pytest.fixture(scope="module")
def anchors() -> list[str]:
    return list(refs.rule_anchors(RULES.read_text(encoding="utf-8")))


def citing_files() -> list[Path]:
    files = []
    for place in CITING:
        paths = [place] if place.is_file() else sorted(place.rglob("*"))
        files.extend(
            p
            for p in paths
            if p.suffix in SUFFIXES
            and p.is_file()
            and "__pycache__" not in p.parts
            and p.relative_to(ROOT).as_posix() not in refs.NOT_CITING
            and p != RULES
        )
    return files


def test_each_rule_has_one_anchor(anchors: list[str]) -> None:
    assert len(anchors) == len(set(anchors))
    letters = [a for a in anchors if a != refs.RECORDS]
    assert set(KNOWN) | NOT_BUILT <= set(letters)
    if SPEC.exists():
        # Exactly the ids of the specification, in its order.
        assert letters == rule_ids()
    assert refs.RECORDS in anchors


def test_every_cited_id_has_an_anchor(anchors: list[str]) -> None:
    stated = set(anchors)
    dangling = {
        f"{path.relative_to(ROOT)}: {rule}"
        for path in citing_files()
        for rule in refs.ids_in(path.read_text(encoding="utf-8", errors="replace"))
        if rule not in stated
    }
    assert sorted(dangling) == []


def test_every_anchor_is_cited_by_a_test(anchors: list[str]) -> None:
    tests = refs.Citations().tests
    uncited = [a for a in anchors if a not in NOT_BUILT and not tests.get(a)]
    assert uncited == []


def test_the_rules_page_reads_not_built_from_test_rule_ids() -> None:
    assert refs.not_built() == NOT_BUILT


def test_each_rule_gets_its_code_and_test_links(anchors: list[str]) -> None:
    citations = refs.Citations()
    page = refs.with_refs(RULES.read_text(encoding="utf-8"), citations, NOT_BUILT)
    blocks = re.findall(
        r"^\{#([A-Za-z0-9]+)\}\n\n<div class=\"rule-refs\" markdown>\n(.*)\n", page, re.M
    )
    assert [rule for rule, _ in blocks] == anchors
    for rule, line in blocks:
        assert ("Not built yet" in line) == (rule in NOT_BUILT), rule
        linked = re.findall(r"\]\(source/(.+?)\.md#__codelineno-0-(\d+)\)", line)
        assert linked or rule in NOT_BUILT, rule
        for path, number in linked:
            lines = (ROOT / path).read_text(encoding="utf-8", errors="replace").splitlines()
            # The link lands on a line that cites the rule.
            assert rule in refs.ids_in(lines[int(number) - 1]), (rule, path, number)


@pytest.mark.parametrize(
    ("text", "cited"),
    [
        ("L3 and D1-D3, K2a", {"L3", "D1", "D2", "D3", "K2a"}),
        ("Q4-7 (D11)", {"Q4", "Q5", "Q6", "Q7", "D11"}),
        ("UTF8 D12x aL3 L3c 2D5 B1-like", {"B1"}),
        ("the records of section 8", {"records"}),
        ("    def test_g3_values_are_frozen(self) -> None:", {"G3"}),
        ("def test_levels_l2_and_L4(self) -> None:", {"L2", "L4"}),
    ],
)
def test_ids_in_reads_ids_and_ranges(text: str, cited: set[str]) -> None:
    assert refs.ids_in(text) == cited


def test_link_ids_links_prose_only() -> None:
    html = '<p>L3 and <code>L3</code> <a href="x">D5</a></p><h5>D5</h5><p>D5 Z9 L99</p>'
    linked = refs.link_ids(html, "../rules/", frozenset({"L3", "D5"}))
    assert linked == (
        '<p><a class="rule-id" href="../rules/#L3">L3</a> and <code>L3</code> '
        '<a href="x">D5</a></p><h5>D5</h5><p><a class="rule-id" href="../rules/#D5">D5</a>'
        " Z9 L99</p>"
    )


def test_no_file_sends_the_reader_to_the_specification_outside_the_repository() -> None:
    # Applied migrations never change (their checksums are recorded), and schema.sql mirrors
    # them; tests/docs/test_rule_ids.py reads the specification where it exists.
    exempt = {"notify_pg/schema.sql", "tests/docs/test_rule_ids.py"}
    spec_name = SPEC.name
    pointing = [
        str(path.relative_to(ROOT))
        for path in citing_files()
        if spec_name in path.read_text(encoding="utf-8", errors="replace")
        and path.relative_to(ROOT).as_posix() not in exempt
        and "migrations" not in path.parts
        and path != Path(__file__)
    ]
    assert pointing == [], f"cite docs/rules.md (its ids and anchors), not {spec_name}"
