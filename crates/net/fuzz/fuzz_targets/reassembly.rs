//! Reassembly fed arbitrary (DSN, length) records over a known stream: delivers a prefix of
//! the stream, each byte once, whatever the order, overlap or repetition.
#![no_main]
use libfuzzer_sys::fuzz_target;
use mpsched_net::proxy::reasm::Reassembly;

fuzz_target!(|data: &[u8]| {
    let stream: Vec<u8> = (0..4096u32).map(|i| (i * 13 % 251) as u8).collect();
    let mut r = Reassembly::default();
    let mut out = Vec::new();
    for c in data.chunks_exact(4) {
        let s = u16::from_le_bytes([c[0], c[1]]) as usize % 4096;
        let l = (u16::from_le_bytes([c[2], c[3]]) as usize % 512).min(4096 - s);
        r.on_data(s as u64, &stream[s..s + l], &mut out);
    }
    assert_eq!(&out[..], &stream[..out.len()]);
    assert_eq!(r.next_dsn() as usize, out.len());
});
