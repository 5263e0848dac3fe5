//! The batch runner behind every room- and house-wide tool (lights, blinds,
//! `control_room_devices`, `control_multiple_devices`), and the scope targeting of the unified
//! tools.
//!
//! A tool first plans: one [`Item`] per control with the [`Action`]s to send (or the reason it
//! cannot be done). [`run`] then carries the plan out in order and reports every item in one
//! shape, the same for every tool:
//!
//! ```json
//! {"scope": "room", "target": "Küche", "action": "off", "value": null, "dry_run": false,
//!  "results": [{"device": {"uuid", "name", "type", "category", "loxone_category", "room", "secured"},
//!               "status": "ok" | "error" | "not_attempted" | "planned",
//!               "commands": ["<uuid>/<command>", ...],
//!               "error": {"code": "CONNECTION_ERROR", "message": "..."}, "note": "..."}],
//!  "summary": {"total", "succeeded", "failed", "not_attempted", "planned",
//!              "confirmed": n | null},
//!  "verification": "3 of 4 lights confirmed; Deckenlicht (Küche) did not respond" | null}
//! ```
//!
//! Verification: after the commands went out, [`run`] waits at most the house's verify timeout
//! (`[server] verify_timeout_ms`, default 1500 ms, 0 = off) for each item's effect, and reports
//! it per item as `verified: true | false | null` (null: not checked, e.g. dry run, error,
//! verification off). An item is confirmed when a change of its control's value arrives on the
//! change bus, or, while the link only polls, when a re-read of its primary value differs from
//! the value before the command or already shows the asked state (a switch `on` that was on).
//!
//! With `dry_run` nothing is sent: items whose commands could be built are `planned` and list
//! the exact commands. After the first error meaning the Miniserver is out of reach
//! ([`ControllerError::is_unreachable`]) nothing more is asked; the remaining items are
//! `not_attempted` (one timeout, not one per device). When nothing succeeded for that reason,
//! the whole call fails with `CONNECTION_ERROR`.
//!
//! The general batch tools live here too: `control_multiple_devices` (a list of
//! `control_device` operations) and `control_room_devices` (one action on a room's devices of
//! some families or Loxone types). Both plan each device with `control_device`'s own rules.

use serde_json::{json, Value};

use super::devices::{plan, plan_device, ControlDevice, Values, Verb};
use super::schema::{tool_args, words, Brief, Confirm, DryRun, Names};
use super::verify::{observable, verify_reporting, Target};
use super::view;
use super::{
    mark_unconfirmed, statuses, with_confirmation, Caller, Confirmation, Ctx, Reach, ToConfirm,
    Tool, ToolError,
};
use crate::home::bounds::PERCENT;
use crate::home::{
    Action, Control, ControllerError, Family, Home, House, Risk, Value as HValue, Word,
};

/// Most operations one `control_multiple_devices` call takes.
pub const MAX_OPERATIONS: usize = 50;

pub fn tools() -> Vec<Tool> {
    vec![
        Tool::new(
            "control_multiple_devices",
            "Control several devices",
            "Runs 1-50 control_device operations in order; a failure does not stop the others, each is reported (ok, error, not_attempted) with its commands. Over 10 need confirmation (see confirm).",
            control_multiple_devices,
        )
        .operates(Reach::Controls { room: "room" })
        .data(confirmable_result_schema),
        Tool::new(
            "control_room_devices",
            "Control a room's devices by type",
            "Applies one control_device action (and value) to a room's devices of the kinds in device_type(s): families (lighting, blinds, climate, audio, access, energy, other) or Loxone types (Switch, Jalousie). Skips central blocks; refuses alarms and secured controls. Over 10 devices need confirmation (see confirm).",
            control_room_devices,
        )
        .operates(Reach::RoomKinds { room: "room" })
        .data(confirmable_result_schema),
    ]
}

