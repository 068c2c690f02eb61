//! What a link is charged for each packet: the bytes Linux puts on the wire, counted as the
//! emulator counts them (docs/emulator.md, "Wire bytes"), so that the simulator and the kernel
//! on the emulator see the same link.
//!
//! * At the IP layer a data segment carries its payload, IPv4 and TCP headers and options:
//!   timestamps on every segment and, for MPTCP, the DSS option
//!   ([`mpsched_core::packet::data_header_bytes`]: 52 bytes for TCP, 80 for MPTCP). A
//!   full-sized segment fills the 1,500-byte MTU either way: 1,448 bytes of TCP payload or
//!   1,420 of MPTCP. Charging every packet the same 72 bytes instead made a full MPTCP segment
//!   22 bytes short of its frame, so the simulated WiFi of the DEMS profile ran 1.5% fast and
//!   its drop-tail queue overflowed a packet late (docs/fidelity.md).
//! * A constant-rate link serializes the Ethernet frame (14 bytes more: a full segment is a
//!   1,514-byte frame, as tbf on a veth counts it and as the emulator does); a trace link
//!   charges the IP packet plus mahimahi's 4-byte TUN header, so a full packet takes exactly one
//!   1,504-byte delivery opportunity (src/frontend/link_queue.hh, `PACKET_SIZE`).

use mpsched_core::packet::data_header_bytes;

/// Ethernet header, bytes (no FCS or preamble: what a veth and tbf count).
pub const ETHERNET_BYTES: u32 = 14;
/// Mahimahi's per-packet header on a trace link, bytes.
pub const TUN_BYTES: u32 = 4;
/// The IP MTU every path has.
pub const MTU_BYTES: u32 = 1500;

/// Bytes a link adds to each IP packet: the Ethernet frame's header on a constant-rate link,
/// mahimahi's TUN header on a trace link.
pub const fn link_layer_bytes(trace: bool) -> u32 {
    if trace {
        TUN_BYTES
    } else {
        ETHERNET_BYTES
    }
}

/// What a link charges for a data segment of `payload` bytes: headers and options
/// (`mptcp`'s), then the link's framing (`trace`: a trace link's).
pub const fn data_wire_bytes(payload: u32, mptcp: bool, trace: bool) -> u32 {
    payload + data_header_bytes(mptcp) + link_layer_bytes(trace)
}

/// The largest payload that fits one MTU with `mptcp`'s headers: 1,420 (MPTCP) or 1,448.
pub const fn max_payload(mptcp: bool) -> u32 {
    MTU_BYTES - data_header_bytes(mptcp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_segments_fill_the_mtu_and_the_frame() {
        // Linux's own numbers: MSS 1,448 for TCP with timestamps, 1,420 for MPTCP (40 bytes of
        // options), a 1,514-byte Ethernet frame and one 1,504-byte mahimahi opportunity each.
        for (mptcp, mss) in [(false, 1448), (true, 1420)] {
            assert_eq!(max_payload(mptcp), mss);
            let ip = mss + data_header_bytes(mptcp);
            assert_eq!(ip + link_layer_bytes(false), 1514);
            assert_eq!(ip + link_layer_bytes(true), crate::trace::OPPORTUNITY_BYTES);
        }
    }
}
