//! Who confirms what can hurt (issue 20): the pending confirmations and who gave them.
//!
//! A command of a class that needs confirmation ([`Risk::needs_confirmation`]) is described by
//! a [`Binding`] (the caller's key, the tool, the control(s), the command and its values). Before
//! the user is asked, a [`Pending`] confirmation with a random id is filed for it; the answer
//! redeems it, once, within [`LIFETIME`], and only for the very same binding. Up to protocol
//! 2025-11-25 the elicitation answers within the same request; a 2026-07-28 client answers an
//! `input_required` result, and its retry redeems the id named in the sealed `requestState`
//! (`crate::mcp::input`); the URL-mode page can redeem the same store by id.
//!
//! Fair shares: one key (or OAuth grant: [`Binding::key`]) keeps at most [`PER_KEY`] pending
//! confirmations of the store's [`CAPACITY`], so that a key asking and never answering fills
//! only its own share. A new confirmation for the same binding (the same key, tool, controls
//! and command) replaces the older one, which can no longer be redeemed ([`Pending::file`]):
//! one open question per command.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::home::Risk;

/// How long a pending confirmation can be redeemed.
pub const LIFETIME: Duration = Duration::from_secs(120);

/// Most pending confirmations kept at once, of all keys; a full store refuses new ones
/// (nothing is sent).
pub const CAPACITY: usize = 256;

/// Most pending confirmations of one key (or OAuth grant) at once.
pub const PER_KEY: usize = 16;

/// Who confirmed a command, for the result and the audit log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfirmedBy {
    /// The user, answering a form elicitation.
    User,
    /// The user, typing the visualisation password on this server's page (URL-mode
    /// elicitation, [`super::password`]).
    Page,
    /// The model's `confirm: true`, because the key's owner allows it for this class.
    Model,
    /// The user, confirming the enclosing workflow.
    Workflow,
    /// The server's own process (no MCP request: tests, in-process callers).
    Owner,
}

impl ConfirmedBy {
    /// The name in results and the audit log.
    pub fn as_str(self) -> &'static str {
        match self {
            ConfirmedBy::User => "user (elicitation)",
            ConfirmedBy::Page => "user (password page)",
            ConfirmedBy::Model => "model (key allows)",
            ConfirmedBy::Workflow => "user (workflow)",
            ConfirmedBy::Owner => "owner (in process)",
        }
    }
}

/// What one confirmation is good for: nothing else.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding {
    /// The caller's key (masked id or name), or the session.
    pub key: String,
    pub tool: String,
    /// UUIDs of the controls (or the workflow id), sorted.
    pub controls: Vec<String>,
    /// The command with its values (`off`, `disarm`, `Level(50)`).
    pub command: String,
    pub risk: Risk,
}

/// Why a pending confirmation could not be redeemed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// No such id (never filed, already used, or dropped).
    Unknown,
    /// Filed for another key, tool, control or command.
    Mismatch,
    /// Older than [`LIFETIME`].
    Expired,
    /// [`CAPACITY`] pending confirmations are waiting.
    Full,
    /// The key's own share ([`PER_KEY`]) is waiting.
    KeyFull,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Refusal::Unknown => "the confirmation is unknown or was already used",
            Refusal::Mismatch => "the confirmation was given for another command",
            Refusal::Expired => "the confirmation expired",
            Refusal::Full => "too many confirmations are waiting",
            Refusal::KeyFull => {
                "too many confirmations of this key are waiting; answer or let them expire first"
            }
        })
    }
}

/// The bounded store of pending confirmations.
#[derive(Debug)]
pub struct Pending {
    lifetime: Duration,
    entries: Mutex<HashMap<String, (Binding, Instant)>>,
}

impl Default for Pending {
    fn default() -> Self {
        Pending::with_lifetime(LIFETIME)
    }
}

impl Pending {
    /// A store whose confirmations last `lifetime` (tests use a short one).
    pub fn with_lifetime(lifetime: Duration) -> Self {
        Pending {
            lifetime,
            entries: Mutex::new(HashMap::new()),
        }
    }

    /// Files a confirmation for `binding` at `now`; returns its id. Expired entries go first,
    /// and a pending one for the same binding is replaced (it can no longer be redeemed); the
    /// key's share full ([`Refusal::KeyFull`]) or the store full ([`Refusal::Full`]) refuses.
    pub fn file(&self, binding: Binding, now: Instant) -> Result<String, Refusal> {
        let mut e = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let lifetime = self.lifetime;
        e.retain(|_, (b, at)| now.saturating_duration_since(*at) < lifetime && *b != binding);
        if e.values().filter(|(b, _)| b.key == binding.key).count() >= PER_KEY {
            return Err(Refusal::KeyFull);
        }
        if e.len() >= CAPACITY {
            return Err(Refusal::Full);
        }
        let id = new_id();
        e.insert(id.clone(), (binding, now));
        Ok(id)
    }

