//! The client proxy: SOCKS5 in front, one kernel TCP subflow per path to the server proxy
//! behind (Guo et al., MobiCom 2017, §6), shared by every application connection unless
//! `--fresh-subflows`.

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mpsched_core::sched::backup::with_marked_paths;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::{mpsc, oneshot, Mutex, Semaphore};

use super::auth::{nonce, Psk};
use super::conn::AppMsg;
use super::handshake;
use super::kernel::SocketOpts;
use super::policy::Policy;
use super::session::{
    app_channels, read_subflow, start_app, Event, Session, SessionConfig, ShutdownStd,
};
use super::socks;
use super::wire::{Hello, HELLO_BACKUP, HELLO_FRESH};

/// How a path's subflow leaves this host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Bind {
    /// `SO_BINDTODEVICE`.
    Iface(String),
    /// Bind to this source address.
    Src(IpAddr),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathSpec {
    pub name: String,
    pub bind: Bind,
    /// Marked `,backup` (as Linux's `ip mptcp endpoint ... backup`): the `backup` scheduler
    /// sends on it only while every other path is in RTO loss.
    pub backup: bool,
}

impl std::str::FromStr for PathSpec {
    type Err = String;
    /// `NAME=IFACE` or `NAME=SRCIP`, either followed by `,backup`.
    fn from_str(s: &str) -> Result<PathSpec, String> {
        let (name, v) = s
            .split_once('=')
            .filter(|(n, v)| !n.is_empty() && !v.is_empty())
            .ok_or_else(|| format!("--path \"{s}\": expected NAME=IFACE or NAME=SRCIP[,backup]"))?;
        let (v, backup) = match v.split_once(',') {
            None => (v, false),
            Some((v, "backup")) if !v.is_empty() => (v, true),
            Some((_, flag)) => {
                return Err(format!(
                    "--path \"{s}\": unknown flag \"{flag}\" (the one flag is \"backup\")"
                ))
            }
        };
        let bind = match v.parse::<IpAddr>() {
            Ok(ip) => Bind::Src(ip),
            Err(_) if v.len() < libc::IFNAMSIZ && !v.contains('/') => Bind::Iface(v.to_string()),
            Err(_) => {
                return Err(format!(
                    "--path \"{s}\": \"{v}\" is no interface name or address"
                ))
            }
        };
        Ok(PathSpec {
            name: name.to_string(),
            bind,
            backup,
        })
    }
}

#[derive(Clone, Debug)]
pub struct ClientConfig {
    pub server: SocketAddr,
    pub paths: Vec<PathSpec>,
    pub socks: SocketAddr,
    pub psk: Psk,
    pub policy: Policy,
    pub fresh_subflows: bool,
    pub sock: SocketOpts,
    pub session: SessionConfig,
    /// Set once a full handshake has checked the server's proof: from then on subflows send
    /// their first records behind the client's proof ([`handshake::client_prove`]).
    pub key_verified: Arc<AtomicBool>,
}

/// A connected subflow, and the server proof still to read when its handshake was pipelined.
pub type Connected = (TcpStream, Option<handshake::ServerProof>);

