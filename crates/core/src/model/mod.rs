//! Closed-form models from the papers, as plain functions of path parameters: what a
//! simulation is validated against and what schedulers and receiver policies compute with.
//!
//! * [`stms`]: host-buffer requirements and the true gap of Shi et al., USENIX ATC 2018
//!   (§2.3 Eq. 1, §3.1 Eq. 2, §3.2 Eq. 3-4).
//! * [`rtsc`]: the application-level delay model of Park et al. (R-TSC): Eq. 1-5, the Reno
//!   rate Eq. 9, the delay minimization Eq. 10 and the MPTCP-LIA rate model Eq. 13-19.

pub mod rtsc;
pub mod stms;
