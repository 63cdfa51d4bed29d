"""The README's PostgreSQL paths, run as written (no line rewritten): a throwaway server
(`notify db up`), the schema, a synthetic log loaded to end now, one worker pass with the
real APNs and FCM providers against the local provider servers, the status and the replay of what
was written; and the wiki quickstart (the
example wiki loaded to end now, a worker pass mailing to a local SMTP sink, a mail opened,
the inbox asked, the one-click unsubscribe posted, the status). Each runs in a directory that
looks like the clone the README speaks from: ``.venv`` (this interpreter's environment) and
``examples`` linked in, and runs twice there (issue 40 point 1): a block is safe to run
again, it neither reuses nor deletes what it did not create (a server of another run, files
of an earlier one planted beside it) and reads only what its own run produced. The servers
are stopped and deleted at the end."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
MARKER = "<!-- postgresql-path:"
WIKI_MARKER = "<!-- wiki-quickstart:"
#: The whole path takes 10-30 s; a CI machine loaded by parallel suites took over 120 s once.
#: The bound is for a hang, not for speed (no timing is asserted).
SCRIPT_TIMEOUT = 600


def readme_lines(marker: str = MARKER) -> list[str]:
    """The command lines of the fenced block after the marker in README.md."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    after = text[text.index(marker) :].split("```sh\n", 1)[1]
    block = after.split("```", 1)[0]
    return [line for line in block.splitlines() if line.strip()]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def clone_in(work: Path) -> None:
    """Make ``work`` a stand-in for the clone, with what an earlier session left in it: a
    mail of another run (signed with another secret) where the README once put them, and a
    file in the folder the runs share."""
    (work / ".venv").symlink_to(Path(sys.prefix), target_is_directory=True)
    (work / "examples").symlink_to(ROOT / "examples", target_is_directory=True)
    for path in PLANTED:
        (work / path).parent.mkdir(parents=True, exist_ok=True)
        (work / path).write_text("To: someone@example.org\nSubject: an earlier run\n\n")


#: What a run must leave alone (it did not create it).
PLANTED = ("mail/new/0000000000.earlier.example", ".notify-pg/earlier/keep")


def runs_of(work: Path, prefix: str) -> list[Path]:
    """The folders the README's runs made, oldest first (each holds no server any more)."""
    return sorted((work / ".notify-pg").glob(f"{prefix}-*"), key=lambda p: p.stat().st_mtime)


def run_as_written(lines: list[str], work: Path, env: dict[str, str] | None = None) -> Any:
    """Run the lines with bash in ``work``, a stand-in for the clone (`clone_in`)."""
    script = "\n".join(["set -euo pipefail", *lines])
    environ = {k: v for k, v in os.environ.items() if k != "NOTIFY_DSN"} | (env or {})
    try:
        done = subprocess.run(
            ["bash", "-c", script],
            cwd=work,
            env=environ,
            capture_output=True,
            text=True,
            timeout=SCRIPT_TIMEOUT,
        )
    except subprocess.TimeoutExpired as exc:
        # Partial output: bytes on POSIX even with text=True.
        partial = exc.stderr or b""
        stderr = partial.decode(errors="replace") if isinstance(partial, bytes) else partial
        raise AssertionError(f"not done in {SCRIPT_TIMEOUT} s: {stderr[-3000:]}") from None
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    return done


def cleanup(work: Path) -> None:
    for pid in (work / ".notify-pg").glob("*/push/sandbox.pid"):
        if not (pid.parent / "received.json").exists():  # a script failed before its `stop`
            with contextlib.suppress(OSError, ValueError):
                os.kill(int(pid.read_text()), signal.SIGTERM)
    notify = Path(sys.prefix) / "bin" / "notify"
    for data in (work / ".notify-pg").glob("*/pg/data"):  # a script failed before `db down`
        down = [str(notify), "db", "down", "--dir", str(data.parent), "--delete"]
        subprocess.run(down, cwd=work, timeout=300)
    shutil.rmtree(work, ignore_errors=True)


