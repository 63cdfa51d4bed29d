"""The run guard (tests/run_guard.py): what a test leaves running is named, child processes
are ended, and a process whose exit hangs ends with pytest's status after printing stacks."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil
import run_guard

HERE = Path(__file__).resolve().parents[1]


def test_a_busy_thread_is_named_with_its_stack_and_an_idle_pool_thread_is_not() -> None:
    release = threading.Event()

    def stuck_somewhere_recognisable() -> None:
        release.wait()

    busy = threading.Thread(target=stuck_somewhere_recognisable, name="busy-one")
    busy.start()
    pool = ThreadPoolExecutor(1, thread_name_prefix="idle-pool")
    pool.submit(lambda: None).result()
    try:
        stuck = run_guard.settle_threads(grace=0.2)
        names = [t.name for t in stuck]
        assert "busy-one" in names
        assert not any(name.startswith("idle-pool") for name in names)
        text = run_guard.describe_threads(stuck)
        assert "busy-one" in text and "stuck_somewhere_recognisable" in text
    finally:
        release.set()
        busy.join(5)
        pool.shutdown()
    assert "busy-one" not in [t.name for t in run_guard.settle_threads(grace=0.2)]


def test_child_processes_still_running_are_ended_and_named() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        ended = run_guard.end_children({child.pid})
        assert any(f"pid {child.pid}:" in line and "time.sleep(600)" in line for line in ended)
        # The guard reaps what it kills (so Popen learns no status): the pid is gone.
        assert not psutil.pid_exists(child.pid)
    finally:
        child.kill()


def test_a_hanging_exit_ends_with_the_given_status_and_the_stacks_on_stderr() -> None:
    script = textwrap.dedent(
        f"""
        import sys, threading
        sys.path.insert(0, {str(HERE)!r})
        import run_guard

        def never_returns():
            threading.Event().wait()

        threading.Thread(target=never_returns).start()  # not a daemon: exit waits for it
        run_guard.arm_exit_watchdog(3, grace=0.5)
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 3
    assert "did not exit within" in result.stderr
    assert "never_returns" in result.stderr


def test_a_server_whose_directory_is_gone_is_ended_and_a_live_one_is_left() -> None:
    import os
    import shutil
    import tempfile
    import time
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pgserver

    since = time.time() - 1
    kept_base = tempfile.mkdtemp(prefix="notify-guard-kept-")
    gone_base = tempfile.mkdtemp(prefix="notify-guard-gone-")
    kept = pgserver.get_server(os.path.join(kept_base, "data"), cleanup_mode="delete")
    gone = pgserver.get_server(os.path.join(gone_base, "data"), cleanup_mode=None)
    gone_pid = gone._postmaster_info.process.pid
    kept_pid = kept._postmaster_info.process.pid
    try:
        shutil.rmtree(gone_base, ignore_errors=True)  # as a fixture racing a restart would
        ended = run_guard.end_orphan_servers(since)
        # Another run's server may end the same way at the same time: only ours is asked for.
        assert f"pid {gone_pid}" in [line.split(":")[0] for line in ended]
        assert f"pid {kept_pid}" not in [line.split(":")[0] for line in ended]
        psutil.Process(gone_pid).wait(30) if psutil.pid_exists(gone_pid) else None
        assert not psutil.pid_exists(gone_pid)
        assert psutil.Process(kept_pid).is_running()
    finally:
        if psutil.pid_exists(gone_pid):
            psutil.Process(gone_pid).kill()
        kept.cleanup()
        shutil.rmtree(kept_base, ignore_errors=True)


def test_python_s_resource_tracker_is_left_to_end_with_the_process() -> None:
    from multiprocessing import resource_tracker

    resource_tracker.ensure_running()
    tracker = resource_tracker._resource_tracker._pid
    assert tracker is not None
    assert run_guard.end_children({tracker}) == []
    assert psutil.Process(tracker).is_running()
