//! The `io.modelcontextprotocol/tasks` extension of MCP 2026-07-28 (SEP-2663; spec:
//! `modelcontextprotocol/ext-tasks`, `specification/draft/tasks.md`): a `tools/call` answered
//! with a task handle (`CreateTaskResult`, `resultType: "task"`) instead of its result, which
//! the client follows with `tasks/get`, answers input requests of with `tasks/update`, and
//! stops with `tasks/cancel`; `notifications/tasks` on a `subscriptions/listen` stream that
//! named the task in `notifications.taskIds`.
//!
//! Who decides: the server, per call. A tool says whether it may run as a task
//! ([`TaskSupport`], [`Handler::task_support`](super::Handler::task_support)); a call becomes a
//! task only when the request's `_meta` client capabilities name the extension
//! ([`declared`]). A `required` tool called without it is -32021 naming the extension
//! ([`missing_extension`]); so are `tasks/get`, `tasks/update` and `tasks/cancel`.
//! `tasks/result` and `tasks/list` (the 2025-11-25 core tasks) do not exist: -32601.
//!
//! Bounds ([`TaskLimits`]), fair shares per caller under house-wide caps, so that one caller
//! can use up only its own share: at most `max_running_per_caller` task threads of one caller
//! and `max_running` in all at once; at most `max_per_caller` tasks of one caller kept and
//! `max_tasks` in all. A kept task is never dropped to make room (not even for its own
//! caller): a finished task's result stays readable by its owner for the whole of its stated
//! `ttlMs`, and a call over a cap is refused (-32600 "Too many tasks", saying which cap and
//! when the oldest kept task expires). Every task is kept at most `ttl` from its creation (one
//! still running then is cancelled and reported `failed`), every wait for client input bounded
//! by the tool's own timeout and the task's time to live. Task ids are 128 random bits, and a
//! task is bound to the caller that created it ([`owner_of`]: the API key or OAuth grant,
//! else the client's address): for anybody else it does not exist (-32602, the same answer as
//! an unknown id).
//!
//! A running task talks to the client through its [`TaskPeer`]: progress becomes the task's
//! `statusMessage`; a request to the client (elicitation) parks the task in
//! `input_required` with the request under a fresh key of `inputRequests`, until
//! `tasks/update` delivers its answer, the task is cancelled or the wait's deadline passes.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use serde_json::{json, Map, Value};

use super::handler::{Caller, Peer, PeerHandle, RpcError};
use super::jsonrpc::{Id, Response};
use super::peer::Hub;

/// The extension's identifier (capabilities `extensions` key).
pub const EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// The notification carrying a task's full state to listen streams that asked for it.
pub const STATUS_NOTIFICATION: &str = "notifications/tasks";

pub use super::handler::TaskSupport;

/// Bounds of the task store (see the module doc).
#[derive(Debug, Clone, PartialEq)]
pub struct TaskLimits {
    /// Tasks kept at once, running or finished, of all callers (default 64).
    pub max_tasks: usize,
    /// Tasks kept per caller (default 16).
    pub max_per_caller: usize,
    /// Task threads running at once, of all callers (default 8).
    pub max_running: usize,
    /// Task threads of one caller running at once (default 4: one caller leaves the other
    /// half of [`TaskLimits::max_running`] to the others).
    pub max_running_per_caller: usize,
    /// How long a task is kept from its creation (`ttlMs`; default 10 min).
    pub ttl: Duration,
    /// The polling interval suggested to clients (`pollIntervalMs`; default 1 s).
    pub poll_interval: Duration,
    /// How long task creation waits for the tool to show whether it asks first (see
    /// [`TaskStore::spawn`]; default 3 s).
    pub first_step_wait: Duration,
}

impl Default for TaskLimits {
    fn default() -> Self {
        Self {
            max_tasks: 64,
            max_per_caller: 16,
            max_running: 8,
            max_running_per_caller: 4,
            ttl: Duration::from_secs(600),
            poll_interval: Duration::from_secs(1),
            first_step_wait: Duration::from_secs(3),
        }
    }
}

/// Whether client capabilities (`_meta` `io.modelcontextprotocol/clientCapabilities`) declare
/// the extension under `extensions`.
pub fn declared(client_capabilities: &Value) -> bool {
    client_capabilities
        .get("extensions")
        .and_then(|e| e.get(EXTENSION))
        .is_some()
}

/// The methods this extension adds.
pub fn is_task_method(method: &str) -> bool {
    matches!(method, "tasks/get" | "tasks/update" | "tasks/cancel")
}

