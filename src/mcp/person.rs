//! The person behind a request, as the tools may ask them (issue 20): the narrow seam
//! ([`Person`]) between the tools, which decide what needs a person's yes and who else may give
//! it (`crate::tools::Caller::confirm`: a confirmed workflow, the model where the key's owner
//! allows it), and this layer, which knows how to ask. Tools never see JSON-RPC: they hand a
//! [`ToConfirm`] (the plan in plain words and what it is bound to) and get a yes, a no with
//! its reason, or why nobody was asked ([`Unasked`]).
//!
//! [`McpPerson`], the person of one MCP request ([`RequestContext::with_person`]), asks in
//! the way the request's protocol era and client allow:
//! - a 2026-07-28 request whose client declared form elicitation in `_meta`: an
//!   `input_required` result with the question and a pending confirmation sealed into
//!   `requestState` ([`super::input`]); the retry with the answer redeems it;
//! - an older session whose client declared elicitation: `elicitation/create` in the middle
//!   of the call, waiting for the answer (at most the confirmation's lifetime);
//! - the visualisation password: this server's page ([`super::password`]), opened by a
//!   URL-mode `elicitation/create` or an `input_required` result holding the URL-mode request.
//!
//! The pending confirmations and password pages are the server's ([`Confirmations`], one per
//! [`super::McpServer`]): a confirmation is good once, for its [`Binding`] (key, tool,
//! controls, command), within its lifetime.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::confirm::{Binding, Pending};
use super::input::{ElicitAnswer, InputKind, InputRequest, InputRequired, Round};
use super::password::{self, Opener, PasswordPages, UrlRequest};
use super::{PeerHandle, RequestContext, RpcError};
use crate::home::{Risk, Secret};

/// What a command that needs a person's yes is: the plan in plain words and what a yes to it
/// is bound to.
pub struct ToConfirm<'a> {
    pub risk: Risk,
    pub tool: &'a str,
    /// UUIDs of the controls (or the workflow id).
    pub controls: Vec<String>,
    /// The command with its values.
    pub command: String,
    /// The question in plain words, naming the control(s), room(s) and action.
    pub question: &'a str,
}

/// A person's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Yes, to this very plan.
    Yes,
    /// No: they declined, cancelled or did not answer in time (the reason in plain words).
    No(String),
}

/// Why nobody was asked (nothing was sent to the house).
#[derive(Debug, Clone, PartialEq)]
pub enum Unasked {
    /// This client cannot be asked (it declared no elicitation of the kind needed).
    Unreachable,
    /// Refused before asking: the spec's code (`HUMAN_CONFIRMATION_REQUIRED`,
    /// `RATE_LIMIT_EXCEEDED`) and why.
    Refused { code: &'static str, message: String },
    /// The question goes back to the client and the answer comes with its retry (MCP
    /// 2026-07-28 `input_required`): the tool returns this error as it is, and the MCP core
    /// answers with the question ([`super::input::Round::ask`]).
    Retry(RpcError),
}

/// A person the tools can ask for a yes to a plan (see the module docs).
pub trait Person: Send + Sync + std::fmt::Debug {
    /// Asks for a yes to `plan`. `in_workflow`: the plan is a step of a confirmed workflow
    /// (an era that answers by retrying the request cannot ask then: a retry would run the
    /// earlier steps again).
    fn yes(&self, plan: &ToConfirm<'_>, in_workflow: bool) -> Result<Answer, Unasked>;

    /// How this person can be sent to this server's password page, if at all.
    fn page(&self) -> Option<Opener>;

    /// The visualisation password for `plan`, typed by the person on this server's page,
    /// offered as `opener` says; typing it is their yes. `Ok(Err(reason))` when they gave
    /// none (declined, cancelled, expired, another command): nothing is sent.
    fn password(
        &self,
        plan: &ToConfirm<'_>,
        opener: Opener,
        in_workflow: bool,
    ) -> Result<Result<Secret, String>, Unasked>;
}

/// The server's pending confirmations and password pages, shared by every request (the pages
/// are served by the HTTP transport, `/confirm/{id}`).
#[derive(Debug)]
pub struct Confirmations {
    pending: Pending,
    pages: Arc<PasswordPages>,
}

impl Confirmations {
    /// Stores whose confirmations and pages live `lifetime` (the user's answer is awaited as
    /// long).
    pub fn new(lifetime: Duration) -> Self {
        Self {
            pending: Pending::with_lifetime(lifetime),
            pages: Arc::new(PasswordPages::with_lifetime(lifetime)),
        }
    }

