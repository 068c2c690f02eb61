//! The server proxy: authenticates subflows, groups them into sessions, and relays each
//! application connection to its destination over ordinary TCP (Guo et al., MobiCom 2017, §6),
//! within the allow-list.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, Mutex, Semaphore};

use super::allow::AllowList;
use super::auth::Psk;
use super::handshake;
use super::kernel::SocketOpts;
use super::session::{
    read_subflow, start_app, Connector, Event, PendingApp, Session, SessionConfig,
};
use super::socks;
use super::wire::{HELLO_BACKUP, HELLO_FRESH};

#[derive(Clone, Debug)]
pub struct ServerConfig {
    pub psk: Psk,
    pub allow: AllowList,
    pub sock: SocketOpts,
    pub session: SessionConfig,
    /// Unauthenticated connections handled at once; more are closed at accept.
    pub max_handshakes: usize,
    /// Time an unauthenticated peer may take to prove the key.
    pub handshake_timeout: Duration,
}

pub struct Server {
    cfg: ServerConfig,
    sessions: Mutex<HashMap<u64, mpsc::Sender<Event>>>,
    handshakes: Arc<Semaphore>,
}

impl Server {
    pub fn new(cfg: ServerConfig) -> Arc<Server> {
        let n = cfg.max_handshakes;
        Arc::new(Server {
            cfg,
            sessions: Mutex::new(HashMap::new()),
            handshakes: Arc::new(Semaphore::new(n)),
        })
    }

    pub async fn serve(
        self: Arc<Self>,
        listener: TcpListener,
        mut stop: tokio::sync::watch::Receiver<bool>,
    ) {
        loop {
            tokio::select! {
                a = listener.accept() => {
                    let Ok((s, _peer)) = a else { continue };
                    // Bounded work for strangers: a full handshake table drops newcomers.
                    let Ok(permit) = self.handshakes.clone().try_acquire_owned() else {
                        continue;
                    };
                    let me = self.clone();
                    tokio::spawn(async move {
                        let s = me.authenticate(s).await;
                        drop(permit);
                        if let Some((s, hello)) = s {
                            me.join(s, hello).await;
                        }
                    });
                }
                _ = stop.changed() => break,
            }
        }
        for (_, tx) in self.sessions.lock().await.drain() {
            let _ = tx.send(Event::Shutdown).await;
        }
    }

    async fn authenticate(&self, mut s: TcpStream) -> Option<(TcpStream, super::wire::Hello)> {
        let h = tokio::time::timeout(
            self.cfg.handshake_timeout,
            handshake::server(&mut s, &self.cfg.psk),
        )
        .await
        .ok()??;
        Some((s, h))
    }

    async fn join(self: &Arc<Self>, s: TcpStream, hello: super::wire::Hello) {
        if let Err(e) = self.cfg.sock.apply(&s) {
            eprintln!("mpsched-proxy: subflow socket options: {e}");
            return;
        }
        let mut sessions = self.sessions.lock().await;
        sessions.retain(|_, tx| !tx.is_closed());
        let tx = match sessions.get(&hello.session) {
            Some(tx) => tx.clone(),
            None => {
                let (tx, rx) = mpsc::channel(1024);
                let mut scfg = self.cfg.session.clone();
                scfg.npaths = hello.npaths as usize;
                scfg.path_names = (0..scfg.npaths).map(|i| format!("p{i}")).collect();
                scfg.single_conn = hello.flags & HELLO_FRESH != 0;
                let connector = self.connector();
                tokio::spawn(Session::new(scfg, Some(connector), tx.clone()).run(rx));
                sessions.insert(hello.session, tx.clone());
                tx
            }
        };
        drop(sessions);
        let s = Arc::new(s);
        let path = hello.path;
        if tx
            .send(Event::SubflowUp {
                path,
                stream: s.clone(),
                backup: hello.flags & HELLO_BACKUP != 0,
            })
            .await
            .is_ok()
        {
            tokio::spawn(read_subflow(path, s, tx));
        }
    }

    /// Resolve, check the allow-list, connect, start the socket's IO on the channel the
    /// session already delivers into; report to the session.
    fn connector(&self) -> Connector {
        let allow = self.cfg.allow.clone();
        Arc::new(move |conn, host, port, pending: PendingApp, tx| {
            let allow = allow.clone();
            tokio::spawn(async move {
                let status = match connect_upstream(&allow, &host, port).await {
                    Ok(stream) => {
                        start_app(
                            conn,
                            stream,
                            pending.credit,
                            pending.from_session,
                            tx.clone(),
                        );
                        Ok(())
                    }
                    Err(code) => Err(code),
                };
                let _ = tx.send(Event::UpstreamReady { conn, status }).await;
            });
        })
    }
}

/// The destination's first allowed address, connected; or the SOCKS5 reply code.
pub async fn connect_upstream(allow: &AllowList, host: &str, port: u16) -> Result<TcpStream, u8> {
    let addrs: Vec<SocketAddr> = match tokio::time::timeout(
        Duration::from_secs(10),
        tokio::net::lookup_host((host, port)),
    )
    .await
    {
        Ok(Ok(a)) => a.collect(),
        _ => return Err(socks::HOST_UNREACHABLE),
    };
    let allowed: Vec<SocketAddr> = addrs
        .into_iter()
        .filter(|a| allow.permits(a.ip()))
        .collect();
    if allowed.is_empty() {
        return Err(socks::NOT_ALLOWED);
    }
    let mut code = socks::HOST_UNREACHABLE;
    for a in allowed {
        match tokio::time::timeout(Duration::from_secs(10), TcpStream::connect(a)).await {
            Ok(Ok(s)) => return Ok(s),
            Ok(Err(e)) => code = socks::code_for(&e),
            Err(_) => code = socks::TTL_EXPIRED,
        }
    }
    Err(code)
}
