//! Key operations, one place for the `keys` command ([`super::cli`]) and the admin routes
//! (`/admin/api/keys`): the fields a key is made or changed with and their checks
//! ([`Fields`], [`check_new`], [`check_fields`]), making a key ([`create_key`]), finding one by
//! its full or masked id ([`find`]), changing one ([`apply_update`], [`revoke`]), resolving a
//! device key's allow-list against the structure file ([`resolve_allowed_devices`]), and the
//! audit log's name of a key ([`audit_target`]).

use std::time::{Duration, SystemTime};

use super::store::{KeyStore, StoreError};
use super::{mask, new_key_id, ApiKey, Role, Usage};

/// Key fields that `keys generate`, `keys update` and the admin API
/// (`POST`/`PUT /admin/api/keys`) share; checked by [`check_fields`] and [`check_new`].
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Fields {
    pub name: Option<String>,
    /// Days from now (at most 36,500); on update 0 removes the expiry.
    pub expires_days: Option<u32>,
    /// IP addresses or CIDR ranges.
    pub ips: Vec<String>,
    pub devices: Vec<String>,
    /// `read`, `control`, `security`, `admin` (custom keys only).
    pub permissions: Vec<String>,
    pub rooms: Vec<String>,
    pub categories: Vec<String>,
    /// Let the model confirm alarm and house-wide actions for this key (`--model-confirms`).
    pub model_confirms: Option<bool>,
    /// Allow opening gates, doors and locks, after a human answer (`--open-doors`).
    pub open_doors: Option<bool>,
    /// Allow pictures of cameras and intercoms (`--cameras`).
    pub cameras: Option<bool>,
    /// The tool profile the key sees (`--profile full|lean`; issue 33); `None` on create:
    /// the server's default, on update: unchanged.
    pub profile: Option<crate::home::Profile>,
}

/// The longest accepted expiry in days (100 years).
pub const MAX_EXPIRES_DAYS: u32 = 36500;

/// `role` by name; the message lists the roles.
pub fn parse_role(role: &str) -> Result<Role, String> {
    Role::parse(role).ok_or_else(|| {
        format!("role {role:?} is not one of admin, operator, monitor, device, custom")
    })
}

/// Checks the values of `f` (expiry range, IP/CIDR syntax, permission names, name length).
pub fn check_fields(f: &Fields) -> Result<(), String> {
    if let Some(d) = f.expires_days {
        if d > MAX_EXPIRES_DAYS {
            return Err(format!("expires_days: {d} is not 0-{MAX_EXPIRES_DAYS}"));
        }
    }
    if let Some(n) = &f.name {
        if n.trim().is_empty() || n.chars().count() > 200 {
            return Err("name must be 1-200 characters".into());
        }
    }
    for ip in &f.ips {
        if !valid_ip_or_cidr(ip) {
            return Err(format!(
                "ip_whitelist: {ip:?} is not an IP address or CIDR range"
            ));
        }
    }
    for p in &f.permissions {
        if !["read", "control", "security", "admin"].contains(&p.as_str()) {
            return Err(format!(
                "permissions: {p:?} is not one of read, control, security, admin"
            ));
        }
    }
    Ok(())
}

/// Checks `f` for a new key of `role`: [`check_fields`], a device key lists devices, a custom
/// key lists permissions, and only custom keys list permissions.
pub fn check_new(role: Role, f: &Fields) -> Result<(), String> {
    check_fields(f)?;
    if role == Role::Device && f.devices.is_empty() {
        return Err("a device key needs at least one allowed device".into());
    }
    if role == Role::Custom && f.permissions.is_empty() {
        return Err("a custom key needs at least one permission".into());
    }
    if role != Role::Custom && !f.permissions.is_empty() {
        return Err("permissions are only for custom keys".into());
    }
    Ok(())
}

