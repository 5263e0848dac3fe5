//! Long-lived SSE responses without a request worker: session outboxes, stream threads and the
//! SSE wire format.
//!
//! * [`SseWriter`] takes a tiny_http request over (`into_writer`) and writes the response
//!   itself: the head, then each event as one HTTP chunk, flushed at once, and the terminal
//!   chunk at the end, so the connection stays usable for keep-alive.
//! * [`StreamPool`] bounds the dedicated stream threads (`HttpConfig::max_streams`); a worker
//!   that hands a request over returns to `recv()` at once.
//! * [`Outbox`]: one per HTTP session (and per legacy `/sse` session). Every message sent to
//!   the session gets an SSE event id `<stream>-<seq>` (unique per session; stream 0 is the
//!   session's standalone stream, 1.. the SSE answers to POSTs) and is kept in a bounded replay
//!   buffer. Live GET streams attach to the outbox through a bounded channel; a standalone
//!   message goes to the newest live stream only (never broadcast). A reader too slow to keep
//!   its channel from filling up is dropped (its stream ends) without touching the others.
//!   `Last-Event-ID` on a new GET replays the buffered messages of the named stream after the
//!   named event; a GET without it first gets the standalone messages no stream took yet (a
//!   `resources/updated` sent between a client's subscribe and its GET is not lost).

use std::collections::{HashMap, VecDeque};
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crossbeam_channel::{bounded, Receiver, Sender, TrySendError};

use crate::mcp::Outlet;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Bounds the number of dedicated stream threads.
pub(crate) struct StreamPool {
    active: AtomicUsize,
    max: usize,
}

/// One slot of the pool, given back on drop.
pub(crate) struct Permit(Arc<StreamPool>);

impl Drop for Permit {
    fn drop(&mut self) {
        self.0.active.fetch_sub(1, Ordering::SeqCst);
    }
}

impl StreamPool {
    pub(crate) fn new(max: usize) -> Arc<Self> {
        Arc::new(Self {
            active: AtomicUsize::new(0),
            max,
        })
    }

    /// A slot, or `None` when `max` streams are running.
    pub(crate) fn acquire(self: &Arc<Self>) -> Option<Permit> {
        let mut n = self.active.load(Ordering::SeqCst);
        loop {
            if n >= self.max {
                return None;
            }
            match self
                .active
                .compare_exchange(n, n + 1, Ordering::SeqCst, Ordering::SeqCst)
            {
                Ok(_) => return Some(Permit(self.clone())),
                Err(now) => n = now,
            }
        }
    }

    /// Streams running now.
    pub(crate) fn active(&self) -> usize {
        self.active.load(Ordering::SeqCst)
    }
}

/// Runs `job` on a new thread holding `permit`, or (no permit, or the thread cannot start)
/// on the calling thread.
pub(crate) fn run_detached(
    name: &str,
    permit: Option<Permit>,
    job: impl FnOnce() + Send + 'static,
) {
    match permit {
        Some(permit) => {
            let job = Arc::new(Mutex::new(Some(job)));
            let job2 = job.clone();
            let spawned = std::thread::Builder::new()
                .name(name.to_string())
                .spawn(move || {
                    let _permit = permit;
                    if let Some(job) = lock(&job2).take() {
                        job();
                    }
                });
            if let Err(e) = spawned {
                log::warn!("cannot start a stream thread: {e}; running inline");
                if let Some(job) = lock(&job).take() {
                    job();
                }
            }
        }
        None => job(),
    }
}

/// An SSE response written by hand on a taken-over connection (chunked transfer encoding).
pub(crate) struct SseWriter {
    out: Box<dyn Write + Send>,
}

