//! The admin REST API (spec §4.4, issue 6): keys, status, rate limits and the audit log.
//!
//! Every route needs a key with the `admin` permission; the router authenticates and
//! authorizes before calling `handle` (see [`crate::auth::gate`]). Bodies and answers are
//! JSON; errors are the spec §7.1 object `{"error": {code, message, details}}`.
//!
//! | route | does |
//! |---|---|
//! | `GET /admin/api/keys` | `{"keys": [record...]}`: every key, ids [`mask`]ed, with usage |
//! | `POST /admin/api/keys` | body `{role, name?, expires_days?, ip_whitelist?, allowed_devices?, permissions?, rooms?, categories?}`: **201** `{"key": "homekey_...", "record": {...}}`; the full key is shown only here |
//! | `PUT /admin/api/keys/:id` | body with any of `name, active, expires_days (0 = never), ip_whitelist, allowed_devices, permissions, rooms, categories` (lists replace; `[]` clears where allowed): **200** `{"record": {...}}` |
//! | `DELETE /admin/api/keys/:id` | **200** `{"deleted": masked id}` |
//! | `GET /admin/status` | version, uptime, security level, `services.loxone` (link mode, `connected`, `last_error`, `reconnects`, `events_received`), structure file, key counts, MCP sessions, audit entries |
//! | `GET /admin/rate-limits` | limits per role and per client, the window, and the current buckets (key ids masked) |
//! | `GET /admin/api/audit?since=&key_name=&operation=&result=&limit=` | `{"entries": [...]}` newest first (limit 1-1000, default 100) |
//! | `GET /admin/api/visu-password` | wrong visualisation passwords: who typed them, their runs and pauses ([`crate::home::pin::PinGuard::snapshot`]) |
//! | `POST /admin/api/visu-password/lift` | body `{"key_id"}` (a `key_id` of the listing, or `configured`): ends that pause now, its run count stays (the next run pauses longer); **200** `{"lifted": key_id}`, **404** when it is not paused |
//! | `GET /admin/api/stop` | `{"stop": {...}}`: whether commands are stopped, by what, since when, who lifts it ([`crate::home::StopStatus::to_json`]) |
//! | `POST /admin/api/stop` | body `{"stopped": true}` stops every command (the admin page's stop, kept in the data directory across restarts), `{"stopped": false}` lifts it (the stop switch in the house is lifted only there): **200** `{"stop": {...}}` |
//!
//! A device key's `allowed_devices` (control names, `"name (room)"` or UUIDs) are resolved
//! against the current structure file on create and update and stored as control UUIDs; an
//! entry that does not name exactly one control is refused (**400** `INVALID_PARAMETERS`, the
//! message and `details.allowed_devices` list the candidates and their rooms). Records of
//! device keys carry `devices`: each entry as it resolves now (`{entry, uuid, name, room,
//! type}`, or `{entry, error, candidates|suggestions}` for one that grants nothing, e.g. after
//! its control left the structure file).
//!
//! `:id` is the full key or its unique masked form as `keys list` prints it
//! (`homekey_operator_3_a1b2****`), percent-decoded. Validation and the key operations are
//! the `keys` command's ([`crate::auth::keys`]).
//!
//! | condition | status | code |
//! |---|---|---|
//! | body not JSON, unknown field, wrong type, unknown role, bad CIDR, device key without devices, custom key without permissions, bad query | 400 | `INVALID_PARAMETERS` |
//! | no such key / route | 404 | `NOT_FOUND` |
//! | wrong method | 405 (+ `Allow`) | `METHOD_NOT_ALLOWED` |
//! | `:id` matches several keys; deleting or deactivating the key of the request | 409 | `CONFLICT` |
//! | the key store is read-only (`HOME_KEY_BACKEND=env`) | 409 | `READ_ONLY` |
//! | the key store or audit log failed | 500 | `INTERNAL_ERROR` |
//!
//! Every key operation is written to the audit log (transport `admin`, operation
//! `key.create` / `key.update` / `key.delete`, target `name (masked id)`), and so is every
//! stop and lift (operation `stop.set` / `stop.lift`, target `admin stop`).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::Instant;

use serde::Deserialize;
use serde_json::{json, Value};

use super::{api_error, invalid, Answer, Ctx};
use crate::audit::{AuditLog, Entry, Query};
use crate::auth::gate::{Gate, Principal};
use crate::auth::keys::{self, audit_target as target, CreateError, Fields, FindError};
use crate::auth::store::StoreError;
use crate::auth::{mask, ApiKey, Role};
use crate::home::link::LinkMode;
use crate::home::House;

