use mpsched_sim::scenario::*;
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let c1: f64 = a[1].parse().unwrap();
    let cc = a.get(2).cloned().unwrap_or("reno".into());
    let scheds: Vec<String> = a[3..].to_vec();
    for sched in scheds {
        let mut lte = PathSpec::bottleneck("lte", 40e6, 0.030, 0.0, 0.0);
        lte.forward.queue = QueueSpec::Bytes(7_000_000);
        let mut wifi = PathSpec::bottleneck("wifi", c1, 0.015, 0.0, 0.0);
        wifi.forward.queue = QueueSpec::Bytes(700_000);
        let sc = Scenario {
            paths: vec![lte, wifi],
            workload: Workload::Stream {
                rate_bps: 35.85e6,
                duration_s: 20.0,
                packet_bytes: 1448,
                cv: 0.0,
                frame_interval_s: 1.0 / 30.0,
                playout_delay_s: 1.0,
            },
            transport: Transport {
                cc: cc.clone(),
                ..Transport::default()
            },
            sim: SimOptions::default(),
        };
        let t = std::time::Instant::now();
        let v = mpsched_sim::run(&sc, &sched, 1).unwrap();
        let g = |k: &str| v[k].as_f64().unwrap_or(f64::NAN);
        println!("{sched:10} goodput {:.2} app p50 {:.3} p95 {:.3} p99 {:.3} | send p95 {:.3} net p95 {:.3} reord p95 {:.3} stalls {} wh {} tput {} {:.2}s",
          g("goodput_bps")/1e6, g("app_delay_p50_s"), g("app_delay_p95_s"), g("app_delay_p99_s"), g("app_send_delay_p95_s"), g("app_network_delay_p95_s"), g("app_reorder_delay_p95_s"), v["stall_count"], v["withheld_by_path"], v["throughput_by_path_bps"], t.elapsed().as_secs_f64());
    }
}
