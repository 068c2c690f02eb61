//! The link emulator: a scenario's paths as network namespaces and a user-space delay line.
//!
//! An [`Instance`] owns three namespaces (`topo`), one forwarding thread (`forward`) and a run
//! directory holding its state (id, namespaces, PID) so that `down` can clean up after a crash.
//! Everything is removed when the instance is dropped; the binary also removes it on SIGINT and
//! SIGTERM; after `kill -9` `mpsched emu down` does it from the state file.

pub mod check;
pub mod forward;
pub mod sys;
pub mod topo;

use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use mpsched_sim::scenario::Scenario;
use serde::{Deserialize, Serialize};

pub use forward::{Control, DirStats, Snapshot};
pub use topo::{Role, Topology};

/// Set by SIGINT/SIGTERM (see [`install_signal_handlers`]).
pub static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

/// SIGINT and SIGTERM set [`STOP`] instead of killing the process, so that it can remove its
/// namespaces first. Installed without SA_RESTART so that blocking calls return EINTR.
pub fn install_signal_handlers() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: installing a handler that only stores to an atomic.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

/// Where instances record their state: `$MPSCHED_EMU_RUN_DIR`, else `/run/mpsched-emu`.
pub fn run_root() -> PathBuf {
    std::env::var_os("MPSCHED_EMU_RUN_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/run/mpsched-emu"))
}

/// What `down` needs to clean up an instance whose process died.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct State {
    pub id: String,
    pub pid: i32,
    pub namespaces: Vec<String>,
    pub paths: Vec<String>,
    pub ready: bool,
}

/// Why the emulator cannot run here, if it cannot (root, `ip`, namespaces).
pub fn preflight() -> Result<(), String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err("the emulator needs root (it creates network namespaces); run as root".into());
    }
    let ok = std::process::Command::new("ip")
        .args(["netns", "list"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !ok {
        return Err("`ip netns` is not available (iproute2 with network namespaces needed)".into());
    }
    Ok(())
}

pub struct Instance {
    pub topo: Topology,
    pub control: Arc<Control>,
    dir: PathBuf,
    thread: Option<JoinHandle<io::Result<()>>>,
    torn_down: bool,
}

impl Instance {
    /// Creates the namespaces and starts forwarding. `id` defaults to one derived from the PID.
    pub fn up(sc: &Scenario, id: Option<&str>, seed: u64) -> io::Result<Instance> {
        let id = id
            .map(str::to_string)
            .unwrap_or_else(|| format!("{:x}", std::process::id()));
        if id.is_empty() || id.len() > 8 || !id.chars().all(|c| c.is_ascii_alphanumeric()) {
            return Err(io::Error::other(format!(
                "instance id {id:?}: 1-8 letters or digits"
            )));
        }
        let names: Vec<String> = sc.paths.iter().map(|p| p.name.clone()).collect();
        let topo = Topology::new(&id, &names);
        let dir = run_root().join(&id);
        if dir.exists() {
            return Err(io::Error::other(format!(
                "instance {id} exists ({}); `mpsched emu down {id}` first",
                dir.display()
            )));
        }
        std::fs::create_dir_all(&dir)?;
        let mut inst = Instance {
            topo,
            control: Arc::new(Control::default()),
            dir,
            thread: None,
            torn_down: false,
        };
        // Written before anything exists, so that a crash half-way is still cleaned by `down`.
        inst.write_state(false)?;
        inst.topo.create()?;
        let (tx, rx) = std::sync::mpsc::channel();
        let ns = inst.topo.ns(Role::Router);
        let sc2 = sc.clone();
        let control = inst.control.clone();
        inst.thread = Some(std::thread::spawn(move || {
            let fwd =
                sys::enter_netns(&ns).and_then(|_| forward::Forwarder::new(&sc2, seed, control));
            match fwd {
                Ok(f) => {
                    let _ = tx.send(Ok(()));
                    f.run(&STOP)
                }
                Err(e) => {
                    let msg = e.to_string();
                    let _ = tx.send(Err(e));
                    Err(io::Error::other(msg))
                }
            }
        }));
        rx.recv()
            .map_err(|_| io::Error::other("forwarding thread died"))??;
        inst.write_state(true)?;
        Ok(inst)
    }

    fn write_state(&self, ready: bool) -> io::Result<()> {
        let st = State {
            id: self.topo.id.clone(),
            pid: std::process::id() as i32,
            namespaces: self.topo.namespaces(),
            paths: self.topo.paths.clone(),
            ready,
        };
        let tmp = self.dir.join("state.json.tmp");
        std::fs::write(&tmp, serde_json::to_vec(&st)?)?;
        std::fs::rename(tmp, self.dir.join("state.json"))
    }

    pub fn dir(&self) -> &PathBuf {
        &self.dir
    }

    /// Blocks until SIGINT/SIGTERM or the forwarding thread fails.
    pub fn wait(&mut self) -> io::Result<()> {
        while !STOP.load(Ordering::SeqCst) {
            if self.thread.as_ref().is_some_and(|t| t.is_finished()) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        self.stop_thread()
    }

    fn stop_thread(&mut self) -> io::Result<()> {
        self.control.stop.store(true, Ordering::SeqCst);
        match self.thread.take() {
            Some(t) => t
                .join()
                .map_err(|_| io::Error::other("forwarding thread panicked"))?,
            None => Ok(()),
        }
    }

    /// Stops forwarding and removes the namespaces and the run directory.
    pub fn down(mut self) -> io::Result<()> {
        self.teardown()
    }

    fn teardown(&mut self) -> io::Result<()> {
        if self.torn_down {
            return Ok(());
        }
        self.torn_down = true;
        let res = self.stop_thread();
        let failures = self.topo.destroy();
        let _ = std::fs::remove_dir_all(&self.dir);
        if !failures.is_empty() {
            return Err(io::Error::other(failures.join("; ")));
        }
        res
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        if let Err(e) = self.teardown() {
            eprintln!("mpsched-emu: cleanup: {e}");
        }
    }
}

/// Every recorded instance.
pub fn list() -> Vec<State> {
    let Ok(entries) = std::fs::read_dir(run_root()) else {
        return vec![];
    };
    let mut out: Vec<State> = entries
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("state.json")).ok())
        .filter_map(|b| serde_json::from_slice(&b).ok())
        .collect();
    out.sort_by(|a, b| a.id.cmp(&b.id));
    out
}

