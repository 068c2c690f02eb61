//! What crosses a path: data segments forward, acknowledgements backward.
//!
//! These are the logical contents of a packet; the simulator moves them as values. What a link
//! is charged for each is the bytes Linux puts on the wire: the header sizes below, plus what
//! the link itself counts (crates/sim/src/framing.rs).

/// Index of a path/subflow within a connection (0-based, stable for the connection's life).
pub type PathId = u8;

/// Most paths a connection can have (per-segment records keep one timestamp per path).
pub const MAX_PATHS: usize = 8;

/// IPv4 and TCP headers without options, bytes.
pub const IP_TCP_HEADER_BYTES: u32 = 40;
/// The timestamps option Linux puts on every segment (10, padded to 12).
pub const TIMESTAMP_OPTION_BYTES: u32 = 12;
/// The MPTCP DSS option of a data segment as Linux 6.18 sends it (mapping and data-ACK, 28):
/// with the timestamps, 40 bytes of options leave 1,420 bytes of payload in a 1,500-byte MTU.
pub const DSS_OPTION_BYTES: u32 = 28;
/// A pure ACK: headers and the most options TCP carries (40: timestamps with SACK blocks, or
/// with MPTCP's data-ACK).
pub const ACK_HEADER_BYTES: u32 = IP_TCP_HEADER_BYTES + 40;

/// Headers and options of a data segment at the IP layer, bytes: 52 for plain TCP (1,448 bytes
/// of payload fill a 1,500-byte MTU), 80 for MPTCP (1,420 bytes do).
pub const fn data_header_bytes(mptcp: bool) -> u32 {
    IP_TCP_HEADER_BYTES + TIMESTAMP_OPTION_BYTES + if mptcp { DSS_OPTION_BYTES } else { 0 }
}

/// A data segment on one subflow: subflow sequence space plus the DSN mapping.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataSegment {
    pub path: PathId,
    /// Subflow sequence number of the first payload byte.
    pub seq: u64,
    /// Payload length, bytes.
    pub len: u32,
    /// Data sequence number (connection level) of the first payload byte.
    pub dsn: u64,
    /// Sender timestamp (sender clock, ns), echoed by the receiver (RFC 7323 TSval).
    pub ts_val: u64,
    /// RFC 7323 TSecr: the `ts_val` of the latest ACK the sender had on this subflow (receiver
    /// clock, ns; 0 before any). The receiver measures its RTT from it
    /// (`tcp_rcv_rtt_measure_ts`).
    pub ts_ecr: u64,
    /// Set when this is a retransmission on the same subflow (for traces; the receiver ignores it).
    pub retransmit: bool,
}

impl DataSegment {
    pub fn end(&self) -> u64 {
        self.seq + self.len as u64
    }
}

/// A SACK block `[start, end)` in subflow sequence space.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SackBlock {
    pub start: u64,
    pub end: u64,
}

/// An acknowledgement on one subflow's reverse path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ack {
    pub path: PathId,
    /// Subflow cumulative ACK: next expected subflow sequence number.
    pub ack: u64,
    /// Up to three SACK blocks, most recent first (RFC 2018 §4); `nsack` are valid.
    pub sack: [SackBlock; 3],
    pub nsack: u8,
    /// Connection-level data-ACK: next expected DSN.
    pub data_ack: u64,
    /// Connection-level receive window, bytes beyond `data_ack` the sender may send.
    pub rwnd: u64,
    /// RFC 7323 TSecr: the TSval this ACK echoes (sender clock).
    pub ts_ecr: u64,
    /// RFC 7323 TSval of this ACK: when the receiver sent it (receiver clock, ns).
    pub ts_val: u64,
    /// One-way-delay echo for the segment that triggered this ACK. Guo et al., MobiCom 2017, §5: the receiver
    /// records the reception time and sends it back with the sequence number.
    pub owd_echo: Option<OwdEcho>,
}

/// Reception report for one data segment (Guo et al., MobiCom 2017, §5, "OWD measurement").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OwdEcho {
    /// Subflow sequence number of the segment.
    pub seq: u64,
    /// Its TSval (sender clock, ns).
    pub ts_val: u64,
    /// Its arrival time in the receiver's clock (ns). The sender/receiver clock offset is in
    /// every OWD sample and cancels in ΔOWD.
    pub recv_time: u64,
}

impl Ack {
    pub fn sack_blocks(&self) -> &[SackBlock] {
        &self.sack[..self.nsack as usize]
    }
}

/// A packet handed to the network: the driver sends `packet` on path `path`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Packet {
    Data(DataSegment),
    Ack(Ack),
}

impl Packet {
    pub fn path(&self) -> PathId {
        match self {
            Packet::Data(d) => d.path,
            Packet::Ack(a) => a.path,
        }
    }
}
