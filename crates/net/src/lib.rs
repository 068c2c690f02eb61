//! Real networking for mpsched: a link emulator in network namespaces (`emu`), the Linux TCP and
//! MPTCP baseline that runs a scenario's workload over it (`kernel`), and the multipath proxy of
//! Guo et al., MobiCom 2017, §5-6 (`proxy`).

pub mod emu;
pub mod kernel;
pub mod proxy;
