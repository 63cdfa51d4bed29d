"""`notify serve` raises its open-files limit at start, and says so in one line when it cannot
reach what one process is meant to hold (issue 39 point 4: 10,000 open websockets)."""

from __future__ import annotations

import http.client
import json
import os
import resource
import signal
import subprocess
import sys

from pgworld import SCHEMA

from notify_cli.open_files import DEFAULT_SOCKETS, RESERVE, wanted_open_files

_PROBE = "from notify_cli.open_files import raise_open_files as r; print(r())"


def _limited(soft: int, hard: int) -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_the_soft_limit_is_raised_to_the_hard_one() -> None:
    """A process started at a soft limit of 256 under a hard one of 4,096 ends at 4,096."""
    hard = min(4096, resource.getrlimit(resource.RLIMIT_NOFILE)[1])
    out = subprocess.run(
        [sys.executable, "-c", _PROBE],
        preexec_fn=lambda: _limited(256, hard),
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert int(out.stdout) == hard


def test_what_one_process_should_hold() -> None:
    assert wanted_open_files(None, 8) == DEFAULT_SOCKETS + 8 + RESERVE
    assert wanted_open_files(500, 4) == 500 + 4 + RESERVE


def test_serve_under_a_low_hard_limit_says_so_after_listening(db_dsn: str) -> None:
    """The first line stays ``listening`` (with the limit in force); the next is a warning
    naming the limit, what is wanted and how to raise it; the server serves anyway."""
    env = {**os.environ, "NOTIFY_DSN": db_dsn}
    proc = subprocess.Popen(
        [sys.executable, "-m", "notify_cli", "serve", "--schema", SCHEMA, "--port", "0"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: _limited(200, 900),
    )
    try:
        assert proc.stderr is not None
        first = json.loads(proc.stderr.readline())
        assert (first["msg"], first["open_files"]) == ("listening", 900)
        second = json.loads(proc.stderr.readline())
        assert second["msg"] == "open files limited" and second["level"] == "warning"
        assert (second["open_files"], second["wanted"]) == (900, DEFAULT_SOCKETS + 8 + RESERVE)
        assert "LimitNOFILE" in second["hint"]
        client = http.client.HTTPConnection("127.0.0.1", int(first["port"]), timeout=10)
        client.request("GET", "/nothing-here")
        assert client.getresponse().status == 404  # served (and its stop signals handled)
        client.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
