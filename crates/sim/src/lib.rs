//! mpsched-sim: a deterministic discrete-event simulator driving `mpsched-core` over emulated
//! paths (constant-rate or trace links, drop-tail queues, random loss, outages).
//!
//! Entry point: [`run`] takes a resolved [`scenario::Scenario`], a scheduler name and a seed and
//! returns the result object of DESIGN.md ("Metrics").

pub mod cross;
pub mod framing;
pub mod link;
pub mod metrics;
pub mod oracle;
pub mod scenario;
pub mod stream;
pub mod trace;
pub mod tracegen;
pub mod tracing;
pub mod workload;
pub mod world;

use std::sync::Arc;

use mpsched_core::cc::{CcKind, HyStartMode};
use mpsched_core::receiver::{ReceiverConfig, ReceiverConnection};
use mpsched_core::sched;
use mpsched_core::sender::{SenderConfig, SenderConnection};
use mpsched_core::time::Duration;
use serde_json::{json, Map, Value};

use crate::scenario::{LinkSpec, Scenario};
use crate::trace::{Trace, TraceError};
use crate::tracing::PacketTrace;
use crate::world::World;

/// Set by the binding when the user presses Ctrl-C: every running simulation stops at its next
/// look (see `world::World::run`) and reports `failure: "interrupted"`.
static INTERRUPT: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Ask every running simulation to stop (`true`), or allow runs again (`false`).
pub fn set_interrupt(on: bool) {
    INTERRUPT.store(on, std::sync::atomic::Ordering::Relaxed);
}

pub(crate) fn interrupted() -> bool {
    INTERRUPT.load(std::sync::atomic::Ordering::Relaxed)
}

