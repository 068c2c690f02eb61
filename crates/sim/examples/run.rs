//! Run one resolved scenario (JSON, as Python produces it) from the command line, without the
//! Python layer: `cargo run --release -p mpsched-sim --example run -- SCENARIO.json SCHED SEED`.

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 4 {
        eprintln!("usage: run SCENARIO.json SCHEDULER SEED");
        std::process::exit(2);
    }
    let text = std::fs::read_to_string(&args[1]).unwrap_or_else(|e| {
        eprintln!("{}: {e}", args[1]);
        std::process::exit(2)
    });
    let sc: mpsched_sim::scenario::Scenario = serde_json::from_str(&text).unwrap_or_else(|e| {
        eprintln!("{}: {e}", args[1]);
        std::process::exit(2)
    });
    let seed: u64 = args[3].parse().unwrap_or_else(|_| {
        eprintln!("seed must be a non-negative integer");
        std::process::exit(2)
    });
    match mpsched_sim::run(&sc, &args[2], seed) {
        Ok(mut v) => {
            v.as_object_mut().map(|o| o.remove("scenario"));
            println!("{}", serde_json::to_string_pretty(&v).expect("json"));
        }
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    }
}
