//! Who is calling a tool ([`Caller`]): its key's reach, the way back to its MCP client
//! (progress, log messages), and the one decision of who may say yes to a command that needs
//! confirmation ([`Caller::confirm`]; issue 20). A person's yes and the visualisation password
//! are asked through the narrow seam [`crate::mcp::person::Person`], which the MCP layer
//! implements (elicitation, `input_required` rounds, the password page): tools never see
//! JSON-RPC.

use serde_json::{json, Value};

use super::{action_label, confirm, password, ToolError};
use crate::home::{Action, Control, ControllerError, House, Outcome, Secret, Typist};
use crate::mcp::person::{Answer, Person, Unasked};
use crate::mcp::{LogLevel, RequestContext};

pub use crate::mcp::person::ToConfirm;

/// Who is calling, for the audit log of writes, and the way back to the MCP client of the
/// request being served (progress, log messages, a person's yes).
#[derive(Debug, Clone)]
pub struct Caller {
    pub label: String,
    /// The MCP request being served; `None` outside MCP (REST without a session, resources,
    /// tests).
    pub request: Option<RequestContext>,
    /// Whether this call may send `notifications/progress` (false for the steps of a workflow:
    /// the workflow reports per step, and progress must only grow).
    pub reports_progress: bool,
    /// Who already agreed to what this call does (the enclosing workflow was confirmed):
    /// tools that ask for confirmation go ahead, except that opening a gate or door gets a
    /// person's answer of its own.
    pub confirmed: Option<confirm::ConfirmedBy>,
}

/// The logger name of `notifications/message` sent for writes.
pub const LOGGER: &str = "home-mcp";

/// What came of "do this?" ([`Caller::confirm`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Confirmation {
    /// Confirmed (by whom): act.
    Go(confirm::ConfirmedBy),
    /// The user declined, cancelled or did not answer: nothing is done (`reason` says which).
    Cancelled(String),
    /// Nobody confirmed, where the model could (the key allows it, or an in-process caller):
    /// answer with the dry run and `confirmation_required: true`.
    DryRun(Option<String>),
}

impl Confirmation {
    /// Who confirmed, when the command may go.
    pub fn by(&self) -> Option<confirm::ConfirmedBy> {
        match self {
            Confirmation::Go(by) => Some(*by),
            _ => None,
        }
    }
}

/// Why nobody was asked, as the tool's error: a refusal (`unreachable` the message when the
/// client cannot be asked at all), or (MCP 2026-07-28) the question for the retry.
fn unasked(e: Unasked, unreachable: impl FnOnce() -> String) -> ToolError {
    match e {
        Unasked::Refused { code, message } => ToolError::Refused { code, message },
        Unasked::Retry(ask) => ToolError::InputRequired(ask),
        Unasked::Unreachable => ToolError::Refused {
            code: "HUMAN_CONFIRMATION_REQUIRED",
            message: unreachable(),
        },
    }
}

impl Caller {
    /// A caller outside MCP (no client to report to).
    pub fn new(label: impl Into<String>) -> Self {
        Caller {
            label: label.into(),
            request: None,
            reports_progress: true,
            confirmed: None,
        }
    }

    /// The same caller working for an enclosing call (a workflow step): another label, no
    /// progress of its own, and `confirmed` as given.
    pub fn nested(
        &self,
        label: impl Into<String>,
        confirmed: Option<confirm::ConfirmedBy>,
    ) -> Self {
        Caller {
            label: label.into(),
            request: self.request.clone(),
            reports_progress: false,
            confirmed,
        }
    }

    /// Whether the client cancelled the request (a task's `tasks/cancel`): batches send
    /// nothing more and workflows start no further step.
    pub fn cancelled(&self) -> bool {
        self.request.as_ref().is_some_and(|r| r.is_cancelled())
    }

    /// `notifications/progress` (when the request has a progress token): `done` of `total`.
    pub fn progress(&self, done: usize, total: usize, message: &str) {
        if let (true, Some(r)) = (self.reports_progress, &self.request) {
            r.progress(done as f64, Some(total as f64), Some(message));
        }
    }

    /// Sends a `notifications/message` (logger `home-mcp`) when the session's level admits it.
    pub fn log(&self, level: LogLevel, data: Value) {
        if let Some(r) = &self.request {
            r.log(level, LOGGER, data);
        }
    }

