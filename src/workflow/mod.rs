//! Workflows: named, stored sequences of tool calls ("good night": all lights off, blinds down,
//! living room to 18 °C). This module is the model and its structural rules (name, number of
//! steps, delays); [`store`] keeps workflows in SQLite so they survive restarts. Which tools a
//! step may call and whether its arguments fit that tool's schema is checked by the workflow
//! tools (`tools::workflows`), which know the catalogue.
//!
//! How a workflow runs: steps go in order; consecutive or not, steps sharing a
//! `parallel_group` number form one stage, placed where the group first appears, and run
//! concurrently; stages run one after another. A step's `delay_seconds` is waited just before
//! that step runs (inside a parallel stage each step waits its own delay).

pub mod store;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use store::{StoreError, WorkflowStore};

/// Longest workflow name, in characters.
pub const MAX_NAME_CHARS: usize = 64;
/// Longest description, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 1000;
/// Most steps in one workflow.
pub const MAX_STEPS: usize = 50;
/// Longest delay before one step, in seconds.
pub const MAX_DELAY_SECONDS: f64 = 3600.0;
/// Longest total waiting time of one run (sum over stages of their longest delay), in seconds:
/// a workflow runs inside one request, so it must end.
pub const MAX_TOTAL_DELAY_SECONDS: f64 = 3600.0;

/// One step: a tool of the catalogue with its arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    pub tool: String,
    #[serde(default)]
    pub arguments: Map<String, Value>,
    /// Seconds to wait before this step runs, 0-3600 (fractions allowed).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub delay_seconds: f64,
    /// Steps with the same number run concurrently.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel_group: Option<u32>,
}

fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

/// A workflow as given to `create_workflow`, before it is stored.
#[derive(Debug, Clone, PartialEq)]
pub struct NewWorkflow {
    pub name: String,
    pub description: Option<String>,
    pub steps: Vec<Step>,
    /// The highest permission among the steps' tools and execution itself (`read`, `control`,
    /// `security`, `admin`): a caller must hold it to execute the workflow.
    pub permission: String,
}

/// A stored workflow.
#[derive(Debug, Clone, PartialEq)]
pub struct Workflow {
    pub id: i64,
    pub name: String,
    pub description: Option<String>,
    pub steps: Vec<Step>,
    pub permission: String,
    /// ISO 8601 UTC.
    pub created_at: String,
}

/// A workflow named by its id or its name (names are unique, compared case-insensitively).
#[derive(Debug, Clone, PartialEq)]
pub enum WorkflowKey {
    Id(i64),
    Name(String),
}

impl std::fmt::Display for WorkflowKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WorkflowKey::Id(id) => write!(f, "id {id}"),
            WorkflowKey::Name(n) => write!(f, "{n:?}"),
        }
    }
}

/// Checks the structural rules: name 1-64 characters (not only spaces, no control
/// characters), description up to 1000 characters, 1-50 steps, each delay 0-3600 s, total
/// waiting time at most 3600 s. Errors name the field (`name`, `steps[3].delay_seconds`).
pub fn check_shape(name: &str, description: Option<&str>, steps: &[Step]) -> Result<(), String> {
    let chars = name.chars().count();
    if name.trim().is_empty() || chars > MAX_NAME_CHARS {
        return Err(format!(
            "name must have 1-{MAX_NAME_CHARS} characters (got {chars})"
        ));
    }
    if name.chars().any(char::is_control) {
        return Err("name must not contain control characters".into());
    }
    if let Some(d) = description {
        if d.chars().count() > MAX_DESCRIPTION_CHARS {
            return Err(format!(
                "description must have at most {MAX_DESCRIPTION_CHARS} characters"
            ));
        }
    }
    if steps.is_empty() || steps.len() > MAX_STEPS {
        return Err(format!(
            "steps must have 1-{MAX_STEPS} entries (got {})",
            steps.len()
        ));
    }
    for (i, s) in steps.iter().enumerate() {
        if !s.delay_seconds.is_finite() || !(0.0..=MAX_DELAY_SECONDS).contains(&s.delay_seconds) {
            return Err(format!(
                "steps[{i}].delay_seconds must be between 0 and {MAX_DELAY_SECONDS} (got {})",
                s.delay_seconds
            ));
        }
    }
    let total: f64 = stages(steps)
        .iter()
        .map(|stage| {
            stage
                .iter()
                .map(|&i| steps[i].delay_seconds)
                .fold(0.0, f64::max)
        })
        .sum();
    if total > MAX_TOTAL_DELAY_SECONDS {
        return Err(format!(
            "steps: the delays add up to {total} s; a workflow may wait at most {MAX_TOTAL_DELAY_SECONDS} s in total"
        ));
    }
    Ok(())
}

/// The stages a workflow runs in: indexes of steps, stage by stage. A step without a group is a
/// stage of its own; all steps of one group form one stage where the group first appears.
pub fn stages(steps: &[Step]) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = Vec::new();
    let mut group_stage: Vec<(u32, usize)> = Vec::new();
    for (i, s) in steps.iter().enumerate() {
        match s.parallel_group {
            None => out.push(vec![i]),
            Some(g) => match group_stage.iter().find(|(n, _)| *n == g) {
                Some(&(_, stage)) => out[stage].push(i),
                None => {
                    group_stage.push((g, out.len()));
                    out.push(vec![i]);
                }
            },
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(group: Option<u32>, delay: f64) -> Step {
        Step {
            tool: "list_rooms".into(),
            arguments: Map::new(),
            delay_seconds: delay,
            parallel_group: group,
        }
    }

    #[test]
    fn stages_follow_first_appearance() {
        let steps = vec![
            step(None, 0.0),
            step(Some(7), 0.0),
            step(None, 0.0),
            step(Some(7), 0.0),
            step(Some(1), 0.0),
        ];
        assert_eq!(stages(&steps), vec![vec![0], vec![1, 3], vec![2], vec![4]]);
    }

    #[test]
    fn shape_rules_name_the_field() {
        assert!(check_shape("ok", None, &[step(None, 0.0)]).is_ok());
        assert!(check_shape("", None, &[step(None, 0.0)])
            .unwrap_err()
            .starts_with("name"));
        assert!(check_shape(&"x".repeat(65), None, &[step(None, 0.0)])
            .unwrap_err()
            .starts_with("name"));
        assert!(check_shape(&"ü".repeat(64), None, &[step(None, 0.0)]).is_ok());
        assert!(check_shape("a\nb", None, &[step(None, 0.0)]).is_err());
        assert!(check_shape("ok", None, &[])
            .unwrap_err()
            .starts_with("steps"));
        assert!(check_shape("ok", None, &vec![step(None, 0.0); 51])
            .unwrap_err()
            .contains("1-50"));
        assert!(
            check_shape("ok", None, &[step(None, 0.0), step(None, 3601.0)])
                .unwrap_err()
                .starts_with("steps[1].delay_seconds")
        );
        assert!(check_shape("ok", None, &[step(None, -1.0)]).is_err());
        // Two full-hour delays in sequence exceed the total; in one parallel group they do not.
        assert!(
            check_shape("ok", None, &[step(None, 3600.0), step(None, 3600.0)])
                .unwrap_err()
                .contains("add up")
        );
        assert!(check_shape("ok", None, &[step(Some(1), 3600.0), step(Some(1), 3600.0)]).is_ok());
    }
}