/// What the admin endpoints read and change. One per server, in
/// [`HttpConfig::admin`](super::HttpConfig::admin).
pub struct AdminContext {
    /// The gate; its key store ([`Gate::store`]) is the one the admin API writes.
    pub gate: Arc<Gate>,
    /// The house, for `services.loxone` and the structure file.
    pub house: Arc<House>,
    /// The audit log (`None`: `[audit] enabled = false`).
    pub audit: Option<Arc<AuditLog>>,
    /// When the server started.
    pub started: Instant,
    /// ISO 8601 UTC of the start.
    pub started_at: String,
}

impl AdminContext {
    /// A context started now.
    pub fn new(gate: Arc<Gate>, house: Arc<House>, audit: Option<Arc<AuditLog>>) -> Self {
        Self {
            gate,
            house,
            audit,
            started: Instant::now(),
            started_at: crate::time::now_iso8601(),
        }
    }
}

impl fmt::Debug for AdminContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AdminContext")
            .field("gate", &self.gate)
            .field("audit", &self.audit)
            .field("started_at", &self.started_at)
            .finish_non_exhaustive()
    }
}

fn not_found(message: impl Into<String>, key_id: Option<&str>) -> Answer {
    api_error(
        404,
        "NOT_FOUND",
        message,
        json!({"key_id": key_id.map(mask)}),
    )
}

fn store_error(e: &StoreError, key_id: Option<&str>) -> Answer {
    let details = json!({"key_id": key_id.map(mask)});
    match e {
        StoreError::ReadOnly => api_error(
            409,
            "READ_ONLY",
            "the key store is read-only (HOME_KEY_BACKEND=env); change HOME_API_KEYS instead",
            details,
        ),
        StoreError::NotFound => api_error(404, "NOT_FOUND", "no such key", details),
        StoreError::Exists => api_error(409, "CONFLICT", "a key with this id exists", details),
        e => {
            log::error!("admin API: {e}");
            api_error(500, "INTERNAL_ERROR", e.to_string(), details)
        }
    }
}

/// Handles a request to `/admin...` whose principal the router already authorized (`admin`).
pub(crate) fn handle(
    ctx: &Ctx,
    request: &mut tiny_http::Request,
    url: &str,
    principal: Option<&Principal>,
) -> Answer {
    let Some(admin) = ctx.config.admin.clone() else {
        return not_found("the admin API is not enabled on this server", None);
    };
    let (path, query) = url.split_once('?').unwrap_or((url, ""));
    let method = request.method().clone();
    use tiny_http::Method::{Delete, Get, Post, Put};
    match path {
        "/admin/api/keys" => match method {
            Get => list_keys(&admin),
            Post => match super::json_body(ctx, request) {
                Ok(body) => create_key(&admin, principal, body),
                Err(a) => a,
            },
            _ => super::method_not_allowed("GET, POST"),
        },
        "/admin/status" => match method {
            Get => status(ctx, &admin),
            _ => super::method_not_allowed("GET"),
        },
        "/admin/rate-limits" => match method {
            Get => rate_limits(&admin),
            _ => super::method_not_allowed("GET"),
        },
        "/admin/api/audit" => match method {
            Get => audit(&admin, query),
            _ => super::method_not_allowed("GET"),
        },
        "/admin/api/visu-password" => match method {
            Get => Answer::json(200, &admin.house.pins().snapshot(Instant::now())),
            _ => super::method_not_allowed("GET"),
        },
        "/admin/api/visu-password/lift" => match method {
            Post => match super::json_body(ctx, request) {
                Ok(body) => lift_pause(&admin, principal, body),
                Err(a) => a,
            },
            _ => super::method_not_allowed("POST"),
        },
        "/admin/api/stop" => match method {
            Get => Answer::json(200, &json!({"stop": admin.house.stop_shown().to_json()})),
            Post => match super::json_body(ctx, request) {
                Ok(body) => set_stop(&admin, principal, body),
                Err(a) => a,
            },
            _ => super::method_not_allowed("GET, POST"),
        },
        p => {
            let Some(raw) = p
                .strip_prefix("/admin/api/keys/")
                .filter(|r| !r.is_empty() && !r.contains('/'))
            else {
                return not_found(format!("no route for {p}"), None);
            };
            let Ok(id) = percent_encoding::percent_decode_str(raw).decode_utf8() else {
                return invalid("the key id is not valid UTF-8");
            };
            let id = id.into_owned();
            match method {
                Put => match super::json_body(ctx, request) {
                    Ok(body) => update_key(&admin, principal, &id, body),
                    Err(a) => a,
                },
                Delete => delete_key(&admin, principal, &id),
                _ => super::method_not_allowed("PUT, DELETE"),
            }
        }
    }
}

