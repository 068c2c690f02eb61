//! `mpsched-emu`: the link emulator and the Linux kernel baseline. Normally driven by the Python
//! CLI (`mpsched emu ...`, `mpsched kernel ...`), which validates the scenario and hands over the
//! resolved JSON (SI units), so that Python stays the one validator of scenario files.
//!
//! ```text
//! mpsched-emu up SCENARIO.json [--id ID] [--seed N] [--detach] [--transport]
//! mpsched-emu down [ID | --all]
//! mpsched-emu check [ID] [--json]
//! mpsched-emu list
//! mpsched-emu kernel SCENARIO.json [--mode mptcp|tcp:PATH] [--reps N] [--seed N]
//! ```
//!
//! Exit status: 0 done, 1 failed while running, 2 refused (bad input, not root, no namespaces).

use std::process::{exit, Command, Stdio};
use std::time::{Duration, Instant};

use mpsched_net::emu::{self, check, Instance, STOP};
use mpsched_net::kernel::{self, Mode};

fn refuse(msg: impl std::fmt::Display) -> ! {
    eprintln!("mpsched: error: {msg}");
    exit(2)
}

fn fail(msg: impl std::fmt::Display) -> ! {
    eprintln!("mpsched: error: {msg}");
    exit(1)
}

struct Args {
    positional: Vec<String>,
    options: Vec<(String, Option<String>)>,
}

impl Args {
    fn parse(raw: &[String], flags: &[&str], valued: &[&str]) -> Args {
        let mut a = Args {
            positional: vec![],
            options: vec![],
        };
        let mut it = raw.iter();
        while let Some(x) = it.next() {
            if flags.contains(&x.as_str()) {
                a.options.push((x.clone(), None));
            } else if valued.contains(&x.as_str()) {
                let v = it
                    .next()
                    .unwrap_or_else(|| refuse(format!("{x} needs a value")));
                a.options.push((x.clone(), Some(v.clone())));
            } else if x.starts_with("--") {
                refuse(format!("unknown option {x}"))
            } else {
                a.positional.push(x.clone());
            }
        }
        a
    }

    fn flag(&self, name: &str) -> bool {
        self.options.iter().any(|(k, _)| k == name)
    }

    fn value(&self, name: &str) -> Option<&str> {
        self.options
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .and_then(|(_, v)| v.as_deref())
    }

    fn number(&self, name: &str, default: u64) -> u64 {
        self.value(name).map_or(default, |v| {
            v.parse()
                .unwrap_or_else(|_| refuse(format!("{name} {v}: expected a non-negative integer")))
        })
    }
}

fn scenario(args: &Args) -> mpsched_sim::scenario::Scenario {
    let path = args
        .positional
        .first()
        .unwrap_or_else(|| refuse("missing SCENARIO.json (the resolved scenario)"));
    let text = if path == "-" {
        std::io::read_to_string(std::io::stdin()).unwrap_or_else(|e| refuse(format!("stdin: {e}")))
    } else {
        std::fs::read_to_string(path).unwrap_or_else(|e| refuse(format!("{path}: {e}")))
    };
    emu::parse_scenario(&text).unwrap_or_else(|e| refuse(format!("{path}: {e}")))
}

fn preflight() {
    if let Err(e) = emu::preflight() {
        refuse(e)
    }
}

/// The one running instance, or the one named.
fn pick(args: &Args) -> emu::State {
    let all = emu::list();
    match args.positional.first() {
        Some(id) => all.into_iter().find(|s| &s.id == id).unwrap_or_else(|| {
            refuse(format!(
                "no emulator instance {id:?} (see `mpsched emu list`)"
            ))
        }),
        None => match all.len() {
            1 => all.into_iter().next().unwrap(),
            0 => {
                refuse("no emulator instance is running (start one with `mpsched emu up SCENARIO`)")
            }
            _ => refuse("several instances are running: name one (see `mpsched emu list`)"),
        },
    }
}

