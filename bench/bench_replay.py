"""Benchmark: ``notify replay`` end to end on a large synthetic log, printed as JSON.

    python bench/bench_replay.py [--events 1000000] [--users 10000] [--seed 1]
                                 [--max-fanout 500] [--records] [--profile-events 0]
                                 [--json-sample 100000]
                                 [--baseline-src PATH [--rounds 3]] [--no-profile] [--no-json]

Stages, each reported in the JSON object:
- ``log``: ``notify synth`` writes the log to a temporary file (a child process); with
  ``--records`` the log holds preference records (caps, channels off, suspensions, M1-M6).
- ``replay``: ``notify replay LOG --out FILE --summary-json FILE`` in a child process, so the
  figures are the command's own: events/s, recipient decisions/s (every decision of the
  pipeline, skips included; goal >= 100,000 on one core) and peak memory (the child's
  maximum resident set, from ``wait4``; goal < 1 GiB).
- ``against_baseline`` (with ``--baseline-src PATH``): the same log replayed by the source
  tree at PATH (e.g. a ``git worktree`` of main; ``PYTHONPATH=PATH``) and by this one, in
  alternating rounds (``--rounds``), so that both see the same load: each side's best and
  median decisions/s, per wall second and per CPU second of the child (user + system: on a
  shared machine the wall time follows the others' load), the ratios of the bests and of
  the medians, each side's peak resident
  set (the highest of its rounds) and whether the outputs (hints and summary) are
  byte-identical (sha256 of the files).
- ``baseline_read_only``: this process reads and checks every event as the replay does and
  decides nothing; ``replay_over_read`` is the replay's time as a multiple of it.
- ``profile``: the same replay in this process under pyinstrument (first ``--profile-events``
  events, 0 = all), its time split into reading JSON, checking events, deciding (the
  pipeline, world state included), writing JSON and the summary.
- ``json``: ``loads`` of event lines and ``dumps`` of hint objects with the stdlib, orjson
  and msgspec (those installed), per item and as ratios to the stdlib, and whether each
  library's output is byte-identical to ``json.dumps(..., ensure_ascii=False,
  separators=(",", ":"))`` on the sample and on hard strings.

Figures depend on the machine; nothing here asserts a speed (tests/bench/test_bench_replay.py only
runs the functions on a small log).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import itertools
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from notify_cli import fastjson
from notify_core.events.log import EventError
from notify_core.replay.lines import dumps_hint, hint_to_json
from notify_core.replay.run import Replay

STDLIB_DUMPS: Callable[[object], str] = json.JSONEncoder(
    ensure_ascii=False, separators=(",", ":")
).encode
#: Strings a JSON encoder may get wrong: non-ASCII, controls, separators, quotes, astral.
HARD_STRINGS = ["héllo", "日本語", "😀", "\u2028\u2029", "\x00\x01\x1f\x7f", '"\\/', "\t\n\r\b\f"]


def notify(*args: str) -> list[str]:
    return [sys.executable, "-m", "notify_cli", *args]


#: This tree, the source of ``notify`` unless ``--baseline-src`` names another for a side.
HERE = Path(__file__).resolve().parent.parent


def run_child(command: list[str], src: Path | None = None) -> tuple[float, int, float]:
    """Run a command (in ``src``, first on ``PYTHONPATH``, when given); return its wall time,
    its peak resident set in KiB and its CPU time (user + system: on a shared machine the
    wall time follows the others' load, the CPU time much less)."""
    env = None
    if src is not None:
        # ``python -m`` puts the working directory first on sys.path: it must be src too.
        env = {**os.environ, "PYTHONPATH": str(src)}
    start = time.perf_counter()
    child = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=src
    )
    assert child.stderr is not None
    stderr = child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    elapsed = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise RuntimeError(f"{command} failed ({child.returncode}): {stderr.decode()[-2000:]}")
    return elapsed, usage.ru_maxrss, usage.ru_utime + usage.ru_stime


