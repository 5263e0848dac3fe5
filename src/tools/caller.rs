//! Who is calling a tool ([`Caller`]) and how a person's yes is asked for: the confirmation of a
//! risky command ([`Caller::confirm`]: elicitation, a MCP 2026-07-28 `input_required` round, or
//! the dry run) and the visualisation password typed on this server's page
//! ([`Caller::ask_password`]). Tools call these; they never see JSON-RPC.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use super::{action_label, confirm, password, ToolError};
use crate::home::{Action, Control, ControllerError, House, Outcome, Secret};
use crate::mcp::input::{ElicitAnswer, InputKind, InputRequest, InputRequired, Round};
use crate::mcp::{LogLevel, RequestContext};

/// Who is calling, for the audit log of writes, and the way back to the MCP client of the
/// request being served (progress, log messages, confirmation by elicitation).
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
    /// The pending confirmations of the server ([`confirm::Pending`]).
    pub pending: Arc<confirm::Pending>,
    /// The server's open password pages ([`password::PasswordPages`]).
    pub passwords: Arc<password::PasswordPages>,
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

/// What a command that needs confirmation is, for [`Caller::confirm`].
pub struct ToConfirm<'a> {
    pub risk: crate::home::Risk,
    pub tool: &'a str,
    /// UUIDs of the controls (or the workflow id).
    pub controls: Vec<String>,
    /// The command with its values.
    pub command: String,
    /// The question in plain words, naming the control(s), room(s) and action.
    pub question: &'a str,
}