tool_args! {
    /// The arguments of `control_multiple_devices`: each operation exactly `control_device`'s
    /// arguments (so the two never drift apart), without their descriptions (the tool refers
    /// to control_device's).
    struct Multiple {
        operations: Vec<Brief<ControlDevice>> { min_items: 1, max_items: MAX_OPERATIONS },
        dry_run: DryRun,
        confirm: Confirm,
    }
}

fn control_multiple_devices(house: &Ctx, a: Multiple, caller: &Caller) -> Result<Value, ToolError> {
    let home = house.home();
    // Plan everything first: an operation whose action lacks what it needs rejects the call
    // before anything moves; unknown devices and unsupported actions become that operation's
    // error.
    let mut items = Vec::with_capacity(a.operations.len());
    for (i, Brief(op)) in a.operations.iter().enumerate() {
        match plan_device(house.house, &home, op, false) {
            Ok(p) => {
                items.push(Item::new(&home, p.control, vec![p.action]).with_action(p.action_name))
            }
            Err(ToolError::InvalidParams(m)) => {
                return Err(ToolError::InvalidParams(format!("operations[{i}]: {m}")))
            }
            Err(e) => items.push(
                Item::refused(json!({"query": op.device, "room": op.room}), e)
                    .with_action(op.action.as_str()),
            ),
        }
    }
    let ask = Ask::new("Operate", "devices").with_suffix(format!(" ({} operations)", items.len()));
    let header = header("batch", None, "batch", None);
    run_large(house, caller, items, (a.dry_run, a.confirm), ask, header)
}

/// [`run_confirmed`] for the general batch tools: they ask (`ask`) when they address more
/// than [`CONFIRM_ABOVE`] devices.
fn run_large(
    house: &House,
    caller: &Caller,
    items: Vec<Item>,
    (dry_run, confirm): (DryRun, Confirm),
    ask: Ask,
    header: Value,
) -> Result<Value, ToolError> {
    let opts = RunOptions {
        dry_run: dry_run.0,
        show_current: false,
    };
    let ask = (items.len() > CONFIRM_ABOVE).then_some(ask);
    run_confirmed(house, items, opts, caller, confirm.0, ask, header)
}

tool_args! {
    /// The arguments of `control_room_devices`.
    struct RoomDevices {
        room: String,
        action: Verb { selects: &["value"] },
        value: Option<f64> { range: PERCENT, about: "%: brightness or blind closed" },
        device_type: Option<String>,
        device_types: Option<Vec<String>> { min_items: 1 },
        dry_run: DryRun,
        confirm: Confirm,
    }
}

fn control_room_devices(house: &Ctx, a: RoomDevices, caller: &Caller) -> Result<Value, ToolError> {
    let home = house.home();
    let word = |field: &str, s: &str| {
        home.word(s)
            .map_err(|e| ToolError::InvalidParams(format!("{field}: {e}")))
    };
    let mut kinds = Vec::new();
    if let Some(t) = &a.device_type {
        kinds.push(word("device_type", t)?);
    }
    for (i, t) in a.device_types.iter().flatten().enumerate() {
        kinds.push(word(&format!("device_types[{i}]"), t)?);
    }
    if kinds.is_empty() {
        return Err(ToolError::InvalidParams(
            "device_type (a family or Loxone type) or device_types (a non-empty list) is required"
                .into(),
        ));
    }
    let room = home.resolve_room(&a.room)?;
    let wanted = |c: &Control| {
        !c.kind.is_central()
            && kinds.iter().any(|k| match k {
                Word::Family(Family::Lighting) => home.is_light(c),
                k => k.contains(&home, c),
            })
    };
    let controls: Vec<&Control> = home
        .controls_in_room(&room.uuid)
        .into_iter()
        .filter(|c| wanted(c))
        .collect();
    if controls.is_empty() {
        return Err(ToolError::Refused {
            code: "DEVICE_NOT_FOUND",
            message: format!("{} has no devices of the asked types", room.name),
        });
    }
    let values = Values::percent(a.value);
    let mut items = Vec::with_capacity(controls.len());
    for c in controls {
        match plan(house.house, &home, c, a.action, &values, false) {
            Ok(action) => items.push(Item::new(&home, c, vec![action])),
            Err(e @ ToolError::InvalidParams(_)) => return Err(e),
            Err(e) => items.push(Item::refused_for(&home, c, e)),
        }
    }
    let action = a.action.as_str();
    let value = a.value.map(|v| format!(" {v} %")).unwrap_or_default();
    let ask = Ask::new(format!("Apply \"{action}{value}\" to"), "devices");
    let header = header("room", Some(&room.name), action, a.value);
    run_large(house, caller, items, (a.dry_run, a.confirm), ask, header)
}

