//! The two benchmark scenarios of issue 2 ("Performance"), shared by `benches/sim.rs` and
//! `examples/bench_run.rs`; `mpsched bench` (python/mpsched/bench.py) runs the same two, with
//! the same scheduler and seed.

use mpsched_sim::scenario::{LinkSpec, PathSpec, QueueSpec, Scenario, Transport, Workload};

/// Scheduler and seed, as `mpsched bench` uses them (one path: plain single-path TCP).
pub const SCHEDULER: &str = "minrtt";
pub const SEED: u64 = 1;

/// (a) 100 Mbit/s, RTT 40 ms, 333-packet buffer, 60 s Reno bulk; (b) 1 Gbit/s, RTT 20 ms,
/// 1-BDP buffer (the scenario files' default), 10 s Reno bulk. `duration_s` overrides the
/// length (the memory check runs (a) for 600 s).
pub fn scenario(which: &str, duration_s: Option<f64>) -> Scenario {
    let (rate, rtt, queue, duration) = match which {
        "a" => (100e6, 0.040, QueueSpec::Packets(333), 60.0),
        "b" => (1e9, 0.020, QueueSpec::Time(0.020), 10.0),
        other => panic!("unknown benchmark scenario {other:?} (a or b)"),
    };
    let link = |rate_bps, queue| LinkSpec {
        rate_bps,
        trace: None,
        delay_s: rtt / 2.0,
        queue,
        loss: 0.0,
        outages: Vec::new(),
        handover: None,
    };
    Scenario {
        paths: vec![PathSpec {
            name: "link".into(),
            forward: link(Some(rate), queue),
            reverse: link(None, QueueSpec::Unlimited),
            backup: false,
            cross: Default::default(),
        }],
        workload: Workload::Bulk {
            duration_s: duration_s.unwrap_or(duration),
        },
        transport: Transport {
            cc: "reno".into(),
            ..Transport::default()
        },
        sim: Default::default(),
    }
}