/// `MissingRequiredClientCapabilityError` (-32021) naming the extension:
/// `data.requiredCapabilities = {"extensions": {"io.modelcontextprotocol/tasks": {}}}`.
pub fn missing_extension(id: Option<Id>, why: &str) -> Response {
    Response::error_with_data(
        id,
        RpcError {
            code: super::modern::MISSING_CLIENT_CAPABILITY,
            message: "Missing required client capability".into(),
            details: Some(format!(
                "{why}; declare the extension {EXTENSION} under `extensions` in `_meta.{}`",
                super::modern::META_CLIENT_CAPABILITIES
            )),
        },
        json!({ "requiredCapabilities": { "extensions": { EXTENSION: {} } } }),
    )
}

/// The owner a task is bound to: the identity a multi round-trip `requestState` is bound to
/// ([`super::input::caller_identity`]: the API key, else the transport and the client's
/// address).
pub fn owner_of(transport: &str, caller: Option<&Caller>) -> String {
    super::input::caller_identity(transport, caller)
}

/// How a [`TaskStore::spawn`] ended for the request that asked for it.
#[derive(Debug)]
pub enum Spawned {
    /// The task exists: its `CreateTaskResult`.
    Task(Value),
    /// Before doing anything else the tool asked for input by a multi round-trip request
    /// ([`super::input::Round::ask`]): its marker error, to be answered `input_required`; no
    /// task was kept.
    Asked(RpcError),
}

#[derive(Debug, Clone)]
enum Status {
    Working,
    InputRequired,
    Completed(Value),
    Failed(Value),
    Cancelled,
}

impl Status {
    fn name(&self) -> &'static str {
        match self {
            Status::Working => "working",
            Status::InputRequired => "input_required",
            Status::Completed(_) => "completed",
            Status::Failed(_) => "failed",
            Status::Cancelled => "cancelled",
        }
    }

    fn terminal(&self) -> bool {
        matches!(
            self,
            Status::Completed(_) | Status::Failed(_) | Status::Cancelled
        )
    }
}

struct Entry {
    owner: String,
    status: Status,
    message: Option<String>,
    created: SystemTime,
    born: Instant,
    updated: SystemTime,
    cancel: Arc<AtomicBool>,
    /// Outstanding requests to the client, by key (`{method, params}`).
    inputs: BTreeMap<String, Value>,
    /// Answers delivered by `tasks/update`, until the waiting request takes them.
    answers: HashMap<String, Value>,
    next_key: u64,
    /// Until the task is committed: where its first step is told (see [`TaskStore::spawn`]).
    first: Option<crossbeam_channel::Sender<Option<RpcError>>>,
}

/// The task threads running, in all and by owner.
#[derive(Default)]
struct Slots {
    total: usize,
    by_owner: HashMap<String, usize>,
}

/// The tasks of one server (`Send + Sync`; shared as an `Arc` with the task threads).
pub struct TaskStore {
    tasks: Mutex<HashMap<String, Entry>>,
    changed: Condvar,
    running: Mutex<Slots>,
    limits: TaskLimits,
    hub: Arc<Hub>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn iso(t: SystemTime) -> String {
    humantime::format_rfc3339_millis(t).to_string()
}

fn not_found(id: &str) -> RpcError {
    RpcError::invalid_params("Invalid params: task not found")
        .with_details(format!("no task {id:?} (unknown, expired, or not yours)"))
}

fn task_id_param(params: Option<&Map<String, Value>>) -> Result<String, RpcError> {
    match params.and_then(|p| p.get("taskId")) {
        Some(Value::String(s)) if !s.is_empty() && s.len() <= 128 => Ok(s.clone()),
        Some(_) => Err(RpcError::invalid_params(
            "Invalid params: `taskId` must be a non-empty string of at most 128 characters",
        )),
        None => Err(RpcError::invalid_params(
            "Invalid params: missing required parameter `taskId`",
        )),
    }
}

impl TaskStore {
    /// An empty store; status notifications go to `hub`'s listen streams.
    pub fn new(limits: TaskLimits, hub: Arc<Hub>) -> Self {
        Self {
            tasks: Mutex::new(HashMap::new()),
            changed: Condvar::new(),
            running: Mutex::new(Slots::default()),
            limits,
            hub,
        }
    }

