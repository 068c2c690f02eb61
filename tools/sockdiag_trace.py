"""Linux subflows' send buffers and windows, read every half millisecond (root).

    .venv/bin/python tools/sockdiag_trace.py SCENARIO [--set K=V ...] [--path IP] [--raw FILE]

Runs one `mpsched kernel SCENARIO` download and, in the emulator's server namespace, asks the
kernel for every TCP socket of the server port (NETLINK_SOCK_DIAG with INET_DIAG_INFO and
INET_DIAG_SKMEMINFO) about every 0.5 ms: `ss -tmi` at a hundred times its rate, without a
process per sample. Prints, per change of the subflow's cumulative ACK or of its send buffer:
the congestion window and packets out before and after, the data not yet sent (`notsent`),
what the ACK covered, and EXP where `sk_sndbuf` grew (`tcp_sndbuf_expand`). Times are seconds
from the subflow's first data. `--path` picks the subflow by the client's address (default: the
first path's, 10.200.0.1); `--raw` keeps the samples.

This is how the rule in `SenderConnection::expand_sndbuf` (crates/core/src/sender.rs) was read
off Linux 6.18: see docs/fidelity.md, "A subflow's send buffer grows behind a queue".
"""

from __future__ import annotations

import argparse
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from emu_capture import namespaces, server_namespace

SOCK_DIAG_BY_FAMILY = 20
NETLINK_SOCK_DIAG = 4
INET_DIAG_INFO = 2
INET_DIAG_SKMEMINFO = 7
ESTABLISHED = 1
SERVER_PORT = 5201
FIELDS = ("tb", "w", "cw", "un", "ns", "acked")


def poll(out_path: str, seconds: float) -> None:
    """Sample this namespace's TCP sockets of the server port into `out_path`, one line each."""
    sock = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, NETLINK_SOCK_DIAG)
    sock.bind((0, 0))
    ext = (1 << (INET_DIAG_INFO - 1)) | (1 << (INET_DIAG_SKMEMINFO - 1))
    body = struct.pack("=BBBBI", socket.AF_INET, socket.IPPROTO_TCP, ext, 0, 1 << ESTABLISHED)
    body += b"\0" * 48
    request = struct.pack("=IHHII", 16 + len(body), SOCK_DIAG_BY_FAMILY, 0x301, 1, 0) + body
    deadline = time.time() + seconds
    with open(out_path, "w") as out:
        while time.time() < deadline:
            now = time.time()
            sock.send(request)
            done = False
            while not done:
                data = sock.recv(65536)
                off = 0
                while off < len(data):
                    length, kind = struct.unpack_from("=IH", data, off)
                    if kind in (2, 3):  # NLMSG_ERROR, NLMSG_DONE
                        done = True
                        break
                    line = _sample(data[off + 16 : off + length], now)
                    if line:
                        out.write(line)
                    off += (length + 3) & ~3


def _sample(msg: bytes, now: float) -> str | None:
    """One `inet_diag_msg` with its attributes as a line, if it is a server-port socket."""
    sport = struct.unpack_from(">H", msg, 4)[0]
    if sport != SERVER_PORT:
        return None
    peer = socket.inet_ntoa(msg[24:28])
    info = mem = None
    at = 72
    while at + 4 <= len(msg):
        alen, atype = struct.unpack_from("=HH", msg, at)
        if alen < 4:
            break
        value = msg[at + 4 : at + alen]
        if atype == INET_DIAG_SKMEMINFO:
            mem = struct.unpack_from("=9I", value)
        elif atype == INET_DIAG_INFO:
            info = value
        at += (alen + 3) & ~3
    if info is None or mem is None or len(info) < 152:
        return None
    # struct tcp_info: tcpi_unacked at 24, tcpi_snd_cwnd at 80, tcpi_bytes_acked at 120,
    # tcpi_notsent_bytes at 144; skmem: sk_sndbuf [3], sk_wmem_queued [5].
    unacked = struct.unpack_from("=I", info, 24)[0]
    cwnd = struct.unpack_from("=I", info, 80)[0]
    acked = struct.unpack_from("=Q", info, 120)[0]
    notsent = struct.unpack_from("=I", info, 144)[0]
    return (
        f"{now:.6f} {peer} tb {mem[3]} w {mem[5]} cw {cwnd} un {unacked} ns {notsent} "
        f"acked {acked}\n"
    )


def transitions(raw: str, peer: str) -> list[str]:
    """The lines printed: one per change of the cumulative ACK or of the send buffer."""
    rows = []
    for line in Path(raw).read_text().splitlines():
        f = line.split()
        if f[1] == peer:
            row = {k: int(v) for k, v in zip(f[2::2], f[3::2])}
            row["t"] = float(f[0])
            rows.append(row)
    start = next((r["t"] for r in rows if r["un"] > 0), None)
    out: list[str] = []
    prev = None
    for r in rows:
        if prev and (r["acked"] != prev["acked"] or r["tb"] != prev["tb"]):
            mark = "EXP" if r["tb"] != prev["tb"] else "   "
            out.append(
                f"{r['t'] - start:8.4f} {mark} tb {r['tb']:>7} cwnd {prev['cw']:>3}->{r['cw']:<3} "
                f"out {prev['un']:>3}->{r['un']:<3} notsent {prev['ns']:>7}->{r['ns']:<7} "
                f"acked +{r['acked'] - prev['acked']}"
            )
        prev = r
    return out


def main() -> int:
    if len(sys.argv) > 2 and sys.argv[1] == "--poll":
        poll(sys.argv[2], float(sys.argv[3]))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("scenario")
    ap.add_argument("--set", action="append", default=[], metavar="K=V")
    ap.add_argument("--path", default="10.200.0.1", help="the client's address of the subflow")
    ap.add_argument("--raw", help="keep the samples in this file")
    ap.add_argument("--seconds", type=float, default=120.0, help="poll at most this long")
    args = ap.parse_args()
    raw = args.raw or tempfile.mkstemp(suffix=".sockdiag")[1]
    sets = [a for kv in args.set for a in ("--set", kv)]
    before = namespaces()
    kernel = Path(sys.executable).with_name("mpsched")
    run = subprocess.Popen([str(kernel), "kernel", args.scenario, "--reps", "1", *sets])
    ns = server_namespace(run, before)
    if ns is None:
        run.wait()
        print("sockdiag_trace: no server namespace appeared", file=sys.stderr)
        return 1
    here = str(Path(__file__).resolve())
    poller = subprocess.Popen(
        ["ip", "netns", "exec", ns, sys.executable, here, "--poll", raw, str(args.seconds)]
    )
    try:
        run.wait()
    finally:
        poller.terminate()
        poller.wait()
    print("\n".join(transitions(raw, args.path)))
    return run.returncode


if __name__ == "__main__":
    sys.exit(main())
