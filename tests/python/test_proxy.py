"""The real proxy from the `mpsched proxy` verbs: curl through SOCKS5 to a local HTTP server.

Loopback only: two paths are the source addresses 127.0.0.2 and 127.0.0.3, the server proxy
listens on 127.0.0.1 and is allowed to relay to 127.0.0.0/8 (it refuses loopback by default).
"""

from __future__ import annotations

import functools
import hashlib
import http.server
import os
import shutil
import subprocess
import sys
import threading

import pytest

from conftest import PACKAGE_PARENT, assert_user_error, run_cli
from mpsched.errors import ScenarioError
from mpsched.netbin import find_binary

try:
    find_binary("mpsched-proxy")
except ScenarioError as exc:
    pytest.skip(f"{exc}", allow_module_level=True)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (PACKAGE_PARENT, env.get("PYTHONPATH")) if p)
    return env


def _start(*args: str) -> tuple[subprocess.Popen, str]:
    """`mpsched proxy ARGS` in the background; returns it and the address it announced."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "mpsched", "proxy", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    line = proc.stderr.readline()
    if not line:
        proc.kill()
        raise AssertionError(f"mpsched proxy {args[0]} exited: {proc.stderr.read()}")
    return proc, line.split()[-1]


@pytest.fixture
def http_root(tmp_path):
    """A 10 MiB random file served by a local HTTP server; yields (url, sha256)."""
    data = os.urandom(10 << 20)
    (tmp_path / "f10m").write_bytes(data)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
    http.server.SimpleHTTPRequestHandler.log_message = lambda *a: None
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/f10m", hashlib.sha256(data).hexdigest()
    srv.shutdown()


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_curl_socks5_download_through_two_paths_is_byte_identical(tmp_path, http_root):
    url, digest = http_root
    psk = tmp_path / "psk"
    psk.write_text("python-test-key-0123456789\n")
    procs = []
    try:
        server, addr = _start(
            "server", "--listen", "127.0.0.1:0", "--psk-file", str(psk), "--allow", "127.0.0.0/8"
        )
        procs.append(server)
        client, socks = _start(
            "client", "--server", addr, "--path", "a=127.0.0.2", "--path", "b=127.0.0.3",
            "--socks", "127.0.0.1:0", "--psk-file", str(psk),
        )  # fmt: skip
        procs.append(client)
        out = tmp_path / "got"
        r = subprocess.run(
            ["curl", "-sS", "--max-time", "60", "--socks5-hostname", socks, url, "-o", str(out)],
            capture_output=True,
            text=True,
            timeout=90,
        )
        assert r.returncode == 0, r.stderr
        assert hashlib.sha256(out.read_bytes()).hexdigest() == digest
    finally:
        for p in procs:
            p.terminate()
            p.wait(timeout=10)


def test_proxy_client_without_paths_is_one_line_error(tmp_path):
    psk = tmp_path / "psk"
    psk.write_text("python-test-key-0123456789\n")
    proc = run_cli("proxy", "client", "--server", "127.0.0.1:9", "--psk-file", str(psk))
    assert_user_error(proc, "--path")


def test_proxy_server_missing_psk_file_is_one_line_error(tmp_path):
    proc = run_cli("proxy", "server", "--listen", "127.0.0.1:0", "--psk-file", str(tmp_path / "x"))
    assert_user_error(proc, "--psk-file", str(tmp_path / "x"))


def test_find_binary_names_the_fix_when_missing():
    with pytest.raises(ScenarioError, match="make build"):
        find_binary("mpsched-no-such-binary")


def test_proxy_binary_is_executable():
    p = find_binary("mpsched-proxy")
    assert p.endswith("/mpsched-proxy")
    assert os.path.isfile(p) and os.access(p, os.X_OK)
