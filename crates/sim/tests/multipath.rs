//! End-to-end validation of the multipath layer (issue 3, "Must show"): each test drives a
//! sender and a receiver through the simulator and checks one statement of a paper or model,
//! named in the test's doc comment and in its failure message.

use mpsched_sim::scenario::{PathSpec, Scenario, SimOptions, Transport, Workload};
use serde_json::Value;

const MIB: u64 = 1 << 20;
const SEED: u64 = 1;

/// A path as `mpsched` builds one from `rate`, `rtt`, `queue` and `loss`: the forward link is the
/// bottleneck with a drop-tail buffer of `queue_s` of line rate; the ACK direction has delay only.
fn path(name: &str, rate_bps: f64, rtt_s: f64, queue_s: f64, loss: f64) -> PathSpec {
    PathSpec::bottleneck(name, rate_bps, rtt_s, queue_s, loss)
}

fn scenario(paths: Vec<PathSpec>, workload: Workload) -> Scenario {
    Scenario {
        paths,
        workload,
        transport: Transport::default(),
        sim: SimOptions::default(),
    }
}

fn chunk(size_bytes: u64) -> Workload {
    Workload::Chunk { size_bytes }
}

fn bulk(duration_s: f64) -> Workload {
    Workload::Bulk { duration_s }
}

/// The DEMS §3.2 WiFi/LTE downlink profile (Guo et al., MobiCom 2017, footnote 2; DESIGN.md default scenario)
/// with the LTE RTT given.
fn wifi_lte(lte_rtt_s: f64) -> Vec<PathSpec> {
    vec![
        path("wifi", 7_040e3, 0.050, 0.050, 0.0),
        path("lte", 9_185e3, lte_rtt_s, 0.500, 0.0),
    ]
}

/// Run and check the run itself went well: not cut by `max_time`, every chunk delivered.
fn run(sc: &Scenario, sched: &str) -> Value {
    let v =
        mpsched_sim::run(sc, sched, SEED).unwrap_or_else(|e| panic!("{sched}: run failed: {e}"));
    assert_eq!(v["truncated"], false, "{sched}: run truncated: {v}");
    if let Workload::Chunk { .. } | Workload::Chunks { .. } = sc.workload {
        assert!(
            v["download_time_s"].is_f64(),
            "{sched}: download did not complete: {v}"
        );
    }
    v
}

fn f(v: &Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} missing or not a number in {v}"))
}

fn by_path(v: &Value, key: &str, name: &str) -> f64 {
    v[key][name]
        .as_f64()
        .unwrap_or_else(|| panic!("{key}.{name} missing in {v}"))
}

// ---- two identical paths ----------------------------------------------------------------------

fn identical_paths() -> Vec<PathSpec> {
    // 10 Mbit/s, 40 ms RTT, one BDP of buffer each.
    vec![
        path("a", 10e6, 0.040, 0.040, 0.0),
        path("b", 10e6, 0.040, 0.040, 0.0),
    ]
}

/// Issue 3: over two identical paths, MinRTT and round robin aggregate both: bulk goodput
/// (payload, so headers count against it) is at least 90% of the summed line rates, and each
/// path carries about half.
#[test]
fn identical_paths_bulk_goodput_reaches_90_percent_of_summed_capacity() {
    let sc = scenario(identical_paths(), bulk(30.0));
    let capacity = 2.0 * 10e6;
    for sched in ["minrtt", "rr"] {
        let v = run(&sc, sched);
        let g = f(&v, "goodput_bps");
        eprintln!(
            "{sched}: goodput {g:.0} bit/s = {:.3} of capacity",
            g / capacity
        );
        assert!(
            g >= 0.9 * capacity,
            "issue 3 (two identical paths): {sched} goodput {g:.0} bit/s < 90% of {capacity:.0}"
        );
        let (a, b) = (
            by_path(&v, "bytes_by_path", "a"),
            by_path(&v, "bytes_by_path", "b"),
        );
        assert!(
            a.min(b) >= 0.45 * (a + b),
            "issue 3 (two identical paths): {sched} splits unevenly: a {a} b {b} bytes"
        );
    }
}

/// Issue 3: over two identical paths an 8 MiB chunk takes about half the time it takes over one
/// of them (within 15%), for MinRTT and for round robin.
#[test]
fn identical_paths_8mib_chunk_takes_half_the_single_path_time() {
    let sc = scenario(identical_paths(), chunk(8 * MIB));
    let single = f(&run(&sc, "single:a"), "download_time_s");
    for sched in ["minrtt", "rr"] {
        let t = f(&run(&sc, sched), "download_time_s");
        let ratio = t / single;
        eprintln!("{sched}: {t:.3} s, single path {single:.3} s, ratio {ratio:.3}");
        assert!(
            (ratio - 0.5).abs() <= 0.15 * 0.5,
            "issue 3 (two identical paths, 8 MiB): {sched} takes {t:.3} s vs {single:.3} s on \
             one path: ratio {ratio:.3} not within 15% of 1/2"
        );
    }
}

