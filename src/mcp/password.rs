//! The visualisation password typed by a person on this server's own page, never through the
//! model (issue 20).
//!
//! A secured Loxone control (`isSecured`) takes commands only with the visualisation password
//! (`jdev/sps/ios/{hash}/...`). Where that password comes from is decided in one place
//! ([`source`]): the owner's configuration on the Pi, else a page of this server that a
//! URL-mode elicitation opens in the user's browser, else nowhere (a tool error saying how the
//! owner configures it). The page is offered in one of two ways ([`Opener`]): MCP 2025-11-25
//! `elicitation/create` with `mode: "url"` in the middle of the call, or for MCP 2026-07-28 an
//! `input_required` result whose `inputRequests` holds the same URL-mode request.
//!
//! A page is filed for one pending request ([`PasswordPages::url_request`], the one function
//! that produces the URL-mode request: `elicitationId` and `url`). Its id (128 random bits) is
//! the path `/confirm/{id}`; the form carries a second random value, the form token, that the
//! `POST` must echo (so a page of another site cannot post a password blindly). The page lives
//! [`LIFETIME`] (like a confirmation), takes one answer (a password or "no"), and the request
//! it was filed for takes the password out of the store: the 2025-11-25 call waiting for it
//! ([`PasswordPages::wait`]), or the 2026-07-28 retry that names the page in its sealed
//! `requestState` ([`PasswordPages::take`], which never waits). The password is held in memory
//! only until then, never logged, never in a result.
//!
//! Like the pending confirmations ([`super::confirm`]), one key keeps at most [`PER_KEY`] pages
//! of the store's [`CAPACITY`], and a new page for the same binding replaces the older one
//! (its waiting request is told at once).

use std::collections::HashMap;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::confirm::{self, Binding, Refusal};
use crate::home::Secret;

/// How long a page can be answered (and the request waits for it).
pub const LIFETIME: Duration = confirm::LIFETIME;

/// Most pages open at once, of all keys; a full store refuses new ones (nothing is sent).
pub const CAPACITY: usize = 64;

/// Most pages of one key (or OAuth grant) open at once.
pub const PER_KEY: usize = 4;

/// Longest password the page takes (bytes).
pub const MAX_PASSWORD: usize = 256;

/// The path of the pages: `/confirm/{id}`.
pub const PATH_PREFIX: &str = "/confirm/";

/// Where a secured control's visualisation password comes from: the one decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The control is not secured: a plain command, no password.
    NotNeeded,
    /// The owner configured it on the Pi (`[miniserver] visu_password`, `HOME_VISU_PASS`).
    Configured,
    /// A person types it on this server's page, offered to the client as the [`Opener`] says.
    Page(Opener),
    /// Neither: nothing can be sent (the error says how the owner configures it).
    Unavailable,
}

/// How the page is offered to the request's client (URL-mode elicitation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opener {
    /// MCP 2025-11-25: `elicitation/create` with `mode: "url"` sent in the middle of the call,
    /// which waits for the page ([`PasswordPages::wait`]).
    Elicitation,
    /// MCP 2026-07-28: an `input_required` result whose `inputRequests` holds the URL-mode
    /// request, the page's id sealed into `requestState`; the client's retry takes the
    /// password the page received ([`PasswordPages::take`]).
    InputRequired,
}

/// Where the password for a command to a control that is `secured` comes from, given whether
/// one is `configured` and how the request's client can open a URL for its user (`opener`:
/// it declared `elicitation.url` and the request came over HTTP, so this server has a page
/// address to give; `None`: it cannot).
pub fn source(secured: bool, configured: bool, opener: Option<Opener>) -> Source {
    match (secured, configured, opener) {
        (false, _, _) => Source::NotNeeded,
        (true, true, _) => Source::Configured,
        (true, false, Some(o)) => Source::Page(o),
        (true, false, None) => Source::Unavailable,
    }
}

/// A URL-mode elicitation request for one page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlRequest {
    /// `elicitationId`: the page's id (also in the URL).
    pub elicitation_id: String,
    /// `url`: `{origin}/confirm/{id}`.
    pub url: String,
}

impl UrlRequest {
    /// The request that opens page `id` of this server at `origin` (`scheme://host[:port]`).
    fn of(origin: &str, id: String) -> UrlRequest {
        UrlRequest {
            url: format!("{}{PATH_PREFIX}{id}", origin.trim_end_matches('/')),
            elicitation_id: id,
        }
    }

