//! The best fixed split (`oracle`, Guo et al., MobiCom 2017, §3.2): its search equals the
//! brute-force scan of every segment boundary, it is a run inside the same connection and world
//! as the schedulers it is compared with, and on a chunk train it splits every chunk inside the
//! warm connection.
//!
//! `cargo test --release -p mpsched-sim --test oracle -- --nocapture` prints the numbers; the
//! 1 MiB grid and the preset's 4 MiB grid (about a minute each) run with `-- --ignored`.

use mpsched_sim::oracle::{brute_force_two_paths, EXHAUSTIVE_MAX_SEGMENTS};
use mpsched_sim::scenario::{PathSpec, QueueSpec, Scenario, SimOptions, Transport, Workload};
use rayon::prelude::*;
use serde_json::Value;

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;

fn scenario(paths: Vec<PathSpec>, workload: Workload) -> Scenario {
    Scenario {
        paths,
        workload,
        transport: Transport::default(),
        sim: SimOptions::default(),
    }
}

fn run(sc: &Scenario, sched: &str, seed: u64) -> Value {
    let v = mpsched_sim::run(sc, sched, seed).unwrap_or_else(|e| panic!("{sched}: {e}"));
    assert_eq!(v["truncated"], false, "{sched}, seed {seed}: run cut short");
    v
}

fn f(v: &Value, key: &str) -> f64 {
    v[key].as_f64().unwrap_or_else(|| panic!("no {key} in {v}"))
}

/// Fig. 13 of Guo et al., MobiCom 2017: WiFi and LTE each 2.5 to 27.5 Mbit/s, RTT 50 / 70 ms,
/// buffers 50 / 500 ms, CUBIC, one chunk of `size` on a fresh connection.
fn fig13_cells(size: u64) -> Vec<(f64, f64, Scenario)> {
    let rates = [2.5e6, 7.5e6, 12.5e6, 17.5e6, 22.5e6, 27.5e6];
    rates
        .iter()
        .flat_map(|&w| rates.iter().map(move |&l| (w, l)))
        .map(|(w, l)| {
            let paths = vec![
                PathSpec::bottleneck("wifi", w, 0.050, 0.050, 0.0),
                PathSpec::bottleneck("lte", l, 0.070, 0.500, 0.0),
            ];
            (w, l, scenario(paths, Workload::Chunk { size_bytes: size }))
        })
        .collect()
}

/// The search (coarse grid refined around every local minimum) against the scan of every
/// segment boundary, cell by cell: the same download time in all 36 cells.
fn search_equals_brute_force(size: u64) {
    search_equals_brute_force_on(fig13_cells(size), size);
}

fn search_equals_brute_force_on(cells: Vec<(f64, f64, Scenario)>, size: u64) {
    let rows: Vec<(f64, f64, f64, f64, u64)> = cells
        .par_iter()
        .map(|(w, l, sc)| {
            let v = run(sc, "oracle", 1);
            let (brute, _) = brute_force_two_paths(sc, 1).expect("brute force");
            (
                *w,
                *l,
                f(&v, "download_time_s"),
                brute,
                v["oracle_runs"].as_u64().unwrap(),
            )
        })
        .collect();
    let mut differ = Vec::new();
    for &(w, l, search, brute, runs) in &rows {
        println!(
            "{} KiB, WiFi {:4.1} LTE {:4.1} Mbit/s: search {:.4} s ({runs} runs), brute force \
             {:.4} s",
            size / KIB,
            w / 1e6,
            l / 1e6,
            search,
            brute
        );
        if search != brute {
            differ.push((w / 1e6, l / 1e6, search, brute));
        }
    }
    let runs: Vec<u64> = rows.iter().map(|r| r.4).collect();
    println!(
        "{} KiB: runs per search: mean {:.1}, max {}",
        size / KIB,
        runs.iter().sum::<u64>() as f64 / runs.len() as f64,
        runs.iter().max().unwrap()
    );
    assert!(
        differ.is_empty(),
        "best fixed split differs from the brute-force scan at (WiFi, LTE, search, brute): \
         {differ:?}"
    );
}

