//! The stdio transport: newline-delimited JSON-RPC over a reader and a writer.
//!
//! One message (or batch) per input line; each reply is one line of compact JSON, flushed at
//! once. The output carries nothing but JSON-RPC (logs go to stderr). Blank lines are ignored.
//! A line longer than the limit is skipped up to its newline without ever being held whole,
//! and answered with -32600 (`id: null`). There is one implicit session without an id; it
//! lives as long as the input. [`serve`] returns `Ok(())` at end of input, once every request
//! in flight has been answered.
//!
//! Concurrency: a request that may wait on the client (`tools/call`, `prompts/get`,
//! `resources/read`, `completion/complete`) runs on its own thread (at most
//! [`MAX_IN_FLIGHT`]; beyond that inline), so that the reading loop goes on and can route the
//! client's answer to an `elicitation/create` or `sampling/createMessage` to the waiting call.
//! The reader waits for such a request to finish before reading on, so answers keep input
//! order, except that it reads on at once when the request sends a request to the client, or
//! after [`ORDER_GRACE`]. Everything else, including `initialize` and the session's state
//! changes, is handled inline, in order. All output goes through one writer thread: one JSON
//! per line, never interleaved. Notifications not tied to a request (resource updates) reach
//! the session through the server's [`Hub`](crate::mcp::Hub) under the key [`HUB_KEY`].
//!
//! MCP 2026-07-28 on the same process: a request carrying its version in `_meta` (and the
//! `server/discover` probe of dual-era clients) is served statelessly next to the
//! `initialize` session; `subscriptions/listen` registers a subscription whose notifications
//! share stdout, tagged with its request id, until `notifications/cancelled` names that id or
//! the input ends.

use std::io::{self, BufRead, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::auth::gate::{Denial, Gate, Principal};
use crate::mcp::jsonrpc::{self, Incoming, Message, RequestIds, Response};
use crate::mcp::{Era, McpServer, Outlet, SessionState};

/// The stdio session's key in the server's hub.
pub const HUB_KEY: &str = "stdio";

/// At most this many requests run on their own threads at once.
pub const MAX_IN_FLIGHT: usize = 32;

/// How long the reader waits for a threaded request before reading the next line.
pub const ORDER_GRACE: Duration = Duration::from_secs(2);

/// Longest accepted input line in bytes (1 MiB), not counting the newline.
pub const MAX_LINE_BYTES: usize = 1024 * 1024;

/// Serves `input` until end of input, writing replies to `output`, with lines capped at
/// [`MAX_LINE_BYTES`].
///
/// Errors: only I/O errors of `input` or `output`; bad input is answered, never fatal.
pub fn serve<R: BufRead, W: Write + Send>(mcp: &McpServer, input: R, output: W) -> io::Result<()> {
    serve_with_limit(mcp, input, output, MAX_LINE_BYTES)
}

/// The stdio session's key, when stdio is not trusted (`HOME_STDIO_KEY`): every request runs
/// as it (audit log, scope), and the gate checks each one as the store has the key now
/// (revoking, deleting or narrowing it applies at once, as over HTTP); a refusal is answered
/// with its JSON-RPC error (-32003) instead of running the request.
pub struct StdioKey {
    pub gate: std::sync::Arc<Gate>,
    /// Who authenticated with the key when stdio started.
    pub principal: Principal,
}

impl StdioKey {
    /// The gate's step 2 for `r` ([`Gate::authorize_request`]), with the key as stored now.
    fn check(&self, r: &jsonrpc::Request) -> Result<(), Denial> {
        let now = self.gate.revalidate(&self.principal)?;
        self.gate.authorize_request(&now, r)
    }
}

/// [`serve`] with an explicit line limit in bytes.
pub fn serve_with_limit<R: BufRead, W: Write + Send>(
    mcp: &McpServer,
    input: R,
    output: W,
    max_line_bytes: usize,
) -> io::Result<()> {
    serve_as(mcp, input, output, max_line_bytes, None)
}

/// [`serve_with_limit`] as `key` (`None`: trusted, every request allowed).
pub fn serve_as<R: BufRead, W: Write + Send>(
    mcp: &McpServer,
    mut input: R,
    mut output: W,
    max_line_bytes: usize,
    key: Option<&StdioKey>,
) -> io::Result<()> {
    let (tx, rx) = crossbeam_channel::unbounded::<String>();
    let in_flight = AtomicUsize::new(0);
    let in_flight = &in_flight;
    std::thread::scope(|scope| {
        let writer = scope.spawn(move || -> io::Result<()> {
            for line in rx {
                output.write_all(line.as_bytes())?;
                output.write_all(b"\n")?;
                output.flush()?;
            }
            Ok(())
        });
        let outlet: Arc<dyn Outlet> = Arc::new(move |m: &str| tx.send(m.to_string()).is_ok());
        mcp.hub().register(HUB_KEY, outlet.clone());
        let result = read_loop(
            mcp,
            &mut input,
            &outlet,
            max_line_bytes,
            scope,
            in_flight,
            key,
        );
        // Requests still running hold clones of the outlet; the scope waits for them, and the
        // writer ends when the last clone is gone.
        mcp.hub().unregister(HUB_KEY);
        drop(outlet);
        let written = writer
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("stdio writer panicked")));
        result.and(written)
    })
}

