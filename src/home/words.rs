//! The house's words: what a word an owner or an assistant uses for a group of controls names
//! in this house. [`Home::word`] is the one decision; `list_devices {category}`, the `category`
//! scope of `control_*_unified`, `control_room_devices {device_type}`, a key's categories
//! ([`super::scope`]), `home://devices/category/{category}` and its completions all ask it, so
//! one word names one set of controls everywhere ([`Word::contains`]).
//!
//! ## Precedence
//! A word is, in this order:
//! 1. one of **our family words** ([`Family::parse`]: `lighting`, `blinds`, `climate`, `audio`,
//!    `security`, `access`, `sensors`, `energy`, `other` and their synonyms such as `lights`,
//!    `shading`, `heating`, `alarm`, `gate`), the same in every house;
//! 2. one of the **owner's Loxone categories**, by UUID, or by name or URI slug with case and
//!    accents ignored ([`fold`], [`slug`]);
//! 3. a **Loxone control type** present in the house (`LightControllerV2`, case ignored).
//!
//! Why family words first, although the owner named the categories: every meaning keeps a
//! word (a family its canonical name, a category its UUID, which is also its key in resource
//! URIs when its name is a family word, see `resources::category_key`), whereas with the
//! categories first a family whose name and synonyms are all taken by categories could not be
//! named at all. And the categories that take family words are mostly Loxone Config's
//! defaults, not the owner's own words: every English project has `Lighting`, `Shading`,
//! `Heating`, `Audio`, `Sensors`, `Climate`, `Energy`, `Access`, `Gate`, `Multimedia`, many of
//! them empty (the UK demo Miniserver among the fixtures: `Sensors`, `Heating`, `Gate` and
//! `Multimedia` hold nothing, `Access` holds the keypad but not the intercom), so
//! `list_devices {category: "sensors"}` must list the sensors, not an empty category. Devices
//! are shown with their family as `category` (and the owner's category as `loxone_category`),
//! so the word an assistant reads back is a family word. Where category and family differ
//! (the SolarNetwork fixture files two window motors, Jalousie blocks, under `Window`, so its
//! `Shading` category holds one of three Jalousies), the owner's category stays reachable by
//! its UUID, which `home://system/categories` lists.
//!
//! ## Light moods
//! A LightControllerV2's moods are words too: the owner names them in Loxone Config and the
//! Miniserver pushes them as the `moodList` state (a JSON text `[{name, shortName, id, t5,
//! static, used}]`; 778 is the static all-off mood, 777 the static bright one;
//! loxone-protocol.md §5.3, intercom-alerts.md §4). [`House::mood`] reads a mood name (or
//! short name, or id) as names are read everywhere ([`fold`]: case and accents ignored) and
//! gives its id for `changeTo/{id}`; the command's effect is then verified against
//! `activeMoods` like any mood command. An unknown name is an error that lists the moods:
//! never a guess, and never a fallback to cycling moods with `plus` (which other Loxone
//! integrations send for an unknown name, so lights change scenes on their own).

use std::fmt;

use super::house::House;
use super::model::{Category, Control, ControlKind, Family, Home};
use super::names::{fold, slug};
use super::state::Value;

/// What a word names in a house ([`Home::word`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Word<'h> {
    /// One of our device families ([`Home::family`] decides a control's).
    Family(Family),
    /// One of the owner's Loxone categories (a control's own `cat`).
    Category(&'h Category),
    /// A Loxone control type present in the house (`type` of the structure file).
    Type(ControlKind),
}

impl Word<'_> {
    /// Whether control `c` (top-level or sub-control) is among what the word names: a member
    /// of the family ([`Home::family`]), a control filed in the category, a control of the
    /// type.
    pub fn contains(&self, home: &Home, c: &Control) -> bool {
        match self {
            Word::Family(f) => home.family(c) == *f,
            Word::Category(cat) => c.category.as_deref() == Some(cat.uuid.as_str()),
            Word::Type(k) => &c.kind == k,
        }
    }

    /// The word as answers show it: the family's name (`lighting`), the category's name as
    /// the owner wrote it, the type's name.
    pub fn label(&self) -> &str {
        match self {
            Word::Family(f) => f.as_str(),
            Word::Category(c) => &c.name,
            Word::Type(k) => k.as_str(),
        }
    }
}

/// A word that names nothing in the house, or several of the owner's categories; the text
/// names the words that do (families, categories, the control types present).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownWord(pub String);

impl fmt::Display for UnknownWord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UnknownWord {}

