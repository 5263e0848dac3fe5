//! The stdio transport: newline-delimited JSON-RPC over a reader and a writer.
//!
//! One message (or batch) per input line; each reply is one line of compact JSON, flushed at
//! once. The output carries nothing but JSON-RPC (logs go to stderr). Blank lines are ignored.
//! A line longer than the limit is skipped up to its newline without ever being held whole,
//! and answered with -32600 (`id: null`). There is one implicit session without an id; it
//! lives as long as the input. [`serve`] returns `Ok(())` at end of input.

use std::io::{self, BufRead, Write};

use crate::mcp::jsonrpc::Response;
use crate::mcp::{McpServer, SessionState};

/// Longest accepted input line in bytes (1 MiB), not counting the newline.
pub const MAX_LINE_BYTES: usize = 1024 * 1024;

/// Serves `input` until end of input, writing replies to `output`, with lines capped at
/// [`MAX_LINE_BYTES`].
///
/// Errors: only I/O errors of `input` or `output`; bad input is answered, never fatal.
pub fn serve<R: BufRead, W: Write>(mcp: &McpServer, input: R, output: W) -> io::Result<()> {
    serve_with_limit(mcp, input, output, MAX_LINE_BYTES)
}

/// [`serve`] with an explicit line limit in bytes.
pub fn serve_with_limit<R: BufRead, W: Write>(
    mcp: &McpServer,
    mut input: R,
    mut output: W,
    max_line_bytes: usize,
) -> io::Result<()> {
    let mut state = SessionState::new("stdio");
    let mut line = Vec::new();
    loop {
        let reply = match read_line_bounded(&mut input, max_line_bytes, &mut line)? {
            Line::Eof => return Ok(()),
            Line::TooLong => Some(
                Response::invalid_request(
                    None,
                    format!("message longer than {max_line_bytes} bytes was discarded"),
                )
                .to_json(),
            ),
            Line::Data => {
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                mcp.handle(&mut state, &line).to_json()
            }
        };
        if let Some(json) = reply {
            output.write_all(json.as_bytes())?;
            output.write_all(b"\n")?;
            output.flush()?;
        }
    }
}

/// [`serve`] over the process's locked stdin and stdout.
pub fn serve_stdio(mcp: &McpServer) -> io::Result<()> {
    let stdin = io::stdin();
    let stdout = io::stdout();
    serve(mcp, stdin.lock(), stdout.lock())
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
