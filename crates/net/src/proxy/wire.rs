//! The proxy's encapsulation: "a custom light-weight encapsulation protocol" carried over
//! conventional TCP subflows (Guo et al., MobiCom 2017, §6), with the OWD feedback of §5 ("the
//! receiver records the reception time and sends it and the sequence number back to the sender
//! through an encapsulated control message").
//!
//! The codec lives here, not in `mpsched-core`: these bytes are the proxy's alone (the
//! simulator moves typed packets), and keeping it beside its only user keeps the core free of
//! byte formats. It is pure (no IO) and fuzzed per decoder (`crates/net/fuzz`).
//!
//! Every frame after the handshake:
//!
//! ```text
//! version u8 (=1) | type u8 | body length u16 (big endian) | body
//! ```
//!
//! Bodies (all integers big endian):
//!
//! * `DATA` (1): conn u32, dsn u64, send time u64 (sender clock, ns), bytes in flight on the
//!   subflow at send u32 (the §5 BIF bin), payload.
//! * `ACK` (2): conn u32, cumulative data-ACK u64, receive window u64, n u8 SACK ranges
//!   (start u64, end u64), m u8 OWD samples (path u8, dsn u64, send time u64, BIF u32,
//!   receive time u64, receiver clock ns).
//! * `WINDOW` (3): conn u32, receive window u64.
//! * `OPEN` (4): conn u32, destination port u16, host (u8 length + bytes), scheduler name
//!   (u8 length + bytes).
//! * `OPENED` (5): conn u32, status u8 (a SOCKS5 reply code, RFC 1928 §6; 0 = succeeded).
//! * `CLOSE` (6): conn u32, final DSN u64 (the sender's data ends there).
//! * `RESET` (7): conn u32, reason u8.
//!
//! Handshake messages are fixed-length (see [`Hello`], [`Challenge`], [`Proof`]), so an
//! unauthenticated peer can make the server buffer at most [`HELLO_LEN`] bytes.

/// Protocol version of both the frames and the handshake.
pub const VERSION: u8 = 1;
/// Frame header: version, type, body length.
pub const HEADER_LEN: usize = 4;
/// Largest body a frame may carry.
pub const MAX_BODY: usize = u16::MAX as usize;
/// DATA body before the payload.
pub const DATA_OVERHEAD: usize = 4 + 8 + 8 + 4;
/// Largest payload of one DATA frame.
pub const MAX_PAYLOAD: usize = MAX_BODY - DATA_OVERHEAD;
/// At most this many SACK ranges and OWD samples in one ACK.
pub const MAX_SACKS: usize = 16;
pub const MAX_OWD: usize = 64;

const T_DATA: u8 = 1;
const T_ACK: u8 = 2;
const T_WINDOW: u8 = 3;
const T_OPEN: u8 = 4;
const T_OPENED: u8 = 5;
const T_CLOSE: u8 = 6;
const T_RESET: u8 = 7;

