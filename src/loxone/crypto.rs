//! Loxone command encryption (loxone-protocol.md §3.4), transport-free: the HTTP client and the
//! WebSocket link both build on it.
//!
//! - [`PublicKey`]: the Miniserver's RSA key from `jdev/sys/getPublicKey`, delivered as one line
//!   `-----BEGIN CERTIFICATE-----{base64 SubjectPublicKeyInfo}-----END CERTIFICATE-----` (the
//!   markers lie: it is a bare public key). Used for RSA PKCS#1 v1.5 encryption only.
//! - [`SessionKey`]: a random AES-256-CBC key (32 bytes) and IV (16 bytes). The Miniserver
//!   learns it as `base64(RSA("{keyHex}:{ivHex}"))`: once per WebSocket session
//!   (`jdev/sys/keyexchange/{...}`) or with every HTTP request (`?sk={...}`).
//! - Commands are encrypted as `salt/{randomHex}/{cmd}`, AES-CBC with zero padding, base64,
//!   URI-encoded into `jdev/sys/enc/{cipher}` (`fenc` also encrypts the answer: the body is then
//!   base64 of the AES-encrypted JSON, same key and IV).
//!
//! Errors are [`CryptoError`]; nothing here panics on bad input.

use std::fmt;

use aes::Aes256;
use base64::prelude::{Engine as _, BASE64_STANDARD};
use cbc::cipher::block_padding::ZeroPadding;
use cbc::cipher::{BlockDecryptMut, BlockEncryptMut, KeyIvInit};
use percent_encoding::{utf8_percent_encode, NON_ALPHANUMERIC};
use rsa::pkcs1::DecodeRsaPublicKey;
use rsa::pkcs8::DecodePublicKey;
use rsa::{Pkcs1v15Encrypt, RsaPublicKey};

type Enc = cbc::Encryptor<Aes256>;
type Dec = cbc::Decryptor<Aes256>;

/// Errors of the encryption layer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CryptoError {
    /// The `getPublicKey` text is not an RSA public key (SPKI or PKCS#1 DER in base64).
    PublicKey(String),
    /// RSA encryption failed (e.g. the key is too short for `"{keyHex}:{ivHex}"`).
    Rsa(String),
    /// The OS random number generator failed.
    Random(String),
    /// A ciphertext is not base64, not a whole number of AES blocks, or not UTF-8 text.
    Decrypt(String),
}

impl fmt::Display for CryptoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CryptoError::PublicKey(m) => write!(f, "Miniserver public key: {m}"),
            CryptoError::Rsa(m) => write!(f, "RSA encryption: {m}"),
            CryptoError::Random(m) => write!(f, "random numbers: {m}"),
            CryptoError::Decrypt(m) => write!(f, "decryption: {m}"),
        }
    }
}

impl std::error::Error for CryptoError {}

/// The Miniserver's RSA public key (`jdev/sys/getPublicKey`).
#[derive(Clone, PartialEq, Eq)]
pub struct PublicKey(RsaPublicKey);

impl fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use rsa::traits::PublicKeyParts;
        write!(f, "PublicKey({} bits)", self.0.n().bits())
    }
}

impl PublicKey {
    /// Parses the `value` of `getPublicKey`: the one-line `-----BEGIN CERTIFICATE-----...`
    /// form, a regular `PUBLIC KEY` / `RSA PUBLIC KEY` PEM, or bare base64. The DER inside may
    /// be a SubjectPublicKeyInfo (what Miniservers send) or a PKCS#1 `RSAPublicKey`.
    pub fn parse(text: &str) -> Result<PublicKey, CryptoError> {
        let mut body = String::with_capacity(text.len());
        let mut rest = text.trim();
        // Drop every `-----...-----` marker, keep the base64 between them.
        while let Some(start) = rest.find("-----") {
            body.push_str(&rest[..start]);
            let after = &rest[start + 5..];
            let end = after
                .find("-----")
                .ok_or_else(|| CryptoError::PublicKey("unterminated PEM marker".into()))?;
            rest = &after[end + 5..];
        }
        body.push_str(rest);
        let b64: String = body.chars().filter(|c| !c.is_whitespace()).collect();
        if b64.is_empty() {
            return Err(CryptoError::PublicKey("empty key".into()));
        }
        let der = BASE64_STANDARD
            .decode(b64.as_bytes())
            .map_err(|e| CryptoError::PublicKey(format!("not base64: {e}")))?;
        RsaPublicKey::from_public_key_der(&der)
            .or_else(|_| RsaPublicKey::from_pkcs1_der(&der))
            .map(PublicKey)
            .map_err(|e| CryptoError::PublicKey(format!("not an RSA public key: {e}")))
    }

