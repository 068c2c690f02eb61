//! A session: the subflows between a client proxy and the server proxy, and every application
//! connection multiplexed over them (Guo et al., MobiCom 2017, §5-6). One task owns all state
//! and runs the schedulers; IO tasks talk to it over a channel.
//!
//! The scheduler is asked for a record whenever a kernel subflow has window space, reading the
//! subflows through [`KernelView`] (from `TCP_INFO`). The kernel's ACKs are invisible to user
//! space, so the session polls every millisecond while it has work and lets each subflow hold
//! at most `slack` bytes beyond its window; `TCP_NOTSENT_LOWAT` bounds what the kernel takes.
//! Connections with data are served round robin, one record per turn (§5: "take bytes from
//! each meta buffer in a round robin manner").

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use mpsched_core::estimate::Estimator;
use mpsched_core::hist::LogHistogram;
use mpsched_core::packet::PathId;
use mpsched_core::sched::{build, Assignment, SchedCtx, SchedEvent, SubflowView};
use mpsched_core::time::Time;
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot, Semaphore};

use super::conn::{AppMsg, Conn};
use super::kernel::{tcp_info, KernelView};
use super::wire::{self, Frame, OwdSample, MAX_OWD};

/// Wall-clock nanoseconds: both proxies stamp records with it; a constant offset between the
/// two clocks cancels out of ΔOWD (§5).
pub fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

#[derive(Clone, Debug)]
pub struct SessionConfig {
    pub npaths: usize,
    /// Path names as the schedulers know them (`single:NAME`).
    pub path_names: Vec<String>,
    /// Payload bytes per DATA record (the meta segment size).
    pub record_size: u32,
    /// Per-connection meta send buffer, bytes.
    pub send_buffer: u64,
    /// Per-connection receive buffer advertised to the peer, bytes.
    pub recv_window: u64,
    /// Bytes a subflow may hold beyond its congestion window.
    pub slack: u64,
    /// Where `--stats` JSON lines go.
    pub stats: Option<mpsc::UnboundedSender<String>>,
    /// `--fresh-subflows`: the session serves one application connection and ends with it.
    pub single_conn: bool,
    /// Client `--early-data`: a connection's first bytes follow its OPEN on the same subflow
    /// instead of waiting a round trip for the OPENED (see [`Event::AppOpen`]).
    pub early_data: bool,
}

impl Default for SessionConfig {
    fn default() -> Self {
        SessionConfig {
            npaths: 2,
            path_names: vec!["p0".into(), "p1".into()],
            record_size: 1400,
            send_buffer: 4 << 20,
            recv_window: 8 << 20,
            slack: 2 * 1448,
            stats: None,
            single_conn: false,
            early_data: false,
        }
    }
}

/// A frame with its payload owned, as a subflow reader hands it over.
#[derive(Debug)]
pub enum InFrame {
    Data {
        conn: u32,
        dsn: u64,
        send_time: u64,
        bif: u32,
        payload: Vec<u8>,
        recv_time: u64,
    },
    Ack {
        conn: u32,
        data_ack: u64,
        rwnd: u64,
        sacks: Vec<(u64, u64)>,
        owd: Vec<OwdSample>,
    },
    Window {
        conn: u32,
        rwnd: u64,
    },
    Open {
        conn: u32,
        port: u16,
        host: String,
        sched: String,
    },
    Opened {
        conn: u32,
        status: u8,
    },
    Close {
        conn: u32,
        final_dsn: u64,
    },
    Reset {
        conn: u32,
    },
}

impl InFrame {
    pub fn from_wire(f: Frame<'_>, recv_time: u64) -> InFrame {
        match f {
            Frame::Data {
                conn,
                dsn,
                send_time,
                bif,
                payload,
            } => InFrame::Data {
                conn,
                dsn,
                send_time,
                bif,
                payload: payload.to_vec(),
                recv_time,
            },
            Frame::Ack {
                conn,
                data_ack,
                rwnd,
                sacks,
                owd,
            } => InFrame::Ack {
                conn,
                data_ack,
                rwnd,
                sacks,
                owd,
            },
            Frame::Window { conn, rwnd } => InFrame::Window { conn, rwnd },
            Frame::Open {
                conn,
                port,
                host,
                sched,
            } => InFrame::Open {
                conn,
                port,
                host: host.to_string(),
                sched: sched.to_string(),
            },
            Frame::Opened { conn, status } => InFrame::Opened { conn, status },
            Frame::Close { conn, final_dsn } => InFrame::Close { conn, final_dsn },
            Frame::Reset { conn, .. } => InFrame::Reset { conn },
        }
    }
}

/// The IO side of an application connection, handed to the session.
#[derive(Debug)]
pub struct AppIo {
    pub to_app: mpsc::UnboundedSender<AppMsg>,
    /// Bytes the application reader may still read (released as data-ACKs free the buffer).
    pub credit: Arc<Semaphore>,
}

/// What the upstream connector of the server reports.
pub type Upstream = Result<TcpStream, u8>;

