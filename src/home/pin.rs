//! Wrong visualisation passwords: who typed them, and the pauses they earn (issue 28).
//!
//! A secured Loxone control takes commands only with the visualisation password (a PIN, often
//! four digits). Every wrong one costs a try against the Miniserver, which blocks a client
//! that keeps failing, and each try is a guess. So secured commands pause after wrong
//! passwords, counted in ledgers by who chose the password:
//!
//! - **per typist** ([`Typist`]: the API key or OAuth grant, else the client) for passwords
//!   typed on this server's page: [`RUN`] wrong ones in a row end a *run*, and the typist's
//!   secured commands pause for [`pause`] of its run count: 1 min, 2 min, 4 min, ... doubling
//!   up to [`LONGEST_PAUSE`] (a day). A right password clears the typist's ledger. Nobody
//!   else is paused by it.
//! - **house-wide for the page**: every wrong page password, whoever typed it, counts in one
//!   more ledger with the same runs and pauses. While the house-wide pause lasts, a wrong
//!   password ends its typist's run at once (one guess per pause instead of three). It never
//!   refuses anybody: a key that has not typed a wrong password is not stopped by it, so an
//!   attacker cannot lock the owner out (the reasoning: `docs/safety.md`, "Password guessing").
//!   It forgets its runs after [`LONGEST_PAUSE`] without a wrong page password.
//! - **the configured password** (`visu_password` on the Pi) is the same for every caller, so
//!   it has one ledger of its own with the same runs and pauses: when it is wrong, nobody's
//!   command could pass anyway.
//!
//! Each run ends in a [`Run`] (kept for the dashboard, the last [`RECENT_RUNS`]), counted in
//! `/metrics` (`home_mcp_visu_password_*`); the tool catalogue writes it to
//! the audit log. The owner can end a typist's pause ([`PinGuard::lift`]); its run count
//! stays, so the next run pauses longer still. Ledgers live in memory (at most
//! [`MAX_TYPISTS`]), never a password.

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use serde_json::{json, Value as Json};

/// Wrong passwords in a row that end a run (outside a house-wide pause).
pub const RUN: u32 = 3;

/// The pause after a typist's first run; each further run doubles it.
pub const FIRST_PAUSE: Duration = Duration::from_secs(60);

/// The longest pause (reached at the 12th run): one day.
pub const LONGEST_PAUSE: Duration = Duration::from_secs(86_400);

/// Typists with a ledger at most; beyond, the one idle longest that is not paused goes.
pub const MAX_TYPISTS: usize = 1024;

/// Runs kept for the dashboard and the admin API.
pub const RECENT_RUNS: usize = 32;

/// The pause after run `run` (1-based): [`FIRST_PAUSE`] doubled with each run, at most
/// [`LONGEST_PAUSE`].
pub fn pause(run: u32) -> Duration {
    let doublings = run.saturating_sub(1).min(31);
    FIRST_PAUSE
        .saturating_mul(1u32 << doublings)
        .min(LONGEST_PAUSE)
}

/// Who typed a visualisation password on the page: the ledger it counts in and the name the
/// owner sees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Typist {
    /// What tells this caller from others: the API key's or OAuth grant's principal, else
    /// the transport and client address.
    pub id: String,
    /// For the owner: the key's name and masked id, or the client's address.
    pub name: String,
}

/// Where the password of a secured command came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PinSource {
    /// Typed by a person on this server's page.
    Page,
    /// The owner's configuration on the Pi.
    Configured,
}

impl PinSource {
    /// `page` or `configured`.
    pub fn as_str(self) -> &'static str {
        match self {
            PinSource::Page => "page",
            PinSource::Configured => "configured",
        }
    }
}

/// Secured commands of a typist (or with the configured password) are paused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Paused {
    /// Seconds left (rounded up).
    pub remaining_secs: u64,
    /// The whole pause, in seconds.
    pub pause_secs: u64,
    /// The run that started it (1-based).
    pub run: u32,
}

/// A run of wrong passwords that ended in a pause.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    pub at: SystemTime,
    pub source: PinSource,
    /// The typist whose wrong password ended the run (for the configured password: whose
    /// command tried it).
    pub typist: Typist,
    /// The run number in the ledger that paused (the typist's, or the configured password's).
    pub run: u32,
    /// Wrong passwords in the run.
    pub wrong: u32,
    /// The pause it started, in seconds.
    pub pause_secs: u64,
    /// The house-wide run this wrong password ended too (page passwords only).
    pub house_run: Option<u32>,
}