    /// Redeems `id` for `binding` at `now`: once (the entry is gone afterwards, whatever the
    /// outcome), within the lifetime, for the same binding only.
    pub fn redeem(&self, id: &str, binding: &Binding, now: Instant) -> Result<(), Refusal> {
        let mut e = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let (filed, at) = e.remove(id).ok_or(Refusal::Unknown)?;
        if now.saturating_duration_since(at) >= self.lifetime {
            return Err(Refusal::Expired);
        }
        if &filed != binding {
            return Err(Refusal::Mismatch);
        }
        Ok(())
    }

    /// Forgets `id` (the user said no).
    pub fn drop_id(&self, id: &str) {
        self.entries
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(id);
    }

    /// How long a confirmation lives (and the user's answer is awaited).
    pub fn lifetime(&self) -> Duration {
        self.lifetime
    }

    /// Confirmations waiting.
    pub fn len(&self) -> usize {
        self.entries.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Whether none is waiting.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// 128 random bits as hex.
pub(crate) fn new_id() -> String {
    let mut b = [0u8; 16];
    if getrandom::fill(&mut b).is_err() {
        // Unpredictable enough as a fallback: the id is never the only check (the binding is).
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos();
        b = t.to_le_bytes();
    }
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn binding(control: &str, command: &str, key: &str) -> Binding {
        Binding {
            key: key.into(),
            tool: "control_device".into(),
            controls: vec![control.into()],
            command: command.into(),
            risk: Risk::Access,
        }
    }

    #[test]
    fn one_use_same_binding_within_the_lifetime() {
        let p = Pending::with_lifetime(Duration::from_secs(120));
        let t0 = Instant::now();
        let b = binding("gate", "open", "k1");
        let id = p.file(b.clone(), t0).unwrap();
        assert_eq!(p.redeem(&id, &b, t0), Ok(()));
        assert_eq!(p.redeem(&id, &b, t0), Err(Refusal::Unknown), "one use");

        for other in [
            binding("door", "open", "k1"),
            binding("gate", "Level(50)", "k1"),
            binding("gate", "open", "k2"),
        ] {
            let id = p.file(b.clone(), t0).unwrap();
            assert_eq!(p.redeem(&id, &other, t0), Err(Refusal::Mismatch));
            assert_eq!(
                p.redeem(&id, &b, t0),
                Err(Refusal::Unknown),
                "gone after a try"
            );
        }

        let id = p.file(b.clone(), t0).unwrap();
        let late = t0 + Duration::from_secs(120);
        assert_eq!(p.redeem(&id, &b, late), Err(Refusal::Expired));
    }

    #[test]
    fn the_store_is_bounded_per_key_and_in_all() {
        let p = Pending::default();
        let t0 = Instant::now();
        // One key fills its own share only.
        for i in 0..PER_KEY {
            p.file(binding(&format!("gate{i}"), "open", "k"), t0)
                .unwrap();
        }
        assert_eq!(
            p.file(binding("door", "open", "k"), t0),
            Err(Refusal::KeyFull)
        );
        // Other keys fill the rest of the store.
        let keys = (CAPACITY - PER_KEY) / PER_KEY;
        for k in 0..keys {
            for i in 0..PER_KEY {
                p.file(binding(&format!("gate{i}"), "open", &format!("k{k}")), t0)
                    .unwrap();
            }
        }
        assert_eq!(p.len(), CAPACITY);
        assert_eq!(
            p.file(binding("gate", "open", "newcomer"), t0),
            Err(Refusal::Full)
        );
        // Expired entries make room.
        assert!(p.file(binding("gate", "open", "k"), t0 + LIFETIME).is_ok());
        assert_eq!(p.len(), 1);
    }

    #[test]
    fn a_newer_confirmation_of_the_same_command_replaces_the_older() {
        let p = Pending::default();
        let t0 = Instant::now();
        let b = binding("gate", "open", "k1");
        let older = p.file(b.clone(), t0).unwrap();
        let other_key = p.file(binding("gate", "open", "k2"), t0).unwrap();
        let other_command = p.file(binding("gate", "close", "k1"), t0).unwrap();
        let newer = p.file(b.clone(), t0).unwrap();
        assert_eq!(p.redeem(&older, &b, t0), Err(Refusal::Unknown), "replaced");
        assert_eq!(p.redeem(&newer, &b, t0), Ok(()));
        // Other keys' and other commands' confirmations stay.
        assert_eq!(
            p.redeem(&other_key, &binding("gate", "open", "k2"), t0),
            Ok(())
        );
        assert_eq!(
            p.redeem(&other_command, &binding("gate", "close", "k1"), t0),
            Ok(())
        );
    }
}