    /// Writes to the house as this caller, and tells the client (a `notifications/message` of
    /// level info, warning when the write failed).
    pub fn act(
        &self,
        house: &House,
        c: &Control,
        action: &Action,
    ) -> Result<Outcome, ControllerError> {
        self.check_access(house, c)?;
        let r = house.act(c, action, &self.label);
        self.log_write(house, c, action, &r);
        r
    }

    /// Who types a visualisation password on the page for this caller: the ledger its wrong
    /// passwords count in ([`crate::home::pin`]; the identity requests are bound to,
    /// [`crate::mcp::input::caller_identity`]: the key or OAuth grant, else the client) and
    /// the name the owner sees (the key's name, masked id and address).
    pub fn typist(&self) -> Typist {
        let Some(r) = &self.request else {
            return Typist {
                id: format!("in-process {}", self.label),
                name: self.label.clone(),
            };
        };
        let c = r.caller.as_ref();
        Typist {
            id: crate::mcp::input::caller_identity(r.transport, c),
            name: match c {
                Some(c) => format!(
                    "{}{}{}",
                    c.key_name,
                    c.key_id
                        .as_deref()
                        .map(|k| format!(" ({k})"))
                        .unwrap_or_default(),
                    c.ip.map(|ip| format!(" from {ip}")).unwrap_or_default()
                ),
                None => r.transport.to_string(),
            },
        }
    }

    /// What the request's API key may see and operate (`None`: the whole house).
    pub fn access(&self) -> Option<&crate::home::Access> {
        self.request
            .as_ref()
            .and_then(|r| r.caller.as_ref())
            .and_then(|c| c.access.as_deref())
    }

    /// Whether the key's owner allows it to open gates, doors and locks (each opening is
    /// still confirmed by a person).
    pub fn opens_doors(&self) -> bool {
        self.request
            .as_ref()
            .and_then(|r| r.caller.as_ref())
            .is_some_and(|c| c.open_doors)
    }

    /// Whether the request's key is a device key (limited to the controls of its allow-list).
    pub fn limited_to_devices(&self) -> bool {
        self.access().is_some_and(|a| a.limits_devices())
    }

    /// [`ControllerError::OutOfScope`] when the caller may not touch `c`
    /// ([`crate::home::Access::permits`]): the last check before any command, whatever tool,
    /// batch or workflow step sends it.
    pub(crate) fn check_access(&self, house: &House, c: &Control) -> Result<(), ControllerError> {
        self.permits(&house.home(), c).map_err(|d| {
            log::info!("refused: {d}");
            ControllerError::OutOfScope(d.to_string())
        })
    }

    /// [`crate::home::Access::permits`] for this caller (always `Ok` without a limited key).
    pub fn permits(
        &self,
        home: &crate::home::Home,
        c: &Control,
    ) -> Result<(), crate::home::Denied> {
        match self.access() {
            Some(a) => a.permits(home, c),
            None => Ok(()),
        }
    }

    /// [`House::act_secured`] as this caller, logged like [`Caller::act`] (never the code); a
    /// password typed on the page counts for this caller's [`Caller::typist`].
    pub fn act_secured(
        &self,
        house: &House,
        c: &Control,
        action: &Action,
        code: Option<&Secret>,
    ) -> Result<Outcome, ControllerError> {
        self.check_access(house, c)?;
        let r = house.act_secured(c, action, code, &self.typist(), &self.label);
        self.log_write(house, c, action, &r);
        r
    }

    fn log_write(
        &self,
        house: &House,
        c: &Control,
        action: &Action,
        r: &Result<Outcome, ControllerError>,
    ) {
        if self.request.is_none() {
            return;
        }
        let home = house.home();
        let mut data = json!({
            "event": "write",
            "device": c.name,
            "uuid": c.uuid,
            "room": home.room_name(c),
            "action": action_label(action),
            "outcome": if r.is_ok() { "ok" } else { "error" },
        });
        let level = match r {
            Ok(_) => LogLevel::Info,
            Err(e) => {
                data["error"] = json!({"code": e.code(), "message": e.to_string()});
                LogLevel::Warning
            }
        };
        self.log(level, data);
    }

    /// The person behind the MCP request, who can be asked ([`Person`]).
    fn person(&self) -> Option<&dyn Person> {
        self.request.as_ref()?.person.as_deref()
    }

