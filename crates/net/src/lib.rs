//! mpsched-net: the real multipath transport over kernel TCP.

pub mod proxy;
