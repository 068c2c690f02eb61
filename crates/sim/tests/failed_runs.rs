//! Failed-run accounting (issue 13): a run that does not deliver its workload says so in
//! `failed` and `failure`, whichever way it ends (time limit, stall, interrupt), and a run that
//! does deliver it says `failed: false`.

use mpsched_sim::scenario::{PathSpec, Scenario, SimOptions, Transport, Workload};
use serde_json::Value;

fn scenario(rate_bps: f64, size_bytes: u64, max_time_s: f64) -> Scenario {
    Scenario {
        paths: vec![PathSpec::bottleneck("only", rate_bps, 0.050, 0.050, 0.0)],
        workload: Workload::Chunk { size_bytes },
        transport: Transport::default(),
        sim: SimOptions {
            max_time_s,
            ..SimOptions::default()
        },
    }
}

fn run(sc: &Scenario) -> Value {
    mpsched_sim::run(sc, "minrtt", 1).expect("valid scenario")
}

#[test]
fn chunk_delivered_not_failed() {
    let v = run(&scenario(10e6, 100_000, 60.0));
    assert_eq!(v["failed"], false, "{v}");
    assert!(v["failure"].is_null(), "{v}");
}

#[test]
fn chunk_past_max_time_fails_with_time_limit() {
    // 1 MB at 1 Mbit/s needs 8 s; the limit is 2 s.
    let v = run(&scenario(1e6, 1_000_000, 2.0));
    assert_eq!(v["failed"], true, "{v}");
    assert!(
        v["failure"].as_str().unwrap().starts_with("time limit"),
        "{v}"
    );
    assert!(v["download_time_s"].is_null(), "{v}");
}

#[test]
fn chunk_on_dead_slow_link_fails_as_stalled() {
    // 10 bit/s: one 1500-byte packet every 20 minutes, so nothing is delivered for longer than
    // the stall window, long before the one-hour limit.
    let v = run(&scenario(10.0, 1_000_000, 3600.0));
    assert_eq!(v["failed"], true, "{v}");
    assert!(v["failure"].as_str().unwrap().starts_with("stalled"), "{v}");
    let stall = mpsched_sim::world::STALL_AFTER.as_secs_f64();
    assert!(v["sim_time_s"].as_f64().unwrap() < 2.0 * stall, "{v}");
}
