//! The Miniserver's own alerts (issue 31): `list_alerts` (its Message Center, what Loxone calls
//! System Status: active entries first, most severe first; the historic ones on request; the
//! newest notifications it pushed) and `confirm_alert` (confirm an entry, or only mark it read).
//!
//! What they show is the house's copy ([`House::alerts`](crate::home::House::alerts)), which the
//! Loxone adapter keeps current (`loxone::message_center`: read again whenever the Miniserver
//! says its entries changed); what they do goes through the house
//! ([`House::act_on_alert`](crate::home::House::act_on_alert)), the one path every command
//! takes: refused while the house is stopped, for an entry the Miniserver does not list, or a
//! confirmation the entry does not offer.

use serde_json::{json, Value};

use super::schema::{tool_args, words, Limit};
use super::{Caller, Ctx, Permission, Tool, ToolError};
use crate::home::{AlertOp, AlertsSnapshot, Home};

/// Notifications `list_alerts` shows, newest first.
const NOTIFICATIONS: usize = 5;

words! {
    /// What `confirm_alert` does with an entry.
    enum AlertAction {
        Confirm = "confirm",
        Read = "read",
    }
}

pub fn tools() -> Vec<Tool> {
    vec![
        Tool::new(
            "list_alerts",
            "House alerts",
            "The Miniserver's own alerts (Loxone Message Center), active first, most severe first; historic adds past ones; also its latest notifications.",
            list_alerts,
        ),
        Tool::new(
            "confirm_alert",
            "Confirm an alert",
            "Confirms an alert (id from list_alerts) like the Loxone app's OK; action read marks it read.",
            confirm_alert,
        )
        .permission(Permission::Control),
    ]
}

tool_args! {
    /// The arguments of `list_alerts`.
    struct ListArgs {
        historic: bool { otherwise: false },
        limit: Limit,
    }
}

/// What `list_alerts` and `home://alerts` show of `snap`: `{"available" (the Miniserver has a
/// Message Center), "active": [entry, most severe first], "counts": {"info", "warning",
/// "important", "critical"} (active ones), "historic": [entry, newest first] (only when asked),
/// "notifications": [the newest 5], "fetched_at", "last_error", "truncated"}`; each list at most
/// `limit` long. Entries as [`crate::home::Alert::to_json`] gives them.
pub fn alerts_data(home: &Home, snap: &AlertsSnapshot, historic: bool, limit: usize) -> Value {
    let active: Vec<Value> = snap.active().take(limit).map(|a| a.to_json(home)).collect();
    let counts: serde_json::Map<String, Value> = snap
        .active_counts()
        .iter()
        .map(|(s, n)| (s.as_str().to_string(), json!(n)))
        .collect();
    let total_active = snap.active().count();
    let past: Vec<&crate::home::Alert> = snap.entries.iter().filter(|a| a.historic).collect();
    let mut data = json!({
        "available": home.message_center.is_some(),
        "active": active,
        "counts": counts,
        "notifications": snap.notifications.iter().rev().take(NOTIFICATIONS)
            .map(|n| n.to_json(home)).collect::<Vec<_>>(),
        "fetched_at": snap.fetched_at.map(crate::time::iso8601),
        "last_error": snap.last_error,
        "truncated": total_active > limit || (historic && past.len() > limit),
    });
    if historic {
        data["historic"] = past.iter().take(limit).map(|a| a.to_json(home)).collect();
    }
    data
}

fn list_alerts(ctx: &Ctx, a: ListArgs, _caller: &Caller) -> Result<Value, ToolError> {
    let home = ctx.home();
    let mut snap = ctx.alerts();
    if home.message_center.is_some() && snap.fetched_at.is_none() && snap.last_error.is_none() {
        // Not read yet (just started): ask now rather than answer "none" (once; a failed read
        // shows as last_error and the watch asks again).
        if let Ok(fresh) = ctx.refresh_alerts() {
            snap = fresh;
        }
    }
    Ok(alerts_data(&home, &snap, a.historic, a.limit.0))
}

tool_args! {
    /// The arguments of `confirm_alert`.
    struct ConfirmArgs {
        alert: String,
        action: AlertAction { otherwise: AlertAction::Confirm },
    }
}

fn confirm_alert(ctx: &Ctx, a: ConfirmArgs, caller: &Caller) -> Result<Value, ToolError> {
    let op = match a.action {
        AlertAction::Confirm => AlertOp::Confirm,
        AlertAction::Read => AlertOp::Read,
    };
    let entry = ctx.act_on_alert(&a.alert, op, &caller.label)?;
    Ok(json!({"alert": entry.to_json(&ctx.home()), "action": a.action.as_str()}))
}
