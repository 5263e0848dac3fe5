//! The conformance fixture: a [`Handler`] exposing exactly the tools, resources, prompts and
//! completions that the official MCP conformance suite (`@modelcontextprotocol/conformance`
//! 0.1.16, server scenarios) calls by name (appendix A of `research/mcp-notes.md`).
//!
//! It is not part of the product: only the `conformance-fixture` binary serves it, through the
//! same MCP core ([`home_mcp::mcp`]) and HTTP transport ([`home_mcp::http`]) as `home-mcp serve`, so a
//! green suite run says the core and the transport follow the protocol. Tools that talk back
//! to the client mid-call (logging, progress, sampling, elicitation) use
//! [`RequestContext::peer`]; without a peer they answer with `isError: true` naming why. The
//! `test_input_required_result_*` tools and prompt (suite 0.2.x, MCP 2026-07-28) ask through
//! multi round-trip requests ([`RequestContext::input`], `home_mcp::mcp::input`).

use std::time::Duration;

use base64::prelude::{Engine as _, BASE64_STANDARD};
use serde_json::{json, Map, Value};

use home_mcp::mcp::input::{ElicitAnswer, InputRequest, InputRequired, Round};
use home_mcp::mcp::{
    CallToolResult, Completion, CompletionRef, Content, GetPromptResult, Handler, Implementation,
    LogLevel, PromptArgument, PromptDescriptor, PromptMessage, RequestContext, ResourceContents,
    ResourceDescriptor, ResourceTemplate, RpcError, TaskSupport, ToolAnnotations, ToolDescriptor,
};

/// A 1x1 PNG (red pixel).
pub const PNG_BASE64: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

/// How long a server-to-client request (sampling, elicitation) may wait for the client.
const PEER_TIMEOUT: Duration = Duration::from_secs(30);

/// The longest `slow_compute` (seconds).
const MAX_COMPUTE_SECONDS: f64 = 120.0;

/// Pause between the log and progress notifications of the streaming tools.
const STEP: Duration = Duration::from_millis(50);

/// A tiny valid WAV file: RIFF/WAVE, PCM, mono, 8 kHz, 8 bit, 8 samples of silence.
pub fn wav_bytes() -> Vec<u8> {
    let samples = [0x80u8; 8];
    let mut b = Vec::with_capacity(44 + samples.len());
    b.extend_from_slice(b"RIFF");
    b.extend_from_slice(&(36 + samples.len() as u32).to_le_bytes());
    b.extend_from_slice(b"WAVEfmt ");
    b.extend_from_slice(&16u32.to_le_bytes()); // fmt chunk size
    b.extend_from_slice(&1u16.to_le_bytes()); // PCM
    b.extend_from_slice(&1u16.to_le_bytes()); // mono
    b.extend_from_slice(&8000u32.to_le_bytes()); // sample rate
    b.extend_from_slice(&8000u32.to_le_bytes()); // byte rate
    b.extend_from_slice(&1u16.to_le_bytes()); // block align
    b.extend_from_slice(&8u16.to_le_bytes()); // bits per sample
    b.extend_from_slice(b"data");
    b.extend_from_slice(&(samples.len() as u32).to_le_bytes());
    b.extend_from_slice(&samples);
    b
}

/// The fixture handler (stateless).
#[derive(Debug, Default, Clone, Copy)]
pub struct ConformanceFixture;

type Run = fn(&Map<String, Value>, &RequestContext) -> Result<CallToolResult, RpcError>;

struct FixtureTool {
    name: &'static str,
    description: &'static str,
    input_schema: fn() -> Value,
    run: Run,
}

fn no_args() -> Value {
    json!({"type": "object", "properties": {}})
}

fn text(t: impl Into<String>) -> Content {
    Content::Text { text: t.into() }
}

fn ok(content: Vec<Content>) -> Result<CallToolResult, RpcError> {
    Ok(CallToolResult {
        content,
        structured_content: None,
        is_error: false,
    })
}

fn tool_error(message: impl Into<String>) -> Result<CallToolResult, RpcError> {
    Ok(CallToolResult {
        content: vec![text(message)],
        structured_content: None,
        is_error: true,
    })
}

fn image() -> Content {
    Content::Image {
        data: PNG_BASE64.into(),
        mime_type: "image/png".into(),
    }
}

fn string_arg<'a>(args: &'a Map<String, Value>, name: &str) -> Result<&'a str, RpcError> {
    match args.get(name) {
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(RpcError::invalid_params(format!("{name} must be a string"))),
        None => Err(RpcError::invalid_params(format!("{name} is required"))),
    }
}

/// Sends `method` to the client and answers with `describe(result)`, or a tool error when the
/// transport has no way back or the client refused.
fn ask_client(
    ctx: &RequestContext,
    method: &str,
    params: Value,
    describe: fn(&Value) -> String,
) -> Result<CallToolResult, RpcError> {
    let Some(peer) = &ctx.peer else {
        return tool_error(format!("this transport cannot send {method} to the client"));
    };
    match peer.0.request(method, params, PEER_TIMEOUT) {
        Ok(result) => ok(vec![text(describe(&result))]),
        Err(e) => tool_error(format!("{method} failed: {}", e.message)),
    }
}

/// Three `notifications/message` at info, 50 ms apart (sent only at a level the client asked
/// for), then a text result.
fn log_three(ctx: &RequestContext) -> Result<CallToolResult, RpcError> {
    for (i, msg) in [
        "Tool execution started",
        "Tool processing data",
        "Tool execution completed",
    ]
    .iter()
    .enumerate()
    {
        if i > 0 {
            std::thread::sleep(STEP);
        }
        ctx.log(LogLevel::Info, "conformance", json!(msg));
    }
    ok(vec![text("Tool with logging executed successfully")])
}