impl Run {
    /// `{"at", "source", "key", "key_id", "run", "wrong", "pause_secs", "house_run"}`
    /// (`key`: the typist's name; `key_id`: its ledger id).
    pub fn to_json(&self) -> Json {
        json!({
            "at": crate::time::iso8601(self.at),
            "source": self.source.as_str(),
            "key": self.typist.name,
            "key_id": self.typist.id,
            "run": self.run,
            "wrong": self.wrong,
            "pause_secs": self.pause_secs,
            "house_run": self.house_run,
        })
    }

    /// The run in a line for the audit log's `target` (never a password).
    pub fn summary(&self) -> String {
        let house = self
            .house_run
            .map(|h| format!("; house-wide run {h}"))
            .unwrap_or_default();
        format!(
            "{} visualisation password: run {} ({} wrong), secured commands pause {} s{house}",
            self.source.as_str(),
            self.run,
            self.wrong,
            self.pause_secs
        )
    }
}

#[derive(Debug, Clone)]
struct Ledger {
    /// Wrong passwords in the current run.
    wrong: u32,
    /// Runs so far.
    runs: u32,
    /// When the pause of the last run ends.
    until: Option<Instant>,
    /// The last wrong password.
    last: Instant,
    /// The name the owner sees.
    name: String,
}

impl Ledger {
    fn new(now: Instant, name: &str) -> Self {
        Ledger {
            wrong: 0,
            runs: 0,
            until: None,
            last: now,
            name: name.to_string(),
        }
    }

    fn paused(&self, now: Instant) -> Option<Paused> {
        let until = self.until.filter(|u| *u > now)?;
        Some(Paused {
            remaining_secs: (until - now).as_secs_f64().ceil() as u64,
            pause_secs: pause(self.runs).as_secs(),
            run: self.runs,
        })
    }

    /// One wrong password at `now`; `end_now` ends the run whatever its length. Returns the
    /// wrong passwords of the run it ended, if it did.
    fn wrong(&mut self, now: Instant, end_now: bool) -> Option<u32> {
        self.wrong += 1;
        self.last = now;
        if self.wrong < RUN && !end_now {
            return None;
        }
        let wrong = std::mem::take(&mut self.wrong);
        self.runs = self.runs.saturating_add(1);
        self.until = Some(now + pause(self.runs));
        Some(wrong)
    }

    fn to_json(&self, id: Option<&str>, now: Instant) -> Json {
        let paused = self.paused(now);
        json!({
            "key": self.name,
            "key_id": id,
            "wrong_in_run": self.wrong,
            "runs": self.runs,
            "paused_secs": paused.map(|p| p.remaining_secs),
            "next_pause_secs": pause(self.runs.saturating_add(1)).as_secs(),
        })
    }
}

#[derive(Debug)]
struct Ledgers {
    typists: HashMap<String, Ledger>,
    house: Ledger,
    configured: Ledger,
    recent: VecDeque<Run>,
}

/// The ledgers of one house (see the module docs). `Send + Sync`.
#[derive(Debug)]
pub struct PinGuard {
    ledgers: Mutex<Ledgers>,
    /// Held while a secured command is admitted, sent and counted: one at a time, so that
    /// passwords typed at once cannot slip past a run's end.
    sending: Mutex<()>,
}