/// One planned operation: a control and what to send it, or why it cannot be done.
pub struct Item<'h> {
    /// The device record shown in the result.
    device: Value,
    control: Option<&'h Control>,
    actions: Vec<Action>,
    /// Shown as the item's `action` (batches of different actions).
    action: Option<String>,
    note: Option<String>,
    refused: Option<ToolError>,
}

impl<'h> Item<'h> {
    /// `actions` for `c`, sent in order.
    pub fn new(home: &Home, c: &'h Control, actions: Vec<Action>) -> Self {
        Item {
            device: view::device(home, c),
            control: Some(c),
            actions,
            action: None,
            note: None,
            refused: None,
        }
    }

    /// An item that fails without sending anything (unknown device, unsupported action).
    /// `device` is the record, or what the caller asked for when nothing matched.
    pub fn refused(device: Value, error: ToolError) -> Self {
        Item {
            device,
            control: None,
            actions: Vec::new(),
            action: None,
            note: None,
            refused: Some(error),
        }
    }

    /// Like [`Item::new`], but refused with `error` (e.g. a blind without slats).
    pub fn refused_for(home: &Home, c: &'h Control, error: ToolError) -> Self {
        Item {
            refused: Some(error),
            ..Item::new(home, c, Vec::new())
        }
    }

    pub fn with_note(mut self, note: Option<String>) -> Self {
        self.note = note;
        self
    }

    pub fn with_action(mut self, action: impl Into<String>) -> Self {
        self.action = Some(action.into());
        self
    }
}

/// What [`run`] did: one result per item and the counts.
pub struct Report {
    results: Vec<Value>,
    succeeded: usize,
    failed: usize,
    not_attempted: usize,
    planned: usize,
    dry_run: bool,
    out_of_reach: Option<ControllerError>,
    /// The first item's error, for single-device tools.
    first_error: Option<ToolError>,
    /// Confirmed items and the summary line, when effects were verified.
    verification: Option<(usize, String)>,
    /// Controls a device key may not touch, left out of the run (`"name (room)"`).
    skipped: Vec<String>,
}

impl Report {
    /// The tool's `data`: `header` (scope, target, action, value) plus `dry_run`, `results`
    /// and `summary`. Fails with `CONNECTION_ERROR` when nothing succeeded because the
    /// Miniserver is out of reach.
    pub fn into_data(self, header: Value) -> Result<Value, ToolError> {
        if self.results.is_empty() && !self.skipped.is_empty() {
            return Err(ToolError::Refused {
                code: "INSUFFICIENT_PERMISSIONS",
                message: format!(
                    "nothing was sent: none of these is one of the devices of this API key: {}",
                    self.skipped.join(", ")
                ),
            });
        }
        if !self.dry_run && self.succeeded == 0 {
            if let Some(e) = self.out_of_reach {
                return Err(ToolError::Controller(e));
            }
        }
        let mut out = header;
        out["dry_run"] = json!(self.dry_run);
        out["results"] = Value::Array(self.results);
        out["summary"] = json!({
            "total": self.succeeded + self.failed + self.not_attempted + self.planned,
            "succeeded": self.succeeded,
            "failed": self.failed,
            "not_attempted": self.not_attempted,
            "planned": self.planned,
            "confirmed": self.verification.as_ref().map(|v| v.0),
        });
        out["verification"] = json!(self.verification.map(|v| v.1));
        if !self.skipped.is_empty() {
            out["skipped"] = json!(self.skipped);
        }
        Ok(out)
    }