#[test]
fn search_equals_brute_force_fig13_grid_256kib() {
    search_equals_brute_force(256 * KIB);
}

#[test]
#[ignore = "slow (about a minute on two cores): the 1 MiB grid, run by hand"]
fn search_equals_brute_force_fig13_grid_1mib() {
    search_equals_brute_force(MIB);
}

/// The `dems-fig13` preset's cells (python/mpsched/presets.py): the grid above on the DEMS §3.2
/// profile with its uplinks (WiFi 2020 kbit/s, LTE 2286 kbit/s, each queue one RTT of line
/// rate), as `mpsched reproduce dems-fig13` runs it.
fn fig13_preset_cells(size: u64) -> Vec<(f64, f64, Scenario)> {
    fig13_cells(size)
        .into_iter()
        .map(|(w, l, mut sc)| {
            for (p, (rate, rtt)) in sc
                .paths
                .iter_mut()
                .zip([(2_020e3, 0.050), (2_286e3, 0.070)])
            {
                p.reverse.rate_bps = Some(rate);
                p.reverse.queue = QueueSpec::Time(rtt);
            }
            (w, l, sc)
        })
        .collect()
}

/// A 4 MiB chunk is 2,954 segments, more than [`EXHAUSTIVE_MAX_SEGMENTS`]: the coarse grid and
/// its refinement, not every boundary. Against the scan of every boundary on the preset's cells:
/// the cell where DEMS-F is furthest below the best fixed split (WiFi 22.5 / LTE 2.5 Mbit/s,
/// 0.994x: the split is the best there, see docs/experiments.md) and the one whose refinement
/// runs longest (WiFi 17.5 / LTE 17.5, 1,655 runs).
#[test]
fn search_equals_brute_force_at_4mib_where_dems_f_is_below_it() {
    assert!((4 * MIB).div_ceil(1420) > EXHAUSTIVE_MAX_SEGMENTS);
    let cells: Vec<(f64, f64, Scenario)> = fig13_preset_cells(4 * MIB)
        .into_iter()
        .filter(|(w, l, _)| (*w, *l) == (22.5e6, 2.5e6) || (*w, *l) == (17.5e6, 17.5e6))
        .collect();
    assert_eq!(cells.len(), 2);
    let rows: Vec<(f64, f64, f64, f64, u64)> = cells
        .par_iter()
        .map(|(w, l, sc)| {
            let v = run(sc, "oracle", 1);
            let (brute, share) = brute_force_two_paths(sc, 1).expect("brute force");
            let searched = v["oracle_split"]["wifi"].as_f64().unwrap() * (4 * MIB) as f64;
            assert_eq!(searched.round() as u64, share, "WiFi share, {w} / {l}");
            (*w, *l, f(&v, "download_time_s"), brute, share)
        })
        .collect();
    for (w, l, search, brute, share) in rows {
        println!(
            "4 MiB, WiFi {:.1} LTE {:.1} Mbit/s: search {search:.6} s, brute force {brute:.6} s \
             (WiFi share {share} B)",
            w / 1e6,
            l / 1e6
        );
        assert_eq!(search, brute);
    }
}

