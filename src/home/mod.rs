//! The controller-independent home model: rooms, categories, controls ([`model`]), their live
//! values ([`state`]), name resolution ([`resolve`]), the Miniserver's own alerts ([`alerts`])
//! and the stop that halts every command ([`stop`]). This is where tools meet the Loxone
//! adapter; it knows nothing of MCP or HTTP.

pub mod action;
pub mod alerts;
pub mod bounds;
pub mod bus;
pub mod camera;
pub mod energy;
pub mod history;
pub mod house;
pub mod link;
pub mod model;
pub mod names;
pub mod permission;
pub mod pin;
pub mod primary;
pub mod resolve;
pub mod risk;
pub mod scope;
pub mod state;
pub mod statistic;
pub mod stop;
pub mod time;
pub mod words;

pub use action::{Action, OverrideTimer, RoomMode};
pub use alerts::{
    Alert, AlertAction, AlertEvent, AlertOp, AlertsSnapshot, Notification, NotificationLevel,
    Severity,
};
pub use bus::{Bus, Change, Event, Subscription};
pub use camera::{CameraFailure, CameraKind, CameraPicture, Obtained, PictureAsk, PictureRequest};
pub use house::{
    Command, CommandLimits, Controller, ControllerError, House, Outcome, RejectedStructure, Secret,
};
pub use link::{LinkMode, LinkSnapshot, LinkStatus};
pub use model::{
    Category, CategoryKind, Control, ControlKind, Family, Home, MessageCenter, MsInfo, Room,
    StateRef, StructureProblem, StructureWarning, TypeFamily,
};
pub use permission::{Permission, Profile, ToolFacts};
pub use pin::{PinSource, Typist};
pub use primary::Primary;
pub use risk::{Risk, RiskRules};
pub use scope::{Access, Denied, Scope};
pub use state::{Source, StateStore, StateValue, Value};
pub use stop::{AdminStop, AdminStops, StopStatus, SwitchReading};
pub use time::{HouseTime, LOXONE_EPOCH_UNIX};
pub use words::{UnknownWord, Word};
