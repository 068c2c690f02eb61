//! The hint API (Guo et al., MobiCom 2017, §5 and §7.1): a program that links this crate opens
//! multipath connections through the client proxy itself, without SOCKS5, and may say where
//! its chunks end. DEMS schedules a chunk to complete on all paths at once; without hints
//! (SOCKS5, the paper's "non-API mode") the data waiting in the meta buffer stands for the
//! chunk, with a hint the scheduler sees the chunk's true end and stops treating later data as
//! part of it.
//!
//! ```no_run
//! # async fn demo(cfg: mpsched_net::proxy::client::ClientConfig) -> std::io::Result<()> {
//! use mpsched_net::proxy::client::Client;
//! let client = Client::new(cfg);
//! let mut conn = client.open("example.org", 80, "dems-f").await?;
//! conn.send_chunk(b"GET / HTTP/1.0\r\n\r\n").await?; // one chunk: the whole request
//! conn.finish().await?;
//! let reply = conn.read_to_end().await?;
//! # Ok(()) }
//! ```
//!
//! The hint covers what this program sends (its uploads). The bytes a server sends back are
//! chunked by the server proxy in the non-API mode, unless that server links the crate too.

use std::io;
use std::sync::Arc;

use tokio::sync::{mpsc, Semaphore};

use super::client::Client;
use super::conn::AppMsg;
use super::session::{Event, APP_READ};
use super::socks;

/// One multipath connection opened by [`Client::open`].
pub struct MpStream {
    conn: u32,
    tx: mpsc::Sender<Event>,
    from_session: mpsc::UnboundedReceiver<AppMsg>,
    credit: Arc<Semaphore>,
    finished: bool,
    ended: bool,
}

fn gone() -> io::Error {
    io::Error::new(io::ErrorKind::BrokenPipe, "the multipath session ended")
}

impl Client {
    /// Open a multipath connection to `host:port` with scheduler `sched` (as in a policy file:
    /// `dems-f`, `single:NAME`, ...), through the same session and subflows SOCKS5 clients
    /// use. A refusal by the server proxy (allow-list, unreachable, ...) is an error naming
    /// the SOCKS5 reply it gave.
    pub async fn open(&self, host: &str, port: u16, sched: &str) -> io::Result<MpStream> {
        let o = self
            .open_conn(host, port, sched)
            .await
            .map_err(|(_, e)| io::Error::new(io::ErrorKind::NotConnected, e))?;
        if o.status != socks::SUCCEEDED {
            let kind = match o.status {
                socks::CONNECTION_REFUSED => io::ErrorKind::ConnectionRefused,
                socks::NOT_ALLOWED => io::ErrorKind::PermissionDenied,
                _ => io::ErrorKind::NotConnected,
            };
            return Err(io::Error::new(
                kind,
                format!(
                    "{host}:{port}: the server proxy answered SOCKS5 reply {}",
                    o.status
                ),
            ));
        }
        Ok(MpStream {
            conn: o.conn,
            tx: o.tx,
            from_session: o.from_session,
            credit: o.credit,
            finished: false,
            ended: false,
        })
    }
}

impl MpStream {
    /// Send bytes that continue the current chunk.
    pub async fn write(&mut self, data: &[u8]) -> io::Result<()> {
        self.send(data, false).await
    }

    /// Send `data` and end the chunk with it: the scheduler plans these bytes, with whatever
    /// of the chunk was written before, as one chunk (the hint of §5).
    pub async fn send_chunk(&mut self, data: &[u8]) -> io::Result<()> {
        self.send(data, true).await
    }

    async fn send(&mut self, data: &[u8], end_of_chunk: bool) -> io::Result<()> {
        if self.finished {
            return Err(io::Error::new(
                io::ErrorKind::BrokenPipe,
                "write after finish()",
            ));
        }
        // In pieces the send buffer can always take (its credit is what the meta buffer may
        // still hold); the last piece carries the hint.
        let mut pieces = data.chunks(APP_READ).peekable();
        if pieces.peek().is_none() && end_of_chunk {
            return self.push(Vec::new(), true).await;
        }
        while let Some(piece) = pieces.next() {
            let permit = self
                .credit
                .acquire_many(piece.len() as u32)
                .await
                .map_err(|_| gone())?;
            permit.forget();
            let last = pieces.peek().is_none();
            self.push(piece.to_vec(), end_of_chunk && last).await?;
        }
        Ok(())
    }

    async fn push(&mut self, data: Vec<u8>, end_of_chunk: bool) -> io::Result<()> {
        let ev = Event::AppData {
            conn: self.conn,
            data,
            end_of_chunk,
        };
        self.tx.send(ev).await.map_err(|_| gone())
    }

    /// No more bytes from this side (a TCP FIN to the destination); reading goes on.
    pub async fn finish(&mut self) -> io::Result<()> {
        if !self.finished {
            self.finished = true;
            let ev = Event::AppEof { conn: self.conn };
            self.tx.send(ev).await.map_err(|_| gone())?;
        }
        Ok(())
    }

    /// The next bytes from the destination, or `None` once it has finished sending.
    pub async fn read(&mut self) -> io::Result<Option<Vec<u8>>> {
        if self.ended {
            return Ok(None);
        }
        match self.from_session.recv().await {
            Some(AppMsg::Data(d)) => {
                // Read by the application: the receive window may open again.
                let n = d.len() as u64;
                let _ = self.tx.send(Event::AppWritten { conn: self.conn, n }).await;
                Ok(Some(d))
            }
            Some(AppMsg::Eof) => {
                self.ended = true;
                Ok(None)
            }
            Some(AppMsg::Reset) | None => Err(io::Error::new(
                io::ErrorKind::ConnectionReset,
                "the connection was reset",
            )),
        }
    }

    /// Everything the destination sends until it finishes.
    pub async fn read_to_end(&mut self) -> io::Result<Vec<u8>> {
        let mut all = Vec::new();
        while let Some(d) = self.read().await? {
            all.extend_from_slice(&d);
        }
        Ok(all)
    }
}

impl Drop for MpStream {
    /// A stream dropped before both directions ended resets the connection, as closing a
    /// socket with unread data does.
    fn drop(&mut self) {
        if !(self.finished && self.ended) {
            let _ = self.tx.try_send(Event::AppFailed { conn: self.conn });
        }
    }
}
