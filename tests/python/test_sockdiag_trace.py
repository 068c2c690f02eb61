"""tools/sockdiag_trace.py reads the kernel's socket diagnostics right: one sock_diag message
becomes one sample line, and the printed lines mark where the send buffer grew (the evidence
docs/fidelity.md cites for `SenderConnection::expand_sndbuf`)."""

from __future__ import annotations

import importlib.util
import socket
import struct
import sys

from conftest import ROOT

TOOLS = ROOT / "tools"
sys.path.insert(0, str(TOOLS))
_spec = importlib.util.spec_from_file_location("sockdiag_trace", TOOLS / "sockdiag_trace.py")
sockdiag_trace = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sockdiag_trace)


def diag_msg(sport: int, peer: str, *, sndbuf: int, wmem: int, cwnd: int, unacked: int,
             acked: int, notsent: int) -> bytes:  # fmt: skip
    """An `inet_diag_msg` (72 bytes) with INET_DIAG_SKMEMINFO and INET_DIAG_INFO attributes."""
    head = bytearray(72)
    struct.pack_into(">HH", head, 4, sport, 40000)
    head[24:28] = socket.inet_aton(peer)
    mem = struct.pack("=9I", 0, 131072, 0, sndbuf, 0, wmem, 0, 0, 0)
    info = bytearray(232)
    struct.pack_into("=I", info, 24, unacked)
    struct.pack_into("=I", info, 80, cwnd)
    struct.pack_into("=Q", info, 120, acked)
    struct.pack_into("=I", info, 144, notsent)

    def attr(kind: int, value: bytes) -> bytes:
        raw = struct.pack("=HH", 4 + len(value), kind) + value
        return raw + b"\0" * (-len(raw) % 4)

    return (
        bytes(head)
        + attr(sockdiag_trace.INET_DIAG_SKMEMINFO, mem)
        + attr(sockdiag_trace.INET_DIAG_INFO, bytes(info))
    )


def test_a_server_socket_becomes_one_sample_line():
    msg = diag_msg(5201, "10.200.0.1", sndbuf=46080, wmem=70912, cwnd=10, unacked=10,
                   acked=0, notsent=50056)  # fmt: skip
    line = sockdiag_trace._sample(msg, 12.5)
    assert line == "12.500000 10.200.0.1 tb 46080 w 70912 cw 10 un 10 ns 50056 acked 0\n"


def test_other_ports_are_not_sampled():
    msg = diag_msg(44444, "10.200.0.1", sndbuf=1, wmem=1, cwnd=1, unacked=1, acked=0,
                   notsent=0)  # fmt: skip
    assert sockdiag_trace._sample(msg, 1.0) is None


def test_transitions_mark_where_the_send_buffer_grew(tmp_path):
    # Three samples of one subflow: data out, an ACK that leaves the buffer, an ACK that grows
    # it (133,632 = 2 * 29 * 2,304), and one of another subflow that is not printed.
    raw = tmp_path / "s.txt"
    raw.write_text(
        "1.000 10.200.0.1 tb 46080 w 70912 cw 28 un 28 ns 0 acked 25560\n"
        "1.002 10.200.1.1 tb 46080 w 0 cw 10 un 10 ns 0 acked 0\n"
        "1.004 10.200.0.1 tb 133632 w 90000 cw 29 un 29 ns 24268 acked 26980\n"
        "1.006 10.200.0.1 tb 133632 w 90000 cw 30 un 30 ns 22848 acked 28400\n"
    )
    lines = sockdiag_trace.transitions(str(raw), "10.200.0.1")
    assert len(lines) == 2
    assert " EXP " in lines[0] and "133632" in lines[0] and "cwnd  28->29" in lines[0]
    assert " EXP " not in lines[1] and "acked +1420" in lines[1]