/// One OWD sample fed back to the sender (§5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OwdSample {
    pub path: u8,
    pub dsn: u64,
    pub send_time: u64,
    pub bif: u32,
    pub recv_time: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    Data {
        conn: u32,
        dsn: u64,
        send_time: u64,
        bif: u32,
        payload: &'a [u8],
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
        host: &'a str,
        sched: &'a str,
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
        reason: u8,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    #[error("unsupported protocol version {0}")]
    Version(u8),
    #[error("unknown frame type {0}")]
    Type(u8),
    #[error("frame body malformed ({0})")]
    Malformed(&'static str),
    #[error("frame too large to encode")]
    TooLarge,
}

/// Decode one frame from the front of `buf`: `Ok(None)` when more bytes are needed, else the
/// frame and the bytes it used. Never reads past the declared body length; never allocates
/// more than [`MAX_SACKS`] + [`MAX_OWD`] entries.
pub fn decode(buf: &[u8]) -> Result<Option<(Frame<'_>, usize)>, WireError> {
    if buf.len() < HEADER_LEN {
        return Ok(None);
    }
    if buf[0] != VERSION {
        return Err(WireError::Version(buf[0]));
    }
    let ty = buf[1];
    if !(T_DATA..=T_RESET).contains(&ty) {
        return Err(WireError::Type(ty));
    }
    let len = u16::from_be_bytes([buf[2], buf[3]]) as usize;
    let Some(body) = buf.get(HEADER_LEN..HEADER_LEN + len) else {
        return Ok(None);
    };
    let mut r = Reader(body);
    let f = match ty {
        T_DATA => Frame::Data {
            conn: r.u32()?,
            dsn: r.u64()?,
            send_time: r.u64()?,
            bif: r.u32()?,
            payload: r.rest(),
        },
        T_ACK => {
            let conn = r.u32()?;
            let data_ack = r.u64()?;
            let rwnd = r.u64()?;
            let n = r.u8()? as usize;
            if n > MAX_SACKS {
                return Err(WireError::Malformed("too many SACK ranges"));
            }
            let mut sacks = Vec::with_capacity(n);
            for _ in 0..n {
                let (s, e) = (r.u64()?, r.u64()?);
                if e <= s {
                    return Err(WireError::Malformed("empty SACK range"));
                }
                sacks.push((s, e));
            }
            let m = r.u8()? as usize;
            if m > MAX_OWD {
                return Err(WireError::Malformed("too many OWD samples"));
            }
            let mut owd = Vec::with_capacity(m);
            for _ in 0..m {
                owd.push(OwdSample {
                    path: r.u8()?,
                    dsn: r.u64()?,
                    send_time: r.u64()?,
                    bif: r.u32()?,
                    recv_time: r.u64()?,
                });
            }
            r.end()?;
            Frame::Ack {
                conn,
                data_ack,
                rwnd,
                sacks,
                owd,
            }
        }
        T_WINDOW => {
            let f = Frame::Window {
                conn: r.u32()?,
                rwnd: r.u64()?,
            };
            r.end()?;
            f
        }
        T_OPEN => {
            let conn = r.u32()?;
            let port = r.u16()?;
            let host = r.str()?;
            let sched = r.str()?;
            r.end()?;
            Frame::Open {
                conn,
                port,
                host,
                sched,
            }
        }
        T_OPENED => {
            let f = Frame::Opened {
                conn: r.u32()?,
                status: r.u8()?,
            };
            r.end()?;
            f
        }
        T_CLOSE => {
            let f = Frame::Close {
                conn: r.u32()?,
                final_dsn: r.u64()?,
            };
            r.end()?;
            f
        }
        T_RESET => {
            let f = Frame::Reset {
                conn: r.u32()?,
                reason: r.u8()?,
            };
            r.end()?;
            f
        }
        _ => unreachable!("type checked above"),
    };
    Ok(Some((f, HEADER_LEN + len)))
}

/// Append the encoding of `f` to `out`.
pub fn encode(f: &Frame<'_>, out: &mut Vec<u8>) -> Result<(), WireError> {
    let start = out.len();
    out.extend_from_slice(&[VERSION, 0, 0, 0]);
    let ty = match f {
        Frame::Data {
            conn,
            dsn,
            send_time,
            bif,
            payload,
        } => {
            out.extend_from_slice(&conn.to_be_bytes());
            out.extend_from_slice(&dsn.to_be_bytes());
            out.extend_from_slice(&send_time.to_be_bytes());
            out.extend_from_slice(&bif.to_be_bytes());
            out.extend_from_slice(payload);
            T_DATA
        }
        Frame::Ack {
            conn,
            data_ack,
            rwnd,
            sacks,
            owd,
        } => {
            if sacks.len() > MAX_SACKS || owd.len() > MAX_OWD {
                out.truncate(start);
                return Err(WireError::TooLarge);
            }
            out.extend_from_slice(&conn.to_be_bytes());
            out.extend_from_slice(&data_ack.to_be_bytes());
            out.extend_from_slice(&rwnd.to_be_bytes());
            out.push(sacks.len() as u8);
            for (s, e) in sacks {
                out.extend_from_slice(&s.to_be_bytes());
                out.extend_from_slice(&e.to_be_bytes());
            }
            out.push(owd.len() as u8);
            for o in owd {
                out.push(o.path);
                out.extend_from_slice(&o.dsn.to_be_bytes());
                out.extend_from_slice(&o.send_time.to_be_bytes());
                out.extend_from_slice(&o.bif.to_be_bytes());
                out.extend_from_slice(&o.recv_time.to_be_bytes());
            }
            T_ACK
        }
        Frame::Window { conn, rwnd } => {
            out.extend_from_slice(&conn.to_be_bytes());
            out.extend_from_slice(&rwnd.to_be_bytes());
            T_WINDOW
        }
        Frame::Open {
            conn,
            port,
            host,
            sched,
        } => {
            if host.len() > 255 || sched.len() > 255 {
                out.truncate(start);
                return Err(WireError::TooLarge);
            }
            out.extend_from_slice(&conn.to_be_bytes());
            out.extend_from_slice(&port.to_be_bytes());
            out.push(host.len() as u8);
            out.extend_from_slice(host.as_bytes());
            out.push(sched.len() as u8);
            out.extend_from_slice(sched.as_bytes());
            T_OPEN
        }
        Frame::Opened { conn, status } => {
            out.extend_from_slice(&conn.to_be_bytes());
            out.push(*status);
            T_OPENED
        }
        Frame::Close { conn, final_dsn } => {
            out.extend_from_slice(&conn.to_be_bytes());
            out.extend_from_slice(&final_dsn.to_be_bytes());
            T_CLOSE
        }
        Frame::Reset { conn, reason } => {
            out.extend_from_slice(&conn.to_be_bytes());
            out.push(*reason);
            T_RESET
        }
    };
    let len = out.len() - start - HEADER_LEN;
    if len > MAX_BODY {
        out.truncate(start);
        return Err(WireError::TooLarge);
    }
    out[start + 1] = ty;
    out[start + 2..start + 4].copy_from_slice(&(len as u16).to_be_bytes());
    Ok(())
}

// ---- handshake -----------------------------------------------------------------------------

/// Magic that opens a subflow, so that a stray connection fails on its first bytes.
pub const MAGIC: [u8; 4] = *b"MPSx";
pub const NONCE_LEN: usize = 32;
pub const MAC_LEN: usize = 32;
/// Client → server: magic, version, flags, path index, number of paths, session id u64,
/// client nonce.
pub const HELLO_LEN: usize = 4 + 1 + 1 + 1 + 1 + 8 + NONCE_LEN;
/// Server → client: server nonce.
pub const CHALLENGE_LEN: usize = NONCE_LEN;
/// Either way: an HMAC-SHA256 proof.
pub const PROOF_LEN: usize = MAC_LEN;

/// [`Hello::flags`] bit: this subflow serves a single application connection
/// (`--fresh-subflows`).
pub const HELLO_FRESH: u8 = 1;
/// [`Hello::flags`] bit: this subflow's path is a backup path (`--path NAME=...,backup`), as
/// MP_JOIN's B bit tells the peer (RFC 8684 §3.2), so the server's schedulers know it too.
pub const HELLO_BACKUP: u8 = 2;

/// The subflow's opening message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hello {
    /// [`HELLO_FRESH`] | [`HELLO_BACKUP`]; other bits are ignored.
    pub flags: u8,
    pub path: u8,
    /// Paths the client proxy has (the server sizes the session's subflow table by it).
    pub npaths: u8,
    /// Subflows with the same session id belong to one client proxy.
    pub session: u64,
    pub nonce: [u8; NONCE_LEN],
}

