//! Name resolution: from what a user or an AI assistant says ("Küche", "kuche",
//! "kitchen ceiling light", "Lighting Controller (Kitchen)") to one [`Room`] or [`Control`] of the
//! [`Home`] model.
//!
//! Tools call [`Home::resolve_room`] and [`Home::resolve_control`] before they read or command
//! anything. Names are compared folded ([`fold`]: accents, case, `ß`, separators). The rules never
//! guess: several equally good matches give [`ResolveError::Ambiguous`] listing every candidate
//! with its room, no match gives [`ResolveError::NotFound`] with a few suggestions. Both errors
//! render as messages an assistant can act on (retry with a room, or with a UUID).

use std::collections::BTreeSet;
use std::fmt;

use super::model::{Control, Home, Room};
pub use super::names::fold;

/// Most suggestions a [`ResolveError::NotFound`] carries.
const MAX_SUGGESTIONS: usize = 5;

/// One possible answer to a name, as shown to the user: a room (`kind: "room"`, `room: None`) or
/// a control (`kind` is the Loxone type, e.g. `"LightControllerV2"`; `room` is its room's name).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Candidate {
    pub uuid: String,
    pub name: String,
    pub room: Option<String>,
    pub kind: String,
}

impl fmt::Display for Candidate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\"{}\" ({}", self.name, self.kind)?;
        if let Some(room) = &self.room {
            write!(f, " in {room}")?;
        }
        write!(f, ", uuid {})", self.uuid)
    }
}

/// Why a name did not resolve to exactly one room or control.
#[derive(Debug, Clone, PartialEq)]
pub enum ResolveError {
    /// Nothing matched; `suggestions` holds up to 5 close names (possibly none).
    NotFound {
        query: String,
        suggestions: Vec<Candidate>,
    },
    /// Several matched equally well; `candidates` lists every one of them.
    Ambiguous {
        query: String,
        candidates: Vec<Candidate>,
    },
}

impl fmt::Display for ResolveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn list(f: &mut fmt::Formatter<'_>, items: &[Candidate]) -> fmt::Result {
            for (i, c) in items.iter().enumerate() {
                if i > 0 {
                    f.write_str("; ")?;
                }
                write!(f, "{c}")?;
            }
            Ok(())
        }
        match self {
            ResolveError::NotFound { query, suggestions } => {
                write!(f, "nothing named \"{query}\" was found")?;
                if suggestions.is_empty() {
                    f.write_str("; list the rooms or controls to see the names in this home")
                } else {
                    f.write_str("; did you mean: ")?;
                    list(f, suggestions)
                }
            }
            ResolveError::Ambiguous { query, candidates } => {
                write!(f, "\"{query}\" matches {} entries: ", candidates.len())?;
                list(f, candidates)?;
                if candidates.iter().all(|c| c.kind == "room") {
                    f.write_str("; use a longer name or the uuid")
                } else {
                    f.write_str("; name the room (\"<name> in <room>\") or use the uuid")
                }
            }
        }
    }
}

impl std::error::Error for ResolveError {}

/// A control or sub-control with what resolution needs precomputed.
struct Entry<'a> {
    control: &'a Control,
    /// Top-level control (not a sub-control).
    top: bool,
    /// Room UUID: the control's own, else its parent's.
    room: Option<&'a str>,
    folded: String,
}

impl Home {
    /// Finds one room by UUID (case-insensitive), by folded name, or by a unique folded prefix,
    /// then substring, of its name.
    ///
    /// Errors: [`ResolveError::Ambiguous`] when several rooms match at the first step that has a
    /// match (candidates have `kind: "room"`, `room: None`); [`ResolveError::NotFound`] with up
    /// to 5 suggestions sharing a word with the query.
    pub fn resolve_room(&self, query: &str) -> Result<&Room, ResolveError> {
        let q = query.trim();
        if let Some(r) = self.rooms.iter().find(|r| r.uuid.eq_ignore_ascii_case(q)) {
            return Ok(r);
        }
        let fq = fold(q);
        let folded: Vec<(&Room, String)> = self.rooms.iter().map(|r| (r, fold(&r.name))).collect();
        if !fq.is_empty() {
            let steps: [&dyn Fn(&str) -> bool; 3] = [&|n| n == fq, &|n| n.starts_with(&fq), &|n| {
                n.contains(fq.as_str())
            }];
            for step in steps {
                let hits: Vec<&Room> = folded
                    .iter()
                    .filter(|(_, n)| step(n))
                    .map(|(r, _)| *r)
                    .collect();
                match hits.as_slice() {
                    [] => continue,
                    [one] => return Ok(one),
                    many => {
                        return Err(ResolveError::Ambiguous {
                            query: query.to_string(),
                            candidates: many.iter().map(|r| room_candidate(r)).collect(),
                        })
                    }
                }
            }
        }
        let words = words(&fq);
        let mut scored: Vec<(usize, &Room)> = folded
            .iter()
            .filter(|(_, n)| !n.is_empty())
            .map(|(r, n)| {
                let contained = usize::from(fq.contains(n.as_str())) * 10;
                (contained + shared(&words, n), *r)
            })
            .filter(|(score, _)| *score > 0)
            .collect();
        scored.sort_by_key(|(score, _)| std::cmp::Reverse(*score));
        Err(ResolveError::NotFound {
            query: query.to_string(),
            suggestions: scored
                .iter()
                .take(MAX_SUGGESTIONS)
                .map(|(_, r)| room_candidate(r))
                .collect(),
        })
    }

