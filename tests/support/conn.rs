//! A keep-alive HTTP/1.1 connection: several requests, one after the other, on one socket
//! (for tests about what a connection does between and after requests: body limits that
//! keep it usable, idle timeouts, Nagle stalls). One request per fresh connection is
//! [`super::net::request`].

use std::io::{BufReader, Write};
use std::net::{SocketAddr, TcpStream};

use super::net::Reply;
use super::sse::Http;
use super::PATIENCE;

/// One client connection kept open across requests.
pub struct Conn {
    reader: Option<BufReader<TcpStream>>,
    pub addr: SocketAddr,
}

impl Conn {
    /// Connects (`TCP_NODELAY`, reads wait up to [`PATIENCE`]).
    pub fn open(addr: SocketAddr) -> Conn {
        let stream = TcpStream::connect(addr).unwrap();
        stream.set_read_timeout(Some(PATIENCE)).unwrap();
        stream.set_nodelay(true).unwrap();
        Conn {
            reader: Some(BufReader::new(stream)),
            addr,
        }
    }

    /// The socket, e.g. to watch the server close it.
    pub fn stream(&mut self) -> &mut TcpStream {
        self.reader.as_mut().expect("connection in use").get_mut()
    }

    /// Sends a request and reads its whole answer (`Content-Length` or chunked). The
    /// defaults `Host: 127.0.0.1:{port}`, `Content-Type: application/json` and
    /// `Accept: application/json, text/event-stream` are replaced by `headers` of the same
    /// name; a header with an empty value is left out.
    pub fn send(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Reply {
        let mut all: Vec<(String, String)> = vec![
            ("Host".into(), format!("127.0.0.1:{}", self.addr.port())),
            ("Content-Type".into(), "application/json".into()),
            (
                "Accept".into(),
                "application/json, text/event-stream".into(),
            ),
        ];
        for (n, v) in headers {
            all.retain(|(m, _)| !m.eq_ignore_ascii_case(n));
            all.push((n.to_string(), v.to_string()));
        }
        let mut raw = format!("{method} {path} HTTP/1.1\r\n");
        for (n, v) in all.iter().filter(|(_, v)| !v.is_empty()) {
            raw.push_str(&format!("{n}: {v}\r\n"));
        }
        raw.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
        let mut reader = self.reader.take().expect("connection in use");
        reader.get_mut().write_all(raw.as_bytes()).unwrap();
        reader.get_mut().write_all(body).unwrap();
        let mut answer = Http::read_head(reader);
        // (header names come lower-cased, values as sent)
        while answer.fill() {}
        let head = std::iter::once(format!("HTTP/1.1 {}", answer.status))
            .chain(answer.headers.iter().map(|(n, v)| format!("{n}: {v}")))
            .collect::<Vec<_>>()
            .join("\r\n");
        let reply = Reply {
            status: answer.status,
            head,
            body: std::mem::take(&mut answer.text),
            complete: true,
        };
        self.reader = Some(answer.reader);
        reply
    }
}
