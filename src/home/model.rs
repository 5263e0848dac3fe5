//! The typed home model: rooms, categories and controls as a Loxone structure file
//! (`LoxAPP3.json`) describes them, independent of how they were fetched.
//!
//! The model is immutable once built; live values live in [`super::StateStore`]. Identifiers are
//! the Miniserver's UUID strings, lowercase, exactly as in the structure file (sub-controls keep
//! their suffix, e.g. `"<uuid>/masterValue"`).

use std::collections::BTreeMap;
use std::fmt;

use super::names::fold;

/// The whole house as read from one structure file.
#[derive(Debug, Clone, Default)]
pub struct Home {
    /// `lastModified` of the structure file, `"YYYY-MM-DD HH:MM:SS"` (Miniserver local time).
    pub last_modified: String,
    pub ms_info: MsInfo,
    /// Rooms sorted by name (then UUID), so every listing is stable.
    pub rooms: Vec<Room>,
    /// Categories sorted by name (then UUID).
    pub categories: Vec<Category>,
    /// Top-level controls sorted by room name, then control name, then UUID. Sub-controls hang
    /// below their parent in [`Control::sub_controls`].
    pub controls: Vec<Control>,
    /// `globalStates`: state name -> state UUID (operatingMode, sunrise, ...).
    pub global_states: BTreeMap<String, String>,
    /// `operatingModes`: id -> name.
    pub operating_modes: BTreeMap<String, String>,
    /// The top-level `messageCenter` block (firmware 10.0 and later), if the file has one.
    pub message_center: Option<MessageCenter>,
    /// What the reader skipped or read as empty because the file is not as documented (see
    /// `loxone::structure`), in the order met, at most one per path; empty for a clean file.
    pub warnings: Vec<StructureWarning>,
}

/// The Miniserver's Message Center (System Status), from the structure file's top-level
/// `messageCenter` block (`{"<uuid>": {"name", "uuidAction", "states": {"changed"}}}`, per
/// Loxone structure file docs): the target of its commands (`getEntries`, `readEntry`,
/// `action`) and the state that changes whenever its entries do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageCenter {
    /// `uuidAction`, lowercase: `jdev/sps/io/{uuid}/getEntries/2` and the other commands.
    pub uuid: String,
    pub name: String,
    /// The `changed` state's UUID, lowercase, if given: a new value means the entries changed
    /// (a trigger only; the docs call it a Unix time, clients read it otherwise).
    pub changed: Option<String>,
}

/// One place in a structure file that is not as documented and was skipped or read as empty
/// instead of rejecting the whole file (built by `loxone::structure`, logged once at start-up
/// or reload, counted in `/health`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StructureWarning {
    /// Dotted JSON path of what was skipped or read as empty, e.g.
    /// `controls.<uuid>.states.active`, `rooms`, `msInfo`; map keys are written as they are.
    pub path: String,
    pub problem: StructureProblem,
}

/// What was wrong at a [`StructureWarning::path`], and what the reader did about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StructureProblem {
    /// An entry of a map (a control, sub-control, room, category, state or global state) had
    /// the wrong JSON type and was left out; the rest of its map was read.
    Skipped {
        expected: &'static str,
        found: &'static str,
    },
    /// A section (`rooms`, `cats`, `msInfo`, `globalStates`, `operatingModes`, a control's
    /// `states`, `details` or `subControls`) or a text (a control's `name` or `type`,
    /// `lastModified`) had the wrong JSON type and was read as empty.
    ReadAsEmpty {
        expected: &'static str,
        found: &'static str,
    },
    /// This key or text held bytes that are not UTF-8; they were replaced with U+FFFD.
    InvalidUtf8,
    /// A control or sub-control whose `uuidAction` (compared without regard to case) an
    /// earlier one in the file has: left out with its sub-controls, the first one is kept.
    DuplicateUuid { uuid: String },
}