#[derive(Debug)]
pub enum Event {
    SubflowUp {
        path: PathId,
        stream: Arc<TcpStream>,
        /// The path is a backup path (the client's `--path NAME=...,backup`; the server reads
        /// it from the subflow's hello).
        backup: bool,
    },
    Frames {
        path: PathId,
        frames: Vec<InFrame>,
    },
    SubflowDown {
        path: PathId,
        why: String,
    },
    /// Client: open a connection to `host:port` with scheduler `sched`; `reply` gets the
    /// server's SOCKS5 status.
    AppOpen {
        conn: u32,
        host: String,
        port: u16,
        sched: String,
        io: AppIo,
        reply: oneshot::Sender<u8>,
    },
    /// Server: the upstream connection for `conn` is connected and its IO started (or it
    /// failed with a SOCKS5 code).
    UpstreamReady {
        conn: u32,
        status: Result<(), u8>,
    },
    AppData {
        conn: u32,
        data: Vec<u8>,
        /// The chunk hint (Guo et al., MobiCom 2017, §5): these bytes end a chunk.
        end_of_chunk: bool,
    },
    AppEof {
        conn: u32,
    },
    AppWritten {
        conn: u32,
        n: u64,
    },
    AppFailed {
        conn: u32,
    },
    /// Reset every connection and end.
    Shutdown,
}

/// The application side of a server connection whose upstream is still connecting: the
/// writer's end of the channel the session already delivers into, and the reader's credit.
/// Bytes a client sent behind its OPEN (`--early-data`) wait in the channel, bounded by the
/// receive window the session advertises (they count as `app_pending`).
pub struct PendingApp {
    pub from_session: mpsc::UnboundedReceiver<AppMsg>,
    pub credit: Arc<Semaphore>,
}

/// How the session opens upstream connections (server side) — `None` on the client. It
/// connects `conn` to `host:port`, starts the socket's IO on the [`PendingApp`] and reports
/// [`Event::UpstreamReady`].
pub type Connector = Arc<dyn Fn(u32, String, u16, PendingApp, mpsc::Sender<Event>) + Send + Sync>;

struct Subflow {
    stream: Option<Arc<TcpStream>>,
    /// Encoded bytes the kernel has not taken yet.
    out: Vec<u8>,
    delivered_seen: u32,
}

pub struct Session {
    cfg: SessionConfig,
    subflows: Vec<Subflow>,
    views: Vec<KernelView>,
    est: Estimator,
    conns: BTreeMap<u32, Conn>,
    /// Client: replies owed to SOCKS handlers.
    pending_open: HashMap<u32, oneshot::Sender<u8>>,
    io: HashMap<u32, AppIo>,
    rr: u32,
    connector: Option<Connector>,
    tx: mpsc::Sender<Event>,
    /// Bytes committed to a kernel subflow beyond its congestion window, one sample per
    /// record: how far decisions lag per-segment scheduling.
    pub beyond_window: LogHistogram,
    penalties: Vec<PathId>,
    ignored_penalties: u64,
    scratch: Vec<u8>,
    started: HashMap<u32, Instant>,
    /// The session ever had a live subflow.
    was_up: bool,
    /// Connections opened so far.
    served: u64,
    /// The paths marked backup, for every connection's scheduler
    /// ([`mpsched_core::sched::Scheduler::set_backup`], as the simulator marks a scenario's).
    backup: Vec<bool>,
}

impl Session {
    pub fn new(
        cfg: SessionConfig,
        connector: Option<Connector>,
        tx: mpsc::Sender<Event>,
    ) -> Session {
        let n = cfg.npaths;
        Session {
            subflows: (0..n)
                .map(|_| Subflow {
                    stream: None,
                    out: Vec::new(),
                    delivered_seen: 0,
                })
                .collect(),
            views: (0..n)
                .map(|p| KernelView {
                    path: p as PathId,
                    alive: false,
                    info: Default::default(),
                    slack: cfg.slack,
                    busy_since: None,
                    silent: false,
                })
                .collect(),
            est: Estimator::new(n),
            conns: BTreeMap::new(),
            pending_open: HashMap::new(),
            io: HashMap::new(),
            rr: 0,
            connector,
            tx,
            beyond_window: LogHistogram::new(),
            penalties: Vec::new(),
            ignored_penalties: 0,
            scratch: Vec::new(),
            started: HashMap::new(),
            was_up: false,
            served: 0,
            backup: vec![false; n],
            cfg,
        }
    }

