"""The python blocks of the pages marked ``<!-- postgresql -->`` run as written against a
throwaway database (``NOTIFY_DSN``), their shown output compared (issue 27, point 5; the
other blocks run in tests/docs/test_doc_blocks.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.doc_blocks import blocks, fake_clone, outputs, run_python

BLOCKS = {block.where: block for block in blocks() if block.kind == "python-pg"}
OUTPUTS = outputs()


def test_the_pages_have_postgresql_blocks() -> None:
    assert len(BLOCKS) >= 3


@pytest.mark.parametrize("where", sorted(BLOCKS))
def test_postgresql_block_runs_as_written(where: str, db_dsn: str, tmp_path: Path) -> None:
    block = BLOCKS[where]
    done = run_python(block, fake_clone(tmp_path / "clone"), NOTIFY_DSN=db_dsn)
    assert done.returncode == 0, done.stderr[-3000:]
    if block in OUTPUTS:
        assert done.stdout == OUTPUTS[block].body
