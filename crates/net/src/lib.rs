//! Real networking for mpsched: a link emulator in network namespaces (`emu`), the Linux TCP and
//! MPTCP baseline that runs a scenario's workload over it (`kernel`).

pub mod emu;
pub mod kernel;