/// The 4 MiB cell where DEMS-F was 0.994x of the best fixed split while the split was searched
/// in the lowest-unsent order only (WiFi 22.5 / LTE 2.5 Mbit/s). Traced then: not reinjection
/// (DEMS-B, without, was as fast) nor losses (the same drops), but the split's segment order:
/// its LTE share taken from the middle of the chunk holds up in-order delivery, and the search
/// was made to run both orders (docs/experiments.md, "Cells below the best fixed split"). Until
/// the application's writer slept for the send buffer to drain (Linux's `sk_stream_wait_memory`),
/// the tail-order split at that share beat DEMS-F (1.661866 against 1.669693 s, DEMS-B equal).
/// Since then (measured 2026-11-29): head-order split 1.682806 s, DEMS-F 1.674602 s (0.9951x of
/// it), DEMS-B 1.674903 s, tail-order split at that share 1.704820 s, and the best fixed split
/// of the search 1.669757 s (tail order), below both DEMS variants; DEMS-F reinjects nothing
/// here now. What still holds, and is checked: DEMS beats the head-order split at the old share
/// with the same drops and far less out-of-order data, and the search finds a split at least
/// as fast as either DEMS variant.
#[test]
fn dems_gains_on_the_split_by_segment_order_at_4mib() {
    let (_, _, sc) = fig13_preset_cells(4 * MIB)
        .into_iter()
        .find(|(w, l, _)| (*w, *l) == (22.5e6, 2.5e6))
        .expect("cell");
    let split = run(&sc, "fixed-split:3789980,404324", 1);
    let oracle = run(&sc, "oracle", 1);
    let dems_f = run(&sc, "dems-f", 1);
    let dems_b = run(&sc, "dems-b", 1);
    let tail = run(&sc, "fixed-split:3789980,404324,tail", 1);
    let t = |v: &Value| f(v, "download_time_s");
    println!(
        "split {:.6} s, best fixed split {:.6} s ({}), DEMS-F {:.6} s ({:.4}x), DEMS-B {:.6} s, \
         tail split {:.6} s",
        t(&split),
        t(&oracle),
        oracle["oracle_order"],
        t(&dems_f),
        t(&dems_f) / t(&split),
        t(&dems_b),
        t(&tail)
    );
    assert!(t(&dems_f) < t(&split) && t(&dems_b) < t(&split));
    assert_eq!(dems_f["drops_by_path"], split["drops_by_path"]);
    assert!(f(&split, "ofo_queue_avg_bytes") > 2.0 * f(&dems_b, "ofo_queue_avg_bytes"));
    assert_eq!(oracle["oracle_order"], "tail");
    assert!(t(&oracle) <= t(&tail) && t(&oracle) <= t(&dems_f) && t(&oracle) <= t(&dems_b));
}

/// Measured 2026-11-25 (03:40-03:42 UTC, 97 s on the shared two cores): on the preset's 36
/// cells at 4 MiB the search equals the scan of all 2,955 boundaries in every cell, with 54 to
/// 1,655 runs per search (mean 163).
#[test]
#[ignore = "slow (97 s on two shared cores): the 4 MiB grid of the dems-fig13 preset, run by hand"]
fn search_equals_brute_force_fig13_preset_grid_4mib() {
    search_equals_brute_force_on(fig13_preset_cells(4 * MIB), 4 * MIB);
}

/// The WiFi 27.5 / LTE 7.5 Mbit/s cell where bisection on T0(k) − T1(S − k) returned a split
/// 9.4% slower than the best: the search finds the brute-force optimum there.
#[test]
fn search_finds_the_optimum_bisection_missed() {
    let (_, _, sc) = fig13_cells(MIB)
        .into_iter()
        .find(|(w, l, _)| *w == 27.5e6 && *l == 7.5e6)
        .expect("cell");
    let v = run(&sc, "oracle", 1);
    let (brute, share) = brute_force_two_paths(&sc, 1).expect("brute force");
    println!(
        "WiFi 27.5 LTE 7.5: search {:.4} s, brute force {brute:.4} s (WiFi share {share} B)",
        f(&v, "download_time_s")
    );
    assert_eq!(f(&v, "download_time_s"), brute);
}

fn lossy() -> Scenario {
    scenario(
        vec![
            PathSpec::bottleneck("wifi", 7_040e3, 0.050, 0.050, 0.01),
            PathSpec::bottleneck("lte", 9_185e3, 0.070, 0.500, 0.01),
        ],
        Workload::Chunk {
            size_bytes: 512 * KIB,
        },
    )
}

