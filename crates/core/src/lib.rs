//! mpsched-core: a sans-IO multipath transport.
//!
//! No sockets, no clock, no threads, no global state: drivers (the simulator in `mpsched-sim`,
//! the UDP transport on the roadmap) pass time in and move packets. A connection is a
//! [`sender::SenderConnection`] and a [`receiver::ReceiverConnection`], each driven through
//! `handle_input`, `handle_timeout`, `poll_transmit`, `poll_timeout` (and `poll_event` at the
//! receiver).

pub mod cc;
pub mod estimate;
pub mod hist;
pub mod meta;
pub mod model;
pub mod msk_rtx;
pub mod packet;
mod pathmask;
pub mod rangeset;
pub mod receiver;
pub mod recv;
pub mod sched;
pub mod sender;
pub mod subflow;
pub mod time;

pub use time::{Duration, Time};