impl fmt::Display for StructureWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.problem {
            StructureProblem::Skipped { expected, found } => {
                write!(
                    f,
                    "{}: expected {expected}, found {found}; skipped",
                    self.path
                )
            }
            StructureProblem::ReadAsEmpty { expected, found } => write!(
                f,
                "{}: expected {expected}, found {found}; read as empty",
                self.path
            ),
            StructureProblem::InvalidUtf8 => write!(
                f,
                "{}: bytes that are not UTF-8 replaced with U+FFFD",
                self.path
            ),
            StructureProblem::DuplicateUuid { uuid } => write!(
                f,
                "{}: uuidAction {uuid} is used by an earlier control; skipped",
                self.path
            ),
        }
    }
}

/// `msInfo` of the structure file: the Miniserver's identity.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MsInfo {
    pub serial_nr: String,
    pub ms_name: String,
    pub project_name: String,
    pub local_url: String,
    pub remote_url: String,
    pub location: String,
    pub language_code: String,
    /// 0 Gen 1, 1 Go Gen 1, 2 Gen 2, 3 Go Gen 2, 4 Compact (per Loxone structure file docs).
    pub miniserver_type: Option<i64>,
    /// 0 °C, 1 °F.
    pub temp_unit: Option<i64>,
    /// Name of the user the structure file was fetched as.
    pub current_user: Option<String>,
}

/// A room (`rooms` map of the structure file).
#[derive(Debug, Clone, PartialEq)]
pub struct Room {
    pub uuid: String,
    pub name: String,
    pub is_favorite: bool,
    pub default_rating: i64,
}

/// A category (`cats` map of the structure file). Loxone categories are user-defined groups
/// ("Lighting", "Beleuchtung"); [`CategoryKind`] is the Miniserver's own classification.
#[derive(Debug, Clone, PartialEq)]
pub struct Category {
    pub uuid: String,
    pub name: String,
    pub kind: CategoryKind,
    pub is_favorite: bool,
    pub default_rating: i64,
}

/// `type` of a category per Loxone structure file docs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CategoryKind {
    Lights,
    IndoorTemperature,
    Shading,
    Multimedia,
    Undefined,
    /// Any other value, kept verbatim.
    Other(String),
}

impl CategoryKind {
    /// Maps the structure file's category `type` string.
    pub fn from_type(s: &str) -> Self {
        match s {
            "lights" => Self::Lights,
            "indoortemperature" => Self::IndoorTemperature,
            "shading" => Self::Shading,
            "multimedia" => Self::Multimedia,
            "undefined" | "" => Self::Undefined,
            other => Self::Other(other.to_string()),
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            Self::Lights => "lights",
            Self::IndoorTemperature => "indoortemperature",
            Self::Shading => "shading",
            Self::Multimedia => "multimedia",
            Self::Undefined => "undefined",
            Self::Other(s) => s,
        }
    }
}

/// One control (a Loxone function block as visualised), or a sub-control of one.
#[derive(Debug, Clone, PartialEq)]
pub struct Control {
    /// `uuidAction`: the target of commands (`jdev/sps/io/{uuid}/{command}`). Sub-controls may
    /// carry a suffix (`<uuid>/masterValue`).
    pub uuid: String,
    pub name: String,
    pub kind: ControlKind,
    /// Room UUID, if the control has one.
    pub room: Option<String>,
    /// Category UUID, if the control has one.
    pub category: Option<String>,
    /// `isSecured`: commands need the visualisation password (`jdev/sps/ios/...`).
    pub is_secured: bool,
    pub is_favorite: bool,
    pub default_rating: i64,
    /// `restrictions` bitmap (0x1/0x10 referenced only, 0x2/0x20 read only); 0 when absent.
    pub restrictions: i64,
    /// State name -> state UUID(s), as in the structure file.
    pub states: BTreeMap<String, StateRef>,
    /// Type-specific `details`, kept as the structure file gives them.
    pub details: serde_json::Map<String, serde_json::Value>,
    /// Sub-controls (e.g. ColorPickerV2 or Dimmer circuits of a LightControllerV2), sorted by UUID.
    pub sub_controls: Vec<Control>,
    /// What the Miniserver records of it (`statistic`, `statisticV2`); empty when nothing.
    pub statistic: super::statistic::Statistic,
}

