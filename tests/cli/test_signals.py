"""``notify_cli.signals``: a command's stop handler holds only while the command runs."""

from __future__ import annotations

import os
import signal
from types import FrameType

import pytest

from notify_cli.signals import handling_stop_signals


def test_the_handler_catches_sigterm_and_the_old_handlers_come_back() -> None:
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    caught: list[int] = []

    def on_signal(number: int, frame: FrameType | None) -> None:
        caught.append(number)

    with handling_stop_signals(on_signal):
        os.kill(os.getpid(), signal.SIGTERM)
        assert signal.getsignal(signal.SIGINT) is on_signal
    assert caught == [signal.SIGTERM]
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before


def test_the_old_handlers_come_back_when_the_block_fails() -> None:
    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(RuntimeError), handling_stop_signals(lambda number, frame: None):
        raise RuntimeError("the command failed")
    assert signal.getsignal(signal.SIGINT) == before
