//! MCP prompts of the home server: conversations a home owner starts from a menu, each with
//! instructions naming the real tools and the current data embedded as resource contents
//! (the same JSON `resources/read` gives), so the assistant starts from facts.
//!
//! * `house_status_report` (room optional): a readable report of the house or one room.
//! * `energy_saving_review`: what wastes energy now, with previews of the fixes.
//! * `good_night_routine` (bedroom optional, arm_alarm optional yes/no): lights off, blinds
//!   down, checks windows and alarm: previewed with `dry_run: true` first, and done only after
//!   the owner confirms.
//! * `troubleshoot_device` (device required, room optional): why a device does not behave.
//!
//! An unknown prompt, a missing required argument or a room or device that names nothing is
//! -32602 (with suggestions).

use serde_json::{Map, Value};

use crate::home::resolve::ResolveError;
use crate::home::{Family, Home};
use crate::mcp::{
    Content, GetPromptResult, PromptArgument, PromptDescriptor, PromptMessage, RpcError,
};
use crate::resources;
use crate::tools::view::candidate_label;
use crate::tools::Ctx;

/// The prompt names, in `prompts/list` order.
pub const NAMES: [&str; 4] = [
    "house_status_report",
    "energy_saving_review",
    "good_night_routine",
    "troubleshoot_device",
];

fn arg(name: &str, description: &str, required: bool) -> PromptArgument {
    PromptArgument {
        name: name.into(),
        title: None,
        description: Some(description.into()),
        required,
    }
}

/// `prompts/list`.
pub fn list() -> Vec<PromptDescriptor> {
    vec![
        PromptDescriptor {
            name: NAMES[0].into(),
            title: Some("House status report".into()),
            description: "A short, readable report of what is going on at home (or in one room): lights, blinds, windows, temperatures, music, alarm and anything unusual.".into(),
            arguments: vec![arg("room", "Only this room (name, accents optional)", false)],
        },
        PromptDescriptor {
            name: NAMES[1].into(),
            title: Some("Energy saving review".into()),
            description: "Finds what wastes energy right now (lights on in empty rooms, heating with open windows, targets above need, music nobody hears) and proposes fixes, previewed before anything is changed.".into(),
            arguments: vec![],
        },
        PromptDescriptor {
            name: NAMES[2].into(),
            title: Some("Good night routine".into()),
            description: "Prepares the house for the night: lights off (bedroom last), blinds down, open windows and doors reported, alarm armed on request. Every step is previewed with dry_run first and done only after confirmation.".into(),
            arguments: vec![
                arg("bedroom", "The bedroom whose lights stay on until last (name)", false),
                arg("arm_alarm", "yes to arm the alarm at the end (asks for confirmation), no to leave it", false),
            ],
        },
        PromptDescriptor {
            name: NAMES[3].into(),
            title: Some("Troubleshoot a device".into()),
            description: "Finds out why a device does not respond or shows odd values: its states and their age, the link to the Miniserver, a safe test.".into(),
            arguments: vec![
                arg("device", "The device (name, \"Name [Room]\" or UUID)", true),
                arg("room", "The device's room, when its name exists in several rooms", false),
            ],
        },
    ]
}

/// A string argument, `None` when absent or blank; non-strings are -32602.
fn string_arg<'a>(args: &'a Map<String, Value>, name: &str) -> Result<Option<&'a str>, RpcError> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.trim())),
        Some(_) => Err(RpcError::invalid_params(format!(
            "prompt argument {name:?} must be a string"
        ))),
    }
}

fn resolve_error(what: &str, e: ResolveError) -> RpcError {
    let names: Vec<String> = match &e {
        ResolveError::NotFound { suggestions, .. } => {
            suggestions.iter().map(candidate_label).collect()
        }
        ResolveError::Ambiguous { candidates, .. } => {
            candidates.iter().map(candidate_label).collect()
        }
    };
    RpcError::invalid_params(format!("{what}: {e}")).with_details(names.join("; "))
}

fn user(text: String) -> PromptMessage {
    PromptMessage {
        role: "user",
        content: Content::Text { text },
    }
}

/// The resource `uri` embedded as a `user` message.
fn embed(ctx: &Ctx, uri: &str) -> Result<PromptMessage, RpcError> {
    let contents = resources::read(ctx, uri)?;
    let resource = contents
        .into_iter()
        .next()
        .ok_or_else(|| RpcError::internal(format!("{uri} has no contents")))?;
    Ok(PromptMessage {
        role: "user",
        content: Content::Resource { resource },
    })
}

/// `prompts/get`.
pub fn get(ctx: &Ctx, name: &str, args: &Map<String, Value>) -> Result<GetPromptResult, RpcError> {
    let home = ctx.home();
    let (description, messages) = match name {
        "house_status_report" => status_report(ctx, &home, args)?,
        "energy_saving_review" => energy_review(ctx, &home)?,
        "good_night_routine" => good_night(ctx, &home, args)?,
        "troubleshoot_device" => troubleshoot(ctx, &home, args)?,
        _ => {
            return Err(RpcError::invalid_params(format!("unknown prompt {name:?}"))
                .with_details(format!("prompts: {}", NAMES.join(", "))))
        }
    };
    Ok(GetPromptResult {
        description: Some(description),
        messages,
    })
}

type Built = (String, Vec<PromptMessage>);

