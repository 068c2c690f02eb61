//! `mpsched kernel`: a scenario's workload over real Linux TCP or MPTCP on the emulated paths.
//!
//! One process does everything: the emulator runs as a thread in the router namespace, the
//! server is a thread in the server namespace, each download's client a thread in the client
//! namespace (`setns` moves one thread; sockets keep the namespace they were made in). So all
//! timestamps come from one CLOCK_MONOTONIC and the emulator's per-path counters line up with
//! the client's connect().
//!
//! Before each repetition the emulator is reset (empty queues, link time zero, counters cleared)
//! right before connect(), so outages and traces run from connect() as in the simulator.
//!
//! Per-path bytes and last-byte times come from the emulator, which sees every frame of every
//! path: `bytes_by_path` is the TCP payload the server put on each path, retransmissions
//! included (DESIGN.md's definition, as the simulator counts it); `new_bytes_by_path` counts
//! each byte of a subflow's sequence space once, as delivered to the client; the last-byte time
//! is when the last frame carrying payload reached the client.

use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, SocketAddrV4, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd};
use std::process::Command;
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use mpsched_sim::scenario::{Scenario, Workload};
use serde_json::{json, Map, Value};

use crate::emu::sys::{self, mono_ns};
use crate::emu::{Instance, Role, STOP};

pub mod transport;

pub const IPPROTO_MPTCP: libc::c_int = 262;
const PORT: u16 = 5201;
/// Request meaning "send until I close" (bulk).
const BULK: u64 = u64::MAX;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    Mptcp,
    /// Single-path TCP over the path with this index.
    Tcp(usize),
}

impl Mode {
    pub fn parse(text: &str, sc: &Scenario) -> Result<Mode, String> {
        if text == "mptcp" {
            return Ok(Mode::Mptcp);
        }
        if let Some(name) = text.strip_prefix("tcp:") {
            return sc
                .paths
                .iter()
                .position(|p| p.name == name)
                .map(Mode::Tcp)
                .ok_or_else(|| {
                    let names: Vec<&str> = sc.paths.iter().map(|p| p.name.as_str()).collect();
                    format!(
                        "--mode {text}: no path named {name:?} (paths: {})",
                        names.join(", ")
                    )
                });
        }
        Err(format!("--mode {text}: expected mptcp or tcp:PATH"))
    }

    pub fn label(&self, sc: &Scenario) -> String {
        match self {
            Mode::Mptcp => "linux-mptcp".into(),
            Mode::Tcp(i) => format!("linux-tcp:{}", sc.paths[*i].name),
        }
    }
}

fn stream_socket(mode: &Mode) -> io::Result<i32> {
    let proto = if *mode == Mode::Mptcp {
        IPPROTO_MPTCP
    } else {
        0
    };
    // SAFETY: socket() with constant arguments.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, proto) };
    if fd < 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(
            e.kind(),
            if proto == IPPROTO_MPTCP {
                format!("IPPROTO_MPTCP socket: {e} (kernel without MPTCP, or net.mptcp.enabled=0)")
            } else {
                format!("TCP socket: {e}")
            },
        ));
    }
    Ok(fd)
}

/// Sender and receiver congestion control per socket (TCP_CONGESTION), never the machine
/// default (bbr here).
fn set_cc(fd: i32, cc: &str) -> io::Result<()> {
    // SAFETY: cc's bytes are valid for their length.
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            cc.as_ptr() as *const libc::c_void,
            cc.len() as libc::socklen_t,
        )
    };
    if r < 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(
            e.kind(),
            format!("TCP_CONGESTION {cc}: {e}"),
        ));
    }
    Ok(())
}

/// `transport.recv_buffer` = SIZE: the client's buffer locked at SIZE (`SO_RCVBUFFORCE`, which
/// passes `rmem_max`; we are root), as an application's `SO_RCVBUF`, before connect() (the SYN's
/// window scale comes from it). Linux doubles it for overhead and offers its
/// `tcp_win_from_space` share as window: 50% of 2 x SIZE until data arrives, then the skbs'
/// payload/truesize ratio (`tcp_measure_rcv_mss`), about 62% on the emulator's links, so about
/// 1.24 x SIZE where the simulator offers SIZE. A `TCP_WINDOW_CLAMP` cannot pin it to SIZE:
/// Linux 6.18 resets the clamp from the buffer when the ratio changes, and MPTCP has no such
/// option (`mptcp_setsockopt_sol_tcp`).
fn fixed_recv_buffer(fd: i32, bytes: u64) -> io::Result<()> {
    let size = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX / 2);
    sys::setsockopt(
        fd,
        libc::SOL_SOCKET,
        libc::SO_RCVBUFFORCE,
        &size,
        "SO_RCVBUFFORCE",
    )
}

