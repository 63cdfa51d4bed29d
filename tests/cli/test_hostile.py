"""Hostile input through the real command line: a clear line, exit 2, never a traceback.

``tests/hostile/`` holds the worst inputs found so far, one file per case, named
``KIND--WHAT.EXT``: ``log--`` files go through ``replay`` (a file and standard input) and
``explain``, ``policy--`` files through ``--policy``, ``--compare`` and ``explain --policy``,
``table--`` files through ``table check`` and ``table run``. Every one is bad input: exit 2,
a message naming the file, and the run goes on past the bad line where it can. A property
test then runs the same commands over generated hostile files and options.
"""

from __future__ import annotations

import json
import string
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from notify_cli.main import cli

ROOT = Path(__file__).resolve().parents[2]
HOSTILE = Path(__file__).parents[1] / "hostile"
SPEC_LOG = ROOT / "examples" / "spec-example.jsonl"
CASES = sorted(HOSTILE.iterdir())


def run(args: list[str], stdin: bytes | None = None) -> Result:
    """Invoke ``notify`` and check what every run must hold: a known exit, no traceback."""
    result = CliRunner().invoke(cli, args, input=stdin)
    assert result.exit_code in (0, 1, 2), (args, result.exit_code, result.output)
    # An exception other than the exit means it escaped click: a traceback for a user.
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        args,
        repr(result.exception),
    )
    assert "Traceback" not in result.output
    return result


def commands(path: Path) -> list[list[str]]:
    kind = path.name.split("--")[0]
    if kind == "log":
        return [
            ["replay", str(path), "--include-skips"],
            ["explain", str(path), "--seq", "1000000", "--recipient", "u-b"],
        ]
    if kind == "policy":
        spec = str(SPEC_LOG)
        return [
            ["replay", spec, "--policy", str(path)],
            ["replay", spec, "--compare", str(path)],
            ["explain", spec, "--seq", "12", "--recipient", "u-ana", "--policy", str(path)],
        ]
    assert kind == "table", path
    return [["table", "check", str(path)], ["table", "run", str(path)]]


def test_the_corpus_has_every_kind() -> None:
    assert {p.name.split("--")[0] for p in CASES} == {"log", "policy", "table"}


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_hostile_file_is_one_line_per_fault_and_exit_2(path: Path) -> None:
    for args in commands(path):
        result = run(args)
        assert result.exit_code == 2, (args, result.output)
        assert f"{path}:" in result.stderr, (args, result.stderr)


@pytest.mark.parametrize(
    "path", [p for p in CASES if p.name.startswith("log--")], ids=lambda p: p.stem
)
def test_hostile_log_on_stdin_is_the_same_replay(path: Path) -> None:
    from_file = run(["replay", str(path), "--include-skips"])
    from_stdin = run(["replay", "-", "--include-skips"], stdin=path.read_bytes())
    assert from_stdin.exit_code == from_file.exit_code == 2
    assert from_stdin.stdout == from_file.stdout
    assert from_stdin.stderr.replace("<stdin>:", f"{path}:") == from_file.stderr


def test_compare_reads_stdin_twice_and_reports_each_bad_line_once(tmp_path: Path) -> None:
    path = HOSTILE / "log--not-utf8-on-line-7.jsonl"
    policy = tmp_path / "b.toml"
    policy.write_text("coalesce_window_s = 0\n")
    from_file = run(["replay", str(path), "--compare", str(policy)])
    from_stdin = run(["replay", "-", "--compare", str(policy)], stdin=path.read_bytes())
    assert from_stdin.exit_code == from_file.exit_code == 2
    assert from_stdin.stdout == from_file.stdout
    assert json.loads(from_stdin.stdout)["sends_by_kind"]  # both passes read the lines
    bad = [line for line in from_stdin.stderr.splitlines() if "bad event" in line]
    assert bad == [
        "<stdin>:7: bad event: not UTF-8 text (invalid start byte at byte 95) (invalid_utf8)"
    ]


def test_a_table_on_stdin_is_named_stdin() -> None:
    path = HOSTILE / "table--lone-surrogate-id.jsonl"
    result = run(["table", "check", "-"], stdin=path.read_bytes())
    assert result.exit_code == 2
    assert "<stdin>:2: bad case: not JSON" in result.stderr


# --- one test per fault of the issue, with the message ---------------------------------------