/// Resolves a device key's allow-list `entries` (control names, `"name (room)"`, or UUIDs)
/// against `home` when a key is created or updated: `Ok` with the control UUID of each entry,
/// in order, to be stored on the key. `Err` with a message naming every entry that does not
/// name exactly one control, with its candidates and their rooms (ambiguous) or suggestions
/// (unknown), and the per-entry records ([`crate::home::scope::DeviceGrant::to_json`]).
pub fn resolve_allowed_devices(
    home: &crate::home::Home,
    entries: &[String],
) -> Result<Vec<String>, (String, Vec<serde_json::Value>)> {
    let grants = crate::home::scope::resolve_devices(home, entries);
    let problems: Vec<String> = grants
        .iter()
        .filter_map(|g| g.resolved.as_ref().err())
        .map(|e| e.to_string())
        .collect();
    if problems.is_empty() {
        let mut uuids: Vec<String> = Vec::new();
        for g in &grants {
            if let Ok(c) = &g.resolved {
                if !uuids.contains(&c.uuid) {
                    uuids.push(c.uuid.clone());
                }
            }
        }
        return Ok(uuids);
    }
    Err((
        format!(
            "allowed devices must each name exactly one control: {}",
            problems.join(" | ")
        ),
        grants.iter().map(|g| g.to_json()).collect(),
    ))
}

/// `192.168.1.5`, `10.0.0.0/8`, `::1`, `fd00::/8`.
pub fn valid_ip_or_cidr(s: &str) -> bool {
    let (addr, prefix) = match s.split_once('/') {
        Some((a, p)) => (a, Some(p)),
        None => (s, None),
    };
    let Ok(ip) = addr.parse::<std::net::IpAddr>() else {
        return false;
    };
    let max = if ip.is_ipv4() { 32 } else { 128 };
    match prefix {
        None => true,
        Some(p) => p.parse::<u8>().is_ok_and(|p| p <= max),
    }
}

/// The next sequence number: one more than the largest in the store.
pub fn next_sequence(keys: &[ApiKey]) -> u64 {
    keys.iter()
        .filter_map(|k| k.id.split('_').nth(2)?.parse::<u64>().ok())
        .max()
        .map_or(1, |m| m + 1)
}

fn expiry(days: u32) -> Option<String> {
    (days > 0).then(|| {
        crate::time::iso8601(SystemTime::now() + Duration::from_secs(u64::from(days) * 86_400))
    })
}

/// Why [`find`] found no single key.
#[derive(Debug)]
pub enum FindError {
    /// No key matches.
    NotFound,
    /// A masked id or prefix matches this many keys.
    Ambiguous(usize),
    Store(StoreError),
}

impl std::fmt::Display for FindError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FindError::NotFound => f.write_str("no such key"),
            FindError::Ambiguous(n) => write!(f, "the id matches {n} keys; give the full id"),
            FindError::Store(e) => write!(f, "{e}"),
        }
    }
}

/// The key `id` names: the full id, or a masked id (or prefix) matching exactly one key.
pub fn find(store: &dyn KeyStore, id: &str) -> Result<ApiKey, FindError> {
    if let Some(k) = store.get(id).map_err(FindError::Store)? {
        return Ok(k);
    }
    let prefix = id.trim_end_matches('*');
    // A prefix must reach into the random part to be a reference, not a guess at a role.
    if prefix.split('_').count() >= 4 {
        let mut hits: Vec<ApiKey> = store
            .list()
            .map_err(FindError::Store)?
            .into_iter()
            .filter(|k| k.id.starts_with(prefix))
            .collect();
        if hits.len() == 1 {
            return Ok(hits.remove(0));
        }
        if hits.len() > 1 {
            return Err(FindError::Ambiguous(hits.len()));
        }
    }
    Err(FindError::NotFound)
}