    /// The task's state as `tasks/get` and `notifications/tasks` carry it (`DetailedTask`).
    fn detailed(&self, id: &str, e: &Entry) -> Value {
        let mut v = self.base(id, e);
        match &e.status {
            Status::Completed(r) => v["result"] = r.clone(),
            Status::Failed(err) => v["error"] = err.clone(),
            Status::InputRequired => v["inputRequests"] = json!(e.inputs),
            _ => {}
        }
        v
    }

    /// The fields every task shape has (`Task`).
    fn base(&self, id: &str, e: &Entry) -> Value {
        let mut v = json!({
            "taskId": id,
            "status": e.status.name(),
            "createdAt": iso(e.created),
            "lastUpdatedAt": iso(e.updated),
            "ttlMs": self.limits.ttl.as_millis() as u64,
            "pollIntervalMs": self.limits.poll_interval.as_millis().max(1) as u64,
        });
        if let Some(m) = &e.message {
            v["statusMessage"] = json!(m);
        }
        v
    }

    /// Sends the task's state to the listen streams following it.
    fn announce(&self, state: Value) {
        let Some(id) = state
            .get("taskId")
            .and_then(Value::as_str)
            .map(str::to_string)
        else {
            return;
        };
        self.hub
            .send_to_listeners(STATUS_NOTIFICATION, &state, |f| f.task_ids.contains(&id));
    }

    /// Forgets tasks past their time to live; a task still running then is cancelled and
    /// reported `failed` first (and forgotten at a later sweep). Returns the states to
    /// announce.
    fn sweep(&self, tasks: &mut HashMap<String, Entry>) -> Vec<Value> {
        let ttl = self.limits.ttl;
        let mut announce = Vec::new();
        tasks.retain(|_, e| !(e.status.terminal() && e.born.elapsed() >= ttl));
        for (id, e) in tasks.iter_mut() {
            if !e.status.terminal() && e.born.elapsed() >= ttl {
                e.cancel.store(true, Ordering::SeqCst);
                e.status = Status::Failed(json!({
                    "code": RpcError::INTERNAL_ERROR,
                    "message": "the task exceeded its time to live",
                }));
                e.message = Some(format!("stopped after {} s", ttl.as_secs()));
                e.updated = SystemTime::now();
                e.inputs.clear();
                announce.push(self.detailed(id, e));
            }
        }
        announce
    }

    /// Whether one more task of `owner` may be kept: its share ([`TaskLimits::max_per_caller`])
    /// and the house's ([`TaskLimits::max_tasks`]) both have room. Nothing kept is dropped for
    /// it (a finished task stays readable for its time to live); `Err` says which cap is
    /// reached and when the oldest task under it expires.
    fn room_for(&self, tasks: &HashMap<String, Entry>, owner: &str) -> Result<(), RpcError> {
        let full = |detail: String| RpcError {
            code: RpcError::INVALID_REQUEST,
            message: "Too many tasks".into(),
            details: Some(detail),
        };
        let ttl = self.limits.ttl;
        let frees_in = |mine: bool| {
            tasks
                .values()
                .filter(|e| !mine || e.owner == owner)
                .map(|e| ttl.saturating_sub(e.born.elapsed()))
                .min()
                .map_or(0, |d| d.as_secs_f64().ceil() as u64)
        };
        let mine = tasks.values().filter(|e| e.owner == owner).count();
        if mine >= self.limits.max_per_caller {
            return Err(full(format!(
                "you have {mine} tasks kept (at most {} per caller; each is kept for its ttlMs \
                 so its result stays readable); the oldest expires in {} s",
                self.limits.max_per_caller,
                frees_in(true)
            )));
        }
        if tasks.len() >= self.limits.max_tasks {
            return Err(full(format!(
                "the server keeps {} tasks (its limit); retry in {} s",
                tasks.len(),
                frees_in(false)
            )));
        }
        Ok(())
    }

    /// Takes a task thread slot for `owner` within its share and the house's; `Err` names the
    /// cap that is reached.
    fn take_slot(&self, owner: &str) -> Result<(), RpcError> {
        let mut slots = lock(&self.running);
        let mine = slots.by_owner.get(owner).copied().unwrap_or(0);
        let refused = if mine >= self.limits.max_running_per_caller {
            Some(format!(
                "{mine} of your tasks are running (at most {} per caller); wait for one to \
                 finish or cancel one",
                self.limits.max_running_per_caller
            ))
        } else if slots.total >= self.limits.max_running {
            Some(format!(
                "{} tasks are running (the server's limit); retry later",
                slots.total
            ))
        } else {
            None
        };
        if let Some(detail) = refused {
            return Err(RpcError {
                code: RpcError::INVALID_REQUEST,
                message: "Too many tasks".into(),
                details: Some(detail),
            });
        }
        slots.total += 1;
        *slots.by_owner.entry(owner.to_string()).or_default() += 1;
        Ok(())
    }