/// Engine version: part of every result and of the results-store key.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error("{0}")]
    Scenario(String),
    #[error(transparent)]
    Trace(#[from] TraceError),
    #[error(transparent)]
    Scheduler(#[from] sched::SchedError),
}

/// Load the trace files a scenario names, each once per link.
type LinkTraces = Vec<world::LinkTraces>;

fn load_traces(sc: &Scenario) -> Result<LinkTraces, SimError> {
    let load = |l: &LinkSpec| -> Result<Option<Arc<Trace>>, SimError> {
        l.trace
            .as_deref()
            .map(|f| Trace::load(f).map(Arc::new))
            .transpose()
            .map_err(SimError::from)
    };
    sc.paths
        .iter()
        .map(|p| Ok((load(&p.forward)?, load(&p.reverse)?)))
        .collect()
}

/// Check what Python cannot: trace file contents, scheduler names, engine limits.
pub fn validate(sc: &Scenario, scheduler: &str) -> Result<(), SimError> {
    check_scenario(sc)?;
    load_traces(sc)?;
    if scheduler != oracle::ORACLE.0 {
        build_scheduler(sc, scheduler)?;
    }
    Ok(())
}

fn check_scenario(sc: &Scenario) -> Result<(), SimError> {
    let n = sc.paths.len();
    for d in &sc.sim.delay_changes {
        let valid = |x: f64| x.is_finite() && x >= 0.0;
        if d.path >= n || !valid(d.rtt_s) || !valid(d.at_s) {
            return Err(SimError::Scenario(format!(
                "sim.delay_changes: path {} at {} s rtt {} s (paths 0 to {}, times >= 0)",
                d.path,
                d.at_s,
                d.rtt_s,
                n.saturating_sub(1)
            )));
        }
    }
    if n == 0 || n > mpsched_core::packet::MAX_PATHS {
        return Err(SimError::Scenario(format!(
            "scenario: {n} paths (1 to {} supported)",
            mpsched_core::packet::MAX_PATHS
        )));
    }
    if CcKind::parse(&sc.transport.cc).is_none() {
        return Err(SimError::Scenario(format!(
            "transport.cc: unknown congestion control \"{}\" (known: reno, cubic)",
            sc.transport.cc
        )));
    }
    for p in &sc.paths {
        let x = &p.cross;
        if let Some(cc) = &x.cc {
            if CcKind::parse(cc).is_none() {
                return Err(SimError::Scenario(format!(
                    "path.{}.cross.cc: unknown congestion control \"{cc}\"",
                    p.name
                )));
            }
        }
        if x.tcp_flows > cross::MAX_FLOWS || !(x.cbr_bps.is_finite() && x.cbr_bps >= 0.0) {
            return Err(SimError::Scenario(format!(
                "path.{}.cross: {} TCP flows (at most {}), cbr {} bit/s (finite, >= 0)",
                p.name,
                x.tcp_flows,
                cross::MAX_FLOWS,
                x.cbr_bps
            )));
        }
    }
    if HyStartMode::parse(&sc.transport.hystart).is_none() {
        return Err(SimError::Scenario(format!(
            "transport.hystart: unknown value \"{}\" (known: linux, hystart++, off)",
            sc.transport.hystart
        )));
    }
    for p in &sc.paths {
        for (dir, l) in [("forward", &p.forward), ("reverse", &p.reverse)] {
            if let Some(r) = l.rate_bps {
                if r.is_nan() || r <= 0.0 {
                    return Err(SimError::Scenario(format!(
                        "path.{}.{dir}: rate must be positive",
                        p.name
                    )));
                }
            }
            if !(0.0..1.0).contains(&l.loss) {
                return Err(SimError::Scenario(format!(
                    "path.{}.{dir}: loss must be in [0, 1)",
                    p.name
                )));
            }
        }
    }
    Ok(())
}

/// The payload per data segment: `transport.mss`, clamped on a scenario with a trace link so
/// that a data packet (with `mptcp`'s headers, [`framing`]) fits one 1,500-byte MTU, as it must
/// to fit mahimahi's delivery opportunity of 1,504 bytes (`PACKET_SIZE`,
/// src/frontend/link_queue.hh, which refuses larger packets). One MSS per connection (the core
/// has one), so a trace link on any path clamps them all.
pub fn effective_mss(sc: &Scenario, mptcp: bool) -> u32 {
    debug_assert!(
        sc.transport.mss != scenario::MSS_BY_SCHEDULER,
        "effective_mss needs a scenario resolved for its scheduler (Scenario::resolved_for)"
    );
    let traced = sc
        .paths
        .iter()
        .any(|p| p.forward.trace.is_some() || p.reverse.trace.is_some());
    if traced {
        sc.transport.mss.min(framing::max_payload(mptcp))
    } else {
        sc.transport.mss
    }
}

/// Configured capacity of each path's forward link, bits per second (trace mean for traces).
pub fn path_capacities(sc: &Scenario) -> Result<Vec<f64>, SimError> {
    let traces = load_traces(sc)?;
    Ok(sc
        .paths
        .iter()
        .zip(&traces)
        .map(|(p, (t, _))| match t {
            Some(t) => t.mean_rate_bps(),
            None => p.forward.rate_bps.unwrap_or(f64::INFINITY),
        })
        .collect())
}

/// `NAME+POLICY` runs scheduler NAME with receiver policy POLICY (e.g. `rr+rtsc`); a plain
/// name takes the scenario's `transport.receiver`.
fn split_receiver<'a>(sc: &'a Scenario, name: &'a str) -> (&'a str, &'a str) {
    match name.split_once('+') {
        Some((s, r)) => (s, r),
        None => (name, sc.transport.receiver.as_str()),
    }
}

fn build_receiver_policy(
    sc: &Scenario,
    name: &str,
) -> Result<Box<dyn mpsched_core::recv::ReceiverPolicy>, SimError> {
    // The minimum RTT a client's handshake measures on each subflow: both propagation delays.
    let rtts: Vec<Duration> = sc
        .paths
        .iter()
        .map(|p| Duration::from_secs_f64(p.forward.delay_s + p.reverse.delay_s))
        .collect();
    mpsched_core::recv::build(name, &rtts, sc.transport.mss).ok_or_else(|| {
        let known: Vec<&str> = mpsched_core::recv::RECEIVERS.iter().map(|r| r.0).collect();
        SimError::Scenario(format!(
            "receiver policy \"{name}\" unknown (known: {})",
            known.join(", ")
        ))
    })
}