impl SseWriter {
    /// Writes the response head (`200`, `text/event-stream`, chunked) with `headers`.
    pub(crate) fn start(
        request: tiny_http::Request,
        headers: &[(&str, String)],
    ) -> std::io::Result<Self> {
        let mut head = String::from(
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n\
             Transfer-Encoding: chunked\r\nX-Accel-Buffering: no\r\n",
        );
        for (name, value) in headers {
            if value
                .bytes()
                .all(|b| b == b'\t' || (0x20..0x7f).contains(&b))
            {
                head.push_str(&format!("{name}: {value}\r\n"));
            }
        }
        head.push_str("\r\n");
        let mut out = request.into_writer();
        out.write_all(head.as_bytes())?;
        out.flush()?;
        Ok(Self { out })
    }

    fn chunk(&mut self, text: &str) -> std::io::Result<()> {
        if text.is_empty() {
            return Ok(());
        }
        write!(self.out, "{:x}\r\n{text}\r\n", text.len())?;
        self.out.flush()
    }

    /// One event; `data` is one line of JSON (or empty for a priming event).
    pub(crate) fn event(
        &mut self,
        id: Option<&str>,
        event: Option<&str>,
        data: &str,
    ) -> std::io::Result<()> {
        let mut text = String::with_capacity(data.len() + 48);
        if let Some(e) = event {
            text.push_str(&format!("event: {e}\n"));
        }
        if let Some(id) = id {
            text.push_str(&format!("id: {id}\n"));
        }
        for line in data.split('\n') {
            text.push_str("data: ");
            text.push_str(line);
            text.push('\n');
        }
        text.push('\n');
        self.chunk(&text)
    }

    /// `retry:` (reconnection delay in ms).
    pub(crate) fn retry(&mut self, ms: u64) -> std::io::Result<()> {
        self.chunk(&format!("retry: {ms}\n\n"))
    }

    /// A comment line (keep-alive).
    pub(crate) fn comment(&mut self, text: &str) -> std::io::Result<()> {
        self.chunk(&format!(": {text}\n\n"))
    }

    /// Ends the response (terminal chunk).
    pub(crate) fn finish(mut self) {
        let _ = self.out.write_all(b"0\r\n\r\n");
        let _ = self.out.flush();
    }
}

/// What a live stream receives.
pub(crate) struct Frame {
    pub(crate) id: String,
    pub(crate) data: String,
}

struct Live {
    conn: u64,
    tx: Sender<Frame>,
}

struct Buffered {
    stream: u64,
    seq: u64,
    data: String,
    /// A standalone message that no live stream has taken yet.
    waiting: bool,
}

struct Inner {
    seq: u64,
    next_stream: u64,
    next_conn: u64,
    buffer: VecDeque<Buffered>,
    live: Vec<Live>,
}

/// A live stream's end of the outbox.
pub(crate) struct Attached {
    pub(crate) conn: u64,
    pub(crate) rx: Receiver<Frame>,
    /// Event id of the priming event.
    pub(crate) priming_id: String,
    /// Buffered events to replay first (`Last-Event-ID`).
    pub(crate) replay: Vec<Frame>,
}

/// The messages of one session (see the module docs).
pub(crate) struct Outbox {
    inner: Mutex<Inner>,
    buffer_cap: usize,
    queue_cap: usize,
    /// Dropped live streams (slow readers) since the session started.
    pub(crate) dropped: AtomicUsize,
    closed: AtomicBool,
}

impl Outbox {
    pub(crate) fn new(buffer_cap: usize, queue_cap: usize) -> Self {
        Self {
            inner: Mutex::new(Inner {
                seq: 0,
                next_stream: 1,
                next_conn: 1,
                buffer: VecDeque::new(),
                live: Vec::new(),
            }),
            buffer_cap,
            queue_cap: queue_cap.max(1),
            dropped: AtomicUsize::new(0),
            closed: AtomicBool::new(false),
        }
    }

    /// A new stream number for the SSE answer to a POST, and its priming event id.
    pub(crate) fn open_stream(&self) -> (u64, String) {
        let mut inner = lock(&self.inner);
        let stream = inner.next_stream;
        inner.next_stream += 1;
        (stream, format!("{stream}-{}", inner.seq))
    }