    /// Gives `owner`'s task thread slot back.
    fn free_slot(&self, owner: &str) {
        let mut slots = lock(&self.running);
        slots.total = slots.total.saturating_sub(1);
        if let Some(n) = slots.by_owner.get_mut(owner) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                slots.by_owner.remove(owner);
            }
        }
    }

    /// Task threads running now, of all callers.
    pub fn running(&self) -> usize {
        lock(&self.running).total
    }

    /// Creates a task of `owner` and runs `job` on a thread of its own; the task ends with
    /// the job's outcome (a result: `completed`; a JSON-RPC error or a panic: `failed`).
    /// `job` gets the task's [`PeerHandle`] (progress, input requests, cancellation).
    ///
    /// Multi round-trip requests are resolved before the task is answered (the extension's
    /// SHOULD): the call waits until the job ends, reports progress or asks through the task,
    /// or [`TaskLimits::first_step_wait`] passes. A job that ended with the marker error of
    /// [`super::input::Round::ask`] by then is [`Spawned::Asked`] and its task forgotten;
    /// otherwise the task is committed and [`Spawned::Task`] carries the `CreateTaskResult`
    /// (`resultType: "task"`; `tasks/get` finds the task from then on). A later ask fails
    /// the task.
    pub fn spawn(
        self: &Arc<Self>,
        owner: &str,
        job: impl FnOnce(PeerHandle) -> Result<Value, RpcError> + Send + 'static,
    ) -> Result<Spawned, RpcError> {
        self.take_slot(owner)?;
        let id = match new_task_id() {
            Ok(id) => id,
            Err(e) => {
                self.free_slot(owner);
                return Err(e);
            }
        };
        let (first_tx, first_rx) = crossbeam_channel::bounded(1);
        let announce = {
            let mut tasks = lock(&self.tasks);
            let announce = self.sweep(&mut tasks);
            if let Err(e) = self.room_for(&tasks, owner) {
                self.free_slot(owner);
                drop(tasks);
                announce.into_iter().for_each(|s| self.announce(s));
                return Err(e);
            }
            let now = SystemTime::now();
            let entry = Entry {
                owner: owner.to_string(),
                status: Status::Working,
                message: None,
                created: now,
                born: Instant::now(),
                updated: now,
                cancel: Arc::new(AtomicBool::new(false)),
                inputs: BTreeMap::new(),
                answers: HashMap::new(),
                next_key: 0,
                first: Some(first_tx),
            };
            tasks.insert(id.clone(), entry);
            announce
        };
        announce.into_iter().for_each(|s| self.announce(s));
        let peer = PeerHandle(Arc::new(TaskPeer {
            store: self.clone(),
            id: id.clone(),
        }));
        let store = self.clone();
        let task = id.clone();
        let slot_owner = owner.to_string();
        let spawned = std::thread::Builder::new()
            .name("mcp-task".into())
            .spawn(move || {
                let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job(peer)))
                    .unwrap_or_else(|_| {
                        log::error!("task {task} panicked");
                        Err(RpcError::internal("Internal error")
                            .with_details("the task's handler failed"))
                    });
                store.finish(&task, outcome);
                store.free_slot(&slot_owner);
            });
        if let Err(e) = spawned {
            self.free_slot(owner);
            self.finish(
                &id,
                Err(RpcError::internal("Internal error")
                    .with_details(format!("cannot start the task: {e}"))),
            );
        }
        let first = first_rx.recv_timeout(self.limits.first_step_wait);
        let mut tasks = lock(&self.tasks);
        // Nobody told a step yet: the task is committed now, by the wait's end.
        let committed_now = tasks.get_mut(&id).and_then(|e| e.first.take()).is_some();
        let first = match first {
            Ok(step) => Some(step),
            // A step told after the wait ended, before the lock: still in the channel.
            Err(_) => first_rx.try_recv().ok(),
        };
        if let (false, Some(Some(asked))) = (committed_now, &first) {
            return Ok(Spawned::Asked(asked.clone()));
        }
        match tasks.get(&id) {
            Some(e) => {
                let mut created = self.base(&id, e);
                created["resultType"] = json!("task");
                Ok(Spawned::Task(created))
            }
            None => Err(RpcError::internal("Internal error")
                .with_details("the task ended before it could be answered")),
        }
    }

    /// Commits task `id` (its first step is done, see [`TaskStore::spawn`]).
    fn commit(tasks: &mut HashMap<String, Entry>, id: &str) {
        if let Some(tx) = tasks.get_mut(id).and_then(|e| e.first.take()) {
            let _ = tx.try_send(None);
        }
    }

    /// Ends task `id` with `outcome`, unless it already ended (a cancelled task stays so).
    fn finish(&self, id: &str, outcome: Result<Value, RpcError>) {
        let state = {
            let mut tasks = lock(&self.tasks);
            let Some(e) = tasks.get_mut(id) else { return };
            if let Some(tx) = e.first.take() {
                // Not committed yet: an ask ends here, the request answers input_required.
                if let Err(err) = &outcome {
                    if super::input::is_ask(err) {
                        let _ = tx.try_send(Some(err.clone()));
                        tasks.remove(id);
                        return;
                    }
                }
                let _ = tx.try_send(None);
            }
            if e.status.terminal() {
                return;
            }
            e.status = match outcome {
                Err(err) if super::input::is_ask(&err) => Status::Failed(json!({
                    "code": RpcError::INTERNAL_ERROR,
                    "message": "the tool asked for input after its task had started",
                })),
                Ok(result) => Status::Completed(result),
                Err(err) => {
                    e.message = Some(err.details.clone().unwrap_or_else(|| err.message.clone()));
                    let mut error = json!({"code": err.code, "message": err.message});
                    if let Some(d) = err.details {
                        error["data"] = json!({ "details": d });
                    }
                    Status::Failed(error)
                }
            };
            e.inputs.clear();
            e.updated = SystemTime::now();
            self.detailed(id, e)
        };
        self.changed.notify_all();
        self.announce(state);
    }

    /// `tasks/get`, `tasks/update` or `tasks/cancel` of `owner` (see [`is_task_method`]):
    /// the result object (without `resultType`, which the caller adds), or -32602 for a
    /// missing or malformed `taskId` and a task that is unknown, expired or another caller's.
    pub fn handle(
        &self,
        method: &str,
        params: Option<&Map<String, Value>>,
        owner: &str,
    ) -> Result<Value, RpcError> {
        let id = task_id_param(params)?;
        let responses = if method == "tasks/update" {
            match params.and_then(|p| p.get("inputResponses")) {
                Some(Value::Object(r)) => Some(r.clone()),
                _ => {
                    return Err(RpcError::invalid_params(
                        "Invalid params: `inputResponses` must be an object keyed by the \
                         task's `inputRequests` keys",
                    ))
                }
            }
        } else {
            None
        };
        let (answer, announce) = {
            let mut tasks = lock(&self.tasks);
            let mut announce = self.sweep(&mut tasks);
            let e = match tasks.get_mut(&id) {
                Some(e) if e.owner == owner => e,
                _ => return Err(not_found(&id)),
            };
            let answer = match method {
                "tasks/get" => self.detailed(&id, e),
                "tasks/cancel" => {
                    if !e.status.terminal() {
                        e.cancel.store(true, Ordering::SeqCst);
                        e.status = Status::Cancelled;
                        e.message = Some("cancelled by the client".into());
                        e.inputs.clear();
                        e.updated = SystemTime::now();
                        announce.push(self.detailed(&id, e));
                    }
                    json!({})
                }
                _ => {
                    // tasks/update: answers for outstanding keys only; others are ignored.
                    let mut took = false;
                    for (key, value) in responses.unwrap_or_default() {
                        if e.inputs.remove(&key).is_some() {
                            e.answers.insert(key, value);
                            took = true;
                        }
                    }
                    if took {
                        if e.inputs.is_empty() && matches!(e.status, Status::InputRequired) {
                            e.status = Status::Working;
                        }
                        e.updated = SystemTime::now();
                        announce.push(self.detailed(&id, e));
                    }
                    json!({})
                }
            };
            (answer, announce)
        };
        self.changed.notify_all();
        announce.into_iter().for_each(|s| self.announce(s));
        Ok(answer)
    }

    /// Of `ids`, those that name a live task of `owner` (what a listen stream may follow).
    pub fn owned(&self, owner: &str, ids: impl IntoIterator<Item = String>) -> BTreeSet<String> {
        let tasks = lock(&self.tasks);
        ids.into_iter()
            .filter(|id| tasks.get(id).is_some_and(|e| e.owner == owner))
            .collect()
    }

    /// The state of task `id` as `notifications/tasks` carries it, if it is kept.
    pub fn state_of(&self, id: &str) -> Option<Value> {
        let tasks = lock(&self.tasks);
        tasks.get(id).map(|e| self.detailed(id, e))
    }

    /// How many tasks are kept (for tests and metrics).
    pub fn len(&self) -> usize {
        lock(&self.tasks).len()
    }

    /// Whether no task is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Progress of task `id`: its `statusMessage` (and the task is committed).
    fn set_message(&self, id: &str, message: String) {
        let state = {
            let mut tasks = lock(&self.tasks);
            Self::commit(&mut tasks, id);
            let Some(e) = tasks.get_mut(id) else { return };
            if e.status.terminal() {
                return;
            }
            e.message = Some(message);
            e.updated = SystemTime::now();
            self.detailed(id, e)
        };
        self.announce(state);
    }

    /// Asks the client through the task: parks `method`/`params` under a fresh key of
    /// `inputRequests` (status `input_required`) and waits until `tasks/update` answers it,
    /// the task is cancelled or ends, or `timeout` (and at most the task's time to live)
    /// passes.
    fn ask(
        &self,
        id: &str,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, RpcError> {
        let deadline = Instant::now() + timeout;
        let mut tasks = lock(&self.tasks);
        Self::commit(&mut tasks, id);
        let key = {
            let Some(e) = tasks.get_mut(id) else {
                return Err(RpcError::internal("the task is gone"));
            };
            if e.status.terminal() {
                return Err(RpcError::internal("the task has ended"));
            }
            e.next_key += 1;
            let key = format!("input-{}", e.next_key);
            e.inputs
                .insert(key.clone(), json!({"method": method, "params": params}));
            e.status = Status::InputRequired;
            e.updated = SystemTime::now();
            let state = self.detailed(id, e);
            drop(tasks);
            self.announce(state);
            tasks = lock(&self.tasks);
            key
        };
        let ttl = self.limits.ttl;
        loop {
            let Some(e) = tasks.get_mut(id) else {
                return Err(RpcError::internal("the task is gone"));
            };
            if let Some(answer) = e.answers.remove(&key) {
                return Ok(answer);
            }
            let now = Instant::now();
            let end = deadline.min(e.born + ttl);
            if e.status.terminal() || now >= end {
                let timed_out = !e.status.terminal();
                if e.inputs.remove(&key).is_some()
                    && e.inputs.is_empty()
                    && matches!(e.status, Status::InputRequired)
                {
                    e.status = Status::Working;
                    e.updated = SystemTime::now();
                }
                return Err(if timed_out {
                    RpcError::internal(format!("no answer to {method}"))
                        .with_details(format!("the client did not answer within {timeout:?}"))
                } else {
                    RpcError::internal(format!("no answer to {method}"))
                        .with_details("the task ended")
                });
            }
            tasks = self
                .changed
                .wait_timeout(tasks, end - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    fn cancelled(&self, id: &str) -> bool {
        lock(&self.tasks)
            .get(id)
            .is_none_or(|e| e.cancel.load(Ordering::SeqCst))
    }
}

/// A fresh task id: 128 random bits, hex.
fn new_task_id() -> Result<String, RpcError> {
    let mut b = [0u8; 16];
    getrandom::fill(&mut b).map_err(|e| {
        RpcError::internal("Internal error")
            .with_details(format!("no randomness for a task id: {e}"))
    })?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

/// The way back to the client of a running task (see the module doc).
pub struct TaskPeer {
    store: Arc<TaskStore>,
    id: String,
}

impl Peer for TaskPeer {
    /// `notifications/progress` becomes the task's `statusMessage` (its `message`, else
    /// "progress P of T"); other notifications are not carried for tasks.
    fn notify(&self, method: &str, params: Value) {
        if method != "notifications/progress" {
            return;
        }
        let message = match params.get("message").and_then(Value::as_str) {
            Some(m) => m.to_string(),
            None => match (params.get("progress"), params.get("total")) {
                (Some(p), Some(t)) => format!("progress {p} of {t}"),
                (Some(p), None) => format!("progress {p}"),
                _ => return,
            },
        };
        self.store.set_message(&self.id, message);
    }

    fn request(&self, method: &str, params: Value, timeout: Duration) -> Result<Value, RpcError> {
        self.store.ask(&self.id, method, params, timeout)
    }

    fn cancelled(&self) -> bool {
        self.store.cancelled(&self.id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(limits: TaskLimits) -> Arc<TaskStore> {
        Arc::new(TaskStore::new(
            TaskLimits {
                first_step_wait: Duration::from_millis(1),
                ..limits
            },
            Arc::new(Hub::default()),
        ))
    }

    fn task(s: Result<Spawned, RpcError>) -> Value {
        match s {
            Ok(Spawned::Task(v)) => v,
            other => panic!("not a task: {other:?}"),
        }
    }

    fn params(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    fn wait_status(s: &TaskStore, id: &str, owner: &str, want: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let t = s
                .handle("tasks/get", Some(&params(json!({"taskId": id}))), owner)
                .unwrap();
            if t["status"] == want {
                return t;
            }
            assert!(Instant::now() < deadline, "task never became {want}: {t}");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn lifecycle_owner_binding_and_input() {
        let s = store(TaskLimits::default());
        let created = task(s.spawn("key:a", |peer| {
            let answer = peer.0.request(
                "elicitation/create",
                json!({"message": "ok?"}),
                Duration::from_secs(10),
            )?;
            Ok(json!({"content": [{"type": "text", "text": answer.to_string()}]}))
        }));
        assert_eq!(created["resultType"], "task");
        let id = created["taskId"].as_str().unwrap().to_string();
        assert_eq!(id.len(), 32);
        // Another caller does not see it.
        let other = s.handle("tasks/get", Some(&params(json!({"taskId": id}))), "key:b");
        assert_eq!(other.unwrap_err().code, -32602);
        let t = wait_status(&s, &id, "key:a", "input_required");
        let key = t["inputRequests"]
            .as_object()
            .unwrap()
            .keys()
            .next()
            .unwrap()
            .clone();
        // Another caller cannot answer or cancel it either.
        let update = params(json!({"taskId": id, "inputResponses": {&key: {"action": "accept"}}}));
        assert!(s.handle("tasks/update", Some(&update), "key:b").is_err());
        assert!(s
            .handle(
                "tasks/cancel",
                Some(&params(json!({"taskId": id}))),
                "key:b"
            )
            .is_err());
        assert_eq!(
            s.handle("tasks/update", Some(&update), "key:a").unwrap(),
            json!({})
        );
        let done = wait_status(&s, &id, "key:a", "completed");
        assert!(done["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("accept"));
    }

    #[test]
    fn a_question_before_the_first_step_is_no_task() {
        let s = Arc::new(TaskStore::new(
            TaskLimits {
                first_step_wait: Duration::from_secs(10),
                ..TaskLimits::default()
            },
            Arc::new(Hub::default()),
        ));
        let round = crate::mcp::input::begin(
            &crate::mcp::input::Sealer::new(),
            "tools/call",
            None,
            "key a",
            &json!({"elicitation": {}}),
            SystemTime::now(),
        )
        .unwrap()
        .unwrap();
        let marker = round.ask(crate::mcp::input::InputRequired::new());
        assert!(crate::mcp::input::is_ask(&marker));
        let m = marker.clone();
        match s.spawn("a", move |_| Err(m)) {
            Ok(Spawned::Asked(e)) => assert_eq!(e, marker),
            other => panic!("not asked: {other:?}"),
        }
        assert!(s.is_empty(), "an asking call keeps no task");
        // A step first (progress), then the question: the task exists and fails.
        let m = marker.clone();
        let created = task(s.spawn("a", move |peer| {
            peer.0.notify(
                "notifications/progress",
                json!({"progress": 1, "message": "started"}),
            );
            Err(m)
        }));
        let id = created["taskId"].as_str().unwrap();
        let t = wait_status(&s, id, "a", "failed");
        assert!(t["error"]["message"]
            .as_str()
            .unwrap()
            .contains("after its task"));
    }

    #[test]
    fn caps_and_ttl() {
        let s = store(TaskLimits {
            max_per_caller: 1,
            ttl: Duration::from_millis(300),
            ..TaskLimits::default()
        });
        let gate = Arc::new(AtomicBool::new(false));
        let g = gate.clone();
        let first = task(s.spawn("a", move |peer| {
            while !g.load(Ordering::SeqCst) && !peer.0.cancelled() {
                std::thread::sleep(Duration::from_millis(5));
            }
            Ok(json!({}))
        }));
        // The one task of `a` still runs: a second is refused, another caller's is not.
        assert_eq!(
            s.spawn("a", |_| Ok(json!({}))).unwrap_err().message,
            "Too many tasks"
        );
        assert!(s.spawn("b", |_| Ok(json!({}))).is_ok());
        let id = first["taskId"].as_str().unwrap();
        // Past its time to live a running task is cancelled and reported failed.
        let t = wait_status(&s, id, "a", "failed");
        assert!(t["error"]["message"]
            .as_str()
            .unwrap()
            .contains("time to live"));
        gate.store(true, Ordering::SeqCst);
        let deadline = Instant::now() + Duration::from_secs(10);
        while s.running() > 0 {
            assert!(Instant::now() < deadline, "task threads never ended");
            std::thread::sleep(Duration::from_millis(5));
        }
        // ...and forgotten later: unknown.
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let r = s.handle("tasks/get", Some(&params(json!({"taskId": id}))), "a");
            if r.is_err() {
                break;
            }
            assert!(Instant::now() < deadline, "expired task still kept");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn each_caller_has_its_share_and_nothing_kept_is_dropped_for_another() {
        let s = store(TaskLimits {
            max_tasks: 4,
            max_per_caller: 3,
            max_running: 3,
            max_running_per_caller: 2,
            ..TaskLimits::default()
        });
        let gate = Arc::new(AtomicBool::new(false));
        let hold = |g: Arc<AtomicBool>| {
            move |peer: PeerHandle| {
                while !g.load(Ordering::SeqCst) && !peer.0.cancelled() {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Ok(json!({"held": true}))
            }
        };
        // `a` fills its share of threads; `b` still runs one.
        task(s.spawn("a", hold(gate.clone())));
        task(s.spawn("a", hold(gate.clone())));
        let e = s.spawn("a", |_| Ok(json!({}))).unwrap_err();
        assert!(e.details.unwrap().contains("per caller"));
        let b = task(s.spawn("b", |_| Ok(json!({"b": 1}))));
        let b = b["taskId"].as_str().unwrap().to_string();
        wait_status(&s, &b, "b", "completed");
        gate.store(true, Ordering::SeqCst);
        let deadline = Instant::now() + Duration::from_secs(10);
        while s.running() > 0 {
            assert!(Instant::now() < deadline, "task threads never ended");
            std::thread::sleep(Duration::from_millis(5));
        }
        // `a` may keep one more (3 of its own), then its share is full: refused, and `b`'s
        // finished result is not dropped to make room, nor are `a`'s own.
        task(s.spawn("a", |_| Ok(json!({}))));
        let e = s.spawn("a", |_| Ok(json!({}))).unwrap_err();
        assert!(e.details.unwrap().contains("kept"), "own share full");
        assert_eq!(s.len(), 4);
        // The house is full: `c` is refused, and nothing of `a` or `b` is gone.
        let e = s.spawn("c", |_| Ok(json!({}))).unwrap_err();
        assert!(e.details.unwrap().contains("server keeps"));
        let t = s
            .handle("tasks/get", Some(&params(json!({"taskId": b}))), "b")
            .unwrap();
        assert_eq!(t["result"], json!({"b": 1}));
    }

    #[test]
    fn cancel_is_sticky_and_bad_params() {
        let s = store(TaskLimits::default());
        let created = task(s.spawn("a", |peer| {
            let deadline = Instant::now() + Duration::from_secs(10);
            while !peer.0.cancelled() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
            Ok(json!({"content": []}))
        }));
        let id = created["taskId"].as_str().unwrap();
        let cancel = params(json!({"taskId": id}));
        assert_eq!(
            s.handle("tasks/cancel", Some(&cancel), "a").unwrap(),
            json!({})
        );
        assert_eq!(
            s.handle("tasks/cancel", Some(&cancel), "a").unwrap(),
            json!({})
        );
        let t = s.handle("tasks/get", Some(&cancel), "a").unwrap();
        assert_eq!(t["status"], "cancelled");
        assert!(t.get("result").is_none());
        for bad in [
            json!({}),
            json!({"taskId": 5}),
            json!({"taskId": "x".repeat(129)}),
        ] {
            assert_eq!(
                s.handle("tasks/get", Some(&params(bad)), "a")
                    .unwrap_err()
                    .code,
                -32602
            );
        }
        let no_responses = params(json!({"taskId": id}));
        assert!(s.handle("tasks/update", Some(&no_responses), "a").is_err());
    }
}