def test_an_instant_at_the_end_of_the_calendar_is_a_bad_line_and_the_replay_goes_on() -> None:
    path = HOSTILE / "log--end-of-calendar.jsonl"
    result = run(["replay", str(path), "--include-skips"])
    assert result.exit_code == 2
    assert f"{path}:6: bad event at /occurred_at: instant out of range" in result.stderr
    assert '"seq":7' in result.stdout  # the message after it was decided


def test_explain_and_replay_give_the_same_exit_code_for_the_same_bad_lines() -> None:
    path = HOSTILE / "log--not-utf8-on-line-7.jsonl"
    replay = run(["replay", str(path)])
    explain = run(["explain", str(path), "--seq", "8", "--recipient", "u-b"])
    assert replay.exit_code == explain.exit_code == 2
    assert f"{path}:7: bad event: not UTF-8 text" in replay.stderr
    assert f"{path}:7: bad event: not UTF-8 text" in explain.stderr
    assert "event 8 (message.created), recipient u-b" in explain.stdout  # still explained
    clean = run(["explain", str(path), "--seq", "6", "--recipient", "u-b"])
    assert clean.exit_code == 0  # the bad line lies after the event: never read


def test_a_bad_byte_on_line_12_is_line_12_and_line_13_is_replayed(tmp_path: Path) -> None:
    lines = SPEC_LOG.read_bytes().splitlines()
    assert len(lines) == 13
    lines[11] = lines[11].replace(b"u-ana", b"u-\xffana", 1)
    log = tmp_path / "log.jsonl"
    log.write_bytes(b"\n".join(lines) + b"\n")
    result = run(["replay", str(log), "--include-skips"])
    assert result.exit_code == 2
    assert f"{log}:12: bad event: not UTF-8 text" in result.stderr
    assert '"seq":13' in result.stdout


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e308", "99999999999999999999"])
@pytest.mark.parametrize("command", ["--policy", "--compare", "explain"])
def test_a_policy_duration_out_of_range_names_file_and_key(
    tmp_path: Path, value: str, command: str
) -> None:
    policy = tmp_path / "p.toml"
    policy.write_text(f"coalesce_window_s = {value}\n")
    if command == "explain":
        args = ["explain", str(SPEC_LOG), "--seq", "12", "--recipient", "u-ana"]
        args += ["--policy", str(policy)]
    else:
        args = ["replay", str(SPEC_LOG), command, str(policy)]
    result = run(args)
    assert result.exit_code == 2
    assert result.stderr.startswith(f"notify: {policy}: coalesce_window_s must be a number")
    assert len(result.stderr.splitlines()) == 1


@pytest.mark.parametrize("command", ["replay", "synth"])
def test_a_failed_write_is_one_line_and_exit_2(command: str) -> None:
    if command == "replay":
        args = ["replay", str(SPEC_LOG), "--out", "/dev/full"]
    else:
        args = ["synth", "--events", "5000", "--users", "50", "--out", "/dev/full"]
    result = run(args)
    assert result.exit_code == 2
    assert "notify: /dev/full: cannot write: No space left on device" in result.stderr


@pytest.mark.parametrize("command", ["replay", "synth"])
def test_a_failed_write_to_stdout_is_one_line_and_exit_2(command: str) -> None:
    import subprocess
    import sys

    args = (
        ["replay", str(SPEC_LOG)]
        if command == "replay"
        else ["synth", "--events", "50", "--users", "5"]
    )
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "notify_cli", *args],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
        )
    assert done.returncode == 2, done.stderr
    assert "notify: stdout: cannot write: No space left on device" in done.stderr
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr


def test_a_table_id_with_a_lone_surrogate_is_a_bad_line() -> None:
    path = HOSTILE / "table--lone-surrogate-id.jsonl"
    result = run(["table", "check", str(path)])
    assert result.exit_code == 2
    assert f"{path}:2: bad case: not JSON: a string holds a lone surrogate" in result.stderr
    assert result.stdout == "2 passed, 0 failed\n"


def test_a_table_line_nested_100000_deep_is_a_bad_line() -> None:
    path = HOSTILE / "table--nested-100000-deep.jsonl"
    result = run(["table", "check", str(path)])
    assert result.exit_code == 2
    assert f"{path}:2: bad case: not JSON: nested too deep" in result.stderr
    assert result.stdout == "2 passed, 0 failed\n"


