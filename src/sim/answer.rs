//! What the simulator's command handlers answer and how an answer is written: the types a
//! row of the command table (`commands.rs`) is made of ([`Command`], [`Call`], [`Answer`],
//! [`Ll`]), and the renderers that turn an [`Answer`] into the Miniserver's JSON or XML
//! (loxone-protocol.md §2.1), an HTTP answer (HTML error pages, §2.7) or a WebSocket text
//! (§4.2). Kept apart from the table so the handlers in `auth.rs`, `http.rs`, `system.rs` and
//! others use these types without depending on the table that lists them.

use std::net::IpAddr;

use serde_json::Value;

use super::{CodeKey, SimResponse, SimSessionKey, Simulator};

/// Which prefixes a command takes (loxone-protocol.md §2.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flavours {
    /// `jdev/...` (JSON) and `dev/...` (XML).
    Both,
    /// No prefix: the pattern is the whole path (`data/LoxAPP3.json`, `keepalive`).
    Bare,
}

/// Over which transport a command is served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Over {
    /// HTTP and the WebSocket.
    Both,
    /// Only on a WebSocket session (key exchange, event tables, keepalive; §4.1).
    Ws,
}

/// Who may send a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Gate {
    /// Anyone; a command that needs a secret checks its own (a key, a hash, a token).
    Open,
    /// A logged-in user: HTTP Basic auth or `?autht=` (§3.1, §3.3), or an authenticated
    /// WebSocket session (§4.1 step 3; otherwise code 400).
    User,
    /// Only inside `jdev/sys/enc|fenc` (§3.3: plain `getjwt` is declined with 400); checks its
    /// own secret.
    Encrypted,
}

/// The answer's flavour, from the request's prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flavour {
    /// `jdev/...`: JSON.
    Json,
    /// `dev/...`: XML.
    Xml,
    /// No prefix (files, keepalive, authwithtoken): JSON where an `LL` answer is due.
    Bare,
}

/// The transport a request came over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Transport {
    Http,
    Ws,
}

/// Answers a command; see [`Call`] for what it gets.
pub(crate) type Handler = fn(&Simulator, &mut Call<'_>) -> Answer;

/// One row of the command table (`commands.rs`).
#[derive(Clone, Copy)]
pub(crate) struct Command {
    /// The path after `jdev/`/`dev/` (or the whole path, [`Flavours::Bare`]); see the module
    /// docs for the segment kinds.
    pub pattern: &'static str,
    pub flavours: Flavours,
    pub over: Over,
    pub gate: Gate,
    /// Where the command is described: a section of loxone-protocol.md (and *inferred* where
    /// our reading fills a gap).
    pub source: &'static str,
    pub handler: Handler,
}

impl Command {
    /// A row for `pattern` in both flavours, over HTTP and the WebSocket, for logged-in users.
    pub(crate) const fn new(pattern: &'static str, source: &'static str, handler: Handler) -> Self {
        Command {
            pattern,
            flavours: Flavours::Both,
            over: Over::Both,
            gate: Gate::User,
            source,
            handler,
        }
    }

    /// No authentication needed (or the command checks its own secret).
    pub(crate) const fn open(mut self) -> Self {
        self.gate = Gate::Open;
        self
    }

    /// Only through `enc`/`fenc`.
    pub(crate) const fn encrypted_only(mut self) -> Self {
        self.gate = Gate::Encrypted;
        self
    }

    /// Only on the WebSocket.
    pub(crate) const fn ws_only(mut self) -> Self {
        self.over = Over::Ws;
        self
    }

    /// Without a `jdev/`/`dev/` prefix.
    pub(crate) const fn bare(mut self) -> Self {
        self.flavours = Flavours::Bare;
        self
    }
}

/// The per-connection login state of a WebSocket session (§4.1): the user once authenticated
/// (getjwt/gettoken over the socket or authwithtoken) and the AES session key from
/// `keyexchange`.
#[derive(Debug, Default)]
pub(crate) struct WsLogin {
    pub user: Option<String>,
    pub key: Option<SimSessionKey>,
}

/// What a handler gets: the captured arguments and how the request came.
pub(crate) struct Call<'a> {
    /// The `{name}` segments in pattern order, percent-decoded.
    pub args: Vec<String>,
    /// The same segments as received (a cipher is decoded by its handler).
    pub raw_args: Vec<String>,
    /// `{control}`: the index of the control in the house.
    pub target: Option<usize>,
    /// `{rest...}`: the remaining segments, percent-decoded.
    pub rest: Vec<String>,
    /// The same, as received.
    pub raw_rest: Vec<String>,
    /// What the answer's `control` echoes.
    pub control: String,
    /// The command as received (leading `/` removed, without the query).
    pub path: String,
    pub transport: Transport,
    /// Whether the command came out of `enc`/`fenc`.
    pub encrypted: bool,
    pub peer: IpAddr,
    /// The query string (without `?`): `sk=` of HTTP `enc`, `autht=` and `user=`.
    pub query: String,
    /// The WebSocket session's login state; `None` over HTTP.
    pub login: Option<&'a mut WsLogin>,
}

