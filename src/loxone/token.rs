//! Loxone token authentication (loxone-protocol.md §3.2, §3.3), independent of the transport.
//!
//! The login is a short conversation through an [`Exchange`] (the HTTP client implements it
//! with one RSA-wrapped session key per request, the WebSocket link with its key exchange):
//!
//! 1. `jdev/sys/getkey2/{user}` -> one-time `key`, `salt`, `hashAlg` (SHA1 or SHA256);
//! 2. `jdev/sys/getjwt/{hash}/{user}/{permission}/{clientUuid}/{info}`, **encrypted**, where
//!    `hash` is [`secured::credentials_hash`] -> [`Token`] (`token`, `key`, `validUntil` in
//!    seconds since 2009-01-01, `tokenRights`, `unsecurePass`);
//! 3. every later request carries the token hash: `?autht={hash}&user={user}` on HTTP,
//!    `authwithtoken/{hash}/{user}` on the WebSocket.
//!
//! The token hash is `HMAC-hashAlg(key = hex_decode(key), token)` in lowercase hex, with the
//! `key` of the getjwt answer (or `jdev/sys/getkey` when absent). Since 11.2 the plain token
//! would also do; we send the HMAC because it works on every firmware with JWTs (10.2+) and
//! never puts the token itself on a plain-HTTP wire.
//!
//! [`TokenAuth`] holds one token: [`TokenAuth::needs_refresh`] says when to call
//! [`TokenAuth::refresh`] (`refreshjwt`, before half of the lifetime or one day is left,
//! whichever is sooner) and [`TokenAuth::kill`] (`killtoken`) ends it at shutdown.

use std::fmt;

use percent_encoding::{utf8_percent_encode, NON_ALPHANUMERIC};
use serde_json::Value as Json;

use super::answer::{LlAnswer, LoxoneError};
use super::secured::{self, HashAlg, KeySalt};
use crate::home::time::{loxone_now, LOXONE_EPOCH_UNIX};

/// Refresh at the latest when this many seconds of a token are left (PyLoxone: one day).
const REFRESH_MARGIN_SECS: u64 = 24 * 3600;

/// One request/answer with the Miniserver, for the login conversation.
pub trait Exchange {
    /// Sends `cmd` (e.g. `jdev/sys/getkey2/admin`, no leading slash) and returns the `LL`
    /// answer with code 200; other codes are errors (401 [`LoxoneError::Unauthorized`], 404
    /// [`LoxoneError::NotFound`], 400 [`LoxoneError::Status`]). With `encrypted` the command
    /// goes through `jdev/sys/enc` (HTTP: `fenc`, so the answer is encrypted too).
    fn request(&mut self, cmd: &str, encrypted: bool) -> Result<LlAnswer, LoxoneError>;
}

/// The `value` of a getjwt (or refreshjwt) answer.
#[derive(Clone, PartialEq, Eq)]
pub struct Token {
    /// The token text (a JWT on current firmware).
    pub token: String,
    /// Hex key for hashing the token; empty in refreshjwt answers.
    pub key: String,
    /// Expiry in seconds since 2009-01-01 UTC ([`LOXONE_EPOCH_UNIX`]).
    pub valid_until: u64,
    /// Permission bits (§3.3: 0x2 web, 0x4 app, ...).
    pub rights: u64,
    /// The Miniserver considers the password insecure.
    pub unsecure_pass: bool,
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Token")
            .field("valid_until", &self.valid_until)
            .field("rights", &self.rights)
            .field("unsecure_pass", &self.unsecure_pass)
            .finish_non_exhaustive()
    }
}

impl Token {
    /// Reads `{"token": "...", "key": "...", "validUntil": 342151839, "tokenRights": 1666,
    /// "unsecurePass": false}`; `token` and `validUntil` are required, the rest default to
    /// empty/0/false.
    pub fn from_value(v: &Json) -> Result<Token, String> {
        let token = v
            .get("token")
            .and_then(Json::as_str)
            .filter(|t| !t.is_empty())
            .ok_or("no token in the answer")?;
        let valid_until = v
            .get("validUntil")
            .and_then(Json::as_u64)
            .ok_or("no validUntil in the answer")?;
        let key = v.get("key").and_then(Json::as_str).unwrap_or("");
        if !key.is_empty() && hex::decode(key).is_err() {
            return Err("the token key is not hex".into());
        }
        Ok(Token {
            token: token.to_string(),
            key: key.to_string(),
            valid_until,
            rights: v.get("tokenRights").and_then(Json::as_u64).unwrap_or(0),
            unsecure_pass: v
                .get("unsecurePass")
                .and_then(Json::as_bool)
                .unwrap_or(false),
        })
    }

