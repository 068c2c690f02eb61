"""`run --pcap FILE`: a simulated run as a packet capture that Wireshark and tshark open.

The capture point is the sender (the server). Each subflow is one TCP connection between its
own pair of addresses (server 10.0.P.1:443, client 10.0.P.2:40000+P for path P), opened by a
synthetic handshake at time 0 that negotiates the MSS, window scaling and SACK (RFC 9293,
RFC 7323, RFC 2018), so that Wireshark's TCP analysis (retransmissions, duplicate ACKs, window
and stream graphs) works on it as on a real trace.

Packets come from the run's per-packet events (mpsched.traces): every `send`, `reinject` and
`retransmit` is a data segment at the time it left the sender, with the subflow sequence number
that subflow gave those bytes (a retransmission reuses the original's); every `ack` is the ACK
at the time it reached the sender. The events carry the connection-level data ACK, not the
subflow's, so a subflow ACK is rebuilt from what the receiver had received on that path when it
sent the ACK (arrival events up to the ACK's arrival minus the path's reverse delay): the
cumulative ACK and up to three SACK blocks, highest first. Payload bytes are not stored (the
simulator has none): each record holds the headers, with the IP total length of the full
segment, so Wireshark shows "packet size limited during capture" and analyses lengths right.
"""

from __future__ import annotations

import bisect
import os
import struct
from collections.abc import Iterable, Sequence
from typing import Any

__all__ = ["write"]

_SERVER_PORT = 443
_CLIENT_PORT = 40000
_ISN = 0  # both sides; data starts at sequence number 1
_WSCALE = 8  # window scale shift advertised by both ends

_ACK, _PSH, _SYN = 0x10, 0x08, 0x02


def _addresses(path: int) -> tuple[bytes, bytes]:
    return bytes([10, 0, path & 0xFF, 1]), bytes([10, 0, path & 0xFF, 2])


def _checksum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def _packet(
    path: int,
    from_server: bool,
    seq: int,
    ack: int,
    flags: int,
    window: int,
    payload_len: int,
    options: bytes = b"",
) -> tuple[bytes, int]:
    """(captured bytes: Ethernet + IPv4 + TCP headers, length on the wire)."""
    server, client = _addresses(path)
    src, dst = (server, client) if from_server else (client, server)
    sport, dport = (
        (_SERVER_PORT, _CLIENT_PORT + path) if from_server else (_CLIENT_PORT + path, _SERVER_PORT)
    )
    options += b"\x01" * (-len(options) % 4)  # NOP padding to a 32-bit boundary
    offset = (20 + len(options)) // 4
    tcp = struct.pack(
        "!HHIIBBHHH",
        sport,
        dport,
        seq & 0xFFFFFFFF,
        ack & 0xFFFFFFFF,
        offset << 4,
        flags,
        min(window, 0xFFFF),
        0,  # checksum: the payload is not captured, so it cannot be computed
        0,
    )
    tcp += options
    total = 20 + len(tcp) + payload_len
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, total, 0, 0x4000, 64, 6, 0, src, dst)
    ip = ip[:10] + struct.pack("!H", _checksum(ip)) + ip[12:]
    mac_server, mac_client = b"\x02\x00\x00\x00\x00\x01", b"\x02\x00\x00\x00\x00\x02"
    eth = (mac_client + mac_server if from_server else mac_server + mac_client) + b"\x08\x00"
    frame = eth + ip + tcp
    return frame, len(frame) + payload_len


class _Received:
    """What the receiver holds of one subflow: merged [start, end) ranges."""

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []

    def add(self, start: int, end: int) -> None:
        i = bisect.bisect_left(self.ends, start)
        j = bisect.bisect_right(self.starts, end)
        if i < j:
            start, end = min(start, self.starts[i]), max(end, self.ends[j - 1])
        self.starts[i:j], self.ends[i:j] = [start], [end]

    def cumulative(self, base: int) -> int:
        return self.ends[0] if self.starts and self.starts[0] <= base else base

    def sack_blocks(self, base: int) -> list[tuple[int, int]]:
        blocks = [(s, e) for s, e in zip(self.starts, self.ends) if s > base]
        return blocks[::-1][:3]


def _sack_option(blocks: Sequence[tuple[int, int]]) -> bytes:
    if not blocks:
        return b""
    body = b"".join(struct.pack("!II", s & 0xFFFFFFFF, e & 0xFFFFFFFF) for s, e in blocks)
    return b"\x01\x01" + struct.pack("!BB", 5, 2 + len(body)) + body