// The detached emulator outlives this process by design: nobody here waits for it.
#[allow(clippy::zombie_processes)]
fn up(args: &Args) {
    let sc = scenario(args);
    // `--transport`: the scenario's [transport] on the end hosts' namespaces and routes, for
    // other programs' kernel TCP between them (the proxy's subflows in `mpsched realrun`).
    let transport = args
        .flag("--transport")
        .then(|| kernel::transport::plan_for_others(&sc).unwrap_or_else(|e| refuse(e)));
    preflight();
    let id = args.value("--id").map(str::to_string);
    if args.flag("--detach") {
        // Re-run ourselves in the foreground in a new session, output to the run directory's
        // log, and return once its state file says it is ready.
        let id = id.unwrap_or_else(|| format!("{:x}", std::process::id()));
        let me = std::env::current_exe().unwrap_or_else(|e| fail(e));
        let log_dir = emu::run_root();
        std::fs::create_dir_all(&log_dir)
            .unwrap_or_else(|e| fail(format!("{}: {e}", log_dir.display())));
        let log =
            std::fs::File::create(log_dir.join(format!("{id}.log"))).unwrap_or_else(|e| fail(e));
        // The scenario goes to a file: the child cannot read our stdin ("-").
        let sc_file = log_dir.join(format!("{id}.scenario.json"));
        std::fs::write(&sc_file, serde_json::to_vec(&sc).unwrap()).unwrap_or_else(|e| fail(e));
        let mut cmd = Command::new(me);
        cmd.arg("up").arg(&sc_file).args(["--id", &id]);
        if let Some(s) = args.value("--seed") {
            cmd.args(["--seed", s]);
        }
        if transport.is_some() {
            cmd.arg("--transport");
        }
        use std::os::unix::process::CommandExt;
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| fail(e));
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(20) {
            if emu::list()
                .iter()
                .any(|s| s.id == id && s.ready && s.pid == child.id() as i32)
            {
                println!(
                    "emulator {id} up (pid {}); stop it with `mpsched emu down {id}`",
                    child.id()
                );
                return;
            }
            if child.try_wait().map_or(true, |st| st.is_some()) {
                let text = std::fs::read_to_string(emu::run_root().join(format!("{id}.log")))
                    .unwrap_or_default();
                fail(format!("emulator failed to start: {}", text.trim()));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        fail("emulator did not become ready within 20 s");
    }
    emu::install_signal_handlers();
    let seed = args.number("--seed", 1);
    let mut inst = Instance::up(&sc, id.as_deref(), seed).unwrap_or_else(|e| fail(e));
    if let Some(plan) = &transport {
        if let Err(e) = kernel::transport::apply(&inst.topo, plan) {
            let _ = inst.down();
            fail(format!("applying [transport]: {e}"));
        }
    }
    let _ = std::fs::write(
        inst.dir().join("scenario.json"),
        serde_json::to_vec(&sc).unwrap(),
    );
    let names: Vec<String> = inst.topo.namespaces();
    println!(
        "emulator {} up: namespaces {}; client 10.200.N.1, server 10.200.N.2 per path N; Ctrl-C to stop",
        inst.topo.id,
        names.join(", ")
    );
    let res = inst.wait();
    let down = inst.down();
    if let Err(e) = res.and(down) {
        fail(e)
    }
}

fn down(args: &Args) {
    preflight();
    let all = emu::list();
    let targets: Vec<emu::State> = if args.flag("--all") || args.positional.is_empty() {
        all
    } else {
        vec![pick(args)]
    };
    if targets.is_empty() {
        println!(
            "no emulator instance recorded in {}",
            emu::run_root().display()
        );
    }
    let mut bad = false;
    for st in &targets {
        match emu::down(st) {
            Ok(m) => println!("{m}"),
            Err(e) => {
                eprintln!("mpsched: error: instance {}: {e}", st.id);
                bad = true;
            }
        }
        for ext in ["log", "scenario.json"] {
            let _ = std::fs::remove_file(emu::run_root().join(format!("{}.{ext}", st.id)));
        }
    }
    if bad {
        exit(1)
    }
}

fn check_cmd(args: &Args) {
    preflight();
    let st = pick(args);
    let dir = emu::run_root().join(&st.id);
    let text = std::fs::read_to_string(dir.join("scenario.json"))
        .unwrap_or_else(|e| fail(format!("instance {}: scenario: {e}", st.id)));
    let sc = emu::parse_scenario(&text).unwrap_or_else(|e| fail(e));
    let topo = emu::Topology::new(&st.id, &st.paths);
    let json = args.flag("--json");
    let rows = check::check(&topo, &sc, &|m| eprintln!("{m}")).unwrap_or_else(|e| fail(e));
    if json {
        println!("{}", serde_json::to_string(&rows).unwrap());
    } else {
        print!("{}", check::table(&rows));
    }
}

fn kernel_cmd(args: &Args) {
    let sc = scenario(args);
    let mode =
        Mode::parse(args.value("--mode").unwrap_or("mptcp"), &sc).unwrap_or_else(|e| refuse(e));
    let plan = kernel::transport::plan(&sc, mode == Mode::Mptcp).unwrap_or_else(|e| refuse(e));
    if plan.cc == "cubic" {
        kernel::transport::check_cubic_module().unwrap_or_else(|e| refuse(e));
    }
    preflight();
    emu::install_signal_handlers();
    let reps = args.number("--reps", 1).max(1) as u32;
    let seed = args.number("--seed", 1);
    let runs = kernel::run(&sc, &mode, &plan, reps, seed, args.value("--id"), &|m| {
        eprintln!("{m}")
    })
    .unwrap_or_else(|e| fail(e));
    let out = serde_json::json!({"scheduler": mode.label(&sc), "runs": runs, "scenario": sc});
    println!("{out}");
}

fn main() {
    let raw: Vec<String> = std::env::args().skip(1).collect();
    let Some((verb, rest)) = raw.split_first() else {
        refuse("usage: mpsched-emu up|down|check|list|kernel ...")
    };
    match verb.as_str() {
        "up" => up(&Args::parse(
            rest,
            &["--detach", "--transport"],
            &["--id", "--seed"],
        )),
        "down" => down(&Args::parse(rest, &["--all"], &[])),
        "check" => check_cmd(&Args::parse(rest, &["--json"], &[])),
        "list" => {
            for s in emu::list() {
                let alive = if emu::sys::is_emulator(s.pid) {
                    "running"
                } else {
                    "dead (run `down`)"
                };
                println!(
                    "{} pid {} {} namespaces {}",
                    s.id,
                    s.pid,
                    alive,
                    s.namespaces.join(",")
                );
            }
        }
        "kernel" => kernel_cmd(&Args::parse(
            rest,
            &[],
            &["--mode", "--reps", "--seed", "--id"],
        )),
        other => refuse(format!(
            "unknown command {other:?} (up, down, check, list, kernel)"
        )),
    }
    let _ = STOP.load(std::sync::atomic::Ordering::Relaxed);
}
