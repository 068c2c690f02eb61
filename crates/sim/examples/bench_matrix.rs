//! The benchmark matrix of issue "Speed at scale": every scheduler x 1, 2, 4, 8 paths x {bulk
//! at 800 Mbit/s aggregate (800/N Mbit/s per path, RTT 20 + 10·i ms, 20 ms queues, CUBIC),
//! a train of 1 MiB chunks}. Prints data packets per CPU second, events per data packet,
//! decisions per data packet and ns per scheduler decision:
//! `cargo run --release -p mpsched-sim --features decision-timing --example bench_matrix --
//! [BULK_S] [CHUNKS] [SCHED,SCHED...] [N,N...]` (defaults 10 s, 20 chunks, every scheduler,
//! N = 1,2,4,8; CHUNKS 0 leaves the chunk trains out, so that `perf stat` of one invocation
//! counts one bulk run).
//!
//! Built with `decision-timing`, every decision also reads the clock twice (about 13% of an
//! 8-path run), which dilutes the growth of the per-packet cost with the paths: take packets
//! per second from a build without the feature (the ns/decision column needs it).
//!
//! Packets per second are per CPU second of this thread (`/proc/thread-self/schedstat`, which
//! a loaded machine inflates less than wall time) when the run took at least 50 ms of CPU,
//! else per the run's own `wall_time_s`.

use mpsched_sim::scenario::{PathSpec, Scenario, SimOptions, Transport, Workload};

/// `backup` runs with its last path marked backup (the only path when N = 1, which it then
/// uses as no primary exists), so that it is in the matrix like every other scheduler.
fn paths(n: usize, sched: &str) -> Vec<PathSpec> {
    (0..n)
        .map(|i| {
            let rtt = 0.020 + 0.010 * i as f64;
            let mut p = PathSpec::bottleneck(&format!("p{i}"), 800e6 / n as f64, rtt, 0.020, 0.0);
            p.backup = sched == "backup" && i == n - 1;
            p
        })
        .collect()
}

/// Nanoseconds this thread has run on a CPU (Linux schedstat, first field).
fn cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let bulk_s: f64 = args.get(1).map_or(10.0, |a| a.parse().expect("BULK_S"));
    let chunks: u64 = args.get(2).map_or(20, |a| a.parse().expect("CHUNKS"));
    let scheds: Vec<String> = match args.get(3) {
        Some(list) => list.split(',').map(String::from).collect(),
        None => mpsched_sim::scheduler_list()
            .into_iter()
            .map(|(n, _)| n.to_string())
            .collect(),
    };
    let ns_list: Vec<usize> = match args.get(4) {
        Some(list) => list.split(',').map(|n| n.parse().expect("N")).collect(),
        None => vec![1, 2, 4, 8],
    };
    println!(
        "{:<14} {:>2} {:<6} {:>10} {:>9} {:>8} {:>8} {:>9} {:>10}",
        "scheduler", "N", "work", "data_pkts", "Mpkt/s", "ev/pkt", "dec/pkt", "ns/dec", "goodput"
    );
    for sched in &scheds {
        for &n in &ns_list {
            for (work, workload) in [
                ("bulk", Workload::Bulk { duration_s: bulk_s }),
                (
                    "chunks",
                    Workload::Chunks {
                        size_bytes: 1 << 20,
                        count: chunks,
                        think_s: 0.0,
                        hint: true,
                    },
                ),
            ] {
                if work == "chunks" && chunks == 0 {
                    continue;
                }
                let sc = Scenario {
                    paths: paths(n, sched),
                    workload,
                    transport: Transport::default(),
                    sim: SimOptions::default(),
                };
                let t0 = cpu_ns();
                let v = match mpsched_sim::run(&sc, sched, 1) {
                    Ok(v) => v,
                    Err(e) => {
                        println!("{sched:<14} {n:>2} {work:<6} skipped: {e}");
                        continue;
                    }
                };
                let cpu = match (cpu_ns() - t0) as f64 * 1e-9 {
                    c if c >= 0.05 => c,
                    _ => v["wall_time_s"].as_f64().unwrap_or(f64::NAN),
                };
                let pkts = v["data_packets"].as_f64().unwrap_or(0.0);
                let ev = v["events"].as_f64().unwrap_or(0.0);
                let dec = v["sched_decisions"].as_f64().unwrap_or(0.0);
                let ns = v["sched_decision_ns"].as_f64();
                let gp = v["goodput_bps"].as_f64().unwrap_or(0.0);
                println!(
                    "{sched:<14} {n:>2} {work:<6} {pkts:>10.0} {:>9.3} {:>8.2} {:>8.2} {:>9} {:>7.1} Mb",
                    pkts / cpu / 1e6,
                    ev / pkts.max(1.0),
                    dec / pkts.max(1.0),
                    ns.map_or("-".into(), |ns| format!("{:.0}", ns / dec.max(1.0))),
                    gp / 1e6
                );
            }
        }
    }
}
