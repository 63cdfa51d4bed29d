"""The end of a test run: nothing the tests started outlives it.

A thread that is not a daemon keeps the interpreter from exiting, and a child process (a
worker, a browser, a server) keeps the machine busy; either turns a passed run into a CI job
that never ends. At the end of the session this module names what is still running (with the
stack of each thread) and ends the child processes; from then on, a watchdog ends the
process with pytest's own status should its exit hang all the same, after printing every
thread's stack, so the cause is on record instead of a timeout.
"""

from __future__ import annotations

import faulthandler
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Collection

import psutil

#: How long the interpreter may take to exit after pytest is done.
EXIT_GRACE = 60.0
#: How long threads still running at the session's end get to finish before being named.
THREAD_GRACE = 10.0


def leftover_threads() -> list[threading.Thread]:
    """Threads that would keep the interpreter from exiting (not daemons, not the main one)."""
    main = threading.main_thread()
    return [t for t in threading.enumerate() if t is not main and not t.daemon and t.is_alive()]


def describe_threads(threads: list[threading.Thread]) -> str:
    """Each thread's name and where it stands, innermost frames last."""
    frames = sys._current_frames()
    parts = []
    for thread in threads:
        frame = frames.get(thread.ident or -1)
        stack = "".join(traceback.format_stack(frame)[-8:]) if frame is not None else ""
        parts.append(f"thread {thread.name!r}:\n{stack}")
    return "\n".join(parts)


def settle_threads(grace: float = THREAD_GRACE) -> list[threading.Thread]:
    """Wait up to ``grace`` seconds in all for the leftover threads; return those still busy.

    Idle pool threads (``concurrent.futures``, waiting for work) are not counted: the
    interpreter ends them at exit."""
    deadline = time.monotonic() + grace
    for thread in leftover_threads():
        if not _idle_pool_thread(thread):
            thread.join(max(0.0, deadline - time.monotonic()))
    return [t for t in leftover_threads() if not _idle_pool_thread(t)]


def _idle_pool_thread(thread: threading.Thread) -> bool:
    """Whether ``thread`` is a pool thread waiting for work (its innermost Python frame is the
    pool's loop: the queue it waits on is written in C)."""
    frame = sys._current_frames().get(thread.ident or -1)
    return (
        frame is not None
        and frame.f_code.co_name == "_worker"
        and frame.f_code.co_filename.endswith(os.path.join("concurrent", "futures", "thread.py"))
    )


def end_children(pids: Collection[int] | None = None) -> list[str]:
    """End every process this run started that still runs (or those of ``pids`` among them);
    return what each was.

    Python's own resource tracker (``multiprocessing``) is left alone: it ends when this
    process does, and ending it early makes every later user of it start another."""
    ended: list[str] = []
    children = []
    for child in psutil.Process().children(recursive=True):
        try:
            cmdline = " ".join(child.cmdline())
        except psutil.Error:
            continue
        if (pids is not None and child.pid not in pids) or "resource_tracker" in cmdline:
            continue
        try:
            child.kill()
        except psutil.Error:
            continue
        children.append(child)
        ended.append(f"pid {child.pid}: {cmdline[:200]}")
    psutil.wait_procs(children, timeout=10)
    return ended


def end_orphan_servers(since: float) -> list[str]:
    """End PostgreSQL servers started since ``since`` whose data directory is gone.

    A test that deletes its server's directory before the server has stopped (a restart that
    raced the fixture's stop) leaves a postmaster that belongs to no one and never ends; a
    server whose directory still exists may be another test run's, and is left alone."""
    ended: list[str] = []
    for process in psutil.process_iter(["name", "cmdline", "create_time"]):
        info = process.info
        cmdline = info.get("cmdline") or []
        if info.get("name") != "postgres" or (info.get("create_time") or 0) < since:
            continue
        if "-D" not in cmdline or cmdline.index("-D") + 1 >= len(cmdline):
            continue
        data = cmdline[cmdline.index("-D") + 1]
        if os.path.isdir(data):
            continue
        try:
            process.send_signal(signal.SIGQUIT)  # the immediate shutdown of PostgreSQL
            ended.append(f"pid {process.pid}: {' '.join(cmdline)[:200]}")
        except psutil.Error:
            continue
    return ended


def arm_exit_watchdog(status: int, grace: float = EXIT_GRACE) -> None:
    """End the process with ``status`` if it has not exited ``grace`` seconds from now.

    A daemon thread: it runs while the interpreter joins other threads and runs its exit
    handlers, the two places an exit hangs."""

    def watch() -> None:
        threading.Event().wait(grace)
        sys.stderr.write(
            f"\nrun_guard: the test process did not exit within {grace:.0f} s of pytest's end; "
            "every thread's stack follows, then it ends with pytest's status\n"
        )
        faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
        sys.stderr.flush()
        sys.stdout.flush()
        os._exit(status)

    threading.Thread(target=watch, name="run-guard", daemon=True).start()
