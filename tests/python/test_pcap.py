"""`run --pcap`: Wireshark's dissector (tshark) reads the file, finds one TCP stream per subflow,
every packet we wrote, and flags exactly our retransmissions (issue 13, "Must show")."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from conftest import EXAMPLES, run_cli

pytest.importorskip("mpsched._core")
TSHARK = shutil.which("tshark")
needs_tshark = pytest.mark.skipif(
    TSHARK is None, reason="tshark not installed (apt-get install tshark)"
)


def tshark(path, *args: str) -> list[str]:
    proc = subprocess.run(
        [TSHARK, "-r", str(path), *args], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    return [line for line in proc.stdout.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def lossy(tmp_path_factory):
    """A WiFi/LTE run with 1% loss on WiFi: retransmissions to find."""
    import mpsched.runner as runner
    from mpsched import pcap

    trace = runner.run_traced(EXAMPLES / "wifi-lte.toml", set=["path.wifi.loss=0.01"])
    path = tmp_path_factory.mktemp("pcap") / "run.pcap"
    written = pcap.write(trace, path)
    return trace, path, written


@needs_tshark
def test_pcap_has_every_packet(lossy):
    trace, path, written = lossy
    events = trace.events
    sender = events[events["side"] == "sender"]
    data_and_acks = sender["kind"].isin(["send", "reinject", "retransmit", "ack"]).sum()
    handshakes = 3 * events["path"].nunique()
    assert written == data_and_acks + handshakes
    assert len(tshark(path)) == written


@needs_tshark
def test_pcap_one_tcp_stream_per_subflow(lossy):
    trace, path, _ = lossy
    streams = {int(s) for s in tshark(path, "-T", "fields", "-e", "tcp.stream")}
    assert len(streams) == trace.events["path"].nunique() == 2


@needs_tshark
def test_pcap_tcp_analysis_flags_our_retransmissions(lossy):
    trace, path, _ = lossy
    retransmits = int((trace.events["kind"] == "retransmit").sum())
    assert retransmits > 0
    # Wireshark calls a segment below the highest sequence number "out-of-order" rather than a
    # retransmission when it follows the highest segment within the handshake RTT and no
    # duplicate ACKs announced it (tcp_analyze_sequence_number, epan/dissectors/packet-tcp.c):
    # a RACK or tail-loss-probe retransmission sent right after new data looks like that from a
    # sender-side capture. Every retransmission must carry one of the two flags, and nothing
    # else may.
    flagged = tshark(path, "-Y", "tcp.analysis.retransmission or tcp.analysis.out_of_order")
    assert len(flagged) == retransmits


@needs_tshark
def test_pcap_tcp_analysis_finds_nothing_lost(lossy):
    trace, path, _ = lossy
    assert len(tshark(path, "-Y", "tcp.analysis.retransmission")) > 0
    # The rebuilt subflow ACKs never acknowledge data the capture lacks, and no segment is
    # missing: the sequence numbers are consistent.
    assert tshark(path, "-Y", "tcp.analysis.ack_lost_segment") == []
    assert tshark(path, "-Y", "tcp.analysis.lost_segment") == []
    assert len(tshark(path, "-Y", "tcp.options.sack_le")) > 0


def test_run_pcap_cli_writes_the_file(tmp_path):
    out = tmp_path / "x.pcap"
    proc = run_cli("run", EXAMPLES / "wifi-lte.toml", "--pcap", out)
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes()[:4] == bytes.fromhex("d4c3b2a1")  # pcap, little-endian, usec