/// One `/all` output (§2.5): JSON `"outputN": {"name", "nr", "value"}`, XML `nN`, `uN`, `vN`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Output {
    pub name: String,
    /// The state UUID (XML `uN`).
    pub uuid: String,
    /// The value as a JSON literal: a number as written (`0.000`, `1`) or a quoted string.
    pub value: String,
}

/// An `LL` answer (§2.1).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Ll {
    pub code: u16,
    /// A string (numbers formatted as strings) or an object (getkey2, getjwt).
    pub value: Value,
    pub outputs: Vec<Output>,
    /// Token answers (getkey2, getjwt, gettoken, refresh, check, kill) use the captures'
    /// lower-case `"code"` (getkey2 over HTTP: control, code as a number, value).
    pub token: bool,
}

impl Ll {
    /// Code 200 with `value`.
    pub(crate) fn ok(value: impl Into<String>) -> Self {
        Ll::coded(200, value)
    }

    /// `code` with a string `value`.
    pub(crate) fn coded(code: u16, value: impl Into<String>) -> Self {
        Ll {
            code,
            value: Value::String(value.into()),
            outputs: Vec::new(),
            token: false,
        }
    }

    /// A token answer (`"code"`) with an object or string `value`.
    pub(crate) fn token(code: u16, value: Value) -> Self {
        Ll {
            code,
            value,
            outputs: Vec::new(),
            token: true,
        }
    }
}