    /// Run until every subflow is gone or `Shutdown`.
    pub async fn run(mut self, mut rx: mpsc::Receiver<Event>) {
        let mut tick = tokio::time::interval(std::time::Duration::from_millis(1));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            let busy = !self.conns.is_empty() || self.subflows.iter().any(|s| !s.out.is_empty());
            tokio::select! {
                ev = rx.recv() => {
                    let Some(ev) = ev else { break };
                    if !self.handle(ev) { break; }
                    // Take what else is queued before deciding: decisions see the latest ACKs.
                    for _ in 0..256 {
                        match rx.try_recv() {
                            Ok(ev) => if !self.handle(ev) { self.finish(); return; },
                            Err(_) => break,
                        }
                    }
                }
                _ = tick.tick(), if busy => {}
            }
            self.pump();
            if self.was_up && self.views.iter().all(|v| !v.alive) {
                break;
            }
            if self.cfg.single_conn && self.served > 0 && self.conns.is_empty() {
                break;
            }
        }
        self.finish();
    }

    fn finish(&mut self) {
        for p in 0..self.subflows.len() {
            self.flush(p);
            if let Some(s) = self.subflows[p].stream.take() {
                let _ = s.shutdown_std();
            }
        }
        let ids: Vec<u32> = self.conns.keys().copied().collect();
        for id in ids {
            self.reset_conn(id, false);
        }
        for (_, reply) in self.pending_open.drain() {
            let _ = reply.send(1);
        }
        if let Some(s) = &self.cfg.stats {
            let h = &self.beyond_window;
            let _ = s.send(
                serde_json::json!({
                    "event": "session",
                    "records": h.count(),
                    "beyond_window_bytes": {
                        "p50": h.quantile(0.5), "p90": h.quantile(0.9),
                        "p99": h.quantile(0.99), "max": h.max(), "mean": h.mean(),
                    },
                    "ignored_penalties": self.ignored_penalties,
                })
                .to_string(),
            );
        }
    }

    /// Handle one event; `false` ends the session.
    fn handle(&mut self, ev: Event) -> bool {
        match ev {
            Event::SubflowUp {
                path,
                stream,
                backup,
            } => {
                let p = path as usize;
                if p < self.subflows.len() {
                    self.subflows[p].stream = Some(stream);
                    self.subflows[p].out.clear();
                    self.views[p].alive = true;
                    self.was_up = true;
                    // A mark arrives with the path's subflow, which may join after
                    // connections opened: they learn it too (marks are never taken back: a
                    // client proxy's paths keep theirs).
                    if backup && !self.backup[p] {
                        self.backup[p] = true;
                        for c in self.conns.values_mut() {
                            c.sched.set_backup(path);
                        }
                    }
                }
            }
            Event::SubflowDown { path, why: _ } => self.subflow_down(path),
            Event::Frames { path, frames } => {
                for f in frames {
                    self.on_frame(path, f);
                }
            }
            Event::AppOpen {
                conn,
                host,
                port,
                sched,
                io,
                reply,
            } => {
                let s = match build(&sched, &self.cfg.path_names, &vec![0.0; self.cfg.npaths]) {
                    Ok(s) => s,
                    Err(_) => {
                        let _ = reply.send(1);
                        return true;
                    }
                };
                let label = format!("{host}:{port}");
                let mut c = self.new_conn(conn, s, label);
                if self.cfg.early_data {
                    c.early_path = self.control_path();
                }
                self.conns.insert(conn, c);
                self.started.insert(conn, Instant::now());
                self.pending_open.insert(conn, reply);
                // The application's side exists from now on, not from the OPENED: the peer
                // may send data on one subflow before its OPENED on another is read here,
                // and those bytes (and a CLOSE) must wait in the channel, not vanish. Its
                // writer starts after the SOCKS reply, so nothing reaches the app early.
                self.io.insert(conn, io);
                let host = &host[..host.len().min(255)];
                self.send_control(&Frame::Open {
                    conn,
                    port,
                    host,
                    sched: &sched,
                });
            }
            Event::UpstreamReady { conn, status } => match status {
                Ok(()) => {
                    if let Some(c) = self.conns.get_mut(&conn) {
                        c.opened = true;
                        self.send_control(&Frame::Opened { conn, status: 0 });
                    }
                }
                Err(status) => {
                    if self.conns.contains_key(&conn) {
                        self.send_control(&Frame::Opened { conn, status });
                        // Early data it held goes with it; the client resets its side.
                        self.remove_conn(conn, "refused");
                    }
                }
            },
            Event::AppData {
                conn,
                data,
                end_of_chunk,
            } => {
                if let Some(c) = self.conns.get_mut(&conn) {
                    c.push_app(&data, end_of_chunk);
                }
            }
            Event::AppEof { conn } => {
                if let Some(c) = self.conns.get_mut(&conn) {
                    c.local_eof = true;
                    let final_dsn = c.meta.written();
                    c.close_sent = true;
                    // On every live subflow: a CLOSE must survive the loss of one.
                    self.send_control_all(&Frame::Close { conn, final_dsn });
                    self.maybe_done(conn);
                }
            }
            Event::AppWritten { conn, n } => {
                if let Some(c) = self.conns.get_mut(&conn) {
                    let before = c.rwnd();
                    c.app_pending = c.app_pending.saturating_sub(n);
                    // Announce a window that opened by a quarter of the buffer or from zero.
                    if before < c.recv_window / 4 || c.rwnd() - before >= c.recv_window / 4 {
                        c.ack_due = true;
                    }
                }
            }
            Event::AppFailed { conn } => self.reset_conn(conn, true),
            Event::Shutdown => return false,
        }
        true
    }

    fn new_conn(
        &mut self,
        id: u32,
        mut s: Box<dyn mpsched_core::sched::Scheduler>,
        label: String,
    ) -> Conn {
        self.served += 1;
        for (p, _) in self.backup.iter().enumerate().filter(|(_, &b)| b) {
            s.set_backup(p as PathId);
        }
        Conn::new(
            id,
            s,
            self.cfg.record_size,
            self.cfg.send_buffer,
            self.cfg.recv_window,
            self.cfg.npaths,
            label,
        )
    }

    fn on_frame(&mut self, path: PathId, f: InFrame) {
        match f {
            InFrame::Data {
                conn,
                dsn,
                send_time,
                bif,
                payload,
                recv_time,
            } => {
                let Some(c) = self.conns.get_mut(&conn) else {
                    return;
                };
                let mut out = Vec::new();
                c.reasm.on_data(dsn, &payload, &mut out);
                if c.owd.len() == MAX_OWD {
                    c.owd.pop_front();
                }
                c.owd.push_back(OwdSample {
                    path,
                    dsn,
                    send_time,
                    bif,
                    recv_time,
                });
                c.ack_due = true;
                if !out.is_empty() {
                    c.app_pending += out.len() as u64;
                    if let Some(io) = self.io.get(&conn) {
                        let _ = io.to_app.send(AppMsg::Data(out));
                    }
                }
                self.deliver_eof(conn);
            }
            InFrame::Ack {
                conn,
                data_ack,
                rwnd,
                sacks,
                owd,
            } => {
                for o in &owd {
                    if (o.path as usize) < self.cfg.npaths {
                        self.est.on_owd_sample(
                            o.path as usize,
                            Time(o.send_time),
                            o.bif as u64,
                            o.recv_time,
                        );
                    }
                }
                let Some(c) = self.conns.get_mut(&conn) else {
                    return;
                };
                let old = c.meta.data_ack();
                let freed = c.on_ack(data_ack, rwnd, &sacks);
                if freed > 0 {
                    if let Some(io) = self.io.get(&conn) {
                        io.credit.add_permits(freed as usize);
                    }
                }
                if c.meta.data_ack() > old {
                    let mut ctx = SchedCtx::with_subflows(
                        Time(now_ns()),
                        &self.views,
                        &mut c.meta,
                        &self.est,
                        &mut self.penalties,
                    );
                    let data_ack = ctx.meta().data_ack();
                    c.sched
                        .on_event(&mut ctx, &SchedEvent::DataAck { data_ack });
                    self.ignored_penalties += self.penalties.len() as u64;
                    self.penalties.clear();
                }
                self.maybe_done(conn);
            }
            InFrame::Window { conn, rwnd } => {
                if let Some(c) = self.conns.get_mut(&conn) {
                    let a = c.meta.data_ack();
                    c.meta.on_data_ack(a, rwnd);
                }
            }
            InFrame::Open {
                conn,
                port,
                host,
                sched,
            } => {
                if self.conns.contains_key(&conn) {
                    return;
                }
                let Some(connect) = self.connector.clone() else {
                    self.send_control(&Frame::Opened { conn, status: 2 });
                    return;
                };
                let Ok(s) = build(&sched, &self.cfg.path_names, &vec![0.0; self.cfg.npaths]) else {
                    self.send_control(&Frame::Opened { conn, status: 1 });
                    return;
                };
                // The connection exists from its OPEN, while the upstream connects: records a
                // client sent right behind the OPEN (`--early-data`) are reassembled and
                // acknowledged at once and wait in the application channel. It may not send
                // (`opened`) until the upstream is there.
                let c = self.new_conn(conn, s, format!("{host}:{port}"));
                self.conns.insert(conn, c);
                self.started.insert(conn, Instant::now());
                let (io, pending) = app_channels(self.cfg.send_buffer);
                self.io.insert(conn, io);
                connect(conn, host, port, pending, self.tx.clone());
            }
            InFrame::Opened { conn, status } => {
                let Some(reply) = self.pending_open.remove(&conn) else {
                    return;
                };
                let _ = reply.send(status);
                if status == 0 {
                    if let Some(c) = self.conns.get_mut(&conn) {
                        c.opened = true;
                        c.early_path = None;
                    }
                } else if self
                    .conns
                    .get(&conn)
                    .is_some_and(|c| c.early_path.is_some())
                {
                    // The application was told "succeeded" and may have sent: it sees a reset.
                    self.reset_conn(conn, false);
                } else {
                    self.conns.remove(&conn);
                    self.io.remove(&conn);
                }
            }
            InFrame::Close { conn, final_dsn } => {
                if let Some(c) = self.conns.get_mut(&conn) {
                    c.peer_final = Some(final_dsn);
                }
                self.deliver_eof(conn);
            }
            InFrame::Reset { conn } => self.reset_conn(conn, false),
        }
    }

    fn deliver_eof(&mut self, conn: u32) {
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        if !c.peer_eof_delivered && c.peer_final == Some(c.reasm.next_dsn()) {
            c.peer_eof_delivered = true;
            c.ack_due = true;
            if let Some(io) = self.io.get(&conn) {
                let _ = io.to_app.send(AppMsg::Eof);
            }
        }
        self.maybe_done(conn);
    }

    fn maybe_done(&mut self, conn: u32) {
        if self.conns.get(&conn).is_some_and(Conn::done) {
            // The peer may still need our last ACK.
            self.flush_ack(conn);
            self.remove_conn(conn, "closed");
        }
    }

    fn reset_conn(&mut self, conn: u32, tell_peer: bool) {
        if tell_peer {
            self.send_control_all(&Frame::Reset { conn, reason: 0 });
        }
        if let Some(io) = self.io.get(&conn) {
            let _ = io.to_app.send(AppMsg::Reset);
        }
        if let Some(reply) = self.pending_open.remove(&conn) {
            let _ = reply.send(1);
        }
        self.remove_conn(conn, "reset");
    }

    fn remove_conn(&mut self, conn: u32, how: &str) {
        let Some(c) = self.conns.remove(&conn) else {
            return;
        };
        self.io.remove(&conn);
        let dur = self
            .started
            .remove(&conn)
            .map(|t| t.elapsed().as_secs_f64());
        if let Some(s) = &self.cfg.stats {
            let _ = s.send(
                serde_json::json!({
                    "event": "conn",
                    "conn": conn,
                    "dst": c.label,
                    "end": how,
                    "scheduler": c.sched.name(),
                    "duration_s": dur,
                    "bytes_sent": c.meta.written(),
                    "bytes_received": c.reasm.next_dsn(),
                    "reinjected_bytes": c.meta.reinjected_bytes(),
                    "duplicate_bytes_received": c.reasm.duplicate_bytes,
                    "records_by_path": c.records_by_path,
                    "bytes_by_path": c.bytes_by_path,
                    "chunks_hinted": c.chunks_hinted,
                })
                .to_string(),
            );
        }
    }

    fn subflow_down(&mut self, path: PathId) {
        let p = path as usize;
        if p >= self.subflows.len() || !self.views[p].alive {
            return;
        }
        self.views[p].alive = false;
        self.subflows[p].stream = None;
        self.subflows[p].out.clear();
        // Whatever the dead subflow carried and the peer has not confirmed is sent again on
        // a live one (as MPTCP reinjects a failed subflow's data, v0.9x mptcp_reinject_data).
        for c in self.conns.values_mut() {
            for n in c.meta.base_seg()..c.meta.end_seg() {
                if let Some(r) = c.meta.seg(n) {
                    if r.sent_on(path) && !r.received {
                        c.failover.push_back(n);
                    }
                }
            }
        }
    }

    // ---- output ------------------------------------------------------------------------------

    fn refresh(&mut self, p: usize) {
        if let Some(s) = &self.subflows[p].stream {
            match tcp_info(s.as_ref()) {
                Ok(i) => self.views[p].update(i, Instant::now()),
                Err(_) => self.views[p].alive = false,
            }
        }
    }

    fn has_room(&self, p: usize) -> bool {
        self.subflows[p].out.is_empty() && self.views[p].has_cwnd_space()
    }

    /// Flush what the kernel refused before, then fill every subflow with room.
    fn pump(&mut self) {
        for p in 0..self.subflows.len() {
            self.flush(p);
            self.refresh(p);
            self.bandwidth_sample(p);
        }
        let ids: Vec<u32> = self.conns.keys().copied().collect();
        for id in &ids {
            if self.conns[id].ack_due {
                self.flush_ack(*id);
            }
        }
        if ids.is_empty() {
            return;
        }
        let now = Time(now_ns());
        loop {
            if !(0..self.views.len()).any(|p| self.has_room(p)) {
                return;
            }
            let mut progressed = false;
            // Round robin from the connection after the last one served.
            let start = ids.partition_point(|&i| i <= self.rr);
            for k in 0..ids.len() {
                let id = ids[(start + k) % ids.len()];
                if let Some(a) = self.decide(id, now) {
                    self.send_record(id, a, now);
                    self.rr = id;
                    progressed = true;
                    break;
                }
            }
            if !progressed {
                return;
            }
        }
    }

    fn decide(&mut self, id: u32, now: Time) -> Option<Assignment> {
        let c = self.conns.get_mut(&id)?;
        if !c.opened {
            // `--early-data` before the OPENED: the next segment on the OPEN's subflow only,
            // whatever the scheduler would pick; the scheduler takes over at the OPENED.
            let p = c.early_path?;
            let room = self.subflows[p].out.is_empty() && self.views[p].has_cwnd_space();
            if !self.views[p].alive || !room {
                return None;
            }
            let seg = c.meta.next_unsent().filter(|&n| c.meta.in_window(n))?;
            return Some(Assignment {
                path: p as PathId,
                seg,
            });
        }
        // Failover copies first, on the lowest-RTT live subflow with room.
        while let Some(&seg) = c.failover.front() {
            let live = c.meta.seg(seg).is_some_and(|r| !r.received);
            if !live {
                c.failover.pop_front();
                continue;
            }
            let best = (0..self.views.len())
                .filter(|&p| self.subflows[p].out.is_empty() && self.views[p].has_cwnd_space())
                .min_by_key(|&p| self.views[p].srtt());
            return best.map(|p| {
                c.failover.pop_front();
                Assignment {
                    path: p as PathId,
                    seg,
                }
            });
        }
        let mut ctx = SchedCtx::with_subflows(
            now,
            &self.views,
            &mut c.meta,
            &self.est,
            &mut self.penalties,
        );
        let a = c.sched.next(&mut ctx);
        // A kernel subflow cannot be made to halve its window from user space.
        self.ignored_penalties += self.penalties.len() as u64;
        self.penalties.clear();
        let any_dead = self.views.iter().any(|v| !v.alive);
        match a {
            Some(a)
                if (a.path as usize) < self.views.len() && self.views[a.path as usize].alive =>
            {
                let p = a.path as usize;
                let ok = self.subflows[p].out.is_empty()
                    && self.views[p].has_cwnd_space()
                    && c.meta.in_window(a.seg);
                ok.then_some(a)
            }
            // The scheduler waits for, or names, a subflow that failed: its plan cannot
            // complete, so the next unsent segment goes on the fastest live subflow with room
            // (as Linux MPTCP drops a failed subflow from scheduling).
            Some(_) | None if any_dead => {
                let seg = c.meta.next_unsent().filter(|&n| c.meta.in_window(n))?;
                let p = (0..self.views.len())
                    .filter(|&p| self.subflows[p].out.is_empty() && self.views[p].has_cwnd_space())
                    .min_by_key(|&p| self.views[p].srtt())?;
                Some(Assignment {
                    path: p as PathId,
                    seg,
                })
            }
            _ => None,
        }
    }

    fn send_record(&mut self, id: u32, a: Assignment, now: Time) {
        let p = a.path as usize;
        let Some(c) = self.conns.get_mut(&id) else {
            return;
        };
        let mut payload = std::mem::take(&mut self.scratch);
        let Some(dsn) = c.payload(a.seg, &mut payload) else {
            self.scratch = payload;
            return;
        };
        let bif = self.views[p].in_flight().min(u32::MAX as u64) as u32;
        c.meta.on_transmit(a.seg, a.path, now);
        c.records_by_path[p] += 1;
        c.bytes_by_path[p] += payload.len() as u64;
        let f = Frame::Data {
            conn: id,
            dsn,
            send_time: now.0,
            bif,
            payload: &payload,
        };
        wire::encode(&f, &mut self.subflows[p].out).expect("record fits a frame");
        self.scratch = payload;
        self.flush(p);
        self.refresh(p);
        self.beyond_window
            .record(self.views[p].committed_beyond_window());
    }

    /// §5's bandwidth EWMA from the kernel's delivery-rate samples (`tcpi_delivery_rate`,
    /// net/ipv4/tcp_rate.c), one per change of `tcpi_delivered`.
    fn bandwidth_sample(&mut self, p: usize) {
        let i = self.views[p].info;
        if !self.views[p].alive || i.delivered == self.subflows[p].delivered_seen {
            return;
        }
        self.subflows[p].delivered_seen = i.delivered;
        if i.delivery_rate > 0 {
            let app_limited = i.app_limited_bits & 1 != 0;
            self.est
                .on_bandwidth_sample(p, i.delivery_rate as f64 * 8.0, app_limited);
        }
    }

    fn flush(&mut self, p: usize) {
        let sf = &mut self.subflows[p];
        let Some(s) = &sf.stream else {
            return;
        };
        while !sf.out.is_empty() {
            match s.try_write(&sf.out) {
                Ok(n) => {
                    sf.out.drain(..n);
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
                Err(_) => {
                    // The reader sees the failure too and reports the subflow down.
                    return;
                }
            }
        }
    }

    /// The live subflow with the lowest smoothed RTT: control frames take the fast way.
    fn control_path(&self) -> Option<usize> {
        (0..self.views.len())
            .filter(|&p| self.views[p].alive)
            .min_by_key(|&p| (self.views[p].srtt(), p))
    }

    fn send_control(&mut self, f: &Frame<'_>) {
        if let Some(p) = self.control_path() {
            wire::encode(f, &mut self.subflows[p].out).expect("control frame fits");
            self.flush(p);
        }
    }

    fn send_control_all(&mut self, f: &Frame<'_>) {
        for p in 0..self.views.len() {
            if self.views[p].alive {
                wire::encode(f, &mut self.subflows[p].out).expect("control frame fits");
                self.flush(p);
            }
        }
    }

    fn flush_ack(&mut self, id: u32) {
        let Some(c) = self.conns.get_mut(&id) else {
            return;
        };
        c.ack_due = false;
        let f = Frame::Ack {
            conn: id,
            data_ack: c.reasm.next_dsn(),
            rwnd: c.rwnd(),
            sacks: c.reasm.sacks(),
            owd: c.owd.drain(..).collect(),
        };
        self.send_control(&f);
    }
}

