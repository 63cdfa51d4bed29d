"""docs/embedding.md's worker in a host's own process, run as written against a throwaway
PostgreSQL database: the block builds the loop with `notify_pg.worker.build_worker`, runs it
until its stop event is set and prints what the page shows."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
MARKER = "<!-- embedding-worker -->"


def block() -> tuple[str, str]:
    """The code block after the marker and the output block after it."""
    text = (ROOT / "docs" / "embedding.md").read_text(encoding="utf-8")
    after = text[text.index(MARKER) :]
    code = re.search(r"```python\n(.*?)```", after, re.DOTALL)
    shown = re.search(r"Output:\n\n```\n(.*?)```", after, re.DOTALL)
    assert code is not None and shown is not None
    return code.group(1), shown.group(1)


def test_the_embedding_worker_runs_as_written(db_dsn: str, tmp_path: Path) -> None:
    code, shown = block()
    assert "build_worker(" in code and "worker.run(stop)" in code
    env = {**os.environ, "NOTIFY_DSN": db_dsn}
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout == shown