    /// RSA PKCS#1 v1.5 encryption of `data` (at most key size - 11 bytes).
    pub fn encrypt(&self, data: &[u8]) -> Result<Vec<u8>, CryptoError> {
        self.0
            .encrypt(&mut rand_core::OsRng, Pkcs1v15Encrypt, data)
            .map_err(|e| CryptoError::Rsa(e.to_string()))
    }
}

/// An AES-256-CBC key and IV for one WebSocket session or one HTTP request.
#[derive(Clone, PartialEq, Eq)]
pub struct SessionKey {
    key: [u8; 32],
    iv: [u8; 16],
}

impl fmt::Debug for SessionKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SessionKey(<redacted>)")
    }
}

impl SessionKey {
    /// A fresh random key and IV from the OS.
    ///
    /// # Panics
    /// Only when the operating system has no random number generator (see
    /// [`SessionKey::try_new`] for the fallible form).
    pub fn new() -> SessionKey {
        Self::try_new().expect("the OS random number generator works")
    }

    /// A fresh random key and IV, or [`CryptoError::Random`].
    pub fn try_new() -> Result<SessionKey, CryptoError> {
        let mut key = [0u8; 32];
        let mut iv = [0u8; 16];
        getrandom::fill(&mut key).map_err(|e| CryptoError::Random(e.to_string()))?;
        getrandom::fill(&mut iv).map_err(|e| CryptoError::Random(e.to_string()))?;
        Ok(SessionKey { key, iv })
    }

    /// `"{keyHex}:{ivHex}"` (lowercase hex, 64 + 1 + 32 characters), the RSA plaintext.
    pub fn key_iv_text(&self) -> String {
        format!("{}:{}", hex::encode(self.key), hex::encode(self.iv))
    }

    /// `base64(RSA-PKCS1v15(pk, "{keyHex}:{ivHex}"))`, no line wraps and not URI-encoded: the
    /// payload of `jdev/sys/keyexchange/{...}` (WebSocket). [`CryptoError::Rsa`] for keys under
    /// 872 bits (the text is 97 bytes).
    pub fn rsa_encrypted_key_iv(&self, pk: &PublicKey) -> Result<String, CryptoError> {
        let cipher = pk.encrypt(self.key_iv_text().as_bytes())?;
        Ok(BASE64_STANDARD.encode(cipher))
    }

    /// AES-256-CBC of `plain` with zero padding (nothing is added to a whole block).
    pub fn encrypt(&self, plain: &[u8]) -> Vec<u8> {
        Enc::new(&self.key.into(), &self.iv.into()).encrypt_padded_vec_mut::<ZeroPadding>(plain)
    }

    /// Inverse of [`SessionKey::encrypt`]; trailing zero bytes are removed.
    pub fn decrypt(&self, cipher: &[u8]) -> Result<Vec<u8>, CryptoError> {
        Dec::new(&self.key.into(), &self.iv.into())
            .decrypt_padded_vec_mut::<ZeroPadding>(cipher)
            .map_err(|_| CryptoError::Decrypt("not a whole number of AES blocks".into()))
    }

    /// `jdev/sys/enc/{cipher}` for `cmd` with a fresh random salt: the form for a WebSocket
    /// whose key exchange is done. `cipher` is the URI-encoded base64 of
    /// `AES("salt/{salt}/{cmd}")`.
    pub fn encrypt_command(&self, cmd: &str) -> String {
        format!("jdev/sys/enc/{}", self.cipher_segment(cmd, &random_salt()))
    }

    /// The URI-encoded base64 of `AES("salt/{salt}/{cmd}")`, the `{cipher}` segment.
    pub fn cipher_segment(&self, cmd: &str, salt: &str) -> String {
        let b64 = BASE64_STANDARD.encode(self.encrypt(format!("salt/{salt}/{cmd}").as_bytes()));
        utf8_percent_encode(&b64, NON_ALPHANUMERIC).to_string()
    }

    /// The HTTP form (one request, one key): `jdev/sys/{enc|fenc}/{cipher}?sk={rsa}` where `rsa`
    /// is the URI-encoded [`SessionKey::rsa_encrypted_key_iv`]. With `encrypt_answer` (`fenc`)
    /// the Miniserver's answer is encrypted too; read it with [`SessionKey::decrypt_answer`].
    pub fn http_command(
        &self,
        pk: &PublicKey,
        cmd: &str,
        encrypt_answer: bool,
    ) -> Result<String, CryptoError> {
        let sk = self.rsa_encrypted_key_iv(pk)?;
        Ok(format!(
            "jdev/sys/{}/{}?sk={}",
            if encrypt_answer { "fenc" } else { "enc" },
            self.cipher_segment(cmd, &random_salt()),
            utf8_percent_encode(&sk, NON_ALPHANUMERIC)
        ))
    }

