//! PATCH(limits): bounds on connections and requests (not in upstream tiny_http 0.12).
//!
//! See `PATCHES.md` at the root of this copy.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Limits applied by [`crate::Server::from_listener_with_limits`]. The default is upstream's
/// behaviour (no limits), except that an accept error never stops the accept thread.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Open connections at most; a new one beyond it evicts the connection idle the longest
    /// (waiting for the first byte of a request), or is refused (503, closed) if none is idle.
    pub max_connections: usize,
    /// The same, per client IP address.
    pub max_connections_per_ip: usize,
    /// Longest request line in bytes (414 beyond).
    pub max_request_line: usize,
    /// Most header lines (431 beyond).
    pub max_headers: usize,
    /// Most bytes of all header lines together (431 beyond).
    pub max_header_bytes: usize,
    /// `Some(n)`: bodies are read in the connection's thread, up to `n` bytes, before the
    /// request is handed over (so no `recv()` caller ever blocks on a slow body). A declared
    /// `Content-Length` above `n` is not read at all: the request is handed over with an
    /// empty body and the connection is closed after its answer. `None`: upstream's lazy body.
    pub max_body_bytes: Option<usize>,
    /// All bodies buffered at once by the connection threads, in bytes; beyond it a request
    /// gets 503 (with `Retry-After: 1`) and the connection is closed.
    pub max_buffered_bytes: usize,
    /// From the first byte of a request until its headers and body are in (408 beyond).
    pub request_deadline: Option<Duration>,
    /// Offered every request on its connection's thread before it is queued for `recv()`
    /// (see [`Inline`]).
    pub inline: Option<Inline>,
}

/// A hook run on a connection's own thread with each request it read, and the number of
/// requests waiting for `recv()` now: it answers the request itself (`None`; e.g. a health
/// check, or a 503 when too many wait) or gives it back to be queued (`Some`). What it
/// answers never waits behind the queue, and a slow answer holds only its own connection
/// (whose later answers wait for it anyway: HTTP/1.1 answers in order).
#[derive(Clone)]
pub struct Inline(pub Arc<dyn Fn(crate::Request, usize) -> Option<crate::Request> + Send + Sync>);

impl std::fmt::Debug for Inline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Inline(..)")
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_connections: usize::MAX,
            max_connections_per_ip: usize::MAX,
            max_request_line: usize::MAX,
            max_headers: usize::MAX,
            max_header_bytes: usize::MAX,
            max_body_bytes: None,
            max_buffered_bytes: usize::MAX,
            request_deadline: None,
            inline: None,
        }
    }
}

/// When the request being read must be in; shared by a connection's thread and its socket.
#[derive(Debug, Default)]
pub(crate) struct Deadline(Mutex<Option<Instant>>);

impl Deadline {
    pub(crate) fn get(&self) -> Option<Instant> {
        *self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn set(&self, at: Option<Instant>) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = at;
    }
}

struct Entry {
    ip: Option<IpAddr>,
    #[cfg(unix)]
    fd: std::os::unix::io::RawFd,
    /// `Some(since)` while waiting for the first byte of a request.
    idle_since: Option<Instant>,
}

#[derive(Default)]
struct Inner {
    next: u64,
    conns: HashMap<u64, Entry>,
    per_ip: HashMap<IpAddr, usize>,
}

impl Inner {
    fn remove(&mut self, id: u64) -> Option<Entry> {
        let entry = self.conns.remove(&id)?;
        if let Some(ip) = entry.ip {
            if let Some(n) = self.per_ip.get_mut(&ip) {
                *n -= 1;
                if *n == 0 {
                    self.per_ip.remove(&ip);
                }
            }
        }
        Some(entry)
    }

    /// Ends the connection idle the longest (of `ip` if given): its reader sees EOF. Its entry
    /// is removed at once. The descriptor is still open: an entry is removed (under the lock)
    /// before its sockets close.
    fn evict(&mut self, ip: Option<IpAddr>) -> bool {
        let victim = self
            .conns
            .iter()
            .filter(|(_, e)| ip.is_none() || e.ip == ip)
            .filter_map(|(id, e)| e.idle_since.map(|t| (t, *id)))
            .min();
        let Some((_, id)) = victim else { return false };
        if let Some(_entry) = self.remove(id) {
            #[cfg(unix)]
            #[allow(unsafe_code)]
            // SAFETY: shutdown(2) on a descriptor that is open (see above); no memory involved.
            unsafe {
                libc::shutdown(_entry.fd, libc::SHUT_RD);
            }
        }
        true
    }
}

