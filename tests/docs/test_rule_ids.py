"""Every rule id of behaviour.md is cited by at least one test (the quality bar)."""

from __future__ import annotations

import re
from pathlib import Path

TESTS = Path(__file__).parents[1]
SPEC = TESTS.parents[1] / "shared" / "spec" / "behaviour.md"
# The ids as of this writing, used when the spec is not beside the checkout.
KNOWN = [
    "G1",
    "G2",
    "G3",
    "G4",
    "G5",
    "L1",
    "L2",
    "L3",
    "L4",
    "L5",
    "L6",
    "L7",
    "Q1",
    "Q2",
    "Q3",
    "Q4",
    "Q5",
    "Q6",
    "Q7",
    "K1",
    "K2",
    "K3",
    "D1",
    "D2",
    "D3",
    "D4",
    "D5",
    "D6",
    "D7",
    "D8",
    "D9",
    "D10",
    "D11",
    "S1",
    "S2",
    "S3",
    "S4",
    "S5",
    "R1",
    "R2",
    "R3",
    "B1",
    "B1a",
    "B2",
    "B3",
]

# Ids of behaviour.md whose behaviour is not built yet: listed here explicitly, never cited by
# a test, and removed the moment a test cites them (the list only shrinks, to empty).
NOT_BUILT: set[str] = set()


def rule_ids() -> list[str]:
    if SPEC.exists():
        found = re.findall(r"^- ([A-Z]\d+[a-z]?)\.", SPEC.read_text(encoding="utf-8"), re.MULTILINE)
        assert set(KNOWN) <= set(found), "behaviour.md lost rule ids this project cites"
        return found
    return KNOWN


def cited_text() -> str:
    parts = []
    for pattern in ("**/*.py", "**/*.jsonl"):
        # This file names every id (KNOWN, NOT_BUILT): it cites nothing. tests/hostile holds
        # lines that are not UTF-8 on purpose: their bad bytes are read as U+FFFD.
        parts.extend(
            p.read_text(encoding="utf-8", errors="replace")
            for p in TESTS.glob(pattern)
            if p.resolve() != Path(__file__).resolve()
        )
    return "\n".join(parts)


def is_cited(rule: str, text: str) -> bool:
    # The id as written (B1 must not count as B1a, nor B1a as B1), or lowercased inside a test
    # name (`test_g3_...`); a bare lowercase word like a message id "h1" cites nothing.
    exact = rf"(?<![A-Za-z0-9]){rule}(?![0-9a-z])"
    in_name = rf"_{rule.lower()}(?![0-9a-z])"
    return re.search(f"{exact}|{in_name}", text) is not None


def test_every_rule_id_is_cited_by_a_test() -> None:
    text = cited_text()
    missing = [rule for rule in rule_ids() if rule not in NOT_BUILT and not is_cited(rule, text)]
    assert missing == []


def test_the_not_built_list_names_only_uncited_ids_of_the_spec() -> None:
    text = cited_text()
    if SPEC.exists():
        assert set(rule_ids()) >= NOT_BUILT, "an id of NOT_BUILT left behaviour.md"
    cited_now = sorted(rule for rule in NOT_BUILT if is_cited(rule, text))
    assert cited_now == [], f"cited by a test now: remove from NOT_BUILT: {cited_now}"