/// A key as the admin API shows it: every field, the id masked, never the secret.
pub fn key_view(k: &ApiKey) -> Value {
    json!({
        "id": mask(&k.id),
        "name": k.name,
        "role": k.role,
        "created_by": k.created_by,
        "created_at": k.created_at,
        "active": k.active,
        "expires_at": k.expires_at,
        "ip_whitelist": k.ip_whitelist,
        "allowed_devices": k.allowed_devices,
        "permissions": k.permissions,
        "rooms": k.rooms,
        "categories": k.categories,
        "model_confirms": k.model_confirms,
        "open_doors": k.open_doors,
        "cameras": k.cameras,
        "profile": k.profile,
        "usage": k.usage,
    })
}

/// [`key_view`] plus, for a device key, `devices`: each allow-list entry resolved against the
/// structure file the server has now (`{entry, uuid, name, room, type}`, or `{entry, error,
/// candidates|suggestions}` for an entry that grants nothing).
fn key_view_in(admin: &AdminContext, k: &ApiKey) -> Value {
    let mut v = key_view(k);
    if k.role == Role::Device {
        let home = admin.house.home();
        let grants = crate::home::scope::resolve_devices(&home, &k.allowed_devices);
        v["devices"] = json!(grants.iter().map(|g| g.to_json()).collect::<Vec<_>>());
    }
    v
}

/// A device allow-list from a request resolved to control UUIDs, or the 400 answer naming
/// each entry that does not name exactly one control (with candidates and their rooms).
fn resolve_devices(admin: &AdminContext, entries: Vec<String>) -> Result<Vec<String>, Answer> {
    if entries.is_empty() {
        return Ok(entries);
    }
    keys::resolve_allowed_devices(&admin.house.home(), &entries).map_err(|(message, records)| {
        api_error(
            400,
            "INVALID_PARAMETERS",
            message,
            json!({ "allowed_devices": records }),
        )
    })
}

fn list_keys(admin: &AdminContext) -> Answer {
    match admin.gate.store().list() {
        Ok(keys) => Answer::json(
            200,
            &json!({"keys": keys.iter().map(|k| key_view_in(admin, k)).collect::<Vec<_>>()}),
        ),
        Err(e) => store_error(&e, None),
    }
}

/// `POST /admin/api/keys`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateBody {
    role: String,
    name: Option<String>,
    expires_days: Option<u32>,
    #[serde(default)]
    ip_whitelist: Vec<String>,
    #[serde(default)]
    allowed_devices: Vec<String>,
    #[serde(default)]
    permissions: Vec<String>,
    #[serde(default)]
    rooms: Vec<String>,
    #[serde(default)]
    categories: Vec<String>,
    model_confirms: Option<bool>,
    open_doors: Option<bool>,
    cameras: Option<bool>,
    /// `full` or `lean` (issue 33); absent: the server's default (on update: unchanged).
    profile: Option<crate::home::Profile>,
}

/// `PUT /admin/api/keys/:id`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct UpdateBody {
    name: Option<String>,
    active: Option<bool>,
    expires_days: Option<u32>,
    ip_whitelist: Option<Vec<String>>,
    allowed_devices: Option<Vec<String>>,
    permissions: Option<Vec<String>>,
    rooms: Option<Vec<String>>,
    categories: Option<Vec<String>>,
    model_confirms: Option<bool>,
    open_doors: Option<bool>,
    cameras: Option<bool>,
    /// `full` or `lean` (issue 33); absent: the server's default (on update: unchanged).
    profile: Option<crate::home::Profile>,
}

fn record(
    admin: &AdminContext,
    principal: Option<&Principal>,
    op: &str,
    target: &str,
    result: &str,
    started: Instant,
) {
    if let Some(log) = &admin.audit {
        let caller = principal.map(Principal::caller);
        log.record(Entry::new(
            caller.as_ref(),
            "admin",
            op,
            target,
            result,
            started.elapsed(),
        ));
    }
}