/// Applies an update to `key`: set fields replace the key's values (non-empty lists replace
/// the list; `expires_days` 0 removes the expiry). Errors: permissions on a non-custom key.
pub fn apply_update(key: &mut ApiKey, fields: Fields, active: Option<bool>) -> Result<(), String> {
    check_fields(&fields)?;
    if !fields.permissions.is_empty() && key.role != Role::Custom {
        return Err("permissions are only for custom keys".into());
    }
    if let Some(n) = fields.name {
        key.name = n;
    }
    if let Some(d) = fields.expires_days {
        key.expires_at = expiry(d);
    }
    if let Some(a) = active {
        key.active = a;
    }
    if !fields.ips.is_empty() {
        key.ip_whitelist = fields.ips;
    }
    if !fields.devices.is_empty() {
        key.allowed_devices = fields.devices;
    }
    if !fields.permissions.is_empty() {
        key.permissions = fields.permissions;
    }
    if !fields.rooms.is_empty() {
        key.rooms = fields.rooms;
    }
    if !fields.categories.is_empty() {
        key.categories = fields.categories;
    }
    if let Some(m) = fields.model_confirms {
        key.model_confirms = m;
    }
    if let Some(c) = fields.cameras {
        key.cameras = c;
    }
    if let Some(o) = fields.open_doors {
        key.open_doors = o;
    }
    if let Some(p) = fields.profile {
        key.profile = Some(p);
    }
    Ok(())
}

/// Why [`create_key`] made no key.
#[derive(Debug)]
pub enum CreateError {
    /// The OS gave no random numbers (the message says why).
    Random(String),
    /// The store refused or failed (read-only, I/O).
    Store(StoreError),
}

impl std::fmt::Display for CreateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CreateError::Random(e) => write!(f, "no random numbers: {e}"),
            CreateError::Store(e) => write!(f, "{e}"),
        }
    }
}

/// Creates a key of `role` from checked `fields` ([`check_new`]) in `store`: 128 random bits,
/// the next sequence number (picked under the store's lock), `created_by` as given.
pub fn create_key(
    store: &dyn KeyStore,
    role: Role,
    fields: &Fields,
    created_by: &str,
) -> Result<ApiKey, CreateError> {
    let created_at = crate::time::now_iso8601();
    let expires_at = fields.expires_days.and_then(expiry);
    // The random part first (a failure stores nothing).
    let random = new_key_id(role, 0)
        .map_err(|e| CreateError::Random(e.to_string()))?
        .rsplit('_')
        .next()
        .unwrap_or_default()
        .to_string();
    let key = store
        .insert_new(&mut |keys| {
            let seq = next_sequence(keys);
            ApiKey {
                id: format!("homekey_{role}_{seq}_{random}"),
                name: fields
                    .name
                    .clone()
                    .unwrap_or_else(|| format!("{role} key {seq}")),
                role,
                created_by: created_by.into(),
                created_at: created_at.clone(),
                active: true,
                expires_at: expires_at.clone(),
                ip_whitelist: fields.ips.clone(),
                allowed_devices: fields.devices.clone(),
                permissions: fields.permissions.clone(),
                rooms: fields.rooms.clone(),
                categories: fields.categories.clone(),
                model_confirms: fields.model_confirms.unwrap_or(false),
                open_doors: fields.open_doors.unwrap_or(false),
                cameras: fields.cameras.unwrap_or(false),
                grant: None,
                profile: fields.profile,
                usage: Usage::default(),
            }
        })
        .map_err(CreateError::Store)?;
    Ok(key)
}

/// Revokes the key `id` names ([`find`]): it stays in the store, inactive. Returns the key
/// as it was stored.
pub fn revoke(store: &dyn KeyStore, id: &str) -> Result<ApiKey, FindError> {
    let mut key = find(store, id)?;
    key.active = false;
    store.update(key.clone()).map_err(FindError::Store)?;
    Ok(key)
}

/// How the audit log names a key: `name (masked id)`.
pub fn audit_target(key: &ApiKey) -> String {
    format!("{} ({})", key.name, mask(&key.id))
}