def test_a_table_case_at_the_end_of_the_calendar_answers_an_error(tmp_path: Path) -> None:
    case = {
        "id": "x",
        "function": "in_quiet_hours",
        "input": {"now": "9999-12-31T23:59:59Z", "rules": []},
        "expect": {"error": {"code": "instant_out_of_range", "pointer": "/now"}},
    }
    table = tmp_path / "t.jsonl"
    table.write_text(json.dumps(case) + "\n")
    result = run(["table", "check", str(table)])
    assert (result.exit_code, result.stdout) == (0, "1 passed, 0 failed\n")


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["replay", "--from-pg", "host=/nonexistent\udcff"], "--from-pg"),
        (["replay", "--from-pg", "host=/nonexistent", "--schema", "n\udcff"], "--schema"),
        (["db", "migrate", "--dsn", "dbname=\udcff"], "--dsn"),
        (["db", "status", "--dsn", "dbname=\udcff"], "--dsn"),
        (["worker", "--dsn", "dbname=\udcff", "--once"], "--dsn"),
        (["records", "audit", "--dsn", "dbname=\udcff", "--principal", "p"], "--dsn"),
        (["records", "audit", "--dsn", "dbname=x", "--principal", "p\udcff"], "--principal"),
        (["worker", "--dsn", "dbname=x", "--host-schema", "h\udcff", "--once"], "--host-schema"),
    ],
)
def test_a_dsn_with_a_byte_that_is_not_utf8_names_the_option(args: list[str], option: str) -> None:
    result = run(args)
    assert result.exit_code == 2
    assert f"notify: {option}: not UTF-8 text" in result.stderr


@pytest.mark.parametrize("value", ["inf", "nan", "1e308", "0", "x"])
def test_a_worker_poll_interval_out_of_range_names_the_option(value: str) -> None:
    result = run(["worker", "--dsn", "dbname=x", "--poll-interval", value, "--once"])
    assert result.exit_code == 2
    assert result.stderr.startswith("notify: --poll-interval: must be a number of seconds")


def test_synth_names_every_bad_option() -> None:
    result = run(["synth", "--events", "-1", "--users", "1", "--max-fanout", "0"])
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        "notify: --events: must be at least 0, not -1",
        "notify: --users: must be at least 2, not 1",
        "notify: --max-fanout: must be at least 1, not 0",
    ]


def test_synth_ends_with_one_line_of_events_file_and_seconds(tmp_path: Path) -> None:
    out = tmp_path / "log.jsonl"
    result = run(["synth", "--events", "300", "--users", "20", "--out", str(out)])
    assert result.exit_code == 0
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"synth: wrote 300 events to {out} in ")
    assert line.endswith(" s")
    assert len(out.read_text().splitlines()) == 300


# --- generated hostile input ----------------------------------------------------------------

BASE_LOG = SPEC_LOG.read_text().splitlines()
#: A wiki's log (formats.md section 4): the inbox path of the same replay.
INBOX_LOG = (ROOT / "tests" / "inbox" / "spec_example.jsonl").read_text().splitlines()
#: Values that broke a command once, or that sit on an edge of a type.
NASTY = st.sampled_from(
    [
        None,
        "",
        "\ud800",
        "9999-12-31T23:59:59Z",
        "0001-01-01T00:00:00+23:59",
        "Mars/Olympus",
        "localtime",
        1e308,
        -1e308,
        99999999999999999999,
        -1,
        0,
        True,
        [],
        {},
        [[[[[]]]]],
        {"kind": "thread", "id": "t-nowhere"},
        "u-nobody",
    ]
)


def _mutate(obj: object, path: list[int], value: object) -> object:
    """Replace the member that ``path`` picks (indices into sorted keys) with ``value``."""
    if not path or not isinstance(obj, dict | list) or not obj:
        return value
    if isinstance(obj, dict):
        keys = sorted(obj)
        key = keys[path[0] % len(keys)]
        return {**obj, key: _mutate(obj[key], path[1:], value)}
    index = path[0] % len(obj)
    return [*obj[:index], _mutate(obj[index], path[1:], value), *obj[index + 1 :]]


