//! Logging in on a Miniserver WebSocket (loxone-protocol.md §4.1 step 3, §3.3-3.4): the key
//! exchange (`jdev/sys/keyexchange/{rsa(key:iv)}`), then the token conversation of
//! [`crate::loxone::token`] over the socket, with `getjwt` encrypted through `jdev/sys/enc`.
//! A token acquired on the socket authenticates it; an existing token can be used instead
//! with `authwithtoken/{hash}/{user}` ([`authenticate_with_token`]).

use std::time::{Duration, Instant};

use super::{Incoming, Reader, WsError};
use crate::loxone::client::{parse_ll, LlAnswer, LoxoneError, Presented};
use crate::loxone::crypto::{PublicKey, SessionKey};
use crate::loxone::token::{Exchange, TokenAuth, TokenRequest};

/// The request/answer conversation over a WebSocket, for [`TokenAuth`]: each request is one
/// text frame (encrypted with the session key when asked), its answer the next text message.
/// Event tables arriving in between are kept in [`WsExchange::events`] (none arrive before
/// `enablebinstatusupdate`).
pub struct WsExchange<'a, S: std::io::Read + std::io::Write> {
    pub reader: &'a mut Reader<S>,
    pub key: &'a SessionKey,
    /// How long one answer may take in all (read timeouts in between are retried).
    pub timeout: Duration,
    /// Events that came before an answer.
    pub events: Vec<super::StateEvent>,
}

impl<S: std::io::Read + std::io::Write> WsExchange<'_, S> {
    /// Sends `text` and returns the next `LL` answer (any code).
    pub fn ask(&mut self, text: &str) -> Result<LlAnswer, LoxoneError> {
        self.reader.send_text(text).map_err(ws_error)?;
        let deadline = Instant::now() + self.timeout;
        loop {
            match self.reader.next_message() {
                Ok(Incoming::Text(t)) => return parse_ll(t.as_bytes()),
                Ok(Incoming::Events(ev)) => self.events.extend(ev),
                Ok(Incoming::Keepalive) | Ok(Incoming::File(_)) => {}
                Ok(Incoming::OutOfService) => return Err(LoxoneError::Unavailable),
                Ok(Incoming::Closed(code)) => {
                    return Err(LoxoneError::Connection(format!(
                        "the Miniserver closed the WebSocket (code {code:?})"
                    )))
                }
                Err(WsError::Timeout) if Instant::now() < deadline => {}
                Err(e) => return Err(ws_error(e)),
            }
        }
    }
}

impl<S: std::io::Read + std::io::Write> Exchange for WsExchange<'_, S> {
    fn request(&mut self, cmd: &str, encrypted: bool) -> Result<LlAnswer, LoxoneError> {
        let text = if encrypted {
            self.key.encrypt_command(cmd)
        } else {
            cmd.to_string()
        };
        let ll = self.ask(&text)?;
        match ll.code {
            200 => Ok(ll),
            401 => Err(Presented::by_command(cmd).refused(&shown(cmd))),
            404 => Err(LoxoneError::NotFound(shown(cmd))),
            503 => Err(LoxoneError::Unavailable),
            code => Err(LoxoneError::Status {
                code,
                message: shown(cmd),
            }),
        }
    }
}

/// `cmd` for messages, with hashes and tokens (third segment on) cut off.
fn shown(cmd: &str) -> String {
    let parts: Vec<&str> = cmd.split('/').collect();
    if parts.len() > 3 && cmd.starts_with("jdev/sys/") {
        format!("{}/...", parts[..3].join("/"))
    } else {
        cmd.to_string()
    }
}

fn ws_error(e: WsError) -> LoxoneError {
    match e {
        WsError::Refused(403) => LoxoneError::Status {
            code: 403,
            message: "the Miniserver refused the WebSocket (locked out?)".into(),
        },
        other => LoxoneError::Connection(other.to_string()),
    }
}

/// Sends the session key, RSA-encrypted with the Miniserver's public key; must come first.
pub fn key_exchange<S: std::io::Read + std::io::Write>(
    reader: &mut Reader<S>,
    key: &SessionKey,
    public_key: &PublicKey,
    timeout: Duration,
) -> Result<(), LoxoneError> {
    let payload = key
        .rsa_encrypted_key_iv(public_key)
        .map_err(|e| LoxoneError::BadAnswer(e.to_string()))?;
    let mut ex = WsExchange {
        reader,
        key,
        timeout,
        events: Vec::new(),
    };
    let ll = ex.ask(&format!("jdev/sys/keyexchange/{payload}"))?;
    match ll.code {
        200 => Ok(()),
        // Carries no credentials: a 401 means the Miniserver could not decrypt it.
        401 => Err(Presented::Nothing.refused("jdev/sys/keyexchange")),
        code => Err(LoxoneError::Status {
            code,
            message: "jdev/sys/keyexchange".into(),
        }),
    }
}

/// Key exchange, then a new token acquired over the socket (which authenticates it).
pub fn login<S: std::io::Read + std::io::Write>(
    reader: &mut Reader<S>,
    public_key: &PublicKey,
    user: &str,
    password: &str,
    timeout: Duration,
) -> Result<(SessionKey, TokenAuth), LoxoneError> {
    let key = SessionKey::try_new().map_err(|e| LoxoneError::BadAnswer(e.to_string()))?;
    key_exchange(reader, &key, public_key, timeout)?;
    let mut ex = WsExchange {
        reader,
        key: &key,
        timeout,
        events: Vec::new(),
    };
    let token = TokenAuth::acquire(&mut ex, user, password, &TokenRequest::default())?;
    Ok((key, token))
}

/// Key exchange, then `authwithtoken/{hash}/{user}` (encrypted) with a token acquired
/// earlier (e.g. over HTTP): the Miniserver's way to resume without the password.
pub fn authenticate_with_token<S: std::io::Read + std::io::Write>(
    reader: &mut Reader<S>,
    public_key: &PublicKey,
    token: &TokenAuth,
    timeout: Duration,
) -> Result<SessionKey, LoxoneError> {
    let key = SessionKey::try_new().map_err(|e| LoxoneError::BadAnswer(e.to_string()))?;
    key_exchange(reader, &key, public_key, timeout)?;
    let mut ex = WsExchange {
        reader,
        key: &key,
        timeout,
        events: Vec::new(),
    };
    let cmd = format!(
        "authwithtoken/{}/{}",
        token.token_hash(),
        percent_encoding::utf8_percent_encode(token.user(), percent_encoding::NON_ALPHANUMERIC)
    );
    ex.request(&cmd, true)?;
    Ok(key)
}
