"""Subflows of Linux MPTCP over N emulated paths, read from a server-side capture (root, tshark).

    .venv/bin/python tools/manypath_capture.py SCENARIO [--reps N] [--set K=V ...] [--keep DIR]
    .venv/bin/python tools/manypath_capture.py SCENARIO --sim [--set K=V ...]

Runs `mpsched kernel SCENARIO --mode mptcp` and captures every server interface (s0 ... sN-1)
in the emulator's server namespace while it runs (headers only), then prints per download and
per subflow: when its SYN (MP_CAPABLE on s0, MP_JOIN on the others) reached the server, when
the server saw the handshake's last ACK, its first and last data, payload bytes and frames,
the DSS mappings it carried, and the connection's first bursts: which subflow the server gave
which data-sequence range, in the order it sent them. Times are ms from the MP_CAPABLE SYN.

`--sim` prints the same for the simulator's `linux` scheduler from its per-packet trace
(`run --trace`): first and last data per path, bytes, and the bursts; the simulator's joins
are not in its trace (they leave when the first data reaches the client,
crates/sim/src/world.rs).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from emu_capture import namespaces, server_namespace

FIELDS = [
    "frame.time_epoch",
    "ip.src",
    "tcp.srcport",
    "tcp.dstport",
    "tcp.flags.syn",
    "tcp.flags.ack",
    "tcp.seq",
    "tcp.len",
    "tcp.options.mptcp.subtype",
    "tcp.options.mptcp.rawdataseqno",
    "tcp.options.mptcp.subflowseqno",
    "tcp.options.mptcp.datalvllen",
]


def first(value: str) -> str:
    return value.split(",")[0] if value else ""


def frames(pcap: Path, path: int) -> list[dict]:
    out = subprocess.run(
        ["tshark", "-r", str(pcap), "-T", "fields", "-E", "occurrence=a"]
        + [a for f in FIELDS for a in ("-e", f)],
        capture_output=True,
        text=True,
    ).stdout
    rows = []
    for line in out.splitlines():
        v = dict(zip(FIELDS, line.split("\t")))
        rows.append(
            {
                "t": float(v["frame.time_epoch"]),
                "path": path,
                "from_server": v["ip.src"].endswith(".2"),
                "port": int(v["tcp.dstport"] if v["ip.src"].endswith(".2") else v["tcp.srcport"]),
                "syn": v["tcp.flags.syn"] in ("1", "True"),
                "ack": v["tcp.flags.ack"] in ("1", "True"),
                "seq": int(v["tcp.seq"] or 0),
                "len": int(v["tcp.len"] or 0),
                "subtypes": v["tcp.options.mptcp.subtype"],
                "dsn": first(v["tcp.options.mptcp.rawdataseqno"]),
                "ssn": first(v["tcp.options.mptcp.subflowseqno"]),
                "dlen": first(v["tcp.options.mptcp.datalvllen"]),
            }
        )
    return rows


def bursts(sends: list[tuple[float, int, int, int]], limit: int) -> list[str]:
    """(time, path, dsn, len) -> the data-sequence ranges each subflow carried first, in DSN
    order, contiguous runs merged: "first send time, path, range (kB)". Resent ranges are
    left out."""
    seen: set[int] = set()
    runs: list[list] = []
    for t, p, dsn, n in sorted(sends):
        if dsn in seen:
            continue
        seen.add(dsn)
        runs.append([p, dsn, dsn + n, t])
    runs.sort(key=lambda r: r[1])
    out: list[list] = []
    for p, a, b, t in runs:
        if out and out[-1][0] == p and out[-1][2] >= a:
            out[-1][2] = max(out[-1][2], b)
            out[-1][3] = min(out[-1][3], t)
        else:
            out.append([p, a, b, t])
    return [
        f"p{p} {a:>9,}-{b:<9,} ({(b - a) / 1e3:6.1f} kB) first sent {1e3 * t:7.1f} ms"
        for p, a, b, t in out[:limit]
    ]


def report_kernel(rows: list[dict], names: list[str], limit: int) -> None:
    starts = sorted(r["t"] for r in rows if r["syn"] and not r["ack"] and r["path"] == 0)
    for k, t0 in enumerate(starts):
        t1 = starts[k + 1] if k + 1 < len(starts) else float("inf")
        conn = [r for r in rows if t0 <= r["t"] < t1]
        print(f"download {k + 1} (MP_CAPABLE SYN at server = 0 ms)")
        base = None
        sends = []
        for p, name in enumerate(names):
            mine = [r for r in conn if r["path"] == p]
            syn = next((r for r in mine if r["syn"] and not r["ack"]), None)
            if syn is None:
                print(f"  {name}: no SYN")
                continue
            port = syn["port"]
            mine = [r for r in mine if r["port"] == port]
            data = [r for r in mine if r["from_server"] and r["len"]]
            client_acks = [r for r in mine if not r["from_server"] and not r["syn"]]
            est = client_acks[0]["t"] if client_acks else None
            maps = [r for r in data if r["dsn"]]
            mlen = [int(r["dlen"]) for r in maps if r["dlen"]]
            kind = "MP_JOIN" if p else "MP_CAPABLE"
            nbytes = sum(r["len"] for r in data)
            line = (
                f"  {name}: {kind} SYN {1e3 * (syn['t'] - t0):7.1f} ms, "
                f"handshake ACK {1e3 * (est - t0) if est else float('nan'):7.1f} ms"
            )
            if data:
                line += (
                    f", data {1e3 * (data[0]['t'] - t0):7.1f}-{1e3 * (data[-1]['t'] - t0):7.1f}"
                    f" ms, {nbytes:,} B in {len(data)} frames, {len(maps)} DSS mappings"
                    f" (mean {sum(mlen) / max(1, len(mlen)):,.0f} B)"
                )
            print(line)
            for r in maps:
                d = int(r["dsn"])
                base = d if base is None else min(base, d)
            cur = None
            for r in data:
                if r["dsn"]:
                    cur = (int(r["dsn"]), int(r["ssn"]))
                if cur:
                    sends.append((r["t"] - t0, p + 1, cur[0] + (r["seq"] - cur[1]), r["len"]))
        if base is not None and limit:
            print("  bursts (new data, in the server's send order):")
            for line in bursts([(t, p, d - base, n) for t, p, d, n in sends], limit):
                print("    " + line)


def report_sim(trace: Path, limit: int) -> None:
    import pandas as pd

    d = pd.read_parquet(trace)
    s = d[(d.side == "sender") & d.kind.isin(["send", "retransmit", "reinject"])]
    for name, g in s.groupby("path_name", sort=False):
        print(
            f"  {name}: data {1e3 * g.time_s.min():7.1f}-{1e3 * g.time_s.max():7.1f} ms, "
            f"{int(g.len.sum()):,} B in {len(g)} segments"
        )
    new = d[(d.side == "sender") & (d.kind == "send")]
    sends = [(r.time_s, int(r.path) + 1, int(r.dsn), int(r.len)) for r in new.itertuples()]
    if limit:
        print("  bursts (new data, in the sender's order; time 0 = connect):")
        for line in bursts(sends, limit):
            print("    " + line)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("scenario")
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--set", action="append", default=[], metavar="K=V")
    ap.add_argument("--sim", action="store_true", help="the simulator's linux scheduler instead")
    ap.add_argument("--bursts", type=int, default=40, help="bursts to list per download")
    ap.add_argument("--keep", help="directory to keep the captures in")
    ap.add_argument("--read", help="report on the captures kept in this directory; run nothing")
    a = ap.parse_args()
    sets = [x for s in a.set for x in ("--set", s)]
    from mpsched.scenario import load_scenario

    names = [p["name"] for p in load_scenario(a.scenario, a.set)["paths"]]
    tmp = Path(a.keep or tempfile.mkdtemp(prefix="manypath-"))
    tmp.mkdir(parents=True, exist_ok=True)
    if a.sim:
        trace = tmp / "sim.parquet"
        cmd = [sys.executable, "-m", "mpsched", "run", a.scenario, "-s", "linux", *sets]
        subprocess.run([*cmd, "--trace", str(trace)], check=True, stdout=subprocess.DEVNULL)
        report_sim(trace, a.bursts)
        return 0
    if a.read:
        rows = [r for i in range(len(names)) for r in frames(Path(a.read) / f"s{i}.pcap", i)]
        report_kernel(rows, names, a.bursts)
        return 0
    cmd = [sys.executable, "-m", "mpsched", "kernel", a.scenario, "--reps", str(a.reps)]
    cmd += ["--json", *sets]
    before = namespaces()
    run = subprocess.Popen(cmd, stdout=open(tmp / "kernel.json", "w"))
    ns = server_namespace(run, before)
    if ns is None:
        run.wait()
        print("no emulator namespace appeared", file=sys.stderr)
        return 2
    for _ in range(100):
        up = subprocess.run(
            ["ip", "-n", ns, "link", "show", f"s{len(names) - 1}"], capture_output=True
        )
        if up.returncode == 0:
            break
        time.sleep(0.05)
    caps = [
        subprocess.Popen(
            ["ip", "netns", "exec", ns, "tshark", "-q", "-s", "200", "-i", f"s{i}"]
            + ["-w", str(tmp / f"s{i}.pcap")],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for i in range(len(names))
    ]
    rc = run.wait()
    time.sleep(1)
    for c in caps:
        c.terminate()  # our own children, by handle
        c.wait()
    rows = [r for i in range(len(names)) for r in frames(tmp / f"s{i}.pcap", i)]
    report_kernel(rows, names, a.bursts)
    print(f"captures and kernel.json in {tmp}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
