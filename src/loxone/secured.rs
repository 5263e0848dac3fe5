//! Loxone hashing (loxone-protocol.md §2.4 secured commands, §3.2 hashing), used for the
//! visualisation password of secured controls (`isSecured`) and reusable for token auth.
//!
//! The Miniserver hands out a one-time `key` (hex), a `salt` and a `hashAlg` (`SHA1` or
//! `SHA256`; absent on old firmware, meaning SHA1) through `jdev/sys/getvisusalt/{user}` (or
//! `getkey2/{user}` for the user password). Then:
//!
//! 1. `pwHash` = **uppercase** hex of `hashAlg("{secret}:{salt}")`;
//! 2. `hash` = lowercase hex of `HMAC-hashAlg(key = hex_decode(key), msg)`, where `msg` is
//!    `pwHash` for a secured command and `"{user}:{pwHash}"` for a credentials hash.
//!
//! A secured command is `jdev/sps/ios/{hash}/{uuid}/{command}`; the Miniserver answers code
//! 200 when the password was right and the command ran, 500 when the password was wrong.

use hmac::{Hmac, Mac};
use serde_json::Value as Json;
use sha1::Sha1;
use sha2::{Digest, Sha256};

/// The hash algorithm the Miniserver asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HashAlg {
    Sha1,
    Sha256,
}

impl HashAlg {
    /// `"SHA1"` / `"SHA256"` (case-insensitive); anything else is refused.
    pub fn parse(s: &str) -> Option<HashAlg> {
        match s.trim().to_ascii_uppercase().as_str() {
            "SHA1" => Some(HashAlg::Sha1),
            "SHA256" => Some(HashAlg::Sha256),
            _ => None,
        }
    }
}

/// `key`, `salt` and `hashAlg` of a `getvisusalt` (or `getkey2`) answer.
#[derive(Clone, PartialEq, Eq)]
pub struct KeySalt {
    /// The HMAC key, hex-encoded as the Miniserver sends it.
    pub key: String,
    pub salt: String,
    pub alg: HashAlg,
}

impl std::fmt::Debug for KeySalt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key and salt are one-time values, but together with a logged hash they would allow
        // guessing a short PIN offline: keep them out of logs.
        f.debug_struct("KeySalt")
            .field("alg", &self.alg)
            .finish_non_exhaustive()
    }
}

impl KeySalt {
    /// Reads the `value` object `{"key": "...", "salt": "...", "hashAlg": "SHA256"}` of an `LL`
    /// answer; a missing `hashAlg` means SHA1 (firmware before 10.3, §3.2).
    pub fn from_value(value: &Json) -> Result<KeySalt, String> {
        let field = |k: &str| value.get(k).and_then(Json::as_str);
        let key = field("key").ok_or("no key in the answer")?;
        let salt = field("salt").ok_or("no salt in the answer")?;
        let alg = match field("hashAlg") {
            None => HashAlg::Sha1,
            Some(a) => HashAlg::parse(a).ok_or_else(|| format!("unknown hashAlg {a:?}"))?,
        };
        if key.is_empty() || hex::decode(key).is_err() {
            return Err("the key is not hex".into());
        }
        Ok(KeySalt {
            key: key.to_string(),
            salt: salt.to_string(),
            alg,
        })
    }
}

/// Uppercase hex of `alg("{secret}:{salt}")` (step 1).
pub fn secret_hash(alg: HashAlg, secret: &str, salt: &str) -> String {
    let text = format!("{secret}:{salt}");
    match alg {
        HashAlg::Sha1 => hex::encode_upper(Sha1::digest(text.as_bytes())),
        HashAlg::Sha256 => hex::encode_upper(Sha256::digest(text.as_bytes())),
    }
}

/// Lowercase hex of `HMAC-alg(key, msg)` (step 2); `key` is the raw key bytes.
pub fn hmac_hex(alg: HashAlg, key: &[u8], msg: &str) -> String {
    match alg {
        HashAlg::Sha1 => {
            let mut mac = Hmac::<Sha1>::new_from_slice(key).expect("HMAC takes keys of any length");
            mac.update(msg.as_bytes());
            hex::encode(mac.finalize().into_bytes())
        }
        HashAlg::Sha256 => {
            let mut mac =
                Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes keys of any length");
            mac.update(msg.as_bytes());
            hex::encode(mac.finalize().into_bytes())
        }
    }
}

