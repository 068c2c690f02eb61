"""Failover of a backup path, read from a server-side capture on the emulator (root, tshark).

    .venv/bin/python tools/failover_capture.py kernel SCENARIO [--reps N]
    .venv/bin/python tools/failover_capture.py realrun SCENARIO -s SCHEDULER

Runs `mpsched kernel` (Linux MPTCP, the scenario's `backup = true` paths as backup endpoints)
or `mpsched realrun` (the multipath proxy) on SCENARIO, whose first path has an outage and
whose second is the backup, captures both server interfaces (s0, s1) in the emulator's server
namespace while it runs, and prints, for each outage seen on s0 (the client sending nothing
for over a second): the server's data on the primary after the client's last packet there
(the tail loss probe and RTO retransmissions), and the first data on the backup, in ms after
that last packet. The outage itself began up to one one-way delay of the reverse path before
it. The capture starts once the namespace exists: a first download may be partly missed.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from emu_capture import namespaces, server_namespace


def packets(pcap: Path) -> list[tuple[float, str, int]]:
    out = subprocess.run(
        ["tshark", "-r", str(pcap), "-T", "fields", "-e", "frame.time_epoch", "-e", "ip.src"]
        + ["-e", "tcp.len"],
        capture_output=True,
        text=True,
    ).stdout
    rows = [line.split("\t") for line in out.splitlines() if line]
    return [(float(t), src, int(n or 0)) for t, src, n in rows]


def report(s0: list, s1: list) -> None:
    # Addresses as the emulator assigns them: 10.200.P.1 client, 10.200.P.2 server.
    client = [r for r in s0 if r[1].endswith(".1")]
    for a, b in zip(client, client[1:]):
        if b[0] - a[0] <= 1.0:
            continue
        last = a[0]
        primary = [round(1e3 * (r[0] - last), 1) for r in s0 if r[1].endswith(".2") and r[2]]
        primary = [t for t in primary if t > 0][:5]
        backup = [r[0] for r in s1 if r[1].endswith(".2") and r[2] and r[0] > last]
        first = f"{1e3 * (backup[0] - last):.1f} ms" if backup else "none"
        print(
            f"silence of {b[0] - a[0]:.2f} s on the primary: server data on it after "
            f"{primary} ms; first data on the backup {first} after the client's last packet"
        )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=["kernel", "realrun"])
    ap.add_argument("scenario")
    ap.add_argument("-s", "--scheduler", default="backup")
    ap.add_argument("--reps", type=int, default=1)
    a = ap.parse_args()
    # This interpreter's mpsched (the venv's), whether or not the venv is on PATH.
    cmd = [sys.executable, "-m", "mpsched", a.mode, a.scenario, "--reps", str(a.reps), "--json"]
    if a.mode == "realrun":
        cmd += ["-s", a.scheduler]
    before = namespaces()
    tmp = Path(tempfile.mkdtemp(prefix="failover-"))
    run = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    ns = server_namespace(run, before)
    if ns is None:
        run.wait()
        print("no emulator namespace appeared", file=sys.stderr)
        return 2
    caps = [
        subprocess.Popen(
            ["ip", "netns", "exec", ns, "tshark", "-q", "-i", f"s{i}", "-w", str(tmp / f"s{i}")],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for i in (0, 1)
    ]
    rc = run.wait()
    time.sleep(1)
    for c in caps:
        c.terminate()  # our own children, by handle
        c.wait()
    report(packets(tmp / "s0"), packets(tmp / "s1"))
    return rc


if __name__ == "__main__":
    sys.exit(main())