    /// Expiry as Unix seconds.
    pub fn valid_until_unix(&self) -> u64 {
        self.valid_until + LOXONE_EPOCH_UNIX
    }
}

/// What getjwt asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenRequest {
    /// 2 = web (short-lived, default), 4 = app (weeks).
    pub permission: u32,
    /// Loxone-format UUID naming this client, e.g. `098802e1-02b4-603c-ffffeee000d80cfd`.
    pub client_uuid: String,
    /// Client name shown in the Miniserver's token list.
    pub info: String,
}

impl Default for TokenRequest {
    fn default() -> Self {
        let mut b = [0u8; 16];
        if getrandom::fill(&mut b).is_err() {
            b = *b"home-mcp-client!";
        }
        let h = hex::encode(b);
        TokenRequest {
            permission: 2,
            client_uuid: format!("{}-{}-{}-{}", &h[..8], &h[8..12], &h[12..16], &h[16..]),
            info: "home-mcp".into(),
        }
    }
}

/// A token held by a client.
pub struct TokenAuth {
    user: String,
    token: Token,
    alg: HashAlg,
    /// Hex key for the token hash.
    hash_key: String,
    /// When the token was issued or refreshed (Loxone seconds).
    issued_at: u64,
}

impl fmt::Debug for TokenAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenAuth")
            .field("user", &self.user)
            .field("token", &self.token)
            .finish_non_exhaustive()
    }
}

fn enc(s: &str) -> String {
    utf8_percent_encode(s, NON_ALPHANUMERIC).to_string()
}

impl TokenAuth {
    /// Logs in: getkey2, getjwt (encrypted), and getkey when the answer has no `key`. Errors
    /// are the exchange's: [`LoxoneError::Unauthorized`] for a wrong password,
    /// [`LoxoneError::NotFound`] or `Status { code: 400 }` when the firmware has no getjwt,
    /// [`LoxoneError::BadAnswer`] for malformed answers. Warns when `unsecurePass` is set.
    pub fn acquire(
        ex: &mut dyn Exchange,
        user: &str,
        password: &str,
        req: &TokenRequest,
    ) -> Result<TokenAuth, LoxoneError> {
        let ll = ex.request(&format!("jdev/sys/getkey2/{}", enc(user)), false)?;
        let ks = KeySalt::from_value(&ll.value)
            .map_err(|m| LoxoneError::BadAnswer(format!("getkey2: {m}")))?;
        let hash = secured::credentials_hash(user, password, &ks);
        let cmd = format!(
            "jdev/sys/getjwt/{hash}/{}/{}/{}/{}",
            enc(user),
            req.permission,
            enc(&req.client_uuid),
            enc(&req.info)
        );
        let ll = ex.request(&cmd, true)?;
        let token = Token::from_value(&ll.value)
            .map_err(|m| LoxoneError::BadAnswer(format!("getjwt: {m}")))?;
        if token.unsecure_pass {
            log::warn!(
                "the Miniserver calls the password of user {user:?} insecure; please change it"
            );
        }
        let hash_key = if token.key.is_empty() {
            let ll = ex.request("jdev/sys/getkey", false)?;
            let key = ll.value_text().unwrap_or_default();
            if key.is_empty() || hex::decode(&key).is_err() {
                return Err(LoxoneError::BadAnswer("getkey: the key is not hex".into()));
            }
            key
        } else {
            token.key.clone()
        };
        log::info!(
            "token for {user:?} valid until Unix {}",
            token.valid_until_unix()
        );
        Ok(TokenAuth {
            user: user.to_string(),
            token,
            alg: ks.alg,
            hash_key,
            issued_at: loxone_now(),
        })
    }

    /// The user the token belongs to.
    pub fn user(&self) -> &str {
        &self.user
    }

    /// The token's fields (`validUntil`, rights...).
    pub fn token(&self) -> &Token {
        &self.token
    }

    /// Lowercase hex `HMAC-hashAlg(hex_decode(key), token)`.
    pub fn token_hash(&self) -> String {
        secured::hmac_hex(
            self.alg,
            &hex::decode(&self.hash_key).unwrap_or_default(),
            &self.token.token,
        )
    }

    /// `autht={tokenHash}&user={user}` for an HTTP query.
    pub fn autht_query(&self) -> String {
        format!("autht={}&user={}", self.token_hash(), enc(&self.user))
    }