impl Default for PinGuard {
    fn default() -> Self {
        let now = Instant::now();
        PinGuard {
            ledgers: Mutex::new(Ledgers {
                typists: HashMap::new(),
                house: Ledger::new(now, "house-wide (page)"),
                configured: Ledger::new(now, "configured password"),
                recent: VecDeque::new(),
            }),
            sending: Mutex::new(()),
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl PinGuard {
    /// Serialises secured commands: hold the guard while admitting, sending and counting one.
    pub fn sending(&self) -> MutexGuard<'_, ()> {
        lock(&self.sending)
    }

    /// Whether a secured command of `typist` with a password from `source` may be tried now:
    /// `Err` while its ledger (the typist's for the page, the configured password's) pauses.
    /// The house-wide pause refuses nobody.
    pub fn admit(&self, typist: &Typist, source: PinSource, now: Instant) -> Result<(), Paused> {
        let l = lock(&self.ledgers);
        let paused = match source {
            PinSource::Page => l.typists.get(&typist.id).and_then(|t| t.paused(now)),
            PinSource::Configured => l.configured.paused(now),
        };
        match paused {
            Some(p) => {
                crate::metrics::global().visu_password_refused();
                Err(p)
            }
            None => Ok(()),
        }
    }

    /// Counts a wrong password of `typist` from `source` at `now`; the [`Run`] it ended, if
    /// it did (a pause starts).
    pub fn wrong(&self, typist: &Typist, source: PinSource, now: Instant) -> Option<Run> {
        let metrics = crate::metrics::global();
        metrics.visu_password_wrong(source.as_str());
        let mut guard = lock(&self.ledgers);
        let l = &mut *guard;
        let (ended, run, house_run) = match source {
            PinSource::Configured => {
                let ended = l.configured.wrong(now, false);
                (ended, l.configured.runs, None)
            }
            PinSource::Page => {
                if now.saturating_duration_since(l.house.last) >= LONGEST_PAUSE {
                    l.house = Ledger::new(now, &l.house.name);
                }
                let house_paused = l.house.paused(now).is_some();
                let house_ended = l.house.wrong(now, false).map(|_| l.house.runs);
                if house_ended.is_some() {
                    metrics.visu_password_pause("house");
                }
                if !l.typists.contains_key(&typist.id) {
                    make_room(&mut l.typists, now);
                }
                let ledger = l
                    .typists
                    .entry(typist.id.clone())
                    .or_insert_with(|| Ledger::new(now, &typist.name));
                ledger.name.clone_from(&typist.name);
                let ended = ledger.wrong(now, house_paused);
                (ended, ledger.runs, house_ended)
            }
        };
        let wrong = ended?;
        metrics.visu_password_pause(match source {
            PinSource::Page => "key",
            PinSource::Configured => "configured",
        });
        let r = Run {
            at: SystemTime::now(),
            source,
            typist: typist.clone(),
            run,
            wrong,
            pause_secs: pause(run).as_secs(),
            house_run,
        };
        log::warn!(
            "{} (by {}): {}",
            r.summary(),
            typist.name,
            if source == PinSource::Page {
                "that key's secured commands pause"
            } else {
                "secured commands pause"
            }
        );
        if l.recent.len() >= RECENT_RUNS {
            l.recent.pop_front();
        }
        l.recent.push_back(r.clone());
        Some(r)
    }

    /// A right password of `typist` from `source`: its ledger is cleared (the house-wide one
    /// is not: others may still be guessing).
    pub fn right(&self, typist: &Typist, source: PinSource) {
        let mut l = lock(&self.ledgers);
        match source {
            PinSource::Page => {
                l.typists.remove(&typist.id);
            }
            PinSource::Configured => {
                let name = l.configured.name.clone();
                l.configured = Ledger::new(Instant::now(), &name);
            }
        }
    }

    /// Ends the pause of the typist whose ledger id is `id` (or of the configured password
    /// for `configured`), keeping its run count; whether there was one.
    pub fn lift(&self, id: &str, now: Instant) -> bool {
        let mut l = lock(&self.ledgers);
        let ledger = match id {
            "configured" => Some(&mut l.configured),
            id => l.typists.get_mut(id),
        };
        match ledger {
            Some(t) if t.paused(now).is_some() => {
                t.until = None;
                true
            }
            _ => false,
        }
    }

    /// What the owner sees (dashboard, admin API): `{"typists": [{"key", "key_id",
    /// "wrong_in_run", "runs", "paused_secs" (null: not paused), "next_pause_secs"}],
    /// "house": {...the same, page passwords of everyone}, "configured": {...},
    /// "runs": [Run::to_json, newest first]}`.
    pub fn snapshot(&self, now: Instant) -> Json {
        let l = lock(&self.ledgers);
        let mut typists: Vec<(&String, &Ledger)> = l.typists.iter().collect();
        typists.sort_by_key(|(_, t)| std::cmp::Reverse(t.last));
        json!({
            "typists": typists
                .iter()
                .map(|(id, t)| t.to_json(Some(id), now))
                .collect::<Vec<_>>(),
            "house": l.house.to_json(None, now),
            "configured": l.configured.to_json(Some("configured"), now),
            "runs": l.recent.iter().rev().map(Run::to_json).collect::<Vec<_>>(),
        })
    }
}

/// Keeps the typists' ledgers under [`MAX_TYPISTS`]: the one idle longest that is not paused
/// goes (else the one idle longest).
fn make_room(typists: &mut HashMap<String, Ledger>, now: Instant) {
    if typists.len() < MAX_TYPISTS {
        return;
    }
    let victim = typists
        .iter()
        .min_by_key(|(_, t)| (t.paused(now).is_some(), t.last))
        .map(|(id, _)| id.clone());
    if let Some(id) = victim {
        log::warn!("visualisation password ledgers full; forgetting {id}");
        typists.remove(&id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn typist(id: &str) -> Typist {
        Typist {
            id: id.into(),
            name: format!("key {id}"),
        }
    }

    #[test]
    fn pauses_double_up_to_a_day() {
        assert_eq!(pause(1), Duration::from_secs(60));
        assert_eq!(pause(2), Duration::from_secs(120));
        assert_eq!(pause(11), Duration::from_secs(61_440));
        assert_eq!(pause(12), LONGEST_PAUSE);
        assert_eq!(pause(u32::MAX), LONGEST_PAUSE);
    }

    #[test]
    fn a_run_pauses_only_its_typist_and_grows() {
        let g = PinGuard::default();
        let (a, b) = (typist("a"), typist("b"));
        let t0 = Instant::now();
        assert!(g.wrong(&a, PinSource::Page, t0).is_none());
        assert!(g.wrong(&a, PinSource::Page, t0).is_none());
        let run = g
            .wrong(&a, PinSource::Page, t0)
            .expect("the third ends a run");
        assert_eq!((run.run, run.wrong, run.pause_secs), (1, 3, 60));
        assert_eq!(
            run.house_run,
            Some(1),
            "the house-wide ledger counted them too"
        );
        let p = g.admit(&a, PinSource::Page, t0).unwrap_err();
        assert_eq!((p.remaining_secs, p.run), (60, 1));
        // Another key, and the configured password, are not stopped.
        assert!(g.admit(&b, PinSource::Page, t0).is_ok());
        assert!(g.admit(&a, PinSource::Configured, t0).is_ok());
        // After the pause: while the house-wide pause lasts, one wrong password is a run.
        let t1 = t0 + Duration::from_secs(60);
        assert!(g.admit(&a, PinSource::Page, t1).is_ok());
        // b's wrong password in the house-wide pause (it ends at t0 + 60 s; b types at t0).
        let run = g
            .wrong(&b, PinSource::Page, t0)
            .expect("one wrong is a run now");
        assert_eq!((run.run, run.wrong, run.pause_secs), (1, 1, 60));
        // a's second run outside the house pause: three again, and twice as long.
        let t2 = t1 + Duration::from_secs(1);
        let house_over = t0 + Duration::from_secs(200);
        assert!(g.wrong(&a, PinSource::Page, house_over).is_none());
        assert!(g.wrong(&a, PinSource::Page, house_over).is_none());
        let run = g.wrong(&a, PinSource::Page, house_over).unwrap();
        assert_eq!((run.run, run.pause_secs), (2, 120));
        // Lifted by the owner: no pause, the count stays.
        assert!(g.lift("a", t2));
        assert!(g.admit(&a, PinSource::Page, house_over).is_ok());
        let snap = g.snapshot(house_over);
        assert_eq!(snap["typists"][0]["key_id"], "a", "the latest first");
        assert_eq!(snap["runs"][0]["key"], "key a", "{snap}");
        assert_eq!(snap["runs"].as_array().unwrap().len(), 3);
        // A right password clears the typist's ledger.
        g.right(&a, PinSource::Page);
        let snap = g.snapshot(house_over);
        assert!(snap["typists"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["key_id"] != "a"));
    }

    #[test]
    fn the_configured_password_has_one_ledger() {
        let g = PinGuard::default();
        let t0 = Instant::now();
        for _ in 0..2 {
            assert!(g.wrong(&typist("a"), PinSource::Configured, t0).is_none());
        }
        let run = g
            .wrong(&typist("b"), PinSource::Configured, t0)
            .expect("three wrong, whoever sent them");
        assert_eq!((run.run, run.house_run), (1, None));
        assert!(g.admit(&typist("c"), PinSource::Configured, t0).is_err());
        assert!(g.admit(&typist("c"), PinSource::Page, t0).is_ok());
        g.right(&typist("c"), PinSource::Configured);
        assert!(g.admit(&typist("c"), PinSource::Configured, t0).is_ok());
    }

    #[test]
    fn a_hundred_wrong_passwords_cost_more_than_a_day_and_ledgers_are_bounded() {
        let g = PinGuard::default();
        let a = typist("a");
        let mut now = Instant::now();
        let mut paused = Duration::ZERO;
        for _ in 0..100 {
            if let Err(p) = g.admit(&a, PinSource::Page, now) {
                now += Duration::from_secs(p.remaining_secs);
                paused += Duration::from_secs(p.remaining_secs);
            }
            g.wrong(&a, PinSource::Page, now);
        }
        // 33 runs of three: 1 min doubling to a day (11 runs, 17 h), then 22 days.
        assert!(paused > LONGEST_PAUSE * 20, "{paused:?}");
        for i in 0..MAX_TYPISTS + 10 {
            g.wrong(&typist(&format!("t{i}")), PinSource::Page, now);
        }
        let snap = g.snapshot(now);
        assert_eq!(snap["typists"].as_array().unwrap().len(), MAX_TYPISTS);
    }
}
