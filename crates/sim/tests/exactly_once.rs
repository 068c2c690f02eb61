//! Property (issue 3, "Must show"): over random scenarios — two to four unlike paths, random
//! loss in both directions, outages, reordering between paths, small receive buffers that make
//! MinRTT reinject, competing traffic, every scheduler — the receiver delivers every byte of the workload exactly
//! once and in order, and never anything the sender has not sent.
//!
//! The observable is the packet trace of `run_traced`: the receiver's `deliver` events must tile
//! `[0, total)` in order, each ending at or below the highest DSN the sender had put on a link
//! by then; the run's own counters must agree.

use mpsched_sim::scenario::{
    LinkSpec, PathSpec, QueueSpec, Scenario, SimOptions, Transport, Workload,
};
use mpsched_sim::tracing::{EventKind, PacketTrace, Side};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;

fn queue() -> impl Strategy<Value = QueueSpec> {
    prop_oneof![
        (0.005f64..0.5).prop_map(QueueSpec::Time),
        (3u64..300).prop_map(QueueSpec::Packets),
        (4_000u64..400_000).prop_map(QueueSpec::Bytes),
        Just(QueueSpec::Unlimited),
    ]
}

fn loss() -> impl Strategy<Value = f64> {
    prop_oneof![Just(0.0), 0.0f64..0.03]
}

fn path(i: usize) -> impl Strategy<Value = PathSpec> {
    (
        // Log-uniform rate, 0.5 to 50 Mbit/s.
        (5.7f64..7.7).prop_map(|e| 10f64.powf(e)),
        0.002f64..0.3,
        0.002f64..0.3,
        queue(),
        loss(),
        loss(),
        proptest::option::weighted(0.2, (0.0f64..2.0, 0.01f64..0.5)),
        // Competing traffic now and then: TCP flows and a CBR load on the bottleneck.
        proptest::option::weighted(0.15, (0u32..3, 0.0f64..0.3)),
    )
        .prop_map(
            move |(rate, owd, back, queue, fwd_loss, rev_loss, outage, cross)| {
                let outages = outage.map(|(s, d)| vec![(s, s + d)]).unwrap_or_default();
                // A TCP cross flow in an unlimited buffer is never told to slow down: its window
                // grows to its 16 MiB receive buffer, minutes of queue at these rates, and a
                // scheduler that keeps a fixed share on that path (MuSher's strict ratio) then
                // takes longer than the 600 s limit, correctly. Such a path gets half a second of
                // buffer instead (found by this property; the run completes in 22.7 s then).
                let queue = match (queue, cross) {
                    (QueueSpec::Unlimited, Some((flows, _))) if flows > 0 => QueueSpec::Time(0.5),
                    (q, _) => q,
                };
                PathSpec {
                    name: format!("p{i}"),
                    forward: LinkSpec {
                        rate_bps: Some(rate),
                        trace: None,
                        delay_s: owd,
                        queue,
                        loss: fwd_loss,
                        outages: outages.clone(),
                        handover: None,
                    },
                    reverse: LinkSpec {
                        rate_bps: None,
                        trace: None,
                        delay_s: back,
                        queue: QueueSpec::Unlimited,
                        loss: rev_loss,
                        outages,
                        handover: None,
                    },
                    backup: false,
                    cross: cross
                        .map(
                            |(tcp_flows, cbr_share)| mpsched_sim::scenario::CrossTraffic {
                                tcp_flows,
                                cc: None,
                                cbr_bps: cbr_share * rate,
                            },
                        )
                        .unwrap_or_default(),
                }
            },
        )
}

fn workload() -> impl Strategy<Value = Workload> {
    prop_oneof![
        (1u64..300_000).prop_map(|size_bytes| Workload::Chunk { size_bytes }),
        (1u64..120_000, 1u64..5, 0.0f64..0.3, any::<bool>()).prop_map(
            |(size_bytes, count, think_s, hint)| Workload::Chunks {
                size_bytes,
                count,
                think_s,
                hint,
            }
        ),
    ]
}

fn transport() -> impl Strategy<Value = Transport> {
    (
        prop_oneof![Just("reno"), Just("cubic")],
        prop_oneof![Just(1448u32), 200u32..1448],
        1u32..12,
        // Small connection-level receive buffers block the window and make MinRTT reinject.
        prop_oneof![Just(16u64 << 20), 8_000u64..200_000],
        any::<bool>(),
    )
        .prop_map(|(cc, mss, init_cwnd, recv, delayed_ack)| Transport {
            cc: cc.into(),
            mss,
            init_cwnd,
            recv_buffer_bytes: Some(recv.max(2 * mss as u64)),
            delayed_ack,
            ..Transport::default()
        })
}

