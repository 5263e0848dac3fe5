//! API keys, roles and permissions (spec §2 "API key record", §5).
//!
//! A key record is identified by its `id`, which is also the secret the client sends
//! (`homekey_{role}_{sequence}_{random}`, at least 128 random bits). Only
//! [`mask`]ed ids ever appear in logs and errors. Roles map to [`Permission`] sets
//! ([`Role::permissions`]); `custom` keys carry their own list. Stores live in [`store`].

pub mod cli;
pub mod gate;
pub mod keys;
pub mod oauth;
pub use crate::ratelimit;
pub mod store;

use std::collections::BTreeSet;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::home::Permission;

/// The roles of spec §5.5, in privilege order admin > operator > monitor > device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Device,
    Monitor,
    Operator,
    Admin,
    /// Permissions listed on the key itself.
    Custom,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Admin => "admin",
            Role::Operator => "operator",
            Role::Monitor => "monitor",
            Role::Device => "device",
            Role::Custom => "custom",
        }
    }

    pub fn parse(s: &str) -> Option<Role> {
        Some(match s {
            "admin" => Role::Admin,
            "operator" => Role::Operator,
            "monitor" => Role::Monitor,
            "device" => Role::Device,
            "custom" => Role::Custom,
            _ => return None,
        })
    }

    /// What the role may do. Disarming alarms and opening gates need [`Permission::Security`],
    /// which only admin (and custom keys that list it) have: "operator" alone is not enough
    /// (issue 6). Device keys may read and control, but only their allowed devices.
    pub fn permissions(self) -> BTreeSet<Permission> {
        use Permission::*;
        match self {
            Role::Admin => [Read, Control, Security, Admin].into(),
            Role::Operator => [Read, Control].into(),
            Role::Monitor => [Read].into(),
            Role::Device => [Read, Control].into(),
            Role::Custom => BTreeSet::new(),
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One API key record (spec §2) with its usage data. `Debug` masks the id (it is the secret).
#[derive(Clone, PartialEq, Serialize, Deserialize)]
pub struct ApiKey {
    /// The key itself: `homekey_{role}_{sequence}_{random}`. Never log it: use [`mask`].
    pub id: String,
    pub name: String,
    pub role: Role,
    #[serde(default)]
    pub created_by: String,
    /// ISO 8601 UTC.
    pub created_at: String,
    #[serde(default = "yes")]
    pub active: bool,
    /// ISO 8601 UTC; `None`: never expires.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
    /// IP addresses or CIDR ranges (v4/v6); empty: any address.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ip_whitelist: Vec<String>,
    /// For `device` keys: the controls the key may see and operate, by name (`"name (room)"`
    /// where a name is in several rooms) or UUID; each entry resolves to exactly one control
    /// when the key is created or updated, and again whenever the structure file changes
    /// (see [`crate::home::scope`]: an entry that stops resolving grants nothing).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_devices: Vec<String>,
    /// For `custom` keys: the permissions (`read`, `control`, `security`, `admin`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub permissions: Vec<String>,
    /// Optional scope: only these rooms (names or UUIDs); empty: all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rooms: Vec<String>,
    /// Optional scope: only these families or Loxone categories; empty: all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub categories: Vec<String>,
    /// The owner lets the model confirm alarm and house-wide actions with `confirm: true` for
    /// this key (issue 20; default: only a human answer confirms). Never gates and doors.
    #[serde(default)]
    pub model_confirms: bool,
    /// The owner allows this key to open gates, doors and locks (always after a human
    /// answer; default: closing and stopping only).
    #[serde(default)]
    pub open_doors: bool,
    /// The owner lets this key see pictures of cameras and intercoms (the `cameras` grant,
    /// [`ApiKey::sees_pictures`]; admin keys always may). Default: no pictures.
    #[serde(default)]
    pub cameras: bool,
    /// The OAuth grant this access key belongs to: a random id drawn at sign-in and kept by
    /// every key a refresh issues (`None` for keys the owner made). What the key's fair shares
    /// (tasks, confirmations) and its visualisation password pause count for
    /// ([`ApiKey::principal`]), so that a refresh does not start them afresh.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant: Option<String>,
    /// The tool profile this key sees (`full`, `lean`; issue 33); `None`: the server's
    /// default (`[mcp] profile`). A key's profile wins over the default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<crate::home::Profile>,
    #[serde(default)]
    pub usage: Usage,
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApiKey")
            .field("id", &mask(&self.id))
            .field("name", &self.name)
            .field("role", &self.role)
            .field("active", &self.active)
            .field("expires_at", &self.expires_at)
            .field("ip_whitelist", &self.ip_whitelist)
            .field("allowed_devices", &self.allowed_devices)
            .field("permissions", &self.permissions)
            .field("rooms", &self.rooms)
            .field("categories", &self.categories)
            .finish_non_exhaustive()
    }
}

fn yes() -> bool {
    true
}

/// Usage data per key (spec §2): batched to the store, never written per request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_used: Option<String>,
    #[serde(default)]
    pub count: u64,
    #[serde(default)]
    pub failed_attempts: u64,
    /// Distinct client addresses seen (at most 20 kept).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ips: Vec<String>,
}