/// Cleans up one recorded instance: stops its process (by the recorded PID, only if that PID
/// is still an emulator), deletes its namespaces and its run directory. Returns what it did.
pub fn down(st: &State) -> Result<String, String> {
    let mut did = Vec::new();
    let me = std::process::id() as i32;
    if st.pid != me && sys::is_emulator(st.pid) {
        // SAFETY: signalling a PID checked to be an emulator process.
        unsafe { libc::kill(st.pid, libc::SIGTERM) };
        for _ in 0..100 {
            if !sys::is_emulator(st.pid) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        if sys::is_emulator(st.pid) {
            // SAFETY: as above.
            unsafe { libc::kill(st.pid, libc::SIGKILL) };
        }
        did.push(format!("stopped pid {}", st.pid));
    }
    let existing: Vec<&String> = st
        .namespaces
        .iter()
        .filter(|n| std::path::Path::new(sys::NETNS_DIR).join(n).exists())
        .collect();
    let failures = topo::destroy_namespaces(&st.namespaces);
    if !existing.is_empty() {
        did.push(format!(
            "removed {}",
            existing
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let _ = std::fs::remove_dir_all(run_root().join(&st.id));
    if !failures.is_empty() {
        return Err(failures.join("; "));
    }
    if did.is_empty() {
        did.push("nothing left to remove".into());
    }
    Ok(format!("instance {}: {}", st.id, did.join("; ")))
}

/// Reads the scenario JSON the Python side resolved: either the scenario object itself or a
/// `run --json` result holding it under `scenario`.
pub fn parse_scenario(text: &str) -> Result<Scenario, String> {
    let v: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("scenario JSON: {e}"))?;
    let v = match v.get("scenario") {
        Some(inner) => inner.clone(),
        None => v,
    };
    let sc: Scenario = serde_json::from_value(v).map_err(|e| format!("scenario JSON: {e}"))?;
    if sc.paths.is_empty() {
        return Err("scenario JSON: no paths".into());
    }
    if sc.paths.len() > 8 {
        return Err("scenario JSON: the emulator supports at most 8 paths".into());
    }
    for p in &sc.paths {
        if p.forward.handover.is_some() || p.reverse.handover.is_some() {
            return Err(format!(
                "path {:?}: handover events are simulator-only; the emulator's links do not model them",
                p.name
            ));
        }
        if !p.cross.is_none() {
            return Err(format!(
                "path {:?}: competing traffic (cross) is simulator-only; the emulator has no cross flows",
                p.name
            ));
        }
    }
    Ok(sc)
}