/// Open and authenticate one subflow (pipelined once the key is known to be right: the
/// server's proof is then left for the reader, see [`keep_subflow`]).
pub async fn connect_subflow(
    cfg: &ClientConfig,
    path: usize,
    session: u64,
) -> Result<Connected, String> {
    let spec = &cfg.paths[path];
    let sock = if cfg.server.is_ipv4() {
        TcpSocket::new_v4()
    } else {
        TcpSocket::new_v6()
    }
    .map_err(|e| format!("path {}: socket: {e}", spec.name))?;
    match &spec.bind {
        Bind::Iface(i) => sock
            .bind_device(Some(i.as_bytes()))
            .map_err(|e| format!("path {}: cannot bind to interface {i}: {e}", spec.name))?,
        Bind::Src(ip) => sock
            .bind(SocketAddr::new(*ip, 0))
            .map_err(|e| format!("path {}: cannot bind to {ip}: {e}", spec.name))?,
    }
    cfg.sock
        .apply(&sock)
        .map_err(|e| format!("path {}: {e}", spec.name))?;
    let mut s = tokio::time::timeout(Duration::from_secs(10), sock.connect(cfg.server))
        .await
        .map_err(|_| format!("path {}: connecting to {} timed out", spec.name, cfg.server))?
        .map_err(|e| format!("path {}: cannot connect to {}: {e}", spec.name, cfg.server))?;
    let hello = Hello {
        flags: if cfg.fresh_subflows { HELLO_FRESH } else { 0 }
            | if spec.backup { HELLO_BACKUP } else { 0 },
        path: path as u8,
        npaths: cfg.paths.len() as u8,
        session,
        nonce: nonce(),
    };
    let pipelined = cfg.key_verified.load(Ordering::Relaxed);
    let timed_out = |_| format!("path {}: authentication timed out", spec.name);
    let failed = |e| format!("path {}: {e}", spec.name);
    let pending = tokio::time::timeout(
        Duration::from_secs(10),
        handshake::client_prove(&mut s, &cfg.psk, &hello),
    )
    .await
    .map_err(timed_out)?
    .map_err(failed)?;
    if pipelined {
        return Ok((s, Some(pending)));
    }
    tokio::time::timeout(Duration::from_secs(10), pending.verify(&s))
        .await
        .map_err(timed_out)?
        .map_err(failed)?;
    cfg.key_verified.store(true, Ordering::Relaxed);
    Ok((s, None))
}

/// Start a session: every path connects at once and the session starts as soon as the first
/// is authenticated; the others join when they are up (as Linux MPTCP opens its second subflow
/// without waiting, so a fresh session costs one path's handshake, not the sum). The first
/// error when none comes up.
pub async fn open_session(cfg: &ClientConfig) -> Result<mpsc::Sender<Event>, String> {
    let id = u64::from_be_bytes(nonce()[..8].try_into().expect("8 bytes"));
    let (tx, rx) = mpsc::channel(1024);
    let mut scfg = cfg.session.clone();
    scfg.single_conn = cfg.fresh_subflows;
    let (done_tx, mut done_rx) = mpsc::channel::<Result<(), String>>(cfg.paths.len().max(1));
    for p in 0..cfg.paths.len() {
        let (cfg, tx, done_tx) = (cfg.clone(), tx.clone(), done_tx.clone());
        tokio::spawn(async move {
            match connect_subflow(&cfg, p, id).await {
                Ok(s) => keep_subflow(cfg, p, id, Some(s), tx, Some(done_tx)).await,
                Err(e) => {
                    let _ = done_tx.send(Err(e)).await;
                    // Dropped here, or open_session would wait for it forever when every
                    // path fails.
                    drop(done_tx);
                    keep_subflow(cfg, p, id, None, tx, None).await
                }
            }
        });
    }
    drop(done_tx);
    let mut first_err = None;
    let mut up = false;
    while let Some(r) = done_rx.recv().await {
        match r {
            Ok(()) => {
                up = true;
                break;
            }
            Err(e) => {
                eprintln!("mpsched-proxy: warning: {e} (retrying every {RECONNECT:?})");
                first_err.get_or_insert(e);
            }
        }
    }
    if !up {
        return Err(first_err.unwrap_or_else(|| "no paths".into()));
    }
    tokio::spawn(Session::new(scfg, None, tx.clone()).run(rx));
    Ok(tx)
}

/// How long a failed path waits before it connects again.
pub const RECONNECT: Duration = Duration::from_secs(1);