// ---- the MinRTT pathology ---------------------------------------------------------------------

/// Guo et al., MobiCom 2017, §3.2, Fig. 2: with MinRTT the two subflows do not complete together at the
/// receiver; "the difference ranges from 100ms to 450ms" (LTE inflated to 270 ms RTT here,
/// 1 MiB chunks, CUBIC). One download is a single sample of a phase-dependent quantity (where
/// the slow subflow's last slow-start round falls relative to the end of the chunk), so the
/// client downloads ten 1 MiB chunks one second apart, as the paper repeats its downloads, and
/// the check is on the median gap (`completion_gap_s`).
///
/// The paper's downloads reuse its proxy's long-lived subflows with the windows they built, so
/// restart after idle is off here (`net.ipv4.tcp_slow_start_after_idle = 0`). With Linux's
/// default restart the 1 s pause halves the LTE window once or twice before every chunk,
/// LTE is window-limited again and MinRTT cannot overload it: the median gap is 42 ms then
/// (printed), which is why the figure needs warm windows.
#[test]
fn minrtt_leaves_a_completion_gap_of_100ms_or_more() {
    let mut sc = scenario(
        wifi_lte(0.270),
        Workload::Chunks {
            size_bytes: MIB,
            count: 10,
            think_s: 1.0,
            hint: true,
        },
    );
    sc.transport.cc = "cubic".into();
    let restarted = f(&run(&sc, "minrtt"), "completion_gap_s");
    eprintln!("minrtt with restart after idle: median completion gap {restarted:.3} s");
    sc.transport.slow_start_after_idle = false;
    let v = run(&sc, "minrtt");
    let gap = f(&v, "completion_gap_s");
    let gaps = &v["completion_gaps_s"];
    eprintln!("minrtt: median completion gap {gap:.3} s, per chunk {gaps}");
    assert_eq!(v["chunks_completed"], 10);
    assert!(
        gap >= 0.100,
        "Guo et al., MobiCom 2017, §3.2 Fig. 2 (MinRTT completion gap 100-450 ms): median gap {gap:.3} s \
         (per chunk {gaps})"
    );
    // Both subflows carried data: the gap is between two subflows, not an idle one.
    assert!(by_path(&v, "bytes_by_path", "lte") > 0.0);
}

// ---- redundant ---------------------------------------------------------------------------------

/// Guo et al., MobiCom 2017, §7.5 (ReMP duplicates every byte), on comparable paths (LTE RTT 70 ms): the slower
/// subflow falls behind only a little, so nearly every byte goes out twice: at least 80% of the
/// chunk is reinjected. (With a 270 ms LTE path it skips what WiFi already delivered, as Linux's
/// redundant scheduler skips data-ACKed data.)
#[test]
fn redundant_reinjects_nearly_every_byte_on_comparable_paths() {
    let sc = scenario(wifi_lte(0.070), chunk(MIB));
    let reinjected = f(&run(&sc, "redundant"), "reinjected_bytes");
    assert!(
        reinjected >= 0.8 * MIB as f64,
        "Guo et al., MobiCom 2017, §7.5 (ReMP duplicates every byte): reinjected {reinjected} bytes of a \
         {MIB}-byte chunk"
    );
}