def generate(
    path: Path, events: int, users: int, seed: int, max_fanout: int, records: bool = False
) -> dict[str, Any]:
    """Write the synthetic log with ``notify synth`` (``--records``: with preference records)."""
    seconds, _, _ = run_child(
        notify(
            "synth",
            f"--events={events}",
            f"--users={users}",
            f"--seed={seed}",
            f"--max-fanout={max_fanout}",
            f"--out={path}",
            *(["--records"] if records else []),
        )
    )
    return {
        "events": events,
        "users": users,
        "seed": seed,
        "max_fanout": max_fanout,
        "records": records,
        "bytes": path.stat().st_size,
        "seconds": round(seconds, 2),
    }


def replay(path: Path, workdir: Path, src: Path | None = None) -> dict[str, Any]:
    """Replay the log with ``notify replay`` in a child process; JSON in, JSON out.

    ``src``: the source tree to run (first on ``PYTHONPATH``); ``None``: the installed one.
    """
    out, summary_file = workdir / "hints.jsonl", workdir / "summary.json"
    seconds, peak_kib, cpu = run_child(
        notify("replay", str(path), f"--out={out}", f"--summary-json={summary_file}"), src
    )
    summary = json.loads(summary_file.read_text(encoding="utf-8"))
    events = sum(summary["events"].values())
    decisions = sum(summary["decisions"].values())
    with out.open("rb") as handle:
        hints = sum(1 for _ in handle)
    return {
        "seconds": round(seconds, 2),
        "events": events,
        "events_per_s": round(events / seconds),
        "decisions": decisions,
        "decisions_per_s": round(decisions / seconds),
        "cpu_seconds": round(cpu, 2),
        "decisions_per_cpu_s": round(decisions / cpu) if cpu else None,
        "decisions_goal_per_s": 100_000,
        "hints_written": hints,
        "bad_lines": summary["bad_lines"],
        "peak_rss_mib": round(peak_kib / 1024, 1),
        "peak_goal_mib": 1024,
        "decisions_by_kind": summary["decisions"],
        "sends_by_kind": summary["sends_by_kind"],
        "sha256": {"hints": _sha256(out), "summary": _sha256(summary_file)},
    }


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def _side(runs: list[dict[str, Any]]) -> dict[str, Any]:
    rates = [run["decisions_per_s"] for run in runs]
    cpu_rates = [run["decisions_per_cpu_s"] for run in runs]
    return {
        "decisions_per_cpu_s_best": max(cpu_rates),
        "decisions_per_cpu_s_median": round(statistics.median(cpu_rates)),
        "cpu_seconds_rounds": [run["cpu_seconds"] for run in runs],
        "decisions_per_s_best": max(rates),
        "decisions_per_s_median": round(statistics.median(rates)),
        "decisions_per_s_rounds": rates,
        "seconds_rounds": [run["seconds"] for run in runs],
        "peak_rss_mib": max(run["peak_rss_mib"] for run in runs),
        "peak_rss_mib_rounds": [run["peak_rss_mib"] for run in runs],
        "decisions": runs[0]["decisions"],
        "sha256": runs[0]["sha256"],
    }