/// Keep path `p`'s subflow up for the session's lifetime: run it, and when it fails, connect
/// again (warm sessions outlive a path's outage).
async fn keep_subflow(
    cfg: ClientConfig,
    p: usize,
    session: u64,
    mut s: Option<Connected>,
    tx: mpsc::Sender<Event>,
    mut ready: Option<mpsc::Sender<Result<(), String>>>,
) {
    loop {
        if let Some((stream, pending)) = s.take() {
            let stream = Arc::new(stream);
            let up = Event::SubflowUp {
                path: p as u8,
                stream: stream.clone(),
                backup: cfg.paths[p].backup,
            };
            if tx.send(up).await.is_err() {
                return;
            }
            // Only now may the session be used: its first subflow is queued before any OPEN.
            if let Some(r) = ready.take() {
                let _ = r.send(Ok(())).await;
            }
            // A pipelined subflow was usable at once (the session may have queued records on
            // it); the server's proof comes before any record it reads.
            let checked = match pending {
                Some(proof) => {
                    let got = tokio::time::timeout(
                        Duration::from_secs(10),
                        handshake::read_proof(&stream),
                    )
                    .await
                    .unwrap_or_else(|_| Err("authentication timed out".into()));
                    let name = &cfg.paths[p].name;
                    match got.map(|g| proof.check(&g)) {
                        Ok(Ok(())) => Ok(()),
                        // A proof for another key: the next subflow authenticates in full
                        // again (a server restarted with another key then gets the one-line
                        // error of a full handshake).
                        Ok(Err(e)) => {
                            cfg.key_verified.store(false, Ordering::Relaxed);
                            Err(format!("path {name}: {e}"))
                        }
                        // Closed before its proof came (a fresh session that ended first).
                        Err(e) => Err(format!("path {name}: {e}")),
                    }
                }
                None => Ok(()),
            };
            match checked {
                Ok(()) => read_subflow(p as u8, stream, tx.clone()).await,
                Err(why) => {
                    let _ = stream.shutdown_std();
                    if tx.is_closed() {
                        return; // the session ended before the proof came: nothing lost
                    }
                    eprintln!("mpsched-proxy: {why}");
                    let down = Event::SubflowDown { path: p as u8, why };
                    if tx.send(down).await.is_err() {
                        return;
                    }
                }
            }
        }
        tokio::time::sleep(RECONNECT).await;
        if tx.is_closed() {
            return;
        }
        s = connect_subflow(&cfg, p, session).await.ok();
    }
}

/// The scheduler name both proxies build: `backup` alone takes the paths marked `,backup`
/// (as the simulator takes a scenario's `backup = true` marks), and the client's path names
/// in `single:NAME` and `backup:NAME[,NAME]` become the numbers the server knows them by
/// (`p0`, `p1`, ...). A name it cannot resolve passes through, for `build` to refuse.
pub fn server_sched_name(sched: &str, paths: &[PathSpec]) -> String {
    let number = |name: &str| {
        paths
            .iter()
            .position(|p| p.name == name)
            .map_or_else(|| name.to_string(), |i| format!("p{i}"))
    };
    let sched = with_marked_paths(
        sched,
        paths.iter().filter(|p| p.backup).map(|p| p.name.as_str()),
    );
    match sched.split_once(':') {
        Some(("single", name)) => format!("single:{}", number(name)),
        Some(("backup", names)) => {
            let numbered: Vec<String> = names.split(',').map(number).collect();
            format!("backup:{}", numbered.join(","))
        }
        _ => sched,
    }
}

pub struct Client {
    cfg: ClientConfig,
    shared: Mutex<Option<mpsc::Sender<Event>>>,
    next_conn: AtomicU32,
}

impl Client {
    pub fn new(cfg: ClientConfig) -> Arc<Client> {
        Arc::new(Client {
            cfg,
            shared: Mutex::new(None),
            next_conn: AtomicU32::new(1),
        })
    }

    /// The shared session, opened on first use and again after it ended.
    async fn session(&self) -> Result<mpsc::Sender<Event>, String> {
        if self.cfg.fresh_subflows {
            return open_session(&self.cfg).await;
        }
        let mut g = self.shared.lock().await;
        if let Some(tx) = g.as_ref().filter(|t| !t.is_closed()) {
            return Ok(tx.clone());
        }
        let tx = open_session(&self.cfg).await?;
        *g = Some(tx.clone());
        Ok(tx)
    }

