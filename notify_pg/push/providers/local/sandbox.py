"""The local provider servers as one sandbox, with the configuration that points at them.

``python -m notify_pg.push.providers.local.sandbox start DIR`` starts, in a background
process, a local APNs (any device token accepted, every other check kept), a local FCM with
its token endpoint and a local Web Push service, each over TLS with a test CA made in ``DIR``;
it writes there the keys (a team's ``.p8``, a service account, a VAPID key) and
``DIR/providers.toml``, which ``notify worker --providers`` takes as it is, and prints that
path once the servers answer. ``... stop DIR`` ends the process and prints how many pushes
each server took (``pushes taken: apns 12, fcm 9, webpush 0``). For tests, staging and the
README's path; nothing leaves loopback.

`serve_pipe` is the same servers in a child process driven over a pipe
(bench/bench_push_providers.py).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from multiprocessing.connection import Connection
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from notify_pg.push.providers.local.apns import LocalApns
from notify_pg.push.providers.local.fcm import LocalFcm
from notify_pg.push.providers.local.tls import LocalCa
from notify_pg.push.providers.local.webpush import LocalPushService
from notify_pg.push.providers.webpush import b64url

__all__ = ["KEY_ID", "TEAM", "TOPIC", "main", "serve_pipe"]

TEAM, KEY_ID, TOPIC = "TEAM123456", "KEY1234567", "app"


def _vapid(folder: Path) -> str:
    key = ec.generate_private_key(ec.SECP256R1())
    (folder / "vapid.pem").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    (folder / "vapid.pem").chmod(0o600)
    public = key.public_key().public_bytes(
        serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
    )
    return b64url(public)


def _serve(folder: Path) -> None:
    """Start the servers, write the configuration, serve until SIGTERM or SIGINT."""
    ca = LocalCa.create(folder)
    apns = LocalApns(ca, open_devices=True).start()
    fcm = LocalFcm(ca).start()
    webpush = LocalPushService(ca, _vapid(folder)).start()
    (folder / "apns.p8").write_text(apns.team_key(TEAM, KEY_ID))
    (folder / "apns.p8").chmod(0o600)
    fcm.service_account(folder / "fcm.json")
    config = (
        f"# The local sandbox of {folder} (notify_pg.push.providers.local.sandbox).\n"
        f'[apns]\nteam_id = "{TEAM}"\nkey_id = "{KEY_ID}"\nkey_file = "apns.p8"\n'
        f'production_url = "{apns.server.url}"\nsandbox_url = "{apns.server.url}"\n'
        'ca_file = "ca.pem"\n\n'
        f'[fcm]\nservice_account_file = "fcm.json"\nurl = "{fcm.server.url}"\n'
        'ca_file = "ca.pem"\n\n'
        '[webpush]\nvapid_key_file = "vapid.pem"\nsubject = "mailto:ops@example.com"\n'
        'ca_file = "ca.pem"\n'
    )
    partial = folder / "providers.toml.part"
    partial.write_text(config)
    partial.rename(folder / "providers.toml")  # whole or absent: `start` waits for it
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda _n, _f: stop.set())
    signal.signal(signal.SIGINT, lambda _n, _f: stop.set())
    stop.wait()
    counts = {
        "apns": len(apns.received),
        "fcm": len(fcm.received),
        "webpush": len(webpush.received),
    }
    (folder / "received.json").write_text(json.dumps(counts))
    for server in (apns, fcm, webpush):
        server.close()


def serve_pipe(pipe: Connection, folder: str, latency: float) -> None:
    """A local APNs (any device) and FCM answering after ``latency`` seconds, driven over
    ``pipe``: it sends ``(apns_url, fcm_url, p8_text, account_path, ca_file)``, then answers
    ``"counts"`` with how often it took each notification id (and forgets them) until
    ``"stop"``."""
    ca = LocalCa.create(folder)
    apns = LocalApns(ca, latency=latency, open_devices=True).start()
    fcm = LocalFcm(ca, latency=latency).start()
    key = apns.team_key(TEAM, KEY_ID)
    account = fcm.service_account(Path(folder) / "fcm.json")
    pipe.send((apns.server.url, fcm.server.url, key, account, ca.ca_file))
    while pipe.recv() == "counts":
        received = Counter(str(p.payload.get("id")) for p in apns.received)
        received.update(str(m.message["data"]["id"]) for m in fcm.received)  # type: ignore[index]
        apns.received.clear()
        fcm.received.clear()
        pipe.send(dict(received))
    apns.close()
    fcm.close()


def main(argv: list[str]) -> int:
    """``start DIR``, ``stop DIR`` or ``serve DIR`` (the background process itself)."""
    if len(argv) != 2 or argv[0] not in ("start", "stop", "serve"):
        print("usage: python -m notify_pg.push.providers.local.sandbox start|stop DIR")
        return 2
    command, folder = argv[0], Path(argv[1])
    if command == "serve":
        _serve(folder)
        return 0
    if command == "start":
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "providers.toml").unlink(missing_ok=True)
        (folder / "received.json").unlink(missing_ok=True)
        with (folder / "sandbox.log").open("ab") as log:
            process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "notify_pg.push.providers.local.sandbox",
                    "serve",
                    str(folder),
                ],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,  # outlives the shell that started it
            )
        (folder / "sandbox.pid").write_text(str(process.pid))
        deadline = time.monotonic() + 60
        while not (folder / "providers.toml").exists():
            if process.poll() is not None or time.monotonic() > deadline:
                print(f"the sandbox did not start: see {folder / 'sandbox.log'}", file=sys.stderr)
                return 1
            time.sleep(0.05)
        print(folder / "providers.toml")
        return 0
    pid = int((folder / "sandbox.pid").read_text())
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 30
    while not (folder / "received.json").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    if not (folder / "received.json").exists():
        print("the sandbox did not say what it took", file=sys.stderr)
        return 1
    counts = json.loads((folder / "received.json").read_text())
    print("pushes taken: " + ", ".join(f"{name} {count}" for name, count in counts.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