    /// Buffers `data` as the next event of `stream`; returns its event id.
    pub(crate) fn record(&self, stream: u64, data: &str) -> String {
        self.record_in(&mut lock(&self.inner), stream, data)
    }

    fn record_in(&self, inner: &mut Inner, stream: u64, data: &str) -> String {
        inner.seq += 1;
        let seq = inner.seq;
        if self.buffer_cap > 0 {
            if inner.buffer.len() >= self.buffer_cap {
                inner.buffer.pop_front();
            }
            inner.buffer.push_back(Buffered {
                stream,
                seq,
                data: data.to_string(),
                waiting: false,
            });
        }
        format!("{stream}-{seq}")
    }

    /// Delivers an already recorded event to the newest live stream. A full queue drops that
    /// stream (slow reader) and tries the next one. `false` when no stream took it.
    pub(crate) fn deliver(&self, id: &str, data: &str) -> bool {
        self.deliver_in(&mut lock(&self.inner), id, data)
    }

    fn deliver_in(&self, inner: &mut Inner, id: &str, data: &str) -> bool {
        while let Some(live) = inner.live.last() {
            let frame = Frame {
                id: id.to_string(),
                data: data.to_string(),
            };
            match live.tx.try_send(frame) {
                Ok(()) => return true,
                Err(TrySendError::Full(_)) => {
                    log::warn!("SSE reader too slow; dropping its stream");
                    self.dropped.fetch_add(1, Ordering::Relaxed);
                    inner.live.pop();
                }
                Err(TrySendError::Disconnected(_)) => {
                    inner.live.pop();
                }
            }
        }
        false
    }

    /// Attaches a live stream; `last_event_id` selects the events to replay.
    pub(crate) fn attach(&self, last_event_id: Option<&str>) -> Attached {
        let mut inner = lock(&self.inner);
        let (tx, rx) = bounded(self.queue_cap);
        let conn = inner.next_conn;
        inner.next_conn += 1;
        inner.live.push(Live { conn, tx });
        // With Last-Event-ID the named stream's events after it; without, the waiting ones.
        let wanted = last_event_id.and_then(parse_event_id);
        let replay = inner
            .buffer
            .iter_mut()
            .filter(|b| match wanted {
                Some((stream, after)) => b.stream == stream && b.seq > after,
                None => b.waiting,
            })
            .map(|b| {
                b.waiting = false;
                Frame {
                    id: format!("{}-{}", b.stream, b.seq),
                    data: b.data.clone(),
                }
            })
            .collect();
        Attached {
            conn,
            rx,
            priming_id: format!("0-{}", inner.seq),
            replay,
        }
    }

    /// Detaches live stream `conn` (its thread ended).
    pub(crate) fn detach(&self, conn: u64) {
        lock(&self.inner).live.retain(|l| l.conn != conn);
    }

    /// Ends every live stream (session deleted, server stopping).
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        lock(&self.inner).live.clear();
    }

    /// Whether [`Outbox::close`] was called.
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// Live streams attached now.
    #[cfg(test)]
    pub(crate) fn live_count(&self) -> usize {
        lock(&self.inner).live.len()
    }
}

/// Standalone messages of the session (stream 0).
impl Outlet for Outbox {
    /// Records and delivers under one lock, so a stream attaching meanwhile gets the message
    /// once: live, or as a waiting message when no stream took it.
    fn send(&self, message: &str) -> bool {
        let mut inner = lock(&self.inner);
        let id = self.record_in(&mut inner, 0, message);
        let taken = self.deliver_in(&mut inner, &id, message);
        if !taken {
            if let Some(b) = inner.buffer.back_mut().filter(|b| b.stream == 0) {
                b.waiting = true;
            }
        }
        taken
    }
}

