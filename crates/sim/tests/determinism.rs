//! Determinism guard (issue "Speed at scale", Must show: "a commit that is only about speed
//! leaves every result bit-identical"). A fixed set of runs (1, 2, 4 and 8 paths; every
//! scheduler; bulk and chunk trains; some with random loss) is compared, key by key and bit for bit, against the run JSON committed in
//! `tests/golden/determinism/` (minus `wall_time_s`, the only key that measures the host rather
//! than the simulation).
//!
//! The golden files change only on purpose: `MPSCHED_BLESS=1 cargo test --release -p
//! mpsched-sim --test determinism` rewrites them (`tools/bless-determinism.sh`), and the commit
//! that does so must say which simulated behaviour changed and why.

use std::path::PathBuf;

use mpsched_sim::scenario::{PathSpec, Scenario, SimOptions, Transport, Workload};
use serde_json::Value;

const SEED: u64 = 7;

/// N paths sharing `total_bps` (each total/N), RTT 20 + 10·i ms, 20 ms queues: the issue's
/// bulk matrix scaled down to test size. Path 1 (if any) loses `loss` of its packets. For
/// `backup` the last path is marked backup (with one path, the only one), as in the benchmark
/// matrix, so that it has something to fail over to.
fn paths(n: usize, total_bps: f64, loss: f64, sched: &str) -> Vec<PathSpec> {
    (0..n)
        .map(|i| {
            let rtt = 0.020 + 0.010 * i as f64;
            let l = if i == 1 { loss } else { 0.0 };
            let mut p = PathSpec::bottleneck(&format!("p{i}"), total_bps / n as f64, rtt, 0.020, l);
            p.backup = sched == "backup" && i == n - 1;
            p
        })
        .collect()
}

struct Case {
    name: String,
    sc: Scenario,
    sched: &'static str,
}

fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    // Every scheduler the simulator offers (not the oracle, which is many runs of `single`).
    let scheds: Vec<&'static str> = mpsched_core::sched::SCHEDULERS
        .iter()
        .map(|s| s.0)
        .collect();
    for n in [1usize, 2, 4, 8] {
        for &sched in &scheds {
            // Bulk: 40 Mbit/s aggregate for 1 s, CUBIC (the default).
            let loss = if n >= 2 { 0.01 } else { 0.0 };
            out.push(Case {
                name: format!("bulk_{n}p_{sched}"),
                sc: Scenario {
                    paths: paths(n, 40e6, loss, sched),
                    workload: Workload::Bulk { duration_s: 1.0 },
                    transport: Transport::default(),
                    sim: SimOptions::default(),
                },
                sched,
            });
            // A train of three 256 KiB chunks with 50 ms think time, application hints on.
            out.push(Case {
                name: format!("chunks_{n}p_{sched}"),
                sc: Scenario {
                    paths: paths(n, 20e6, 0.0, sched),
                    workload: Workload::Chunks {
                        size_bytes: 256 * 1024,
                        count: 3,
                        think_s: 0.05,
                        hint: true,
                    },
                    transport: Transport::default(),
                    sim: SimOptions::default(),
                },
                sched,
            });
        }
    }
    out
}

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/determinism")
}

/// The run's JSON without the host-dependent `wall_time_s`.
fn simulated(sc: &Scenario, sched: &str) -> Value {
    let mut v = mpsched_sim::run(sc, sched, SEED).unwrap_or_else(|e| panic!("{sched}: {e}"));
    v.as_object_mut()
        .expect("a run result is a JSON object")
        .remove("wall_time_s");
    // Host time too, present only in `decision-timing` builds.
    v.as_object_mut().map(|o| o.remove("sched_decision_ns"));
    v
}

/// The first line where two pretty-printed run JSON texts differ (one key per line), for a
/// failure message people can act on. Text, not parsed values: serde_json's float parser is
/// not exact, its printer is (shortest round-trip form).
fn first_difference(name: &str, want: &str, got: &str) -> Option<String> {
    let (mut w, mut g) = (want.lines(), got.lines());
    for i in 1.. {
        match (w.next(), g.next()) {
            (None, None) => return None,
            (x, y) if x == y => continue,
            (x, y) => {
                return Some(format!(
                    "{name}.json line {i}: golden {:?}, now {:?}",
                    x.unwrap_or("<end>").trim(),
                    y.unwrap_or("<end>").trim()
                ))
            }
        }
    }
    None
}

#[test]
fn fixed_scenarios_match_golden_run_json() {
    let bless = std::env::var_os("MPSCHED_BLESS").is_some();
    let dir = golden_dir();
    if bless {
        std::fs::create_dir_all(&dir).expect("create golden dir");
    }
    let mut failures = Vec::new();
    for case in cases() {
        let got = simulated(&case.sc, case.sched);
        let file = dir.join(format!("{}.json", case.name));
        if bless {
            let text = serde_json::to_string_pretty(&got).expect("serialize") + "\n";
            std::fs::write(&file, text).expect("write golden file");
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap_or_else(|e| {
            panic!(
                "{}: {e}; create the golden files with MPSCHED_BLESS=1 (tools/bless-determinism.sh)",
                file.display()
            )
        });
        // The text is compared, not parsed numbers: serde_json prints an f64 as the shortest
        // string that round-trips it, so equal text is equal bits (its parser is not exact).
        let now = serde_json::to_string_pretty(&got).expect("serialize") + "\n";
        if let Some(d) = first_difference(&case.name, &text, &now) {
            failures.push(d);
        }
    }
    assert!(
        failures.is_empty(),
        "{} of the fixed runs changed (a speed-only commit must leave them bit-identical; \
         re-bless only for a deliberate behaviour change):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The guard itself can fail: a one-ulp change of a number is a difference.
#[test]
fn first_difference_one_ulp_is_reported() {
    let text = |x: f64| serde_json::to_string_pretty(&serde_json::json!({"a": 1, "x": x})).unwrap();
    let (a, b) = (text(0.1), text(f64::from_bits(0.1f64.to_bits() + 1)));
    let d = first_difference("r", &a, &b).expect("one ulp differs");
    assert!(d.starts_with("r.json line 3"), "{d}");
    assert_eq!(first_difference("r", &a, &a), None);
}
