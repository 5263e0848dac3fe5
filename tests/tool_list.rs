//! The tool list an assistant can afford (issue 16): the default `tools/list`, as a 2025-06-18
//! client reads it over HTTP from the real `serve` binary, lists every tool of the catalogue in
//! at most 44,500 bytes (about 11k tokens), and its schemas are portable to single-type schema
//! dialects: the MCP Inspector's schema-portability rules (2.12, `core/json/schemaLint.ts`:
//! no `type` lists, no schema that constrains nothing, no bare `true`/`false` in a schema
//! position, no `$ref` outside the document) find nothing in any input or output schema.
//!
//! Both tool profiles (issue 33): `full`, the default, and `lean` (`[mcp] profile = "lean"`,
//! or a key's own profile), at most 10 tools in at most 16,000 bytes (about 4,000 tokens).
//!
//! The figures in docs/tools.md come from here:
//! `cargo test --test integration tool_list:: -- --nocapture` prints the sizes.

use crate::support;
use support::mcp::{answer_of, McpHttp};
use support::server::{Miniserver, Served};

use home_mcp::home::Profile;
use serde_json::{json, Value};

/// The budget of the whole `tools/list` answer, in bytes: about 11k tokens (DESIGN.md). 40,000
/// until the capability issues each added two tools, each as lean as a tool can be: issue 31
/// `list_alerts` and `confirm_alert` (no output schema beyond the envelope, one-line
/// descriptions; together about 1.1 kB), issue 30 `get_camera_image` and `list_doorbell_events`
/// (1,353 bytes with their descriptions and schemas cut to what a model needs; each tool's
/// name, title, annotations and envelope alone take about 350), issue 29 `get_history` and
/// `get_energy` (1.9 kB with their schemas). The lean profile (issue 33) is where the list
/// shrinks again.
const BUDGET_BYTES: usize = 44_500;

/// The budget of the lean profile's `tools/list` answer, in bytes, and its most tools.
const LEAN_BUDGET_BYTES: usize = 16_000;
const LEAN_MAX_TOOLS: usize = 10;

/// Keywords that hold one schema, a map of schemas, or a list of schemas.
const SUBSCHEMA: [&str; 11] = [
    "items",
    "contains",
    "not",
    "propertyNames",
    "if",
    "then",
    "else",
    "additionalProperties",
    "unevaluatedProperties",
    "additionalItems",
    "unevaluatedItems",
];
const SUBSCHEMA_MAPS: [&str; 6] = [
    "properties",
    "patternProperties",
    "dependentSchemas",
    "dependencies",
    "$defs",
    "definitions",
];
const SUBSCHEMA_LISTS: [&str; 4] = ["allOf", "anyOf", "oneOf", "prefixItems"];

/// Keywords that constrain a value (a schema without any accepts everything).
const CONSTRAINING: [&str; 40] = [
    "type",
    "enum",
    "const",
    "multipleOf",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "format",
    "contentMediaType",
    "contentEncoding",
    "contentSchema",
    "maxItems",
    "minItems",
    "uniqueItems",
    "maxContains",
    "minContains",
    "maxProperties",
    "minProperties",
    "required",
    "dependentRequired",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "items",
    "prefixItems",
    "contains",
    "additionalItems",
    "unevaluatedItems",
    "properties",
    "patternProperties",
    "additionalProperties",
    "unevaluatedProperties",
    "propertyNames",
    "dependentSchemas",
    "$ref",
];

/// What the portability rules find in `schema` at `path`, one line per finding.
fn unportable(schema: &Value, path: &str, keyword: Option<&str>, out: &mut Vec<String>) {
    let node = match schema {
        Value::Bool(b) => {
            // `additionalProperties: false` and friends are boolean by nature.
            if !keyword.is_some_and(|k| k.starts_with("additional") || k.starts_with("unevaluated"))
            {
                out.push(format!("{path}: bare `{b}` where a schema is expected"));
            }
            return;
        }
        Value::Object(node) => node,
        _ => return,
    };
    if let Some(Value::Array(types)) = node.get("type") {
        out.push(format!("{path}: `type` is a list {types:?}"));
    }
    if !node.keys().any(|k| CONSTRAINING.contains(&k.as_str())) && keyword != Some("not") {
        out.push(format!("{path}: constrains nothing"));
    }
    if let Some(r) = node.get("$ref").and_then(Value::as_str) {
        if !r.starts_with('#') {
            out.push(format!("{path}: `$ref` outside the document ({r})"));
        }
    }
    for k in SUBSCHEMA {
        if let Some(sub) = node.get(k) {
            unportable(sub, &format!("{path}.{k}"), Some(k), out);
        }
    }
    for k in SUBSCHEMA_MAPS {
        for (name, sub) in node.get(k).and_then(Value::as_object).into_iter().flatten() {
            unportable(sub, &format!("{path}.{k}.{name}"), Some(k), out);
        }
    }
    for k in SUBSCHEMA_LISTS {
        for (i, sub) in node
            .get(k)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            unportable(sub, &format!("{path}.{k}[{i}]"), Some(k), out);
        }
    }
}

/// Bytes of `v` as compact JSON.
fn bytes(v: &Value) -> usize {
    v.to_string().len()
}