/// Guo et al., MobiCom 2017, §7.5: ReMP "blindly duplicates every byte onto all subflows, making it essentially
/// fall back to the 'online' version of the best single-path approach": its download time is
/// about the best single path's (within 10%) and it reinjects about the chunk size (at least
/// 80% of it, at most one copy per extra subflow).
#[test]
fn redundant_takes_the_best_single_path_time_and_reinjects_the_chunk() {
    for lte_rtt in [0.070, 0.270] {
        let sc = scenario(wifi_lte(lte_rtt), chunk(MIB));
        let best = ["single:wifi", "single:lte"]
            .iter()
            .map(|s| f(&run(&sc, s), "download_time_s"))
            .fold(f64::INFINITY, f64::min);
        let v = run(&sc, "redundant");
        let t = f(&v, "download_time_s");
        let reinjected = f(&v, "reinjected_bytes");
        eprintln!(
            "LTE RTT {lte_rtt}: redundant {t:.3} s, best single path {best:.3} s, reinjected \
             {reinjected} bytes"
        );
        assert!(
            (t / best - 1.0).abs() <= 0.10,
            "Guo et al., MobiCom 2017, §7.5 (ReMP ~ best single path), LTE RTT {lte_rtt}: redundant {t:.3} s vs \
             best single path {best:.3} s"
        );
        assert!(
            reinjected <= MIB as f64,
            "redundant reinjected {reinjected} bytes: more than one extra copy of a {MIB}-byte \
             chunk over 2 paths"
        );
    }
    // Identical paths: both copies race evenly and every byte is sent twice.
    let sc = scenario(identical_paths(), chunk(8 * MIB));
    let v = run(&sc, "redundant");
    let single = f(&run(&sc, "single:a"), "download_time_s");
    let (t, reinjected) = (f(&v, "download_time_s"), f(&v, "reinjected_bytes"));
    eprintln!("identical paths: redundant {t:.3} s, single {single:.3} s, reinjected {reinjected}");
    assert!(
        (t / single - 1.0).abs() <= 0.10,
        "Guo et al., MobiCom 2017, §7.5 (ReMP ~ single path) on identical paths: {t:.3} s vs {single:.3} s"
    );
    assert!(
        (reinjected / (8 * MIB) as f64 - 1.0).abs() <= 0.05,
        "Guo et al., MobiCom 2017, §7.5 (ReMP duplicates every byte) on identical paths: reinjected {reinjected} \
         bytes of an 8 MiB chunk"
    );
}

// ---- host-buffer effect -----------------------------------------------------------------------

/// Shi et al., USENIX ATC 2018, §2.3, Eq. 1: the default scheduler needs a connection buffer of
/// Buf = (B_f + B_s) × RTT_s. With a smaller one, the data-level window is held by segments in
/// flight on the slow path, so plain MinRTT moves at most about Buf / RTT_s; once that is below
/// B_f it does worse than the fast path alone. Opportunistic retransmission with penalization
/// (Raiciu et al., Shi et al., USENIX ATC 2018, §2.3 "PR") resends the blocking segment on the fast path and halves
/// the slow subflow's window, recovering part of the loss.
///
/// Setup of Shi et al., USENIX ATC 2018, §2.1: 30 Mbit/s per path, 0.01% loss, 50 ms / 500 ms bottleneck buffers,
/// RTT_f = 20 ms, RTT_s = 200 ms. Eq. 1 gives (30 + 30) Mbit/s × 0.2 s = 1.5 MB; the receive
/// buffer is a quarter of it, 375 kB: predicted plain-MinRTT goodput 375 kB / 0.2 s = 15 Mbit/s,
/// half the fast path, while the fast path alone needs only its BDP plus queue (150 kB + 187 kB).
#[test]
fn small_receive_buffer_minrtt_falls_below_fast_path_and_penalization_recovers() {
    let (b_f, b_s, rtt_f, rtt_s) = (30e6, 30e6, 0.020, 0.200);
    let eq1_bytes = (b_f + b_s) / 8.0 * rtt_s;
    let buf = (eq1_bytes / 4.0) as u64;
    let model_bps = buf as f64 * 8.0 / rtt_s;
    let mut sc = scenario(
        vec![
            path("fast", b_f, rtt_f, 0.050, 1e-4),
            path("slow", b_s, rtt_s, 0.500, 1e-4),
        ],
        bulk(30.0),
    );
    sc.transport.recv_buffer_bytes = Some(buf);
    let goodput = |s: &str| f(&run(&sc, s), "goodput_bps");
    let fast = goodput("single:fast");
    let plain = goodput("minrtt:noor");
    let pr = goodput("minrtt");
    eprintln!(
        "Eq. 1 buffer {eq1_bytes:.0} B, used {buf} B; single:fast {fast:.0}, minrtt:noor \
         {plain:.0} (model {model_bps:.0}), minrtt {pr:.0} bit/s"
    );
    assert!(
        plain < 0.8 * fast,
        "Shi et al., USENIX ATC 2018, §2.3 Eq. 1: with {buf} B (1/4 of Eq. 1) plain MinRTT {plain:.0} bit/s should \
         fall below the fast path alone {fast:.0} bit/s"
    );
    assert!(
        plain <= 1.35 * model_bps && plain >= 0.65 * model_bps,
        "Shi et al., USENIX ATC 2018, §2.3 Eq. 1: plain MinRTT {plain:.0} bit/s is not about Buf/RTT_s = \
         {model_bps:.0} bit/s"
    );
    assert!(
        pr - plain >= 0.25 * (fast - plain),
        "Shi et al., USENIX ATC 2018, §2.3 (penalization and opportunistic retransmission): minrtt {pr:.0} bit/s \
         recovers less than a quarter of the loss of plain MinRTT {plain:.0} bit/s against the \
         fast path {fast:.0} bit/s"
    );
}

