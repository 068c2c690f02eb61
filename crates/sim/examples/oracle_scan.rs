//! The best fixed split's search against the brute-force scan of every segment boundary, on
//! resolved scenarios (JSON, as Python produces them), in parallel over the boundaries:
//! `cargo run --release -p mpsched-sim --example oracle_scan -- CELLS.jsonl [CURVES_DIR] [--tail]`.
//!
//! CELLS.jsonl holds one `{"label": ..., "scenario": {...}}` per line. Prints one JSON line per
//! cell: the search's download time, first-path share and runs, the scan's best time and share,
//! and the segment count; with CURVES_DIR, writes every boundary's time to LABEL.csv there.
//! `--tail` scans `fixed-split:B0,B1,tail` (the second path's share from the chunk's end)
//! instead; the search, which does not use it, is then not run.

use mpsched_sim::scenario::{Scenario, Workload};
use rayon::prelude::*;
use serde_json::{json, Value};

fn main() {
    let mut args: Vec<String> = std::env::args().collect();
    let tail = args.iter().any(|a| a == "--tail");
    args.retain(|a| a != "--tail");
    if args.len() < 2 {
        eprintln!("usage: oracle_scan CELLS.jsonl [CURVES_DIR] [--tail]");
        std::process::exit(2);
    }
    let text = std::fs::read_to_string(&args[1]).expect("cells file");
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let cell: Value = serde_json::from_str(line).expect("a JSON line");
        let label = cell["label"].as_str().expect("label").to_string();
        let sc: Scenario = serde_json::from_value(cell["scenario"].clone()).expect("scenario");
        let wall = std::time::Instant::now();
        let search = if tail {
            Value::Null
        } else {
            mpsched_sim::run(&sc, "oracle", 1).expect("oracle")
        };
        let search_wall = wall.elapsed().as_secs_f64();
        let resolved = sc.resolved_for("oracle").into_owned();
        let mss = u64::from(mpsched_sim::effective_mss(&resolved, true));
        let size = match resolved.workload {
            Workload::Chunk { size_bytes } | Workload::Chunks { size_bytes, .. } => size_bytes,
            _ => panic!("needs chunks"),
        };
        let nseg = size.div_ceil(mss);
        let names: Vec<String> = resolved.paths.iter().map(|p| p.name.clone()).collect();
        let curve: Vec<(u64, u64, f64)> = (0..=nseg)
            .into_par_iter()
            .map(|k| {
                let s0 = (k * mss).min(size);
                let sched = if s0 == size {
                    format!("single:{}", names[0])
                } else if s0 == 0 {
                    format!("single:{}", names[1])
                } else {
                    let order = if tail { ",tail" } else { "" };
                    format!("fixed-split:{s0},{}{order}", size - s0)
                };
                let v = mpsched_sim::run(&resolved, &sched, 1).expect("split");
                (
                    k,
                    s0,
                    v["download_time_s"].as_f64().unwrap_or(f64::INFINITY),
                )
            })
            .collect();
        let best = curve
            .iter()
            .copied()
            .fold((0, 0, f64::INFINITY), |b, c| if c.2 < b.2 { c } else { b });
        let st = search["download_time_s"].as_f64();
        let share = search["oracle_split"][&names[0]]
            .as_f64()
            .map(|f| (f * size as f64).round() as u64);
        println!(
            "{}",
            json!({
                "label": label,
                "segments": nseg,
                "mss": mss,
                "search_s": st,
                "search_share": share,
                "tail": tail,
                "search_runs": search["oracle_runs"],
                "search_wall_s": search_wall,
                "brute_s": best.2,
                "brute_share": best.1,
                "brute_k": best.0,
                "equal": st == Some(best.2),
                "scan_wall_s": wall.elapsed().as_secs_f64() - search_wall,
            })
        );
        if let Some(dir) = args.get(2) {
            std::fs::create_dir_all(dir).expect("curves dir");
            let mut out = String::from("k,share,time_s\n");
            for (k, s0, t) in &curve {
                out.push_str(&format!("{k},{s0},{t}\n"));
            }
            std::fs::write(format!("{dir}/{label}.csv"), out).expect("write curve");
        }
    }
}