    /// Finds one control or sub-control.
    ///
    /// `room`: optional room name/UUID that restricts the search (resolved with
    /// [`Home::resolve_room`] first; its error is returned as is). `filter`: only controls for
    /// which it returns true are considered (e.g. only lighting controls). Room and filter apply
    /// to every step:
    /// 1. UUID, case-insensitive and exact, suffix included (`<uuid>/masterValue`);
    /// 2. folded name equality, top-level controls preferred over sub-controls;
    /// 3. room-qualified queries: `"<room> <name>"`, `"<name> <room>"`, `"<name> (<room>)"`,
    ///    `"<room>/<name>"`, `"<name> in <room>"` (folded), top-level preferred again.
    ///
    /// A sub-control's room is its own, else its parent's.
    ///
    /// Errors: [`ResolveError::Ambiguous`] with every candidate and its room name when a step
    /// finds several; [`ResolveError::NotFound`] with up to 5 suggestions (folded prefix and
    /// substring matches first, then names sharing words with the query) when none does.
    pub fn resolve_control(
        &self,
        query: &str,
        room: Option<&str>,
        filter: &dyn Fn(&Control) -> bool,
    ) -> Result<&Control, ResolveError> {
        let only_room = match room {
            Some(r) => Some(self.resolve_room(r)?),
            None => None,
        };
        let q = query.trim();
        let pool: Vec<Entry<'_>> = self
            .entries()
            .into_iter()
            .filter(|e| filter(e.control))
            .filter(|e| only_room.is_none_or(|r| e.room == Some(r.uuid.as_str())))
            .collect();

        if let Some(e) = pool.iter().find(|e| e.control.uuid.eq_ignore_ascii_case(q)) {
            return Ok(e.control);
        }
        let fq = fold(q);
        if fq.is_empty() {
            return Err(ResolveError::NotFound {
                query: query.to_string(),
                suggestions: Vec::new(),
            });
        }

        let by_name: Vec<&Entry<'_>> = pool.iter().filter(|e| e.folded == fq).collect();
        if let Some(found) = self.pick(query, by_name)? {
            return Ok(found);
        }

        let mut qualified: Vec<&Entry<'_>> = Vec::new();
        let rooms = self
            .rooms
            .iter()
            .filter(|r| only_room.is_none_or(|o| o.uuid == r.uuid));
        for r in rooms {
            for name in room_splits(&fq, &fold(&r.name)) {
                for e in pool.iter().filter(|e| e.room == Some(r.uuid.as_str())) {
                    if e.folded == name && !qualified.iter().any(|h| std::ptr::eq(*h, e)) {
                        qualified.push(e);
                    }
                }
            }
        }
        if let Some(found) = self.pick(query, qualified)? {
            return Ok(found);
        }

        Err(ResolveError::NotFound {
            query: query.to_string(),
            suggestions: self.suggestions(&fq, &pool),
        })
    }

    /// Top-level controls whose room is `room_uuid` (case-insensitive), in model order.
    pub fn controls_in_room(&self, room_uuid: &str) -> Vec<&Control> {
        self.controls
            .iter()
            .filter(|c| {
                c.room
                    .as_deref()
                    .is_some_and(|r| r.eq_ignore_ascii_case(room_uuid))
            })
            .collect()
    }