    /// For tools that name one device: its error is the call's error.
    pub fn into_single(mut self, header: Value) -> Result<Value, ToolError> {
        if !self.dry_run && self.succeeded == 0 {
            if let Some(e) = self.first_error.take() {
                return Err(e);
            }
        }
        self.into_data(header)
    }
}

/// Options of a run.
#[derive(Default, Clone, Copy)]
pub struct RunOptions {
    pub dry_run: bool,
    /// In a dry run, show each control's current state (`current`) next to the commands.
    pub show_current: bool,
}

/// Carries out (or, in a dry run, only describes) every item in order. For a device key, items
/// of controls it may not touch ([`Caller::permits`]) are left out and named in `skipped`;
/// when that leaves nothing, [`Report::into_data`] refuses the call.
pub fn run(house: &House, items: Vec<Item>, opts: RunOptions, caller: &Caller) -> Report {
    let (items, skipped) = withhold(house, items, caller);
    let mut report = run_permitted(house, items, opts, caller);
    report.skipped = skipped;
    report
}

/// For a caller limited to devices: `items` without those of controls it may not touch, and
/// the labels (`"name (room)"`) of those left out. Other callers: `items` as they are (a
/// scoped key's items are refused one by one when sent, see [`attempt`]).
fn withhold<'h>(
    house: &House,
    items: Vec<Item<'h>>,
    caller: &Caller,
) -> (Vec<Item<'h>>, Vec<String>) {
    if !caller.limited_to_devices() {
        return (items, Vec::new());
    }
    let home = house.home();
    let mut skipped = Vec::new();
    let kept = items
        .into_iter()
        .filter(|i| match i.control {
            Some(c) if caller.permits(&home, c).is_err() => {
                skipped.push(view::label(&home, c));
                false
            }
            _ => true,
        })
        .collect();
    (kept, skipped)
}