impl Hello {
    pub fn encode(&self) -> [u8; HELLO_LEN] {
        let mut b = [0u8; HELLO_LEN];
        b[..4].copy_from_slice(&MAGIC);
        b[4] = VERSION;
        b[5] = self.flags;
        b[6] = self.path;
        b[7] = self.npaths;
        b[8..16].copy_from_slice(&self.session.to_be_bytes());
        b[16..].copy_from_slice(&self.nonce);
        b
    }
    pub fn decode(b: &[u8]) -> Result<Hello, WireError> {
        if b.len() != HELLO_LEN || b[..4] != MAGIC {
            return Err(WireError::Malformed("not a subflow hello"));
        }
        if b[4] != VERSION {
            return Err(WireError::Version(b[4]));
        }
        let (path, npaths) = (b[6], b[7]);
        if npaths == 0 || npaths as usize > mpsched_core::packet::MAX_PATHS || path >= npaths {
            return Err(WireError::Malformed("path index out of range"));
        }
        let mut nonce = [0u8; NONCE_LEN];
        nonce.copy_from_slice(&b[16..]);
        Ok(Hello {
            flags: b[5],
            path,
            npaths,
            session: u64::from_be_bytes(b[8..16].try_into().expect("8 bytes")),
            nonce,
        })
    }
}

