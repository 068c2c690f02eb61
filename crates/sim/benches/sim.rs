//! Simulator speed: simulated data packets per wall-clock second on the two scenarios of
//! issue 2, recorded in BENCHMARKS.md. `cargo bench -p mpsched-sim --bench sim` (`make bench`).
//!
//! Criterion's throughput is the run's data packet count (the same on every iteration: the
//! simulator is deterministic), so it reports packets per second directly. Ten flat samples of a
//! few runs each keep the two benchmarks to under a minute.

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, SamplingMode, Throughput};

#[path = "bench_scenarios/mod.rs"]
mod bench_scenarios;
use bench_scenarios::{scenario, SCHEDULER, SEED};

fn simulate(c: &mut Criterion) {
    let mut group = c.benchmark_group("sim");
    // Flat sampling: each sample is the same number of whole runs (about 0.3-1 s each).
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(8));
    for (which, name) in [
        ("a", "a_100mbit_40ms_333pkt_60s_reno"),
        ("b", "b_1gbit_20ms_10s_reno"),
    ] {
        let sc = scenario(which, None);
        let first = mpsched_sim::run(&sc, SCHEDULER, SEED).expect("benchmark scenario runs");
        let packets = first["data_packets"].as_u64().expect("data_packets");
        group.throughput(Throughput::Elements(packets));
        group.bench_function(name, |b| {
            b.iter(|| mpsched_sim::run(&sc, SCHEDULER, SEED).expect("benchmark scenario runs"))
        });
    }
    group.finish();
}

criterion_group!(benches, simulate);
criterion_main!(benches);