/// Under random loss the best fixed split is a run of the `fixed-split` scheduler in the same
/// world, seed and per-path random-number streams as any scheduler's run: bit for bit the run
/// of its split, with the losses that seed draws.
#[test]
fn lossy_oracle_is_a_run_in_the_same_world_and_streams() {
    let sc = lossy();
    for seed in [1, 2] {
        let v = run(&sc, "oracle", seed);
        let wifi_share =
            (v["oracle_split"]["wifi"].as_f64().unwrap() * (512 * KIB) as f64).round() as u64;
        let order = if v["oracle_order"] == "tail" {
            ",tail"
        } else {
            ""
        };
        let same = if wifi_share == 0 {
            run(&sc, "single:lte", seed)
        } else if wifi_share == 512 * KIB {
            run(&sc, "single:wifi", seed)
        } else {
            run(
                &sc,
                &format!("fixed-split:{wifi_share},{}{order}", 512 * KIB - wifi_share),
                seed,
            )
        };
        for key in [
            "download_time_s",
            "chunk_times_s",
            "bytes_by_path",
            "drops_by_path",
            "retransmissions_by_path",
        ] {
            assert_eq!(v[key], same[key], "seed {seed}: {key}");
        }
        let drops: f64 = ["wifi", "lte"]
            .iter()
            .map(|p| v["drops_by_path"][p].as_f64().unwrap())
            .sum();
        println!("seed {seed}: split {}, drops {drops}", v["oracle_split"]);
        assert!(drops > 0.0, "seed {seed}: 1% loss dropped nothing");
    }
    // The streams are per path and per seed: another seed draws other losses.
    let a = run(&sc, "fixed-split:262144", 1);
    let b = run(&sc, "fixed-split:262144", 2);
    assert_ne!(a["drops_by_path"], b["drops_by_path"]);
}

/// A path's random stream depends on the seed and the path's place in the scenario only, not
/// on the scheduler: LTE alone inside the two-path world loses the same packets whichever
/// single-path scheduler names it, and not those of a one-path scenario of LTE (which is why
/// the best fixed split no longer runs separate single-path scenarios).
#[test]
fn single_path_extreme_draws_the_multipath_worlds_stream() {
    let sc = lossy();
    let in_world = run(&sc, "single:lte", 3);
    let mut alone = sc.clone();
    alone.paths.remove(0);
    let separate = run(&alone, "single:lte", 3);
    println!(
        "LTE alone in the two-path world: {} s, drops {}; in a one-path scenario: {} s, drops {}",
        in_world["download_time_s"],
        in_world["drops_by_path"]["lte"],
        separate["download_time_s"],
        separate["drops_by_path"]["lte"]
    );
    assert_ne!(in_world["download_time_s"], separate["download_time_s"]);
}

/// A chunk train: the best fixed split splits every chunk inside the same warm connection (one
/// handshake, the congestion windows of the previous chunks), not `t × count` of fresh ones.
#[test]
fn chunk_train_split_runs_in_the_warm_connection() {
    let sc = scenario(
        vec![
            PathSpec::bottleneck("wifi", 7_040e3, 0.050, 0.050, 0.0),
            PathSpec::bottleneck("lte", 9_185e3, 0.070, 0.500, 0.0),
        ],
        Workload::Chunks {
            size_bytes: 256 * KIB,
            count: 3,
            think_s: 0.0,
            hint: true,
        },
    );
    let v = run(&sc, "oracle", 1);
    let times: Vec<f64> = v["chunk_times_s"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_f64().unwrap())
        .collect();
    println!(
        "chunk train: chunk times {times:?}, split {}",
        v["oracle_split"]
    );
    assert_eq!(times.len(), 3);
    assert!((times.iter().sum::<f64>() - f(&v, "download_time_s")).abs() < 1e-9);
    // Later chunks have no handshake and larger windows: faster than the first.
    assert!(times[1] < times[0] && times[2] < times[0], "{times:?}");
}
