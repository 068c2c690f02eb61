"""Bytes per segment as the engine puts them on the wire (crates/sim/src/framing.rs): what the
presets need to turn link rates into payload rates and segment times."""

from __future__ import annotations

# Payload bytes per segment of a multipath run (the engine's default MSS for MPTCP: 1,460 less
# the 40 bytes of DSS and timestamp options).
MSS_MPTCP = 1420
# A full MPTCP segment on a constant-rate link: 1,420 bytes of payload in a 1,514-byte frame
# (80 bytes of IP/TCP headers and options, 14 of Ethernet).
SEGMENT_WIRE_BYTES = 1514