/// `<stream>-<seq>`.
fn parse_event_id(id: &str) -> Option<(u64, u64)> {
    let (s, n) = id.trim().split_once('-')?;
    Some((s.parse().ok()?, n.parse().ok()?))
}

/// The outboxes of all sessions, by session id.
#[derive(Default)]
pub(crate) struct Outboxes {
    map: Mutex<HashMap<String, Arc<Outbox>>>,
}

impl Outboxes {
    /// The outbox of `session`, if it has one.
    pub(crate) fn get(&self, session: &str) -> Option<Arc<Outbox>> {
        lock(&self.map).get(session).cloned()
    }

    /// The outbox of `session`, created (with `make`) if needed; `true` when new.
    pub(crate) fn get_or_create(
        &self,
        session: &str,
        make: impl FnOnce() -> Outbox,
    ) -> (Arc<Outbox>, bool) {
        let mut map = lock(&self.map);
        if let Some(o) = map.get(session) {
            return (o.clone(), false);
        }
        let o = Arc::new(make());
        map.insert(session.to_string(), o.clone());
        (o, true)
    }

    /// Removes and closes the outbox of `session`.
    pub(crate) fn remove(&self, session: &str) {
        if let Some(o) = lock(&self.map).remove(session) {
            o.close();
        }
    }

    /// Removes outboxes whose session `keep` rejects; returns their ids.
    pub(crate) fn prune(&self, keep: impl Fn(&str) -> bool) -> Vec<String> {
        let mut map = lock(&self.map);
        let gone: Vec<String> = map.keys().filter(|k| !keep(k)).cloned().collect();
        for k in &gone {
            if let Some(o) = map.remove(k) {
                o.close();
            }
        }
        gone
    }

    /// Closes every outbox (server stopping).
    pub(crate) fn close_all(&self) {
        for o in lock(&self.map).values() {
            o.close();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_replay_and_slow_readers() {
        let o = Outbox::new(8, 2);
        let (s, priming) = o.open_stream();
        assert_eq!(s, 1);
        assert_eq!(priming, "1-0");
        let id = o.record(1, "a");
        assert_eq!(id, "1-1");
        assert!(!o.send("b"), "no live stream: buffered only");
        let a = o.attach(Some("1-0"));
        assert_eq!(a.replay.len(), 1);
        assert_eq!(a.replay[0].data, "a");
        assert_eq!(a.priming_id, "0-2");
        let b = o.attach(Some("0-0"));
        assert_eq!(b.replay[0].data, "b");
        assert!(
            o.attach(None).replay.is_empty(),
            "b was replayed once already"
        );
        // Newest stream gets the message; fill its queue (2) and it is dropped.
        assert!(o.send("c"));
        assert!(o.send("d"));
        assert!(o.send("e"), "third goes to the older stream");
        assert_eq!(o.dropped.load(Ordering::Relaxed), 1);
        assert_eq!(b.rx.try_iter().count(), 2);
        assert_eq!(a.rx.try_recv().unwrap().data, "e");
        assert_eq!(o.live_count(), 1);
    }

    #[test]
    fn a_message_sent_before_any_stream_reaches_the_first_stream_once() {
        let o = Outbox::new(8, 4);
        assert!(!o.send("updated"), "no live stream yet");
        let first = o.attach(None);
        let got: Vec<&str> = first.replay.iter().map(|f| f.data.as_str()).collect();
        assert_eq!(got, ["updated"]);
        assert_eq!(first.replay[0].id, "0-1");
        assert!(o.attach(None).replay.is_empty(), "taken once");
        assert!(o.send("next"));
        assert!(
            o.attach(None).replay.is_empty(),
            "delivered live, not waiting"
        );
    }

    #[test]
    fn pool_bounds() {
        let p = StreamPool::new(1);
        let a = p.acquire();
        assert!(a.is_some());
        assert!(p.acquire().is_none());
        drop(a);
        assert!(p.acquire().is_some());
    }
}