    /// The text of a `fenc` answer body: base64 of AES-CBC (zero padded) JSON. Whitespace
    /// around the base64 is ignored.
    pub fn decrypt_answer(&self, body: &[u8]) -> Result<String, CryptoError> {
        let text = std::str::from_utf8(body)
            .map_err(|_| CryptoError::Decrypt("the answer is not text".into()))?;
        let cipher = BASE64_STANDARD
            .decode(text.trim())
            .map_err(|e| CryptoError::Decrypt(format!("the answer is not base64: {e}")))?;
        let plain = self.decrypt(&cipher)?;
        String::from_utf8(plain).map_err(|_| CryptoError::Decrypt("not UTF-8 text".into()))
    }
}

impl Default for SessionKey {
    fn default() -> Self {
        Self::new()
    }
}

/// 8 random bytes as hex (the salt of one encrypted command); a fixed salt if the OS RNG fails
/// (the salt only makes equal commands look different).
fn random_salt() -> String {
    let mut b = [0u8; 8];
    if getrandom::fill(&mut b).is_err() {
        b = *b"homemcp!";
    }
    hex::encode(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    impl SessionKey {
        /// A session key from known bytes (tests, vectors).
        fn from_parts(key: [u8; 32], iv: [u8; 16]) -> SessionKey {
            SessionKey { key, iv }
        }
    }

    /// NIST SP 800-38A F.2.5 (CBC-AES256.Encrypt), first two blocks: whole blocks get no
    /// zero padding, so the vector applies unchanged.
    #[test]
    fn aes_256_cbc_matches_nist_sp800_38a() {
        let key: [u8; 32] =
            hex::decode("603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4")
                .unwrap()
                .try_into()
                .unwrap();
        let iv: [u8; 16] = hex::decode("000102030405060708090a0b0c0d0e0f")
            .unwrap()
            .try_into()
            .unwrap();
        let plain = hex::decode("6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e51")
            .unwrap();
        let sk = SessionKey::from_parts(key, iv);
        let cipher = sk.encrypt(&plain);
        assert_eq!(
            hex::encode(&cipher),
            "f58c4c04d6e5f1ba779eabfb5f7bfbd69cfc4e967edb808d679f777bc6702c7d"
        );
        assert_eq!(sk.decrypt(&cipher).unwrap(), plain);
    }

    #[test]
    fn zero_padding_round_trips_and_bad_ciphertext_is_an_error() {
        let sk = SessionKey::new();
        let c = sk.encrypt(b"salt/ab/jdev/sys/getkey2/admin");
        assert_eq!(c.len(), 32);
        assert_eq!(sk.decrypt(&c).unwrap(), b"salt/ab/jdev/sys/getkey2/admin");
        assert!(sk.decrypt(&c[..20]).is_err());
        assert!(sk.decrypt_answer(b"not base64 !").is_err());
        assert!(sk.decrypt_answer(&[0xff, 0xfe]).is_err());
        assert_eq!(sk.key_iv_text().len(), 97);
        assert!(!format!("{sk:?}").contains(&hex::encode(sk.key)));
    }

    #[test]
    fn command_form() {
        let sk = SessionKey::new();
        let p = sk.encrypt_command("jdev/sys/getkey2/admin");
        assert!(p.starts_with("jdev/sys/enc/"));
        let seg = &p["jdev/sys/enc/".len()..];
        assert!(seg.chars().all(|c| c.is_ascii_alphanumeric() || c == '%'));
        let b64 = percent_encoding::percent_decode_str(seg)
            .decode_utf8()
            .unwrap();
        let plain = sk
            .decrypt(&BASE64_STANDARD.decode(b64.as_bytes()).unwrap())
            .unwrap();
        let plain = String::from_utf8(plain).unwrap();
        assert!(plain.starts_with("salt/"));
        assert!(plain.ends_with("/jdev/sys/getkey2/admin"));
    }

    #[test]
    fn bad_public_keys_are_errors() {
        assert!(PublicKey::parse("").is_err());
        assert!(PublicKey::parse("-----BEGIN CERTIFICATE-----").is_err());
        assert!(
            PublicKey::parse("-----BEGIN CERTIFICATE-----!!!-----END CERTIFICATE-----").is_err()
        );
        assert!(
            PublicKey::parse("-----BEGIN CERTIFICATE-----QUJD-----END CERTIFICATE-----").is_err()
        );
    }
}
