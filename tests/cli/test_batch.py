"""notify_cli.batch: the replay's collector thresholds, set for the run and restored after."""

from __future__ import annotations

import gc

import pytest

from notify_cli.batch import BATCH_THRESHOLDS, batch_gc


def test_batch_gc_sets_and_restores_the_thresholds() -> None:
    before = gc.get_threshold()
    with batch_gc():
        assert gc.get_threshold() == BATCH_THRESHOLDS
    assert gc.get_threshold() == before


def test_batch_gc_restores_the_thresholds_after_an_error() -> None:
    before = gc.get_threshold()
    with pytest.raises(RuntimeError), batch_gc():
        raise RuntimeError("boom")
    assert gc.get_threshold() == before
