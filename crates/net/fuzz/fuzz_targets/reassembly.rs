//! Receiver meta buffer under arbitrary records (any DSN, length, order, repetition): never
//! panics, delivers each byte once and in DSN order, never holds more than it was given.
//! Byte k of the stream is `k % 251`, so a misplaced byte is seen.
#![no_main]
use libfuzzer_sys::fuzz_target;
use mpsched_net::proxy::reasm::Reassembly;

fuzz_target!(|data: &[u8]| {
    let mut r = Reassembly::default();
    let mut out = Vec::new();
    let mut given = 0u64;
    for rec in data.chunks_exact(4) {
        // DSN within 64 KiB of the delivery point (behind it too), 0-511 bytes (records of a
        // few hundred bytes keep an execution cheap enough for millions of them).
        let dsn = (r.next_dsn() + u64::from(u16::from_le_bytes([rec[0], rec[1]]))).saturating_sub(8192);
        let len = u64::from(u16::from_le_bytes([rec[2], rec[3]]) % 512);
        let payload: Vec<u8> = (dsn..dsn + len).map(|k| (k % 251) as u8).collect();
        given += len;
        r.on_data(dsn, &payload, &mut out);
        assert!(r.held() <= given);
    }
    assert_eq!(out.len() as u64, r.next_dsn());
    for (k, b) in out.iter().enumerate() {
        assert_eq!(*b, (k as u64 % 251) as u8, "byte {k} out of place");
    }
});
