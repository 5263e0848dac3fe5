//! What the Loxone HTTP layer gets back: a parsed `{"LL": {...}}` answer ([`LlAnswer`]) or an
//! error ([`LoxoneError`]), shared by the client ([`super::client`]), the token exchange
//! ([`super::token`]) and the WebSocket login; and what a 401 means, decided once for all of
//! them by what the refused request carried ([`Presented::refused`]).

use std::fmt;

use serde_json::Value as Json;

/// Errors of the Loxone HTTP layer.
#[derive(Debug, Clone, PartialEq)]
pub enum LoxoneError {
    /// Unreachable: refused, DNS, timeout, connection reset.
    Connection(String),
    /// 401 to the password (HTTP Basic auth, or the credentials hash of `getjwt`): wrong user
    /// or password. See [`Presented::refused`].
    Unauthorized,
    /// 401 to a token (the `autht` query, `refreshjwt`, `authwithtoken`...): the Miniserver
    /// no longer knows it (it restarted, or the token was killed or ran out). Not a wrong
    /// password: the token is dropped and the next login comes at once. See
    /// [`Presented::refused`].
    TokenUnknown,
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
            LoxoneError::TokenUnknown => f.write_str(
                "401 to our token: the Miniserver no longer knows it (restarted?); logging in again",
            ),
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

/// What a request showed the Miniserver to say who sends it: the one input to what a 401 answer
/// means ([`Presented::refused`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Presented {
    /// Nothing: an open request (`jdev/cfg/api`, `getkey2`, `getPublicKey`) or the WebSocket
    /// key exchange.
    Nothing,
    /// The password: HTTP Basic auth, or the credentials hash of `getjwt` (§3.2).
    Password,
    /// A token: the `autht` query of an HTTP request, `refreshjwt`, `checktoken`, `killtoken`,
    /// or `authwithtoken` on the WebSocket (§3.3).
    Token,
}

impl Presented {
    /// What the token conversation command `cmd` (`jdev/sys/getjwt/...`, no leading slash)
    /// carries: `getjwt` the password's hash, `refreshjwt`/`checktoken`/`killtoken` and
    /// `authwithtoken` a token, anything else (`getkey2`, `getkey`, `keyexchange`) nothing.
    pub fn by_command(cmd: &str) -> Presented {
        let op = cmd
            .trim_start_matches('/')
            .trim_start_matches("jdev/")
            .trim_start_matches("sys/");
        let op = op.split('/').next().unwrap_or("");
        match op {
            "getjwt" | "gettoken" => Presented::Password,
            "refreshjwt" | "refreshtoken" | "checktoken" | "killtoken" | "authwithtoken" => {
                Presented::Token
            }
            _ => Presented::Nothing,
        }
    }

    /// What a 401 (HTTP status or `LL.Code`, over HTTP or the WebSocket) to a request that
    /// carried `self` means; `what` names the request in the error. The one place this is
    /// decided (loxone-protocol.md §2.7, §3):
    ///
    /// - a token: [`LoxoneError::TokenUnknown`]. The Miniserver no longer knows it: it
    ///   restarted (saving a program in Loxone Config restarts it), or the token was killed or
    ///   ran out. Not a wrong password: the token is dropped and a fresh login follows at once.
    /// - the password: [`LoxoneError::Unauthorized`]. The user or password is wrong: the client
    ///   backs off before the credentials are tried again, longer with each refusal in a row,
    ///   because a Miniserver blocks an address after repeated failed logins.
    /// - nothing: [`LoxoneError::Status`] 401. The Miniserver could not decrypt the request
    ///   (its RSA key is not the one we hold, §3.4) or wants credentials for it: neither a
    ///   failed login nor a lost token.
    pub fn refused(self, what: &str) -> LoxoneError {
        match self {
            Presented::Token => LoxoneError::TokenUnknown,
            Presented::Password => LoxoneError::Unauthorized,
            Presented::Nothing => LoxoneError::Status {
                code: 401,
                message: format!("{what}: refused (not decryptable, or it needs a login)"),
            },
        }
    }
}

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

/// HTML as plain text, for the Miniserver's HTML error pages and the Message Center's entry
/// descriptions: tags dropped (each one a space, so `<br>` and block ends separate words), the
/// common entities decoded, whitespace collapsed, at most `max` characters (and no more than
/// about `8 * max` bytes of the input looked at).
pub fn plain_text(html: &str, max: usize) -> String {
    let mut out = String::new();
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => {
                in_tag = true;
                out.push(' ');
            }
            '>' if in_tag => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
        if out.len() > max.saturating_mul(8) {
            break;
        }
    }
    let decoded = out
        .replace("&nbsp;", " ")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&");
    let words: Vec<&str> = decoded.split_whitespace().collect();
    words.join(" ").chars().take(max).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_401_means_what_the_request_carried() {
        let cases = [
            (
                "jdev/sys/getjwt/abc/admin/2/uuid/home-mcp",
                Presented::Password,
            ),
            ("jdev/sys/gettoken/abc/admin/2/uuid/x", Presented::Password),
            ("jdev/sys/refreshjwt/abc/admin", Presented::Token),
            ("jdev/sys/checktoken/abc/admin", Presented::Token),
            ("jdev/sys/killtoken/abc/admin", Presented::Token),
            ("authwithtoken/abc/admin", Presented::Token),
            ("jdev/sys/getkey2/admin", Presented::Nothing),
            ("jdev/sys/getkey", Presented::Nothing),
            ("jdev/sys/keyexchange/abc", Presented::Nothing),
        ];
        for (cmd, want) in cases {
            assert_eq!(Presented::by_command(cmd), want, "{cmd}");
        }
        assert_eq!(Presented::Token.refused("x"), LoxoneError::TokenUnknown);
        assert_eq!(Presented::Password.refused("x"), LoxoneError::Unauthorized);
        assert!(matches!(
            Presented::Nothing.refused("jdev/sys/keyexchange"),
            LoxoneError::Status { code: 401, message } if message.contains("keyexchange")
        ));
    }
}