def _records(events: Any, result: dict) -> Iterable[tuple[float, bytes, int]]:
    scenario = result.get("scenario", {})
    paths = scenario.get("paths", [])
    mss = int(scenario.get("transport", {}).get("mss", 1448))
    rwnd = int(scenario.get("transport", {}).get("recv_buffer_bytes") or 1 << 20)
    reverse_delay = [float(p.get("reverse", {}).get("delay_s", 0.0)) for p in paths]
    times = events["time_s"].tolist()
    sides = events["side"].tolist()
    kinds = events["kind"].tolist()
    path_of = [int(p) for p in events["path"].tolist()]
    dsns = [int(d) for d in events["dsn"].tolist()]
    lens = [int(n) for n in events["len"].tolist()]
    used = sorted(set(path_of)) or list(range(len(paths)))
    # Subflow sequence numbers: the bytes of each (path, dsn) get the next free ones on that
    # subflow the first time that path carries them.
    next_seq = {p: _ISN + 1 for p in used}
    subflow_seq: dict[tuple[int, int], int] = {}
    arrivals: dict[int, list[tuple[float, int, int]]] = {p: [] for p in used}
    out: list[tuple[float, int, bytes, int]] = []
    order = 0
    window = min(rwnd >> _WSCALE, 0xFFFF)
    for p in used:
        syn_opts = (
            struct.pack("!BBH", 2, 4, mss)
            + b"\x01"
            + struct.pack("!BBB", 3, 3, _WSCALE)
            + b"\x04\x02"
        )
        for i, (from_server, seq, ack, flags) in enumerate(
            [
                (False, _ISN, 0, _SYN),
                (True, _ISN, _ISN + 1, _SYN | _ACK),
                (False, _ISN + 1, _ISN + 1, _ACK),
            ]
        ):
            frame, wire = _packet(
                p, from_server, seq, ack, flags, 0xFFFF if flags & _SYN else window, 0,
                syn_opts if flags & _SYN else b"",
            )  # fmt: skip
            out.append((i * 1e-6, order, frame, wire))
            order += 1
    for t, side, kind, p, dsn, n in zip(times, sides, kinds, path_of, dsns, lens):
        if side == "sender" and kind in ("send", "reinject", "retransmit"):
            key = (p, dsn)
            seq = subflow_seq.get(key)
            if seq is None:
                seq = subflow_seq[key] = next_seq[p]
                next_seq[p] += n
            frame, wire = _packet(p, True, seq, _ISN + 1, _ACK | _PSH, 0xFFFF, n)
            out.append((t, order, frame, wire))
            order += 1
        elif side == "receiver" and kind == "arrive":
            seq = subflow_seq.get((p, dsn))
            if seq is not None:
                arrivals[p].append((t, seq, seq + n))
    received = {p: _Received() for p in used}
    cursor = dict.fromkeys(used, 0)
    for p in used:
        arrivals[p].sort()
    for t, side, kind, p in zip(times, sides, kinds, path_of):
        if side != "sender" or kind != "ack" or p not in received:
            continue
        # The receiver sent this ACK one reverse delay ago: what had arrived by then.
        sent_at = t - (reverse_delay[p] if p < len(reverse_delay) else 0.0) + 1e-9
        got, i = arrivals[p], cursor[p]
        while i < len(got) and got[i][0] <= sent_at:
            received[p].add(got[i][1], got[i][2])
            i += 1
        cursor[p] = i
        cum = received[p].cumulative(_ISN + 1)
        options = _sack_option(received[p].sack_blocks(cum))
        frame, wire = _packet(p, False, _ISN + 1, cum, _ACK, window, 0, options)
        out.append((t, order, frame, wire))
        order += 1
    out.sort(key=lambda r: (r[0], r[1]))
    for t, _, frame, wire in out:
        yield t, frame, wire


def write(trace: Any, path: str | os.PathLike[str]) -> int:
    """Write `trace` (a mpsched.traces.Trace, e.g. from mpsched.run_traced) as a pcap file;
    returns the number of packets written."""
    count = 0
    with open(path, "wb") as f:
        # Classic pcap, microsecond timestamps, Ethernet link type.
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for t, frame, wire in _records(trace.events, trace.result):
            usec = round(max(t, 0.0) * 1e6)
            f.write(struct.pack("<IIII", usec // 1_000_000, usec % 1_000_000, len(frame), wire))
            f.write(frame)
            count += 1
    return count