/// [`run`] of items already through [`withhold`].
fn run_permitted(house: &House, items: Vec<Item>, opts: RunOptions, caller: &Caller) -> Report {
    let mut values = view::ValueReader::new(house);
    let mut report = Report {
        results: Vec::with_capacity(items.len()),
        succeeded: 0,
        failed: 0,
        not_attempted: 0,
        planned: 0,
        dry_run: opts.dry_run,
        out_of_reach: None,
        first_error: None,
        verification: None,
        skipped: Vec::new(),
    };
    let verifying = !opts.dry_run && !house.verify_timeout().is_zero();
    // Subscribed before anything is sent, so no effect can slip past.
    let subscription = verifying.then(|| house.bus().subscribe(1024));
    let mut checks: Vec<(usize, &Control, Option<HValue>, Vec<Action>)> = Vec::new();
    let total = items.len();
    for (i, item) in items.into_iter().enumerate() {
        let mut rec = json!({"device": item.device});
        if let Some(a) = &item.action {
            rec["action"] = json!(a);
        }
        if let Some(n) = &item.note {
            rec["note"] = json!(n);
        }
        let mut commands = Vec::new();
        let seen = item
            .actions
            .last()
            .is_some_and(|a| item.control.is_some_and(|c| observable(c, a)));
        let before = match item.control {
            Some(c)
                if seen && verifying && item.refused.is_none() && report.out_of_reach.is_none() =>
            {
                house.value(c).ok().map(|v| v.value)
            }
            _ => None,
        };
        let status = match attempt(house, &item, opts, &mut commands, &mut report, caller) {
            Ok(s) => s,
            Err(e) => {
                rec["error"] = error_record(&e);
                report.first_error.get_or_insert(e);
                "error"
            }
        };
        if status == "not_attempted" {
            rec["error"] = match &report.out_of_reach {
                Some(e) => json!({"code": e.code(), "message": format!("not sent: {e}")}),
                None => {
                    json!({"code": "CANCELLED", "message": "not sent: the request was cancelled"})
                }
            };
        }
        if status == "planned" && opts.show_current {
            if let Some(c) = item.control {
                rec["current"] = values
                    .read(c)
                    .map_or(Value::Null, |v| view::state(c, &v.value));
            }
        }
        match status {
            "ok" => report.succeeded += 1,
            "planned" => report.planned += 1,
            "not_attempted" => report.not_attempted += 1,
            _ => report.failed += 1,
        }
        rec["commands"] = json!(commands);
        rec["status"] = json!(status);
        rec["verified"] = Value::Null;
        if !opts.dry_run {
            caller.progress(i + 1, total, &progress_line(house, &item, status));
        }
        if let (true, true, "ok", Some(c)) = (verifying, seen, status, item.control) {
            checks.push((report.results.len(), c, before, item.actions.clone()));
        }
        report.results.push(rec);
    }
    if let Some(sub) = subscription.filter(|_| !checks.is_empty()) {
        let targets: Vec<Target> = checks
            .iter()
            .map(|(_, c, before, actions)| Target {
                control: c,
                before: before.clone(),
                actions,
            })
            .collect();
        // Waiting for the devices is progress too: a notification each time more of them are
        // confirmed, counting on from the commands sent ("3 of 7 blinds confirmed").
        let noun = noun_of(house, checks.iter().map(|(_, c, _, _)| *c));
        let waited = targets.len();
        let confirmed = verify_reporting(house, &sub, &targets, house.verify_timeout(), &mut |n| {
            caller.progress(
                total + n,
                total + waited,
                &format!("{n} of {waited} {noun} confirmed"),
            )
        });
        let home = house.home();
        let mut missing = Vec::new();
        for ((i, c, _, _), ok) in checks.iter().zip(&confirmed) {
            report.results[*i]["verified"] = json!(ok);
            if !ok {
                missing.push(view::label(&home, c));
            }
        }
        let n = confirmed.iter().filter(|v| **v).count();
        let mut line = format!("{n} of {} {noun} confirmed", confirmed.len());
        if !missing.is_empty() {
            line.push_str(&format!("; {} did not respond", missing.join(", ")));
        }
        report.verification = Some((n, line));
    }
    report
}

/// A room or batch tool asks for confirmation (see [`run_confirmed`]) when it would address
/// more devices than this.
pub const CONFIRM_ABOVE: usize = 10;

/// What a confirmable run asks: "{verb} {n} {noun} in {r} rooms{suffix}?".
pub struct Ask {
    pub verb: String,
    pub noun: &'static str,
    pub suffix: String,
}

impl Ask {
    pub fn new(verb: impl Into<String>, noun: &'static str) -> Self {
        Ask {
            verb: verb.into(),
            noun,
            suffix: String::new(),
        }
    }

    pub fn with_suffix(mut self, suffix: impl Into<String>) -> Self {
        self.suffix = suffix.into();
        self
    }
}

/// The question of a confirmable run, counting the items that would be sent something:
/// "Switch off 23 lights in 9 rooms (Bad, Küche, ...)?".
pub fn question(house: &House, items: &[Item], ask: &Ask) -> String {
    let home = house.home();
    let acting: Vec<&Control> = items
        .iter()
        .filter(|i| i.refused.is_none())
        .filter_map(|i| i.control)
        .filter(|c| !c.is_secured)
        .collect();
    let mut rooms: Vec<&str> = acting.iter().filter_map(|c| home.room_name(c)).collect();
    rooms.sort_unstable();
    rooms.dedup();
    let n = acting.len();
    let rooms = match rooms.len() {
        0 => String::new(),
        1 => format!(" in {}", rooms[0]),
        r => format!(" in {r} rooms ({})", rooms.join(", ")),
    };
    format!("{} {n} {}{rooms}{}?", ask.verb, ask.noun, ask.suffix)
}

