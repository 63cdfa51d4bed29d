"""The README's PostgreSQL paths, run as written (no line rewritten): a throwaway server
(`notify db up`), the schema, a synthetic log loaded to end now, one worker pass with the
real providers against the local provider servers, the status and the replay of what was
written; and the wiki quickstart (the example wiki loaded to end now, a worker pass mailing
to a local SMTP sink, a mail opened, the inbox asked, the one-click unsubscribe posted, the
status). Each runs in a directory that
looks like the clone the README speaks from: ``.venv`` (this interpreter's environment) and
``examples`` linked in. The servers are stopped and deleted at the end."""

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


def run_as_written(lines: list[str], work: Path, env: dict[str, str] | None = None) -> Any:
    """Run the lines with bash in ``work``, a stand-in for the clone."""
    (work / ".venv").symlink_to(Path(sys.prefix), target_is_directory=True)
    (work / "examples").symlink_to(ROOT / "examples", target_is_directory=True)
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
    sandbox = work / ".notify-push"
    if (sandbox / "sandbox.pid").exists() and not (sandbox / "received.json").exists():
        # The script failed before the sandbox's `stop`: end its process.
        with contextlib.suppress(OSError, ValueError):
            os.kill(int((sandbox / "sandbox.pid").read_text()), signal.SIGTERM)
    if (work / ".notify-pg" / "data").exists():  # the script failed before `db down`
        notify = Path(sys.prefix) / "bin" / "notify"
        subprocess.run([str(notify), "db", "down", "--delete"], cwd=work, timeout=300)
    shutil.rmtree(work, ignore_errors=True)


def test_the_readme_postgresql_path_runs_as_written() -> None:
    lines = readme_lines()
    assert lines[0].startswith("export NOTIFY_DSN=$(.venv/bin/notify db up)")
    assert any("notify db status" in line for line in lines)
    assert any("notify replay --from-pg" in line for line in lines)
    # Not pytest's tmp_path: as root, pgserver's own user must traverse every parent, and
    # pytest makes its base directory private again whenever another session starts.
    work = Path(tempfile.mkdtemp(prefix="notify-readme-"))
    try:
        done = run_as_written(lines, work)
        status = json.loads(done.stdout[done.stdout.index("{") :])
        (consumer,) = status["consumers"]
        assert consumer["lag"] == 0 and status["head_seq"] >= 200
        assert "last_failure" not in consumer
        logged = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
        sent = [line for line in logged if line["msg"] == "push sent"]
        assert sent and all(line["outcome"] == "accepted" for line in sent)
        # Real providers to the local servers: every push sent was taken by one of them.
        assert {line["provider"] for line in sent} <= {"apns", "fcm"}
        (taken,) = [line for line in done.stdout.splitlines() if line.startswith("pushes taken")]
        counts = dict(part.split() for part in taken.removeprefix("pushes taken: ").split(", "))
        assert int(counts["apns"]) + int(counts["fcm"]) == len(sent)
        assert (work / ".notify-push" / "providers.toml").exists()
        assert not [line for line in logged if line.get("reason") == "expired"]
        assert (work / "from-pg.jsonl").read_text().count('"decision":"send"') >= len(sent) // 2
        assert "to end now" in done.stderr
        assert not (work / ".notify-pg").exists()
    finally:
        cleanup(work)


def test_the_readme_wiki_quickstart_runs_as_written() -> None:
    lines = readme_lines(WIKI_MARKER)
    assert any("notify db load examples/wiki-week.jsonl" in line for line in lines)
    work = Path(tempfile.mkdtemp(prefix="notify-wiki-"))
    ports = {"SMTP_PORT": str(free_port()), "WEB_PORT": str(free_port())}
    try:
        done = run_as_written(lines, work, ports)
        # After the migrations' lines: the mail opened (its recipient and subject).
        out = [line for line in done.stdout.splitlines() if ": applied " not in line]
        # The mail opened: its recipient and subject.
        assert out[0].startswith("To: ") and out[1].startswith("Subject: ")
        summary = json.loads(out[2])
        assert summary["unread"] >= 1
        assert out[3] == "200"  # the one-click unsubscribe took
        status = json.loads("\n".join(out[4:]))
        mails = status["inbox"]["email"]
        assert mails["sent_24h"] >= 1 and mails["failed_24h"] == 0, mails
        assert "327 events" in done.stderr
        assert not (work / ".notify-pg").exists()
    finally:
        cleanup(work)
