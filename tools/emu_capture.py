"""What the capture tools share: finding the emulator's server namespace of a kernel run they
started, so that tshark can listen on its interfaces while the downloads run."""

from __future__ import annotations

import subprocess
import time


def namespaces() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}


def server_namespace(run: subprocess.Popen, before: set[str]) -> str | None:
    """The server namespace (`...-s`) that appeared since `before`, waiting up to 20 s while
    `run` (the `mpsched kernel` or `realrun` process) is alive; `None` if none came."""
    for _ in range(400):
        ns = next((n for n in namespaces() - before if n.endswith("-s")), None)
        if ns or run.poll() is not None:
            return ns
        time.sleep(0.05)
    return None