    /// Connect the shared subflows now (warm windows for the first application connection).
    /// With fresh subflows, authenticate one probe subflow in full and close it: a wrong key
    /// is refused at start, in one line, as with shared subflows, and every connection's
    /// subflows can then send their records behind the client's proof
    /// ([`handshake::client_prove`]). The paths are tried in turn; the first error when none
    /// comes up.
    pub async fn warm_up(&self) -> Result<(), String> {
        if !self.cfg.fresh_subflows {
            return self.session().await.map(|_| ());
        }
        let probe = u64::from_be_bytes(nonce()[..8].try_into().expect("8 bytes"));
        let mut first_err = None;
        for p in 0..self.cfg.paths.len() {
            match connect_subflow(&self.cfg, p, probe).await {
                Ok((s, _)) => {
                    drop(s);
                    return Ok(());
                }
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        Err(first_err.unwrap_or_else(|| "no paths".into()))
    }

    /// Serve SOCKS5 on `listener` until `stop` fires; then end the shared session.
    pub async fn serve(
        self: Arc<Self>,
        listener: TcpListener,
        mut stop: tokio::sync::watch::Receiver<bool>,
    ) {
        let limit = Arc::new(Semaphore::new(1024));
        loop {
            tokio::select! {
                a = listener.accept() => {
                    let Ok((s, peer)) = a else { continue };
                    let Ok(permit) = limit.clone().try_acquire_owned() else {
                        continue; // too many handshakes at once: drop
                    };
                    let me = self.clone();
                    tokio::spawn(async move {
                        if let Err(e) = me.handle(s, peer).await {
                            eprintln!("mpsched-proxy: {e}");
                        }
                        drop(permit);
                    });
                }
                _ = stop.changed() => break,
            }
        }
        if let Some(tx) = self.shared.lock().await.take() {
            let _ = tx.send(Event::Shutdown).await;
        }
    }

    async fn handle(&self, mut s: TcpStream, peer: SocketAddr) -> Result<(), String> {
        let target =
            match tokio::time::timeout(Duration::from_secs(10), socks::accept(&mut s)).await {
                Err(_) => return Err(format!("socks {peer}: request timed out")),
                Ok(Err(e)) => {
                    if let Some(code) = e.reply {
                        let _ = s.write_all(&socks::reply(code)).await;
                    }
                    return Err(format!("{peer}: {}", e.msg));
                }
                Ok(Ok(t)) => t,
            };
        let sched = self
            .cfg
            .policy
            .scheduler_for(&target.host, target.port, peer.port())
            .to_string();
        if self.cfg.session.early_data {
            // `--early-data`: "succeeded" now, so the application's first bytes ride behind
            // the OPEN instead of a round trip later. A refusal then reaches the application
            // as a reset, not as a SOCKS5 code.
            let started = match self.begin_open(&target.host, target.port, &sched).await {
                Ok(o) => o,
                Err((code, e)) => {
                    let _ = s.write_all(&socks::reply(code)).await;
                    return Err(e);
                }
            };
            s.write_all(&socks::reply(socks::SUCCEEDED))
                .await
                .map_err(|e| format!("socks {peer}: {e}"))?;
            let PendingOpen {
                conn,
                tx,
                from_session,
                credit,
                reply,
            } = started;
            start_app(conn, s, credit, from_session, tx.clone());
            // The session resets the connection on a refusal; an OPENED that never comes
            // fails it here, as the SOCKS path times out.
            let answered = tokio::time::timeout(OPEN_TIMEOUT, reply).await;
            if !matches!(answered, Ok(Ok(_))) {
                let _ = tx.send(Event::AppFailed { conn }).await;
            }
            return Ok(());
        }
        let opened = match self.open_conn(&target.host, target.port, &sched).await {
            Ok(o) => o,
            Err((code, e)) => {
                let _ = s.write_all(&socks::reply(code)).await;
                return Err(e);
            }
        };
        s.write_all(&socks::reply(opened.status))
            .await
            .map_err(|e| format!("socks {peer}: {e}"))?;
        if opened.status != socks::SUCCEEDED {
            return Ok(());
        }
        start_app(
            opened.conn,
            s,
            opened.credit,
            opened.from_session,
            opened.tx,
        );
        Ok(())
    }

    /// Open one multipath connection to `host:port` with scheduler `sched` (a client path
    /// name where it takes one) on the shared session, or a fresh one: the server's SOCKS5
    /// status, and the session's side of the connection. `Err` carries the SOCKS5 code to
    /// answer with and the reason.
    pub(crate) async fn open_conn(
        &self,
        host: &str,
        port: u16,
        sched: &str,
    ) -> Result<OpenedConn, (u8, String)> {
        let p = self.begin_open(host, port, sched).await?;
        let status = tokio::time::timeout(OPEN_TIMEOUT, p.reply)
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or(socks::TTL_EXPIRED);
        Ok(OpenedConn {
            status,
            conn: p.conn,
            tx: p.tx,
            from_session: p.from_session,
            credit: p.credit,
        })
    }

    /// Send the OPEN: the connection exists in the session from here on, and `reply` will
    /// carry the server's SOCKS5 status.
    async fn begin_open(
        &self,
        host: &str,
        port: u16,
        sched: &str,
    ) -> Result<PendingOpen, (u8, String)> {
        let sched = server_sched_name(sched, &self.cfg.paths);
        let tx = self
            .session()
            .await
            .map_err(|e| (socks::NETWORK_UNREACHABLE, e))?;
        let conn = self.next_conn.fetch_add(1, Ordering::Relaxed);
        let (io, app) = app_channels(self.cfg.session.send_buffer);
        let (reply_tx, reply) = oneshot::channel();
        let open = Event::AppOpen {
            conn,
            host: host.to_string(),
            port,
            sched,
            io,
            reply: reply_tx,
        };
        if tx.send(open).await.is_err() {
            return Err((socks::GENERAL_FAILURE, "session ended".into()));
        }
        Ok(PendingOpen {
            conn,
            tx,
            from_session: app.from_session,
            credit: app.credit,
            reply,
        })
    }
}

/// How long a connection waits for the server's OPENED.
const OPEN_TIMEOUT: Duration = Duration::from_secs(30);

/// An OPEN sent, its OPENED not yet read.
struct PendingOpen {
    conn: u32,
    tx: mpsc::Sender<Event>,
    from_session: mpsc::UnboundedReceiver<AppMsg>,
    credit: Arc<Semaphore>,
    reply: oneshot::Receiver<u8>,
}

/// A connection [`Client::open_conn`] opened: the server's answer and the session's side.
pub(crate) struct OpenedConn {
    pub status: u8,
    pub conn: u32,
    pub tx: mpsc::Sender<Event>,
    pub from_session: mpsc::UnboundedReceiver<AppMsg>,
    pub credit: Arc<Semaphore>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(specs: &[&str]) -> Vec<PathSpec> {
        specs.iter().map(|s| s.parse().unwrap()).collect()
    }

    #[test]
    fn path_takes_a_backup_flag_and_refuses_others() {
        let p: PathSpec = "lte=10.0.2.1,backup".parse().unwrap();
        assert!(p.backup && p.name == "lte");
        assert!(matches!(p.bind, Bind::Src(_)));
        let p: PathSpec = "wifi=wlan0".parse().unwrap();
        assert!(!p.backup && matches!(p.bind, Bind::Iface(_)));
        let e = "lte=10.0.2.1,bakup".parse::<PathSpec>().unwrap_err();
        assert!(e.contains("unknown flag \"bakup\""), "{e}");
        assert!("lte=,backup".parse::<PathSpec>().is_err());
    }

    #[test]
    fn scheduler_names_reach_the_server_with_path_numbers() {
        let ps = paths(&[
            "wifi=10.0.1.1",
            "lte=10.0.2.1,backup",
            "sat=10.0.3.1,backup",
        ]);
        assert_eq!(server_sched_name("backup", &ps), "backup:p1,p2");
        assert_eq!(server_sched_name("backup:wifi", &ps), "backup:p0");
        assert_eq!(server_sched_name("single:lte", &ps), "single:p1");
        assert_eq!(server_sched_name("dems-f", &ps), "dems-f");
        // Unmarked paths: `backup` alone stays bare, and building it fails with its reason.
        assert_eq!(
            server_sched_name("backup", &paths(&["a=10.0.1.1"])),
            "backup"
        );
    }
}
