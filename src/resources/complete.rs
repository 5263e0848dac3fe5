//! `completion/complete` for the resource templates' variables: values whose name, slug or
//! UUID starts with what was typed (accents and case ignored), or one of whose words does; at
//! most 100, sorted as the house lists them. The prompts' arguments are completed the same
//! way ([`crate::prompts::complete`], with [`matches`], [`rooms`] and [`finish`] from here).

use super::{room_key, slug, TEMPLATES};
use crate::home::resolve::fold;
use crate::home::{Family, Home};
use crate::mcp::{Completion, RpcError};

/// Most values one completion returns.
const MAX: usize = 100;

/// Whether `typed` (already folded) is a prefix of `name` or of one of its words, or of `key`.
pub(crate) fn matches(typed: &str, name: &str, key: &str) -> bool {
    if typed.is_empty() {
        return true;
    }
    let n = fold(name);
    let typed_slug = slug(typed);
    n.starts_with(typed)
        || n.split(' ').any(|w| w.starts_with(typed))
        || key.to_lowercase().starts_with(&typed_slug)
}

pub(crate) fn finish(values: Vec<String>) -> Completion {
    let mut values = values;
    values.dedup();
    let total = values.len();
    let has_more = total > MAX;
    values.truncate(MAX);
    Completion {
        values,
        total: Some(total),
        has_more,
    }
}

/// Room keys (for URIs) or room names (for prompts) matching `typed`.
pub(crate) fn rooms(home: &Home, typed: &str, as_key: bool) -> Vec<String> {
    home.rooms
        .iter()
        .filter(|r| matches(typed, &r.name, &room_key(home, r)))
        .map(|r| {
            if as_key {
                room_key(home, r)
            } else {
                r.name.clone()
            }
        })
        .collect()
}

/// Completion of the variable `argument` of the resource template `template` (`value`: what
/// was typed). An unknown template is -32602; a variable that takes no completion gives an
/// empty list.
pub fn complete(
    home: &Home,
    template: &str,
    argument: &str,
    value: &str,
) -> Result<Completion, RpcError> {
    let typed = fold(value);
    let typed = typed.as_str();
    if !TEMPLATES.iter().any(|(t, _, _)| *t == template) {
        return Err(RpcError::invalid_params(format!(
            "unknown resource template {template:?}"
        )));
    }
    Ok(finish(match argument {
        "room" => rooms(home, typed, true),
        "category" => {
            let mut v: Vec<String> = Family::ALL
                .iter()
                .map(|f| f.as_str().to_string())
                .filter(|f| matches(typed, f, f))
                .collect();
            v.extend(
                home.categories
                    .iter()
                    .filter(|c| matches(typed, &c.name, &home.category_key(c)))
                    .map(|c| home.category_key(c)),
            );
            v
        }
        "type" => home
            .types_present()
            .into_iter()
            .filter(|t| matches(typed, t, t))
            .map(str::to_string)
            .collect(),
        "uuid" => home
            .controls
            .iter()
            .filter(|c| matches(typed, &c.name, &c.uuid))
            .map(|c| c.uuid.clone())
            .collect(),
        _ => Vec::new(),
    }))
}