fn build_scheduler(sc: &Scenario, name: &str) -> Result<Box<dyn sched::Scheduler>, SimError> {
    let (name, receiver) = split_receiver(sc, name);
    build_receiver_policy(sc, receiver)?;
    let names: Vec<String> = sc.paths.iter().map(|p| p.name.clone()).collect();
    let caps = path_capacities(sc)?;
    // `backup` alone takes its backup paths from the scenario's `backup = true` marks.
    let marked = sc
        .paths
        .iter()
        .filter(|p| p.backup)
        .map(|p| p.name.as_str());
    let name = sched::backup::with_marked_paths(name, marked);
    let mut s = sched::build(&name, &names, &caps)?;
    // The marks are the subflows' backup flags too, for the schedulers that read them (the
    // kernel runner flags the same paths' endpoints).
    for (p, path) in sc.paths.iter().enumerate() {
        if path.backup {
            s.set_backup(p as mpsched_core::packet::PathId);
        }
    }
    Ok(s)
}

/// All scheduler names `run` accepts (besides parameterized forms like `single:NAME`).
pub fn scheduler_list() -> Vec<(&'static str, &'static str)> {
    let mut v: Vec<(&str, &str)> = sched::SCHEDULERS.to_vec();
    v.push(oracle::ORACLE);
    v
}

/// Run one simulation and return the result object.
pub fn run(sc: &Scenario, scheduler: &str, seed: u64) -> Result<Value, SimError> {
    run_inner(sc, scheduler, seed, None)
}

/// Run one simulation, recording per-packet events.
pub fn run_traced(
    sc: &Scenario,
    scheduler: &str,
    seed: u64,
) -> Result<(Value, PacketTrace), SimError> {
    let mut tr = PacketTrace::default();
    let v = run_inner(sc, scheduler, seed, Some(&mut tr))?;
    Ok((v, tr))
}

/// Run one simulation, recording only the per-path samples that `sim.sample_interval_s` asks
/// for (cwnd, srtt, OWD estimate over time) and no per-packet events.
pub fn run_sampled(
    sc: &Scenario,
    scheduler: &str,
    seed: u64,
) -> Result<(Value, PacketTrace), SimError> {
    let mut tr = PacketTrace {
        samples_only: true,
        ..PacketTrace::default()
    };
    let v = run_inner(sc, scheduler, seed, Some(&mut tr))?;
    Ok((v, tr))
}

fn run_inner(
    sc: &Scenario,
    scheduler: &str,
    seed: u64,
    trace: Option<&mut PacketTrace>,
) -> Result<Value, SimError> {
    let resolved = sc.resolved_for(scheduler);
    check_scenario(&resolved)?;
    if scheduler == oracle::ORACLE.0 {
        // As the user gave it: each run of the search resolves `transport.mss` for its own
        // scheduler, so a split's all-on-one-path point is plain TCP with TCP's MSS.
        return oracle::run(sc, seed);
    }
    let sc: &Scenario = &resolved;
    let wall = std::time::Instant::now();
    let traces = load_traces(sc)?;
    let sched = build_scheduler(sc, scheduler)?;
    let t = &sc.transport;
    let npaths = sc.paths.len();
    let mptcp = !sched.single_path();
    let mss = effective_mss(sc, mptcp);
    let (sender, mut receiver) = endpoints(t, npaths, mss, &t.cc, sched);
    receiver.set_policy(build_receiver_policy(sc, split_receiver(sc, scheduler).1)?);
    let mut world = World::new(sc, &traces, sender, receiver, seed, trace, mptcp);
    world.run();
    Ok(result_json(
        sc,
        scheduler,
        seed,
        &world,
        wall.elapsed().as_secs_f64(),
    ))
}