/// [`run`] and [`Report::into_data`], asking first when `ask` is given (house-wide or large
/// calls) and the call is no dry run: see [`Caller::confirm`]. Without confirmation nothing is
/// sent and the answer is the dry run, with `confirmation_required: true` (nobody could be
/// asked) or `cancelled: true` (the user said no).
pub fn run_confirmed(
    house: &House,
    items: Vec<Item>,
    opts: RunOptions,
    caller: &Caller,
    confirm: Option<bool>,
    ask: Option<Ask>,
    header: Value,
) -> Result<Value, ToolError> {
    // A control the owner put in the alarm or house-wide class asks whatever the size
    // (batches never open gates or doors: `devices::plan` refuses it).
    let owner_class = items
        .iter()
        .filter(|i| i.refused.is_none())
        .filter_map(|i| i.control)
        .map(|c| house.risk(c))
        .filter(|r| *r != Risk::Access)
        .max()
        .filter(|r| r.needs_confirmation());
    let risk = owner_class.unwrap_or(Risk::HouseWide);
    let ask = ask.or_else(|| owner_class.map(|_| Ask::new("Operate", "devices")));
    let Some(ask) = ask.filter(|_| !opts.dry_run) else {
        return run(house, items, opts, caller).into_data(header);
    };
    let (items, skipped) = withhold(house, items, caller);
    let q = (!items.is_empty() || skipped.is_empty()).then(|| question(house, &items, &ask));
    let controls: Vec<String> = items
        .iter()
        .filter_map(|i| i.control.map(|c| c.uuid.clone()))
        .collect();
    let command: Vec<String> = items
        .iter()
        .map(|i| {
            i.action.clone().unwrap_or_else(|| {
                i.actions
                    .iter()
                    .map(super::action_label)
                    .collect::<Vec<_>>()
                    .join(",")
            })
        })
        .collect();
    let run = |opts| {
        let mut report = run_permitted(house, items, opts, caller);
        report.skipped = skipped;
        report
    };
    let Some(q) = q else {
        return run(opts).into_data(header);
    };
    let outcome = caller.confirm(
        confirm,
        &ToConfirm {
            risk,
            tool: ask.noun,
            controls,
            command: format!("{}: {}", ask.verb, command.join("; ")),
            question: &q,
        },
    )?;
    if let Confirmation::Go(_) = outcome {
        let mut data = run(opts).into_data(header)?;
        mark_unconfirmed(&mut data, &q, &outcome);
        return Ok(data);
    }
    let dry = RunOptions {
        dry_run: true,
        ..opts
    };
    let mut data = run(dry).into_data(header)?;
    mark_unconfirmed(&mut data, &q, &outcome);
    Ok(data)
}

/// "Küche: Deckenlicht off" (with " failed" / " not sent" when it did not work), for progress.
fn progress_line(house: &House, item: &Item, status: &str) -> String {
    let what = item.action.clone().unwrap_or_else(|| {
        item.actions
            .iter()
            .map(super::action_label)
            .collect::<Vec<_>>()
            .join(", ")
    });
    let mut line = match item.control {
        Some(c) => {
            let home = house.home();
            match home.room_name(c) {
                Some(r) => format!("{r}: {} {what}", c.name),
                None => format!("{} {what}", c.name),
            }
        }
        None => {
            let q = item.device.get("query").unwrap_or(&item.device);
            format!(
                "{} {what}",
                q.as_str().map_or_else(|| q.to_string(), str::to_string)
            )
        }
    };
    match status {
        "error" => line.push_str(" failed"),
        "not_attempted" => line.push_str(" not sent"),
        _ => {}
    }
    line.trim().to_string()
}

/// "lights", "blinds" or "devices", for the verification line.
fn noun_of<'a>(house: &House, controls: impl Iterator<Item = &'a Control>) -> &'static str {
    let home = house.home();
    let mut all_lights = true;
    let mut all_blinds = true;
    for c in controls {
        all_lights &= home.is_light(c);
        all_blinds &= home.family(c) == Family::Blinds;
    }
    match (all_lights, all_blinds) {
        (true, _) => "lights",
        (_, true) => "blinds",
        _ => "devices",
    }
}