impl Control {
    /// A control with no room, category, states, details or sub-controls (for building homes by
    /// hand, e.g. in tests).
    pub fn new(uuid: impl Into<String>, name: impl Into<String>, kind: ControlKind) -> Control {
        Control {
            uuid: uuid.into(),
            name: name.into(),
            kind,
            room: None,
            category: None,
            is_secured: false,
            is_favorite: false,
            default_rating: 0,
            restrictions: 0,
            states: BTreeMap::new(),
            details: serde_json::Map::new(),
            sub_controls: Vec::new(),
            statistic: super::statistic::Statistic::default(),
        }
    }

    /// UUID of the named state, if the control has it as a single UUID.
    pub fn state(&self, name: &str) -> Option<&str> {
        match self.states.get(name)? {
            StateRef::Uuid(u) => Some(u),
            StateRef::Uuids(_) => None,
        }
    }

    /// The unit of the state `state` as the structure file's formats give it: the details'
    /// `{state}Format` (a Meter's `actualFormat` `%.2fkW`, `totalFormat` `%.1fkWh`), else
    /// `format` (see [`unit_of_format`]); `None` when neither names one.
    pub fn unit_of(&self, state: &str) -> Option<String> {
        let key = format!("{state}Format");
        [key.as_str(), "format"]
            .iter()
            .filter_map(|k| self.details.get(*k)?.as_str())
            .find_map(unit_of_format)
    }
}

/// The unit a Loxone printf format names after its number: `%.1f°` -> `°C`, `%.2fkW` -> `kW`,
/// `%.0f%%` -> `%`, `%.0f lx` -> `lx`; `None` for a bare number (`%.1f`).
pub fn unit_of_format(f: &str) -> Option<String> {
    let after = match f.find(|ch: char| ch.is_ascii_alphabetic()) {
        Some(i) if f[..i].contains('%') => &f[i + 1..],
        _ => f,
    };
    let u = after.replace("%%", "%").trim().to_string();
    match u.as_str() {
        "" => None,
        "°" => Some("°C".into()),
        _ => Some(u),
    }
}

/// A state's reference: normally one UUID, for some states (IRoomController `temperatures`) an
/// array of UUIDs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StateRef {
    Uuid(String),
    Uuids(Vec<String>),
}

/// The device family a control belongs to; used for `devices_by_category`, filters, scopes and
/// tools. Decided by [`Home::family`] alone: a specific block (Jalousie, LightControllerV2,
/// IRoomControllerV2, ...) has its type's family; a generic block (Switch, Pushbutton,
/// TextState, ...) takes it from the `type` of its Loxone category ([`Family::of_category`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Family {
    Lighting,
    Blinds,
    Climate,
    Audio,
    Security,
    Access,
    Sensors,
    Energy,
    Other,
}

impl Family {
    pub const ALL: [Family; 9] = [
        Family::Lighting,
        Family::Blinds,
        Family::Climate,
        Family::Audio,
        Family::Security,
        Family::Access,
        Family::Sensors,
        Family::Energy,
        Family::Other,
    ];

    /// Lowercase name used in tool results and filters (`lighting`, `blinds`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Family::Lighting => "lighting",
            Family::Blinds => "blinds",
            Family::Climate => "climate",
            Family::Audio => "audio",
            Family::Security => "security",
            Family::Access => "access",
            Family::Sensors => "sensors",
            Family::Energy => "energy",
            Family::Other => "other",
        }
    }

    /// Parses a family word, [`fold`]ed as every name (case and accents ignored): the
    /// lowercase names and a few common synonyms (`lights`, `light`, `shading`, `rolladen`,
    /// `jalousie`, `heating`, `alarm`, `sensor`). The first step of [`Home::word`].
    pub fn parse(s: &str) -> Option<Family> {
        let s = fold(s);
        Some(match s.as_str() {
            "lighting" | "lights" | "light" => Family::Lighting,
            "blinds" | "blind" | "shading" | "rolladen" | "jalousie" | "shutters" => Family::Blinds,
            "climate" | "heating" | "temperature" => Family::Climate,
            "audio" | "multimedia" | "music" => Family::Audio,
            "security" | "alarm" => Family::Security,
            "access" | "gate" | "door" => Family::Access,
            "sensors" | "sensor" => Family::Sensors,
            "energy" => Family::Energy,
            "other" => Family::Other,
            _ => return None,
        })
    }
}