impl ApiKey {
    /// What tells this key (or its OAuth grant, which outlives each refreshed key) from every
    /// other one without revealing it: 16 bytes of the SHA-256 of the grant id, else of the
    /// key id, hex. What confirmations, multi round-trip states, tasks and the visualisation
    /// password pause are bound to ([`crate::mcp::Caller::principal`]).
    pub fn principal(&self) -> String {
        use sha2::{Digest, Sha256};
        let id = match &self.grant {
            Some(g) => format!("grant:{g}"),
            None => self.id.clone(),
        };
        hex::encode(&Sha256::digest(id.as_bytes())[..16])
    }

    /// The key's room and category scope (`None`: the whole house).
    pub fn scope(&self) -> Option<crate::home::Scope> {
        crate::home::Scope::of(&self.rooms, &self.categories)
    }

    /// What the key may see and operate ([`crate::home::Access`]): its scope and, for a
    /// `device` key, its allow-list (every other role: not limited to devices).
    pub fn access(&self) -> crate::home::Access {
        let devices = (self.role == Role::Device).then(|| self.allowed_devices.clone());
        crate::home::Access::new(self.scope(), devices)
    }

    /// The key's permissions: the role's, or the listed ones for `custom` keys (unknown
    /// names are ignored).
    pub fn permissions(&self) -> BTreeSet<Permission> {
        if self.role != Role::Custom {
            return self.role.permissions();
        }
        self.permissions
            .iter()
            .filter_map(|p| match p.as_str() {
                "read" => Some(Permission::Read),
                "control" => Some(Permission::Control),
                "security" => Some(Permission::Security),
                "admin" => Some(Permission::Admin),
                _ => None,
            })
            .collect()
    }

    /// Whether the key holds the `cameras` grant: it may call tools that show pictures of
    /// people ([`crate::home::ToolFacts::shows_pictures`]) and see the dashboard's doorbell
    /// pictures. The owner's `cameras` setting, or implicitly a key with the `admin`
    /// permission (which could give itself the setting anyway).
    pub fn sees_pictures(&self) -> bool {
        self.cameras || self.permissions().contains(&Permission::Admin)
    }
}

pub use crate::logging::mask_key_id as mask;

/// A new key id for `role` with `sequence`: 128 bits from the OS CSPRNG, hex.
pub fn new_key_id(role: Role, sequence: u64) -> Result<String, getrandom::Error> {
    let mut b = [0u8; 16];
    getrandom::fill(&mut b)?;
    let random: String = b.iter().map(|x| format!("{x:02x}")).collect();
    Ok(format!("homekey_{}_{sequence}_{random}", role.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_have_the_spec_format_and_128_random_bits() {
        let a = new_key_id(Role::Operator, 7).unwrap();
        let b = new_key_id(Role::Operator, 7).unwrap();
        assert_ne!(a, b);
        let parts: Vec<&str> = a.split('_').collect();
        assert_eq!(parts[..3], ["homekey", "operator", "7"]);
        assert_eq!(parts[3].len(), 32);
        assert!(parts[3].chars().all(|c| c.is_ascii_hexdigit()));
        let m = mask(&a);
        assert!(m.ends_with("****") && m.len() < a.len(), "{m}");
        assert!(!m.contains(&parts[3][4..]));
    }

    #[test]
    fn roles_and_custom_permissions() {
        assert!(Role::Admin.permissions().contains(&Permission::Security));
        assert!(!Role::Operator.permissions().contains(&Permission::Security));
        assert!(!Role::Monitor.permissions().contains(&Permission::Control));
        let k = ApiKey {
            id: "x".into(),
            name: "n".into(),
            role: Role::Custom,
            created_by: String::new(),
            created_at: String::new(),
            active: true,
            expires_at: None,
            ip_whitelist: vec![],
            allowed_devices: vec![],
            permissions: vec!["read".into(), "security".into(), "bogus".into()],
            rooms: vec![],
            categories: vec![],
            model_confirms: false,
            open_doors: false,
            cameras: false,
            grant: None,
            profile: None,
            usage: Usage::default(),
        };
        assert_eq!(
            k.permissions(),
            [Permission::Read, Permission::Security].into()
        );
        // The cameras grant: the key's setting, or implicitly the admin permission; it adds
        // no permission.
        assert!(!k.sees_pictures());
        let with = ApiKey {
            cameras: true,
            ..k.clone()
        };
        assert!(with.sees_pictures() && with.permissions() == k.permissions());
        let custom_admin = ApiKey {
            permissions: vec!["read".into(), "admin".into()],
            ..k.clone()
        };
        assert!(custom_admin.sees_pictures());
        for (role, sees) in [
            (Role::Admin, true),
            (Role::Operator, false),
            (Role::Monitor, false),
            (Role::Device, false),
        ] {
            assert_eq!(ApiKey { role, ..k.clone() }.sees_pictures(), sees, "{role}");
        }
    }
}
