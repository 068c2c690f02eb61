//! One benchmark run outside criterion, for wall time and memory:
//! `cargo run --release -p mpsched-sim --example bench_run -- a|b [DURATION_S]`.
//!
//! Prints data packets, events, wall time, data packets per wall-second and the peak resident
//! set size (VmHWM from /proc/self/status, Linux only), so that the memory of a 60 s and a 600 s
//! run can be compared: a simulator without per-packet history stays flat.

#[path = "../benches/bench_scenarios/mod.rs"]
mod bench_scenarios;
use bench_scenarios::{scenario, SCHEDULER, SEED};

fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// CPU time this thread has run, from /proc/thread-self/schedstat (ns; Linux only). On a busy
/// machine wall time includes waiting for a core; this does not.
fn cpu_time_s() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: u64 = stat.split_whitespace().next()?.parse().ok()?;
    Some(ns as f64 * 1e-9)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let which = args.get(1).map_or("a", String::as_str);
    let duration = args
        .get(2)
        .map(|d| d.parse::<f64>().expect("duration in seconds"));
    let sc = scenario(which, duration);
    let cpu_start = cpu_time_s();
    let start = std::time::Instant::now();
    let v = mpsched_sim::run(&sc, SCHEDULER, SEED).expect("benchmark scenario runs");
    let wall = start.elapsed().as_secs_f64();
    let cpu = cpu_start.and_then(|s| Some(cpu_time_s()? - s));
    let packets = v["data_packets"].as_u64().expect("data_packets");
    println!(
        "scenario {which}: sim_time_s {} data_packets {packets} events {} wall_s {wall:.3} \
         data_packets_per_s {:.0} cpu_s {} data_packets_per_cpu_s {} utilization {} \
         peak_rss_kib {}",
        v["sim_time_s"],
        v["events"],
        packets as f64 / wall,
        cpu.map_or("n/a".to_string(), |c| format!("{c:.3}")),
        cpu.map_or("n/a".to_string(), |c| format!("{:.0}", packets as f64 / c)),
        v["utilization_by_path"]["link"],
        peak_rss_kib().map_or("n/a".to_string(), |k| k.to_string()),
    );
}