/// `transport.send_buffer_lock`: the server's send buffer fixed at `bytes`, as an application's
/// `SO_SNDBUF` fixes it (`SO_SNDBUFFORCE`, which passes `wmem_max`; we are root). Linux doubles
/// the value for overhead, so half of it is passed: `sk_sndbuf` is then `bytes`, the number the
/// simulator's locked buffer holds, and `SOCK_SNDBUF_LOCK` stops autotuning. On an MPTCP
/// socket `mptcp_setsockopt_sol_socket` passes both to every subflow.
fn fixed_send_buffer(fd: i32, bytes: u64) -> io::Result<()> {
    let size = libc::c_int::try_from(bytes / 2).unwrap_or(libc::c_int::MAX / 2);
    sys::setsockopt(
        fd,
        libc::SOL_SOCKET,
        libc::SO_SNDBUFFORCE,
        &size,
        "SO_SNDBUFFORCE",
    )
}

/// Socket options of the server's accepted connections.
#[derive(Clone, Copy)]
struct ServerOpts {
    nodelay: bool,
    send_buffer_lock: Option<u64>,
}

fn sockaddr(a: SocketAddrV4) -> libc::sockaddr_in {
    libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: a.port().to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(*a.ip()).to_be(),
        },
        sin_zero: [0; 8],
    }
}

fn sys_check(r: libc::c_int, what: &str) -> io::Result<()> {
    if r < 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("{what}: {e}")));
    }
    Ok(())
}

/// The server: accepts connections forever; per request (8-byte size) it records when the
/// request arrived and sends that many bytes (or, for [`BULK`], until the client closes).
/// What the server thread reports: a request read (its time, ns) or a connection it saw end.
enum Served {
    Request(u64),
    Closed,
}

/// Accepts downloads; each connection is served on a thread of its own, so that a previous
/// connection whose close has not reached the server yet never delays the next one's request
/// (with one thread, the next request waited in the accept queue until the previous FIN came,
/// up to an RTO late when the links' restart between repetitions dropped it).
fn serve(listener: TcpListener, cc: String, opts: ServerOpts, events: mpsc::Sender<Served>) {
    for conn in listener.incoming() {
        let Ok(mut conn) = conn else { continue };
        if STOP.load(Ordering::Relaxed) {
            return;
        }
        let _ = set_cc(conn.as_raw_fd(), &cc);
        if opts.nodelay && conn.set_nodelay(true).is_err() {
            continue;
        }
        if let Some(bytes) = opts.send_buffer_lock {
            if fixed_send_buffer(conn.as_raw_fd(), bytes).is_err() {
                continue;
            }
        }
        let events = events.clone();
        std::thread::spawn(move || {
            let chunk = vec![0x5au8; 1 << 16];
            let mut req = [0u8; 8];
            while conn.read_exact(&mut req).is_ok() {
                let _ = events.send(Served::Request(mono_ns()));
                let mut left = u64::from_be_bytes(req);
                while left > 0 {
                    let n = left.min(chunk.len() as u64) as usize;
                    if conn.write_all(&chunk[..n]).is_err() {
                        break;
                    }
                    if left != BULK {
                        left -= n as u64;
                    }
                }
            }
            let _ = events.send(Served::Closed);
        });
    }
}

