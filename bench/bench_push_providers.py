"""Speed of the real push providers against local servers with 20 ms of latency, as JSON.

Issue 36 item 7: pushes per second that one worker sends to the local APNs and FCM servers
(`notify_pg.push.providers.local`: HTTP/2 over TLS, every request checked: the APNs provider
token verified, the FCM access token and message checked) answering each push after
``--latency`` seconds (20 ms), with nothing lost or doubled: every push is counted by its
notification id at the server. Goal: at least 3,000 pushes per second per worker.

The client side is the worker's send step (`notify_pg.push.send.SendRound`, step 2): each
round's pushes go through `notify_pg.push.providers.fanout.send_all` under a
`notify_pg.push.providers.ProviderGate` of ``--concurrency`` slots
(``push.max_concurrent_requests``: 128, and the worker's default, 256), in rounds of
``--batch`` (``send_batch``: the worker's default, 512), by the batch path (the default: the
provider's event loop makes each request and starts its stream as a slot frees) and by the
per-call path (one `ApnsProvider.send` or `FcmProvider.send` per pool thread: the baseline,
``batch_over_per_call``). Each case runs ``--repeat`` times, the paths alternating; ``median``
gives each case's median and range. The servers run in a child process, so
``cpu_ms_per_push`` is this process's CPU time (all its threads) over the pushes: the
client's cost alone. Database work of the push round (claims, results) is not in these
figures: bench/bench_pg_pipeline.py measures that side. Run:
``python bench/bench_push_providers.py [--pushes 6000] [--latency 0.02]
[--concurrency 128,256] [--batch 512] [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from notify_core.hints.delivery import Notification, SendResult
from notify_pg.push.context import WorkerConfig
from notify_pg.push.providers import ProviderGate, PushProvider
from notify_pg.push.providers.apns import ApnsKey, ApnsProvider
from notify_pg.push.providers.fanout import send_all
from notify_pg.push.providers.fcm import FcmProvider, ServiceAccount
from notify_pg.push.providers.local.sandbox import KEY_ID, TEAM, TOPIC, serve_pipe
from notify_pg.stores.registrations import Registration


def device(index: int) -> str:
    """The APNs device token of registration ``index`` (hex, as APNs gives them)."""
    return f"{index:064x}"


def registration(provider: str, index: int) -> Registration:
    """Registration ``index`` of ``provider``."""
    return Registration(
        id=f"r-{index}",
        user_id=f"u-{index}",
        device_id=f"d-{index}",
        provider=provider,
        environment="production",
        app_id=TOPIC,
        created_at=datetime(2026, 12, 1, tzinfo=UTC),
        token=device(index) if provider == "apns" else f"fcm-token-{index}",
    )


def step2(
    provider: PushProvider,
    calls: list[tuple[Registration, Notification]],
    limit: int,
    batch: int,
    batched: bool,
) -> list[SendResult]:
    """The send step of the worker's push rounds (`SendRound._step2`): ``batch`` pushes a
    round (``send_batch``), each round's pushes through `fanout.send_all` under a gate of
    ``limit`` requests, in one batch (``batched``) or one call each on ``limit`` threads."""
    gate = ProviderGate(limit)
    results: list[SendResult] = []
    with ThreadPoolExecutor(max_workers=limit) as pool:
        for first in range(0, len(calls), batch):
            sent = send_all(
                [(provider, r, n) for r, n in calls[first : first + batch]],
                gate=gate,
                pool=lambda: pool,
                limit=limit,
                batch=batched,
            )
            for answer, _seconds in sent:
                if isinstance(answer, Exception):
                    raise answer
                results.append(answer)
    return results


def cpu_of(pid: int | None) -> float:
    """Seconds of CPU time process ``pid`` used so far (user and system, Linux's /proc);
    0 where that cannot be read."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


def run(
    name: str,
    provider: PushProvider,
    pipe: Connection,
    pushes: int,
    limit: int,
    batch: int,
    batched: bool,
    server: int | None = None,
) -> dict[str, Any]:
    """One measured run: ``pushes`` pushes at ``limit`` at once, in rounds of ``batch``; the
    figures and the count of every notification id at the server."""
    path = "batch" if batched else "per_call"
    calls = [
        (
            registration(name, i),
            Notification(
                id=f"{name}-{path}-{limit}-{i}",
                kind="message",
                thread=f"t-{i % 97}",
                message=f"m-{i}",
                badge=i % 9,
                quiet=i % 3 == 0,
            ),
        )
        for i in range(pushes)
    ]
    start, cpu, server_cpu = time.perf_counter(), time.process_time(), cpu_of(server)
    results = step2(provider, calls, limit, batch, batched)
    wall, cpu_s = time.perf_counter() - start, time.process_time() - cpu
    server_s = cpu_of(server) - server_cpu
    pipe.send("counts")
    received = pipe.recv()
    expected = {notification.id for _r, notification in calls}
    got = {k: v for k, v in received.items() if k.startswith(f"{name}-{path}-{limit}-")}
    return {
        "provider": name,
        "path": path,
        "concurrency": limit,
        "batch": batch,
        "pushes": pushes,
        "pushes_per_s": round(pushes / wall),
        "wall_s": round(wall, 3),
        "cpu_ms_per_push": round(cpu_s * 1000 / pushes, 3),
        "server_cpu_ms_per_push": round(server_s * 1000 / pushes, 3),
        "results": dict(Counter(r.result_class.value for r in results)),
        "lost": len(expected - set(got)),
        "doubled": sum(1 for count in got.values() if count > 1),
    }


def ratios(runs: list[dict[str, Any]]) -> dict[str, float]:
    """Per provider and concurrency, the batch path's pushes per second over the per-call
    path's in the same run (the baseline): of single runs, or of `summary`'s medians."""
    rate = {(r["provider"], r["concurrency"], r["path"]): r["pushes_per_s"] for r in runs}
    return {
        f"{provider}@{limit}": round(rate[(provider, limit, "batch")] / per_call, 2)
        for (provider, limit, path), per_call in rate.items()
        if path == "per_call" and (provider, limit, "batch") in rate
    }


def summary(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per provider, concurrency and path, the median of its repeated runs' pushes per second
    and CPU per push (another job's burst on two shared cores moves a single run by a third),
    with the lowest and highest rate and the pushes lost or doubled over all of them."""
    cases: dict[tuple[str, int, str], list[dict[str, Any]]] = {}
    for r in runs:
        cases.setdefault((r["provider"], r["concurrency"], r["path"]), []).append(r)
    return [
        {
            "provider": provider,
            "concurrency": limit,
            "path": path,
            "runs": len(group),
            "pushes_per_s": round(statistics.median(r["pushes_per_s"] for r in group)),
            "pushes_per_s_range": [
                min(r["pushes_per_s"] for r in group),
                max(r["pushes_per_s"] for r in group),
            ],
            "cpu_ms_per_push": round(statistics.median(r["cpu_ms_per_push"] for r in group), 3),
            "server_cpu_ms_per_push": round(
                statistics.median(r["server_cpu_ms_per_push"] for r in group), 3
            ),
            "lost": sum(r["lost"] for r in group),
            "doubled": sum(r["doubled"] for r in group),
        }
        for (provider, limit, path), group in cases.items()
    ]


def main(argv: list[str] | None = None, out: Callable[[str], object] = print) -> dict[str, Any]:
    """Run the bench; print and return its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pushes", type=int, default=6000)
    parser.add_argument("--latency", type=float, default=0.02)
    defaults = WorkerConfig()
    parser.add_argument("--concurrency", default=f"128,{defaults.max_concurrent_requests}")
    parser.add_argument(
        "--batch", type=int, default=defaults.send_batch, help="pushes per round (send_batch)"
    )
    parser.add_argument("--paths", default="per_call,batch")
    parser.add_argument(
        "--repeat", type=int, default=3, help="runs of each case (the summary: their median)"
    )
    args = parser.parse_args(argv)
    limits = [int(v) for v in args.concurrency.split(",")]
    paths = [p.strip() for p in args.paths.split(",")]
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as folder:
        parent, child = mp.get_context("spawn").Pipe()
        server = mp.get_context("spawn").Process(
            target=serve_pipe, args=(child, folder, args.latency), daemon=True
        )
        server.start()
        apns_url, fcm_url, key, account, ca_file = parent.recv()
        apns = ApnsProvider(
            ApnsKey.from_p8(key, key_id=KEY_ID, team_id=TEAM),
            production_url=apns_url,
            ca_file=ca_file,
        )
        fcm = FcmProvider(
            ServiceAccount.from_json(Path(account).read_text()), url=fcm_url, ca_file=ca_file
        )
        runs = []
        try:
            for name, provider in (("apns", apns), ("fcm", fcm)):
                run(name, provider, parent, 20, 4, 20, False)  # warm: connection, token
                for repeat in range(args.repeat):
                    for limit in limits:
                        # The paths alternate per concurrency: both meet the same load.
                        for path in paths:
                            figures = run(
                                name,
                                provider,
                                parent,
                                args.pushes,
                                limit,
                                args.batch,
                                path == "batch",
                                server.pid,
                            )
                            runs.append({**figures, "repeat": repeat})
        finally:
            apns.close()
            fcm.close()
            parent.send("stop")
            server.join(timeout=10)
    medians = summary(runs)
    figures = {
        "latency_s": args.latency,
        "goal_pushes_per_s": 3000,
        "runs": runs,
        "median": medians,
        "batch_over_per_call": ratios(medians),
        "cores": len(os.sched_getaffinity(0)),
        "load_1min": [round(load_before, 2), round(os.getloadavg()[0], 2)],
    }
    out(json.dumps(figures, indent=2))
    return figures


if __name__ == "__main__":
    main(sys.argv[1:])
