//! Handshake decoder: never panics; what it accepts encodes back to the same bytes.
#![no_main]
use libfuzzer_sys::fuzz_target;
use mpsched_net::proxy::wire::Hello;

fuzz_target!(|data: &[u8]| {
    if let Ok(h) = Hello::decode(data) {
        assert_eq!(&h.encode()[..], data);
    }
});
