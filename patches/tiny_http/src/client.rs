use ascii::AsciiString;

use std::io::Error as IoError;
use std::io::Result as IoResult;
use std::io::{BufReader, BufWriter, ErrorKind, Read};

use std::net::SocketAddr;
use std::str::FromStr;

use crate::common::{HTTPVersion, Method};
use crate::util::RefinedTcpStream;
use crate::util::SequentialWriter;
use crate::util::{SequentialReader, SequentialReaderBuilder, SequentialWriterBuilder};
use crate::Request;

/// PATCH(limits): what is read and discarded of a body over the limit, after its 413, so
/// that a client that sends its whole body before it reads (Python's `http.client`, most
/// libraries) reads the 413 instead of a reset. A declared body at most this much over the
/// limit is drained and keep-alive goes on; a larger declared one, or a chunked body over the
/// limit, ends the connection with a lingering close ([`ClientConnection::linger`]) that reads
/// at most this much more. Read into a small buffer and dropped, under the request deadline.
const DISCARD_BYTES: usize = 8 * 1024 * 1024;

/// PATCH(limits): what a lingering close after a refusal of the connection's own (400, 414,
/// 431, 503) reads at most, and for how long.
const REFUSAL_LINGER_BYTES: usize = 256 * 1024;
const REFUSAL_LINGER: std::time::Duration = std::time::Duration::from_secs(1);

/// PATCH(limits): the longest chunk-size line (with extensions) of a chunked body.
/// `chunked_transfer` reads such a line a byte at a time and keeps it whole in memory, without
/// a bound: a line that never ends grew by what the client sent until the request deadline.
const MAX_CHUNK_LINE: usize = 4096;

/// PATCH(limits): fails a chunked body whose chunk-size line exceeds [`MAX_CHUNK_LINE`].
/// `chunked_transfer` reads size lines (and the CRLF after each chunk) one byte per `read`,
/// and chunk data in larger reads; so more than `MAX_CHUNK_LINE` one-byte reads in a row
/// without a line feed are a size line that long.
struct ChunkLines<R> {
    inner: R,
    /// One-byte reads since the last line feed.
    run: usize,
}

impl<R: Read> Read for ChunkLines<R> {
    fn read(&mut self, buf: &mut [u8]) -> IoResult<usize> {
        let n = self.inner.read(buf)?;
        if buf.len() == 1 && n == 1 {
            if buf[0] == b'\n' {
                self.run = 0;
            } else {
                self.run += 1;
                if self.run > MAX_CHUNK_LINE {
                    return Err(IoError::new(
                        ErrorKind::InvalidData,
                        "chunk-size line too long",
                    ));
                }
            }
        } else if n > 0 {
            self.run = 0;
        }
        Ok(n)
    }
}

/// A ClientConnection is an object that will store a socket to a client
/// and return Request objects.
pub struct ClientConnection {
    // PATCH(limits): first field, so it is dropped (leaving the connection table) before the
    // sockets close.
    slot: Option<crate::limits::Slot>,
    limits: crate::limits::Limits,
    deadline: std::sync::Arc<crate::limits::Deadline>,

    // address of the client
    remote_addr: IoResult<Option<SocketAddr>>,

    // sequence of Readers to the stream, so that the data is not read in
    //  the wrong order
    source: SequentialReaderBuilder<BufReader<RefinedTcpStream>>,

    // sequence of Writers to the stream, to avoid writing response #2 before
    //  response #1
    sink: SequentialWriterBuilder<BufWriter<RefinedTcpStream>>,

    // Reader to read the next header from
    next_header_source: SequentialReader<BufReader<RefinedTcpStream>>,

    // set to true if we know that the previous request is the last one
    no_more_requests: bool,

    // PATCH(limits): the unread body of a request refused as too large, discarded before the
    // next request is read (keep-alive goes on).
    discard: Option<(SequentialReader<BufReader<RefinedTcpStream>>, u64)>,

    // PATCH(limits): the last request's body was over the limit and not read to its end: the
    // connection ends with a lingering close after its answer.
    linger_after: bool,

    // true if the connection goes through SSL
    secure: bool,
}

