//! Connection level: data sequence space, send buffer with chunk boundaries and transmission
//! records ([`send`]), receive buffer with reassembly and the out-of-order queue ([`recv`]).

mod ofo;
mod pagefrag;
pub mod recv;
mod runs;
pub mod send;