impl Family {
    /// The family a generic block gets from the `type` of its Loxone category (per Loxone
    /// structure file docs: `lights`, `shading`, `indoortemperature`, `multimedia`, `undefined`):
    /// lighting, blinds, climate, audio; anything else, or no category, is [`Family::Other`].
    pub fn of_category(kind: Option<&CategoryKind>) -> Family {
        match kind {
            Some(CategoryKind::Lights) => Family::Lighting,
            Some(CategoryKind::Shading) => Family::Blinds,
            Some(CategoryKind::IndoorTemperature) => Family::Climate,
            Some(CategoryKind::Multimedia) => Family::Audio,
            _ => Family::Other,
        }
    }
}

/// How a control type's family is decided: fixed by the type (a specific block), or by the
/// control's Loxone category (a generic block that can switch anything).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TypeFamily {
    Fixed(Family),
    ByCategory,
}

macro_rules! type_family {
    (ByCategory) => {
        TypeFamily::ByCategory
    };
    ($family:ident) => {
        TypeFamily::Fixed(Family::$family)
    };
}

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

macro_rules! control_kinds {
    ($($variant:ident => $name:literal, $family:ident;)*) => {
        /// Control `type` per Loxone structure file docs. Unknown types are kept verbatim in
        /// [`ControlKind::Unknown`] (with their raw states), never dropped.
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        pub enum ControlKind {
            $($variant,)*
            Unknown(String),
        }

        impl ControlKind {
            /// Maps the structure file's `type` string (exact, case-sensitive as Loxone writes it).
            pub fn from_type(s: &str) -> Self {
                match s {
                    $($name => Self::$variant,)*
                    other => Self::Unknown(other.to_string()),
                }
            }

            /// The Loxone type name, e.g. `"LightControllerV2"`.
            pub fn as_str(&self) -> &str {
                match self {
                    $(Self::$variant => $name,)*
                    Self::Unknown(s) => s,
                }
            }

            /// How this type's family is decided (the table below); unknown types are
            /// [`Family::Other`]. A control's family is [`Home::family`].
            pub fn type_family(&self) -> TypeFamily {
                match self {
                    $(Self::$variant => type_family!($family),)*
                    Self::Unknown(_) => TypeFamily::Fixed(Family::Other),
                }
            }
        }
    };
}

control_kinds! {
    Switch => "Switch", ByCategory;
    Pushbutton => "Pushbutton", ByCategory;
    TimedSwitch => "TimedSwitch", ByCategory;
    Dimmer => "Dimmer", Lighting;
    EibDimmer => "EIBDimmer", Lighting;
    LightController => "LightController", Lighting;
    LightControllerV2 => "LightControllerV2", Lighting;
    ColorPickerV2 => "ColorPickerV2", Lighting;
    ColorPicker => "Colorpicker", Lighting;
    CentralLightController => "CentralLightController", Lighting;
    Jalousie => "Jalousie", Blinds;
    CentralJalousie => "CentralJalousie", Blinds;
    Gate => "Gate", Access;
    IRoomController => "IRoomController", Climate;
    IRoomControllerV2 => "IRoomControllerV2", Climate;
    ClimateController => "ClimateController", Climate;
    AudioZone => "AudioZone", Audio;
    AudioZoneV2 => "AudioZoneV2", Audio;
    CentralAudioZone => "CentralAudioZone", Audio;
    Alarm => "Alarm", Security;
    CentralAlarm => "CentralAlarm", Security;
    SmokeAlarm => "SmokeAlarm", Security;
    AalSmartAlarm => "AalSmartAlarm", Security;
    AalEmergency => "AalEmergency", Security;
    InfoOnlyAnalog => "InfoOnlyAnalog", Sensors;
    InfoOnlyDigital => "InfoOnlyDigital", Sensors;
    InfoOnlyText => "InfoOnlyText", Sensors;
    TextState => "TextState", ByCategory;
    PresenceDetector => "PresenceDetector", Sensors;
    WindowMonitor => "WindowMonitor", Sensors;
    Meter => "Meter", Energy;
    EnergyManager => "EnergyManager", Energy;
    EnergyManager2 => "EnergyManager2", Energy;
    Fronius => "Fronius", Energy;
    LoadManager => "LoadManager", Energy;
    CarCharger => "CarCharger", Energy;
    Intercom => "Intercom", Access;
    IntercomV2 => "IntercomV2", Access;
    NfcCodeTouch => "NfcCodeTouch", Access;
    UpDownDigital => "UpDownDigital", ByCategory;
    LeftRightDigital => "LeftRightDigital", ByCategory;
    UpDownAnalog => "UpDownAnalog", ByCategory;
    LeftRightAnalog => "LeftRightAnalog", ByCategory;
    Slider => "Slider", ByCategory;
    ValueSelector => "ValueSelector", ByCategory;
    Radio => "Radio", ByCategory;
    TextInput => "TextInput", ByCategory;
}