/// Error that can happen when reading a request.
#[derive(Debug)]
enum ReadError {
    WrongRequestLine,
    WrongHeader(HTTPVersion),
    /// the client sent an unrecognized `Expect` header
    ExpectationFailed(HTTPVersion),
    ReadIoError(IoError),
    /// PATCH(limits): 414, 431, 400 (framing) or 503 (body budget); the connection closes.
    Refused(u16),
}

impl ClientConnection {
    /// PATCH(limits): a connection under `limits`, holding its place `slot` in the table.
    pub(crate) fn with_limits(
        write_socket: RefinedTcpStream,
        mut read_socket: RefinedTcpStream,
        slot: Option<crate::limits::Slot>,
        limits: crate::limits::Limits,
    ) -> ClientConnection {
        let remote_addr = read_socket.peer_addr();
        let secure = read_socket.secure();
        // PATCH(limits): without a request deadline it stays unset (upstream's reads) except
        // while lingering.
        let deadline = std::sync::Arc::new(crate::limits::Deadline::default());
        read_socket.set_deadline(deadline.clone());

        let mut source = SequentialReaderBuilder::new(BufReader::with_capacity(1024, read_socket));
        let first_header = source.next().unwrap();

        ClientConnection {
            slot,
            limits,
            deadline,
            source,
            sink: SequentialWriterBuilder::new(BufWriter::with_capacity(1024, write_socket)),
            remote_addr,
            next_header_source: first_header,
            no_more_requests: false,
            discard: None,
            linger_after: false,
            secure,
        }
    }

    /// true if the connection is HTTPS
    pub fn secure(&self) -> bool {
        self.secure
    }

    /// Reads the next line from self.next_header_source.
    ///
    /// Reads until `CRLF` is reached. The next read will start
    ///  at the first byte of the new line.
    fn read_next_line(&mut self, max: usize, first: bool) -> Result<AsciiString, ReadError> {
        let mut buf = Vec::new();
        let mut prev_byte_was_cr = false;

        loop {
            let byte = self.next_header_source.by_ref().bytes().next();

            let byte = match byte {
                Some(b) => b.map_err(ReadError::ReadIoError)?,
                None => {
                    return Err(ReadError::ReadIoError(IoError::new(
                        ErrorKind::ConnectionAborted,
                        "Unexpected EOF",
                    )))
                }
            };
            // PATCH(limits): the request's deadline runs from its first byte; until then the
            // connection is idle (and may be evicted for a new one).
            if first && buf.is_empty() && !prev_byte_was_cr {
                if let Some(slot) = &self.slot {
                    slot.set_idle(false);
                }
                if let Some(d) = self.limits.request_deadline {
                    self.deadline.set(Some(std::time::Instant::now() + d));
                }
            }
            if buf.len() >= max {
                return Err(ReadError::Refused(if first { 414 } else { 431 }));
            }

            if byte == b'\n' && prev_byte_was_cr {
                buf.pop(); // removing the '\r'
                return AsciiString::from_ascii(buf).map_err(|_| {
                    ReadError::ReadIoError(IoError::new(
                        ErrorKind::InvalidInput,
                        "Header is not in ASCII",
                    ))
                });
            }

            prev_byte_was_cr = byte == b'\r';

            buf.push(byte);
        }
    }