fn read_loop<'scope, 'env, R: BufRead>(
    mcp: &'env McpServer,
    input: &mut R,
    outlet: &Arc<dyn Outlet>,
    max_line_bytes: usize,
    scope: &'scope std::thread::Scope<'scope, 'env>,
    in_flight: &'env AtomicUsize,
    key: Option<&StdioKey>,
) -> io::Result<()> {
    let mut state = SessionState::new("stdio");
    state.caller = key.map(|k| k.principal.caller());
    let mut listens: std::collections::HashMap<String, crate::mcp::peer::Listening<'env>> =
        std::collections::HashMap::new();
    let mut line = Vec::new();
    loop {
        let incoming = match read_line_bounded(input, max_line_bytes, &mut line)? {
            Line::Eof => return Ok(()),
            Line::TooLong => {
                let r = Response::invalid_request(
                    None,
                    format!("message longer than {max_line_bytes} bytes was discarded"),
                );
                if !outlet.send(&r.to_json()) {
                    return Err(io::Error::other("stdio output closed"));
                }
                continue;
            }
            Line::Data => {
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                jsonrpc::parse(&line)
            }
        };
        if let Some(refusal) = key.and_then(|k| refused(k, &incoming)) {
            if !outlet.send(&refusal) {
                return Err(io::Error::other("stdio output closed"));
            }
            continue;
        }
        match &incoming {
            Ok(Incoming::Single(Ok(Message::Request(r)))) if r.method == "subscriptions/listen" => {
                // MCP 2026-07-28: the subscription's notifications share stdout, tagged with
                // its id; it lasts until cancelled or the end of input.
                // (`subscriptions/listen` is always stateless: `era` reads its `_meta`.)
                let opened = mcp.era(&state, r).and_then(|era| match era {
                    Era::Stateless(meta) => {
                        mcp.open_listen(r, &meta, outlet.clone(), "stdio", None)
                    }
                    Era::Session => Err(Response::invalid_request(
                        Some(r.id.clone()),
                        "subscriptions/listen is a 2026-07-28 request",
                    )),
                });
                match opened {
                    Ok(listening) => {
                        listens.insert(subscription_key(&r.id), listening);
                    }
                    Err(refusal) => {
                        if !outlet.send(&refusal.to_json()) {
                            return Err(io::Error::other("stdio output closed"));
                        }
                    }
                }
                continue;
            }
            Ok(Incoming::Single(Ok(Message::Notification(n))))
                if n.method == "notifications/cancelled" =>
            {
                if let Some(jsonrpc::Params::Object(p)) = &n.params {
                    if let Some(id) = p.get("requestId") {
                        listens.remove(&id.to_string());
                    }
                }
            }
            _ => {}
        }
        if may_wait(&incoming) && state.version.is_some() {
            if in_flight.fetch_add(1, Ordering::SeqCst) < MAX_IN_FLIGHT {
                let mut copy = state.clone();
                let outlet = outlet.clone();
                let (done_tx, done_rx) = crossbeam_channel::bounded::<()>(2);
                let waiting = done_tx.clone();
                let inner = outlet.clone();
                // The request's own peer: a request to the client lets the reader go on.
                let peer_outlet: Arc<dyn Outlet> = Arc::new(move |m: &str| {
                    let sent = inner.send(m);
                    if m.contains("\"id\"") {
                        let _ = waiting.try_send(());
                    }
                    sent
                });
                let peer = Some(mcp.peer(None, peer_outlet));
                scope.spawn(move || {
                    let reply = mcp.handle_incoming_with_peer(&mut copy, incoming, peer);
                    if let Some(json) = reply.to_json() {
                        outlet.send(&json);
                    }
                    in_flight.fetch_sub(1, Ordering::SeqCst);
                    let _ = done_tx.try_send(());
                });
                let _ = done_rx.recv_timeout(ORDER_GRACE);
                continue;
            }
            in_flight.fetch_sub(1, Ordering::SeqCst);
        }
        let peer = Some(mcp.peer(None, outlet.clone()));
        let reply = mcp.handle_incoming_with_peer(&mut state, incoming, peer);
        if state.subscriptions_changed {
            state.subscriptions_changed = false;
            mcp.hub()
                .set_local_subscriptions(HUB_KEY, state.subscriptions.clone());
        }
        // For log messages not tied to a request (the house's alerts).
        mcp.hub().set_local_log_level(HUB_KEY, state.log_level);
        if let Some(json) = reply.to_json() {
            if !outlet.send(&json) {
                return Err(io::Error::other("stdio output closed"));
            }
        }
    }
}