impl Home {
    /// What `word` names in this house: a family, one of the owner's Loxone categories or a
    /// control type, in that precedence (see the module docs for why). Every tool argument,
    /// key scope, resource and completion that takes such a word calls this.
    /// [`UnknownWord`] when it names nothing, or several categories of the same name.
    pub fn word(&self, word: &str) -> Result<Word<'_>, UnknownWord> {
        if let Some(f) = Family::parse(word) {
            return Ok(Word::Family(f));
        }
        let word = word.trim();
        if let Some(c) = self
            .categories
            .iter()
            .find(|c| c.uuid.eq_ignore_ascii_case(word))
        {
            return Ok(Word::Category(c));
        }
        let folded = fold(word);
        let lower = word.to_lowercase();
        let named: Vec<&Category> = self
            .categories
            .iter()
            .filter(|c| !folded.is_empty() && (fold(&c.name) == folded || slug(&c.name) == lower))
            .collect();
        match named.as_slice() {
            [c] => return Ok(Word::Category(c)),
            [] => {}
            several => {
                let uuids: Vec<&str> = several.iter().map(|c| c.uuid.as_str()).collect();
                return Err(UnknownWord(format!(
                    "{word:?} names several Loxone categories ({}); use a category's UUID",
                    uuids.join(", ")
                )));
            }
        }
        let types = self.types_present();
        if let Some(k) = types.iter().find(|k| fold(k) == folded) {
            return Ok(Word::Type(ControlKind::from_type(k)));
        }
        let categories: Vec<&str> = self.categories.iter().map(|c| c.name.as_str()).collect();
        Err(UnknownWord(format!(
            "{word:?} is no category; use a family ({}), a Loxone category ({}) or a control \
             type of this house ({})",
            Family::ALL.map(|f| f.as_str()).join(", "),
            categories.join(", "),
            types.join(", ")
        )))
    }

    /// The Loxone types of the house's top-level controls, sorted, each once.
    pub fn types_present(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self.controls.iter().map(|c| c.kind.as_str()).collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// The word that names category `c` and nothing else, as resource URIs and completions
    /// give it: its [`slug`] (`gaste-wc`) when [`Home::word`] reads that as `c`, else its UUID
    /// (its name is a family word, like `Lighting`, or empty, or shared with another category).
    pub fn category_key(&self, c: &Category) -> String {
        let s = slug(&c.name);
        match self.word(&s) {
            Ok(Word::Category(found)) if found.uuid == c.uuid => s,
            _ => c.uuid.clone(),
        }
    }
}

/// One of a LightControllerV2's moods, from its `moodList` state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mood {
    /// The id `changeTo/{id}` takes (778: all off; 777: bright).
    pub id: u32,
    /// The owner's name (`Fernsehen`).
    pub name: String,
    /// The owner's short name, when given.
    pub short_name: String,
}

/// The moods of a `moodList` text (`[{"name": "Fernsehen", "id": 2, ...}]`), in list order;
/// entries without a numeric id are skipped, a text that is no such list gives none.
pub fn moods(mood_list: &str) -> Vec<Mood> {
    let list: Vec<serde_json::Value> = serde_json::from_str(mood_list).unwrap_or_default();
    let moods = list.iter().filter_map(|m| {
        let id = m["id"]
            .as_u64()
            .or_else(|| m["id"].as_str()?.trim().parse().ok())?;
        let text = |k: &str| m[k].as_str().unwrap_or_default().to_string();
        Some(Mood {
            id: u32::try_from(id).ok()?,
            name: text("name"),
            short_name: text("shortName"),
        })
    });
    moods.collect()
}

/// A mood word that names no mood of the light, or a light whose moods are not known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownMood {
    /// The word as given.
    pub word: String,
    /// The light's name.
    pub light: String,
    /// The light's moods (`None`: not known, or the control has none).
    pub moods: Option<Vec<Mood>>,
}

impl fmt::Display for UnknownMood {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.moods {
            Some(moods) => write!(
                f,
                "{:?} is no mood of {}; its moods: {}",
                self.word,
                self.light,
                moods
                    .iter()
                    .map(|m| format!("{} ({})", m.name, m.id))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            None => write!(
                f,
                "the moods of {} are not known (a LightControllerV2's `moodList`, which the \
                 Miniserver pushes over its event stream); give the mood id in `scene`",
                self.light
            ),
        }
    }
}

impl std::error::Error for UnknownMood {}

/// The mood among `moods` that `word` names: its name or short name (folded), or its id.
/// Several moods of the same name: the first in list order (Loxone Config keeps names
/// apart; a list is the owner's).
pub fn mood_word<'m>(moods: &'m [Mood], word: &str) -> Option<&'m Mood> {
    let folded = fold(word);
    if folded.is_empty() {
        return None;
    }
    moods
        .iter()
        .find(|m| fold(&m.name) == folded)
        .or_else(|| {
            moods
                .iter()
                .find(|m| !m.short_name.is_empty() && fold(&m.short_name) == folded)
        })
        .or_else(|| {
            let id: u32 = word.trim().parse().ok()?;
            moods.iter().find(|m| m.id == id)
        })
}