    /// PATCH(limits): refuses ambiguous framing (request smuggling) and, with
    /// `max_body_bytes`, reads the body here, under the request deadline. Returns the body
    /// reader, whether it is pre-read, and whether the connection must close after the answer
    /// (a body over the limit, left unread).
    #[allow(clippy::type_complexity)]
    fn read_body(
        &mut self,
        headers: &[crate::Header],
        writer: &mut SequentialWriter<BufWriter<RefinedTcpStream>>,
        source: SequentialReader<BufReader<RefinedTcpStream>>,
    ) -> Result<(Box<dyn Read + Send + 'static>, bool, bool), ReadError> {
        use std::io::Write;
        let values = |name: &'static str| -> Vec<&str> {
            headers
                .iter()
                .filter(|h| h.field.equiv(name))
                .map(|h| h.value.as_str().trim())
                .collect()
        };
        let te = values("Transfer-Encoding");
        let cl = values("Content-Length");
        if !te.is_empty() && !cl.is_empty() {
            return Err(ReadError::Refused(400));
        }
        let length = match cl.first() {
            None => None,
            Some(first) => {
                if cl.iter().any(|v| v != first) {
                    return Err(ReadError::Refused(400));
                }
                match first.parse::<usize>() {
                    Ok(n) if first.bytes().all(|b| b.is_ascii_digit()) => Some(n),
                    _ => return Err(ReadError::Refused(400)),
                }
            }
        };
        let Some(max) = self.limits.max_body_bytes else {
            return Ok((Box::new(source), false, false));
        };
        let upgrade = values("Connection")
            .iter()
            .any(|v| v.to_ascii_lowercase().contains("upgrade"));
        if upgrade {
            return Ok((Box::new(source), false, false));
        }
        let expects_continue = values("Expect")
            .iter()
            .any(|v| v.eq_ignore_ascii_case("100-continue"));
        let max_buffered = self.limits.max_buffered_bytes;
        let budget = |n: usize| {
            crate::limits::reserve(n, max_buffered).ok_or(ReadError::Refused(503))
        };
        let mut continue_sent = false;
        let mut send_continue = |writer: &mut SequentialWriter<_>| -> Result<(), ReadError> {
            if expects_continue && !continue_sent {
                continue_sent = true;
                writer
                    .write_all(b"HTTP/1.1 100 Continue\r\n\r\n")
                    .and_then(|_| writer.flush())
                    .map_err(ReadError::ReadIoError)?;
            }
            Ok(())
        };
        let empty = || Box::new(std::io::empty()) as Box<dyn Read + Send + 'static>;
        let (data, budget) = match length {
            Some(0) => return Ok((empty(), true, false)),
            // Not read before the answer (413). Up to DISCARD_BYTES more than allowed are
            // then discarded (under a deadline) and keep-alive goes on; beyond, the connection
            // closes after the answer.
            Some(n) if n > max => {
                let close = n - max > DISCARD_BYTES;
                if !close {
                    self.discard = Some((source, n as u64));
                }
                return Ok((empty(), true, close));
            }
            Some(n) => {
                let budget = budget(n)?;
                send_continue(writer)?;
                let mut data = Vec::with_capacity(n);
                source
                    .take(n as u64)
                    .read_to_end(&mut data)
                    .map_err(ReadError::ReadIoError)?;
                if data.len() < n {
                    return Err(ReadError::ReadIoError(IoError::new(
                        ErrorKind::ConnectionAborted,
                        "Connection has been closed before we received enough data",
                    )));
                }
                (data, budget)
            }
            None if !te.is_empty() => {
                let mut budget = budget(max.saturating_add(1))?;
                send_continue(writer)?;
                let mut data = Vec::new();
                chunked_transfer::Decoder::new(ChunkLines {
                    inner: source,
                    run: 0,
                })
                .take(max as u64 + 1)
                .read_to_end(&mut data)
                .map_err(|e| match e.kind() {
                    // A malformed chunk-size line, or one longer than MAX_CHUNK_LINE: 400.
                    ErrorKind::InvalidInput | ErrorKind::InvalidData => ReadError::Refused(400),
                    _ => ReadError::ReadIoError(e),
                })?;
                budget.shrink_to(data.len());
                (data, budget)
            }
            None => return Ok((empty(), true, false)),
        };
        let close = data.len() > max;
        let body = crate::limits::BufferedBody {
            data: std::io::Cursor::new(data),
            _budget: budget,
        };
        Ok((Box::new(body), true, close))
    }

    /// PATCH(limits): closes in stages (RFC 9112 section 9.6): once the answers before it
    /// are written (waited for at most `time`), shuts the write side down, so the client reads
    /// the answer and then EOF, and reads and drops what the client still sends until it
    /// closes its side, at most `max_bytes` within `time`. Closing a socket with unread data
    /// sends a reset, which can drop the answer from the client's receive buffer before it
    /// is read; a client still writing its request sees a broken pipe instead of the answer.
    fn linger(&mut self, max_bytes: usize, time: std::time::Duration) {
        let until = std::time::Instant::now() + time;
        let mut writer = self.sink.next().unwrap();
        if !writer.wait_turn(until) {
            return;
        }
        writer.with_inner(|w| {
            use std::io::Write;
            let _ = w.flush();
            w.get_mut().shutdown_write();
        });
        drop(writer);
        self.deadline.set(Some(until));
        let mut sink = [0u8; 8192];
        let mut total = 0;
        while total < max_bytes {
            let want = sink.len().min(max_bytes - total);
            match self.next_header_source.read(&mut sink[..want]) {
                Ok(0) | Err(_) => break,
                Ok(n) => total += n,
            }
        }
        self.deadline.set(None);
    }

    /// Reads a request from the stream.
    /// Blocks until the header has been read.
    fn read(&mut self) -> Result<Request, ReadError> {
        let (method, path, version, headers) = {
            // reading the request line
            if let Some((source, n)) = self.discard.take() {
                if let Some(d) = self.limits.request_deadline {
                    self.deadline.set(Some(std::time::Instant::now() + d));
                }
                let drained = std::io::copy(&mut source.take(n), &mut std::io::sink());
                self.deadline.set(None);
                match drained {
                    Ok(m) if m == n => {}
                    Ok(_) => {
                        return Err(ReadError::ReadIoError(IoError::new(
                            ErrorKind::ConnectionAborted,
                            "Unexpected EOF",
                        )))
                    }
                    Err(e) => return Err(ReadError::ReadIoError(e)),
                }
            }
            if let Some(slot) = &self.slot {
                slot.set_idle(true);
            }
            let (method, path, version) = {
                let line = self.read_next_line(self.limits.max_request_line, true)?;

                parse_request_line(
                    line.as_str().trim(), // TODO: remove this conversion
                )?
            };

            // getting all headers
            let headers = {
                let mut headers = Vec::new();
                let mut left = self.limits.max_header_bytes;
                loop {
                    let line = self.read_next_line(left, false)?;

                    if line.is_empty() {
                        break;
                    };
                    // PATCH(limits): header count and bytes.
                    left = left.saturating_sub(line.len() + 2);
                    if headers.len() >= self.limits.max_headers {
                        return Err(ReadError::Refused(431));
                    }
                    headers.push(match FromStr::from_str(line.as_str().trim()) {
                        // TODO: remove this conversion
                        Ok(h) => h,
                        _ => return Err(ReadError::WrongHeader(version)),
                    });
                }

                headers
            };

            (method, path, version, headers)
        };

        // building the writer for the request
        let mut writer = self.sink.next().unwrap();

        // follow-up for next potential request
        let mut data_source = self.source.next().unwrap();
        std::mem::swap(&mut self.next_header_source, &mut data_source);

        // building the next reader
        // PATCH(limits): framing checks, and the body read here (with the deadline).
        let body = self.read_body(&headers, &mut writer, data_source);
        self.deadline.set(None);
        let (data_source, prebuffered, close) = body?;
        if close {
            self.no_more_requests = true;
            self.linger_after = true;
        }
        let mut request = crate::request::new_request_with(
            self.secure,
            method,
            path,
            version.clone(),
            headers,
            *self.remote_addr.as_ref().unwrap(),
            data_source,
            writer,
            prebuffered,
        )
        .map_err(|e| {
            use crate::request;
            match e {
                request::RequestCreationError::CreationIoError(e) => ReadError::ReadIoError(e),
                request::RequestCreationError::ExpectationFailed => {
                    ReadError::ExpectationFailed(version)
                }
            }
        })?;
        if close {
            request.set_closes();
        }
        // return the request
        Ok(request)
    }
}

