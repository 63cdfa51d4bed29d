"""Recipient partitions (notify_core.replay.partitions): several consumers share one log.

Each partition decides for its own recipients only; together they must give exactly the hints
of one consumer (S1-S5, D6-D9, B2 hold per recipient), which is what lets a second PostgreSQL
worker add throughput.
"""

from __future__ import annotations

import json
import tomllib
from hashlib import md5
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from notify_cli.synth_logs import SynthConfig, synth_events
from notify_core.events.log import EventError
from notify_core.replay.lines import dumps_hint
from notify_core.replay.partitions import Partition, Partitions, partition_of
from notify_core.replay.run import Replay, policy_from_mapping
from notify_core.values.errors import UsageError

HERE = Path(__file__).parents[2] / "replay"
GOLDENS = sorted(p for p in HERE.glob("*.jsonl") if not p.name.endswith(".expected.jsonl"))


@given(st.text(), st.integers(min_value=1, max_value=64))
def test_every_key_has_exactly_one_partition(key: str, count: int) -> None:
    owners = [i for i in range(count) if Partition(i, count)(key)]
    assert owners == [partition_of(key, count)]


def test_partition_is_the_top_28_bits_of_md5() -> None:
    # The same bits PostgreSQL's md5 gives: ('x' || substr(md5(key), 1, 7))::bit(28)::int.
    for key in ("u1", "alice", "ü-ber", ""):
        top = int(md5(key.encode()).hexdigest()[:7], 16)
        assert partition_of(key, 7) == top % 7
        assert partition_of(key, 1) == 0


def test_partitions_spread_recipients() -> None:
    counts = [0] * 4
    for i in range(4000):
        counts[partition_of(f"u{i}", 4)] += 1
    assert all(900 < c < 1100 for c in counts), counts


@pytest.mark.parametrize(("index", "count"), [(0, 0), (-1, 2), (2, 2)])
def test_bad_partitions_are_refused(index: int, count: int) -> None:
    with pytest.raises(UsageError, match="partition"):
        Partition(index, count)


def test_partition_of_refuses_no_partitions() -> None:
    with pytest.raises(UsageError, match="at least 1"):
        partition_of("u1", 0)


def _replay(lines: list[str], policy_text: str, owns: Partition | None) -> list[str]:
    replay = Replay(policy=policy_from_mapping(tomllib.loads(policy_text)), include_skips=True)
    replay.pipeline.owns = owns
    out = []
    for item in replay.run(lines):
        assert not isinstance(item, EventError), item
        out.append(dumps_hint(item))
    return out


def _check_partitions_add_up(lines: list[str], policy_text: str, count: int) -> None:
    whole = _replay(lines, policy_text, None)
    parts = [_replay(lines, policy_text, Partition(i, count)) for i in range(count)]
    for i, part in enumerate(parts):
        mine = [h for h in whole if partition_of(json.loads(h)["recipient"], count) == i]
        assert part == mine, f"partition {i} of {count}"
    assert sum(len(p) for p in parts) == len(whole)


@pytest.mark.parametrize("log", GOLDENS, ids=[p.stem for p in GOLDENS])
def test_partitions_of_a_golden_log_give_its_hints(log: Path) -> None:
    """S5 (following), D6-D9 (windows, releases), B2 (badge syncs) per partition."""
    lines = log.read_text().splitlines()
    policy_text = log.with_suffix(".toml").read_text()
    for count in (2, 3):
        _check_partitions_add_up(lines, policy_text, count)


@pytest.mark.parametrize("seed", [1, 2])
def test_partitions_of_a_synthetic_log_give_its_hints(seed: int) -> None:
    config = SynthConfig(events=4_000, users=150, seed=seed, max_fanout=60)
    lines = [json.dumps(e) for e in synth_events(config)]
    _check_partitions_add_up(lines, "", 3)


@given(st.text(), st.integers(min_value=1, max_value=8), st.data())
def test_a_set_of_partitions_owns_the_recipients_of_each(
    key: str, count: int, data: st.DataObject
) -> None:
    """A worker's round over several free partitions decides for the recipients of each of
    them and of no other."""
    indices = data.draw(st.sets(st.integers(0, count - 1), min_size=1))
    both = Partitions(tuple(indices), count)
    assert both(key) == any(Partition(i, count)(key) for i in indices)
    assert both.indices == tuple(sorted(indices))


def test_a_set_of_partitions_needs_indices_in_range() -> None:
    for indices, count in (((), 2), ((2,), 2), ((-1, 0), 3), ((0,), 0)):
        with pytest.raises(UsageError):
            Partitions(indices, count)
