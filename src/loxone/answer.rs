//! What the Loxone HTTP layer gets back: a parsed `{"LL": {...}}` answer ([`LlAnswer`]) or an
//! error ([`LoxoneError`]), shared by the client ([`super::client`]) and the token exchange
//! ([`super::token`]).

use std::fmt;

use serde_json::Value as Json;

/// Errors of the Loxone HTTP layer.
#[derive(Debug, Clone, PartialEq)]
pub enum LoxoneError {
    /// Unreachable: refused, DNS, timeout, connection reset.
    Connection(String),
    /// 401: wrong user or password.
    Unauthorized,
    /// 403 "temporarily blocked" (or our own remembered lock-out): seconds until retry.
    LockedOut { remaining_secs: u64 },
    /// 403 without lock-out: the user lacks rights.
    Forbidden(String),
    /// 404 (HTTP or `LL.Code`): unknown control or command.
    NotFound(String),
    /// 503: the Miniserver is restarting or updating.
    Unavailable,
    /// Any other error status (HTTP or `LL.Code`).
    Status { code: u16, message: String },
    /// The answer is not what the protocol promises.
    BadAnswer(String),
    /// A value that cannot be one URL path segment (empty, or dots only: see
    /// [`super::client::segment`]); nothing was sent.
    InvalidSegment(String),
    /// Code 500 to a secured command (`jdev/sps/ios/...`): wrong visualisation password.
    WrongVisuPassword,
}

impl fmt::Display for LoxoneError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoxoneError::Connection(m) => write!(f, "connection failed: {m}"),
            LoxoneError::Unauthorized => f.write_str("401 unauthorized (wrong user or password)"),
            LoxoneError::LockedOut { remaining_secs } => {
                write!(
                    f,
                    "temporarily blocked after failed logins, {remaining_secs} s remaining"
                )
            }
            LoxoneError::Forbidden(m) => write!(f, "403 forbidden: {m}"),
            LoxoneError::NotFound(m) => write!(f, "404 not found: {m}"),
            LoxoneError::Unavailable => f.write_str("503: the Miniserver is restarting"),
            LoxoneError::Status { code, message } => write!(f, "error {code}: {message}"),
            LoxoneError::BadAnswer(m) => write!(f, "unexpected answer: {m}"),
            LoxoneError::InvalidSegment(m) => write!(f, "not sent: {m}"),
            LoxoneError::WrongVisuPassword => f.write_str("500: wrong visualisation password"),
        }
    }
}

impl std::error::Error for LoxoneError {}

/// A parsed `{"LL": {...}}` answer.
#[derive(Debug, Clone, PartialEq)]
pub struct LlAnswer {
    /// Echoed command (`dev/sps/io/...`).
    pub control: String,
    /// `value`: usually a string (`"75.000"`, `"1"`), sometimes an object.
    pub value: Json,
    /// `Code`/`code` as a number.
    pub code: u16,
    /// Further members next to the envelope keys (e.g. `output0` objects of `/all`).
    pub extra: serde_json::Map<String, Json>,
}

impl LlAnswer {
    /// `value` as text (numbers are turned into text).
    pub fn value_text(&self) -> Option<String> {
        match &self.value {
            Json::String(s) => Some(s.clone()),
            Json::Number(n) => Some(n.to_string()),
            Json::Bool(b) => Some(if *b { "1".into() } else { "0".into() }),
            _ => None,
        }
    }

    /// `value` as a number; trailing unit text is ignored (`"31.0 Liter"` -> 31.0).
    pub fn value_number(&self) -> Option<f64> {
        match &self.value {
            Json::Number(n) => n.as_f64(),
            Json::String(s) => parse_number_prefix(s),
            Json::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
            _ => None,
        }
    }
}

/// Reads the leading decimal number of `s` (`"21.500°"` -> 21.5), if any.
pub fn parse_number_prefix(s: &str) -> Option<f64> {
    let s = s.trim();
    let end = s
        .char_indices()
        .take_while(|(i, c)| {
            c.is_ascii_digit() || *c == '.' || ((*c == '-' || *c == '+') && *i == 0)
        })
        .map(|(i, c)| i + c.len_utf8())
        .last()?;
    s[..end].parse().ok()
}