    /// Every control and sub-control, depth first in model order.
    fn entries(&self) -> Vec<Entry<'_>> {
        fn walk<'a>(
            list: &'a [Control],
            top: bool,
            parent_room: Option<&'a str>,
            out: &mut Vec<Entry<'a>>,
        ) {
            for c in list {
                let room = c.room.as_deref().or(parent_room);
                out.push(Entry {
                    control: c,
                    top,
                    room,
                    folded: fold(&c.name),
                });
                walk(&c.sub_controls, false, room, out);
            }
        }
        let mut out = Vec::new();
        walk(&self.controls, true, None, &mut out);
        out
    }

    /// One hit -> `Some`, none -> `None`, several -> `Ambiguous`; top-level controls win over
    /// sub-controls.
    fn pick<'a>(
        &self,
        query: &str,
        mut hits: Vec<&Entry<'a>>,
    ) -> Result<Option<&'a Control>, ResolveError> {
        if hits.iter().any(|e| e.top) {
            hits.retain(|e| e.top);
        }
        match hits.as_slice() {
            [] => Ok(None),
            [one] => Ok(Some(one.control)),
            many => Err(ResolveError::Ambiguous {
                query: query.to_string(),
                candidates: many.iter().map(|e| self.candidate(e)).collect(),
            }),
        }
    }

    /// Up to [`MAX_SUGGESTIONS`] entries close to the folded query `fq`.
    fn suggestions(&self, fq: &str, pool: &[Entry<'_>]) -> Vec<Candidate> {
        let words = words(fq);
        let mut scored: Vec<(usize, &Entry<'_>)> = pool
            .iter()
            .filter(|e| !e.folded.is_empty())
            .map(|e| {
                let close = e.folded.starts_with(fq)
                    || e.folded.contains(fq)
                    || (e.folded.len() >= 3 && fq.contains(e.folded.as_str()));
                let room = e
                    .room
                    .and_then(|r| self.room(r))
                    .map(|r| fold(&r.name))
                    .unwrap_or_default();
                let shared_words = shared(&words, &e.folded);
                // Room words only help a control that also shares a word of its own.
                let room_words = if shared_words > 0 {
                    shared(&words, &room)
                } else {
                    0
                };
                (usize::from(close) * 100 + shared_words * 2 + room_words, e)
            })
            .filter(|(score, _)| *score > 0)
            .collect();
        scored.sort_by_key(|(score, e)| (std::cmp::Reverse(*score), !e.top));
        scored
            .into_iter()
            .take(MAX_SUGGESTIONS)
            .map(|(_, e)| self.candidate(e))
            .collect()
    }

    fn candidate(&self, e: &Entry<'_>) -> Candidate {
        Candidate {
            uuid: e.control.uuid.clone(),
            name: e.control.name.clone(),
            room: e.room.and_then(|r| self.room(r)).map(|r| r.name.clone()),
            kind: e.control.kind.as_str().to_string(),
        }
    }
}

fn room_candidate(r: &Room) -> Candidate {
    Candidate {
        uuid: r.uuid.clone(),
        name: r.name.clone(),
        room: None,
        kind: "room".to_string(),
    }
}

/// The name parts of a folded query `fq` qualified with the folded room name `room`:
/// `"<room> <name>"` (also `"<room>/<name>"`, as `/` folds to a space), `"<name> <room>"`,
/// `"<name> in <room>"` and `"<name> (<room>)"`.
fn room_splits(fq: &str, room: &str) -> Vec<String> {
    let mut out = Vec::new();
    if room.is_empty() {
        return out;
    }
    let mut push = |s: &str| {
        let s = s.trim();
        if !s.is_empty() && !out.iter().any(|o| o == s) {
            out.push(s.to_string());
        }
    };
    if let Some(rest) = fq.strip_prefix(room).and_then(|r| r.strip_prefix(' ')) {
        push(rest);
    }
    let bracketed = format!("({room})");
    if let Some(rest) = fq.strip_suffix(bracketed.as_str()) {
        push(rest);
    }
    if let Some(rest) = fq.strip_suffix(room).and_then(|r| r.strip_suffix(' ')) {
        push(rest);
        if let Some(name) = rest.strip_suffix(" in") {
            push(name);
        }
    }
    out
}

/// The words of a folded string, as a set.
fn words(folded: &str) -> BTreeSet<&str> {
    folded.split(' ').filter(|w| !w.is_empty()).collect()
}

/// How many distinct words of `folded` are in `words`.
fn shared(words: &BTreeSet<&str>, folded: &str) -> usize {
    self::words(folded).intersection(words).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fold_normalises_accents_case_and_separators() {
        assert_eq!(fold("Küche"), "kuche");
        assert_eq!(fold("KÜCHE"), "kuche");
        assert_eq!(fold("Straße"), "strasse");
        assert_eq!(fold("STRASSE"), "strasse");
        assert_eq!(fold("Cæsar Øresund Œuvre"), "caesar oresund oeuvre");
        assert_eq!(
            fold("  Living_Room/Ceiling-Light.2  "),
            "living room ceiling light 2"
        );
        assert_eq!(fold("Sarah's  Bedroom"), "sarahs bedroom");
        assert_eq!(fold("Nepřiřazeno"), "neprirazeno");
        assert_eq!(fold("ﬁle"), "file");
        assert_eq!(fold(" -_/. "), "");
    }

    #[test]
    fn room_splits_cover_every_qualified_form() {
        assert_eq!(room_splits("kitchen ceiling", "kitchen"), vec!["ceiling"]);
        assert_eq!(room_splits("ceiling kitchen", "kitchen"), vec!["ceiling"]);
        assert_eq!(room_splits("ceiling (kitchen)", "kitchen"), vec!["ceiling"]);
        assert_eq!(
            room_splits("ceiling in kitchen", "kitchen"),
            vec!["ceiling in", "ceiling"]
        );
        assert!(room_splits("kitchenette", "kitchen").is_empty());
        assert!(room_splits("kitchen", "kitchen").is_empty());
    }
}