impl ControlKind {
    /// Whether the type takes a brightness (percent 0-100) for `on`, `dim` and `bright`:
    /// Dimmer, EIBDimmer, LightControllerV2 (its master brightness) and ColorPickerV2; a
    /// switch only goes on or off. Tools that dim or report `dimmable` ask this.
    pub fn is_dimmable(&self) -> bool {
        matches!(
            self,
            ControlKind::Dimmer
                | ControlKind::EibDimmer
                | ControlKind::LightControllerV2
                | ControlKind::ColorPickerV2
        )
    }

    /// Whether the type is a central block (CentralLightController, CentralJalousie,
    /// CentralAudioZone, CentralAlarm): it commands the blocks it groups and reports nothing
    /// of its own, so room- and category-wide operations address the blocks, not it.
    pub fn is_central(&self) -> bool {
        matches!(
            self,
            ControlKind::CentralLightController
                | ControlKind::CentralJalousie
                | ControlKind::CentralAudioZone
                | ControlKind::CentralAlarm
        )
    }
}

impl fmt::Display for ControlKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Home {
    /// The device family of `c`: the one place that decides it (listing filters, lights,
    /// scopes, resources, name resolution all call it). A specific block has its type's family;
    /// a generic block (Switch, TimedSwitch, Pushbutton, TextState, ValueSelector, Slider,
    /// Radio, TextInput, Up/Down and Left/Right blocks) has its category's
    /// ([`Family::of_category`]), so a switch in a `shading` category (storm protection) is a
    /// blind's business and a socket in an `undefined` one is "other", not a light.
    pub fn family(&self, c: &Control) -> Family {
        match c.kind.type_family() {
            TypeFamily::Fixed(f) => f,
            TypeFamily::ByCategory => Family::of_category(
                c.category
                    .as_deref()
                    .and_then(|u| self.category(u))
                    .map(|k| &k.kind),
            ),
        }
    }

    /// Whether a top-level control is one of the lights that room- and house-wide calls switch:
    /// a control of the lighting family ([`Home::family`]: a generic block only when its Loxone
    /// category is a lighting one) that takes `on` and `off`, except the central controller.
    pub fn is_light(&self, c: &Control) -> bool {
        let switchable = !matches!(
            c.kind,
            ControlKind::CentralLightController
                | ControlKind::TextState
                | ControlKind::ValueSelector
                | ControlKind::Slider
                | ControlKind::Radio
                | ControlKind::TextInput
                | ControlKind::UpDownDigital
                | ControlKind::LeftRightDigital
                | ControlKind::UpDownAnalog
                | ControlKind::LeftRightAnalog
        );
        switchable && self.family(c) == Family::Lighting
    }

    /// The room with this UUID.
    pub fn room(&self, uuid: &str) -> Option<&Room> {
        self.rooms.iter().find(|r| r.uuid == uuid)
    }