/// The key of a `subscriptions/listen` under its request id, as `notifications/cancelled`
/// names it (`requestId`, compact JSON).
fn subscription_key(id: &jsonrpc::Id) -> String {
    serde_json::to_value(id).unwrap_or_default().to_string()
}

/// The JSON-RPC error for a frame the stdio key may not send: a single request gets it with
/// its id; a batch with any refused request is refused whole, one error per request with its
/// id.
fn refused(key: &StdioKey, incoming: &Result<Incoming, Response>) -> Option<String> {
    match incoming {
        Ok(Incoming::Single(Ok(Message::Request(r)))) => key
            .check(r)
            .err()
            .map(|d| d.rpc_body(&RequestIds::Single(r.id.clone()))),
        Ok(Incoming::Batch(list)) => {
            let requests = || {
                list.iter().filter_map(|m| match m {
                    Ok(Message::Request(r)) => Some(r),
                    _ => None,
                })
            };
            let denial = requests().find_map(|r| key.check(r).err())?;
            let ids = RequestIds::Batch(requests().map(|r| r.id.clone()).collect());
            Some(denial.rpc_body(&ids))
        }
        _ => None,
    }
}

/// Whether the frame is one request that may wait on the client.
fn may_wait(incoming: &Result<Incoming, Response>) -> bool {
    matches!(
        incoming,
        Ok(Incoming::Single(Ok(Message::Request(r))))
            if matches!(
                r.method.as_str(),
                "tools/call" | "prompts/get" | "resources/read" | "completion/complete"
            )
    )
}

enum Line {
    /// `buf` holds one line without its line ending.
    Data,
    /// The line exceeded the limit and was discarded up to its newline.
    TooLong,
    Eof,
}

/// Reads one line into `buf` (cleared first), holding at most `max` bytes of it.
fn read_line_bounded<R: BufRead>(input: &mut R, max: usize, buf: &mut Vec<u8>) -> io::Result<Line> {
    buf.clear();
    let mut too_long = false;
    let mut saw_any = false;
    loop {
        let available = match input.fill_buf() {
            Ok(a) => a,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            // End of input: a last line without newline still counts.
            return Ok(match (saw_any, too_long) {
                (false, _) => Line::Eof,
                (true, true) => Line::TooLong,
                (true, false) => {
                    strip_cr(buf);
                    Line::Data
                }
            });
        }
        saw_any = true;
        let (chunk, used, done) = match available.iter().position(|&b| b == b'\n') {
            Some(i) => (&available[..i], i + 1, true),
            None => (available, available.len(), false),
        };
        if !too_long {
            if buf.len() + chunk.len() > max {
                too_long = true;
                buf.clear();
            } else {
                buf.extend_from_slice(chunk);
            }
        }
        input.consume(used);
        if done {
            if too_long {
                return Ok(Line::TooLong);
            }
            strip_cr(buf);
            return Ok(Line::Data);
        }
    }
}

fn strip_cr(buf: &mut Vec<u8>) {
    if buf.last() == Some(&b'\r') {
        buf.pop();
    }
}
