//! What crosses a path: data segments forward, acknowledgements backward.
//!
//! These are the logical contents of a packet; the simulator moves them as values and the real
//! transport (crates/net, on the roadmap) encodes them with `wire/`. `wire_len` is what a link
//! is charged for.

/// Index of a path/subflow within a connection (0-based, stable for the connection's life).
pub type PathId = u8;

/// Most paths a connection can have (per-segment records keep one timestamp per path).
pub const MAX_PATHS: usize = 8;

/// TCP/IP + MPTCP DSS + timestamp overhead charged on the wire per packet, bytes.
/// 20 (IPv4) + 20 (TCP) + 12 (timestamps) + 20 (DSS mapping with data-ACK) = 72.
pub const HEADER_BYTES: u32 = 72;
/// Size of a pure ACK on the wire: headers + up to 3 SACK blocks (2 + 3*8 = 26, padded 28).
pub const ACK_BYTES: u32 = HEADER_BYTES + 28;

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
    pub fn wire_len(&self) -> u32 {
        self.len + HEADER_BYTES
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
    pub fn wire_len(&self) -> u32 {
        ACK_BYTES
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
    pub fn wire_len(&self) -> u32 {
        match self {
            Packet::Data(d) => d.wire_len(),
            Packet::Ack(a) => a.wire_len(),
        }
    }
}