fn status_report(ctx: &Ctx, home: &Home, args: &Map<String, Value>) -> Result<Built, RpcError> {
    match string_arg(args, "room")? {
        Some(q) => {
            let room = home.resolve_room(q).map_err(|e| resolve_error("room", e))?;
            let uri = format!("home://rooms/{}/overview", resources::room_key(home, room));
            Ok((
                format!("Status report for {}", room.name),
                vec![
                    user(format!(
                        "Give me a short status report for the room \"{}\": which lights are on, blinds that are not open, open windows, the temperature against its target, music playing, presence, and anything unusual. The room's current overview follows. For details call get_lights_status, get_blinds_status or get_climate_status with room \"{}\"; read {uri} again for fresh values. Do not change anything.",
                        room.name, room.name
                    )),
                    embed(ctx, &uri)?,
                ],
            ))
        }
        None => Ok((
            "Status report for the house".into(),
            vec![
                user("Give me a short status report of my home, room by room where it matters: lights on, blinds not open, open windows and doors, temperatures against their targets, music playing, presence, the alarm, and anything unusual (alerts, values the Miniserver has not reported). The current summary follows; for details call get_lights_status, get_blinds_status, get_climate_status, get_audio_status, get_security_status or get_sensors_status. Do not change anything.".into()),
                embed(ctx, "home://summary")?,
            ],
        )),
    }
}

fn energy_review(ctx: &Ctx, home: &Home) -> Result<Built, RpcError> {
    let mut messages = vec![
        user("Review my home for wasted energy right now: lights on in rooms without presence, blinds, heating or cooling with windows open, room targets above what the room needs, audio playing where nobody is. The current summary follows (and the meters, if there are any). Propose concrete fixes as tool calls (control_lights_unified, control_room_lights, set_room_temperature, set_room_mode with mode eco, control_audio_zone), show each with dry_run: true first where the tool has it, and change nothing until I confirm.".into()),
        embed(ctx, "home://summary")?,
    ];
    if home
        .controls
        .iter()
        .any(|c| home.family(c) == Family::Energy)
    {
        messages.push(embed(ctx, "home://energy")?);
    }
    Ok(("Energy saving review".into(), messages))
}

fn good_night(ctx: &Ctx, home: &Home, args: &Map<String, Value>) -> Result<Built, RpcError> {
    let bedroom = match string_arg(args, "bedroom")? {
        Some(q) => Some(
            home.resolve_room(q)
                .map_err(|e| resolve_error("bedroom", e))?,
        ),
        None => None,
    };
    let arm = match string_arg(args, "arm_alarm")?
        .map(str::to_lowercase)
        .as_deref()
    {
        None | Some("no" | "false" | "nein") => false,
        Some("yes" | "true" | "ja") => true,
        Some(other) => {
            return Err(RpcError::invalid_params(format!(
                "arm_alarm must be yes or no (got {other:?})"
            )))
        }
    };
    let mut text = String::from(
        "Prepare the house for the night. Work in two phases.\n\
         Phase 1, preview only: look at the summary below, then call control_all_lights with {\"action\": \"off\", \"dry_run\": true} and control_all_rolladen with {\"action\": \"down\", \"dry_run\": true}. Show me the planned commands, list open windows and doors (get_sensors_status with type door_window) and music still playing (get_audio_status).\n\
         Phase 2, only after I say yes: run the same calls without dry_run and with \"confirm\": true (I have confirmed), and report what failed.",
    );
    if let Some(r) = bedroom {
        text.push_str(&format!(
            "\nKeep the lights of \"{}\" on until the end: preview the other rooms with control_room_lights (room, action off, dry_run true) instead of control_all_lights, and switch \"{}\" off last, after asking.",
            r.name, r.name
        ));
    }
    if arm {
        text.push_str("\nAt the very end, after a separate confirmation, arm the alarm with arm_alarm (delayed: true); a person confirms it. Never disarm anything.");
    } else {
        text.push_str("\nDo not arm or disarm the alarm.");
    }
    Ok((
        "Good night routine (previewed with dry runs, done after confirmation)".into(),
        vec![user(text), embed(ctx, "home://summary")?],
    ))
}

fn troubleshoot(ctx: &Ctx, home: &Home, args: &Map<String, Value>) -> Result<Built, RpcError> {
    let Some(device) = string_arg(args, "device")? else {
        return Err(RpcError::invalid_params(
            "troubleshoot_device needs the argument \"device\"",
        ));
    };
    let room = string_arg(args, "room")?;
    let c = home
        .resolve_control(device, room, &|_| true)
        .map_err(|e| resolve_error("device", e))?;
    let label = crate::tools::view::label(home, c);
    let uri = format!("home://devices/{}", c.uuid);
    Ok((
        format!("Troubleshooting {label}"),
        vec![
            user(format!(
                "The device {label} (type {}, uuid {}) does not behave as expected. Find out why, step by step:\n\
                 1. Look at its record and states below: values that are null have not been reported by the Miniserver; a large age_secs means the value is old.\n\
                 2. Check the link to the Miniserver in the system status below (mode, last_error, last_event_secs).\n\
                 3. Read it fresh with list_devices (type {}, include_state true) and compare.\n\
                 4. Only if I agree, send one harmless command with control_device and check the result's status and the value it reports.\n\
                 Explain what you find in plain words and what I can do about it.",
                c.kind.as_str(), c.uuid, c.kind.as_str()
            )),
            embed(ctx, &uri)?,
            embed(ctx, "home://system/status")?,
        ],
    ))
}