fn scenario() -> impl Strategy<Value = Scenario> {
    (
        (2usize..=4).prop_flat_map(|n| (0..n).map(path).collect::<Vec<_>>()),
        workload(),
        transport(),
        -2.0f64..2.0,
    )
        .prop_map(|(paths, workload, transport, clock_offset_s)| Scenario {
            paths,
            workload,
            transport,
            sim: SimOptions {
                clock_offset_s,
                max_time_s: 600.0,
                ..SimOptions::default()
            },
        })
}

/// Every scheduler the engine builds, except the offline `oracle` (which runs single-path
/// transfers), with the MinRTT variants and `single` pinned to the last path.
fn schedulers(sc: &Scenario) -> Vec<String> {
    let mut v: Vec<String> = mpsched_sim::scheduler_list()
        .iter()
        .map(|s| s.0.to_string())
        .filter(|s| s != "oracle" && s != "backup")
        .collect();
    // The last path as the backup of the others.
    v.push(format!("backup:{}", sc.paths.last().expect("paths").name));
    v.push("minrtt:noor".into());
    v.push("minrtt:nopenalty".into());
    v.push(format!("single:{}", sc.paths.last().expect("paths").name));
    v
}

/// Check the receiver's deliveries in `tr` tile `[0, total)` once, in order, never ahead of
/// what the sender had sent. Returns a description of the first violation.
fn check_deliveries(tr: &PacketTrace, total: u64) -> Result<(), String> {
    let mut next = 0u64;
    let mut sent_upto = 0u64;
    for i in 0..tr.len() {
        let end = tr.dsn[i] + tr.len[i] as u64;
        match (tr.side[i], tr.kind[i]) {
            (Side::Sender, EventKind::Send | EventKind::Reinject | EventKind::Retransmit) => {
                sent_upto = sent_upto.max(end);
            }
            (Side::Receiver, EventKind::Deliver) => {
                if tr.dsn[i] != next || tr.len[i] == 0 {
                    return Err(format!(
                        "event {i} at {} s delivers [{}, {end}) but the next byte due is {next}",
                        tr.time_s[i], tr.dsn[i]
                    ));
                }
                if end > sent_upto {
                    return Err(format!(
                        "event {i} at {} s delivers up to {end}, beyond anything sent ({sent_upto})",
                        tr.time_s[i]
                    ));
                }
                next = end;
            }
            _ => {}
        }
    }
    if next != total {
        return Err(format!("delivered [0, {next}) of {total} bytes"));
    }
    Ok(())
}

/// Run `sc` with every scheduler and check the property; the error names the scheduler.
fn check(sc: &Scenario) -> Result<(), TestCaseError> {
    let (size, count) = match sc.workload {
        Workload::Chunk { size_bytes } => (size_bytes, 1),
        Workload::Chunks {
            size_bytes, count, ..
        } => (size_bytes, count),
        Workload::Bulk { .. } | Workload::Stream { .. } => unreachable!("not generated"),
    };
    let total = size * count;
    for sched in schedulers(sc) {
        let (v, tr) = mpsched_sim::run_traced(sc, &sched, 7)
            .map_err(|e| TestCaseError::fail(format!("{sched}: {e}")))?;
        prop_assert_eq!(&v["truncated"], false, "{}: run truncated", sched);
        prop_assert_eq!(v["chunks_completed"].as_u64(), Some(count), "{}", sched);
        prop_assert_eq!(v["delivered_bytes"].as_u64(), Some(total), "{}", sched);
        check_deliveries(&tr, total).map_err(|e| TestCaseError::fail(format!("{sched}: {e}")))?;
        // A byte arrives twice only if it was sent twice: reinjected or retransmitted.
        let mss = sc.transport.mss as u64;
        let retransmitted: u64 = v["retransmissions_by_path"]
            .as_object()
            .expect("per-path object")
            .values()
            .map(|n| n.as_u64().unwrap_or(0) * mss)
            .sum();
        let dup = v["duplicate_bytes"].as_u64().unwrap_or(u64::MAX);
        let reinjected = v["reinjected_bytes"].as_u64().unwrap_or(0);
        prop_assert!(
            dup <= reinjected + retransmitted,
            "{}: {} duplicate bytes but only {} reinjected + {} retransmitted",
            sched,
            dup,
            reinjected,
            retransmitted
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 64,
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions"
        ))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn receiver_delivers_every_byte_exactly_once_in_order(sc in scenario()) {
        check(&sc)?;
    }
}