    /// The password pages, for the transport that serves them.
    pub fn pages(&self) -> &Arc<PasswordPages> {
        &self.pages
    }
}

impl RequestContext {
    /// This context with the person behind it ([`McpPerson`], asked with `confirmations`): what
    /// the MCP core gives every `tools/call`.
    pub fn with_person(mut self, confirmations: &Arc<Confirmations>) -> Self {
        self.person = Some(Arc::new(McpPerson::of(&self, confirmations.clone())));
        self
    }
}

/// The person of one MCP request (see the module docs).
#[derive(Debug)]
pub struct McpPerson {
    /// What a confirmation is bound to: the API key ([`super::Caller::principal`], else its
    /// name), the session, or the transport.
    key: String,
    /// For logs: the transport.
    label: &'static str,
    /// The way to the client, when it declared elicitation (`elicitation/create`).
    peer: Option<PeerHandle>,
    /// Whether the client can open a URL for its user (`elicitation.url`, an HTTP request).
    url: bool,
    /// The 2026-07-28 round of the request.
    round: Option<Arc<Round>>,
    /// This server's address as the client reached it (the password page's URL).
    origin: Option<String>,
    stores: Arc<Confirmations>,
}

impl McpPerson {
    /// The person behind the request `ctx`, asked with `stores`.
    pub fn of(ctx: &RequestContext, stores: Arc<Confirmations>) -> Self {
        let key = ctx
            .caller
            .as_ref()
            .map(|c| c.principal.clone().unwrap_or_else(|| c.key_name.clone()))
            .or_else(|| ctx.session_id.clone())
            .unwrap_or_else(|| ctx.transport.to_string());
        Self {
            key,
            label: ctx.transport,
            peer: ctx.peer.clone().filter(|_| ctx.can_elicit()),
            url: ctx.can_elicit_url(),
            round: ctx.input.clone(),
            origin: ctx.origin.clone(),
            stores,
        }
    }

    /// The [`Binding`] of `plan` for this person's key.
    fn binding(&self, plan: &ToConfirm<'_>) -> Binding {
        let mut controls = plan.controls.clone();
        controls.sort_unstable();
        Binding {
            key: self.key.clone(),
            tool: plan.tool.to_string(),
            controls,
            command: plan.command.clone(),
            risk: plan.risk,
        }
    }

    /// The round of a 2026-07-28 request whose client declared `kind`.
    fn round(&self, kind: InputKind) -> Option<&Round> {
        self.round.as_deref().filter(|r| r.can_ask(kind))
    }

    /// [`Person::yes`] for a 2026-07-28 client that declared elicitation: the first call files
    /// a pending confirmation and answers with the question as an `input_required` result whose
    /// sealed `requestState` names it; the retry with the user's answer redeems it (once,
    /// within its lifetime, for the same binding). A retry without an answer, or without the
    /// state (the MCP core has already refused a tampered, expired or foreign one), is asked
    /// again.
    fn yes_by_round(&self, round: &Round, plan: &ToConfirm<'_>) -> Result<Answer, Unasked> {
        let pending = &self.stores.pending;
        let binding = self.binding(plan);
        let filed = round
            .state()
            .and_then(|s| s.get(STATE_CONFIRMATION))
            .and_then(Value::as_str);
        if let (Some(id), Some(answer)) = (filed, round.elicitation(CONFIRM_KEY)) {
            return Ok(self.redeemed(id, &binding, &answer));
        }
        if let Some(id) = filed {
            pending.drop_id(id);
        }
        let id = pending.file(binding, Instant::now()).map_err(full)?;
        Err(Unasked::Retry(
            round.ask(
                InputRequired::new()
                    .ask(
                        CONFIRM_KEY,
                        InputRequest::Elicitation {
                            message: plan.question.to_string(),
                            requested_schema: confirmation_form(plan.question),
                        },
                    )
                    .with_state(json!({ STATE_CONFIRMATION: id }))
                    .with_lifetime(pending.lifetime()),
            ),
        ))
    }

    /// [`Person::yes`] by `elicitation/create` (up to 2025-11-25): a form with a yes/no naming
    /// the control, its room and the action, answered within the call.
    fn yes_by_elicitation(
        &self,
        peer: &PeerHandle,
        plan: &ToConfirm<'_>,
    ) -> Result<Answer, Unasked> {
        let pending = &self.stores.pending;
        let binding = self.binding(plan);
        let id = pending
            .file(binding.clone(), Instant::now())
            .map_err(full)?;
        let params = json!({
            "message": plan.question,
            "requestedSchema": confirmation_form(plan.question),
        });
        match peer
            .0
            .request("elicitation/create", params, pending.lifetime())
        {
            Ok(result) => {
                let answer = ElicitAnswer::of(&result).unwrap_or(ElicitAnswer::Cancel);
                Ok(self.redeemed(&id, &binding, &answer))
            }
            Err(e) => {
                pending.drop_id(&id);
                Ok(Answer::No(self.no_answer(&e)))
            }
        }
    }

