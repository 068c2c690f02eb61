//! The subflow handshake over a TCP stream (messages in [`wire`](super::wire), proofs in
//! [`auth`](super::auth)). Every read has a fixed length, so an unauthenticated peer costs
//! at most [`HELLO_LEN`] + [`PROOF_LEN`] bytes and the server's timeout.

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::auth::{nonce, Psk};
use super::wire::{Hello, CHALLENGE_LEN, HELLO_LEN, PROOF_LEN};

/// Client side: send the hello, prove the key, check the server's proof.
pub async fn client(s: &mut TcpStream, psk: &Psk, hello: &Hello) -> Result<(), String> {
    let h = hello.encode();
    let lost = |e: std::io::Error| {
        format!("server closed the subflow during authentication ({e}; wrong key or not an mpsched proxy?)")
    };
    s.write_all(&h).await.map_err(lost)?;
    let mut ns = [0u8; CHALLENGE_LEN];
    s.read_exact(&mut ns).await.map_err(lost)?;
    s.write_all(&psk.client_proof(&h, &ns))
        .await
        .map_err(lost)?;
    let mut proof = [0u8; PROOF_LEN];
    s.read_exact(&mut proof).await.map_err(lost)?;
    if !psk.verify_server(&h, &ns, &proof) {
        return Err("server failed authentication (wrong key?)".into());
    }
    Ok(())
}

/// Server side: the authenticated hello, or `None` (the caller drops the connection).
pub async fn server(s: &mut TcpStream, psk: &Psk) -> Option<Hello> {
    let mut h = [0u8; HELLO_LEN];
    s.read_exact(&mut h).await.ok()?;
    let hello = Hello::decode(&h).ok()?;
    let ns = nonce();
    s.write_all(&ns).await.ok()?;
    let mut proof = [0u8; PROOF_LEN];
    s.read_exact(&mut proof).await.ok()?;
    if !psk.verify_client(&h, &ns, &proof) {
        return None;
    }
    s.write_all(&psk.server_proof(&h, &ns)).await.ok()?;
    Some(hello)
}