/// Read frames from an authenticated subflow and hand them to the session.
pub async fn read_subflow(path: PathId, stream: Arc<TcpStream>, tx: mpsc::Sender<Event>) {
    let mut buf = vec![0u8; 2 * (wire::HEADER_LEN + wire::MAX_BODY)];
    let mut have = 0usize;
    let why = loop {
        if stream.readable().await.is_err() {
            break "readable failed".to_string();
        }
        match stream.try_read(&mut buf[have..]) {
            Ok(0) => break "closed by peer".to_string(),
            Ok(n) => have += n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            Err(e) => break e.to_string(),
        }
        let now = now_ns();
        let mut frames = Vec::new();
        let mut at = 0;
        let err = loop {
            match wire::decode(&buf[at..have]) {
                Ok(Some((f, used))) => {
                    frames.push(InFrame::from_wire(f, now));
                    at += used;
                }
                Ok(None) => break None,
                Err(e) => break Some(e),
            }
        };
        buf.copy_within(at..have, 0);
        have -= at;
        if !frames.is_empty() && tx.send(Event::Frames { path, frames }).await.is_err() {
            return;
        }
        if let Some(e) = err {
            break format!("bad frame: {e}");
        }
    };
    let _ = stream.shutdown_std();
    let _ = tx.send(Event::SubflowDown { path, why }).await;
}