#[test]
fn the_portability_check_finds_what_it_looks_for() {
    let mut found = Vec::new();
    let bad = json!({"type": "object", "properties": {
        "target": {"type": ["string", "array"]},
        "anything": {"description": "no constraint"},
        "remote": {"$ref": "https://example.com/s.json"},
        "list": {"type": "array", "items": true},
        "fine": {"anyOf": [{"type": "string"}, {"type": "integer"}]}
    }, "additionalProperties": false});
    unportable(&bad, "s", None, &mut found);
    assert_eq!(found.len(), 4, "{found:#?}");
    for needle in [
        "target: `type` is a list",
        "anything: constrains nothing",
        "remote: `$ref`",
    ] {
        assert!(
            found.iter().any(|f| f.contains(needle)),
            "{needle}: {found:#?}"
        );
    }
    assert!(found.iter().any(|f| f.contains("list.items: bare `true`")));
}

/// The `tools/list` answer a 2025-06-18 client reads over HTTP from a `serve` with `config`:
/// the JSON-RPC message (the body, or the data of its SSE event) and its tools.
fn tools_list(config: &str) -> (String, Vec<Value>) {
    let ms = Miniserver::demo();
    let served = Served::start(&ms, config, &[]);
    let mcp = McpHttp::connect(served.addr, None);
    let reply = mcp.post(&json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list"}));
    assert_eq!(reply.status, 200, "{reply:?}");
    let message = if reply.body.trim_start().starts_with('{') {
        reply.body.trim().to_string()
    } else {
        reply
            .body
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(str::trim)
            .collect::<String>()
    };
    let answer = answer_of(&reply, 7);
    let tools = answer["result"]["tools"].as_array().expect("tools").clone();
    (message, tools)
}

/// Prints the size of a profile's list (the figures of docs/tools.md; for lean each tool's)
/// and checks that its schemas are portable; returns the size in bytes.
fn measure(profile: &str, message: &str, tools: &[Value]) -> usize {
    let part = |key: &str| tools.iter().map(|t| bytes(&t[key])).sum::<usize>();
    let size = message.len();
    println!(
        "tools/list ({profile}): {} tools, {size} bytes, about {} tokens (bytes / 4); \
         descriptions {}, input schemas {}, output schemas {}, annotations {} bytes",
        tools.len(),
        size / 4,
        part("description"),
        part("inputSchema"),
        part("outputSchema"),
        part("annotations"),
    );
    if profile == "lean" {
        for t in tools {
            println!(
                "  {}: {} bytes",
                t["name"].as_str().unwrap_or_default(),
                bytes(t)
            );
        }
    }
    let mut findings = Vec::new();
    for t in tools {
        let name = t["name"].as_str().unwrap_or_default();
        for key in ["inputSchema", "outputSchema"] {
            unportable(&t[key], &format!("{name}.{key}"), None, &mut findings);
        }
    }
    assert!(
        findings.is_empty(),
        "unportable schemas ({profile}):\n{}",
        findings.join("\n")
    );
    size
}

/// The names of the tools `profile` lists, in the catalogue's order.
fn names_in(profile: Profile) -> Vec<&'static str> {
    home_mcp::tools::catalogue()
        .iter()
        .filter(|t| t.in_profile(profile))
        .map(|t| t.name)
        .collect()
}

#[test]
fn the_default_tool_list_fits_the_budget_and_is_portable() {
    let (message, tools) = tools_list("");

    // Every tool of the full profile is kept.
    let listed: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(
        listed,
        names_in(Profile::Full),
        "tools/list lists the whole full catalogue"
    );
    let size = measure("full", &message, &tools);
    assert!(
        size <= BUDGET_BYTES,
        "tools/list is {size} bytes, over the budget of {BUDGET_BYTES}"
    );
}

#[test]
fn both_profiles_are_listed_within_their_budgets() {
    let (full_message, full_tools) = tools_list("[mcp]\nprofile = \"full\"\n");
    let (lean_message, lean_tools) = tools_list("[mcp]\nprofile = \"lean\"\n");
    let full: Vec<&str> = full_tools
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    let lean: Vec<&str> = lean_tools
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(full, names_in(Profile::Full), "[mcp] profile = full");
    assert_eq!(lean, names_in(Profile::Lean), "[mcp] profile = lean");
    assert!(
        !lean.is_empty() && lean.iter().all(|t| !full.contains(t)),
        "the lean tools are front doors of their own: {lean:?}"
    );
    let full_size = measure("full", &full_message, &full_tools);
    let lean_size = measure("lean", &lean_message, &lean_tools);
    assert!(full_size <= BUDGET_BYTES, "full: {full_size} bytes");
    assert!(
        lean.len() <= LEAN_MAX_TOOLS,
        "lean lists {} tools: {lean:?}",
        lean.len()
    );
    assert!(
        lean_size <= LEAN_BUDGET_BYTES,
        "lean tools/list is {lean_size} bytes, over its budget of {LEAN_BUDGET_BYTES}"
    );
    // `[mcp] profile = full` is the default, byte for byte.
    let (default_message, _) = tools_list("");
    assert_eq!(default_message, full_message, "full is the default");
}