/// The code of an error answer, for the audit log.
fn code_of(a: &Answer) -> String {
    serde_json::from_slice::<Value>(&a.body)
        .ok()
        .and_then(|v| v["error"]["code"].as_str().map(str::to_string))
        .unwrap_or_else(|| "ERROR".into())
}

fn create_key(admin: &AdminContext, principal: Option<&Principal>, body: Value) -> Answer {
    let started = Instant::now();
    let body: CreateBody = match serde_json::from_value(body) {
        Ok(b) => b,
        Err(e) => return invalid(format!("invalid body: {e}")),
    };
    let role = match keys::parse_role(&body.role) {
        Ok(r) => r,
        Err(m) => return invalid(m),
    };
    let devices = if role == Role::Device {
        match resolve_devices(admin, body.allowed_devices) {
            Ok(d) => d,
            Err(a) => return a,
        }
    } else {
        body.allowed_devices
    };
    let fields = Fields {
        name: body.name,
        expires_days: body.expires_days,
        ips: body.ip_whitelist,
        devices,
        permissions: body.permissions,
        rooms: body.rooms,
        categories: body.categories,
        model_confirms: body.model_confirms,
        open_doors: body.open_doors,
        cameras: body.cameras,
        profile: body.profile,
    };
    if let Err(m) = keys::check_new(role, &fields) {
        return invalid(m);
    }
    let created_by = principal
        .and_then(|p| p.key.as_ref())
        .map_or_else(|| "anonymous".to_string(), |k| k.name.clone());
    match keys::create_key(admin.gate.store().as_ref(), role, &fields, &created_by) {
        Ok(key) => {
            record(admin, principal, "key.create", &target(&key), "ok", started);
            log::info!("admin API: created {} key {}", key.role, mask(&key.id));
            Answer::json(
                201,
                &json!({"key": key.id, "record": key_view_in(admin, &key)}),
            )
        }
        Err(e) => {
            let a = match e {
                CreateError::Store(StoreError::ReadOnly) => {
                    store_error(&StoreError::ReadOnly, None)
                }
                e => api_error(500, "INTERNAL_ERROR", e.to_string(), json!({})),
            };
            let name = fields.name.as_deref().unwrap_or("(new key)");
            record(admin, principal, "key.create", name, &code_of(&a), started);
            a
        }
    }
}

/// `POST /admin/api/visu-password/lift`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LiftBody {
    key_id: String,
}

/// Ends the pause of one typist (or of the configured password); recorded in the audit log
/// (`visu_password.lift`).
fn lift_pause(admin: &AdminContext, principal: Option<&Principal>, body: Value) -> Answer {
    let started = Instant::now();
    let body: LiftBody = match serde_json::from_value(body) {
        Ok(b) => b,
        Err(e) => return invalid(format!("invalid body: {e}")),
    };
    if !admin.house.pins().lift(&body.key_id, Instant::now()) {
        return api_error(
            404,
            "NOT_FOUND",
            format!("{} is not paused", body.key_id),
            json!({"key_id": body.key_id}),
        );
    }
    record(
        admin,
        principal,
        "visu_password.lift",
        &body.key_id,
        "ok",
        started,
    );
    log::info!("admin API: lifted the password pause of {}", body.key_id);
    Answer::json(200, &json!({"lifted": body.key_id}))
}

/// The key `id` names, or the error answer (404, 409 ambiguous, 500).
fn lookup(admin: &AdminContext, id: &str) -> Result<ApiKey, Answer> {
    keys::find(admin.gate.store().as_ref(), id).map_err(|e| match e {
        FindError::NotFound => not_found(format!("no key {}", mask(id)), Some(id)),
        FindError::Ambiguous(n) => api_error(
            409,
            "CONFLICT",
            format!("{} matches {n} keys; give the full id", mask(id)),
            json!({"key_id": mask(id)}),
        ),
        FindError::Store(e) => store_error(&e, Some(id)),
    })
}

fn own_key(principal: Option<&Principal>, key: &ApiKey) -> bool {
    principal
        .and_then(|p| p.key.as_ref())
        .is_some_and(|k| k.id == key.id)
}