pub(crate) trait ShutdownStd {
    fn shutdown_std(&self) -> std::io::Result<()>;
}

impl ShutdownStd for TcpStream {
    fn shutdown_std(&self) -> std::io::Result<()> {
        use std::os::fd::AsRawFd;
        // SAFETY: shutdown(2) on a descriptor this stream owns.
        let rc = unsafe { libc::shutdown(self.as_raw_fd(), libc::SHUT_RDWR) };
        if rc == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    }
}

/// Size of one application read (and so the most a record batch carries at once).
pub const APP_READ: usize = 64 * 1024;

/// Move an application socket's bytes into the session, within the connection's credit,
/// until the socket ends or `abort` is signalled (the writer resets the socket).
pub async fn read_app(
    conn: u32,
    mut rd: tokio::net::tcp::OwnedReadHalf,
    credit: Arc<Semaphore>,
    tx: mpsc::Sender<Event>,
    abort: Arc<tokio::sync::Notify>,
) {
    use tokio::io::AsyncReadExt;
    let mut buf = vec![0u8; APP_READ];
    loop {
        let permit = tokio::select! {
            p = credit.acquire_many(APP_READ as u32) => p,
            _ = abort.notified() => return,
        };
        let Ok(permit) = permit else {
            return;
        };
        permit.forget();
        let read = tokio::select! {
            r = rd.read(&mut buf) => r,
            _ = abort.notified() => return,
        };
        match read {
            Ok(0) => {
                let _ = tx.send(Event::AppEof { conn }).await;
                return;
            }
            Ok(n) => {
                credit.add_permits(APP_READ - n);
                let data = buf[..n].to_vec();
                let data = Event::AppData {
                    conn,
                    data,
                    end_of_chunk: false,
                };
                if tx.send(data).await.is_err() {
                    return;
                }
            }
            Err(_) => {
                let _ = tx.send(Event::AppFailed { conn }).await;
                return;
            }
        }
    }
}