/// Cases the property found, kept as fixed tests (each run of the property draws new ones):
/// three paths and a connection receive window of a few segments. DEMS withheld every subflow
/// by its generalized Eq. 9 except one whose run lay beyond the window, leaving a hole at the
/// window's left side that nobody sent: with nothing in flight, no ACK ever came back.
#[test]
fn found_cases_deliver_every_byte_exactly_once_in_order() {
    let cases = [
        r#"{"paths":[
          {"name":"p0","forward":{"rate_bps":1656358.8079558006,"delay_s":0.2792135366119953,"queue":{"unit":"time","value":0.1913428872713817},"loss":0.018282453178766703},"reverse":{"delay_s":0.002}},
          {"name":"p1","forward":{"rate_bps":638315.1490236733,"delay_s":0.101358566971851,"queue":{"unit":"packets","value":53}},"reverse":{"delay_s":0.002}},
          {"name":"p2","forward":{"rate_bps":1874247.3153771125,"delay_s":0.28994535907834496,"queue":{"unit":"time","value":0.21009606414817011},"loss":0.0034192492949054304},"reverse":{"delay_s":0.09596991919380414}}],
         "workload":{"kind":"chunks","size_bytes":106042,"count":3,"think_s":0.2878229462684259,"hint":false},
         "transport":{"cc":"reno","mss":407,"init_cwnd":6,"send_buffer_bytes":8388608,"recv_buffer_bytes":26455,"delayed_ack":true,"min_rto_s":0.2},
         "sim":{"max_time_s":600.0}}"#,
        r#"{"paths":[
          {"name":"p0","forward":{"rate_bps":501187.2336272725,"delay_s":0.14574283770645843,"queue":{"unit":"time","value":0.15005212208315283}},"reverse":{"delay_s":0.27981004554226674}},
          {"name":"p1","forward":{"rate_bps":19356731.51061062,"delay_s":0.002,"queue":{"unit":"time","value":0.005}},"reverse":{"delay_s":0.002}},
          {"name":"p2","forward":{"rate_bps":45496770.41637243,"delay_s":0.10392728700228991,"queue":{"unit":"time","value":0.005},"loss":0.0019516043801819985},"reverse":{"delay_s":0.002}}],
         "workload":{"kind":"chunks","size_bytes":116479,"count":3,"think_s":0.04879886389235406,"hint":false},
         "transport":{"cc":"cubic","mss":755,"init_cwnd":7,"send_buffer_bytes":8388608,"recv_buffer_bytes":114045,"delayed_ack":false,"min_rto_s":0.2},
         "sim":{"max_time_s":600.0,"clock_offset_s":0.21656330164577256}}"#,
        r#"{"paths":[
          {"name":"p0","forward":{"rate_bps":501187.2336272725,"delay_s":0.22781933386840716,"queue":{"unit":"time","value":0.24188942672247632}},"reverse":{"delay_s":0.11248129885295487}},
          {"name":"p1","forward":{"rate_bps":501187.2336272725,"delay_s":0.002,"queue":{"unit":"time","value":0.005}},"reverse":{"delay_s":0.17533947245278778}},
          {"name":"p2","forward":{"rate_bps":3111293.1511646053,"delay_s":0.018945544697027177,"queue":{"unit":"time","value":0.168465936077233}},"reverse":{"delay_s":0.16288730933182657}}],
         "workload":{"kind":"chunks","size_bytes":37897,"count":2,"think_s":0.275791129344067,"hint":false},
         "transport":{"cc":"reno","mss":1448,"init_cwnd":2,"recv_buffer_bytes":16177,"delayed_ack":false},
         "sim":{"max_time_s":600.0}}"#,
    ];
    for (i, json) in cases.iter().enumerate() {
        let sc: Scenario = serde_json::from_str(json).expect("valid scenario");
        if let Err(e) = check(&sc) {
            panic!("found case {i}: {e}");
        }
    }
}
