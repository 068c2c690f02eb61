"""`mpsched realrun`: a scenario's workload through the real multipath proxy on the emulator.

The emulator (`mpsched-emu up --detach`, issue 9's namespaces mps-ID-{c,r,s}) carries the
scenario's paths; the server proxy and a small HTTP server run in the server namespace, the
client proxy (SOCKS5 on 127.0.0.1:1080) in the client namespace, and each download is a fresh
application connection through SOCKS5 by a Python HTTP client in the client namespace: the
system of Guo et al., MobiCom 2017, §5-6 with an unmodified application on top. Results carry
`run`'s JSON keys where they mean the same (DESIGN.md, "Metrics").

Everything started here is stopped by PID and the emulator instance is brought down on exit,
on Ctrl-C and on SIGTERM.

The same module is the HTTP server (`python -m mpsched.realrun serve ADDR PORT`) and the
download client (`python -m mpsched.realrun fetch ...`) run inside the namespaces.
"""

from __future__ import annotations

import hashlib
import http.server
import json
import os
import random
import secrets
import shutil
import signal
import socket
import socketserver
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from .errors import RealRunError, ScenarioError
from .kernel import EMU_BINARY
from .netbin import find_binary
from .scenario import to_json

__all__ = ["PROXY_BINARY", "realrun", "realrun_summary"]

PROXY_BINARY = "mpsched-proxy"
PROXY_PORT = 7000
HTTP_PORT = 8080
SOCKS_PORT = 1080
WORKLOADS = ("chunk", "chunks")


def server_addr(path: int) -> str:
    """The server's address on path `path` (scenario order), as `mpsched emu up` assigns it."""
    return f"10.200.{path}.2"


def client_addr(path: int) -> str:
    return f"10.200.{path}.1"


@lru_cache(maxsize=8)
def body(size: int) -> bytes:
    """The bytes served for a download of `size`: pseudo-random (no compression or pattern
    can hide a misordered record), reproducible on both sides for the byte check."""
    return random.Random(size).randbytes(size)


# ---------------------------------------------------------------------------------------------
# Inside the namespaces.


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: a `chunks` workload is one connection

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        try:
            size = int(self.path.lstrip("/"))
        except ValueError:
            self.send_error(404)
            return
        data = body(size)
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass


class _Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def serve(addr: str, port: int) -> None:
    _Server((addr, port), _Handler).serve_forever()


def _recv_exact(s: socket.socket, n: int) -> bytes:
    out = bytearray()
    while len(out) < n:
        b = s.recv(n - len(out))
        if not b:
            raise ConnectionError("connection closed early")
        out += b
    return bytes(out)


