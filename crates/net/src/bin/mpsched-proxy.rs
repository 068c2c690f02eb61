//! `mpsched-proxy server|client ...`: the multipath proxy of Guo et al., MobiCom 2017, §6
//! (`mpsched proxy ...` runs this binary). Flags: `mpsched-proxy --help`.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use mpsched_net::proxy::allow::{AllowList, Cidr};
use mpsched_net::proxy::auth::Psk;
use mpsched_net::proxy::client::{Client, ClientConfig, PathSpec};
use mpsched_net::proxy::kernel::SocketOpts;
use mpsched_net::proxy::policy::Policy;
use mpsched_net::proxy::server::{Server, ServerConfig};
use mpsched_net::proxy::session::SessionConfig;
use mpsched_net::proxy::wire::MAX_PAYLOAD;
use tokio::io::AsyncWriteExt;
use tokio::sync::{mpsc, watch};

const USAGE: &str = "\
usage: mpsched-proxy server --listen ADDR --psk-file F [--allow CIDR ...] [common options]
       mpsched-proxy client --server ADDR --path NAME=IFACE|SRCIP[,backup] ... --psk-file F
                            [--socks ADDR] [--policy FILE] [--fresh-subflows] [--early-data]
                            [common options]
  --early-data         answer SOCKS5 \"succeeded\" at once and send the application's first
                       bytes behind the OPEN, saving a round trip per connection; a refused
                       destination then reaches the application as a reset
common options:
  --cc NAME            subflow congestion control (TCP_CONGESTION; default cubic)
  --notsent-lowat N    TCP_NOTSENT_LOWAT bytes, or \"off\" (default 16384)
  --sndbuf N           SO_SNDBUF/SO_RCVBUF bytes of subflows (default: kernel autotuning)
  --slack N            bytes a subflow may hold beyond its window (default 2896)
  --record-size N      payload bytes per record (default 1400)
  --stats FILE|-       JSON lines per connection and per session
Guo et al., MobiCom 2017, §5-6; SOCKS5 is RFC 1928 (CONNECT, no authentication).";

struct Args {
    mode: String,
    listen: Option<SocketAddr>,
    server: Option<SocketAddr>,
    socks: SocketAddr,
    paths: Vec<PathSpec>,
    psk_file: Option<String>,
    allow: Vec<Cidr>,
    policy: Option<String>,
    fresh: bool,
    sock: SocketOpts,
    session: SessionConfig,
    stats: Option<String>,
}

fn parse(argv: &[String]) -> Result<Args, String> {
    let mode = argv
        .first()
        .cloned()
        .ok_or("missing mode: server or client")?;
    if mode != "server" && mode != "client" {
        return Err(format!("unknown mode \"{mode}\" (server or client)"));
    }
    let mut a = Args {
        mode,
        listen: None,
        server: None,
        socks: "127.0.0.1:1080".parse().expect("literal"),
        paths: Vec::new(),
        psk_file: None,
        allow: Vec::new(),
        policy: None,
        fresh: false,
        sock: SocketOpts::default(),
        session: SessionConfig::default(),
        stats: None,
    };
    let mut it = argv[1..].iter();
    while let Some(flag) = it.next() {
        let mut val = || {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{flag} needs a value"))
        };
        let addr = |v: String| -> Result<SocketAddr, String> {
            v.parse()
                .map_err(|_| format!("{flag} \"{v}\": expected IP:PORT"))
        };
        let num = |v: String| -> Result<u64, String> {
            v.parse()
                .map_err(|_| format!("{flag} \"{v}\": expected a number of bytes"))
        };
        match flag.as_str() {
            "--listen" => a.listen = Some(addr(val()?)?),
            "--server" => a.server = Some(addr(val()?)?),
            "--socks" => a.socks = addr(val()?)?,
            "--path" => a.paths.push(val()?.parse()?),
            "--psk-file" => a.psk_file = Some(val()?),
            "--allow" => a
                .allow
                .push(val()?.parse().map_err(|e| format!("--allow: {e}"))?),
            "--policy" => a.policy = Some(val()?),
            "--fresh-subflows" => a.fresh = true,
            "--early-data" => a.session.early_data = true,
            "--cc" => a.sock.cc = val()?,
            "--notsent-lowat" => {
                let v = val()?;
                a.sock.notsent_lowat = if v == "off" {
                    None
                } else {
                    Some(num(v)?.min(u32::MAX as u64) as u32)
                };
            }
            "--sndbuf" => {
                let n = num(val()?)? as usize;
                a.sock.sndbuf = Some(n);
                a.sock.rcvbuf = Some(n);
            }
            "--slack" => a.session.slack = num(val()?)?,
            "--record-size" => {
                let n = num(val()?)?;
                if n == 0 || n > MAX_PAYLOAD as u64 {
                    return Err(format!("--record-size {n}: must be 1-{MAX_PAYLOAD}"));
                }
                a.session.record_size = n as u32;
            }
            "--stats" => a.stats = Some(val()?),
            "-h" | "--help" => return Err(USAGE.to_string()),
            other => return Err(format!("unknown option {other}")),
        }
    }
    Ok(a)
}

