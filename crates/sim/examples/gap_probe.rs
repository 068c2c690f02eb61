use mpsched_sim::scenario::*;
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let sched = &a[1];
    let (rf0, rf1, rs0, rs1): (f64, f64, f64, f64) = (
        a[2].parse().unwrap(),
        a[3].parse().unwrap(),
        a[4].parse().unwrap(),
        a[5].parse().unwrap(),
    );
    let qf: f64 = a[6].parse().unwrap();
    let qs: f64 = a[7].parse().unwrap();
    let sc = Scenario {
        paths: vec![
            PathSpec::bottleneck("fast", 30e6, rf0, qf, 0.0),
            PathSpec::bottleneck("slow", 30e6, rs0, qs, 0.0),
        ],
        workload: Workload::Bulk { duration_s: 20.0 },
        transport: Transport {
            ..Transport::default()
        },
        sim: SimOptions {
            sample_interval_s: 0.25,
            delay_changes: vec![
                DelayChange {
                    path: 0,
                    at_s: 10.0,
                    rtt_s: rf1,
                },
                DelayChange {
                    path: 1,
                    at_s: 10.0,
                    rtt_s: rs1,
                },
            ],
            ..SimOptions::default()
        },
    };
    let (v, tr) = mpsched_sim::run_sampled(&sc, sched, 1).unwrap();
    println!("goodput {:.2}", v["goodput_bps"].as_f64().unwrap() / 1e6);
    for i in (0..tr.sample_time_s.len()).step_by(4) {
        let (t, g) = (tr.sample_time_s[i], tr.sample_gap_segs[i]);
        let sf = tr.sample_srtt_s[i];
        let ss = tr.sample_srtt_s[i + 1];
        let cw = tr.sample_cwnd[i] as f64 / 1448.0;
        // Eq. 2 from the samples: B_f = cwnd_f/srtt_f, OWD = srtt/2
        let eq2 = cw / sf * (ss - sf) / 2.0;
        let eq2cfg = 30e6 / 8.0 / 1520.0 * (ss - sf) / 2.0;
        println!("{t:6.2} gap {g:7.1} eq2(cwnd/srtt) {eq2:7.1} eq2(capacity) {eq2cfg:7.1} srtt {sf:.3} {ss:.3}");
    }
}