    /// The person's `answer` to the confirmation `id` filed for `binding`: a yes redeems it
    /// (once, within its lifetime, for the same binding), anything else withdraws it.
    fn redeemed(&self, id: &str, binding: &Binding, answer: &ElicitAnswer) -> Answer {
        let pending = &self.stores.pending;
        match answer {
            ElicitAnswer::Accept(c) if c.get("confirm") == Some(&Value::Bool(true)) => {
                match pending.redeem(id, binding, Instant::now()) {
                    Ok(()) => Answer::Yes,
                    Err(e) => Answer::No(e.to_string()),
                }
            }
            other => {
                pending.drop_id(id);
                Answer::No(refusal_of(other))
            }
        }
    }

    /// The page for a MCP 2025-11-25 session: files a page for `plan`
    /// ([`PasswordPages::url_request`]), sends the URL-mode `elicitation/create` naming it, and
    /// waits (at most the page's lifetime) for the password typed there; then
    /// `notifications/elicitation/complete`.
    fn password_by_elicitation(
        &self,
        plan: &ToConfirm<'_>,
    ) -> Result<Result<Secret, String>, Unasked> {
        let (Some(peer), Some(origin), true) = (&self.peer, &self.origin, self.url) else {
            return Err(Unasked::Unreachable);
        };
        let pages = &self.stores.pages;
        let binding = self.binding(plan);
        let request = pages
            .url_request(origin, binding.clone(), plan.question, Instant::now())
            .map_err(full)?;
        let id = request.elicitation_id.clone();
        let message = page_message(plan.question);
        let answer = peer.0.request(
            "elicitation/create",
            request.params(&message),
            pages.lifetime(),
        );
        let opened = match answer.map(|a| ElicitAnswer::of(&a)) {
            Ok(Some(ElicitAnswer::Accept(_))) => Ok(()),
            Ok(other) => Err(refusal_of(&other.unwrap_or(ElicitAnswer::Cancel))),
            Err(e) => Err(self.no_answer(&e)),
        };
        if let Err(reason) = opened {
            pages.drop_id(&id);
            return Ok(Err(reason));
        }
        let outcome = pages.wait(&id, &binding);
        peer.0.notify(
            "notifications/elicitation/complete",
            json!({"elicitationId": id}),
        );
        Ok(outcome.map_err(|e| e.to_string()))
    }

    /// The page for a MCP 2026-07-28 request whose client declared URL-mode elicitation (the
    /// spec's URL mode inside `inputRequests`):
    ///
    /// - first call: files a page for `plan` and answers `input_required` with the URL-mode
    ///   request under [`PASSWORD_KEY`], the page's id sealed into `requestState` (bound by the
    ///   MCP core to the caller, tool and arguments) for the page's lifetime;
    /// - the retry with `accept` takes the password the page received
    ///   ([`PasswordPages::take`]: once, within its lifetime, for the same key, tool, control
    ///   and command); a page nobody has answered yet is offered again (another
    ///   `input_required`, the spec's answer while the out-of-band interaction is not complete:
    ///   the worker never waits for a person);
    /// - `decline` or `cancel`: the page is withdrawn, nothing is sent;
    /// - a retry without an answer: the old page is withdrawn and a new one offered.
    ///
    /// Not inside a workflow run (a retry would run its earlier steps again).
    fn password_by_round(
        &self,
        plan: &ToConfirm<'_>,
        in_workflow: bool,
    ) -> Result<Result<Secret, String>, Unasked> {
        let (Some(round), Some(origin)) = (self.round(InputKind::ElicitationUrl), &self.origin)
        else {
            return Err(Unasked::Unreachable);
        };
        if in_workflow {
            return Err(human_needed(format!(
                "nothing was sent: \"{}\" needs the visualisation password typed on this server's page, which this protocol version cannot offer in the middle of a workflow; do it on its own",
                plan.question
            )));
        }
        let pages = &self.stores.pages;
        let now = Instant::now();
        let binding = self.binding(plan);
        let filed = round
            .state()
            .and_then(|s| s.get(STATE_PASSWORD_PAGE))
            .and_then(Value::as_str);
        if let (Some(id), Some(answer)) = (filed, round.elicitation(PASSWORD_KEY)) {
            let reason = match answer {
                ElicitAnswer::Accept(_) => match pages.take(id, &binding, now) {
                    Ok(password) => return Ok(Ok(password)),
                    Err(password::NoPassword::Unanswered) => {
                        match pages.reopen(origin, id, &binding, now) {
                            Some((page, left)) => {
                                let message = format!(
                                    "{} The page is still waiting for the Loxone visualisation password: enter it there, then continue.",
                                    plan.question
                                );
                                return Err(page_round(round, &page, message, left));
                            }
                            // Answered (or expired) in between.
                            None => match pages.take(id, &binding, now) {
                                Ok(password) => return Ok(Ok(password)),
                                Err(e) => e.to_string(),
                            },
                        }
                    }
                    Err(e) => e.to_string(),
                },
                other => refusal_of(&other),
            };
            pages.drop_id(id);
            return Ok(Err(reason));
        }
        if let Some(id) = filed {
            pages.drop_id(id);
        }
        let page = pages
            .url_request(origin, binding, plan.question, now)
            .map_err(full)?;
        Err(page_round(
            round,
            &page,
            page_message(plan.question),
            pages.lifetime(),
        ))
    }