fn update_key(
    admin: &AdminContext,
    principal: Option<&Principal>,
    id: &str,
    body: Value,
) -> Answer {
    let started = Instant::now();
    let body: UpdateBody = match serde_json::from_value(body) {
        Ok(b) => b,
        Err(e) => return invalid(format!("invalid body: {e}")),
    };
    let mut key = match lookup(admin, id) {
        Ok(k) => k,
        Err(a) => return a,
    };
    if body.active == Some(false) && own_key(principal, &key) {
        let a = api_error(
            409,
            "CONFLICT",
            "you cannot deactivate the key this request uses (you would lock yourself out); \
             use another admin key",
            json!({"key_id": mask(&key.id)}),
        );
        record(
            admin,
            principal,
            "key.update",
            &target(&key),
            "CONFLICT",
            started,
        );
        return a;
    }
    // Lists given as [] clear the key's list (where the role allows it).
    let cleared = |l: &Option<Vec<String>>| l.as_ref().is_some_and(Vec::is_empty);
    if key.role == Role::Device && cleared(&body.allowed_devices) {
        return invalid("a device key needs at least one allowed device");
    }
    if key.role == Role::Custom && cleared(&body.permissions) {
        return invalid("a custom key needs at least one permission");
    }
    let devices = match body.allowed_devices {
        Some(d) if key.role == Role::Device => match resolve_devices(admin, d) {
            Ok(d) => Some(d),
            Err(a) => return a,
        },
        other => other,
    };
    let clear_ips = cleared(&body.ip_whitelist);
    let clear_rooms = cleared(&body.rooms);
    let clear_categories = cleared(&body.categories);
    let fields = Fields {
        name: body.name,
        expires_days: body.expires_days,
        ips: body.ip_whitelist.unwrap_or_default(),
        devices: devices.unwrap_or_default(),
        permissions: body.permissions.unwrap_or_default(),
        rooms: body.rooms.unwrap_or_default(),
        categories: body.categories.unwrap_or_default(),
        model_confirms: body.model_confirms,
        open_doors: body.open_doors,
        cameras: body.cameras,
        profile: body.profile,
    };
    if let Err(m) = keys::apply_update(&mut key, fields, body.active) {
        return invalid(m);
    }
    if clear_ips {
        key.ip_whitelist.clear();
    }
    if clear_rooms {
        key.rooms.clear();
    }
    if clear_categories {
        key.categories.clear();
    }
    let view = key_view_in(admin, &key);
    let t = target(&key);
    match admin.gate.store().update(key) {
        Ok(()) => {
            record(admin, principal, "key.update", &t, "ok", started);
            Answer::json(200, &json!({ "record": view }))
        }
        Err(e) => {
            let a = store_error(&e, Some(id));
            record(admin, principal, "key.update", &t, &code_of(&a), started);
            a
        }
    }
}

fn delete_key(admin: &AdminContext, principal: Option<&Principal>, id: &str) -> Answer {
    let started = Instant::now();
    let key = match lookup(admin, id) {
        Ok(k) => k,
        Err(a) => return a,
    };
    let t = target(&key);
    if own_key(principal, &key) {
        record(admin, principal, "key.delete", &t, "CONFLICT", started);
        return api_error(
            409,
            "CONFLICT",
            "you cannot delete the key this request uses (you would lock yourself out); use \
             another admin key",
            json!({"key_id": mask(&key.id)}),
        );
    }
    match admin.gate.store().delete(&key.id) {
        Ok(()) => {
            record(admin, principal, "key.delete", &t, "ok", started);
            log::info!("admin API: deleted key {}", mask(&key.id));
            Answer::json(200, &json!({"deleted": mask(&key.id)}))
        }
        Err(e) => {
            let a = store_error(&e, Some(&key.id));
            record(admin, principal, "key.delete", &t, &code_of(&a), started);
            a
        }
    }
}

/// `POST /admin/api/stop`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct StopBody {
    stopped: bool,
}

/// Sets or lifts the admin page's stop for the admin key of the request (audited).
fn set_stop(admin: &AdminContext, principal: Option<&Principal>, body: Value) -> Answer {
    let started = Instant::now();
    let body: StopBody = match serde_json::from_value(body) {
        Ok(b) => b,
        Err(e) => {
            return invalid(format!(
                "invalid body: {e}; send {{\"stopped\": true|false}}"
            ))
        }
    };
    let by = principal
        .map(|p| p.caller().key_name)
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "the admin page".to_string());
    let stops = admin.house.admin_stop();
    let (op, result) = if body.stopped {
        ("stop.set", stops.stop(&by).map(|_| ()))
    } else {
        ("stop.lift", stops.lift(&by))
    };
    match result {
        Ok(()) => {
            record(admin, principal, op, "admin stop", "ok", started);
            Answer::json(200, &json!({"stop": admin.house.stop_shown().to_json()}))
        }
        Err(e) => {
            let a = api_error(500, "INTERNAL_ERROR", e.to_string(), json!({}));
            record(
                admin,
                principal,
                op,
                "admin stop",
                "INTERNAL_ERROR",
                started,
            );
            a
        }
    }
}