/// The open connections, for the caps of [`Limits`].
pub(crate) struct ConnTable {
    inner: Mutex<Inner>,
    max_total: usize,
    max_per_ip: usize,
    pub(crate) evicted: AtomicUsize,
    pub(crate) refused: AtomicUsize,
}

impl ConnTable {
    pub(crate) fn new(limits: &Limits) -> Arc<ConnTable> {
        Arc::new(ConnTable {
            inner: Mutex::new(Inner::default()),
            max_total: limits.max_connections.max(1),
            max_per_ip: limits.max_connections_per_ip.max(1),
            evicted: AtomicUsize::new(0),
            refused: AtomicUsize::new(0),
        })
    }

    /// A slot for a new connection, or `None` when it must be refused.
    pub(crate) fn admit(
        self: &Arc<Self>,
        ip: Option<IpAddr>,
        #[cfg(unix)] fd: std::os::unix::io::RawFd,
    ) -> Option<Slot> {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(ip) = ip {
            if inner.per_ip.get(&ip).copied().unwrap_or(0) >= self.max_per_ip {
                if !inner.evict(Some(ip)) {
                    self.refused.fetch_add(1, Ordering::Relaxed);
                    return None;
                }
                self.evicted.fetch_add(1, Ordering::Relaxed);
            }
        }
        if inner.conns.len() >= self.max_total {
            if !inner.evict(None) {
                self.refused.fetch_add(1, Ordering::Relaxed);
                return None;
            }
            self.evicted.fetch_add(1, Ordering::Relaxed);
        }
        let id = inner.next;
        inner.next += 1;
        inner.conns.insert(
            id,
            Entry {
                ip,
                #[cfg(unix)]
                fd,
                idle_since: Some(Instant::now()),
            },
        );
        if let Some(ip) = ip {
            *inner.per_ip.entry(ip).or_insert(0) += 1;
        }
        Some(Slot {
            table: self.clone(),
            id,
        })
    }
}

/// One connection's place in the [`ConnTable`]; dropped before its sockets close.
pub(crate) struct Slot {
    table: Arc<ConnTable>,
    id: u64,
}

impl Slot {
    /// Marks the connection as waiting for a request (evictable) or reading one.
    pub(crate) fn set_idle(&self, idle: bool) {
        let mut inner = self.table.inner.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(e) = inner.conns.get_mut(&self.id) {
            e.idle_since = idle.then(Instant::now);
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut inner = self.table.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.remove(self.id);
    }
}

/// Bytes of bodies buffered by connection threads now.
static BUFFERED: AtomicUsize = AtomicUsize::new(0);

/// Reserves `n` bytes of the body budget, or `None` when it would exceed `max`.
pub(crate) fn reserve(n: usize, max: usize) -> Option<Reservation> {
    let mut now = BUFFERED.load(Ordering::Relaxed);
    loop {
        let next = now.checked_add(n).filter(|t| *t <= max)?;
        match BUFFERED.compare_exchange_weak(now, next, Ordering::AcqRel, Ordering::Relaxed) {
            Ok(_) => return Some(Reservation(n)),
            Err(seen) => now = seen,
        }
    }
}

/// Part of the body budget, given back on drop.
#[derive(Debug)]
pub(crate) struct Reservation(usize);

impl Reservation {
    /// Gives back what the body did not use.
    pub(crate) fn shrink_to(&mut self, n: usize) {
        if n < self.0 {
            BUFFERED.fetch_sub(self.0 - n, Ordering::AcqRel);
            self.0 = n;
        }
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        BUFFERED.fetch_sub(self.0, Ordering::AcqRel);
    }
}

/// A buffered body holding its [`Reservation`].
pub(crate) struct BufferedBody {
    pub(crate) data: std::io::Cursor<Vec<u8>>,
    pub(crate) _budget: Reservation,
}

impl std::io::Read for BufferedBody {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.data.read(buf)
    }
}