impl Iterator for ClientConnection {
    type Item = Request;

    /// Blocks until the next Request is available.
    /// Returns None when no new Requests will come from the client.
    fn next(&mut self) -> Option<Request> {
        use crate::{Response, StatusCode};

        // the client sent a "connection: close" header in this previous request
        //  or is using HTTP 1.0, meaning that no new request will come
        if self.no_more_requests {
            // PATCH(limits): a body over the limit was left unread: after its answer, read
            // and drop the rest (bounded) before closing.
            if std::mem::take(&mut self.linger_after) {
                let time = self
                    .limits
                    .request_deadline
                    .unwrap_or(REFUSAL_LINGER);
                self.linger(DISCARD_BYTES, time);
            }
            return None;
        }

        loop {
            let rq = match self.read() {
                Err(ReadError::WrongRequestLine) => {
                    let writer = self.sink.next().unwrap();
                    let response = Response::new_empty(StatusCode(400));
                    response
                        .raw_print(writer, HTTPVersion(1, 1), &[], false, None)
                        .ok();
                    return None; // we don't know where the next request would start,
                                 // se we have to close
                }

                Err(ReadError::WrongHeader(ver)) => {
                    let writer = self.sink.next().unwrap();
                    let response = Response::new_empty(StatusCode(400));
                    response.raw_print(writer, ver, &[], false, None).ok();
                    return None; // we don't know where the next request would start,
                                 // se we have to close
                }

                Err(ReadError::ReadIoError(ref err)) if err.kind() == ErrorKind::TimedOut => {
                    // request timeout
                    let writer = self.sink.next().unwrap();
                    let response = Response::new_empty(StatusCode(408));
                    response
                        .raw_print(writer, HTTPVersion(1, 1), &[], false, None)
                        .ok();
                    return None; // closing the connection
                }

                Err(ReadError::ExpectationFailed(ver)) => {
                    let writer = self.sink.next().unwrap();
                    let response = Response::new_empty(StatusCode(417));
                    response.raw_print(writer, ver, &[], true, None).ok();
                    return None; // TODO: should be recoverable, but needs handling in case of body
                }

                Err(ReadError::Refused(code)) => {
                    let writer = self.sink.next().unwrap();
                    let mut response = Response::new_empty(StatusCode(code));
                    if code == 503 {
                        response.add_header(
                            crate::Header::from_bytes(&b"Retry-After"[..], &b"1"[..]).unwrap(),
                        );
                    }
                    response
                        .with_connection_close()
                        .raw_print(writer, HTTPVersion(1, 1), &[], false, None)
                        .ok();
                    self.linger(REFUSAL_LINGER_BYTES, REFUSAL_LINGER);
                    return None;
                }

                Err(ReadError::ReadIoError(_)) => return None,

                Ok(rq) => rq,
            };

            // checking HTTP version
            if *rq.http_version() > (1, 1) {
                let writer = self.sink.next().unwrap();
                let response = Response::from_string(
                    "This server only supports HTTP versions 1.0 and 1.1".to_owned(),
                )
                .with_status_code(StatusCode(505));
                response
                    .raw_print(writer, HTTPVersion(1, 1), &[], false, None)
                    .ok();
                continue;
            }

            // updating the status of the connection
            let connection_header = rq
                .headers()
                .iter()
                .find(|h| h.field.equiv("Connection"))
                .map(|h| h.value.as_str());

            let lowercase = connection_header.map(|h| h.to_ascii_lowercase());

            match lowercase {
                Some(ref val) if val.contains("close") => self.no_more_requests = true,
                Some(ref val) if val.contains("upgrade") => self.no_more_requests = true,
                Some(ref val)
                    if !val.contains("keep-alive") && *rq.http_version() == HTTPVersion(1, 0) =>
                {
                    self.no_more_requests = true
                }
                None if *rq.http_version() == HTTPVersion(1, 0) => self.no_more_requests = true,
                _ => (),
            };

            // returning the request
            return Some(rq);
        }
    }
}