/// Prepares the namespaces for the kernel run: MPTCP limits and subflow endpoints, and the
/// transport's sysctls and route attributes ([`transport::plan`]).
fn configure(
    inst: &Instance,
    sc: &Scenario,
    mode: &Mode,
    plan: &transport::Plan,
) -> io::Result<()> {
    let t = &inst.topo;
    transport::apply(t, plan)?;
    for role in [Role::Client, Role::Server] {
        sys::run(
            Command::new("ip")
                .args(["netns", "exec", &t.ns(role), "sysctl", "-qw"])
                .arg("net.mptcp.enabled=1"),
        )?;
        if *mode == Mode::Mptcp {
            sys::run(Command::new("ip").args([
                "-n",
                &t.ns(role),
                "mptcp",
                "limits",
                "set",
                "subflow",
                "8",
                "add_addr_accepted",
                "8",
            ]))?;
        }
    }
    if *mode == Mode::Mptcp {
        for (i, path) in sc.paths.iter().enumerate() {
            // Path 0 carries the initial subflow, the others join as `subflow` endpoints. A
            // scenario's `backup = true` is the endpoint's backup flag (RFC 8684 §3.3.8); on
            // path 0 an endpoint with that flag alone marks the initial subflow (the kernel
            // reads it when connecting: `mptcp_pm_is_backup`, net/mptcp/pm.c).
            let mut flags: Vec<&str> = Vec::new();
            if i > 0 {
                flags.push("subflow");
            }
            if path.backup {
                flags.push("backup");
            }
            if flags.is_empty() {
                continue;
            }
            sys::run(
                Command::new("ip")
                    .args(["-n", &t.ns(Role::Client), "mptcp", "endpoint", "add"])
                    .args([&t.client_addr(i), "dev", &format!("c{i}")])
                    .args(&flags),
            )?;
        }
    }
    Ok(())
}

/// One repetition's measured times, ns (CLOCK_MONOTONIC).
struct ClientTimes {
    connect_start: u64,
    established: u64,
    chunk_ends: Vec<u64>,
    chunk_starts: Vec<u64>,
    bytes: u64,
}

fn client(
    sc: &Scenario,
    mode: &Mode,
    recv_buffer: Option<u64>,
    topo_client: (String, SocketAddrV4, Option<SocketAddrV4>),
) -> io::Result<ClientTimes> {
    let (ns, server, bind) = topo_client;
    sys::enter_netns(&ns)?;
    let fd = stream_socket(mode)?;
    // SAFETY: fd is a fresh socket we own from here on.
    let stream_owner = unsafe { TcpStream::from_raw_fd(fd) };
    set_cc(fd, &sc.transport.cc)?;
    if let Some(bytes) = recv_buffer {
        fixed_recv_buffer(fd, bytes)?;
    }
    if let Some(b) = bind {
        let sa = sockaddr(b);
        // SAFETY: sa is a valid sockaddr_in.
        sys_check(
            unsafe {
                libc::bind(
                    fd,
                    &sa as *const _ as *const libc::sockaddr,
                    std::mem::size_of_val(&sa) as u32,
                )
            },
            "bind",
        )?;
    }
    let sa = sockaddr(server);
    let connect_start = mono_ns();
    // SAFETY: sa is a valid sockaddr_in.
    sys_check(
        unsafe {
            libc::connect(
                fd,
                &sa as *const _ as *const libc::sockaddr,
                std::mem::size_of_val(&sa) as u32,
            )
        },
        "connect",
    )?;
    let established = mono_ns();
    let mut s = stream_owner;
    s.set_nodelay(true)?;
    let mut buf = vec![0u8; 1 << 16];
    let mut times = ClientTimes {
        connect_start,
        established,
        chunk_ends: vec![],
        chunk_starts: vec![],
        bytes: 0,
    };
    let (sizes, think, bulk) = match &sc.workload {
        Workload::Chunk { size_bytes } => (vec![*size_bytes], 0.0, None),
        Workload::Chunks {
            size_bytes,
            count,
            think_s,
            ..
        } => (vec![*size_bytes; *count as usize], *think_s, None),
        Workload::Bulk { duration_s } => (vec![BULK], 0.0, Some(*duration_s)),
        Workload::Stream { .. } => {
            return Err(io::Error::other(
                "the stream workload is simulator-only for now (no kernel runner)",
            ))
        }
    };
    for (k, size) in sizes.iter().enumerate() {
        if k > 0 && think > 0.0 {
            std::thread::sleep(Duration::from_secs_f64(think));
        }
        times.chunk_starts.push(mono_ns());
        s.write_all(&size.to_be_bytes())?;
        let mut left = *size;
        let stop_at = bulk.map(|d| mono_ns() + (d * 1e9) as u64);
        while left > 0 {
            if stop_at.is_some_and(|t| mono_ns() >= t) || STOP.load(Ordering::Relaxed) {
                break;
            }
            let want = if bulk.is_some() {
                buf.len()
            } else {
                left.min(buf.len() as u64) as usize
            };
            let n = s.read(&mut buf[..want])?;
            if n == 0 {
                return Err(io::Error::other("server closed the connection early"));
            }
            times.bytes += n as u64;
            if bulk.is_none() {
                left -= n as u64;
            }
        }
        times.chunk_ends.push(mono_ns());
    }
    Ok(times)
}