    /// Whether the command `ask` describes may go, and who confirmed it: the one decision of
    /// issue 20.
    ///
    /// - the enclosing workflow was confirmed: go, except for opening a gate or door, which
    ///   gets a question of its own;
    /// - in process (no MCP request): `confirm: true` goes, else the dry run;
    /// - the key's owner lets the model confirm this class ([`Risk::model_may_confirm`]) and
    ///   the model passed `confirm: true`: go;
    /// - a client that can ask its user: the person is asked ([`Person::yes`]: a form with a
    ///   yes/no naming the control, its room and the action); `confirm: true` does not count;
    /// - else nothing is sent: the dry run where the key lets the model confirm, otherwise
    ///   [`ToolError::Refused`] `HUMAN_CONFIRMATION_REQUIRED` saying what needs a human and
    ///   how the owner can allow otherwise.
    ///
    /// [`Risk::model_may_confirm`]: crate::home::Risk::model_may_confirm
    pub fn confirm(
        &self,
        confirm: Option<bool>,
        ask: &ToConfirm,
    ) -> Result<Confirmation, ToolError> {
        use confirm::ConfirmedBy;
        match self.confirmed {
            // A gate or door gets a question of its own, whoever confirmed the workflow.
            Some(_) if ask.risk == crate::home::Risk::Access => {}
            Some(ConfirmedBy::Model) => return Ok(Confirmation::Go(ConfirmedBy::Model)),
            Some(_) => return Ok(Confirmation::Go(ConfirmedBy::Workflow)),
            None => {}
        }
        let Some(r) = self.request.as_ref() else {
            return Ok(if confirm == Some(true) {
                Confirmation::Go(ConfirmedBy::Owner)
            } else {
                Confirmation::DryRun(None)
            });
        };
        let model_may =
            ask.risk.model_may_confirm() && r.caller.as_ref().is_some_and(|c| c.model_confirms);
        if model_may && confirm == Some(true) {
            return Ok(Confirmation::Go(ConfirmedBy::Model));
        }
        let asked = match self.person() {
            Some(person) => person.yes(ask, self.confirmed.is_some()),
            None => Err(Unasked::Unreachable),
        };
        match asked {
            Ok(Answer::Yes) => Ok(Confirmation::Go(ConfirmedBy::User)),
            Ok(Answer::No(reason)) => Ok(Confirmation::Cancelled(reason)),
            Err(Unasked::Unreachable) if model_may => Ok(Confirmation::DryRun(None)),
            Err(e) => Err(unasked(e, || {
                format!(
                "nothing was sent: this {} action needs a person's answer (\"{}\"), and this MCP client cannot ask its user (it did not declare the elicitation capability). {}",
                ask.risk.as_str(),
                ask.question,
                if ask.risk.model_may_confirm() {
                    "Use a client that supports elicitation, or the server's owner can let the model confirm such actions for this key (home-mcp keys update KEY --model-confirms yes)."
                } else {
                    "Use a client that supports elicitation; gates and doors always need a person's answer."
                }
            )
            })),
        }
    }

    /// Where the visualisation password for a command to `c` comes from
    /// ([`password::source`]): configured on the Pi, this server's page (when the person can
    /// be sent there, [`Person::page`]), or nowhere.
    pub fn password_source(&self, house: &House, c: &Control) -> password::Source {
        let opener = self.person().and_then(|p| p.page());
        password::source(c.is_secured, house.has_visu_password(), opener)
    }

    /// Asks the user for the visualisation password on this server's page, offered as
    /// `opener` says ([`Caller::password_source`]): the password typed on the page is the
    /// person's confirmation ([`confirm::ConfirmedBy::Page`]). `Ok(Err(reason))` when nobody
    /// gave it (declined, cancelled, expired, another command): nothing is sent. Errors: no
    /// URL-mode client ([`ToolError::Refused`] `HUMAN_CONFIRMATION_REQUIRED`), too many pages
    /// open (`RATE_LIMIT_EXCEEDED`), and for a 2026-07-28 request the question itself
    /// ([`ToolError::InputRequired`]).
    pub fn ask_password(
        &self,
        ask: &ToConfirm,
        opener: password::Opener,
    ) -> Result<Result<Secret, String>, ToolError> {
        let asked = match self.person() {
            Some(person) => person.password(ask, opener, self.confirmed.is_some()),
            None => Err(Unasked::Unreachable),
        };
        asked.map_err(|e| unasked(e, || "nothing was sent: the visualisation password is typed by a person on this server's page, and this MCP client cannot open it (it did not declare URL-mode elicitation)".into()))
    }
}