def left_alone(work: Path, prefix: str) -> None:
    """After two runs: two folders of their own, no server running, what was there kept."""
    runs = runs_of(work, prefix)
    assert len(runs) == 2, runs
    assert not [run for run in runs if (run / "pg").exists()]
    for path in PLANTED:
        assert (work / path).read_text().startswith("To: someone@")


def test_the_readme_postgresql_path_runs_as_written() -> None:
    lines = readme_lines()
    assert lines[1].startswith('export NOTIFY_DSN=$(.venv/bin/notify db up --dir "$run/pg")')
    assert any("notify db status" in line for line in lines)
    assert any("notify replay --from-pg" in line for line in lines)
    # Not pytest's tmp_path: as root, pgserver's own user must traverse every parent, and
    # pytest makes its base directory private again whenever another session starts.
    work = Path(tempfile.mkdtemp(prefix="notify-readme-"))
    try:
        clone_in(work)
        for run in (1, 2):
            done = run_as_written(lines, work)
            assert "pg: started a new server" in done.stderr, run
            status = json.loads(done.stdout[done.stdout.index("{") :])
            (consumer,) = status["consumers"]
            assert consumer["lag"] == 0 and status["head_seq"] >= 200
            assert "last_failure" not in consumer
            logged = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
            sent = [line for line in logged if line["msg"] == "push sent"]
            assert sent and all(line["outcome"] == "accepted" for line in sent)
            # Real providers to the local servers: every push sent was taken by one of them.
            assert {line["provider"] for line in sent} <= {"apns", "fcm"}
            (taken,) = [
                line for line in done.stdout.splitlines() if line.startswith("pushes taken")
            ]
            counts = dict(part.split() for part in taken.removeprefix("pushes taken: ").split(", "))
            assert int(counts["apns"]) + int(counts["fcm"]) == len(sent), run
            assert (runs_of(work, "demo")[-1] / "push" / "providers.toml").exists()
            assert not [line for line in logged if line.get("reason") == "expired"]
            from_pg = runs_of(work, "demo")[-1] / "from-pg.jsonl"
            assert from_pg.read_text().count('"decision":"send"') >= len(sent) // 2
            assert "to end now" in done.stderr and "loaded before" not in done.stderr
        left_alone(work, "demo")
    finally:
        cleanup(work)


def test_the_readme_wiki_quickstart_runs_as_written() -> None:
    lines = readme_lines(WIKI_MARKER)
    assert any("notify db load examples/wiki-week.jsonl" in line for line in lines)
    work = Path(tempfile.mkdtemp(prefix="notify-wiki-"))
    ports = {"SMTP_PORT": str(free_port()), "WEB_PORT": str(free_port())}
    try:
        clone_in(work)
        for run in (1, 2):
            done = run_as_written(lines, work, ports)
            assert "pg: started a new server" in done.stderr, run
            # After the migrations' lines: the mail opened (its recipient and subject).
            out = [line for line in done.stdout.splitlines() if ": applied " not in line]
            assert out[0].startswith("To: ") and out[1].startswith("Subject: ")
            assert out[1] != "Subject: an earlier run"
            summary = json.loads(out[2])
            assert summary["unread"] >= 1
            assert out[3] == "200", run  # the one-click unsubscribe took
            status = json.loads("\n".join(out[4:]))
            mails = status["inbox"]["email"]
            assert mails["sent_24h"] >= 1 and mails["failed_24h"] == 0, mails
            assert "327 events" in done.stderr and "loaded before" not in done.stderr
            # db load fanned the wiki out already: the worker pass only mails (README); a
            # round that did work logs a line, the inbox's fan-out round logs none.
            worker_log = (runs_of(work, "wiki")[-1] / "worker.log").read_text()
            assert '"msg":"mail round"' in worker_log, worker_log[-2000:]
            assert '"msg":"inbox round"' not in worker_log, worker_log[-2000:]
        left_alone(work, "wiki")
    finally:
        cleanup(work)