def against_baseline(path: Path, workdir: Path, baseline: Path, rounds: int) -> dict[str, Any]:
    """Replay the log with the tree at ``baseline`` and with this one, alternating rounds
    (the machine's load changes both alike); compare speed, memory and output bytes."""
    sides: dict[str, list[dict[str, Any]]] = {"baseline": [], "new": []}
    for _ in range(rounds):
        for name, src in (("baseline", baseline), ("new", HERE)):
            sides[name].append(replay(path, workdir, src))
    base, new = _side(sides["baseline"]), _side(sides["new"])
    digests = {json.dumps(run["sha256"]) for runs in sides.values() for run in runs}
    return {
        "baseline_src": str(baseline),
        "new_src": str(HERE),
        "rounds": rounds,
        "baseline": base,
        "new": new,
        "ratio_best": round(new["decisions_per_s_best"] / base["decisions_per_s_best"], 2),
        "ratio_median": round(new["decisions_per_s_median"] / base["decisions_per_s_median"], 2),
        "cpu_ratio_best": round(
            new["decisions_per_cpu_s_best"] / base["decisions_per_cpu_s_best"], 2
        ),
        "cpu_ratio_median": round(
            new["decisions_per_cpu_s_median"] / base["decisions_per_cpu_s_median"], 2
        ),
        "peak_rss_ratio": round(new["peak_rss_mib"] / base["peak_rss_mib"], 3),
        "byte_identical": len(digests) == 1,
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


def read_floor(path: Path, replay_seconds: float) -> dict[str, Any]:
    """The baseline: read and check every event of the log as the replay does, decide
    nothing. The replay's time over this one is what deciding and writing cost on top."""
    reader = fastjson.reader()
    start = time.perf_counter()
    events = 0
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if reader.read(line, number) is not None:
                events += 1
    seconds = time.perf_counter() - start
    return {
        "seconds": round(seconds, 2),
        "events": events,
        "events_per_s": round(events / seconds),
        "replay_over_read": round(replay_seconds / seconds, 2),
    }


def _replay_in_process(lines: Iterable[str]) -> int:
    """The loop of ``notify replay``: hints out as JSON lines (discarded here)."""
    written = 0
    run = Replay(reader=fastjson.reader())
    with open(os.devnull, "w", encoding="utf-8") as sink:
        write = sink.write
        for item in run.run(lines):
            if not isinstance(item, EventError):
                write(dumps_hint(item, fastjson.dumps) + "\n")
                written += 1
    return written


#: Innermost function on the stack -> the stage its time counts for. ``read_json`` is the
#: reader's own time (orjson's loads is C code, counted in its caller); the stages of the
#: pipeline together are "deciding".
STAGES = {
    "read": "read_json",
    "loads": "read_json",
    "dumps": "write_json",
    "_parse_event": "check_events",
    "parse_event": "check_events",
    "handle": "pipeline_other",
    "finish": "pipeline_other",
    "classify": "classify",
    "_decide_fan_out": "facts_and_decide",
    "_apply": "apply_decisions",
    "advance": "due_work",
    "_after": "follow_and_badge",
    "record": "world_state",
    "dumps_hint": "write_json",
    "add_hint": "summary",
    "add_event": "summary",
}
PIPELINE = (
    "pipeline_other",
    "classify",
    "facts_and_decide",
    "apply_decisions",
    "due_work",
    "follow_and_badge",
    "world_state",
)


def profile(path: Path, limit: int) -> dict[str, Any]:
    """Replay the first ``limit`` lines (0: all) under pyinstrument; time shares per stage."""
    try:
        from pyinstrument import Profiler
    except ImportError:
        return {"skipped": "pyinstrument is not installed"}
    with path.open(encoding="utf-8") as handle:
        lines = itertools.islice(handle, limit) if limit else handle
        profiler = Profiler(interval=0.001)
        profiler.start()
        _replay_in_process(lines)
        session = profiler.stop()
    totals: dict[str, float] = {}

    def walk(frame: Any, stage: str) -> None:
        stage = STAGES.get(frame.function, stage)
        children = frame.children
        own = frame.time - sum(child.time for child in children)
        totals[stage] = totals.get(stage, 0.0) + max(own, 0.0)
        for child in children:
            walk(child, stage)

    root = session.root_frame()
    if root is None:
        return {"skipped": "no samples"}
    walk(root, "other")
    total = sum(totals.values()) or 1.0
    shares = {k: round(100 * v / total, 1) for k, v in sorted(totals.items(), key=lambda x: -x[1])}
    json_share = shares.get("read_json", 0.0) + shares.get("write_json", 0.0)
    return {
        "events_profiled": limit or "all",
        "seconds_profiled": round(session.duration, 2),
        "share_percent": shares,
        "json_percent": round(json_share, 1),
        "deciding_percent": round(sum(shares.get(stage, 0.0) for stage in PIPELINE), 1),
    }


def _best(fn: Callable[[], object], repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def _libraries() -> dict[str, tuple[Callable[[str], object], Callable[[object], str]]]:
    def refuse(name: str) -> object:
        raise ValueError(name)

    decoder = json.JSONDecoder(parse_constant=refuse)
    libs: dict[str, tuple[Callable[[str], object], Callable[[object], str]]] = {
        "json": (decoder.decode, STDLIB_DUMPS)
    }
    try:
        orjson: Any = importlib.import_module("orjson")
        libs["orjson"] = (orjson.loads, lambda obj: orjson.dumps(obj).decode())
    except ImportError:
        pass
    try:
        msgspec: Any = importlib.import_module("msgspec")
        decode, encode = msgspec.json.Decoder().decode, msgspec.json.Encoder().encode
        libs["msgspec"] = (decode, lambda obj: encode(obj).decode())
    except ImportError:
        pass
    return libs


def json_libraries(path: Path, sample: int) -> dict[str, Any]:
    """Compare the JSON libraries on event lines and hint objects of the log."""
    with path.open(encoding="utf-8") as handle:
        lines = list(itertools.islice(handle, sample))
    hints: list[dict[str, object]] = []
    run = Replay(include_skips=True)
    with path.open(encoding="utf-8") as handle:
        for item in run.run(handle):
            if not isinstance(item, EventError):
                hints.append(hint_to_json(item))
                if len(hints) >= sample:
                    break
    hard = [
        {"seq": 2**62, "trigger": "event", "recipient": text, "thread": text, "count": 3}
        for text in HARD_STRINGS
    ]
    out: dict[str, Any] = {"event_lines": len(lines), "hints": len(hints)}
    base_loads = base_dumps = 0.0
    for name, (loads, dumps) in _libraries().items():
        t_loads = _best(lambda loads=loads: [loads(line) for line in lines]) / max(len(lines), 1)
        t_dumps = _best(lambda dumps=dumps: [dumps(h) for h in hints]) / max(len(hints), 1)
        if name == "json":
            base_loads, base_dumps = t_loads, t_dumps
        out[name] = {
            "loads_us": round(t_loads * 1e6, 3),
            "dumps_us": round(t_dumps * 1e6, 3),
            "loads_speedup": round(base_loads / t_loads, 2) if t_loads else None,
            "dumps_speedup": round(base_dumps / t_dumps, 2) if t_dumps else None,
            "dumps_identical": all(dumps(h) == STDLIB_DUMPS(h) for h in [*hints, *hard]),
            "loads_identical": all(loads(line) == json.loads(line) for line in lines),
        }
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--users", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--max-fanout", type=int, default=500)
    parser.add_argument("--profile-events", type=int, default=0, help="0: the whole log")
    parser.add_argument("--json-sample", type=int, default=100_000)
    parser.add_argument("--no-profile", action="store_true")
    parser.add_argument("--no-json", action="store_true", help="skip the JSON libraries")
    parser.add_argument(
        "--baseline-src",
        type=Path,
        metavar="PATH",
        help="also replay with the source tree at PATH, alternating rounds, and compare",
    )
    parser.add_argument("--rounds", type=int, default=3, help="rounds per side (baseline)")
    parser.add_argument(
        "--records", action="store_true", help="a log with preference records (synth --records)"
    )
    args = parser.parse_args(argv)
    result: dict[str, Any] = {"python": platform.python_version(), "machine": platform.machine()}
    with tempfile.TemporaryDirectory(prefix="notify-bench-") as tmp:
        workdir = Path(tmp)
        log = workdir / "synth.jsonl"
        result["log"] = generate(
            log, args.events, args.users, args.seed, args.max_fanout, args.records
        )
        if args.baseline_src is not None:
            result["against_baseline"] = against_baseline(
                log, workdir, args.baseline_src.resolve(), args.rounds
            )
        result["replay"] = replay(log, workdir)
        result["baseline_read_only"] = read_floor(log, result["replay"]["seconds"])
        if not args.no_json:
            result["json"] = json_libraries(log, args.json_sample)
        if not args.no_profile:
            result["profile"] = profile(log, args.profile_events)
    return result


if __name__ == "__main__":
    print(json.dumps(main(), indent=2))