def fetch(socks_port: int, host: str, port: int, size: int, count: int, think_s: float) -> dict:
    """`count` downloads of `size` bytes over one SOCKS5 connection (RFC 1928, CONNECT, no
    authentication), `think_s` apart; times from connect(), as the kernel runner's."""
    t0 = time.monotonic()
    s = socket.create_connection(("127.0.0.1", socks_port))
    s.settimeout(120)  # a stalled download fails rather than hangs the run
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.sendall(b"\x05\x01\x00")
    if _recv_exact(s, 2) != b"\x05\x00":
        raise ConnectionError("SOCKS5 greeting refused")
    s.sendall(b"\x05\x01\x00\x01" + socket.inet_aton(host) + port.to_bytes(2, "big"))
    reply = _recv_exact(s, 10)
    if reply[1] != 0:
        raise ConnectionError(f"SOCKS5 CONNECT refused, reply code {reply[1]}")
    established = time.monotonic()
    want = hashlib.sha256(body(size)).digest()
    starts, ends, delivered, ok = [], [], 0, True
    buf = b""
    for k in range(count):
        if k > 0 and think_s > 0:
            time.sleep(think_s)
        starts.append(time.monotonic())
        s.sendall(f"GET /{size} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
        while b"\r\n\r\n" not in buf:
            chunk = s.recv(65536)
            if not chunk:
                raise ConnectionError("connection closed in the HTTP header")
            buf += chunk
        head, buf = buf.split(b"\r\n\r\n", 1)
        length = next(
            int(line.split(b":", 1)[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )
        h = hashlib.sha256()
        got = min(len(buf), length)
        h.update(buf[:got])
        buf = buf[got:]
        while got < length:
            chunk = s.recv(min(1 << 20, length - got))
            if not chunk:
                raise ConnectionError(f"connection closed after {got} of {length} bytes")
            h.update(chunk)
            got += len(chunk)
        ends.append(time.monotonic())
        delivered += got
        ok = ok and h.digest() == want
    s.close()
    return {
        "connect": t0,
        "established": established,
        "starts": starts,
        "ends": ends,
        "delivered": delivered,
        "bytes_ok": ok,
    }


# ---------------------------------------------------------------------------------------------
# The orchestration (outside the namespaces).


def _preflight(scenario: Mapping[str, Any], scheduler: str) -> None:
    kind = scenario["workload"]["kind"]
    if kind not in WORKLOADS:
        raise ScenarioError(
            f'realrun: workload.kind = "{kind}" is not supported through the proxy yet '
            f"(chunk or chunks)"
        )
    if hasattr(os, "geteuid") and os.geteuid() != 0:
        raise ScenarioError("realrun needs root: it creates network namespaces (mpsched emu)")
    if not Path("/var/run/netns").exists() and shutil.which("ip") is None:
        raise ScenarioError("realrun needs iproute2's `ip netns`")
    cc = scenario.get("transport", {}).get("cc", "cubic")
    if cc not in ("cubic", "reno"):
        raise ScenarioError(
            f'transport.cc = "{cc}": the proxy sets cubic or reno per subflow (TCP_CONGESTION)'
        )
    if not scheduler:
        raise ScenarioError("realrun: -s SCHEDULER is required")


class _Procs:
    """Our children, stopped by PID (never by name)."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen] = []

    def start(self, cmd: list[str], log: Path) -> subprocess.Popen:
        with open(log, "wb") as out:
            p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=out)
        self.procs.append(p)
        return p

    def stop(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
        deadline = time.monotonic() + 3
        for p in self.procs:
            try:
                p.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.procs.clear()


def _ns(instance: str, role: str) -> list[str]:
    return ["ip", "netns", "exec", f"mps-{instance}-{role}"]


def _wait_port(instance: str, role: str, addr: str, port: int, procs: _Procs, what: str) -> None:
    """Until something listens on addr:port in the namespace (or a child died)."""
    probe = [*_ns(instance, role), "bash", "-c", f"exec 3<>/dev/tcp/{addr}/{port}"]
    for _ in range(100):
        if subprocess.run(probe, capture_output=True).returncode == 0:
            return
        dead = [p for p in procs.procs if p.poll() is not None]
        if dead:
            break
        time.sleep(0.1)
    raise RealRunError(f"realrun: {what} did not start listening on {addr}:{port}")


def _last_error(log: Path) -> str:
    lines = [ln for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    return lines[-1].removeprefix("mpsched: error: ") if lines else "no output"


def _conn_stats(path: Path, seen: int, timeout_s: float = 3.0) -> tuple[dict | None, int]:
    """The next per-connection JSON line of the server proxy's --stats file."""
    deadline = time.monotonic() + timeout_s
    while True:
        lines = path.read_text().splitlines() if path.exists() else []
        conns = [json.loads(ln) for ln in lines if '"event":"conn"' in ln.replace(" ", "")]
        if len(conns) > seen:
            return conns[seen], seen + 1
        if time.monotonic() > deadline:
            return None, seen
        time.sleep(0.05)


def realrun(
    scenario: Mapping[str, Any],
    scheduler: str,
    reps: int = 1,
    seed: int = 1,
    fresh_subflows: bool = False,
    warmup: bool = True,
    progress: bool = True,
    proxy_args: tuple[str, ...] = (),
    early_data: bool = False,
) -> list[dict[str, Any]]:
    """`reps` downloads of the scenario's workload through the proxy pair running `scheduler`
    on the emulated paths; one result per download with `run`'s keys. One unmeasured download
    comes first unless `warmup` is false: with shared subflows it warms them; with fresh ones
    it warms the HTTP server and the hosts' caches, as for the kernel baseline's runs.
    `proxy_args` go to both proxies (e.g. `--sndbuf 8388608 --notsent-lowat off`);
    `early_data` runs the client with `--early-data` (the request rides behind the OPEN)."""
    if isinstance(reps, bool) or not isinstance(reps, int) or reps < 1:
        raise ScenarioError(f"reps must be at least 1, got {reps!r}")
    _preflight(scenario, scheduler)
    emu_bin, proxy_bin = find_binary(EMU_BINARY), find_binary(PROXY_BINARY)
    wl = scenario["workload"]
    size = int(wl["size_bytes"])
    count = int(wl.get("count", 1)) if wl["kind"] == "chunks" else 1
    think = float(wl.get("think_s", 0.0)) if wl["kind"] == "chunks" else 0.0
    names = [p["name"] for p in scenario["paths"]]
    cc = scenario.get("transport", {}).get("cc", "cubic")
    instance = f"rr{os.getpid() % 0xFFFFFF:06x}"
    work = Path(tempfile.mkdtemp(prefix="mpsched-realrun-"))
    procs = _Procs()
    emu_started = False
    old_term = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        up = subprocess.run(
            # --transport: the scenario's [transport] on the end hosts, as the kernel runner
            # sets it (sysctls such as slow start after idle, route initcwnd/rto_min/advmss).
            [emu_bin, "up", "-", "--id", instance, "--detach", "--seed", str(seed), "--transport"],
            input=to_json(scenario).encode(),
            capture_output=True,
        )
        if up.returncode != 0:
            msg = up.stderr.decode(errors="replace").strip().splitlines()
            text = msg[-1].removeprefix("mpsched: error: ") if msg else f"exit {up.returncode}"
            raise (ScenarioError if up.returncode == 2 else RealRunError)(f"emulator: {text}")
        emu_started = True
        (work / "psk").write_text(secrets.token_hex(32) + "\n")
        (work / "policy.toml").write_text(f"default = {json.dumps(scheduler)}\n")
        stats = work / "server.stats"
        common = ["--psk-file", str(work / "psk"), "--cc", cc, *proxy_args]
        srv = server_addr(0)
        procs.start(
            [*_ns(instance, "s"), sys.executable, "-m", "mpsched.realrun", "serve", srv,
             str(HTTP_PORT)],
            work / "http.log",
        )  # fmt: skip
        procs.start(
            [*_ns(instance, "s"), proxy_bin, "server", "--listen", f"{srv}:{PROXY_PORT}",
             "--allow", f"{srv}/32", "--stats", str(stats), *common],
            work / "server.log",
        )  # fmt: skip
        _wait_port(instance, "s", srv, PROXY_PORT, procs, "the server proxy")
        client_cmd = [*_ns(instance, "c"), proxy_bin, "client", "--server", f"{srv}:{PROXY_PORT}"]
        for i, p in enumerate(scenario["paths"]):
            # A scenario's `backup = true` is the client path's backup mark (for `backup`).
            flag = ",backup" if p.get("backup") else ""
            client_cmd += ["--path", f"{p['name']}={client_addr(i)}{flag}"]
        client_cmd += ["--socks", f"127.0.0.1:{SOCKS_PORT}", "--policy", str(work / "policy.toml")]
        client_cmd += common + (["--fresh-subflows"] if fresh_subflows else [])
        client_cmd += ["--early-data"] if early_data else []
        client = procs.start(client_cmd, work / "client.log")
        try:
            _wait_port(instance, "c", "127.0.0.1", SOCKS_PORT, procs, "the client proxy")
            _wait_port(instance, "s", srv, HTTP_PORT, procs, "the HTTP server")
        except RuntimeError:
            if client.poll() is not None:
                raise ScenarioError(f"proxy client: {_last_error(work / 'client.log')}") from None
            raise
        fetch_cmd = [*_ns(instance, "c"), sys.executable, "-m", "mpsched.realrun", "fetch"]
        fetch_cmd += [str(SOCKS_PORT), srv, str(HTTP_PORT), str(size), str(count), str(think)]
        # "proxy-warm" or "proxy-fresh", "-early" with early data.
        driver = f"proxy-{'fresh' if fresh_subflows else 'warm'}{'-early' if early_data else ''}"
        modes = (("fresh subflows", fresh_subflows), ("early data", early_data))
        how = [w for w, on in modes if on]
        label = f"{scheduler} (proxy{''.join(', ' + w for w in how)})"
        out: list[dict[str, Any]] = []
        seen = 0
        todo = [-1] * warmup + list(range(reps))
        for rep in todo:
            time.sleep(0.2)  # the previous download's queues drain
            done = subprocess.run(fetch_cmd, capture_output=True, timeout=600)
            if done.returncode != 0:
                # A download that fails is a failed run (+inf in time percentiles, as `run`'s
                # are), with the proxies' last words as the reason; the next one still runs.
                err = done.stderr.decode(errors="replace").strip().splitlines()
                why = (
                    f"download failed: {err[-1] if err else done.returncode} (client proxy: "
                    f"{_last_error(work / 'client.log')}; server proxy: "
                    f"{_last_error(work / 'server.log')})"
                )
                _, seen = _conn_stats(stats, seen, timeout_s=0.5)
                if rep >= 0:
                    out.append(_failed(scheduler, driver, seed + rep, why))
                    if progress:
                        _err(f"{label} rep {rep + 1}/{reps}: failed: {why}")
                continue
            t = json.loads(done.stdout)
            conn, seen = _conn_stats(stats, seen)
            if rep < 0:
                continue
            out.append(_result(scheduler, names, t, conn, driver, seed + rep))
            if progress:
                _err(f"{label} rep {rep + 1}/{reps}: {out[-1]['download_time_s']:.3f} s")
        return out
    except KeyboardInterrupt:
        raise
    finally:
        procs.stop()
        if emu_started:
            subprocess.run([emu_bin, "down", instance], capture_output=True)
        shutil.rmtree(work, ignore_errors=True)
        signal.signal(signal.SIGTERM, old_term)


def _raise_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def _result(
    scheduler: str,
    names: list[str],
    t: Mapping[str, Any],
    conn: Mapping[str, Any] | None,
    driver: str,
    seed: int,
) -> dict[str, Any]:
    end = t["ends"][-1]
    duration = end - t["connect"]
    chunk_times = [
        e - (t["connect"] if k == 0 else s)
        for k, (s, e) in enumerate(zip(t["starts"], t["ends"], strict=True))
    ]
    by_path = (conn or {}).get("bytes_by_path") or []
    return {
        "scheduler": scheduler,
        "driver": driver,
        "seed": seed,
        "download_time_s": duration,
        "handshake_s": t["established"] - t["connect"],
        "chunk_times_s": chunk_times,
        "chunks_completed": len(t["ends"]),
        "delivered_bytes": t["delivered"],
        "bytes_ok": t["bytes_ok"],
        "failed": not t["bytes_ok"],
        "failure": None if t["bytes_ok"] else "the bytes received differ",
        "goodput_bps": t["delivered"] * 8 / duration if duration > 0 else 0.0,
        "bytes_by_path": dict(zip(names, by_path, strict=False)),
        "reinjected_bytes": (conn or {}).get("reinjected_bytes"),
    }


def _failed(scheduler: str, driver: str, seed: int, why: str) -> dict[str, Any]:
    return {
        "scheduler": scheduler,
        "driver": driver,
        "seed": seed,
        "failed": True,
        "failure": why,
        "download_time_s": None,
    }


def realrun_summary(runs: list[Mapping[str, Any]]) -> dict[str, Any]:
    """Median/p90 per metric, as `compare` summarizes simulated runs."""
    from .runner import summarize

    return next(iter(summarize({"r": list(runs)}).values()))


def _err(message: str) -> None:
    sys.stderr.write(message + "\n")
    sys.stderr.flush()


def _main(argv: list[str]) -> int:
    if argv[:1] == ["serve"]:
        serve(argv[1], int(argv[2]))
        return 0
    if argv[:1] == ["fetch"]:
        socks_port, host, port, size, count, think = argv[1:7]
        r = fetch(int(socks_port), host, int(port), int(size), int(count), float(think))
        sys.stdout.write(json.dumps(r) + "\n")
        return 0
    _err("usage: python -m mpsched.realrun serve ADDR PORT | fetch SOCKS HOST PORT SIZE N THINK")
    return 2


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