fn read_psk(path: &Option<String>) -> Result<Psk, String> {
    let p = path.as_ref().ok_or("--psk-file is required")?;
    let bytes = std::fs::read(p).map_err(|e| format!("--psk-file {p}: {e}"))?;
    Psk::from_file_contents(&bytes).map_err(|e| format!("--psk-file {p}: {e}"))
}

/// Lines from the sessions to the stats file (or stdout).
fn stats_sink(dest: &Option<String>) -> Result<Option<mpsc::UnboundedSender<String>>, String> {
    let Some(d) = dest else {
        return Ok(None);
    };
    let (tx, mut rx) = mpsc::unbounded_channel::<String>();
    let mut out: Box<dyn tokio::io::AsyncWrite + Unpin + Send> = if d == "-" {
        Box::new(tokio::io::stdout())
    } else {
        let f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(d)
            .map_err(|e| format!("--stats {d}: {e}"))?;
        Box::new(tokio::fs::File::from_std(f))
    };
    tokio::spawn(async move {
        while let Some(line) = rx.recv().await {
            let _ = out.write_all(line.as_bytes()).await;
            let _ = out.write_all(b"\n").await;
            let _ = out.flush().await;
        }
    });
    Ok(Some(tx))
}

async fn run(a: Args) -> Result<(), String> {
    if a.mode == "server" && a.session.early_data {
        return Err("--early-data is a client option".into());
    }
    let psk = read_psk(&a.psk_file)?;
    let mut session = a.session.clone();
    session.stats = stats_sink(&a.stats)?;
    let (stop_tx, stop_rx) = watch::channel(false);
    let task = if a.mode == "server" {
        let listen = a.listen.ok_or("--listen is required")?;
        let l = tokio::net::TcpListener::bind(listen)
            .await
            .map_err(|e| format!("cannot listen on {listen}: {e}"))?;
        eprintln!(
            "mpsched-proxy: server listening on {}",
            l.local_addr().map_err(|e| e.to_string())?
        );
        let s = Server::new(ServerConfig {
            psk,
            allow: AllowList::new(a.allow),
            sock: a.sock,
            session,
            max_handshakes: 256,
            handshake_timeout: Duration::from_secs(5),
        });
        tokio::spawn(s.serve(l, stop_rx))
    } else {
        let server = a.server.ok_or("--server is required")?;
        if a.paths.is_empty() {
            return Err("at least one --path NAME=IFACE|SRCIP is required".into());
        }
        if a.paths.len() > mpsched_core::packet::MAX_PATHS {
            return Err(format!("at most {} paths", mpsched_core::packet::MAX_PATHS));
        }
        let names: Vec<String> = a.paths.iter().map(|p| p.name.clone()).collect();
        let backup: Vec<&str> = a
            .paths
            .iter()
            .filter(|p| p.backup)
            .map(|p| p.name.as_str())
            .collect();
        let policy = match &a.policy {
            Some(f) => {
                let text = std::fs::read_to_string(f).map_err(|e| format!("--policy {f}: {e}"))?;
                Policy::parse(&text, f, &names, &backup)?
            }
            None => Policy::default(),
        };
        session.npaths = a.paths.len();
        session.path_names = (0..a.paths.len()).map(|i| format!("p{i}")).collect();
        let cfg = ClientConfig {
            server,
            paths: a.paths,
            socks: a.socks,
            psk,
            policy,
            fresh_subflows: a.fresh,
            sock: a.sock,
            session,
            key_verified: Default::default(),
        };
        let l = tokio::net::TcpListener::bind(cfg.socks)
            .await
            .map_err(|e| format!("cannot listen on {}: {e}", cfg.socks))?;
        let socks = l.local_addr().map_err(|e| e.to_string())?;
        let c = Client::new(cfg);
        c.warm_up().await?;
        eprintln!("mpsched-proxy: client SOCKS5 on {socks}");
        tokio::spawn(c.serve(l, stop_rx))
    };
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| e.to_string())?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    let _ = stop_tx.send(true);
    let _ = task.await;
    // Let the sessions write their last stats lines.
    tokio::time::sleep(Duration::from_millis(200)).await;
    Ok(())
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let args = match parse(&argv) {
        Ok(a) => a,
        Err(e) if e == USAGE => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("mpsched: error: {e}");
            return ExitCode::from(2);
        }
    };
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("mpsched: error: {e}");
            return ExitCode::from(2);
        }
    };
    match rt.block_on(run(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mpsched: error: {e}");
            ExitCode::from(2)
        }
    }
}