impl Caller {
    /// A caller outside MCP (no client to report to).
    pub fn new(label: impl Into<String>) -> Self {
        Caller {
            label: label.into(),
            request: None,
            reports_progress: true,
            confirmed: None,
            pending: Arc::new(confirm::Pending::default()),
            passwords: Arc::new(password::PasswordPages::default()),
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
            pending: self.pending.clone(),
            passwords: self.passwords.clone(),
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

    /// [`House::act_secured`] as this caller, logged like [`Caller::act`] (never the code).
    pub fn act_secured(
        &self,
        house: &House,
        c: &Control,
        action: &Action,
        code: Option<&Secret>,
    ) -> Result<Outcome, ControllerError> {
        self.check_access(house, c)?;
        let r = house.act_secured(c, action, code, &self.label);
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

    /// The key ([`crate::mcp::Caller::principal`], else its name) or session a confirmation
    /// is bound to.
    fn binding_key(&self) -> String {
        let r = self.request.as_ref();
        r.and_then(|r| r.caller.as_ref())
            .map(|c| c.principal.clone().unwrap_or_else(|| c.key_name.clone()))
            .or_else(|| r.and_then(|r| r.session_id.clone()))
            .unwrap_or_else(|| self.label.clone())
    }

    /// Whether the command `ask` describes may go, and who confirmed it: the one decision of
    /// issue 20.
    ///
    /// - the enclosing workflow was confirmed: go, except for opening a gate or door, which
    ///   gets a question of its own;
    /// - in process (no MCP request): `confirm: true` goes, else the dry run;
    /// - the key's owner lets the model confirm this class ([`Risk::model_may_confirm`]) and
    ///   the model passed `confirm: true`: go;
    /// - a client that declared elicitation: the user is asked (a form with a yes/no naming
    ///   the control, its room and the action); `confirm: true` does not count;
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
        // MCP 2026-07-28: the question goes back as an `input_required` result and the
        // answer comes with the retry (not inside a workflow run: a retry would run its earlier
        // steps again).
        if let Some(round) = r
            .input
            .as_deref()
            .filter(|i| i.can_ask(InputKind::ElicitationForm))
        {
            if self.confirmed.is_some() {
                return Err(ToolError::Refused {
                    code: "HUMAN_CONFIRMATION_REQUIRED",
                    message: format!(
                        "nothing was sent: \"{}\" needs a person's answer of its own, which this protocol version cannot ask for in the middle of a workflow; do it on its own",
                        ask.question
                    ),
                });
            }
            return self.confirm_by_round(round, ask);
        }
        let peer = r.peer.as_ref().filter(|_| r.can_elicit());
        let Some(peer) = peer else {
            if model_may {
                return Ok(Confirmation::DryRun(None));
            }
            return Err(ToolError::Refused {
                code: "HUMAN_CONFIRMATION_REQUIRED",
                message: format!(
                    "nothing was sent: this {} action needs a person's answer (\"{}\"), and this MCP client cannot ask its user (it did not declare the elicitation capability). {}",
                    ask.risk.as_str(),
                    ask.question,
                    if ask.risk.model_may_confirm() {
                        "Use a client that supports elicitation, or the server's owner can let the model confirm such actions for this key (home-mcp keys update KEY --model-confirms yes)."
                    } else {
                        "Use a client that supports elicitation; gates and doors always need a person's answer."
                    }
                ),
            });
        };
        let binding = self.binding(ask);
        let id = self
            .pending
            .file(binding.clone(), std::time::Instant::now())
            .map_err(|e| ToolError::Refused {
                code: "RATE_LIMIT_EXCEEDED",
                message: format!("nothing was sent: {e}"),
            })?;
        let params = json!({
            "message": ask.question,
            "requestedSchema": confirmation_form(ask.question),
        });
        let answer = peer
            .0
            .request("elicitation/create", params, self.pending.lifetime());
        let outcome = match answer {
            Ok(answer) => {
                let action = answer["action"].as_str().unwrap_or("cancel");
                let yes = answer
                    .pointer("/content/confirm")
                    .and_then(Value::as_bool)
                    .unwrap_or(false);
                match (action, yes) {
                    ("accept", true) => {
                        match self
                            .pending
                            .redeem(&id, &binding, std::time::Instant::now())
                        {
                            Ok(()) => return Ok(Confirmation::Go(ConfirmedBy::User)),
                            Err(e) => Confirmation::Cancelled(e.to_string()),
                        }
                    }
                    ("accept", false) => Confirmation::Cancelled("the user did not confirm".into()),
                    ("decline", _) => Confirmation::Cancelled("the user declined".into()),
                    _ => Confirmation::Cancelled("the user cancelled".into()),
                }
            }
            Err(e) => {
                log::warn!("elicitation for {}: {}", self.label, e.message);
                Confirmation::Cancelled(format!("the user's answer did not arrive ({})", e.message))
            }
        };
        self.pending.drop_id(&id);
        Ok(outcome)
    }

    /// Where the visualisation password for a command to `c` comes from
    /// ([`password::source`]): configured on the Pi, a page of this server, or nowhere. The
    /// page is offered to a MCP 2026-07-28 request (it carries a [`Round`]) by an
    /// `input_required` result when the client declared URL-mode elicitation in `_meta` and
    /// the request came over HTTP; to an older request by `elicitation/create` when the
    /// session declared it ([`RequestContext::can_elicit_url`]).
    pub fn password_source(&self, house: &House, c: &Control) -> password::Source {
        use password::Opener;
        let opener = self
            .request
            .as_ref()
            .and_then(|r| match r.input.as_deref() {
                Some(round) => (r.origin.is_some() && round.can_ask(InputKind::ElicitationUrl))
                    .then_some(Opener::InputRequired),
                None => r.can_elicit_url().then_some(Opener::Elicitation),
            });
        password::source(c.is_secured, house.has_visu_password(), opener)
    }

    /// Asks the user for the visualisation password on this server's page, offered as
    /// `opener` says ([`Caller::password_source`]): the password typed on the page is the
    /// person's confirmation ([`confirm::ConfirmedBy::Page`]). `Ok(Err(reason))` when nobody
    /// gave it (declined, cancelled, expired, another command): nothing is sent. Errors: no
    /// URL-mode client ([`ToolError::Refused`] `HUMAN_CONFIRMATION_REQUIRED`), too many pages
    /// open (`RATE_LIMIT_EXCEEDED`), and for a 2026-07-28 request the question itself
    /// ([`ToolError::InputRequired`], see [`Caller::ask_password_by_round`]).
    pub fn ask_password(
        &self,
        ask: &ToConfirm,
        opener: password::Opener,
    ) -> Result<Result<Secret, String>, ToolError> {
        match opener {
            password::Opener::Elicitation => self.ask_password_by_elicitation(ask),
            password::Opener::InputRequired => self.ask_password_by_round(ask),
        }
    }

    /// The page for a MCP 2025-11-25 session: files a page for the command `ask` describes
    /// ([`password::PasswordPages::url_request`]), sends the URL-mode `elicitation/create`
    /// naming it, and waits (at most the page's lifetime) for the password typed there; then
    /// `notifications/elicitation/complete`.
    fn ask_password_by_elicitation(
        &self,
        ask: &ToConfirm,
    ) -> Result<Result<Secret, String>, ToolError> {
        let r = self.request.as_ref().filter(|r| r.can_elicit_url());
        let (Some(r), Some(peer)) = (r, r.and_then(|r| r.peer.as_ref())) else {
            return Err(ToolError::Refused {
                code: "HUMAN_CONFIRMATION_REQUIRED",
                message: "nothing was sent: the visualisation password is typed by a person on this server's page, and this MCP client cannot open it (it did not declare URL-mode elicitation)".into(),
            });
        };
        let binding = self.binding(ask);
        let origin = r.origin.as_deref().unwrap_or_default();
        let request = self
            .passwords
            .url_request(
                origin,
                binding.clone(),
                ask.question,
                std::time::Instant::now(),
            )
            .map_err(|e| ToolError::Refused {
                code: "RATE_LIMIT_EXCEEDED",
                message: format!("nothing was sent: {e}"),
            })?;
        let id = request.elicitation_id.clone();
        let message = page_message(ask.question);
        let answer = peer.0.request(
            "elicitation/create",
            request.params(&message),
            self.passwords.lifetime(),
        );
        let opened = match answer {
            Ok(a) => match a["action"].as_str() {
                Some("accept") => Ok(()),
                Some("decline") => Err("the user declined".to_string()),
                _ => Err("the user cancelled".to_string()),
            },
            Err(e) => {
                log::warn!("elicitation for {}: {}", self.label, e.message);
                Err(format!("the user's answer did not arrive ({})", e.message))
            }
        };
        if let Err(reason) = opened {
            self.passwords.drop_id(&id);
            return Ok(Err(reason));
        }
        let outcome = self.passwords.wait(&id, &binding);
        peer.0.notify(
            "notifications/elicitation/complete",
            json!({"elicitationId": id}),
        );
        Ok(outcome.map_err(|e| e.to_string()))
    }

    /// The page for a MCP 2026-07-28 request whose client declared URL-mode elicitation (the
    /// spec's URL mode inside `inputRequests`):
    ///
    /// - first call: files a page for the command `ask` describes and answers `input_required`
    ///   with the URL-mode request under [`PASSWORD_KEY`], the page's id sealed into
    ///   `requestState` (bound by the MCP core to the caller, tool and arguments) for the
    ///   page's lifetime;
    /// - the retry with `accept` takes the password the page received
    ///   ([`password::PasswordPages::take`]: once, within its lifetime, for the same key, tool,
    ///   control and command); a page nobody has answered yet is offered again (another
    ///   `input_required`, the spec's answer while the out-of-band interaction is not complete:
    ///   the worker never waits for a person);
    /// - `decline` or `cancel`: the page is withdrawn, nothing is sent;
    /// - a retry without an answer: the old page is withdrawn and a new one offered.
    ///
    /// Not inside a workflow run (a retry would run its earlier steps again).
    fn ask_password_by_round(&self, ask: &ToConfirm) -> Result<Result<Secret, String>, ToolError> {
        let r = self.request.as_ref();
        let (Some(round), Some(origin)) = (
            r.and_then(|r| r.input.as_deref())
                .filter(|i| i.can_ask(InputKind::ElicitationUrl)),
            r.and_then(|r| r.origin.as_deref()),
        ) else {
            return Err(ToolError::Refused {
                code: "HUMAN_CONFIRMATION_REQUIRED",
                message: "nothing was sent: the visualisation password is typed by a person on this server's page, and this MCP client cannot open it (it did not declare URL-mode elicitation)".into(),
            });
        };
        if self.confirmed.is_some() {
            return Err(ToolError::Refused {
                code: "HUMAN_CONFIRMATION_REQUIRED",
                message: format!(
                    "nothing was sent: \"{}\" needs the visualisation password typed on this server's page, which this protocol version cannot offer in the middle of a workflow; do it on its own",
                    ask.question
                ),
            });
        }
        let now = std::time::Instant::now();
        let binding = self.binding(ask);
        let filed = round
            .state()
            .and_then(|s| s.get(STATE_PASSWORD_PAGE))
            .and_then(Value::as_str);
        if let (Some(id), Some(answer)) = (filed, round.elicitation(PASSWORD_KEY)) {
            let reason = match answer {
                ElicitAnswer::Accept(_) => match self.passwords.take(id, &binding, now) {
                    Ok(password) => return Ok(Ok(password)),
                    Err(password::NoPassword::Unanswered) => {
                        match self.passwords.reopen(origin, id, &binding, now) {
                            Some((page, left)) => {
                                let message = format!(
                                    "{} The page is still waiting for the Loxone visualisation password: enter it there, then continue.",
                                    ask.question
                                );
                                return Err(page_round(round, &page, message, left));
                            }
                            // Answered (or expired) in between.
                            None => match self.passwords.take(id, &binding, now) {
                                Ok(password) => return Ok(Ok(password)),
                                Err(e) => e.to_string(),
                            },
                        }
                    }
                    Err(e) => e.to_string(),
                },
                ElicitAnswer::Decline => "the user declined".into(),
                ElicitAnswer::Cancel => "the user cancelled".into(),
            };
            self.passwords.drop_id(id);
            return Ok(Err(reason));
        }
        if let Some(id) = filed {
            self.passwords.drop_id(id);
        }
        let page = self
            .passwords
            .url_request(origin, binding, ask.question, now)
            .map_err(|e| ToolError::Refused {
                code: "RATE_LIMIT_EXCEEDED",
                message: format!("nothing was sent: {e}"),
            })?;
        Err(page_round(
            round,
            &page,
            page_message(ask.question),
            self.passwords.lifetime(),
        ))
    }

    /// The [`confirm::Binding`] of the command `ask` describes, for this caller.
    fn binding(&self, ask: &ToConfirm) -> confirm::Binding {
        confirm::Binding {
            key: self.binding_key(),
            tool: ask.tool.to_string(),
            controls: {
                let mut c = ask.controls.clone();
                c.sort_unstable();
                c
            },
            command: ask.command.clone(),
            risk: ask.risk,
        }
    }

    /// [`Caller::confirm`] for a MCP 2026-07-28 client that declared elicitation: the first
    /// call files a [`confirm::Pending`] confirmation and answers with the question as an
    /// `input_required` result whose sealed `requestState` names it; the retry with the
    /// user's answer redeems it (once, within its lifetime, for the same binding) and goes,
    /// or is cancelled. A retry without an answer, or without the state (the MCP core has
    /// already refused a tampered, expired or foreign one), is asked again.
    fn confirm_by_round(&self, round: &Round, ask: &ToConfirm) -> Result<Confirmation, ToolError> {
        use confirm::ConfirmedBy;
        let now = std::time::Instant::now();
        let binding = self.binding(ask);
        let filed = round
            .state()
            .and_then(|s| s.get(STATE_CONFIRMATION))
            .and_then(Value::as_str);
        if let (Some(id), Some(answer)) = (filed, round.elicitation(CONFIRM_KEY)) {
            let outcome = match answer {
                ElicitAnswer::Accept(c) if c.get("confirm") == Some(&Value::Bool(true)) => {
                    return Ok(match self.pending.redeem(id, &binding, now) {
                        Ok(()) => Confirmation::Go(ConfirmedBy::User),
                        Err(e) => Confirmation::Cancelled(e.to_string()),
                    });
                }
                ElicitAnswer::Accept(_) => {
                    Confirmation::Cancelled("the user did not confirm".into())
                }
                ElicitAnswer::Decline => Confirmation::Cancelled("the user declined".into()),
                ElicitAnswer::Cancel => Confirmation::Cancelled("the user cancelled".into()),
            };
            self.pending.drop_id(id);
            return Ok(outcome);
        }
        if let Some(id) = filed {
            self.pending.drop_id(id);
        }
        let id = self
            .pending
            .file(binding, now)
            .map_err(|e| ToolError::Refused {
                code: "RATE_LIMIT_EXCEEDED",
                message: format!("nothing was sent: {e}"),
            })?;
        Err(ToolError::InputRequired(
            round.ask(
                InputRequired::new()
                    .ask(
                        CONFIRM_KEY,
                        InputRequest::Elicitation {
                            message: ask.question.to_string(),
                            requested_schema: confirmation_form(ask.question),
                        },
                    )
                    .with_state(json!({ STATE_CONFIRMATION: id }))
                    .with_lifetime(self.pending.lifetime()),
            ),
        ))
    }
}

/// The key of the password page's URL-mode request in `inputRequests` / `inputResponses`.
const PASSWORD_KEY: &str = "visu_password_page";

/// The member of the sealed `requestState` naming the password page (its id; the client may
/// read it: the id alone opens the page, which it was given anyway).
const STATE_PASSWORD_PAGE: &str = "password_page";

/// The `input_required` answer offering `page` (URL mode, under [`PASSWORD_KEY`]) with its id
/// sealed into `requestState` for `lifetime` (what the page has left).
fn page_round(
    round: &Round,
    page: &password::UrlRequest,
    message: String,
    lifetime: Duration,
) -> ToolError {
    ToolError::InputRequired(
        round.ask(
            InputRequired::new()
                .ask(
                    PASSWORD_KEY,
                    InputRequest::ElicitationUrl {
                        message,
                        url: page.url.clone(),
                        elicitation_id: page.elicitation_id.clone(),
                    },
                )
                .with_state(json!({ STATE_PASSWORD_PAGE: page.elicitation_id }))
                .with_lifetime(lifetime),
        ),
    )
}

/// The message of the URL-mode request that opens a password page: the question, and what the
/// page is for.
fn page_message(question: &str) -> String {
    format!("{question} Open the page to enter the Loxone visualisation password.")
}

/// The key of the confirmation question in `inputRequests` / `inputResponses`.
const CONFIRM_KEY: &str = "confirm";

/// The member of the sealed `requestState` naming the pending confirmation.
const STATE_CONFIRMATION: &str = "confirmation";

/// The form of a confirmation question: one required boolean `confirm`, false by default.
fn confirmation_form(question: &str) -> Value {
    json!({
        "type": "object",
        "properties": {
            "confirm": {
                "type": "boolean",
                "title": "Confirm",
                "description": question,
                "default": false
            }
        },
        "required": ["confirm"]
    })
}
