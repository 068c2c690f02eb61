//! Frame decoder: never panics, never claims more bytes than it was given, and what it
//! decodes encodes back to the same bytes.
#![no_main]
use libfuzzer_sys::fuzz_target;
use mpsched_net::proxy::wire::{decode, encode};

fuzz_target!(|data: &[u8]| {
    let mut at = 0;
    while let Ok(Some((f, used))) = decode(&data[at..]) {
        assert!(used <= data.len() - at);
        let mut again = Vec::new();
        encode(&f, &mut again).expect("a decoded frame encodes");
        assert_eq!(again, &data[at..at + used]);
        at += used;
    }
});