    /// Whether the token has run out at `now` (Loxone seconds).
    pub fn is_expired(&self, now: u64) -> bool {
        now >= self.token.valid_until
    }

    /// Whether to refresh at `now` (Loxone seconds): less than one day or half the lifetime
    /// left, whichever is less.
    pub fn needs_refresh(&self, now: u64) -> bool {
        let lifetime = self.token.valid_until.saturating_sub(self.issued_at);
        let margin = REFRESH_MARGIN_SECS.min(lifetime / 2);
        now + margin >= self.token.valid_until
    }

    /// `jdev/sys/refreshjwt/{tokenHash}/{user}` (encrypted): replaces the token and its expiry.
    pub fn refresh(&mut self, ex: &mut dyn Exchange) -> Result<(), LoxoneError> {
        let cmd = format!(
            "jdev/sys/refreshjwt/{}/{}",
            self.token_hash(),
            enc(&self.user)
        );
        let ll = ex.request(&cmd, true)?;
        let mut fresh = Token::from_value(&ll.value)
            .map_err(|m| LoxoneError::BadAnswer(format!("refreshjwt: {m}")))?;
        if fresh.key.is_empty() {
            fresh.key = self.token.key.clone();
        }
        log::info!(
            "token refreshed, valid until Unix {}",
            fresh.valid_until_unix()
        );
        self.token = fresh;
        self.issued_at = loxone_now();
        Ok(())
    }

    /// `jdev/sys/checktoken/{tokenHash}/{user}`: the Miniserver's `validUntil` for the token.
    pub fn check(&self, ex: &mut dyn Exchange) -> Result<u64, LoxoneError> {
        let cmd = format!(
            "jdev/sys/checktoken/{}/{}",
            self.token_hash(),
            enc(&self.user)
        );
        let ll = ex.request(&cmd, false)?;
        ll.value
            .get("validUntil")
            .and_then(Json::as_u64)
            .ok_or_else(|| LoxoneError::BadAnswer("checktoken: no validUntil".into()))
    }

    /// `jdev/sys/killtoken/{tokenHash}/{user}`: the token is invalid afterwards.
    pub fn kill(self, ex: &mut dyn Exchange) -> Result<(), LoxoneError> {
        let cmd = format!(
            "jdev/sys/killtoken/{}/{}",
            self.token_hash(),
            enc(&self.user)
        );
        ex.request(&cmd, false).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_value_capture_parses() {
        let v: Json = serde_json::from_str(include_str!(
            "../../tests/fixtures/captures/Smarteon-loxone-java-token-value.json"
        ))
        .unwrap();
        let t = Token::from_value(&v).unwrap();
        assert_eq!(t.token, "8E2AA590E996B321C0E17C3FA9F7A3C17BD376CC");
        assert_eq!(t.key, "444432");
        assert_eq!(t.valid_until, 342_151_839);
        assert_eq!(t.valid_until_unix(), 1_572_919_839); // 2019-11-05
        assert_eq!(t.rights, 1666);
        assert!(!t.unsecure_pass);
        assert!(!format!("{t:?}").contains("8E2A"));
        assert!(Token::from_value(&serde_json::json!({"validUntil": 1})).is_err());
        assert!(Token::from_value(&serde_json::json!({"token": "x"})).is_err());
        assert!(Token::from_value(
            &serde_json::json!({"token": "x", "validUntil": 1, "key": "zz"})
        )
        .is_err());
    }

    #[test]
    fn refresh_rule() {
        let mk = |issued_at, valid_until| TokenAuth {
            user: "u".into(),
            token: Token {
                token: "t".into(),
                key: "41".into(),
                valid_until,
                rights: 2,
                unsecure_pass: false,
            },
            alg: HashAlg::Sha1,
            hash_key: "41".into(),
            issued_at,
        };
        // 10 s token: refresh in its second half.
        let t = mk(1000, 1010);
        assert!(!t.needs_refresh(1004));
        assert!(t.needs_refresh(1005));
        assert!(!t.is_expired(1009));
        assert!(t.is_expired(1010));
        // 4-week token: refresh one day before.
        let t = mk(0, 28 * 86400);
        assert!(!t.needs_refresh(26 * 86400));
        assert!(t.needs_refresh(27 * 86400));
        // HMAC-SHA1("t") with key "A" (0x41), checked with Python's hmac.
        assert_eq!(t.token_hash(), "ecbfca536bc3c3553e07f96822a59df7a36213bc");
        assert!(t.autht_query().starts_with("autht="));
        assert!(t.autht_query().ends_with("&user=u"));
    }
}
