//! One path's TCP-like subflow: [`sender`] (sequence space, SACK scoreboard, RFC 6675 loss
//! recovery, RFC 6298 RTO, delivery-rate sampling) and [`receiver`] (cumulative ACK, SACK
//! blocks, delayed ACK, timestamps), with RTT estimation in [`rtt`].

pub mod receiver;
pub mod rtt;
pub mod sender;