/// What a handler answers.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Answer {
    /// An `LL` answer, JSON or XML by the request's flavour.
    Ll(Ll),
    /// A failure: over HTTP the Miniserver's small HTML page with this status (or HTTP 200 and
    /// the code in the envelope, `SimConfig::not_found_in_envelope`); over the WebSocket an
    /// `LL` answer with this code.
    Error(u16, &'static str),
    /// An HTTP answer as it stands (the 401/403 pages of the login gate); over the WebSocket an
    /// `LL` answer with its status.
    Page(SimResponse),
    /// A file, not wrapped (the structure file); over the WebSocket header id 1 and the text.
    File(String),
    /// Binary data (statistics records, `stats.rs`; a bell picture, `camimage`) of this content
    /// type, over HTTP without a charset; over the WebSocket
    /// header id 1 and a binary frame.
    Data(&'static str, Vec<u8>),
    /// A text file of this content type (the V1 XML files, the `stats` index); over the
    /// WebSocket header id 1 and the text.
    Text(&'static str, String),
    /// `keepalive`: a header with id 6 and nothing else (§4.1).
    Keepalive,
    /// `enablebinstatusupdate`: code 200, then the event tables (§4.1 step 5).
    EnableUpdates,
    /// `enc`/`fenc` decrypted: the router runs `command` and answers for it; `fenc` carries the
    /// key that encrypts the answer.
    Decrypted {
        command: String,
        fenc: Option<SimSessionKey>,
    },
}

/// A request to the router.
pub(crate) struct Request<'a> {
    /// The path with its query (`jdev/sps/io/x/on?autht=...`), leading `/` allowed.
    pub url: &'a str,
    pub transport: Transport,
    pub peer: IpAddr,
    pub authorization: Option<&'a str>,
    pub login: Option<&'a mut WsLogin>,
}

/// The router's result: an answer (never [`Answer::Decrypted`]) and how to send it.
#[derive(Debug)]
pub(crate) struct Reply {
    pub answer: Answer,
    /// What an `LL` answer echoes as `control`.
    pub control: String,
    pub flavour: Flavour,
    /// `fenc`: the key that encrypts the answer text.
    pub fenc: Option<SimSessionKey>,
    /// Whether a token answer's shape applies (the command is a token command).
    pub token: bool,
}

impl Simulator {
    /// `Code` or `code`, as configured, for answers that are not token answers.
    fn status_key(&self) -> &'static str {
        match self.config.code_key {
            CodeKey::Code => "Code",
            CodeKey::LowerCode => "code",
        }
    }

    /// The HTTP form of `reply` (status, content type, body; `fenc` answers encrypted).
    pub(crate) fn render_http(&self, reply: &Reply) -> SimResponse {
        let mut resp = match &reply.answer {
            Answer::Ll(ll) => SimResponse {
                status: 200,
                content_type: mime(reply.flavour),
                body: self.ll_body(reply, ll, Transport::Http),
                data: None,
            },
            Answer::Error(code, detail) => {
                if self.config.not_found_in_envelope {
                    let ll = Ll::coded(*code, "");
                    SimResponse {
                        status: 200,
                        content_type: mime(reply.flavour),
                        body: self.ll_body(reply, &ll, Transport::Http),
                        data: None,
                    }
                } else {
                    html_error(*code, detail)
                }
            }
            Answer::Page(page) => page.clone(),
            Answer::File(text) => SimResponse {
                status: 200,
                content_type: "application/json",
                body: text.clone(),
                data: None,
            },
            Answer::Data(content_type, bytes) => SimResponse {
                status: 200,
                content_type,
                body: String::new(),
                data: Some(bytes.clone()),
            },
            Answer::Text(content_type, text) => SimResponse {
                status: 200,
                content_type,
                body: text.clone(),
                data: None,
            },
            // Not reachable over HTTP (WebSocket-only rows answer 400 there).
            Answer::Keepalive | Answer::EnableUpdates | Answer::Decrypted { .. } => {
                html_error(400, "Bad Request")
            }
        };
        if let (Some(key), 200) = (&reply.fenc, resp.status) {
            // "The mime-type is the one from the decrypted response" (protocol doc 16.0).
            resp.body = key.encrypt_answer(&resp.body);
        }
        resp
    }

    /// The `LL` text of an answer over the WebSocket, for a code from a page or an error.
    pub(crate) fn ws_text(&self, reply: &Reply) -> Option<String> {
        let ll = match &reply.answer {
            Answer::Ll(ll) => ll.clone(),
            Answer::Error(code, _) => Ll::coded(*code, ""),
            Answer::Page(page) => Ll::coded(page.status, ""),
            Answer::EnableUpdates => Ll::ok("1"),
            _ => return None,
        };
        Some(self.ll_body(reply, &ll, Transport::Ws))
    }

    /// The text of an `LL` answer in the request's flavour.
    fn ll_body(&self, reply: &Reply, ll: &Ll, transport: Transport) -> String {
        if reply.flavour == Flavour::Xml {
            return xml(&reply.control, ll, self.status_key());
        }
        let token = ll.token || reply.token;
        match (token, transport) {
            // The getkey2 capture over HTTP: control, code as a number, value.
            (true, Transport::Http) if ll.code == 200 => format!(
                "{{\"LL\":{{\"control\":{},\"code\":{},\"value\":{}}}}}",
                Value::from(reply.control.as_str()),
                ll.code,
                ll.value
            ),
            // The gettoken capture over the WebSocket: control, value, code as a string.
            (true, _) => format!(
                "{{\"LL\":{{\"control\":{},\"value\":{},\"code\":\"{}\"}}}}",
                Value::from(reply.control.as_str()),
                ll.value,
                ll.code
            ),
            // The sps/io captures: a space after `{`, the code as a string, outputs after it.
            (false, _) => {
                let mut extra = String::new();
                for (i, o) in ll.outputs.iter().enumerate() {
                    extra.push_str(&format!(
                        ", \"output{i}\": {{\"name\": {}, \"nr\": {}, \"value\": {}}}",
                        Value::from(o.name.as_str()),
                        i + 1,
                        o.value
                    ));
                }
                format!(
                    "{{\"LL\": {{ \"control\": {}, \"value\": {}, \"{}\": \"{}\"{extra}}}}}",
                    Value::from(reply.control.as_str()),
                    ll.value,
                    self.status_key(),
                    ll.code
                )
            }
        }
    }
}
/// `application/json` or `text/xml` (the XML capture's content type).
fn mime(flavour: Flavour) -> &'static str {
    match flavour {
        Flavour::Xml => "text/xml",
        _ => "application/json",
    }
}