    /// The category with this UUID.
    pub fn category(&self, uuid: &str) -> Option<&Category> {
        self.categories.iter().find(|c| c.uuid == uuid)
    }

    /// The control or sub-control with this `uuidAction`.
    pub fn control(&self, uuid: &str) -> Option<&Control> {
        fn find<'a>(list: &'a [Control], uuid: &str) -> Option<&'a Control> {
            for c in list {
                if c.uuid == uuid {
                    return Some(c);
                }
                if let Some(s) = find(&c.sub_controls, uuid) {
                    return Some(s);
                }
            }
            None
        }
        find(&self.controls, uuid)
    }

    /// Name of the room a control is in, if any.
    pub fn room_name(&self, control: &Control) -> Option<&str> {
        control
            .room
            .as_deref()
            .and_then(|r| self.room(r))
            .map(|r| r.name.as_str())
    }

    /// Whether operating `control` can open a way into the house: gates, door openers,
    /// intercoms and code pads (family Access), and any control the owner filed under an
    /// access category ("Zugang", "Access", "Türen", ...) or named like a door opener or lock
    /// ("Türöffner", "Haustür", "Garage Door", "Schloss"). A push button called "Türöffner" is
    /// a Pushbutton to Loxone but a front door to its owner, so its name counts.
    pub fn guards_access(&self, control: &Control) -> bool {
        if self.family(control) == Family::Access {
            return true;
        }
        // Only generic outputs can be wired to a door; a dimmer or a blind cannot open one.
        let generic = matches!(
            control.kind,
            ControlKind::Pushbutton
                | ControlKind::Switch
                | ControlKind::TimedSwitch
                | ControlKind::UpDownDigital
                | ControlKind::LeftRightDigital
                | ControlKind::Unknown(_)
        );
        if !generic {
            return false;
        }
        let category = control
            .category
            .as_deref()
            .and_then(|u| self.category(u))
            .map(|c| fold(&c.name))
            .unwrap_or_default();
        let category_words = ["zugang", "access", "tur", "door", "tor"];
        if category
            .split(' ')
            .any(|w| category_words.iter().any(|k| w.starts_with(k)))
        {
            return true;
        }
        // Folded words: "Türöffner" -> "turoffner", "Garagentor" -> "garagentor". Endings
        // are chosen so that "Raumtemperatur", "Deckenventilator" or "Motor" do not match.
        let name = fold(&control.name);
        let prefixes = ["tur", "door", "tor", "gate", "schloss", "lock", "riegel"];
        let endings = [
            "offner", "opener", "schloss", "door", "gate", "stur", "ntur", "rtur", "stor", "ntor",
            "ftor",
        ];
        name.split(' ').any(|w| {
            prefixes.iter().any(|k| w.starts_with(k)) || endings.iter().any(|k| w.ends_with(k))
        })
    }

    /// Number of controls including sub-controls (recursively).
    pub fn count_all_controls(&self) -> usize {
        fn count(list: &[Control]) -> usize {
            list.iter().map(|c| 1 + count(&c.sub_controls)).sum()
        }
        count(&self.controls)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_round_trip_and_unknown_is_kept() {
        assert_eq!(
            ControlKind::from_type("LightControllerV2"),
            ControlKind::LightControllerV2
        );
        assert_eq!(ControlKind::from_type("EIBDimmer").as_str(), "EIBDimmer");
        let k = ControlKind::from_type("SaunaVapor");
        assert_eq!(k, ControlKind::Unknown("SaunaVapor".into()));
        assert_eq!(k.as_str(), "SaunaVapor");
        assert_eq!(k.type_family(), TypeFamily::Fixed(Family::Other));
        assert_eq!(
            ControlKind::Jalousie.type_family(),
            TypeFamily::Fixed(Family::Blinds)
        );
        assert_eq!(ControlKind::Switch.type_family(), TypeFamily::ByCategory);
    }

    #[test]
    fn family_parse_accepts_synonyms() {
        assert_eq!(Family::parse("Lights"), Some(Family::Lighting));
        assert_eq!(Family::parse("rolladen"), Some(Family::Blinds));
        assert_eq!(Family::parse("nope"), None);
    }
}