@st.composite
def hostile_lines(draw: st.DrawFn, base: list[str]) -> bytes:
    """A copy of ``base`` with a few lines mutated, dropped, duplicated or made of junk."""
    lines = [line.encode() for line in base]
    for _ in range(draw(st.integers(1, 4))):
        index = draw(st.integers(0, len(lines) - 1))
        how = draw(st.sampled_from(["member", "member", "bytes", "junk", "swap", "deep"]))
        if how == "member":
            try:
                obj = json.loads(lines[index])
            except (ValueError, RecursionError):  # made junk or deep by an earlier step
                continue
            path = draw(st.lists(st.integers(0, 20), min_size=1, max_size=4))
            text = json.dumps(_mutate(obj, path, draw(NASTY)))
            lines[index] = text.encode("utf-8", "surrogatepass")
        elif how == "bytes":
            cut = draw(st.integers(0, len(lines[index])))
            junk = draw(st.binary(min_size=1, max_size=4))
            lines[index] = lines[index][:cut] + junk + lines[index][cut:]
        elif how == "junk":
            lines[index] = draw(st.text(alphabet=string.printable, max_size=30)).encode()
        elif how == "swap":
            other = draw(st.integers(0, len(lines) - 1))
            lines[index], lines[other] = lines[other], lines[index]
        else:
            depth = draw(st.sampled_from([500, 1100, 5000]))
            lines[index] = b"[" * depth + b"]" * depth
    return b"\n".join(lines) + b"\n"


POLICY_KEYS = [
    "coalesce_window_s",
    "mobile_delay_when_desktop_active_s",
    "badge_sync_min_interval_s",
    "instance_default_level",
    "default_admin_enabled",
]
TOML_VALUES = st.sampled_from(
    ["nan", "inf", "-inf", "1e308", "99999999999999999999", "-1", "0", "60", '"all"', "true"]
)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(
    log=st.sampled_from([BASE_LOG, INBOX_LOG]).flatmap(hostile_lines),
    policy=st.dictionaries(st.sampled_from(POLICY_KEYS), TOML_VALUES, max_size=3),
    seq=st.integers(-5, 20),
    recipient=st.sampled_from(["u-ana", "u-ben", "", "\udcff", "u-nobody"]),
    skips=st.booleans(),
)
def test_generated_hostile_logs_and_policies(
    tmp_path_factory: pytest.TempPathFactory,
    log: bytes,
    policy: dict[str, str],
    seq: int,
    recipient: str,
    skips: bool,
) -> None:
    folder = tmp_path_factory.mktemp("hostile")
    path, toml = folder / "log.jsonl", folder / "p.toml"
    path.write_bytes(log)
    toml.write_text("".join(f"{key} = {value}\n" for key, value in policy.items()))
    replayed = run(
        ["replay", str(path), "--policy", str(toml), *(["--include-skips"] if skips else [])]
    )
    explained = run(
        ["explain", str(path), "--seq", str(seq), "--recipient", recipient, "--policy", str(toml)]
    )
    for result in (replayed, explained):
        for line in result.stderr.splitlines():
            if "bad event" in line:
                assert line.startswith(f"{path}:"), line


TABLE_BASE = [
    line
    for line in (ROOT / "tests" / "tables" / "decide.jsonl").read_text().splitlines()[:40]
    if line.startswith("{")
][:6] + [
    line
    for line in (ROOT / "tests" / "tables" / "quiet.jsonl").read_text().splitlines()
    if line.startswith("{")
][:6]


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(table=hostile_lines(TABLE_BASE))
def test_generated_hostile_tables(tmp_path_factory: pytest.TempPathFactory, table: bytes) -> None:
    path = tmp_path_factory.mktemp("hostile") / "t.jsonl"
    path.write_bytes(table)
    run(["table", "check", str(path)])
    run(["table", "run", str(path)])


@settings(max_examples=50)
@given(
    events=st.integers(-3, 300),
    users=st.integers(-3, 40),
    fanout=st.integers(-3, 50),
    seed=st.integers(-(2**70), 2**70),
)
def test_generated_synth_options(events: int, users: int, fanout: int, seed: int) -> None:
    args = ["synth", "--events", str(events), "--users", str(users)]
    args += ["--max-fanout", str(fanout), "--seed", str(seed)]
    result = run(args)
    bad = events < 0 or users < 2 or fanout < 1
    assert result.exit_code == (2 if bad else 0)
    if not bad:
        assert len(result.stdout.splitlines()) == events