/// Escapes `s` for an XML attribute value.
fn xml_attr(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if (c as u32) < 0x20 && c != '\t' => out.push_str(&format!("&#{};", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// The XML flavour (§2.1 capture): `<?xml ...?>\n<LL control="..." value="..." Code="200"/>`.
/// `/all` (§2.5, the KB's example): `value` is the number of outputs, then `nN`, `uN`, `vN`
/// (name, state UUID, value) per output. An object value (getkey2, getjwt; *inferred*, no
/// capture shows one) becomes attributes of `LL`, `value` left empty.
fn xml(control: &str, ll: &Ll, code_key: &str) -> String {
    let (value, members) = match &ll.value {
        Value::String(s) if ll.outputs.is_empty() => (s.clone(), String::new()),
        Value::Object(map) => {
            let mut m = String::new();
            for (k, v) in map {
                let text = match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                m.push_str(&format!(" {k}=\"{}\"", xml_attr(&text)));
            }
            (String::new(), m)
        }
        Value::String(_) => (ll.outputs.len().to_string(), String::new()),
        other => (other.to_string(), String::new()),
    };
    let mut outputs = String::new();
    for (i, o) in ll.outputs.iter().enumerate() {
        let v = serde_json::from_str::<Value>(&o.value)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_else(|| o.value.clone());
        let n = i + 1;
        outputs.push_str(&format!(
            " n{n}=\"{}\" u{n}=\"{}\" v{n}=\"{}\"",
            xml_attr(&o.name),
            xml_attr(&o.uuid),
            xml_attr(&v)
        ));
    }
    format!(
        "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<LL control=\"{}\" value=\"{}\" {code_key}=\"{}\"{members}{outputs}/>",
        xml_attr(control),
        xml_attr(&value),
        ll.code
    )
}

/// The small HTML error page of a real Miniserver (captured for 401 and 403; 400, 404 and
/// 405 use the same shape, *inferred*).
pub(crate) fn html_error(status: u16, detail: &str) -> SimResponse {
    SimResponse {
        status,
        content_type: "text/html",
        body: format!(
            "<html><head><title>error</title></head><body><errorcode>{status}</errorcode> \
             <errordetail>{detail}</errordetail></body></html>"
        ),
        data: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xml_answers_escape_and_list_outputs() {
        let ll = Ll::ok("a\"<b>");
        assert_eq!(
            xml("dev/x", &ll, "Code"),
            "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<LL control=\"dev/x\" value=\"a&quot;&lt;b&gt;\" Code=\"200\"/>"
        );
        let mut all = Ll::ok("1.000");
        all.outputs = vec![Output {
            name: "active".into(),
            uuid: "u".into(),
            value: "1".into(),
        }];
        assert!(xml("dev/y/all", &all, "Code").ends_with(
            "<LL control=\"dev/y/all\" value=\"1\" Code=\"200\" n1=\"active\" u1=\"u\" v1=\"1\"/>"
        ));
    }
}