/// Write what the session delivers to an application socket.
pub async fn write_app(
    conn: u32,
    mut wr: tokio::net::tcp::OwnedWriteHalf,
    mut rx: mpsc::UnboundedReceiver<AppMsg>,
    tx: mpsc::Sender<Event>,
    abort: Arc<tokio::sync::Notify>,
) {
    use tokio::io::AsyncWriteExt;
    while let Some(m) = rx.recv().await {
        match m {
            AppMsg::Data(d) => {
                if wr.write_all(&d).await.is_err() {
                    let _ = tx.send(Event::AppFailed { conn }).await;
                    return;
                }
                // The session may be gone (`--fresh-subflows` ends it once the connection is
                // done, which can be before its last bytes are written here): what is queued
                // is still the application's, so write on.
                let n = d.len() as u64;
                let _ = tx.send(Event::AppWritten { conn, n }).await;
            }
            AppMsg::Eof => {
                let _ = wr.shutdown().await;
            }
            AppMsg::Reset => {
                // The application must see a reset, not a clean end: SO_LINGER 0, no FIN from
                // this half (`forget`), and the reader lets go of the other half, so the
                // socket's close sends an RST.
                let _ =
                    socket2::SockRef::from(wr.as_ref()).set_linger(Some(std::time::Duration::ZERO));
                wr.forget();
                abort.notify_one();
                return;
            }
        }
    }
}