fn status(ctx: &Ctx, admin: &AdminContext) -> Answer {
    let link = admin.house.link().snapshot();
    let home = admin.house.home();
    let loxone = {
        let mut v = link.to_json();
        v["connected"] = (link.mode != LinkMode::Disconnected).into();
        v["status"] = match link.mode {
            LinkMode::WebSocket => "connected",
            LinkMode::Polling => "degraded",
            LinkMode::Disconnected => "disconnected",
        }
        .into();
        v
    };
    let keys = match admin.gate.store().list() {
        Ok(keys) => {
            let mut by_role: BTreeMap<&str, usize> = BTreeMap::new();
            for k in &keys {
                *by_role.entry(k.role.as_str()).or_default() += 1;
            }
            json!({
                "total": keys.len(),
                "active": keys.iter().filter(|k| k.active).count(),
                "by_role": by_role,
            })
        }
        Err(e) => json!({"error": e.to_string()}),
    };
    let audit = match &admin.audit {
        None => json!({"enabled": false}),
        Some(log) => {
            log.flush();
            json!({
                "enabled": true,
                "entries": log.count().ok(),
                "dropped": log.dropped(),
            })
        }
    };
    Answer::json(
        200,
        &json!({
            "status": if link.mode == LinkMode::WebSocket { "ok" } else { "degraded" },
            "version": env!("CARGO_PKG_VERSION"),
            "started_at": admin.started_at,
            "uptime_secs": admin.started.elapsed().as_secs(),
            "security_level": format!("{:?}", admin.gate.level()).to_lowercase(),
            "keys_required": admin.gate.required(),
            "services": {"loxone": loxone},
            "stop": admin.house.stop_shown().to_json(),
            "structure": {
                "last_modified": home.last_modified,
                "serial": home.ms_info.serial_nr,
                "miniserver": home.ms_info.ms_name,
                "rooms": home.rooms.len(),
                "controls": home.controls.len(),
                "warnings": home.warnings.len(),
            },
            "keys": keys,
            "mcp": {"sessions": ctx.mcp.sessions().len()},
            "audit": audit,
        }),
    )
}

fn rate_limits(admin: &AdminContext) -> Answer {
    let c = admin.gate.config();
    let l = c.limits;
    Answer::json(
        200,
        &json!({
            "window_secs": c.window.as_secs_f64(),
            "limits": {
                "per_role": {
                    "admin": l.admin,
                    "operator": l.operator,
                    "monitor": l.monitor,
                    "device": l.device,
                    "custom": l.custom,
                },
                "per_client": l.per_client,
            },
            "buckets": admin.gate.rate_buckets(),
        }),
    )
}

fn audit(admin: &AdminContext, query: &str) -> Answer {
    let Some(log) = &admin.audit else {
        return not_found("the audit log is disabled ([audit] enabled = false)", None);
    };
    let mut q = Query::default();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let v = percent_encoding::percent_decode_str(&v.replace('+', " "))
            .decode_utf8_lossy()
            .into_owned();
        let v = Some(v).filter(|v| !v.is_empty());
        match k {
            "since" => q.since = v,
            // Not `key`: `?key=` is a credential to the gate (refused in production).
            "key_name" => q.key = v,
            "operation" => q.operation = v,
            "result" => q.result = v,
            // In development `?key=` may carry the credential itself: not a filter.
            "key" => {}
            "limit" => match v.map(|v| v.parse::<usize>()) {
                None => {}
                Some(Ok(n)) => q.limit = Some(n),
                Some(Err(_)) => return invalid("limit must be a number 1-1000"),
            },
            other => {
                return invalid(format!(
                    "unknown query parameter {other:?} (since, key_name, operation, result, limit)"
                ))
            }
        }
    }
    match log.query(&q) {
        Ok(entries) => Answer::json(200, &json!({ "entries": entries })),
        Err(crate::audit::AuditError::InvalidQuery(m)) => invalid(m),
        Err(e) => api_error(500, "INTERNAL_ERROR", e.to_string(), json!({})),
    }
}
