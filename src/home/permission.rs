//! What a caller must be allowed to do ([`Permission`]): each tool declares one, API key roles
//! grant sets of them, the auth gate compares the two and the audit log tells reads from
//! writes by them. It lives here, below all three, so that none of them imports another for it.

use std::sync::Arc;

use serde_json::{Map, Value};

/// What a caller must be allowed to do to use a tool (enforced by the auth gate).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Permission {
    /// Read the house: rooms, devices, values.
    Read,
    /// Operate devices: lights, blinds, climate, audio.
    Control,
    /// Security-relevant actions: alarm, gates and doors.
    Security,
    /// Server administration (keys, configuration).
    Admin,
    /// See pictures of cameras and intercoms (issue 30): admin keys, and keys whose owner set
    /// `cameras`. Ordered last, so that the audit log records every picture fetched (it
    /// records calls needing [`Permission::Control`] or more).
    Cameras,
}

impl Permission {
    /// `read`, `control`, `security` or `admin`.
    pub fn as_str(self) -> &'static str {
        match self {
            Permission::Read => "read",
            Permission::Control => "control",
            Permission::Security => "security",
            Permission::Admin => "admin",
            Permission::Cameras => "cameras",
        }
    }
}

/// The permission a tool call needs (the tool catalogue's `HomeTools::required_permission`,
/// handed to the auth gate and the audit log by the wiring), from the tool's name and
/// arguments; `None`: unknown tool.
pub type PermissionFn = Arc<dyn Fn(&str, &Map<String, Value>) -> Option<Permission> + Send + Sync>;