/// A connection's two ends as the scenario's transport sets them: `npaths` subflows, `cc` on
/// each (the connection's, or a competing flow's own), `sched` deciding.
pub(crate) fn endpoints(
    t: &scenario::Transport,
    npaths: usize,
    mss: u32,
    cc: &str,
    sched: Box<dyn mpsched_core::sched::Scheduler>,
) -> (SenderConnection, ReceiverConnection) {
    // A size fixes the buffer; unset, it autotunes up to Linux's `tcp_rmem[2]`.
    let recv_buffer = t.recv_buffer_bytes.unwrap_or(scenario::DEFAULT_RECV_BUFFER);
    let mptcp = !sched.single_path();
    let mut sender = SenderConnection::new(
        &SenderConfig {
            npaths,
            cc: CcKind::parse(cc).expect("checked"),
            mss,
            init_cwnd: t.init_cwnd,
            send_buffer: t.send_buffer_bytes,
            // The peer's first window: Linux's initial rcv_ssthresh, which the receiver
            // then opens segment by segment (`tcp_grow_window`).
            initial_rwnd: mpsched_core::meta::recv::RecvBuffer::first_offer(recv_buffer, mss),
            min_rto: Duration::from_secs_f64(t.min_rto_s),
            slow_start_after_idle: t.slow_start_after_idle,
        },
        sched,
    );
    sender.set_hystart(HyStartMode::parse(&t.hystart).expect("checked"));
    sender.set_pacing(t.pacing);
    sender.set_nodelay(t.nodelay);
    if t.send_buffer_lock {
        sender.lock_send_buffer(t.send_buffer_bytes);
    }
    let receiver = ReceiverConnection::new(&ReceiverConfig {
        npaths,
        mss,
        advmss: if mss == scenario::MSS_MPTCP {
            scenario::MSS_TCP
        } else {
            mss
        },
        recv_buffer,
        autotune: t.recv_buffer_bytes.is_none(),
        delayed_ack: t.delayed_ack,
        mptcp,
    });
    (sender, receiver)
}

fn median(v: &[f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    Some(if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    })
}

/// Quantiles 0, 0.01, ..., 1 of a histogram of nanoseconds, in seconds: a CDF to plot.
fn cdf_s(h: &mpsched_core::hist::LogHistogram) -> Value {
    json!((0..=100)
        .map(|i| h.quantile(i as f64 / 100.0) as f64 * 1e-9)
        .collect::<Vec<_>>())
}

/// Application-level delay of a `stream` workload (Park et al. (R-TSC), Eq. 1-4): p50/p95/p99
/// of the total and of each component, the total's CDF, and playback stalls.
fn stream_json(o: &mut Map<String, Value>, st: &stream::Stream) {
    let s = &st.stats;
    for (name, h) in [
        ("app_delay", &s.total),
        ("app_send_delay", &s.send),
        ("app_network_delay", &s.network),
        ("app_reorder_delay", &s.reorder),
    ] {
        for (q, tag) in [(0.5, "p50"), (0.95, "p95"), (0.99, "p99")] {
            o.insert(
                format!("{name}_{tag}_s"),
                json!(h.quantile(q) as f64 * 1e-9),
            );
        }
    }
    o.insert("app_delay_cdf_s".into(), cdf_s(&s.total));
    o.insert("app_packets".into(), json!(s.total.count()));
    o.insert("app_generated_bytes".into(), json!(st.generated_bytes));
    o.insert("stall_count".into(), json!(s.stalls));
    o.insert("stall_time_s".into(), json!(s.stall_time.as_secs_f64()));
}

/// Competing traffic's share of each path (`[path.cross]`): what its TCP flows delivered in
/// order and the CBR bytes that got through, as rates over the run; its forward-link drops.
/// Builds a `{path name: value}` object from a per-path-index function.
type ByPath<'a> = dyn Fn(&dyn Fn(usize) -> Value) -> Value + 'a;