/// One item: its status word, or its error. `commands` collects the Loxone commands.
fn attempt(
    house: &House,
    item: &Item,
    opts: RunOptions,
    commands: &mut Vec<String>,
    report: &mut Report,
    caller: &Caller,
) -> Result<&'static str, ToolError> {
    if let Some(e) = &item.refused {
        return Err(e.clone());
    }
    let Some(c) = item.control else {
        return Err(ToolError::InvalidParams("nothing to control".into()));
    };
    // A key limited to rooms or categories learns nothing of other devices, not even from a
    // dry run (the commands themselves are checked again in Caller::act).
    caller.check_access(house, c)?;
    if c.is_secured {
        return Err(ToolError::Refused {
            code: "INSUFFICIENT_PERMISSIONS",
            message: format!(
                "{} is a secured control (visualisation password); not operated in a batch",
                c.name
            ),
        });
    }
    for action in &item.actions {
        commands.push(house.command(c, action)?.path());
    }
    if opts.dry_run {
        return Ok("planned");
    }
    if report.out_of_reach.is_some() || caller.cancelled() {
        return Ok("not_attempted");
    }
    for action in &item.actions {
        if let Err(e) = caller.act(house, c, action) {
            if e.stops_batch() {
                report.out_of_reach = Some(e.clone());
            }
            return Err(ToolError::Controller(e));
        }
    }
    Ok("ok")
}

/// `{"code", "message"}` of an item's error, codes per spec §7.1.
pub fn error_record(e: &ToolError) -> Value {
    json!({"code": e.code(), "message": e.to_string()})
}

/// The `data` schema shared by every batch tool: per item (`device`, `status`, the Loxone
/// `commands` `<uuid>/<command>`) and the `summary` counts.
pub fn result_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "results": statuses(&["ok", "error", "not_attempted", "planned"]),
            "summary": {"type": "object"}
        },
        "required": ["dry_run", "results", "summary"]
    })
}

/// [`result_schema`] of the batch tools that take `confirm`, with the confirmation outcome.
pub fn confirmable_result_schema() -> Value {
    with_confirmation(result_schema())
}

/// The header of a batch result.
pub fn header(scope: &str, target: Option<&str>, action: &str, value: Option<f64>) -> Value {
    json!({"scope": scope, "target": target, "action": action, "value": value})
}

words! {
    /// Which controls a unified tool acts on (`devices`, `all` and `house` are synonyms).
    pub enum Scope {
        /// Named devices (`target`: one name or a list).
        Device = "device" | "devices",
        /// One room (`target`: room name or UUID).
        Room = "room",
        /// A Loxone category (the user's name, e.g. "Beleuchtung") or a family (`lighting`).
        Category = "category",
        /// The whole house.
        System = "system" | "all" | "house",
    }
}

/// What `target` names, by scope (its description in the unified tools' schemas).
pub const TARGET: &str =
    "device: names or UUIDs; room: a room; category: a Loxone category or family; none for system";

/// `target` as a list of names: one or more, none of them blank.
fn target_names(target: Option<&Names>) -> Result<Option<Vec<String>>, ToolError> {
    match target {
        None => Ok(None),
        Some(Names(names)) if names.iter().any(|n| n.trim().is_empty()) => {
            Err(ToolError::InvalidParams(
                "target must be a non-empty string or array of strings".into(),
            ))
        }
        Some(Names(names)) => Ok(Some(names.clone())),
    }
}

/// What scope targeting needs to know about a family's members.
pub struct Members<'a> {
    /// The family of the tool (lighting, blinds).
    pub family: Family,
    /// Plural noun for messages ("lights", "blinds").
    pub noun: &'a str,
    /// Members of room and system scope (top-level controls).
    pub member: &'a dyn Fn(&Home, &Control) -> bool,
}