/// A new application connection's channels: the session's side, and the side its socket's
/// IO tasks take ([`start_app`]), with `send_buffer` bytes of read credit.
pub fn app_channels(send_buffer: u64) -> (AppIo, PendingApp) {
    let (to_app, from_session) = mpsc::unbounded_channel();
    let credit = Arc::new(Semaphore::new(send_buffer as usize));
    (
        AppIo {
            to_app,
            credit: credit.clone(),
        },
        PendingApp {
            from_session,
            credit,
        },
    )
}

/// The two halves of an application socket's IO, given the session's channels.
pub fn start_app(
    conn: u32,
    stream: TcpStream,
    credit: Arc<Semaphore>,
    from_session: mpsc::UnboundedReceiver<AppMsg>,
    tx: mpsc::Sender<Event>,
) {
    let _ = stream.set_nodelay(true);
    let (rd, wr) = stream.into_split();
    let abort = Arc::new(tokio::sync::Notify::new());
    tokio::spawn(read_app(conn, rd, credit, tx.clone(), abort.clone()));
    tokio::spawn(write_app(conn, wr, from_session, tx, abort));
}

/// A local address for messages.
pub fn addr_str(a: &SocketAddr) -> String {
    a.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A client session with one connection opened (OPEN sent, no OPENED yet); the app's
    /// receiving end.
    fn client_with_pending_open(
        conn: u32,
    ) -> (
        Session,
        mpsc::UnboundedReceiver<AppMsg>,
        oneshot::Receiver<u8>,
    ) {
        let (tx, _rx) = mpsc::channel(16);
        let mut s = Session::new(SessionConfig::default(), None, tx);
        let (io, app) = app_channels(1 << 20);
        let (reply, replied) = oneshot::channel();
        s.handle(Event::AppOpen {
            conn,
            host: "example.org".into(),
            port: 80,
            sched: "minrtt".into(),
            io,
            reply,
        });
        (s, app.from_session, replied)
    }

    fn frames(path: PathId, frames: Vec<InFrame>) -> Event {
        Event::Frames { path, frames }
    }

    fn data(conn: u32, dsn: u64, payload: &[u8]) -> InFrame {
        InFrame::Data {
            conn,
            dsn,
            send_time: 0,
            bif: 0,
            payload: payload.to_vec(),
            recv_time: 0,
        }
    }

    #[test]
    fn data_and_close_overtaking_the_opened_reach_the_app() {
        // The server sends OPENED on p0, then DATA and CLOSE on p1; p1's reader is faster.
        let (mut s, mut app, mut replied) = client_with_pending_open(1);
        s.handle(frames(
            1,
            vec![
                data(1, 0, b"hello"),
                InFrame::Close {
                    conn: 1,
                    final_dsn: 5,
                },
            ],
        ));
        s.handle(frames(0, vec![InFrame::Opened { conn: 1, status: 0 }]));
        assert_eq!(replied.try_recv(), Ok(0));
        match app.try_recv() {
            Ok(AppMsg::Data(d)) => assert_eq!(d, b"hello"),
            other => panic!("expected the data first, got {other:?}"),
        }
        assert!(matches!(app.try_recv(), Ok(AppMsg::Eof)));
    }

    /// What a test connector was handed, per connection.
    type Held = Arc<std::sync::Mutex<Vec<(u32, PendingApp)>>>;

    /// A server session whose connector keeps what it is handed instead of connecting.
    fn server_holding_upstreams() -> (Session, Held) {
        let held = Arc::new(std::sync::Mutex::new(Vec::new()));
        let h = held.clone();
        let connector: Connector = Arc::new(move |conn, _host, _port, pending, _tx| {
            h.lock().unwrap().push((conn, pending));
        });
        let (tx, _rx) = mpsc::channel(16);
        (
            Session::new(SessionConfig::default(), Some(connector), tx),
            held,
        )
    }

    fn open(conn: u32) -> InFrame {
        InFrame::Open {
            conn,
            port: 80,
            host: "example.org".into(),
            sched: "minrtt".into(),
        }
    }

    #[test]
    fn server_keeps_early_data_for_an_upstream_still_connecting() {
        // `--early-data`: the client's request follows its OPEN on the same subflow, before
        // the server's upstream has connected. It waits for the upstream, counted against the
        // receive window, and the connection may not send until the upstream is there.
        let (mut s, held) = server_holding_upstreams();
        s.handle(frames(
            0,
            vec![open(7), data(7, 0, b"GET / HTTP/1.1\r\n\r\n")],
        ));
        let mut held = held.lock().unwrap();
        let (conn, pending) = held.first_mut().expect("the connector was called");
        assert_eq!(*conn, 7);
        match pending.from_session.try_recv() {
            Ok(AppMsg::Data(d)) => assert_eq!(d, b"GET / HTTP/1.1\r\n\r\n"),
            other => panic!("expected the early request, got {other:?}"),
        }
        let c = &s.conns[&7];
        assert!(!c.opened);
        assert_eq!(c.rwnd(), c.recv_window - 18);
        s.handle(Event::UpstreamReady {
            conn: 7,
            status: Ok(()),
        });
        assert!(s.conns[&7].opened);
    }

    #[test]
    fn server_drops_a_connection_whose_upstream_failed() {
        let (mut s, held) = server_holding_upstreams();
        s.handle(frames(0, vec![open(3), data(3, 0, b"x")]));
        s.handle(Event::UpstreamReady {
            conn: 3,
            status: Err(5),
        });
        assert!(s.conns.is_empty() && s.io.is_empty());
        // The held request is dropped with the connection's channel.
        let (_, mut pending) = held.lock().unwrap().pop().unwrap();
        assert!(matches!(
            pending.from_session.try_recv(),
            Ok(AppMsg::Data(_))
        ));
        assert!(matches!(
            pending.from_session.try_recv(),
            Err(mpsc::error::TryRecvError::Disconnected)
        ));
    }

    #[test]
    fn refused_open_drops_the_apps_side() {
        let (mut s, mut app, mut replied) = client_with_pending_open(1);
        s.handle(frames(0, vec![InFrame::Opened { conn: 1, status: 5 }]));
        assert_eq!(replied.try_recv(), Ok(5));
        assert!(s.io.is_empty() && s.conns.is_empty());
        // The session let go of the sender: the app side sees the channel closed.
        assert!(matches!(
            app.try_recv(),
            Err(mpsc::error::TryRecvError::Disconnected)
        ));
    }
}