    /// The `elicitation/create` params (2025-11-25, `mode: "url"`): `message` says what the
    /// page is for, in plain words.
    pub fn params(&self, message: &str) -> Value {
        json!({
            "mode": "url",
            "message": message,
            "url": self.url,
            "elicitationId": self.elicitation_id,
        })
    }
}

/// What a page shows (its `GET`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageView {
    /// The question in plain words: the control, its room and the action.
    pub question: String,
    /// The form token the `POST` must carry.
    pub token: String,
}

/// A person's answer on the page.
#[derive(Debug)]
pub enum Answer {
    /// The password: send the command with it.
    Password(Secret),
    /// "Do not do it".
    Decline,
}

/// Why a page could not be shown or answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageError {
    /// No such page (never filed, answered already, or its request ended).
    Unknown,
    /// Older than its lifetime.
    Expired,
    /// The form token is not the page's.
    BadToken,
}

impl std::fmt::Display for PageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            PageError::Unknown => "this page is unknown or was already used",
            PageError::Expired => "this page expired",
            PageError::BadToken => "the form does not belong to this page; reload it",
        })
    }
}

/// How a wait for a page ended without a password.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoPassword {
    /// The person said no on the page.
    Declined,
    /// Nobody answered within the lifetime.
    Expired,
    /// The page was filed for another binding (key, tool, control, command).
    Mismatch,
    /// No such page.
    Unknown,
    /// The page is open and nobody has answered it yet ([`PasswordPages::take`] only; the
    /// page stays open).
    Unanswered,
}

impl std::fmt::Display for NoPassword {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            NoPassword::Declined => "the user declined on the page",
            NoPassword::Expired => "nobody entered the password in time",
            NoPassword::Mismatch => "the page was opened for another command",
            NoPassword::Unknown => "the page is unknown or was already used",
            NoPassword::Unanswered => "nobody has entered the password on the page yet",
        })
    }
}

#[derive(Debug)]
enum State {
    Open,
    Answered(Answer),
}

impl State {
    /// The password the person typed, or why there is none.
    fn password(self) -> Result<Secret, NoPassword> {
        match self {
            State::Answered(Answer::Password(s)) => Ok(s),
            State::Answered(Answer::Decline) => Err(NoPassword::Declined),
            State::Open => Err(NoPassword::Expired),
        }
    }
}

#[derive(Debug)]
struct Entry {
    binding: Binding,
    question: String,
    token: String,
    filed: Instant,
    state: State,
}

/// The bounded store of open password pages.
#[derive(Debug)]
pub struct PasswordPages {
    lifetime: Duration,
    entries: Mutex<HashMap<String, Entry>>,
    answered: Condvar,
}

impl Default for PasswordPages {
    fn default() -> Self {
        PasswordPages::with_lifetime(LIFETIME)
    }
}

impl PasswordPages {
    /// A store whose pages last `lifetime` (tests use a short one).
    pub fn with_lifetime(lifetime: Duration) -> Self {
        PasswordPages {
            lifetime,
            entries: Mutex::new(HashMap::new()),
            answered: Condvar::new(),
        }
    }

    /// How long a page lives.
    pub fn lifetime(&self) -> Duration {
        self.lifetime
    }

    /// Files a page for `binding` showing `question`, and returns the URL-mode request that
    /// opens it: `elicitationId` and `{origin}/confirm/{id}` (`origin` is `scheme://host[:port]`
    /// as the client reached this server). Expired pages go first, and an open page for the
    /// same binding is replaced (the request waiting for it ends); the key's share full
    /// ([`Refusal::KeyFull`]) or the store full ([`Refusal::Full`]) refuses.
    pub fn url_request(
        &self,
        origin: &str,
        binding: Binding,
        question: &str,
        now: Instant,
    ) -> Result<UrlRequest, Refusal> {
        let mut e = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let lifetime = self.lifetime;
        let before = e.len();
        e.retain(|_, p| now.saturating_duration_since(p.filed) < lifetime && p.binding != binding);
        if e.len() < before {
            self.answered.notify_all();
        }
        if e.values().filter(|p| p.binding.key == binding.key).count() >= PER_KEY {
            return Err(Refusal::KeyFull);
        }
        if e.len() >= CAPACITY {
            return Err(Refusal::Full);
        }
        let id = confirm::new_id();
        e.insert(
            id.clone(),
            Entry {
                binding,
                question: question.to_string(),
                token: confirm::new_id(),
                filed: now,
                state: State::Open,
            },
        );
        Ok(UrlRequest::of(origin, id))
    }

