"""``notify replay --engine dask``: recipient partitions as tasks on a real Dask LocalCluster.

The merged output and summary must be byte-identical to the single-process replay's
(formats.md section 3) on every golden log, a synthetic log and a wiki log with mail.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from notify_cli.install import install_hint
from notify_cli.main import cli
from notify_cli.synth_logs import SynthConfig, synth_events
from notify_core.replay.partitioned import Group
from tests.inbox_log import WikiLog

TESTS = Path(__file__).parents[1]
GOLDENS = sorted(
    p
    for folder in ("replay", "inbox")
    for p in (TESTS / folder).glob("*.jsonl")
    if not p.name.endswith(".expected.jsonl")
)


def _replay(log: Path, tmp: Path, *extra: str) -> tuple[Result, str]:
    summary = tmp / f"summary-{len(list(tmp.iterdir()))}.json"
    args = ["replay", str(log), "--include-skips", "--summary-json", str(summary), *extra]
    policy = log.with_suffix(".toml")
    if policy.exists():
        args += ["--policy", str(policy)]
    result = CliRunner().invoke(cli, args)
    return result, summary.read_text() if summary.exists() else ""


def _check_same(log: Path, tmp: Path, scheduler: str, partitions: int) -> None:
    single, single_summary = _replay(log, tmp)
    dask, dask_summary = _replay(
        log, tmp, "--engine", "dask", "--scheduler", scheduler, "--partitions", str(partitions)
    )
    assert dask.exit_code == single.exit_code, dask.stderr
    assert dask.stdout == single.stdout
    assert dask_summary == single_summary
    assert dask.stderr == single.stderr


@pytest.mark.parametrize("log", GOLDENS, ids=[p.stem for p in GOLDENS])
def test_dask_replay_of_a_golden_log_is_the_single_replay(
    log: Path, tmp_path: Path, dask_scheduler: str
) -> None:
    _check_same(log, tmp_path, dask_scheduler, 3)


def test_dask_replay_of_a_synthetic_log_is_the_single_replay(
    tmp_path: Path, dask_scheduler: str
) -> None:
    log = tmp_path / "synth.jsonl"
    config = SynthConfig(events=3_000, users=120, seed=5, max_fanout=50)
    log.write_text("".join(json.dumps(e) + "\n" for e in synth_events(config)))
    _check_same(log, tmp_path, dask_scheduler, 2)


def test_dask_replay_of_a_wiki_log_with_mail_is_the_single_replay(
    tmp_path: Path, dask_scheduler: str
) -> None:
    wiki = WikiLog()
    people = [f"p{i}" for i in range(10)]
    for person in [*people, "ben"]:
        wiki.user(person)
    wiki.page("pg1", "/a").watch("pg1", *people)
    for round_ in range(5):
        wiki.edit("pg1").comment(f"c{round_}", "pg1", actor="ben", mentions=people[round_:][:3])
        wiki.tick(300)
    log = tmp_path / "wiki.jsonl"
    log.write_text("\n".join(wiki.lines()) + "\n")
    _check_same(log, tmp_path, dask_scheduler, 4)


def test_bad_lines_are_reported_once_and_exit_2(tmp_path: Path, dask_scheduler: str) -> None:
    lines = (TESTS / "replay" / "badge_sync.jsonl").read_text().splitlines()
    lines[3:3] = ["not json", '{"seq": 1}']
    log = tmp_path / "bad.jsonl"
    log.write_text("\n".join(lines) + "\n")
    _check_same(log, tmp_path, dask_scheduler, 2)
    result, _ = _replay(log, tmp_path, "--engine", "dask", "--scheduler", dask_scheduler)
    assert result.exit_code == 2
    assert result.stderr.count(f"{log}:4: bad event") == 1


def test_without_a_scheduler_a_local_cluster_runs_the_partitions(tmp_path: Path) -> None:
    log = TESTS / "replay" / "badge_sync.jsonl"
    single, single_summary = _replay(log, tmp_path)
    dask, dask_summary = _replay(log, tmp_path, "--engine", "dask", "--partitions", "2")
    assert (dask.exit_code, dask.stdout, dask_summary) == (0, single.stdout, single_summary)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-", "--engine", "dask"], "give its path"),
        (["{log}", "--engine", "dask", "--compare", "{log}"], "not with --compare"),
        (["{log}", "--engine", "dask", "--partitions", "0"], "at least 1"),
        (["{log}", "--partitions", "2"], "go with --engine dask"),
        (["{tmp}/missing.jsonl", "--engine", "dask"], "no such file"),
    ],
)
def test_bad_options_are_one_line_errors(tmp_path: Path, args: list[str], message: str) -> None:
    log = str(TESTS / "replay" / "badge_sync.jsonl")
    argv = ["replay", *(a.format(log=log, tmp=tmp_path) for a in args)]
    result = CliRunner().invoke(cli, argv, input="")
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_missing_dask_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)
    log = str(TESTS / "replay" / "badge_sync.jsonl")
    result = CliRunner().invoke(cli, ["replay", log, "--engine", "dask"])
    assert result.exit_code == 2
    # Run from the clone: the command that installs the extra there, not the index's name.
    assert install_hint("dask").endswith("[dask]'") and install_hint("dask") in result.stderr
    assert "install -e '" in result.stderr and "notify-engine" not in result.stderr


def test_a_task_that_fails_on_its_worker_is_a_one_line_error(
    tmp_path: Path, dask_scheduler: str
) -> None:
    # With a scheduler the path is the workers' own: only the task finds it missing.
    missing = tmp_path / "gone.jsonl"
    result = CliRunner().invoke(
        cli, ["replay", str(missing), "--engine", "dask", "--scheduler", dask_scheduler]
    )
    assert result.exit_code == 2
    assert result.stderr == f"notify: {missing}: no such file\n"


class _FakeQueue:
    """What `_streamed` reads of a `distributed.Queue`: items in order."""

    def __init__(self, items: list[list[object]]) -> None:
        self.items = items

    def get(self) -> list[object]:
        return self.items.pop(0)


def _two_chunks() -> tuple[list[tuple[int, bytes]], list[Group]]:
    """Three groups of 12,000 lines sent by a `Spool` as two chunks (what it sent, the groups)."""
    from notify_cli.dask_engine import Spool

    sent: list[tuple[int, bytes]] = []
    spool = Spool(lambda number, chunk: sent.append((number, chunk or b"")))
    groups: list[Group] = [
        (line, [(1, 0, 0, f"u{line}", "", 0, "")], ["x"] * 12_000) for line in (1, 2, 3)
    ]
    for group in groups:
        spool.put(group)
    spool.close()
    assert spool.sent == 2 and spool.chunks == []
    return sent, groups


def test_a_task_run_again_sends_its_chunks_again_and_the_merge_reads_them_once() -> None:
    from notify_cli.dask_engine import _streamed

    sent, groups = _two_chunks()
    # The first run's chunks, then a second run from the first chunk (its worker was lost).
    items: list[list[object]] = [[number, chunk] for number, chunk in sent]
    queue = _FakeQueue([*items[:1], *items, [2, None]])
    ended = [0.0]
    assert list(_streamed(queue, [], ended, 0)) == groups
    assert ended[0] > 0


def test_on_a_local_cluster_chunks_travel_as_files_read_once_and_deleted(
    tmp_path: Path,
) -> None:
    from notify_cli.dask_engine import _streamed, spool_file

    sent, groups = _two_chunks()
    first = [[number, spool_file(str(tmp_path), 0, number, chunk)] for number, chunk in sent]
    assert [Path(str(name)).name for _, name in first] == ["0-0", "0-1"]
    # Chunk 0 is read (and deleted) before the task runs again and writes it anew.
    queue = _FakeQueue(first[:1])
    parts = _streamed(queue, [], [0.0], 0)
    assert next(parts) == groups[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["0-1"]
    again = [[number, spool_file(str(tmp_path), 0, number, chunk)] for number, chunk in sent]
    queue.items.extend([*first[1:], *again, [2, None]])
    assert list(parts) == groups[1:]
    # The second run's chunk 0 is skipped unread: it stays for the directory's removal.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["0-0"]


def _worker_settings() -> list[object]:
    import dask.config

    from notify_cli.dask_engine import LOCAL_CLUSTER_CONFIG

    return [dask.config.get(key) for key in LOCAL_CLUSTER_CONFIG]


def test_the_local_cluster_s_workers_run_with_its_settings_and_a_spool_directory() -> None:
    from notify_cli.dask_engine import LOCAL_CLUSTER_CONFIG, _client

    with _client(None, 2) as (client, count, spool_dir):
        assert count == 2 and Path(spool_dir).is_dir()
        seen = client.run(_worker_settings)
    assert list(seen.values()) == [list(LOCAL_CLUSTER_CONFIG.values())] * 2
    assert not Path(spool_dir).exists()


def test_even_owners_gives_the_heaviest_readers_to_the_lightest_task(tmp_path: Path) -> None:
    from notify_cli.dask_engine import even_owners

    def event(kind: str, payload: dict[str, object], **more: object) -> str:
        return json.dumps({"type": kind, "payload": payload, **more})

    def grant(user: str, kind: str, target: str) -> str:
        return event("access.granted", {"user": user, "target": {"kind": kind, "id": target}})

    def message(channel: str) -> str:
        return event("message.created", {}, scope={"channel": channel})

    lines = [
        event("channel.created", {"channel": "c1", "space": "s1"}),
        event("channel.created", {"channel": "c2", "space": "s1"}),
        grant("ann", "channel", "c1"),  # 3 messages
        grant("bob", "space", "s1"),  # c1 and c2: 5 messages
        grant("cy", "channel", "c2"),  # 2 messages
        grant("dee", "channel", "c2"),
        "not json",
        event("access.granted", {"user": "eve"}),  # no target: counts for nothing here
        *[message("c1")] * 3,
        *[message("c2")] * 2,
    ]
    log = tmp_path / "log.jsonl"
    log.write_text("\n".join(lines) + "\n")
    # bob (5) to task 0, ann (3) to task 1, then cy and dee (2 each, by name) to 1 and 0.
    assert even_owners(str(log), 2) == {"bob": 0, "ann": 1, "cy": 1, "dee": 0}
    assert even_owners(str(log), 3) == {"bob": 0, "ann": 1, "cy": 2, "dee": 2}


def test_a_task_with_owners_decides_for_them_and_for_the_others_by_their_partition(
    tmp_path: Path,
) -> None:
    from notify_cli.dask_engine import even_owners, replay_partition, unspool
    from notify_core.hints.decide import Policy
    from notify_core.replay.partitioned import merge_groups
    from notify_core.replay.partitions import partition_of

    log = tmp_path / "synth.jsonl"
    config = SynthConfig(events=3_000, users=60, seed=5)
    log.write_text("".join(json.dumps(event) + "\n" for event in synth_events(config)))
    owners = even_owners(str(log), 2)
    moved = [person for person, task in owners.items() if task != partition_of(person, 2)]
    assert moved  # the even split is not the MD5 one here
    runs = [replay_partition(str(log), Policy(), True, index, 2, owners=owners) for index in (0, 1)]
    merged = [
        line
        for texts in merge_groups([list(unspool(list(run.chunks))) for run in runs])
        for line in texts
    ]
    single, _ = _replay(log, tmp_path)
    assert single.exit_code == 0 and "\n".join(merged) + "\n" == single.stdout
    recipients = [
        {json.loads(line).get("recipient") for _, _, texts in unspool(run.chunks) for line in texts}
        for run in runs
    ]
    assert moved[0] in recipients[owners[moved[0]]]
    assert moved[0] not in recipients[1 - owners[moved[0]]]


def test_chunks_of_either_codec_are_read() -> None:
    import pickle
    import zlib

    import lz4.frame

    from notify_cli.dask_engine import LZ4_MAGIC, decompress

    data = pickle.dumps([(1, [(3,)], ["line"])])
    assert lz4.frame.compress(data)[:4] == LZ4_MAGIC
    assert decompress(lz4.frame.compress(data)) == data
    assert decompress(zlib.compress(data, 1)) == data
