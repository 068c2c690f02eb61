//! The multipath proxy of Guo et al., MobiCom 2017, §5-6: kernel TCP subflows, encapsulation,
//! SOCKS5 ingress, the schedulers of `mpsched-core` unchanged.

pub mod allow;
pub mod api;
pub mod auth;
pub mod client;
pub mod conn;
pub mod handshake;
pub mod kernel;
pub mod policy;
pub mod reasm;
pub mod server;
pub mod session;
pub mod socks;
pub mod wire;
