//! Subflow authentication with a pre-shared key: HMAC-SHA256 over both nonces.
//!
//! 1. client → server: [`Hello`](super::wire::Hello) with the client nonce `Nc`;
//! 2. server → client: the server nonce `Ns` (fresh per subflow, so proofs cannot be replayed);
//! 3. client → server: `HMAC(K, "mpsched client" | hello | Ns)`;
//! 4. server → client: `HMAC(K, "mpsched server" | hello | Ns)`.
//!
//! The client proves itself first, so an unauthenticated peer learns nothing but a random
//! nonce; the server's proof then authenticates it to the client. Proofs are compared in
//! constant time (`Mac::verify_slice`).

use hmac::{Hmac, Mac};
use sha2::Sha256;

use super::wire::{HELLO_LEN, MAC_LEN, NONCE_LEN};

type HmacSha256 = Hmac<Sha256>;

const CLIENT_LABEL: &[u8] = b"mpsched client";
const SERVER_LABEL: &[u8] = b"mpsched server";

/// The pre-shared key.
#[derive(Clone)]
pub struct Psk(Vec<u8>);

impl std::fmt::Debug for Psk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Psk(..)")
    }
}

/// Shortest key accepted: 16 bytes (128 bits).
pub const MIN_PSK_LEN: usize = 16;

impl Psk {
    /// The key file's contents, surrounding whitespace removed.
    pub fn from_file_contents(bytes: &[u8]) -> Result<Psk, String> {
        let s = bytes.trim_ascii();
        if s.len() < MIN_PSK_LEN {
            return Err(format!(
                "key is {} bytes; at least {MIN_PSK_LEN} required",
                s.len()
            ));
        }
        Ok(Psk(s.to_vec()))
    }

    fn mac(
        &self,
        label: &[u8],
        hello: &[u8; HELLO_LEN],
        server_nonce: &[u8; NONCE_LEN],
    ) -> HmacSha256 {
        let mut m = HmacSha256::new_from_slice(&self.0).expect("HMAC takes any key length");
        m.update(label);
        m.update(hello);
        m.update(server_nonce);
        m
    }

    pub fn client_proof(&self, hello: &[u8; HELLO_LEN], ns: &[u8; NONCE_LEN]) -> [u8; MAC_LEN] {
        self.mac(CLIENT_LABEL, hello, ns)
            .finalize()
            .into_bytes()
            .into()
    }
    pub fn server_proof(&self, hello: &[u8; HELLO_LEN], ns: &[u8; NONCE_LEN]) -> [u8; MAC_LEN] {
        self.mac(SERVER_LABEL, hello, ns)
            .finalize()
            .into_bytes()
            .into()
    }
    pub fn verify_client(
        &self,
        hello: &[u8; HELLO_LEN],
        ns: &[u8; NONCE_LEN],
        proof: &[u8],
    ) -> bool {
        self.mac(CLIENT_LABEL, hello, ns)
            .verify_slice(proof)
            .is_ok()
    }
    pub fn verify_server(
        &self,
        hello: &[u8; HELLO_LEN],
        ns: &[u8; NONCE_LEN],
        proof: &[u8],
    ) -> bool {
        self.mac(SERVER_LABEL, hello, ns)
            .verify_slice(proof)
            .is_ok()
    }
}

/// A fresh random nonce from the operating system.
pub fn nonce() -> [u8; NONCE_LEN] {
    let mut n = [0u8; NONCE_LEN];
    rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, &mut n);
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(s: &str) -> Psk {
        Psk::from_file_contents(s.as_bytes()).unwrap()
    }

    #[test]
    fn same_key_proofs_verify_both_ways() {
        let (h, ns) = ([7u8; HELLO_LEN], [9u8; NONCE_LEN]);
        let k = key("0123456789abcdef0123");
        assert!(k.verify_client(&h, &ns, &k.client_proof(&h, &ns)));
        assert!(k.verify_server(&h, &ns, &k.server_proof(&h, &ns)));
    }

    #[test]
    fn wrong_key_proof_is_refused() {
        let (h, ns) = ([7u8; HELLO_LEN], [9u8; NONCE_LEN]);
        let proof = key("0123456789abcdef0123").client_proof(&h, &ns);
        assert!(!key("0123456789abcdef0124").verify_client(&h, &ns, &proof));
    }

    #[test]
    fn client_proof_is_no_server_proof() {
        let (h, ns) = ([7u8; HELLO_LEN], [9u8; NONCE_LEN]);
        let k = key("0123456789abcdef0123");
        assert!(!k.verify_server(&h, &ns, &k.client_proof(&h, &ns)));
    }

    #[test]
    fn proof_for_another_server_nonce_is_refused() {
        let h = [7u8; HELLO_LEN];
        let k = key("0123456789abcdef0123");
        let proof = k.client_proof(&h, &[1; NONCE_LEN]);
        assert!(!k.verify_client(&h, &[2; NONCE_LEN], &proof));
    }

    #[test]
    fn short_key_is_refused() {
        assert!(Psk::from_file_contents(b"short\n").is_err());
    }
}
