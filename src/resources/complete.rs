//! `completion/complete` for the resource templates' variables and the prompts' arguments:
//! values whose name, slug or UUID starts with what was typed (accents and case ignored),
//! or one of whose words does; at most 100, sorted as the house lists them.

use serde_json::{Map, Value};

use super::{category_key, room_key, slug, types_present, TEMPLATES};
use crate::home::resolve::fold;
use crate::home::{Family, Home};
use crate::mcp::{Completion, CompletionRef, RpcError};

/// Most values one completion returns.
const MAX: usize = 100;

/// Whether `typed` (already folded) is a prefix of `name` or of one of its words, or of `key`.
fn matches(typed: &str, name: &str, key: &str) -> bool {
    if typed.is_empty() {
        return true;
    }
    let n = fold(name);
    let typed_slug = slug(typed);
    n.starts_with(typed)
        || n.split(' ').any(|w| w.starts_with(typed))
        || key.to_lowercase().starts_with(&typed_slug)
}

fn finish(values: Vec<String>) -> Completion {
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
fn rooms(home: &Home, typed: &str, as_key: bool) -> Vec<String> {
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

/// Completion of a template variable or a prompt argument. An unknown template or prompt is
/// -32602; an argument that takes no completion gives an empty list.
pub fn complete(
    home: &Home,
    reference: &CompletionRef,
    argument: &str,
    value: &str,
    context: &Map<String, Value>,
) -> Result<Completion, RpcError> {
    let typed = fold(value);
    let typed = typed.as_str();
    match reference {
        CompletionRef::Resource(template) => {
            if !TEMPLATES.iter().any(|(t, _, _)| t == template) {
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
                            .filter(|c| matches(typed, &c.name, &category_key(home, c)))
                            .map(|c| category_key(home, c)),
                    );
                    v
                }
                "type" => types_present(home)
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
        CompletionRef::Prompt(name) => {
            if !crate::prompts::NAMES.contains(&name.as_str()) {
                return Err(RpcError::invalid_params(format!("unknown prompt {name:?}")));
            }
            Ok(finish(match argument {
                "room" | "bedroom" => rooms(home, typed, false),
                "device" => {
                    let room = context
                        .get("room")
                        .and_then(Value::as_str)
                        .and_then(|r| home.resolve_room(r).ok())
                        .map(|r| r.uuid.clone());
                    let mut names: Vec<String> = home
                        .controls
                        .iter()
                        .filter(|c| room.is_none() || c.room == room)
                        .filter(|c| matches(typed, &c.name, &c.uuid))
                        .map(|c| c.name.clone())
                        .collect();
                    names.sort();
                    names.dedup();
                    names
                }
                _ => Vec::new(),
            }))
        }
    }
}
