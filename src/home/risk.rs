//! Risk classes (issue 20): what a command can hurt, decided in one place.
//!
//! | class | controls / calls | by default |
//! |---|---|---|
//! | [`Risk::Access`] | gates, door openers, locks, intercom doors, code pads ([`Home::guards_access`]) | opening needs a human answer and a key whose owner allows opening |
//! | [`Risk::Alarm`] | burglar alarms (arm, disarm, acknowledge), smoke alarms (silence): the family `security` of the type table | a human answer |
//! | [`Risk::HouseWide`] | system scope, all lights or blinds, batches and workflows above the threshold | a human answer |
//! | [`Risk::Ordinary`] | the rest | nobody is asked |
//!
//! The classes of controls follow from the per-type table of [`crate::home::model`] (a type's
//! family) and [`Home::guards_access`]; the owner adds controls to a class in the configuration
//! ([`RiskRules`]: `[risk] access = [...]`, `alarm = [...]`, `house_wide = [...]`, each entry a
//! control's name or UUID, or a family, Loxone category or control type as [`Home::word`]
//! reads it). House-wide is also a property of a call (its scope or
//! size): the tools that address many controls ask [`Risk::HouseWide`] themselves.

use super::model::{Control, Family, Home};
use super::resolve::fold;

/// What a command can hurt (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Risk {
    /// Nothing beyond the device itself.
    Ordinary,
    /// Many controls at once.
    HouseWide,
    /// The burglar or smoke alarm.
    Alarm,
    /// A way into the house.
    Access,
}

impl Risk {
    /// The class's name in results, errors and the audit log.
    pub fn as_str(self) -> &'static str {
        match self {
            Risk::Ordinary => "ordinary",
            Risk::HouseWide => "house-wide",
            Risk::Alarm => "alarm",
            Risk::Access => "access",
        }
    }

    /// Whether a command of this class needs a human answer (or, where the key allows it and
    /// the class is not [`Risk::Access`], the model's `confirm: true`).
    pub fn needs_confirmation(self) -> bool {
        self != Risk::Ordinary
    }

    /// Whether the owner can let the model confirm this class for a key (never for access:
    /// opening gates and doors always takes a human answer).
    pub fn model_may_confirm(self) -> bool {
        matches!(self, Risk::HouseWide | Risk::Alarm)
    }
}

/// The owner's additions to the classes (`[risk]` of the configuration): per entry a control's
/// name or UUID, or a word for a group of controls as every tool reads it ([`Home::word`]: a
/// family, a Loxone category, a control type), compared without case and accents.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RiskRules {
    pub access: Vec<String>,
    pub alarm: Vec<String>,
    pub house_wide: Vec<String>,
}

/// The risk class of operating `c`: the highest of its type's class and the classes the owner
/// added it to.
pub fn class_of(home: &Home, c: &Control, rules: &RiskRules) -> Risk {
    let by_type = if home.guards_access(c) {
        Risk::Access
    } else if home.family(c) == Family::Security {
        Risk::Alarm
    } else {
        Risk::Ordinary
    };
    let name = fold(&c.name);
    let listed = |entries: &[String]| {
        entries.iter().any(|raw| {
            let e = fold(raw);
            !e.is_empty()
                && (e == name
                    || raw.trim().eq_ignore_ascii_case(&c.uuid)
                    || home.word(raw).is_ok_and(|w| w.contains(home, c)))
        })
    };
    let by_owner = [
        (Risk::Access, listed(&rules.access)),
        (Risk::Alarm, listed(&rules.alarm)),
        (Risk::HouseWide, listed(&rules.house_wide)),
    ]
    .into_iter()
    .filter(|(_, hit)| *hit)
    .map(|(r, _)| r)
    .max()
    .unwrap_or(Risk::Ordinary);
    by_type.max(by_owner)
}