/// The controls a scope names, and the target's display name. Device names are all resolved
/// before anything is sent: a misunderstood name stops the whole call. `room` picks among
/// devices of the same name (scope device) or is the room (scope room without target).
pub fn select<'h>(
    home: &'h Home,
    scope: Scope,
    target: Option<&Names>,
    room: Option<&str>,
    m: &Members,
) -> Result<(Option<String>, Vec<&'h Control>), ToolError> {
    let names = target_names(target)?;
    let one = |names: Option<Vec<String>>, what: &str| -> Result<String, ToolError> {
        match names {
            Some(n) if n.len() == 1 => Ok(n.into_iter().next().unwrap_or_default()),
            Some(_) => Err(ToolError::InvalidParams(format!(
                "target must be one {what} for scope {}",
                scope.as_str()
            ))),
            None => Err(ToolError::InvalidParams(format!(
                "target ({what}) is required for scope {}",
                scope.as_str()
            ))),
        }
    };
    let none = |what: String| ToolError::Refused {
        code: "DEVICE_NOT_FOUND",
        message: format!("{what} has no {}", m.noun),
    };
    match scope {
        Scope::System => {
            if names.is_some() || room.is_some() {
                return Err(ToolError::InvalidParams(
                    "target and room do not go with scope system".into(),
                ));
            }
            let list = house_members(home, m.member);
            if list.is_empty() {
                return Err(none("the house".into()));
            }
            Ok((None, list))
        }
        Scope::Room => {
            let q = match (names, room) {
                (None, Some(r)) => r.to_string(),
                (names, None) => one(names, "room name or UUID")?,
                (Some(_), Some(_)) => {
                    return Err(ToolError::InvalidParams(
                        "give the room either as target or as room, not both".into(),
                    ))
                }
            };
            let r = home.resolve_room(&q)?;
            let list: Vec<&Control> = home
                .controls_in_room(&r.uuid)
                .into_iter()
                .filter(|c| (m.member)(home, c))
                .collect();
            if list.is_empty() {
                return Err(none(r.name.clone()));
            }
            Ok((Some(r.name.clone()), list))
        }
        Scope::Category => {
            if room.is_some() {
                return Err(ToolError::InvalidParams(
                    "room does not go with scope category".into(),
                ));
            }
            let q = one(names, "Loxone category name or family")?;
            let word = home
                .word(&q)
                .map_err(|e| ToolError::InvalidParams(format!("target: {e}")))?;
            let label = word.label().to_string();
            let list = house_members(home, &|h: &Home, c: &Control| {
                (m.member)(h, c) && word.contains(h, c) && !c.kind.is_central()
            });
            if list.is_empty() {
                return Err(none(format!("category {label}")));
            }
            Ok((Some(label), list))
        }
        Scope::Device => {
            let Some(names) = names else {
                return Err(ToolError::InvalidParams(format!(
                    "target (a {} name or UUID, or a list of them) is required for scope device",
                    m.noun.trim_end_matches('s')
                )));
            };
            let family = m.family;
            let mut list: Vec<&Control> = Vec::new();
            for n in &names {
                let c = home.resolve_control(n, room, &|c| home.family(c) == family)?;
                if !list.iter().any(|l| l.uuid == c.uuid) {
                    list.push(c);
                }
            }
            Ok((None, list))
        }
    }
}

/// Members of the whole house, room by room in room order, then those without a room.
fn house_members<'h>(home: &'h Home, member: &dyn Fn(&Home, &Control) -> bool) -> Vec<&'h Control> {
    let mut out: Vec<&Control> = home
        .rooms
        .iter()
        .flat_map(|r| home.controls_in_room(&r.uuid))
        .filter(|c| member(home, c))
        .collect();
    out.extend(
        home.controls
            .iter()
            .filter(|c| member(home, c))
            .filter(|c| c.room.as_deref().is_none_or(|r| home.room(r).is_none())),
    );
    out
}