/// Runs `reps` downloads (fresh connection each) and returns one JSON object per repetition,
/// with the keys of `mpsched run --json` where they mean the same.
pub fn run(
    sc: &Scenario,
    mode: &Mode,
    plan: &transport::Plan,
    reps: u32,
    seed: u64,
    id: Option<&str>,
    progress: &dyn Fn(&str),
) -> io::Result<Vec<Value>> {
    if let Mode::Tcp(i) = mode {
        if *i >= sc.paths.len() {
            return Err(io::Error::other("path index out of range"));
        }
    }
    let inst = Instance::up(sc, id, seed)?;
    configure(&inst, sc, mode, plan)?;
    let t = inst.topo.clone();
    let (tx, rx) = mpsc::channel();
    let cc = sc.transport.cc.clone();
    let mode2 = mode.clone();
    let listener = crate::emu::topo::in_netns(&t.ns(Role::Server), move || {
        let fd = stream_socket(&mode2)?;
        // SAFETY: fd is ours; wrapped so that it is closed on every path.
        let l = unsafe { TcpListener::from_raw_fd(fd) };
        let one: libc::c_int = 1;
        sys::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_REUSEADDR,
            &one,
            "SO_REUSEADDR",
        )?;
        set_cc(fd, &cc)?;
        let sa = sockaddr(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, PORT));
        // SAFETY: sa is a valid sockaddr_in.
        sys_check(
            unsafe {
                libc::bind(
                    fd,
                    &sa as *const _ as *const libc::sockaddr,
                    std::mem::size_of_val(&sa) as u32,
                )
            },
            "bind server",
        )?;
        // SAFETY: fd is a bound stream socket.
        sys_check(unsafe { libc::listen(fd, 16) }, "listen")?;
        Ok(l)
    })?;
    let cc = sc.transport.cc.clone();
    // Detached: the server thread ends with the process (its namespace is deleted on drop).
    let opts = ServerOpts {
        nodelay: plan.nodelay,
        send_buffer_lock: plan.send_buffer_lock,
    };
    std::thread::spawn(move || serve(listener, cc, opts, tx));

    let (server_path, bind) = match mode {
        Mode::Mptcp => (0, None),
        Mode::Tcp(i) => (
            *i,
            Some(SocketAddrV4::new(t.client_addr(*i).parse().unwrap(), 0)),
        ),
    };
    let server = SocketAddrV4::new(t.server_addr(server_path).parse().unwrap(), PORT);
    let mut out = Vec::new();
    for rep in 0..reps {
        if STOP.load(Ordering::SeqCst) {
            return Err(io::Error::new(io::ErrorKind::Interrupted, "interrupted"));
        }
        while rx.try_recv().is_ok() {}
        let epoch = inst.control.reset();
        let sc2 = sc.clone();
        let mode2 = mode.clone();
        let ns = t.ns(Role::Client);
        let rcvbuf = plan.recv_buffer;
        let times = std::thread::spawn(move || client(&sc2, &mode2, rcvbuf, (ns, server, bind)))
            .join()
            .map_err(|_| io::Error::other("client panicked"))??;
        std::thread::sleep(Duration::from_millis(20));
        let snap = inst.control.snapshot();
        let mut requests = Vec::new();
        // The client has closed; wait until the server has seen it (its FIN arrived), then
        // one round trip of the slowest path more for the server's FIN and the last ACK, so
        // that restarting the links drops nothing of this connection.
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(Served::Request(t)) => requests.push(t),
                Ok(Served::Closed) | Err(_) => break,
            }
        }
        // MPTCP closes its subflows after the connection-level close; wait (at most 3 s)
        // until none of this download's sockets is left but TIME_WAIT, or the next
        // repetition's links would still carry this one's FINs.
        let deadline = Instant::now() + Duration::from_secs(3);
        while Instant::now() < deadline && open_sockets(&t.ns(Role::Client)).unwrap_or(0) > 0 {
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_secs_f64(settle_s(sc)));
        let v = result(sc, mode, &times, &requests, epoch, &snap);
        progress(&format!(
            "{} rep {}/{}: {:.3} s",
            mode.label(sc),
            rep + 1,
            reps,
            v["download_time_s"].as_f64().unwrap_or(f64::NAN)
        ));
        out.push(v);
    }
    inst.down()?;
    Ok(out)
}