impl House {
    /// The id of the mood `word` names on the LightControllerV2 `c`, read from its live
    /// `moodList` ([`mood_word`]); [`UnknownMood`] listing its moods when none is called so,
    /// or when its moods are not known (not a LightControllerV2, or no `moodList` pushed).
    pub fn mood(&self, c: &Control, word: &str) -> Result<u32, UnknownMood> {
        let list = (c.kind == ControlKind::LightControllerV2)
            .then(|| c.state("moodList"))
            .flatten()
            .and_then(|uuid| self.states().get(uuid))
            .and_then(|v| match v.value {
                Value::Text(t) => Some(moods(&t)),
                Value::Number(_) => None,
            })
            .filter(|m| !m.is_empty());
        let unknown = |moods| UnknownMood {
            word: word.to_string(),
            light: c.name.clone(),
            moods,
        };
        let Some(list) = list else {
            return Err(unknown(None));
        };
        match mood_word(&list, word) {
            Some(m) => Ok(m.id),
            None => Err(unknown(Some(list))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::home::model::CategoryKind;

    fn cat(uuid: &str, name: &str) -> Category {
        Category {
            uuid: uuid.into(),
            name: name.into(),
            kind: CategoryKind::Undefined,
            is_favorite: false,
            default_rating: 0,
        }
    }

    #[test]
    fn families_then_categories_then_types() {
        let home = Home {
            categories: vec![
                cat("c-1", "Lighting"),
                cat("c-2", "Gäste WC"),
                cat("c-3", "Switch"),
                cat("c-4", "Doppelt"),
                cat("c-5", "doppelt"),
            ],
            controls: vec![Control::new("u-1", "Licht", ControlKind::LightControllerV2)],
            ..Home::default()
        };
        assert_eq!(home.word("Lighting"), Ok(Word::Family(Family::Lighting)));
        assert_eq!(home.word(" lights "), Ok(Word::Family(Family::Lighting)));
        assert_eq!(home.word("C-1"), Ok(Word::Category(&home.categories[0])));
        assert_eq!(
            home.word("gaste wc"),
            Ok(Word::Category(&home.categories[1]))
        );
        assert_eq!(
            home.word("gaste-wc"),
            Ok(Word::Category(&home.categories[1]))
        );
        assert_eq!(home.word("switch"), Ok(Word::Category(&home.categories[2])));
        assert_eq!(
            home.word("lightcontrollerv2"),
            Ok(Word::Type(ControlKind::LightControllerV2))
        );
        let e = home.word("Doppelt").unwrap_err().to_string();
        assert!(e.contains("several") && e.contains("c-4, c-5"), "{e}");
        let text = home.word("Dimmer").unwrap_err().to_string();
        assert!(
            text.contains("Gäste WC") && text.contains("LightControllerV2"),
            "{text}"
        );
        assert!(home.word("").is_err());
        assert!(home.word("   ").is_err());
        assert_eq!(home.category_key(&home.categories[0]), "c-1");
        assert_eq!(home.category_key(&home.categories[1]), "gaste-wc");
        assert_eq!(home.category_key(&home.categories[2]), "switch");
        assert_eq!(home.category_key(&home.categories[3]), "c-4");
    }

    #[test]
    fn moods_by_name_short_name_or_id() {
        let list = moods(
            r#"[{"name":"Fernsehen","shortName":"TV","id":2,"static":false,"used":5,"t5":false},
                {"name":"Viel Licht","id":777,"static":true},{"name":"Aus","id":"778","static":true},
                {"name":"ohne id"}]"#,
        );
        assert_eq!(list.len(), 3);
        assert_eq!(mood_word(&list, "fernsehen").map(|m| m.id), Some(2));
        assert_eq!(mood_word(&list, " FERNSEHEN ").map(|m| m.id), Some(2));
        assert_eq!(mood_word(&list, "tv").map(|m| m.id), Some(2));
        assert_eq!(mood_word(&list, "viel-licht").map(|m| m.id), Some(777));
        assert_eq!(mood_word(&list, "778").map(|m| m.id), Some(778));
        assert_eq!(mood_word(&list, "Kino"), None);
        assert_eq!(mood_word(&list, "5"), None);
        assert_eq!(mood_word(&list, ""), None);
        assert!(moods("not json").is_empty());
        let e = UnknownMood {
            word: "Kino".into(),
            light: "Licht".into(),
            moods: Some(list),
        };
        assert_eq!(
            e.to_string(),
            "\"Kino\" is no mood of Licht; its moods: Fernsehen (2), Viel Licht (777), Aus (778)"
        );
    }
}
