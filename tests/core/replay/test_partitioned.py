"""A replay split by recipient partition merges back into the single replay, byte for byte.

notify_core.replay.partitioned: the sort keys place every line where the single replay writes it
(formats.md section 3: per event the other kinds, then message, by recipient; due work by due
time and recipient; entry lines by recipient and category; mail lines by drain instant), and
the summaries merge exactly (S5, D6-D9 and B2 hold per recipient).
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from notify_cli.synth_logs import SynthConfig, synth_events
from notify_cli.synth_records import with_records
from notify_core.events.log import EventError
from notify_core.replay.lines import dumps_item
from notify_core.replay.partitioned import merge_groups, merge_summaries, run_partition
from notify_core.replay.partitions import Partition
from notify_core.replay.run import Replay, policy_from_mapping
from tests.inbox_log import WikiLog

TESTS = Path(__file__).parents[2]
GOLDENS = sorted(
    p
    for folder in ("replay", "inbox")
    for p in (TESTS / folder).glob("*.jsonl")
    if not p.name.endswith(".expected.jsonl")
)


def _policy(log: Path) -> str:
    toml = log.with_suffix(".toml")
    return toml.read_text() if toml.exists() else ""


def _single(lines: list[str], policy_text: str, skips: bool) -> tuple[list[str], object, int]:
    replay = Replay(policy=policy_from_mapping(tomllib.loads(policy_text)), include_skips=skips)
    out, bad = [], 0
    for item in replay.run(lines):
        if isinstance(item, EventError):
            bad += 1
            continue
        out.append(dumps_item(item))
    return out, replay.summary, bad


def _split(
    lines: list[str], policy_text: str, skips: bool, count: int
) -> tuple[list[str], object, int]:
    policy = policy_from_mapping(tomllib.loads(policy_text))
    runs = []
    for index in range(count):
        part = Partition(index, count)
        replay = Replay(policy=policy, include_skips=skips, owns=part)
        runs.append(run_partition(replay, part, lines))
    merged = [text for texts in merge_groups([run.groups for run in runs]) for text in texts]
    summary = merge_summaries([run.summary for run in runs])
    return merged, summary, len(runs[0].errors)


def _check(lines: list[str], policy_text: str, counts: tuple[int, ...] = (2, 3)) -> None:
    for skips in (False, True):
        whole = _single(lines, policy_text, skips)
        for count in counts:
            assert _split(lines, policy_text, skips, count) == whole, (skips, count)


@pytest.mark.parametrize("log", GOLDENS, ids=[p.stem for p in GOLDENS])
def test_partitions_of_a_golden_log_merge_into_its_replay(log: Path) -> None:
    """S5, D6-D9, B2 per partition; the merged lines and summary are the single replay's."""
    _check(log.read_text().splitlines(), _policy(log))


def test_partitions_of_a_synthetic_log_merge_into_its_replay() -> None:
    config = SynthConfig(events=3_000, users=120, seed=3, max_fanout=50)
    lines = [json.dumps(e) for e in synth_events(config)]
    _check(lines, "", (2, 5))


def test_m6_partitions_of_a_log_with_records_merge_into_its_replay() -> None:
    """Each partition applies every record event and counts its own people's deliveries."""
    config = SynthConfig(events=6_000, users=60, seed=3, max_fanout=50)
    lines = [json.dumps(e) for e in with_records(synth_events(config), seed=3, total=6_000)]
    whole, _, _ = _single(lines, "", True)
    assert any('"frequency_cap"' in line for line in whole)
    assert any('"record":' in line for line in whole)
    _check(lines, "", (2, 5))


def test_partitions_of_a_wiki_log_with_mail_merge_into_its_replay() -> None:
    """Entry lines by recipient and category, mail lines by drain instant and recipient."""
    log = WikiLog()
    people = [f"p{i}" for i in range(12)]
    for person in people:
        log.user(person)
    log.user("ben")
    log.page("pg1", "/a").page("pg2", "/b")
    log.watch("pg1", *people).watch("pg2", *people[::2])
    for round_ in range(6):
        log.edit("pg1").edit("pg2", actor="p1")
        log.comment(f"c{round_}", "pg1", actor="ben", mentions=people[round_ : round_ + 3])
        log.tick(200)
    lines = log.lines()
    whole, _, _ = _single(lines, "", False)
    assert any('"trigger":"mail"' in line for line in whole)
    assert any('"trigger":"inbox"' in line for line in whole)
    _check(lines, "", (2, 4))


def test_bad_lines_are_reported_once() -> None:
    log = TESTS / "replay" / "badge_sync.jsonl"
    lines = log.read_text().splitlines()
    lines[2:2] = ["not json", '{"seq": 1}']
    whole = _single(lines, _policy(log), True)
    assert whole[2] == 2
    assert _split(lines, _policy(log), True, 3) == whole
