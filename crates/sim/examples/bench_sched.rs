//! Scheduler-heavy benchmark run: two paths (the DEMS §3.2 WiFi/LTE rates, Guo et al.,
//! MobiCom 2017), bulk transfer, so that every data packet costs a scheduler decision that
//! reads both subflows. `bench_run` uses one path, where the scheduler is nearly free; this one
//! measures what the subflow view (crates/core/src/sched/view.rs) costs:
//! `cargo run --release -p mpsched-sim --example bench_sched -- SCHED [DURATION_S]`, or under
//! `valgrind --tool=callgrind` for instruction counts.

use mpsched_sim::scenario::{LinkSpec, PathSpec, QueueSpec, Scenario, Transport, Workload};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let sched = args.get(1).map_or("dems-f", String::as_str);
    let duration = args
        .get(2)
        .map_or(20.0, |d| d.parse().expect("duration in seconds"));
    let link = |rate_bps, delay_s, queue| LinkSpec {
        rate_bps,
        trace: None,
        delay_s,
        queue,
        loss: 0.0,
        outages: Vec::new(),
        handover: None,
    };
    let path = |name: &str, rate: f64, rtt: f64, queue_s: f64| PathSpec {
        name: name.into(),
        forward: link(Some(rate), rtt / 2.0, QueueSpec::Time(queue_s)),
        reverse: link(None, rtt / 2.0, QueueSpec::Unlimited),
        backup: false,
        cross: Default::default(),
    };
    let sc = Scenario {
        paths: vec![
            path("wifi", 7.04e6, 0.050, 0.050),
            path("lte", 9.185e6, 0.070, 0.500),
        ],
        workload: Workload::Bulk {
            duration_s: duration,
        },
        transport: Transport {
            cc: "cubic".into(),
            ..Transport::default()
        },
        sim: Default::default(),
    };
    let start = std::time::Instant::now();
    let v = mpsched_sim::run(&sc, sched, 1).expect("benchmark scenario runs");
    let wall = start.elapsed().as_secs_f64();
    let packets = v["data_packets"].as_u64().expect("data_packets");
    println!(
        "bench_sched {sched}: data_packets {packets} events {} wall_s {wall:.3} data_packets_per_s {:.0}",
        v["events"],
        packets as f64 / wall
    );
}