    /// Why nothing is done when the user's answer did not arrive (`e`: the client's error or
    /// the timeout).
    fn no_answer(&self, e: &RpcError) -> String {
        log::warn!("elicitation for {}: {}", self.label, e.message);
        format!("the user's answer did not arrive ({})", e.message)
    }
}

impl Person for McpPerson {
    fn yes(&self, plan: &ToConfirm<'_>, in_workflow: bool) -> Result<Answer, Unasked> {
        // MCP 2026-07-28: the question goes back as an `input_required` result and the
        // answer comes with the retry.
        if let Some(round) = self.round(InputKind::ElicitationForm) {
            if in_workflow {
                return Err(human_needed(format!(
                    "nothing was sent: \"{}\" needs a person's answer of its own, which this protocol version cannot ask for in the middle of a workflow; do it on its own",
                    plan.question
                )));
            }
            return self.yes_by_round(round, plan);
        }
        match &self.peer {
            Some(peer) => self.yes_by_elicitation(peer, plan),
            None => Err(Unasked::Unreachable),
        }
    }

    /// A 2026-07-28 request (it carries a round) is offered the page by an `input_required`
    /// result when its client declared URL-mode elicitation in `_meta` and it came over HTTP;
    /// an older request by `elicitation/create` when the session declared it
    /// ([`RequestContext::can_elicit_url`]).
    fn page(&self) -> Option<Opener> {
        match &self.round {
            Some(round) => (self.origin.is_some() && round.can_ask(InputKind::ElicitationUrl))
                .then_some(Opener::InputRequired),
            None => self.url.then_some(Opener::Elicitation),
        }
    }

    fn password(
        &self,
        plan: &ToConfirm<'_>,
        opener: Opener,
        in_workflow: bool,
    ) -> Result<Result<Secret, String>, Unasked> {
        match opener {
            Opener::Elicitation => self.password_by_elicitation(plan),
            Opener::InputRequired => self.password_by_round(plan, in_workflow),
        }
    }
}

/// `HUMAN_CONFIRMATION_REQUIRED` with `message`.
fn human_needed(message: String) -> Unasked {
    Unasked::Refused {
        code: "HUMAN_CONFIRMATION_REQUIRED",
        message,
    }
}

/// `RATE_LIMIT_EXCEEDED`: too many confirmations or pages wait.
fn full(e: super::confirm::Refusal) -> Unasked {
    Unasked::Refused {
        code: "RATE_LIMIT_EXCEEDED",
        message: format!("nothing was sent: {e}"),
    }
}

/// The reason of an answer that is not a yes.
fn refusal_of(answer: &ElicitAnswer) -> String {
    match answer {
        ElicitAnswer::Accept(_) => "the user did not confirm",
        ElicitAnswer::Decline => "the user declined",
        ElicitAnswer::Cancel => "the user cancelled",
    }
    .into()
}

/// The key of the password page's URL-mode request in `inputRequests` / `inputResponses`.
const PASSWORD_KEY: &str = "visu_password_page";

/// The member of the sealed `requestState` naming the password page (its id; the client may
/// read it: the id alone opens the page, which it was given anyway).
const STATE_PASSWORD_PAGE: &str = "password_page";

/// The `input_required` answer offering `page` (URL mode, under [`PASSWORD_KEY`]) with its id
/// sealed into `requestState` for `lifetime` (what the page has left).
fn page_round(round: &Round, page: &UrlRequest, message: String, lifetime: Duration) -> Unasked {
    Unasked::Retry(
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
