"""The README's PostgreSQL path, run as written: a throwaway server (`notify db up`), the
schema, a synthetic log loaded to end now, one worker pass with fake providers, the status
and the replay of what was written; the server is stopped and deleted at the end."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MARKER = "<!-- postgresql-path:"
#: The whole path takes 10-30 s; a CI machine loaded by parallel suites took over 120 s once.
#: The bound is for a hang, not for speed (no timing is asserted).
SCRIPT_TIMEOUT = 600


def readme_lines() -> list[str]:
    """The command lines of the fenced block after the marker in README.md."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    after = text[text.index(MARKER) :].split("```sh\n", 1)[1]
    block = after.split("```", 1)[0]
    return [line for line in block.splitlines() if line.strip()]


def test_the_readme_postgresql_path_runs_as_written() -> None:
    lines = readme_lines()
    assert lines[0].startswith("export NOTIFY_DSN=$(.venv/bin/notify db up)")
    assert any("notify db status" in line for line in lines)
    assert any("notify replay --from-pg" in line for line in lines)
    bindir = str(Path(sys.executable).parent)
    script = "\n".join(["set -euo pipefail", *lines]).replace(".venv/bin/", bindir + "/")
    env = {k: v for k, v in os.environ.items() if k != "NOTIFY_DSN"}
    # Not pytest's tmp_path: as root, pgserver's own user must traverse every parent, and
    # pytest makes its base directory private again whenever another session starts.
    work = Path(tempfile.mkdtemp(prefix="notify-readme-"))
    try:
        try:
            done = subprocess.run(
                ["bash", "-c", script],
                cwd=work,
                env=env,
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
        status = json.loads(done.stdout[done.stdout.index("{") :])
        (consumer,) = status["consumers"]
        assert consumer["lag"] == 0 and status["head_seq"] >= 200
        assert "last_failure" not in consumer
        logged = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
        sent = [line for line in logged if line["msg"] == "push sent"]
        assert sent and all(line["outcome"] == "accepted" for line in sent)
        assert not [line for line in logged if line.get("reason") == "expired"]
        assert (work / "from-pg.jsonl").read_text().count('"decision":"send"') >= len(sent) // 2
        assert "to end now" in done.stderr
        assert not (work / ".notify-pg").exists()
    finally:
        if (work / ".notify-pg" / "data").exists():  # the script failed before `db down`
            subprocess.run([f"{bindir}/notify", "db", "down", "--delete"], cwd=work, timeout=300)
        shutil.rmtree(work, ignore_errors=True)
