//! Print a cwnd time series (debug aid): `cwnd_trace SCENARIO.json SCHED SEED INTERVAL_S`.
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let mut sc: mpsched_sim::scenario::Scenario =
        serde_json::from_str(&std::fs::read_to_string(&a[1]).unwrap()).unwrap();
    sc.sim.sample_interval_s = a[4].parse().unwrap();
    let (v, tr) = mpsched_sim::run_sampled(&sc, &a[2], a[3].parse().unwrap()).unwrap();
    for i in 0..tr.sample_time_s.len() {
        println!(
            "{:.3} {} {} {:.4}",
            tr.sample_time_s[i],
            tr.sample_path[i],
            tr.sample_cwnd[i] / 1448,
            tr.sample_srtt_s[i]
        );
    }
    eprintln!("{}", v["retransmissions_by_path"]);
    eprintln!("{} {}", v["rto_by_path"], v["goodput_bps"]);
}