fn cross_json(o: &mut Map<String, Value>, w: &World<'_>, by_path: &ByPath<'_>, sim_time: f64) {
    let rate = |bytes: u64| {
        if sim_time > 0.0 {
            bytes as f64 * 8.0 / sim_time
        } else {
            0.0
        }
    };
    let tcp = |i: usize| -> u64 {
        w.cross
            .iter()
            .filter(|f| f.path as usize == i)
            .map(|f| f.delivered)
            .sum()
    };
    o.insert(
        "cross_tcp_goodput_bps_by_path".into(),
        by_path(&|i| json!(rate(tcp(i)))),
    );
    o.insert(
        "cross_cbr_bps_by_path".into(),
        by_path(&|i| json!(rate(w.cross_stats.cbr_delivered[i]))),
    );
    o.insert(
        "cross_drops_by_path".into(),
        by_path(&|i| json!(w.cross_stats.drops[i])),
    );
}

fn result_json(sc: &Scenario, scheduler: &str, seed: u64, w: &World<'_>, wall: f64) -> Value {
    let sim_time = w.now().as_secs_f64();
    let rec = &w.rec;
    let snd = &w.sender;
    let rcv = &w.receiver;
    let names: Vec<&str> = sc.paths.iter().map(|p| p.name.as_str()).collect();
    let by_path = |f: &dyn Fn(usize) -> Value| -> Value {
        let mut m = Map::new();
        for (i, n) in names.iter().enumerate() {
            m.insert((*n).to_string(), f(i));
        }
        Value::Object(m)
    };
    let span = if w.workload.is_bulk() {
        sim_time
    } else {
        rec.last_delivery.as_secs_f64()
    };
    let rate = |bytes: u64| {
        if span > 0.0 {
            bytes as f64 * 8.0 / span
        } else {
            0.0
        }
    };
    let end = w.now();
    let hist = rcv.meta().ooo_delay();
    let mut o = Map::new();
    o.insert("scheduler".into(), json!(scheduler));
    o.insert("seed".into(), json!(seed));
    o.insert("engine_version".into(), json!(VERSION));
    o.insert(
        "scenario".into(),
        serde_json::to_value(sc).expect("serializable"),
    );
    if let Some(st) = w.workload.stream() {
        stream_json(&mut o, st);
    }
    if !w.workload.is_bulk() && !w.workload.is_stream() {
        let complete = w.workload.completed() == w.workload.chunk_count();
        o.insert(
            "download_time_s".into(),
            if complete {
                json!(rec.chunk_times.iter().sum::<f64>())
            } else {
                Value::Null
            },
        );
        o.insert("chunk_times_s".into(), json!(rec.chunk_times));
        // The server's view: each request's arrival to its chunk's last byte delivered.
        o.insert(
            "server_download_time_s".into(),
            if complete {
                json!(rec.server_chunk_times.iter().sum::<f64>())
            } else {
                Value::Null
            },
        );
        o.insert("server_chunk_times_s".into(), json!(rec.server_chunk_times));
        o.insert(
            "completion_gap_s".into(),
            json!(median(&rec.completion_gaps)),
        );
        o.insert("completion_gaps_s".into(), json!(rec.completion_gaps));
        o.insert("chunks_completed".into(), json!(w.workload.completed()));
    }
    let subflows = snd.subflows();
    o.insert(
        "bytes_by_path".into(),
        by_path(&|i| json!(subflows[i].bytes_sent())),
    );
    o.insert(
        "established_s_by_path".into(),
        by_path(&|i| json!(w.established_at()[i].map(|t| t.as_secs_f64()))),
    );
    o.insert(
        "reinjected_bytes".into(),
        json!(snd.meta().reinjected_bytes()),
    );
    o.insert(
        "duplicate_bytes".into(),
        json!(rcv.meta().duplicate_bytes()),
    );
    o.insert("delivered_bytes".into(), json!(rec.delivered_bytes));
    o.insert("goodput_bps".into(), json!(rate(rec.delivered_bytes)));
    o.insert(
        "throughput_by_path_bps".into(),
        by_path(&|i| json!(rate(rec.arrived_new_by_path[i]))),
    );
    o.insert(
        "utilization_by_path".into(),
        by_path(&|i| {
            let l = w.fwd_link(i);
            let cap = l.capacity_bytes(mpsched_core::time::Time::ZERO, end);
            json!(if cap.is_finite() && cap > 0.0 {
                l.stats().delivered_wire_bytes as f64 / cap
            } else {
                0.0
            })
        }),
    );
    o.insert(
        "retransmissions_by_path".into(),
        by_path(&|i| json!(subflows[i].retransmitted_segments())),
    );
    o.insert(
        "rto_by_path".into(),
        by_path(&|i| json!(subflows[i].rto_count())),
    );
    let stats = snd.path_stats();
    o.insert(
        "srtt_avg_s_by_path".into(),
        by_path(&|i| {
            let s = &stats[i];
            if s.srtt_samples > 0 {
                json!(s.srtt_sum_s / s.srtt_samples as f64)
            } else {
                Value::Null
            }
        }),
    );
    // Shi et al., USENIX ATC 2018, §5.1.2: fast-path burstiness as the free congestion window (in segments) the
    // sender sees when an ACK arrives.
    let mss = f64::from(w.mss);
    o.insert(
        "burstiness_by_path".into(),
        by_path(&|i| {
            let s = &stats[i];
            json!(if s.acks > 0 {
                s.free_cwnd_sum / s.acks as f64 / mss
            } else {
                0.0
            })
        }),
    );
    o.insert(
        "drops_by_path".into(),
        by_path(&|i| json!(w.fwd_link(i).stats().dropped_packets() - w.cross_stats.drops[i])),
    );
    if sc.paths.iter().any(|p| !p.cross.is_none()) {
        cross_json(&mut o, w, &by_path, sim_time);
    }
    o.insert(
        "ofo_queue_avg_bytes".into(),
        json!(rcv
            .meta()
            .ofo_avg_bytes(mpsched_core::time::Time::ZERO, end)),
    );
    o.insert(
        "ofo_queue_max_bytes".into(),
        json!(rcv.meta().ofo_max_bytes()),
    );
    o.insert(
        "ooo_delay_p50_s".into(),
        json!(hist.quantile(0.5) as f64 * 1e-9),
    );
    o.insert(
        "ooo_delay_p99_s".into(),
        json!(hist.quantile(0.99) as f64 * 1e-9),
    );
    // Shi et al., USENIX ATC 2018, Fig. 10a: the out-of-order delay CDF.
    o.insert("ooo_delay_cdf_s".into(), cdf_s(hist));
    // Shi et al., USENIX ATC 2018, §2.3/§3.2 (Eq. 1, 3, 4): the host buffer actually used, i.e.
    // bytes from the data-ACK to the end of each segment sent (the send buffer must hold them and
    // the receive window admit them); median and maximum over transmissions.
    let used = snd.window_used();
    o.insert(
        "host_buffer_used_p50_bytes".into(),
        json!(used.quantile(0.5)),
    );
    o.insert("host_buffer_used_max_bytes".into(), json!(used.max()));
    let withheld = rcv.policy().withheld();
    if !withheld.is_empty() {
        // R-TSC §V: segments the receiver left out of its ACKs to make the sender halve.
        o.insert("receiver".into(), json!(rcv.policy().name()));
        o.insert(
            "withheld_by_path".into(),
            by_path(&|i| json!(withheld.get(i).copied().unwrap_or(0))),
        );
    }
    o.insert("data_packets".into(), json!(rec.data_packets));
    o.insert("events".into(), json!(w.events));
    o.insert("sched_decisions".into(), json!(snd.sched_decisions()));
    if let Some(ns) = snd.sched_decision_ns() {
        // Host time, like wall_time_s: only in builds with the `decision-timing` feature.
        o.insert("sched_decision_ns".into(), json!(ns));
    }
    o.insert("sim_time_s".into(), json!(sim_time));
    o.insert("wall_time_s".into(), json!(wall));
    o.insert("truncated".into(), json!(w.truncated));
    // A run that did not deliver its workload, and why (DESIGN.md "Metrics"; docs/scenarios.md).
    o.insert("failed".into(), json!(w.failure.is_some()));
    o.insert("failure".into(), json!(w.failure));
    Value::Object(o)
}
