//! What a caller must be allowed to do ([`Permission`]) and what the auth gate and the audit
//! log need to know of a tool call ([`ToolFacts`]): each tool declares its permission, what
//! it reaches and whether it shows pictures of people, API key roles grant sets of permissions
//! (and a key the `cameras` grant), the gate compares the two and the audit log tells reads
//! from writes by them. It lives here, below all three, so that none of them
//! imports another for it: the tool catalogue (`tools::HomeTools`) implements [`ToolFacts`]
//! from its declarations, the gate and the audit log read them through it.

use serde_json::{Map, Value};

use super::scope::Scope;

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
}

impl Permission {
    /// Every permission, lowest first.
    pub const ALL: [Permission; 4] = [
        Permission::Read,
        Permission::Control,
        Permission::Security,
        Permission::Admin,
    ];

    /// `read`, `control`, `security` or `admin`.
    pub fn as_str(self) -> &'static str {
        match self {
            Permission::Read => "read",
            Permission::Control => "control",
            Permission::Security => "security",
            Permission::Admin => "admin",
        }
    }

    /// The permission named `s` (`read`, `control`, `security`, `admin`).
    pub fn parse(s: &str) -> Option<Permission> {
        Permission::ALL.into_iter().find(|p| p.as_str() == s)
    }

    /// Whether a call needing this permission changes the house (everything from `control`
    /// on): such calls are audited, drop the response caches and are not `readOnlyHint`. The
    /// one place "does this call write" is decided.
    pub fn writes(self) -> bool {
        self >= Permission::Control
    }
}

/// Which catalogue a caller sees (issue 33): `full`, every tool the spec names (the default),
/// or `lean`, a handful of general tools for small local models, each a front door over the
/// full tools' declarations. Chosen by the configuration (`[mcp] profile`), `stdio --profile`
/// and per API key (a key's profile wins over the server's default); each tool declares the
/// profiles that list it, and a caller is refused a tool its profile does not list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    /// Every tool of the spec's catalogue.
    #[default]
    Full,
    /// At most 10 general tools (`tools/list` at most 16,000 bytes).
    Lean,
}

impl Profile {
    /// Both profiles, the default first.
    pub const ALL: [Profile; 2] = [Profile::Full, Profile::Lean];

    /// `full` or `lean`.
    pub fn as_str(self) -> &'static str {
        match self {
            Profile::Full => "full",
            Profile::Lean => "lean",
        }
    }

    /// The profile named `s` (`full`, `lean`; case ignored).
    pub fn parse(s: &str) -> Option<Profile> {
        Profile::ALL
            .into_iter()
            .find(|p| p.as_str().eq_ignore_ascii_case(s.trim()))
    }
}

impl std::fmt::Display for Profile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The facts of a tool call the auth gate and the audit log need, as the tool's declaration
/// in the catalogue gives them (implemented by `tools::HomeTools`).
pub trait ToolFacts: Send + Sync {
    /// The permission a call of `tool` with `arguments` needs: the tool's own, and for a tool
    /// that runs others (`execute_workflow`) the highest among them. `None`: no such tool.
    fn required_permission(&self, tool: &str, arguments: &Map<String, Value>)
        -> Option<Permission>;

    /// Whether a call of `tool` with `arguments` shows pictures of people (camera and intercom
    /// pictures; for a lean front door, whether the call it stands for does): a key needs the
    /// `cameras` grant besides the permission (admin keys hold it), else the gate refuses
    /// with `INSUFFICIENT_PERMISSIONS` before anything reaches a camera.
    fn shows_pictures(&self, tool: &str, arguments: &Map<String, Value>) -> bool;

    /// Whether a call of `tool` with `arguments` is recorded in the audit log: it writes
    /// ([`Permission::writes`]) or shows pictures. A refusal of such a call is recorded too.
    fn audited(&self, tool: &str, arguments: &Map<String, Value>) -> bool;

    /// `Ok` when the call stays inside `scope` (a key limited to rooms or categories) as far
    /// as its arguments tell, by what the tool declares it reaches; `Err` with the reason
    /// otherwise (an unknown tool, and one that reaches the whole house, is refused). Every
    /// command is checked again when it is sent.
    fn check_scope(
        &self,
        tool: &str,
        arguments: &Map<String, Value>,
        scope: &Scope,
    ) -> Result<(), String>;
}