// ---- reading helpers -----------------------------------------------------------------------

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        if self.0.len() < n {
            return Err(WireError::Malformed("body shorter than its fields"));
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Ok(a)
    }
    fn u8(&mut self) -> Result<u8, WireError> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16, WireError> {
        Ok(u16::from_be_bytes(self.take(2)?.try_into().expect("2")))
    }
    fn u32(&mut self) -> Result<u32, WireError> {
        Ok(u32::from_be_bytes(self.take(4)?.try_into().expect("4")))
    }
    fn u64(&mut self) -> Result<u64, WireError> {
        Ok(u64::from_be_bytes(self.take(8)?.try_into().expect("8")))
    }
    fn str(&mut self) -> Result<&'a str, WireError> {
        let n = self.u8()? as usize;
        std::str::from_utf8(self.take(n)?).map_err(|_| WireError::Malformed("string not UTF-8"))
    }
    fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.0)
    }
    fn end(&self) -> Result<(), WireError> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(WireError::Malformed("trailing bytes in body"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn owd() -> impl Strategy<Value = OwdSample> {
        (
            any::<u8>(),
            any::<u64>(),
            any::<u64>(),
            any::<u32>(),
            any::<u64>(),
        )
            .prop_map(|(path, dsn, send_time, bif, recv_time)| OwdSample {
                path,
                dsn,
                send_time,
                bif,
                recv_time,
            })
    }

    /// Owned stand-in for a frame, so proptest can generate the borrowed fields.
    #[derive(Clone, Debug)]
    enum Owned {
        Data(u32, u64, u64, u32, Vec<u8>),
        Ack(u32, u64, u64, Vec<(u64, u64)>, Vec<OwdSample>),
        Window(u32, u64),
        Open(u32, u16, String, String),
        Opened(u32, u8),
        Close(u32, u64),
        Reset(u32, u8),
    }

    impl Owned {
        fn frame(&self) -> Frame<'_> {
            match self {
                Owned::Data(c, d, t, b, p) => Frame::Data {
                    conn: *c,
                    dsn: *d,
                    send_time: *t,
                    bif: *b,
                    payload: p,
                },
                Owned::Ack(c, a, w, s, o) => Frame::Ack {
                    conn: *c,
                    data_ack: *a,
                    rwnd: *w,
                    sacks: s.clone(),
                    owd: o.clone(),
                },
                Owned::Window(c, w) => Frame::Window { conn: *c, rwnd: *w },
                Owned::Open(c, p, h, s) => Frame::Open {
                    conn: *c,
                    port: *p,
                    host: h,
                    sched: s,
                },
                Owned::Opened(c, s) => Frame::Opened {
                    conn: *c,
                    status: *s,
                },
                Owned::Close(c, d) => Frame::Close {
                    conn: *c,
                    final_dsn: *d,
                },
                Owned::Reset(c, r) => Frame::Reset {
                    conn: *c,
                    reason: *r,
                },
            }
        }
    }

    fn owned() -> impl Strategy<Value = Owned> {
        let sack = (any::<u64>(), 1..1000u64).prop_map(|(s, l)| (s / 2, s / 2 + l));
        prop_oneof![
            (
                any::<u32>(),
                any::<u64>(),
                any::<u64>(),
                any::<u32>(),
                proptest::collection::vec(any::<u8>(), 0..2000)
            )
                .prop_map(|(a, b, c, d, e)| Owned::Data(a, b, c, d, e)),
            (
                any::<u32>(),
                any::<u64>(),
                any::<u64>(),
                proptest::collection::vec(sack, 0..=MAX_SACKS),
                proptest::collection::vec(owd(), 0..=MAX_OWD)
            )
                .prop_map(|(a, b, c, d, e)| Owned::Ack(a, b, c, d, e)),
            (any::<u32>(), any::<u64>()).prop_map(|(a, b)| Owned::Window(a, b)),
            (
                any::<u32>(),
                any::<u16>(),
                "[a-z0-9.:-]{0,255}",
                "[a-z0-9:=.-]{0,40}"
            )
                .prop_map(|(a, b, c, d)| Owned::Open(a, b, c, d)),
            (any::<u32>(), any::<u8>()).prop_map(|(a, b)| Owned::Opened(a, b)),
            (any::<u32>(), any::<u64>()).prop_map(|(a, b)| Owned::Close(a, b)),
            (any::<u32>(), any::<u8>()).prop_map(|(a, b)| Owned::Reset(a, b)),
        ]
    }

    proptest! {
        #[test]
        fn any_frame_round_trips(frames in proptest::collection::vec(owned(), 1..6)) {
            let mut buf = Vec::new();
            for f in &frames {
                encode(&f.frame(), &mut buf).unwrap();
            }
            let mut at = 0;
            for f in &frames {
                let (g, used) = decode(&buf[at..]).unwrap().expect("complete frame");
                prop_assert_eq!(g, f.frame());
                at += used;
            }
            prop_assert_eq!(at, buf.len());
        }

        #[test]
        fn any_prefix_of_a_frame_asks_for_more(f in owned(), cut in 0usize..100) {
            let mut buf = Vec::new();
            encode(&f.frame(), &mut buf).unwrap();
            let cut = cut.min(buf.len() - 1);
            prop_assert_eq!(decode(&buf[..cut]).unwrap(), None);
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            if let Ok(Some((_, used))) = decode(&bytes) {
                prop_assert!(used <= bytes.len());
            }
            let _ = Hello::decode(&bytes);
        }

        #[test]
        fn hello_round_trips(flags: u8, npaths in 1u8..=8, path: u8, session: u64, nonce: [u8; 32]) {
            let h = Hello { flags, path: path % npaths, npaths, session, nonce };
            prop_assert_eq!(Hello::decode(&h.encode()).unwrap(), h);
        }
    }

    /// The short run of the fuzz targets (`crates/net/fuzz`) that CI can afford on stable:
    /// 200,000 mutations of valid frames; whatever decodes must encode back to its bytes.
    #[test]
    fn mutated_frames_never_panic_and_decoded_ones_reencode() {
        let mut seeds = Vec::new();
        for f in [
            Frame::Data {
                conn: 1,
                dsn: 9,
                send_time: 5,
                bif: 3,
                payload: b"abcdef",
            },
            Frame::Ack {
                conn: 2,
                data_ack: 100,
                rwnd: 7,
                sacks: vec![(200, 300), (400, 500)],
                owd: vec![OwdSample {
                    path: 1,
                    dsn: 4,
                    send_time: 5,
                    bif: 6,
                    recv_time: 7,
                }],
            },
            Frame::Open {
                conn: 3,
                port: 80,
                host: "example.com",
                sched: "dems-f",
            },
            Frame::Close {
                conn: 4,
                final_dsn: 8,
            },
        ] {
            let mut b = Vec::new();
            encode(&f, &mut b).unwrap();
            seeds.push(b);
        }
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for i in 0..200_000 {
            let mut b = seeds[i % seeds.len()].clone();
            for _ in 0..1 + next() % 4 {
                let at = (next() % b.len() as u64) as usize;
                match next() % 3 {
                    0 => b[at] = next() as u8,
                    1 => b.truncate(at),
                    _ => b.insert(at, next() as u8),
                }
                if b.is_empty() {
                    break;
                }
            }
            if let Ok(Some((f, used))) = decode(&b) {
                let mut again = Vec::new();
                encode(&f, &mut again).unwrap();
                assert_eq!(again, &b[..used]);
            }
        }
    }

    #[test]
    fn wrong_version_is_refused() {
        let mut buf = Vec::new();
        encode(&Frame::Window { conn: 1, rwnd: 2 }, &mut buf).unwrap();
        buf[0] = 2;
        assert_eq!(decode(&buf), Err(WireError::Version(2)));
    }

    #[test]
    fn trailing_bytes_in_a_fixed_body_are_refused() {
        let mut buf = Vec::new();
        encode(&Frame::Opened { conn: 1, status: 0 }, &mut buf).unwrap();
        buf[3] += 1;
        buf.push(0);
        assert!(matches!(decode(&buf), Err(WireError::Malformed(_))));
    }

    #[test]
    fn oversized_payload_is_refused_on_encode() {
        let big = vec![0u8; MAX_PAYLOAD + 1];
        let mut buf = Vec::new();
        let f = Frame::Data {
            conn: 0,
            dsn: 0,
            send_time: 0,
            bif: 0,
            payload: &big,
        };
        assert_eq!(encode(&f, &mut buf), Err(WireError::TooLarge));
        assert!(buf.is_empty());
    }

    #[test]
    fn ack_with_too_many_sacks_is_refused_on_decode() {
        let mut buf = vec![VERSION, T_ACK, 0, 0];
        buf.extend_from_slice(&[0; 4 + 8 + 8]);
        buf.push(MAX_SACKS as u8 + 1);
        let len = (buf.len() - HEADER_LEN) as u16;
        buf[2..4].copy_from_slice(&len.to_be_bytes());
        assert!(matches!(decode(&buf), Err(WireError::Malformed(_))));
    }
}