    /// The request that opens the still open page `id` again (a 2026-07-28 retry that came
    /// before the person answered), and how long the page has left: `None` unless the page
    /// is open, unanswered, within its lifetime and filed for `binding`.
    pub fn reopen(
        &self,
        origin: &str,
        id: &str,
        binding: &Binding,
        now: Instant,
    ) -> Option<(UrlRequest, Duration)> {
        let e = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let p = e.get(id)?;
        let left = self
            .lifetime
            .checked_sub(now.saturating_duration_since(p.filed))
            .filter(|l| !l.is_zero())?;
        (matches!(p.state, State::Open) && &p.binding == binding)
            .then(|| (UrlRequest::of(origin, id.to_string()), left))
    }

    /// What the open page `id` shows (its `GET`).
    pub fn view(&self, id: &str, now: Instant) -> Result<PageView, PageError> {
        let e = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let p = e.get(id).ok_or(PageError::Unknown)?;
        if now.saturating_duration_since(p.filed) >= self.lifetime {
            return Err(PageError::Expired);
        }
        match p.state {
            State::Open => Ok(PageView {
                question: p.question.clone(),
                token: p.token.clone(),
            }),
            State::Answered(_) => Err(PageError::Unknown),
        }
    }

    /// Takes the person's answer for page `id` (its `POST`): once, within the lifetime, with
    /// the page's form token (compared in constant time). Wakes the waiting request.
    pub fn answer(
        &self,
        id: &str,
        token: &str,
        answer: Answer,
        now: Instant,
    ) -> Result<(), PageError> {
        let mut e = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let p = e.get_mut(id).ok_or(PageError::Unknown)?;
        if now.saturating_duration_since(p.filed) >= self.lifetime {
            return Err(PageError::Expired);
        }
        if !matches!(p.state, State::Open) {
            return Err(PageError::Unknown);
        }
        if !bool::from(subtle::ConstantTimeEq::ct_eq(
            p.token.as_bytes(),
            token.as_bytes(),
        )) {
            return Err(PageError::BadToken);
        }
        p.state = State::Answered(answer);
        self.answered.notify_all();
        Ok(())
    }