/// The `{hash}` of `jdev/sps/ios/{hash}/...` for `visu_password`.
pub fn visu_hash(visu_password: &str, ks: &KeySalt) -> String {
    let pw_hash = secret_hash(ks.alg, visu_password, &ks.salt);
    hmac_hex(ks.alg, &key_bytes(ks), &pw_hash)
}

/// The credentials hash of `getjwt`/`gettoken` (`HMAC(key, "{user}:{pwHash}")`, §3.2).
pub fn credentials_hash(user: &str, password: &str, ks: &KeySalt) -> String {
    let pw_hash = secret_hash(ks.alg, password, &ks.salt);
    hmac_hex(ks.alg, &key_bytes(ks), &format!("{user}:{pw_hash}"))
}

fn key_bytes(ks: &KeySalt) -> Vec<u8> {
    // Checked in `from_value`; a hand-built KeySalt with a bad key hashes with no key, which
    // the Miniserver refuses like a wrong password.
    hex::decode(&ks.key).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_hash_is_uppercase_hex() {
        // sha1("abc") and sha256("abc") are the FIPS test vectors; here the text is "ab:c".
        let h = secret_hash(HashAlg::Sha1, "ab", "c");
        assert_eq!(h.len(), 40);
        assert_eq!(h, h.to_uppercase());
        assert_eq!(secret_hash(HashAlg::Sha256, "ab", "c").len(), 64);
    }

    #[test]
    fn hmac_matches_rfc_vectors() {
        // RFC 2202 test case 2 (HMAC-SHA1) and RFC 4231 test case 2 (HMAC-SHA256).
        assert_eq!(
            hmac_hex(HashAlg::Sha1, b"Jefe", "what do ya want for nothing?"),
            "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79"
        );
        assert_eq!(
            hmac_hex(HashAlg::Sha256, b"Jefe", "what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    /// Vectors computed independently (Python hashlib/hmac) for key `"1234567890abcdef"`
    /// (hex `3132...6566`), salt `"salt"` (hex `73616c74` as the Miniserver sends it).
    #[test]
    fn visu_and_credentials_hashes_match_independent_vectors() {
        let ks = |alg| KeySalt {
            key: "31323334353637383930616263646566".into(),
            salt: "73616c74".into(),
            alg,
        };
        assert_eq!(
            secret_hash(HashAlg::Sha1, "1234", "73616c74"),
            "35531D1814C1992582D4DBB36F42A966F2E08F44"
        );
        assert_eq!(
            visu_hash("1234", &ks(HashAlg::Sha1)),
            "f8df7d16e1ba7cc533ec3fd3062343ceafa8f273"
        );
        assert_eq!(
            visu_hash("1234", &ks(HashAlg::Sha256)),
            "f4ea92045180506d2b62446e57cbfbfb4c63aca257d833463874e7967b35f7ff"
        );
        assert_eq!(
            credentials_hash("admin", "secret", &ks(HashAlg::Sha1)),
            "ccbdee2ed3fc33a64ac02edf328c82277a2e969a"
        );
        assert_eq!(
            credentials_hash("admin", "secret", &ks(HashAlg::Sha256)),
            "6fc3b8f13266cfd864129103e4a31aca34461932c8b1c5cac68169ddd1534a52"
        );
    }

    #[test]
    fn key_salt_reads_the_answer() {
        let v = serde_json::json!({"key": "4142", "salt": "3132", "hashAlg": "SHA256"});
        let ks = KeySalt::from_value(&v).unwrap();
        assert_eq!(ks.alg, HashAlg::Sha256);
        let old = serde_json::json!({"key": "4142", "salt": "3132"});
        assert_eq!(KeySalt::from_value(&old).unwrap().alg, HashAlg::Sha1);
        assert!(KeySalt::from_value(&serde_json::json!({"key": "zz", "salt": "1"})).is_err());
        assert!(KeySalt::from_value(&serde_json::json!({"salt": "1"})).is_err());
        assert!(KeySalt::from_value(
            &serde_json::json!({"key": "41", "salt": "1", "hashAlg": "MD5"})
        )
        .is_err());
        assert!(!format!("{ks:?}").contains("4142"));
    }
}
