//! The subflow handshake over a TCP stream (messages in [`wire`](super::wire), proofs in
//! [`auth`](super::auth)). Every read has a fixed length, so an unauthenticated peer costs
//! at most [`HELLO_LEN`] + [`PROOF_LEN`] bytes and the server's timeout.

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::auth::{nonce, Psk};
use super::wire::{Hello, CHALLENGE_LEN, HELLO_LEN, PROOF_LEN};

/// Client side: send the hello, prove the key, check the server's proof.
pub async fn client(s: &mut TcpStream, psk: &Psk, hello: &Hello) -> Result<(), String> {
    client_prove(s, psk, hello).await?.verify(s).await
}

/// Client side up to its own proof: what is left is reading the server's proof
/// ([`ServerProof::verify`]). A client that already knows the server holds the key (one full
/// handshake in this process succeeded) sends its first records right behind its proof and
/// checks the server's proof before it reads any record, saving a round trip per subflow;
/// the server reads those records only after it has checked the client's proof.
pub async fn client_prove(
    s: &mut TcpStream,
    psk: &Psk,
    hello: &Hello,
) -> Result<ServerProof, String> {
    let h = hello.encode();
    s.write_all(&h).await.map_err(lost)?;
    let mut ns = [0u8; CHALLENGE_LEN];
    s.read_exact(&mut ns).await.map_err(lost)?;
    s.write_all(&psk.client_proof(&h, &ns))
        .await
        .map_err(lost)?;
    Ok(ServerProof {
        psk: psk.clone(),
        hello: h,
        ns,
    })
}

fn lost(e: std::io::Error) -> String {
    format!(
        "server closed the subflow during authentication ({e}; wrong key or not an mpsched proxy?)"
    )
}

/// The server proof a client still has to read (see [`client_prove`]).
#[derive(Debug)]
pub struct ServerProof {
    psk: Psk,
    hello: [u8; HELLO_LEN],
    ns: [u8; CHALLENGE_LEN],
}

impl ServerProof {
    /// Read the server's proof and check it.
    pub async fn verify(self, s: &TcpStream) -> Result<(), String> {
        self.check(&read_proof(s).await?)
    }

    pub fn check(&self, proof: &[u8; PROOF_LEN]) -> Result<(), String> {
        if !self.psk.verify_server(&self.hello, &self.ns, proof) {
            return Err("server failed authentication (wrong key?)".into());
        }
        Ok(())
    }
}

/// Exactly [`PROOF_LEN`] bytes from a subflow another task may be writing to (records behind
/// the proof stay unread).
pub async fn read_proof(s: &TcpStream) -> Result<[u8; PROOF_LEN], String> {
    let mut proof = [0u8; PROOF_LEN];
    let mut have = 0;
    while have < PROOF_LEN {
        s.readable().await.map_err(lost)?;
        match s.try_read(&mut proof[have..]) {
            Ok(0) => return Err(lost(std::io::ErrorKind::UnexpectedEof.into())),
            Ok(n) => have += n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            Err(e) => return Err(lost(e)),
        }
    }
    Ok(proof)
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

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::net::TcpListener;

    fn key(s: &str) -> Psk {
        Psk::from_file_contents(s.as_bytes()).unwrap()
    }

    /// A server's side up to the client's proof: the accepted stream, the hello, the nonce it
    /// sent and the proof it read.
    async fn until_client_proof(
        l: &TcpListener,
    ) -> (
        TcpStream,
        [u8; HELLO_LEN],
        [u8; CHALLENGE_LEN],
        [u8; PROOF_LEN],
    ) {
        let (mut s, _) = l.accept().await.unwrap();
        let mut h = [0u8; HELLO_LEN];
        s.read_exact(&mut h).await.unwrap();
        let ns = nonce();
        s.write_all(&ns).await.unwrap();
        let mut proof = [0u8; PROOF_LEN];
        s.read_exact(&mut proof).await.unwrap();
        (s, h, ns, proof)
    }

    fn hello() -> Hello {
        Hello {
            flags: 1,
            path: 0,
            npaths: 1,
            session: 7,
            nonce: nonce(),
        }
    }

    /// A pipelined client sends its first record right behind its proof: a server that reads
    /// that record before it sends its own proof still completes (a client waiting for the
    /// server's proof first would deadlock here), and the client then checks the proof.
    #[tokio::test]
    async fn pipelined_client_sends_records_before_the_server_proof() {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let psk = key("a-shared-key-0123456789");
            let (mut s, h, ns, proof) = until_client_proof(&l).await;
            assert!(psk.verify_client(&h, &ns, &proof));
            let mut record = [0u8; 5];
            s.read_exact(&mut record).await.unwrap();
            s.write_all(&psk.server_proof(&h, &ns)).await.unwrap();
            record
        });
        let mut c = TcpStream::connect(addr).await.unwrap();
        let pending = client_prove(&mut c, &key("a-shared-key-0123456789"), &hello())
            .await
            .unwrap();
        c.write_all(b"OPEN!").await.unwrap();
        let got = tokio::time::timeout(std::time::Duration::from_secs(5), read_proof(&c))
            .await
            .expect("no deadlock")
            .unwrap();
        pending.check(&got).unwrap();
        assert_eq!(&server.await.unwrap(), b"OPEN!");
    }

    /// The server's proof for another key is refused after the fact.
    #[tokio::test]
    async fn pipelined_client_refuses_a_server_with_another_key() {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut s, h, ns, _) = until_client_proof(&l).await;
            let other = key("another-key-0123456789");
            s.write_all(&other.server_proof(&h, &ns)).await.unwrap();
        });
        let mut c = TcpStream::connect(addr).await.unwrap();
        let pending = client_prove(&mut c, &key("a-shared-key-0123456789"), &hello())
            .await
            .unwrap();
        let got = read_proof(&c).await.unwrap();
        let err = pending.check(&got).unwrap_err();
        assert!(err.contains("wrong key"), "{err}");
    }
}
