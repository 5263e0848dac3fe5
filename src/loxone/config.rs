//! The Miniserver adapter's own settings, which the server's config (`[miniserver]`) fills in:
//! where the Miniserver is and who we are to it ([`MiniserverConfig`]), how requests
//! authenticate ([`AuthMode`]) and how long they may take ([`Timeouts`]).

use std::fmt;
use std::time::Duration;

use serde::Deserialize;

/// How the client authenticates to the Miniserver (loxone-protocol.md §3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AuthMode {
    /// Token first (getkey2 + encrypted getjwt, `?autht=` on every request); Basic auth when
    /// getjwt (or getPublicKey) answers 404 or 400, i.e. firmware without JWTs.
    #[default]
    Auto,
    /// Tokens only; no fallback.
    Token,
    /// HTTP Basic auth only (firmware before 10.2, or for debugging).
    Basic,
}

/// Where the Miniserver is and who we are to it.
#[derive(Clone, PartialEq)]
pub struct MiniserverConfig {
    /// Normalised base URL, `http://host:port` or `https://host:port`, no trailing slash.
    pub base_url: String,
    pub user: String,
    pub password: String,
}

impl fmt::Debug for MiniserverConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MiniserverConfig")
            .field("base_url", &self.base_url)
            .field("user", &self.user)
            .field("password", &"<redacted>")
            .finish()
    }
}

/// Timeouts and freshness for talking to the Miniserver.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timeouts {
    pub connect: Duration,
    /// Whole request, connect included.
    pub request: Duration,
    /// A remembered value older than this is read again before it is shown.
    pub value_max_age: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            connect: Duration::from_secs(5),
            request: Duration::from_secs(10),
            value_max_age: Duration::from_secs(5),
        }
    }
}