fn elicitation_answer(result: &Value) -> String {
    format!(
        "User response: action={}, content={}",
        result.get("action").and_then(Value::as_str).unwrap_or("?"),
        result.get("content").cloned().unwrap_or(Value::Null)
    )
}

/// The multi round-trip round of a 2026-07-28 request; a tool error for older requests.
fn round(ctx: &RequestContext) -> Result<&Round, RpcError> {
    ctx.input.as_deref().ok_or_else(|| {
        RpcError::invalid_params(
            "this tool needs a MCP 2026-07-28 request (multi round-trip requests)",
        )
    })
}

/// A form elicitation with string-or-other `properties`, all of `required` required.
fn elicit(message: &str, properties: Value, required: &[&str]) -> InputRequest {
    InputRequest::Elicitation {
        message: message.into(),
        requested_schema: json!({"type": "object", "properties": properties, "required": required}),
    }
}

fn ask_name(message: &str) -> InputRequest {
    elicit(message, json!({"name": {"type": "string"}}), &["name"])
}

fn sampling(question: &str, max_tokens: u32) -> InputRequest {
    InputRequest::Sampling(json!({
        "messages": [{"role": "user", "content": {"type": "text", "text": question}}],
        "maxTokens": max_tokens
    }))
}

/// The text of a `CreateMessageResult` (`content.text`), or its JSON.
fn sampled_text(r: &Value) -> String {
    r.pointer("/content/text")
        .and_then(Value::as_str)
        .map_or_else(|| r.to_string(), str::to_string)
}