    /// Waits until page `id` is answered or its lifetime is over, and takes it out of the
    /// store (whatever the outcome): the password, when the page was filed for `binding` and
    /// the person gave one.
    pub fn wait(&self, id: &str, binding: &Binding) -> Result<Secret, NoPassword> {
        let mut e = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            let Some(p) = e.get(id) else {
                return Err(NoPassword::Unknown);
            };
            let age = p.filed.elapsed();
            if matches!(p.state, State::Answered(_)) || age >= self.lifetime {
                break;
            }
            let left = self.lifetime - age;
            e = self
                .answered
                .wait_timeout(e, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        let p = e.remove(id).ok_or(NoPassword::Unknown)?;
        if &p.binding != binding {
            return Err(NoPassword::Mismatch);
        }
        p.state.password()
    }

    /// Takes the password page `id` received, without waiting (the 2026-07-28 retry): when
    /// the page was filed for `binding`, is within its lifetime and the person typed one.
    /// The page leaves the store whatever the outcome, except while it is open and
    /// unanswered for the same binding ([`NoPassword::Unanswered`]): then it stays open.
    pub fn take(&self, id: &str, binding: &Binding, now: Instant) -> Result<Secret, NoPassword> {
        let mut e = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let p = e.get(id).ok_or(NoPassword::Unknown)?;
        let expired = now.saturating_duration_since(p.filed) >= self.lifetime;
        let mine = &p.binding == binding;
        if mine && !expired && matches!(p.state, State::Open) {
            return Err(NoPassword::Unanswered);
        }
        let p = e.remove(id).ok_or(NoPassword::Unknown)?;
        if !mine {
            return Err(NoPassword::Mismatch);
        }
        if expired {
            return Err(NoPassword::Expired);
        }
        p.state.password()
    }

    /// Forgets page `id` (the user declined to open it, or the request ended).
    pub fn drop_id(&self, id: &str) {
        self.entries
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(id);
    }

    /// Pages open.
    pub fn len(&self) -> usize {
        self.entries.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Whether none is open.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::home::Risk;

    fn binding(command: &str) -> Binding {
        Binding {
            key: "k".into(),
            tool: "disarm_alarm".into(),
            controls: vec!["alarm".into()],
            command: command.into(),
            risk: Risk::Alarm,
        }
    }

    #[test]
    fn the_source_of_the_password() {
        let round = Some(Opener::InputRequired);
        assert_eq!(source(false, false, None), Source::NotNeeded);
        assert_eq!(source(false, false, round), Source::NotNeeded);
        assert_eq!(source(true, true, round), Source::Configured);
        assert_eq!(
            source(true, false, Some(Opener::Elicitation)),
            Source::Page(Opener::Elicitation)
        );
        assert_eq!(
            source(true, false, round),
            Source::Page(Opener::InputRequired)
        );
        assert_eq!(source(true, false, None), Source::Unavailable);
    }

    #[test]
    fn a_retry_takes_the_password_once_for_its_own_binding_without_waiting() {
        let p = PasswordPages::with_lifetime(Duration::from_secs(120));
        let t0 = Instant::now();
        let file = || {
            p.url_request("http://pi", binding("Disarm"), "q", t0)
                .unwrap()
                .elicitation_id
        };
        let answer = |id: &str, a: Answer| {
            let token = p.view(id, t0).unwrap().token;
            p.answer(id, &token, a, t0).unwrap();
        };
        // Not answered yet: the page stays open, and can be offered again.
        let id = file();
        assert_eq!(
            p.take(&id, &binding("Disarm"), t0).unwrap_err(),
            NoPassword::Unanswered
        );
        let later = t0 + Duration::from_secs(20);
        let (again, left) = p
            .reopen("http://pi/", &id, &binding("Disarm"), later)
            .unwrap();
        assert_eq!(again.url, format!("http://pi/confirm/{id}"));
        assert_eq!(again.elicitation_id, id);
        assert_eq!(left, Duration::from_secs(100), "what the page has left");
        assert!(p.reopen("http://pi", &id, &binding("Arm"), t0).is_none());
        answer(&id, Answer::Password(Secret::new("1234")));
        assert!(p.reopen("http://pi", &id, &binding("Disarm"), t0).is_none());
        assert_eq!(
            p.take(&id, &binding("Disarm"), t0).unwrap().expose(),
            "1234"
        );
        assert_eq!(
            p.take(&id, &binding("Disarm"), t0).unwrap_err(),
            NoPassword::Unknown,
            "one use"
        );
        // Another command: nothing, and the page is gone.
        let id = file();
        answer(&id, Answer::Password(Secret::new("1234")));
        assert_eq!(
            p.take(&id, &binding("Arm"), t0).unwrap_err(),
            NoPassword::Mismatch
        );
        assert!(p.is_empty());
        // Declined; expired (answered or not).
        let id = file();
        answer(&id, Answer::Decline);
        assert_eq!(
            p.take(&id, &binding("Disarm"), t0).unwrap_err(),
            NoPassword::Declined
        );
        let late = t0 + Duration::from_secs(120);
        let id = file();
        answer(&id, Answer::Password(Secret::new("1234")));
        assert_eq!(
            p.take(&id, &binding("Disarm"), late).unwrap_err(),
            NoPassword::Expired
        );
        let id = file();
        assert!(p
            .reopen("http://pi", &id, &binding("Disarm"), late)
            .is_none());
        assert_eq!(
            p.take(&id, &binding("Disarm"), late).unwrap_err(),
            NoPassword::Expired
        );
        assert!(p.is_empty());
    }

    #[test]
    fn one_answer_with_the_token_within_the_lifetime() {
        let p = PasswordPages::with_lifetime(Duration::from_secs(120));
        let t0 = Instant::now();
        let r = p
            .url_request("http://pi:8080/", binding("Disarm"), "Disarm?", t0)
            .unwrap();
        assert_eq!(
            r.url,
            format!("http://pi:8080/confirm/{}", r.elicitation_id)
        );
        assert_eq!(r.params("m")["mode"], "url");
        let v = p.view(&r.elicitation_id, t0).unwrap();
        assert_eq!(v.question, "Disarm?");
        assert_eq!(
            p.answer(&r.elicitation_id, "forged", Answer::Decline, t0)
                .unwrap_err(),
            PageError::BadToken
        );
        p.answer(
            &r.elicitation_id,
            &v.token,
            Answer::Password(Secret::new("1234")),
            t0,
        )
        .unwrap();
        assert_eq!(
            p.answer(&r.elicitation_id, &v.token, Answer::Decline, t0)
                .unwrap_err(),
            PageError::Unknown,
            "one answer"
        );
        assert_eq!(
            p.view(&r.elicitation_id, t0).unwrap_err(),
            PageError::Unknown
        );
        assert_eq!(
            p.wait(&r.elicitation_id, &binding("Disarm"))
                .unwrap()
                .expose(),
            "1234"
        );
        assert!(p.is_empty(), "taken out");

        let r = p
            .url_request("http://pi", binding("Disarm"), "q", t0)
            .unwrap();
        let late = t0 + Duration::from_secs(120);
        assert_eq!(
            p.view(&r.elicitation_id, late).unwrap_err(),
            PageError::Expired
        );
        let v = p.view(&r.elicitation_id, t0).unwrap();
        assert_eq!(
            p.answer(&r.elicitation_id, &v.token, Answer::Decline, late)
                .unwrap_err(),
            PageError::Expired
        );
        p.answer(&r.elicitation_id, &v.token, Answer::Decline, t0)
            .unwrap();
        assert_eq!(
            p.wait(&r.elicitation_id, &binding("Arm")).unwrap_err(),
            NoPassword::Mismatch
        );
    }

    #[test]
    fn a_newer_page_for_the_same_command_replaces_the_older_and_ends_its_wait() {
        let p = std::sync::Arc::new(PasswordPages::with_lifetime(Duration::from_secs(60)));
        let t0 = Instant::now();
        let older = p
            .url_request("http://pi", binding("Disarm"), "q", t0)
            .unwrap()
            .elicitation_id;
        let waiting = {
            let (p, id) = (p.clone(), older.clone());
            std::thread::spawn(move || p.wait(&id, &binding("Disarm")))
        };
        let other = p
            .url_request("http://pi", binding("Arm"), "q", t0)
            .unwrap()
            .elicitation_id;
        let newer = p
            .url_request("http://pi", binding("Disarm"), "q", Instant::now())
            .unwrap()
            .elicitation_id;
        // The older page's request ends at once (not after the page's minute).
        assert_eq!(waiting.join().unwrap().unwrap_err(), NoPassword::Unknown);
        assert_eq!(
            p.view(&older, Instant::now()).unwrap_err(),
            PageError::Unknown
        );
        assert!(p.view(&newer, Instant::now()).is_ok());
        assert!(
            p.view(&other, Instant::now()).is_ok(),
            "another command's page stays"
        );
    }

    #[test]
    fn an_unanswered_page_expires_and_the_store_is_bounded() {
        let p = PasswordPages::with_lifetime(Duration::from_millis(50));
        let t0 = Instant::now();
        let r = p
            .url_request("http://pi", binding("Disarm"), "q", t0)
            .unwrap();
        assert_eq!(
            p.wait(&r.elicitation_id, &binding("Disarm")).unwrap_err(),
            NoPassword::Expired
        );
        let p = PasswordPages::default();
        let of = |key: usize, command: usize| Binding {
            key: format!("k{key}"),
            ..binding(&format!("c{command}"))
        };
        for i in 0..PER_KEY {
            p.url_request("http://pi", of(0, i), "q", t0).unwrap();
        }
        assert_eq!(
            p.url_request("http://pi", of(0, PER_KEY), "q", t0),
            Err(Refusal::KeyFull),
            "one key fills its own share only"
        );
        for k in 1..CAPACITY / PER_KEY {
            for i in 0..PER_KEY {
                p.url_request("http://pi", of(k, i), "q", t0).unwrap();
            }
        }
        assert_eq!(
            p.url_request("http://pi", of(CAPACITY, 0), "q", t0),
            Err(Refusal::Full)
        );
        assert!(p
            .url_request("http://pi", of(0, 0), "q", t0 + LIFETIME)
            .is_ok());
    }
}
