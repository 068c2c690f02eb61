//! SOCKS5 ingress (RFC 1928): no authentication (method 0x00), CONNECT only; every other
//! request gets the RFC's error reply and the connection is closed.

use std::net::{Ipv4Addr, Ipv6Addr};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// RFC 1928 §6 reply codes.
pub const SUCCEEDED: u8 = 0x00;
pub const GENERAL_FAILURE: u8 = 0x01;
pub const NOT_ALLOWED: u8 = 0x02;
pub const NETWORK_UNREACHABLE: u8 = 0x03;
pub const HOST_UNREACHABLE: u8 = 0x04;
pub const CONNECTION_REFUSED: u8 = 0x05;
pub const TTL_EXPIRED: u8 = 0x06;
pub const COMMAND_NOT_SUPPORTED: u8 = 0x07;
pub const ADDRESS_TYPE_NOT_SUPPORTED: u8 = 0x08;

const NO_AUTH: u8 = 0x00;
const NO_ACCEPTABLE_METHOD: u8 = 0xFF;
const CMD_CONNECT: u8 = 0x01;

/// A CONNECT request's destination.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub host: String,
    pub port: u16,
}

/// Why a SOCKS5 exchange failed: the reply code to send (if any) and a message.
#[derive(Debug)]
pub struct SocksError {
    pub reply: Option<u8>,
    pub msg: String,
}

fn fail(reply: Option<u8>, msg: impl Into<String>) -> SocksError {
    SocksError {
        reply,
        msg: msg.into(),
    }
}

/// The reply to a CONNECT (bound address 0.0.0.0:0: the proxy does not expose it).
pub fn reply(code: u8) -> [u8; 10] {
    [5, code, 0, 1, 0, 0, 0, 0, 0, 0]
}

/// Read the greeting and the request; answers the method selection and, on a bad request,
/// the error reply. The caller sends the final reply after trying the connection.
pub async fn accept(s: &mut TcpStream) -> Result<Target, SocksError> {
    let io = |e: std::io::Error| fail(None, format!("socks: {e}"));
    let mut head = [0u8; 2];
    s.read_exact(&mut head).await.map_err(io)?;
    if head[0] != 5 {
        return Err(fail(
            None,
            format!("socks: version {} is not SOCKS5", head[0]),
        ));
    }
    let mut methods = vec![0u8; head[1] as usize];
    s.read_exact(&mut methods).await.map_err(io)?;
    if !methods.contains(&NO_AUTH) {
        s.write_all(&[5, NO_ACCEPTABLE_METHOD]).await.map_err(io)?;
        return Err(fail(
            None,
            "socks: client offers no method without authentication",
        ));
    }
    s.write_all(&[5, NO_AUTH]).await.map_err(io)?;
    let mut req = [0u8; 4];
    s.read_exact(&mut req).await.map_err(io)?;
    let refuse = |code, msg: &str| fail(Some(code), format!("socks: {msg}"));
    if req[0] != 5 {
        return Err(refuse(GENERAL_FAILURE, "request version is not 5"));
    }
    let host = match req[3] {
        1 => {
            let mut a = [0u8; 4];
            s.read_exact(&mut a).await.map_err(io)?;
            Ipv4Addr::from(a).to_string()
        }
        3 => {
            let mut n = [0u8; 1];
            s.read_exact(&mut n).await.map_err(io)?;
            let mut name = vec![0u8; n[0] as usize];
            s.read_exact(&mut name).await.map_err(io)?;
            match String::from_utf8(name) {
                Ok(h) if !h.is_empty() => h,
                _ => return Err(refuse(GENERAL_FAILURE, "domain name is empty or not UTF-8")),
            }
        }
        4 => {
            let mut a = [0u8; 16];
            s.read_exact(&mut a).await.map_err(io)?;
            Ipv6Addr::from(a).to_string()
        }
        t => {
            return Err(refuse(
                ADDRESS_TYPE_NOT_SUPPORTED,
                &format!("address type {t} not supported"),
            ))
        }
    };
    let mut port = [0u8; 2];
    s.read_exact(&mut port).await.map_err(io)?;
    if req[1] != CMD_CONNECT {
        return Err(refuse(
            COMMAND_NOT_SUPPORTED,
            &format!("command {} not supported (CONNECT only)", req[1]),
        ));
    }
    Ok(Target {
        host,
        port: u16::from_be_bytes(port),
    })
}

/// The SOCKS5 reply for a failed upstream connection.
pub fn code_for(e: &std::io::Error) -> u8 {
    use std::io::ErrorKind as K;
    match e.kind() {
        K::ConnectionRefused => CONNECTION_REFUSED,
        K::TimedOut => TTL_EXPIRED,
        _ => match e.raw_os_error() {
            Some(libc::ENETUNREACH) => NETWORK_UNREACHABLE,
            Some(libc::EHOSTUNREACH) => HOST_UNREACHABLE,
            _ => GENERAL_FAILURE,
        },
    }
}