/// TCP sockets (MPTCP subflows included) in namespace `ns` to or from the server's port that
/// are neither listening nor in TIME_WAIT (`/proc/thread-self/net/tcp`: the worker thread's
/// namespace).
fn open_sockets(ns: &str) -> io::Result<usize> {
    crate::emu::topo::in_netns(ns, || {
        let text = std::fs::read_to_string("/proc/thread-self/net/tcp")?;
        let port = format!(":{PORT:04X}");
        Ok(text
            .lines()
            .skip(1)
            .filter(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                f.len() > 3
                    && (f[1].ends_with(&port) || f[2].ends_with(&port))
                    && f[3] != "06"
                    && f[3] != "0A"
            })
            .count())
    })
}

/// One round trip of the slowest path (queues empty) plus 20 ms, at least 100 ms.
fn settle_s(sc: &Scenario) -> f64 {
    let rtt = sc
        .paths
        .iter()
        .map(|p| p.forward.delay_s + p.reverse.delay_s)
        .fold(0.0, f64::max);
    (rtt + 0.020).max(0.100)
}

fn result(
    sc: &Scenario,
    mode: &Mode,
    t: &ClientTimes,
    requests: &[u64],
    epoch: u64,
    snap: &crate::emu::Snapshot,
) -> Value {
    let secs = |ns: u64| ns as f64 / 1e9;
    let mut bytes = Map::new();
    let mut sent = Map::new();
    let mut last = Map::new();
    let mut drops = Map::new();
    let mut segment = Map::new();
    let mut late_max: u64 = 0;
    let mut host_drops = 0;
    let mut lasts = Vec::new();
    let connect_rel = t.connect_start.saturating_sub(epoch);
    for (p, (fwd, rev)) in sc.paths.iter().zip(&snap.paths) {
        bytes.insert(p.name.clone(), json!(fwd.payload_bytes_in));
        segment.insert(p.name.clone(), json!(fwd.max_payload_in));
        sent.insert(p.name.clone(), json!(fwd.new_payload_bytes));
        drops.insert(
            p.name.clone(),
            json!(fwd.dropped_queue + fwd.dropped_loss + fwd.dropped_outage),
        );
        let l = fwd
            .last_payload_ns
            .map(|ns| secs(ns.saturating_sub(connect_rel)));
        if let Some(x) = l {
            if fwd.new_payload_bytes > 0 {
                lasts.push(x);
            }
        }
        last.insert(p.name.clone(), json!(l));
        late_max = late_max.max(fwd.late_ns_max).max(rev.late_ns_max);
        host_drops += fwd.dropped_host + rev.dropped_host + fwd.oversize + rev.oversize;
    }
    let gap = match (
        lasts.iter().cloned().reduce(f64::min),
        lasts.iter().cloned().reduce(f64::max),
    ) {
        (Some(lo), Some(hi)) => hi - lo,
        _ => 0.0,
    };
    let end = t.chunk_ends.last().copied().unwrap_or(t.connect_start);
    let chunk_times: Vec<f64> = t
        .chunk_starts
        .iter()
        .zip(&t.chunk_ends)
        .enumerate()
        .map(|(k, (&s, &e))| secs(e - if k == 0 { t.connect_start } else { s }))
        .collect();
    let duration = secs(end - t.connect_start);
    json!({
        "scheduler": mode.label(sc),
        "download_time_s": duration,
        "server_download_time_s": requests.first().map(|&r| secs(end.saturating_sub(r))),
        "handshake_s": secs(t.established - t.connect_start),
        "chunk_times_s": chunk_times,
        "chunks_completed": t.chunk_ends.len(),
        "delivered_bytes": t.bytes,
        "goodput_bps": if duration > 0.0 { t.bytes as f64 * 8.0 / duration } else { 0.0 },
        "bytes_by_path": bytes,
        "new_bytes_by_path": sent,
        "last_byte_s_by_path": last,
        "completion_gap_s": gap,
        "drops_by_path": drops,
        "max_segment_bytes_by_path": segment,
        "emulator": {"late_max_s": secs(late_max), "host_drops": host_drops},
    })
}