// ---- clocks -----------------------------------------------------------------------------------

/// The result without what may legitimately differ: the wall-clock cost and the echoed scenario
/// (which holds the offset itself).
fn comparable(mut v: Value) -> Value {
    let o = v.as_object_mut().expect("result is an object");
    o.remove("wall_time_s");
    o.remove("scenario");
    v
}

/// Issue 3 / DESIGN.md: "The simulator gives each run a sender/receiver clock offset: no result
/// may depend on synchronized clocks." Every scheduler, with random loss in both directions so
/// that timers and reinjections matter, gives the identical result under positive and negative
/// offsets.
#[test]
fn clock_offset_changes_no_result() {
    let mut paths = wifi_lte(0.070);
    paths[0].forward.loss = 0.01;
    paths[1].forward.loss = 0.005;
    paths[1].reverse.loss = 0.01;
    let base = scenario(
        paths,
        Workload::Chunks {
            size_bytes: 256 * 1024,
            count: 3,
            think_s: 0.1,
            hint: false,
        },
    );
    let mut scheds: Vec<String> = mpsched_sim::scheduler_list()
        .iter()
        .map(|s| s.0.to_string())
        .filter(|s| s != "oracle" && s != "backup")
        .collect();
    // `backup` needs its backup paths named.
    scheds.extend(
        [
            "minrtt:noor",
            "minrtt:nopenalty",
            "single:wifi",
            "backup:lte",
        ]
        .map(String::from),
    );
    for sched in &scheds {
        let reference = comparable(run(&base, sched));
        for offset in [-7.25, -1e-9, 0.3333, 123.456_789_123] {
            let mut sc = base.clone();
            sc.sim.clock_offset_s = offset;
            let v = comparable(run(&sc, sched));
            assert!(
                v == reference,
                "issue 3 (no result may depend on synchronized clocks): {sched} with clock \
                 offset {offset} s gives {v}\nwithout: {reference}"
            );
        }
    }
}

// ---- more than two paths ----------------------------------------------------------------------

fn many_paths(n: usize) -> Vec<PathSpec> {
    let all = [
        path("wifi", 20e6, 0.030, 0.050, 0.001),
        path("lte", 9_185e3, 0.070, 0.500, 0.0),
        path("dsl", 4e6, 0.025, 0.100, 0.0),
        path("sat", 8e6, 0.600, 0.200, 0.002),
    ];
    all[..n].to_vec()
}

/// Issue 3: "Two to four paths (at least) work everywhere": every scheduler completes a chunk
/// train over three and four unlike paths, and every scheduler that spreads data uses them all.
#[test]
fn every_scheduler_completes_over_three_and_four_paths() {
    for n in [3, 4] {
        let paths = many_paths(n);
        let names: Vec<String> = paths.iter().map(|p| p.name.clone()).collect();
        let mut scheds: Vec<String> = mpsched_sim::scheduler_list()
            .iter()
            .map(|s| s.0.to_string())
            .filter(|s| s != "backup")
            .collect();
        scheds.extend(["minrtt:noor", "minrtt:nopenalty"].map(String::from));
        scheds.extend(names.iter().map(|n| format!("single:{n}")));
        // `backup` needs its backup paths named: every path but the first.
        scheds.push(format!("backup:{}", names[1..].join(",")));
        for sched in &scheds {
            let workload = if sched == "oracle" {
                chunk(2 * MIB)
            } else {
                Workload::Chunks {
                    size_bytes: MIB,
                    count: 2,
                    think_s: 0.5,
                    hint: true,
                }
            };
            let sc = scenario(paths.clone(), workload);
            let v = run(&sc, sched);
            let used = names
                .iter()
                .filter(|p| by_path(&v, "bytes_by_path", p) > 0.0)
                .count();
            eprintln!(
                "{n} paths, {sched}: {:.3} s, bytes by path {}",
                f(&v, "download_time_s"),
                v["bytes_by_path"]
            );
            if sched == "oracle" {
                continue;
            }
            assert_eq!(
                f(&v, "delivered_bytes"),
                (2 * MIB) as f64,
                "{n} paths, {sched}: delivered bytes"
            );
            if sched.starts_with("single") {
                assert_eq!(used, 1, "{n} paths, {sched} used {used} paths");
            } else if sched == "rr" || sched == "redundant" {
                assert_eq!(used, n, "{n} paths, {sched} used only {used} paths");
            }
        }
    }
}