/// The URIs of a `ListRootsResult`, comma-separated.
fn root_uris(r: &Value) -> String {
    r.get("roots")
        .and_then(Value::as_array)
        .map(|roots| {
            roots
                .iter()
                .filter_map(|x| x.get("uri").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default()
}

fn tools() -> Vec<FixtureTool> {
    vec![
        FixtureTool {
            name: "test_simple_text",
            description: "Returns a fixed text content block.",
            input_schema: no_args,
            run: |_, _| ok(vec![text("This is a simple text response for testing.")]),
        },
        FixtureTool {
            name: "test_image_content",
            description: "Returns an image content block (1x1 PNG, base64).",
            input_schema: no_args,
            run: |_, _| ok(vec![image()]),
        },
        FixtureTool {
            name: "test_audio_content",
            description: "Returns an audio content block (a tiny WAV, base64).",
            input_schema: no_args,
            run: |_, _| {
                ok(vec![Content::Audio {
                    data: BASE64_STANDARD.encode(wav_bytes()),
                    mime_type: "audio/wav".into(),
                }])
            },
        },
        FixtureTool {
            name: "test_embedded_resource",
            description: "Returns an embedded text resource (test://embedded-resource).",
            input_schema: no_args,
            run: |_, _| {
                ok(vec![Content::Resource {
                    resource: ResourceContents::text(
                        "test://embedded-resource",
                        "text/plain",
                        "This is an embedded resource content.",
                    ),
                }])
            },
        },
        FixtureTool {
            name: "test_multiple_content_types",
            description: "Returns text, an image and an embedded JSON resource in one result.",
            input_schema: no_args,
            run: |_, _| {
                ok(vec![
                    text("Multiple content types test:"),
                    image(),
                    Content::Resource {
                        resource: ResourceContents::text(
                            "test://mixed-content-resource",
                            "application/json",
                            json!({"test": "data", "value": 123}).to_string(),
                        ),
                    },
                ])
            },
        },
        FixtureTool {
            name: "test_tool_with_logging",
            description: "Sends three notifications/message (info, 50 ms apart), then returns.",
            input_schema: no_args,
            run: |_, ctx| log_three(ctx),
        },
        FixtureTool {
            name: "test_logging_tool",
            description: "2026-07-28 diagnostic: logs as test_tool_with_logging does, so only at a requested logLevel.",
            input_schema: no_args,
            run: |_, ctx| log_three(ctx),
        },
        FixtureTool {
            name: "test_missing_capability",
            description: "2026-07-28 diagnostic: needs the client's sampling capability (-32021 without it).",
            input_schema: no_args,
            run: |_, _| ok(vec![text("The client declared the sampling capability.")]),
        },
        FixtureTool {
            name: "test_streaming_elicitation",
            description: "2026-07-28 diagnostic: asks the user (elicitation/create) only where the request may ask.",
            input_schema: no_args,
            run: |_, ctx| {
                if !ctx.can_elicit() {
                    return ok(vec![text(
                        "Nothing was asked: this request cannot carry a request to the client.",
                    )]);
                }
                let params = json!({
                    "message": "Please confirm",
                    "requestedSchema": {"type": "object",
                        "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
                });
                ask_client(ctx, "elicitation/create", params, elicitation_answer)
            },
        },
        FixtureTool {
            name: "test_error_handling",
            description: "Always fails: returns isError true with a text explanation.",
            input_schema: no_args,
            run: |_, _| tool_error("This tool intentionally returns an error for testing"),
        },
        FixtureTool {
            name: "test_tool_with_progress",
            description: "Reports progress 0, 50, 100 of 100 (50 ms apart) for the request's progressToken.",
            input_schema: no_args,
            run: |_, ctx| {
                for (i, p) in [0.0, 50.0, 100.0].into_iter().enumerate() {
                    if i > 0 {
                        std::thread::sleep(STEP);
                    }
                    ctx.progress(p, Some(100.0), Some(&format!("Completed step {i} of 2")));
                }
                ok(vec![text("Tool with progress executed successfully")])
            },
        },
        FixtureTool {
            name: "test_sampling",
            description: "Asks the client's LLM (sampling/createMessage) to answer the prompt.",
            input_schema: || {
                json!({"type": "object",
                    "properties": {"prompt": {"type": "string", "description": "The prompt to send to the LLM"}},
                    "required": ["prompt"]})
            },
            run: |args, ctx| {
                let prompt = string_arg(args, "prompt")?;
                let params = json!({
                    "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
                    "maxTokens": 100
                });
                ask_client(ctx, "sampling/createMessage", params, |r| {
                    let answer = r
                        .pointer("/content/text")
                        .and_then(Value::as_str)
                        .unwrap_or("(no text)");
                    format!("LLM response: {answer}")
                })
            },
        },
        FixtureTool {
            name: "test_elicitation",
            description: "Asks the user (elicitation/create) for a username and an email.",
            input_schema: || {
                json!({"type": "object",
                    "properties": {"message": {"type": "string", "description": "The message to show the user"}},
                    "required": ["message"]})
            },
            run: |args, ctx| {
                let message = string_arg(args, "message")?;
                let params = json!({
                    "message": message,
                    "requestedSchema": {
                        "type": "object",
                        "properties": {
                            "username": {"type": "string", "description": "User's response"},
                            "email": {"type": "string", "description": "User's email address"}
                        },
                        "required": ["username", "email"]
                    }
                });
                ask_client(ctx, "elicitation/create", params, elicitation_answer)
            },
        },
        FixtureTool {
            name: "test_elicitation_sep1034_defaults",
            description: "Elicits a form whose fields carry defaults (string, integer, number, enum, boolean; SEP-1034).",
            input_schema: no_args,
            run: |_, ctx| {
                let params = json!({
                    "message": "Please review and update the form fields with defaults",
                    "requestedSchema": {
                        "type": "object",
                        "properties": {
                            "name": {"type": "string", "description": "User name", "default": "John Doe"},
                            "age": {"type": "integer", "description": "User age", "default": 30},
                            "score": {"type": "number", "description": "User score", "default": 95.5},
                            "status": {"type": "string", "description": "User status",
                                "enum": ["active", "inactive", "pending"], "default": "active"},
                            "verified": {"type": "boolean", "description": "Verification status", "default": true}
                        },
                        "required": []
                    }
                });
                ask_client(ctx, "elicitation/create", params, elicitation_answer)
            },
        },
        FixtureTool {
            name: "test_elicitation_sep1330_enums",
            description: "Elicits a form with the five enum schema shapes of SEP-1330.",
            input_schema: no_args,
            run: |_, ctx| {
                let params = json!({
                    "message": "Please select options from the enum fields",
                    "requestedSchema": {
                        "type": "object",
                        "properties": {
                            "untitledSingle": {"type": "string", "description": "Select one option",
                                "enum": ["option1", "option2", "option3"]},
                            "titledSingle": {"type": "string", "description": "Select one option with titles",
                                "oneOf": [
                                    {"const": "value1", "title": "First Option"},
                                    {"const": "value2", "title": "Second Option"},
                                    {"const": "value3", "title": "Third Option"}
                                ]},
                            "legacyEnum": {"type": "string", "description": "Select one option (legacy)",
                                "enum": ["opt1", "opt2", "opt3"],
                                "enumNames": ["Option One", "Option Two", "Option Three"]},
                            "untitledMulti": {"type": "array", "description": "Select multiple options",
                                "minItems": 1,
                                "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
                            "titledMulti": {"type": "array", "description": "Select multiple options with titles",
                                "minItems": 1,
                                "items": {"anyOf": [
                                    {"const": "value1", "title": "First Choice"},
                                    {"const": "value2", "title": "Second Choice"},
                                    {"const": "value3", "title": "Third Choice"}
                                ]}}
                        },
                        "required": []
                    }
                });
                ask_client(ctx, "elicitation/create", params, elicitation_answer)
            },
        },
        FixtureTool {
            name: "json_schema_2020_12_tool",
            description: "Tool with JSON Schema 2020-12 features",
            input_schema: || {
                json!({
                    "$schema": "https://json-schema.org/draft/2020-12/schema",
                    "type": "object",
                    "$defs": {
                        "address": {
                            "$anchor": "addressDef",
                            "type": "object",
                            "properties": {
                                "street": {"type": "string"},
                                "city": {"type": "string"}
                            }
                        }
                    },
                    "properties": {
                        "name": {"type": "string"},
                        "address": {"$ref": "#/$defs/address"},
                        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                        "phone": {"type": "string"},
                        "email": {"type": "string"}
                    },
                    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
                    "if": {
                        "properties": {"contactMethod": {"const": "phone"}},
                        "required": ["contactMethod"]
                    },
                    "then": {"required": ["phone"]},
                    "else": {"required": ["email"]},
                    "additionalProperties": false
                })
            },
            run: |args, _| {
                ok(vec![text(format!(
                    "JSON Schema 2020-12 tool called with: {}",
                    Value::Object(args.clone())
                ))])
            },
        },
        FixtureTool {
            name: "greet",
            description: "Tasks extension: answers at once with Hello, {name}! (never a task).",
            input_schema: || {
                json!({"type": "object",
                    "properties": {"name": {"type": "string", "description": "Who to greet"}},
                    "required": ["name"]})
            },
            run: |args, _| ok(vec![text(format!("Hello, {}!", string_arg(args, "name")?))]),
        },
        FixtureTool {
            name: "slow_compute",
            description: "Tasks extension: waits `seconds` (0 to 120), then answers; a task for clients that declare the extension, stopped early by tasks/cancel.",
            input_schema: || {
                json!({"type": "object",
                    "properties": {
                        "seconds": {"type": "number", "minimum": 0, "maximum": 120},
                        "label": {"type": "string"}},
                    "required": ["seconds"]})
            },
            run: |args, ctx| {
                let seconds = match args.get("seconds").and_then(Value::as_f64) {
                    Some(s) if (0.0..=MAX_COMPUTE_SECONDS).contains(&s) => s,
                    _ => {
                        return tool_error(format!(
                            "seconds must be a number from 0 to {MAX_COMPUTE_SECONDS}"
                        ))
                    }
                };
                let label = args.get("label").and_then(Value::as_str).unwrap_or("compute");
                ctx.progress(0.0, Some(seconds), Some(&format!("{label}: started")));
                let deadline = std::time::Instant::now() + Duration::from_secs_f64(seconds);
                while std::time::Instant::now() < deadline {
                    if ctx.is_cancelled() {
                        return tool_error(format!("{label}: cancelled"));
                    }
                    std::thread::sleep(STEP.min(deadline - std::time::Instant::now()));
                }
                ok(vec![text(format!("{label}: computed after {seconds} s"))])
            },
        },
        FixtureTool {
            name: "test_tool_with_task",
            description: "Tasks extension with a multi round-trip request first (task only): asks the user's name, then greets in a task.",
            input_schema: no_args,
            run: |_, ctx| {
                let round = round(ctx)?;
                match round.elicitation("user_name") {
                    Some(ElicitAnswer::Accept(c)) if c.get("name").is_some_and(Value::is_string) => {
                        std::thread::sleep(STEP);
                        ok(vec![text(format!("Hello, {}!", c["name"].as_str().unwrap_or("")))])
                    }
                    Some(ElicitAnswer::Decline | ElicitAnswer::Cancel) => {
                        ok(vec![text("The user did not give a name.")])
                    }
                    _ => Err(round.ask(InputRequired::new().ask("user_name", ask_name("What is your name?")))),
                }
            },
        },
        FixtureTool {
            name: "failing_job",
            description: "Tasks extension (task only): fails with a tool execution error after about a second.",
            input_schema: no_args,
            run: |_, _| {
                std::thread::sleep(Duration::from_secs(1));
                tool_error("failing_job failed, as it always does")
            },
        },
        FixtureTool {
            name: "protocol_error_job",
            description: "Tasks extension: fails with a JSON-RPC internal error (the task ends failed).",
            input_schema: no_args,
            run: |_, _| {
                Err(RpcError::internal("Internal error")
                    .with_details("protocol_error_job fails at the protocol level on purpose"))
            },
        },
        FixtureTool {
            name: "confirm_delete",
            description: "Tasks extension: asks the user (as an input request of the task) to confirm deleting `filename`.",
            input_schema: || {
                json!({"type": "object",
                    "properties": {"filename": {"type": "string"}},
                    "required": ["filename"]})
            },
            run: |args, ctx| {
                let filename = string_arg(args, "filename")?.to_string();
                let params = json!({
                    "mode": "form",
                    "message": format!("Delete {filename}?"),
                    "requestedSchema": {"type": "object",
                        "properties": {"confirm": {"type": "boolean"}}, "required": ["confirm"]}
                });
                ask_client(ctx, "elicitation/create", params, elicitation_answer)
            },
        },
        FixtureTool {
            name: "multi_input",
            description: "Tasks extension: asks the user two questions at once (two input requests of the task).",
            input_schema: no_args,
            run: |_, ctx| {
                let Some(peer) = &ctx.peer else {
                    return tool_error("this transport cannot ask the client");
                };
                let ask = |what: &str| {
                    let params = json!({
                        "mode": "form",
                        "message": format!("Your {what}?"),
                        "requestedSchema": {"type": "object",
                            "properties": {"name": {"type": "string"}}, "required": ["name"]}
                    });
                    peer.0.request("elicitation/create", params, PEER_TIMEOUT)
                };
                let (first, second) = std::thread::scope(|s| {
                    let a = s.spawn(|| ask("first name"));
                    let b = s.spawn(|| ask("last name"));
                    (a.join(), b.join())
                });
                match (first, second) {
                    (Ok(Ok(a)), Ok(Ok(b))) => ok(vec![text(format!(
                        "{} / {}",
                        elicitation_answer(&a),
                        elicitation_answer(&b)
                    ))]),
                    _ => tool_error("an answer is missing"),
                }
            },
        },
        FixtureTool {
            name: "test_input_required_result_elicitation",
            description: "Multi round-trip request (2026-07-28): asks the user's name by elicitation, then greets",
            input_schema: no_args,
            run: |_, ctx| {
                let round = round(ctx)?;
                match round.elicitation("user_name") {
                    Some(ElicitAnswer::Accept(c)) if c.get("name").is_some_and(Value::is_string) => {
                        ok(vec![text(format!("Hello, {}!", c["name"].as_str().unwrap_or("")))])
                    }
                    Some(ElicitAnswer::Decline | ElicitAnswer::Cancel) => {
                        ok(vec![text("The user did not give a name.")])
                    }
                    _ => Err(round.ask(InputRequired::new().ask("user_name", ask_name("What is your name?")))),
                }
            },
        },
        FixtureTool {
            name: "test_input_required_result_sampling",
            description: "Multi round-trip request (2026-07-28): asks the client's model a question by sampling",
            input_schema: no_args,
            run: |_, ctx| {
                let round = round(ctx)?;
                match round.response("capital_question") {
                    Some(r) => ok(vec![text(format!("LLM response: {}", sampled_text(r)))]),
                    None => Err(round.ask(InputRequired::new().ask(
                        "capital_question",
                        sampling("What is the capital of France?", 100),
                    ))),
                }
            },
        },
        FixtureTool {
            name: "test_input_required_result_list_roots",
            description: "Multi round-trip request (2026-07-28): asks the client for its roots",
            input_schema: no_args,
            run: |_, ctx| {
                let round = round(ctx)?;
                match round.response("client_roots") {
                    Some(r) => ok(vec![text(format!("Client roots: {}", root_uris(r)))]),
                    None => Err(round.ask(InputRequired::new().ask("client_roots", InputRequest::ListRoots))),
                }
            },
        },
        FixtureTool {
            name: "test_input_required_result_request_state",
            description: "Multi round-trip request (2026-07-28): asks for a confirmation with a requestState, and checks the state on the retry",
            input_schema: no_args,
            run: |_, ctx| {
                let round = round(ctx)?;
                let state_ok = round.state() == Some(&json!({"asked": "confirm"}));
                match round.elicitation("confirm") {
                    Some(ElicitAnswer::Accept(c)) if state_ok => ok(vec![text(format!(
                        "state-ok: the requestState was verified; ok={}",
                        c.get("ok").cloned().unwrap_or(Value::Null)
                    ))]),
                    _ => Err(round.ask(
                        InputRequired::new()
                            .ask("confirm", elicit("Please confirm", json!({"ok": {"type": "boolean"}}), &["ok"]))
                            .with_state(json!({"asked": "confirm"})),
                    )),
                }
            },
        },
        FixtureTool {
            name: "test_input_required_result_multiple_inputs",
            description: "Multi round-trip request (2026-07-28): asks by elicitation, sampling and roots/list at once",
            input_schema: no_args,
            run: |_, ctx| {
                let round = round(ctx)?;
                let wanted = [
                    ("user_name", ask_name("What is your name?")),
                    ("greeting", sampling("Generate a greeting", 50)),
                    ("client_roots", InputRequest::ListRoots),
                ];
                let missing: Vec<(&str, InputRequest)> = wanted
                    .into_iter()
                    .filter(|(k, r)| round.response(k).is_none() && round.can_ask(r.kind()))
                    .collect();
                if missing.is_empty() {
                    let name = match round.elicitation("user_name") {
                        Some(ElicitAnswer::Accept(c)) => c.get("name").cloned().unwrap_or(Value::Null),
                        _ => Value::Null,
                    };
                    return ok(vec![text(format!(
                        "name={name}, greeting={}, roots={}",
                        round.response("greeting").map(sampled_text).unwrap_or_default(),
                        round.response("client_roots").map(root_uris).unwrap_or_default()
                    ))]);
                }
                let mut ask = InputRequired::new().with_state(json!({"asked": "multiple"}));
                for (k, r) in missing {
                    ask = ask.ask(k, r);
                }
                Err(round.ask(ask))
            },
        },
        FixtureTool {
            name: "test_input_required_result_multi_round",
            description: "Multi round-trip request (2026-07-28): asks twice (name, then colour), the requestState carrying the first answer",
            input_schema: no_args,
            run: |_, ctx| {
                let round = round(ctx)?;
                let accepted = |key: &str, field: &str| match round.elicitation(key) {
                    Some(ElicitAnswer::Accept(c)) => c.get(field).and_then(Value::as_str).map(str::to_string),
                    _ => None,
                };
                let step = round.state().and_then(|s| s.get("step")).and_then(Value::as_u64);
                match (step, accepted("step1", "name"), accepted("step2", "color")) {
                    (Some(2), _, Some(color)) => {
                        let name = round.state().and_then(|s| s["name"].as_str()).unwrap_or("");
                        ok(vec![text(format!("{name} likes {color}"))])
                    }
                    (Some(1), Some(name), _) | (Some(2), Some(name), None) => Err(round.ask(
                        InputRequired::new()
                            .ask(
                                "step2",
                                elicit(
                                    "Step 2: What is your favorite color?",
                                    json!({"color": {"type": "string"}}),
                                    &["color"],
                                ),
                            )
                            .with_state(json!({"step": 2, "name": name})),
                    )),
                    _ => Err(round.ask(
                        InputRequired::new()
                            .ask("step1", ask_name("Step 1: What is your name?"))
                            .with_state(json!({"step": 1})),
                    )),
                }
            },
        },
        FixtureTool {
            name: "test_input_required_result_tampered_state",
            description: "Multi round-trip request (2026-07-28): an integrity-protected requestState; a tampered one is refused with -32602",
            input_schema: no_args,
            run: |_, ctx| {
                let round = round(ctx)?;
                match (round.state(), round.elicitation("confirm")) {
                    (Some(_), Some(ElicitAnswer::Accept(_))) => ok(vec![text("state-ok")]),
                    _ => Err(round.ask(
                        InputRequired::new()
                            .ask("confirm", elicit("Please confirm", json!({"ok": {"type": "boolean"}}), &["ok"]))
                            .with_state(json!({"asked": "tampered"})),
                    )),
                }
            },
        },
        FixtureTool {
            name: "test_input_required_result_capabilities",
            description: "Multi round-trip request (2026-07-28): asks only for the inputs the client declared (elicitation, sampling, roots)",
            input_schema: no_args,
            run: |_, ctx| {
                let round = round(ctx)?;
                let candidates = [
                    ("user_name", ask_name("What is your name?")),
                    ("capital_question", sampling("What is the capital of France?", 100)),
                    ("client_roots", InputRequest::ListRoots),
                ];
                let (answered, asked): (Vec<_>, Vec<_>) = candidates
                    .into_iter()
                    .filter(|(_, r)| round.can_ask(r.kind()))
                    .partition(|(k, _)| round.response(k).is_some());
                if asked.is_empty() && answered.is_empty() {
                    return tool_error("the client declared none of elicitation, sampling and roots");
                }
                if asked.is_empty() {
                    let keys: Vec<&str> = answered.iter().map(|(k, _)| *k).collect();
                    return ok(vec![text(format!("answered: {}", keys.join(", ")))]);
                }
                let mut ask = InputRequired::new();
                for (k, r) in asked {
                    ask = ask.ask(k, r);
                }
                Err(round.ask(ask))
            },
        },
        FixtureTool {
            name: "test_custom_header",
            description: "Echoes its region, which a 2026-07-28 client also sends as the Mcp-Param-Region header (x-mcp-header, SEP-2243)",
            input_schema: || {
                json!({
                    "type": "object",
                    "properties": {
                        "region": {"type": "string", "x-mcp-header": "Region"}
                    },
                    "required": ["region"]
                })
            },
            run: |args, _| ok(vec![text(format!("region: {}", string_arg(args, "region")?))]),
        },
        FixtureTool {
            name: "test_reconnection",
            description: "Meant to close the SSE stream mid-call and finish after the client resumes (SEP-1699); this transport answers after a short pause.",
            input_schema: no_args,
            run: |_, _| {
                std::thread::sleep(STEP);
                ok(vec![text("Reconnection test completed successfully")])
            },
        },
    ]
}

const STATIC_TEXT: &str = "test://static-text";
const STATIC_BINARY: &str = "test://static-binary";
const WATCHED: &str = "test://watched-resource";

impl Handler for ConformanceFixture {
    fn server_info(&self) -> Implementation {
        Implementation {
            name: "home-mcp-conformance-fixture".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            title: Some("home-mcp conformance fixture".into()),
        }
    }

    fn instructions(&self) -> String {
        "Test fixture for the MCP conformance suite; not a smart-home server.".into()
    }

    fn required_client_capabilities(&self, tool: &str) -> Vec<&'static str> {
        match tool {
            "test_missing_capability" => vec!["sampling"],
            _ => Vec::new(),
        }
    }

    fn task_support(&self, tool: &str) -> TaskSupport {
        match tool {
            "slow_compute" | "protocol_error_job" | "confirm_delete" | "multi_input" => {
                TaskSupport::Optional
            }
            "failing_job" | "test_tool_with_task" => TaskSupport::Required,
            _ => TaskSupport::Forbidden,
        }
    }

    fn list_tools(&self) -> Vec<ToolDescriptor> {
        tools()
            .into_iter()
            .map(|t| ToolDescriptor {
                name: t.name.into(),
                title: None,
                description: t.description.into(),
                input_schema: (t.input_schema)(),
                output_schema: None,
                annotations: ToolAnnotations::default(),
            })
            .collect()
    }

    fn call_tool(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        ctx: &RequestContext,
    ) -> Result<CallToolResult, RpcError> {
        let tool = tools()
            .into_iter()
            .find(|t| t.name == name)
            .ok_or_else(|| RpcError::invalid_params(format!("unknown tool {name:?}")))?;
        (tool.run)(&arguments, ctx)
    }

    fn list_resources(&self) -> Vec<ResourceDescriptor> {
        let r = |uri: &str, name: &str, description: &str, mime: &str| ResourceDescriptor {
            uri: uri.into(),
            name: name.into(),
            title: None,
            description: Some(description.into()),
            mime_type: Some(mime.into()),
        };
        vec![
            r(
                STATIC_TEXT,
                "Static Text Resource",
                "A fixed text resource",
                "text/plain",
            ),
            r(
                STATIC_BINARY,
                "Static Binary Resource",
                "A fixed PNG image",
                "image/png",
            ),
            r(
                WATCHED,
                "Watched Resource",
                "A resource clients may subscribe to",
                "text/plain",
            ),
        ]
    }

    fn list_resource_templates(&self) -> Vec<ResourceTemplate> {
        vec![ResourceTemplate {
            uri_template: "test://template/{id}/data".into(),
            name: "Resource Template".into(),
            title: None,
            description: Some("JSON data naming the id given in the URI".into()),
            mime_type: Some("application/json".into()),
        }]
    }

    fn read_resource(
        &self,
        uri: &str,
        _ctx: &RequestContext,
    ) -> Result<Vec<ResourceContents>, RpcError> {
        match uri {
            STATIC_TEXT => Ok(vec![ResourceContents::text(
                uri,
                "text/plain",
                "This is the content of the static text resource.",
            )]),
            STATIC_BINARY => Ok(vec![ResourceContents {
                uri: uri.into(),
                mime_type: Some("image/png".into()),
                text: None,
                blob: Some(PNG_BASE64.into()),
            }]),
            WATCHED => Ok(vec![ResourceContents::text(
                uri,
                "text/plain",
                "Watched resource content",
            )]),
            _ => {
                let id = uri
                    .strip_prefix("test://template/")
                    .and_then(|rest| rest.strip_suffix("/data"))
                    .filter(|id| !id.is_empty() && !id.contains('/'));
                match id {
                    Some(id) => Ok(vec![ResourceContents::text(
                        uri,
                        "application/json",
                        json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")})
                            .to_string(),
                    )]),
                    None => Err(RpcError {
                        code: RpcError::RESOURCE_NOT_FOUND,
                        message: "Resource not found".into(),
                        details: Some(format!("no resource {uri:?}")),
                    }),
                }
            }
        }
    }

    fn list_prompts(&self) -> Vec<PromptDescriptor> {
        let arg = |name: &str, description: &str| PromptArgument {
            name: name.into(),
            title: None,
            description: Some(description.into()),
            required: true,
        };
        let p = |name: &str, description: &str, arguments| PromptDescriptor {
            name: name.into(),
            title: None,
            description: description.into(),
            arguments,
        };
        vec![
            p(
                "test_simple_prompt",
                "A simple prompt without arguments",
                vec![],
            ),
            p(
                "test_prompt_with_arguments",
                "A prompt with two required arguments",
                vec![
                    arg("arg1", "First test argument"),
                    arg("arg2", "Second test argument"),
                ],
            ),
            p(
                "test_prompt_with_embedded_resource",
                "A prompt that embeds a resource",
                vec![arg("resourceUri", "URI of the resource to embed")],
            ),
            p(
                "test_prompt_with_image",
                "A prompt that includes an image",
                vec![],
            ),
            p(
                "test_input_required_result_prompt",
                "Multi round-trip request (2026-07-28): asks the user for the context, then returns the prompt",
                vec![],
            ),
        ]
    }

    fn get_prompt(
        &self,
        name: &str,
        arguments: &Map<String, Value>,
        ctx: &RequestContext,
    ) -> Result<GetPromptResult, RpcError> {
        let user = |content| PromptMessage {
            role: "user",
            content,
        };
        let messages = match name {
            "test_simple_prompt" => vec![user(text("This is a simple prompt for testing."))],
            "test_prompt_with_arguments" => {
                let a1 = string_arg(arguments, "arg1")?;
                let a2 = string_arg(arguments, "arg2")?;
                vec![user(text(format!(
                    "Prompt with arguments: arg1='{a1}', arg2='{a2}'"
                )))]
            }
            "test_prompt_with_embedded_resource" => {
                let uri = string_arg(arguments, "resourceUri")?;
                vec![
                    user(Content::Resource {
                        resource: ResourceContents::text(
                            uri,
                            "text/plain",
                            "Embedded resource content for testing.",
                        ),
                    }),
                    user(text("Please process the embedded resource above.")),
                ]
            }
            "test_prompt_with_image" => {
                vec![user(image()), user(text("Please analyze the image above."))]
            }
            "test_input_required_result_prompt" => {
                let round = round(ctx)?;
                match round.elicitation("user_context") {
                    Some(ElicitAnswer::Accept(c))
                        if c.get("context").is_some_and(Value::is_string) =>
                    {
                        vec![user(text(format!(
                            "Use this context: {}",
                            c["context"].as_str().unwrap_or("")
                        )))]
                    }
                    _ => {
                        return Err(round.ask(InputRequired::new().ask(
                            "user_context",
                            elicit(
                                "What context should the prompt use?",
                                json!({"context": {"type": "string"}}),
                                &["context"],
                            ),
                        )))
                    }
                }
            }
            _ => return Err(RpcError::invalid_params(format!("unknown prompt {name:?}"))),
        };
        Ok(GetPromptResult {
            description: None,
            messages,
        })
    }

    fn complete(
        &self,
        reference: &CompletionRef,
        argument: &str,
        value: &str,
        _context: &Map<String, Value>,
    ) -> Result<Completion, RpcError> {
        if *reference != CompletionRef::Prompt("test_prompt_with_arguments".into())
            || argument != "arg1"
        {
            return Ok(Completion::default());
        }
        let values: Vec<String> = ["paris", "park", "party", "test", "testing", "tested"]
            .iter()
            .filter(|v| v.starts_with(&value.to_lowercase()))
            .map(|v| v.to_string())
            .collect();
        Ok(Completion {
            total: Some(values.len()),
            values,
            has_more: false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use home_mcp::mcp::{Peer, PeerHandle};
    use std::sync::{Arc, Mutex};

    /// Records notifications; answers requests with a canned result.
    #[derive(Default)]
    struct FakePeer {
        sent: Mutex<Vec<(String, Value)>>,
    }

    impl Peer for FakePeer {
        fn notify(&self, method: &str, params: Value) {
            self.sent.lock().unwrap().push((method.into(), params));
        }
        fn request(&self, method: &str, params: Value, _: Duration) -> Result<Value, RpcError> {
            self.sent.lock().unwrap().push((method.into(), params));
            Ok(match method {
                "sampling/createMessage" => json!({"role": "assistant",
                    "content": {"type": "text", "text": "42"}, "model": "fake"}),
                _ => json!({"action": "accept", "content": {"username": "u"}}),
            })
        }
    }

    fn ctx(peer: &Arc<FakePeer>) -> RequestContext {
        RequestContext {
            peer: Some(PeerHandle(peer.clone())),
            progress_token: Some(json!("tok")),
            log_level: Some(LogLevel::Debug),
            client_capabilities: json!({"elicitation": {}, "sampling": {}}),
            transport: "test",
            ..RequestContext::default()
        }
    }

    fn call(name: &str, args: Value, ctx: &RequestContext) -> CallToolResult {
        let Value::Object(args) = args else { panic!() };
        ConformanceFixture.call_tool(name, args, ctx).unwrap()
    }

    fn first_text(r: &CallToolResult) -> String {
        match &r.content[0] {
            Content::Text { text } => text.clone(),
            other => panic!("not text: {other:?}"),
        }
    }

    #[test]
    fn every_tool_and_prompt_has_a_description_and_an_object_schema() {
        let tools = ConformanceFixture.list_tools();
        assert_eq!(tools.len(), 33);
        for t in &tools {
            assert!(!t.description.is_empty(), "{}", t.name);
            assert_eq!(t.input_schema["type"], "object", "{}", t.name);
        }
        for p in ConformanceFixture.list_prompts() {
            assert!(!p.description.is_empty(), "{}", p.name);
        }
    }

    #[test]
    fn media_is_valid() {
        let png = BASE64_STANDARD.decode(PNG_BASE64).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        let wav = wav_bytes();
        assert_eq!(&wav[..4], b"RIFF");
        assert_eq!(&wav[8..12], b"WAVE");
        let riff_len = u32::from_le_bytes(wav[4..8].try_into().unwrap()) as usize;
        assert_eq!(riff_len + 8, wav.len());
    }

    #[test]
    fn logging_and_progress_go_through_the_peer() {
        let peer = Arc::new(FakePeer::default());
        let c = ctx(&peer);
        call("test_tool_with_logging", json!({}), &c);
        call("test_tool_with_progress", json!({}), &c);
        let sent = peer.sent.lock().unwrap();
        let logs: Vec<_> = sent
            .iter()
            .filter(|(m, _)| m == "notifications/message")
            .collect();
        assert_eq!(logs.len(), 3);
        assert!(logs.iter().all(|(_, p)| p["level"] == "info"));
        let progress: Vec<f64> = sent
            .iter()
            .filter(|(m, _)| m == "notifications/progress")
            .map(|(_, p)| {
                assert_eq!(p["progressToken"], "tok");
                assert_eq!(p["total"], 100.0);
                p["progress"].as_f64().unwrap()
            })
            .collect();
        assert_eq!(progress, vec![0.0, 50.0, 100.0]);
    }

    #[test]
    fn sampling_and_elicitation_ask_the_client() {
        let peer = Arc::new(FakePeer::default());
        let c = ctx(&peer);
        let r = call("test_sampling", json!({"prompt": "6x7?"}), &c);
        assert_eq!(first_text(&r), "LLM response: 42");
        let r = call("test_elicitation", json!({"message": "who?"}), &c);
        assert!(first_text(&r).contains("action=accept"));
        call("test_elicitation_sep1034_defaults", json!({}), &c);
        call("test_elicitation_sep1330_enums", json!({}), &c);
        let sent = peer.sent.lock().unwrap();
        assert_eq!(sent[0].0, "sampling/createMessage");
        assert_eq!(sent[0].1["maxTokens"], 100);
        assert_eq!(sent[0].1["messages"][0]["content"]["text"], "6x7?");
        assert_eq!(sent[1].0, "elicitation/create");
        assert_eq!(
            sent[1].1["requestedSchema"]["required"],
            json!(["username", "email"])
        );
        let d = &sent[2].1["requestedSchema"]["properties"];
        assert_eq!(d["name"]["default"], "John Doe");
        assert_eq!(d["age"]["default"], 30);
        assert_eq!(d["score"]["default"], 95.5);
        assert_eq!(d["status"]["default"], "active");
        assert_eq!(d["verified"]["default"], true);
        let e = &sent[3].1["requestedSchema"]["properties"];
        for f in [
            "untitledSingle",
            "titledSingle",
            "legacyEnum",
            "untitledMulti",
            "titledMulti",
        ] {
            assert!(e.get(f).is_some(), "{f}");
        }
    }

    #[test]
    fn without_a_peer_the_peer_tools_fail_softly() {
        let c = RequestContext::default();
        let r = call("test_sampling", json!({"prompt": "x"}), &c);
        assert!(r.is_error);
        let r = call("test_tool_with_logging", json!({}), &c);
        assert!(!r.is_error);
        let e = ConformanceFixture
            .call_tool("test_sampling", Map::new(), &c)
            .unwrap_err();
        assert_eq!(e.code, RpcError::INVALID_PARAMS);
    }

    #[test]
    fn resources_prompts_and_completion() {
        let c = RequestContext::default();
        let r = ConformanceFixture
            .read_resource("test://template/123/data", &c)
            .unwrap();
        assert!(r[0].text.as_deref().unwrap().contains("123"));
        let b = ConformanceFixture.read_resource(STATIC_BINARY, &c).unwrap();
        assert!(b[0].blob.is_some());
        assert!(ConformanceFixture.check_subscribable(WATCHED).is_ok());
        assert_eq!(
            ConformanceFixture
                .read_resource("test://nope", &c)
                .unwrap_err()
                .code,
            RpcError::RESOURCE_NOT_FOUND
        );
        let mut args = Map::new();
        args.insert("arg1".into(), json!("alpha"));
        args.insert("arg2".into(), json!("beta"));
        let p = ConformanceFixture
            .get_prompt("test_prompt_with_arguments", &args, &c)
            .unwrap();
        let t = serde_json::to_string(&p).unwrap();
        assert!(t.contains("alpha") && t.contains("beta"));
        let done = ConformanceFixture
            .complete(
                &CompletionRef::Prompt("test_prompt_with_arguments".into()),
                "arg1",
                "pa",
                &Map::new(),
            )
            .unwrap();
        assert_eq!(done.values, vec!["paris", "park", "party"]);
    }
}
