"""Every rule id of behaviour.md is cited by at least one test (the quality bar)."""

from __future__ import annotations

import re
from pathlib import Path

TESTS = Path(__file__).parent
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
    "B2",
]


def rule_ids() -> list[str]:
    if SPEC.exists():
        found = re.findall(r"^- ([A-Z]\d+)\.", SPEC.read_text(encoding="utf-8"), re.MULTILINE)
        assert set(KNOWN) <= set(found), "behaviour.md lost rule ids this project cites"
        return found
    return KNOWN


def cited_text() -> str:
    parts = []
    for pattern in ("**/*.py", "**/*.jsonl"):
        parts.extend(p.read_text(encoding="utf-8") for p in TESTS.glob(pattern))
    return "\n".join(parts)


def test_every_rule_id_is_cited_by_a_test() -> None:
    text = cited_text()
    missing = [
        rule
        for rule in rule_ids()
        if not re.search(rf"(?<![A-Za-z0-9]){rule}(?![0-9])", text, re.IGNORECASE)
    ]
    assert missing == []
