//! Receiver-side policies (DESIGN.md, `recv/`): what the receiving endpoint does with a data
//! segment beyond storing it. A policy sees every data arrival before the subflow does and may
//! *withhold* an in-order segment from its subflow's acknowledgement: the data still reaches the
//! connection (and the application) but the subflow acts as if it were lost, so the following
//! segments draw duplicate ACKs (with SACK) and the sender's loss recovery halves that
//! subflow's window and retransmits the segment. That is how a receiver steers an unmodified
//! sender (Park et al. (R-TSC), §V, "intentional 3-dup-ACKs").
//!
//! * `default`: ACK everything as TCP does.
//! * `rtsc`: R-TSC Algorithm 1 ([`rtsc`]).

pub mod rtsc;

use crate::packet::{DataSegment, PathId};
use crate::time::{Duration, Time};

/// What the policy decides for one arriving data segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Acknowledge as usual.
    Accept,
    /// Deliver the data but leave it out of the subflow's acknowledgement (once).
    Withhold,
}

/// What a policy learns about an arrival besides the segment.
#[derive(Clone, Copy, Debug)]
pub struct ArrivalInfo {
    /// The segment is the next one its subflow expects (in order at the subflow level).
    pub in_order: bool,
    /// Bytes delivered in order to the application by the connection so far.
    pub delivered: u64,
}

pub trait ReceiverPolicy: std::fmt::Debug + Send {
    fn name(&self) -> &'static str;
    /// A data segment arrived at `now` (receiver clock).
    fn on_segment(&mut self, now: Time, seg: &DataSegment, info: ArrivalInfo) -> Verdict;
    /// Segments withheld so far, per path (for metrics).
    fn withheld(&self) -> &[u64] {
        &[]
    }
}

/// Plain TCP acknowledgement: never withholds.
#[derive(Debug, Default)]
pub struct DefaultAcking;

impl ReceiverPolicy for DefaultAcking {
    fn name(&self) -> &'static str {
        "default"
    }
    fn on_segment(&mut self, _now: Time, _seg: &DataSegment, _info: ArrivalInfo) -> Verdict {
        Verdict::Accept
    }
}

/// Receiver policies the engine builds by name, with their references.
pub const RECEIVERS: &[(&str, &str)] = &[
    ("default", "TCP acknowledgement, delayed ACK as Linux"),
    (
        "rtsc",
        "R-TSC: receiver-side subflow rate control by intentional triple duplicate ACKs (Park et al. (R-TSC), §V, Alg. 1)",
    ),
];

/// Build a receiver policy by name. `handshake_rtt[p]` is the RTT subflow `p`'s handshake
/// measured (the minimum RTT `T^p` a client knows from its SYN/SYN-ACK exchange).
pub fn build(name: &str, handshake_rtt: &[Duration], mss: u32) -> Option<Box<dyn ReceiverPolicy>> {
    match name {
        "default" => Some(Box::new(DefaultAcking)),
        "rtsc" => Some(Box::new(rtsc::Rtsc::new(handshake_rtt, mss))),
        _ => None,
    }
}

pub(crate) fn path_index(p: PathId) -> usize {
    p as usize
}
