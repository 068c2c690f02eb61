use mpsched_sim::scenario::*;
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let rtt_s: f64 = a[1].parse().unwrap();
    let rate: f64 = a[2].parse().unwrap();
    let qf: f64 = a[4].parse().unwrap();
    let qs: f64 = a[5].parse().unwrap();
    let rbuf: u64 = a.get(3).map(|s| s.parse().unwrap()).unwrap_or(64 << 20);
    for sched in ["minrtt:noor", "minrtt", "stms-c", "stms-a"] {
        let sc = Scenario {
            paths: vec![
                PathSpec::bottleneck("fast", rate, 0.020, qf, 0.0),
                PathSpec::bottleneck("slow", rate, rtt_s, qs, 0.0),
            ],
            workload: Workload::Bulk { duration_s: 20.0 },
            transport: Transport {
                recv_buffer_bytes: rbuf,
                send_buffer_bytes: 64 << 20,
                ..Transport::default()
            },
            sim: SimOptions::default(),
        };
        let v = mpsched_sim::run(&sc, sched, 1).unwrap();
        println!("{sched:7} goodput {:.2} Mb/s  used p50 {} max {}  ofo max {} ooo p50 {:.4} p99 {:.4} burst {} srtt {}",
          v["goodput_bps"].as_f64().unwrap()/1e6, v["host_buffer_used_p50_bytes"], v["host_buffer_used_max_bytes"], v["ofo_queue_max_bytes"],
          v["ooo_delay_p50_s"].as_f64().unwrap(), v["ooo_delay_p99_s"].as_f64().unwrap(), v["burstiness_by_path"], v["srtt_avg_s_by_path"]);
    }
}
