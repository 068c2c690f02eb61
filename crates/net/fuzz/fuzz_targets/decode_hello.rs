//! Subflow hello decoder (the first bytes an unauthenticated peer sends): never panics, and what
//! it accepts encodes back to the same bytes. Also the pre-shared key file parser.
#![no_main]
use libfuzzer_sys::fuzz_target;
use mpsched_net::proxy::auth::Psk;
use mpsched_net::proxy::wire::Hello;

fuzz_target!(|data: &[u8]| {
    if let Ok(h) = Hello::decode(data) {
        assert_eq!(&h.encode()[..], &data[..h.encode().len()]);
    }
    let _ = Psk::from_file_contents(data);
});