/// Parses a "HTTP/1.1" string.
fn parse_http_version(version: &str) -> Result<HTTPVersion, ReadError> {
    let (major, minor) = match version {
        "HTTP/0.9" => (0, 9),
        "HTTP/1.0" => (1, 0),
        "HTTP/1.1" => (1, 1),
        "HTTP/2.0" => (2, 0),
        "HTTP/3.0" => (3, 0),
        _ => return Err(ReadError::WrongRequestLine),
    };

    Ok(HTTPVersion(major, minor))
}

/// Parses the request line of the request.
/// eg. GET / HTTP/1.1
fn parse_request_line(line: &str) -> Result<(Method, String, HTTPVersion), ReadError> {
    let mut parts = line.split(' ');

    let method = parts.next().and_then(|w| w.parse().ok());
    let path = parts.next().map(ToOwned::to_owned);
    let version = parts.next().and_then(|w| parse_http_version(w).ok());

    method
        .and_then(|method| Some((method, path?, version?)))
        .ok_or(ReadError::WrongRequestLine)
}

#[cfg(test)]
mod test {
    #[test]
    fn test_parse_request_line() {
        let (method, path, ver) = super::parse_request_line("GET /hello HTTP/1.1").unwrap();

        assert!(method == crate::Method::Get);
        assert!(path == "/hello");
        assert!(ver == crate::common::HTTPVersion(1, 1));

        assert!(super::parse_request_line("GET /hello").is_err());
        assert!(super::parse_request_line("qsd qsd qsd").is_err());
    }
}
