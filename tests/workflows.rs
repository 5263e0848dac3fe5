//! Workflows end to end: created, listed, shown, executed (in order, in parallel groups, with
//! dry runs and failing steps) and deleted through the tools against the simulated demo house;
//! every kind of bad workflow is rejected at creation with a message naming the step and the
//! field; the SQLite store survives a restart and refuses a damaged file with a clear error;
//! the demonstration adapts to the demo house and to real structure files.

use crate::support;
use support::*;

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use support::server::TempDir;
use support::wire::sent_commands;

use serde_json::{json, Map, Value};

use home_mcp::app::{open_store, StartError};
use home_mcp::home::{Action, Control, Controller, ControllerError, House, Value as Reading};
use home_mcp::mcp::Handler;
use home_mcp::tools::{HomeTools, Permission};
use home_mcp::workflow::{NewWorkflow, StoreError, WorkflowStore};

fn evening() -> Value {
    json!({
        "name": "Abend",
        "description": "Küche aus, Wohnzimmer 21 °C",
        "steps": [
            {"tool": "control_room_lights", "arguments": {"room": "Küche", "action": "off"}},
            {"tool": "set_room_temperature", "arguments": {"room": "Wohnzimmer", "temperature": 21.5}},
            {"tool": "list_rooms", "arguments": {}}
        ]
    })
}

#[test]
fn create_list_get_execute_delete() {
    let (app, tools) = demo();
    let s = sim(&app);
    let ceiling = uuid_of(&app, "Deckenlicht", "Küche");
    ok(
        &tools,
        "control_room_lights",
        json!({"room": "Küche", "action": "on"}),
    );
    assert_eq!(s.state(&ceiling, "active"), Some(1.0));

    let created = ok(&tools, "create_workflow", evening());
    let id = created["id"].as_i64().unwrap();
    assert!(id >= 1);
    assert_eq!(created["name"], "Abend");
    assert_eq!(created["description"], "Küche aus, Wohnzimmer 21 °C");
    assert_eq!(created["steps"].as_array().unwrap().len(), 3);
    assert_eq!(created["steps"][1]["arguments"]["temperature"], 21.5);
    assert_eq!(created["stages"], json!([[0], [1], [2]]));
    assert_eq!(created["permission"], "control");
    assert!(created["created_at"].as_str().unwrap().ends_with('Z'));
    // Nothing ran at creation.
    assert_eq!(s.state(&ceiling, "active"), Some(1.0));

    let list = ok(&tools, "list_workflows", json!({}));
    assert_eq!(list["total"], 1);
    let w = &list["workflows"][0];
    assert_eq!(w["id"], id);
    assert_eq!(w["step_count"], 3);
    assert_eq!(
        w["tools"],
        json!(["control_room_lights", "set_room_temperature", "list_rooms"])
    );
    assert_eq!(
        ok(&tools, "list_workflows", json!({"name": "morgen"}))["total"],
        0
    );
    assert_eq!(
        ok(&tools, "list_workflows", json!({"name": "abe"}))["total"],
        1
    );

    assert_eq!(ok(&tools, "get_workflow", json!({"id": id})), created);
    assert_eq!(
        ok(&tools, "get_workflow", json!({"name": "abend"})),
        created
    );

    let run = ok(&tools, "execute_workflow", json!({"name": "Abend"}));
    assert_eq!(run["workflow"]["id"], id);
    assert_eq!(run["workflow"]["permission"], "control");
    assert_eq!(run["dry_run"], false);
    assert_eq!(run["total"], 3);
    assert_eq!(run["succeeded"], 3);
    assert_eq!(run["failed"], 0);
    let steps = run["steps"].as_array().unwrap();
    for (i, st) in steps.iter().enumerate() {
        assert_eq!(st["index"], i);
        assert_eq!(st["status"], "success", "{st}");
        assert!(st["duration_ms"].is_u64());
        assert!(st.get("error").is_none());
    }
    assert_eq!(steps[0]["tool"], "control_room_lights");
    assert_eq!(steps[0]["arguments"]["room"], "Küche");
    assert_eq!(steps[0]["data"]["target"], "Küche");
    assert_eq!(steps[1]["data"]["action"], "temperature");
    assert_eq!(steps[1]["data"]["value"], 21.5);
    assert_eq!(steps[1]["data"]["summary"]["succeeded"], 1);
    assert!(steps[2]["data"]["total"].as_u64().unwrap() > 3);
    assert_eq!(s.state(&ceiling, "active"), Some(0.0));
    let irc = uuid_of(&app, "Raumregelung", "Wohnzimmer");
    assert_eq!(s.state(&irc, "comfortTemperature"), Some(21.5));

    let deleted = ok(&tools, "delete_workflow", json!({"name": "ABEND"}));
    assert_eq!(deleted["id"], id);
    assert_eq!(ok(&tools, "list_workflows", json!({}))["total"], 0);
    let e = tool_error(&tools, "get_workflow", json!({"id": id}));
    assert_eq!(e["code"], "INVALID_PARAMETERS");
    assert!(e["message"]
        .as_str()
        .unwrap()
        .contains("no workflows are stored"));
    let e = tool_error(&tools, "execute_workflow", json!({"name": "Abend"}));
    assert!(e["message"].as_str().unwrap().contains("\"Abend\""), "{e}");
    let e = tool_error(&tools, "delete_workflow", json!({"name": "Abend"}));
    assert_eq!(e["code"], "INVALID_PARAMETERS");
}

#[test]
fn unknown_workflow_lists_the_stored_ones() {
    let (_app, tools) = demo();
    ok(&tools, "create_workflow", evening());
    let e = tool_error(&tools, "execute_workflow", json!({"name": "Morgen"}));
    let m = e["message"].as_str().unwrap();
    assert!(m.contains("no workflow with \"Morgen\""), "{m}");
    assert!(m.contains("\"Abend\" (id 1)"), "{m}");
}

#[test]
fn workflow_arguments_are_checked() {
    let (_app, tools) = demo();
    for (args, field) in [
        (json!({}), "name or id"),
        (json!({"name": "a", "id": 1}), "not both"),
        (json!({"id": 0}), "id"),
        (json!({"name": "  "}), "name or id"),
        (json!({"name": "a", "colour": 1}), "colour"),
        (json!({"name": "a", "dry_run": "yes"}), "must be of type"),
    ] {
        let m = invalid_params(&tools, "execute_workflow", args.clone());
        assert!(m.contains(field), "{args}: {m}");
    }
    let m = invalid_params(
        &tools,
        "get_workflow",
        json!({"name": "a", "dry_run": true}),
    );
    assert!(m.contains("dry_run"), "{m}");
    let m = invalid_params(&tools, "delete_workflow", json!({}));
    assert!(m.contains("name or id"), "{m}");
    let m = invalid_params(&tools, "list_workflows", json!({"limit": 0}));
    assert!(m.contains("limit"), "{m}");
    let m = invalid_params(&tools, "execute_workflow_demo", json!({"dry": true}));
    assert!(m.contains("dry"), "{m}");
}

/// `create_workflow` with `steps`, expecting -32602; returns the message.
fn rejected(tools: &HomeTools, name: &str, steps: Value) -> String {
    invalid_params(
        tools,
        "create_workflow",
        json!({"name": name, "steps": steps}),
    )
}

#[test]
fn bad_workflows_are_rejected_naming_step_and_field() {
    let (_app, tools) = demo();
    let good = json!({"tool": "list_rooms", "arguments": {}});
    for (steps, expect) in [
        (
            json!([good, {"tool": "make_coffee", "arguments": {}}]),
            "steps[1].tool: unknown tool \"make_coffee\"",
        ),
        (
            json!([{"tool": "control_room_lights", "arguments": {"room": "Küche", "action": "blink"}}]),
            "steps[0].arguments.action must be one of on, off (got \"blink\")",
        ),
        (
            json!([good, good, {"tool": "control_room_lights", "arguments": {"action": "on"}}]),
            "steps[2].arguments: missing field `room`",
        ),
        (
            json!([{"tool": "set_dimmer", "arguments": {"device_id": "x", "level": 150}}]),
            "steps[0].arguments.level must be between 0 and 100",
        ),
        (
            json!([{"tool": "set_room_temperature", "arguments": {"room": "Bad", "temperature": "warm"}}]),
            "steps[0].arguments.temperature must be of type number",
        ),
        (
            json!([{"tool": "list_rooms", "arguments": {"colour": "red"}}]),
            "steps[0].arguments: unknown field `colour`",
        ),
        (
            json!([{"tool": "control_lights_unified", "arguments": {"scope": "device", "action": "on", "target": ["a", 3]}}]),
            "steps[0].arguments.target[1] must be of type string",
        ),
        (
            json!([{"tool": "execute_workflow", "arguments": {"name": "Abend"}}]),
            "steps[0].tool: \"execute_workflow\" is a workflow tool",
        ),
        (
            json!([good, {"tool": "create_workflow", "arguments": {}}]),
            "steps[1].tool: \"create_workflow\" is a workflow tool",
        ),
        (
            json!([{"tool": "execute_workflow_demo", "arguments": {}}]),
            "workflow tool",
        ),
        (json!([]), "steps must have 1 to 50 entries"),
        (
            Value::Array(vec![good.clone(); 51]),
            "steps must have 1 to 50 entries",
        ),
        (
            json!([{"tool": "list_rooms", "delay_seconds": 3601}]),
            "steps[0].delay_seconds must be between 0 and 3600",
        ),
        (
            json!([{"tool": "list_rooms", "delay_seconds": -1}]),
            "steps[0].delay_seconds must be between 0 and 3600",
        ),
        (
            json!([{"tool": "list_rooms", "delay_seconds": 2000}, {"tool": "list_rooms", "delay_seconds": 2000}]),
            "delays add up to 4000 s",
        ),
        (
            json!([{"tool": "list_rooms", "parallel_group": -2}]),
            "steps[0].parallel_group must be between 0 and 1000000",
        ),
        (
            json!([{"tool": "list_rooms", "arguments": [1]}]),
            "steps[0].arguments must be of type object",
        ),
        (json!([{"arguments": {}}]), "steps[0]: missing field `tool`"),
        (
            json!([{"tool": "list_rooms", "wait": 3}]),
            "steps[0]: unknown field `wait`",
        ),
    ] {
        let m = rejected(&tools, "Test", steps.clone());
        assert!(m.contains(expect), "{steps}: {m}");
        assert!(m.starts_with("create_workflow: "), "{m}");
    }
    for (name, expect) in [
        (json!(""), "name must be 1-64 characters long (got 0)"),
        (
            json!("x".repeat(65)),
            "name must be 1-64 characters long (got 65)",
        ),
        (json!("   "), "name must have 1-64 characters"),
        (json!("a\tb"), "control characters"),
        (json!(7), "name must be of type string"),
    ] {
        let m = invalid_params(
            &tools,
            "create_workflow",
            json!({"name": name, "steps": [good]}),
        );
        assert!(m.contains(expect), "{name}: {m}");
    }
    let m = invalid_params(&tools, "create_workflow", json!({"steps": [good]}));
    assert!(m.contains("missing field `name`"), "{m}");
    // Nothing of the above was stored.
    assert_eq!(ok(&tools, "list_workflows", json!({}))["total"], 0);

    // Names are unique, compared without case.
    ok(
        &tools,
        "create_workflow",
        json!({"name": "Nacht", "steps": [good]}),
    );
    let m = rejected(&tools, "nacht", json!([good]));
    assert!(
        m.contains("name: a workflow named \"nacht\" exists already"),
        "{m}"
    );
    assert_eq!(ok(&tools, "list_workflows", json!({}))["total"], 1);
    // 50 steps are fine; 64 characters (not bytes) are fine.
    ok(
        &tools,
        "create_workflow",
        json!({"name": "ü".repeat(64), "steps": Value::Array(vec![good.clone(); 50])}),
    );
}

/// A controller whose commands to the controls in `meet` each wait until all of them are in
/// progress at once: steps run at the same time get through together, steps run one after
/// the other never do (the first gives up after [`PATIENCE`] and fails). Every command is
/// logged in the order it arrived.
struct Rendezvous {
    meet: Vec<String>,
    /// (commands to `meet` that arrived, the log of every command as "name Action").
    seen: Mutex<(usize, Vec<String>)>,
    arrived: Condvar,
}

impl Controller for Rendezvous {
    /// The Loxone client's own wording of the command (what dry runs and answers show).
    fn command(
        &self,
        c: &home_mcp::home::Control,
        a: &home_mcp::home::Action,
    ) -> Result<home_mcp::home::Command, home_mcp::home::ControllerError> {
        home_mcp::loxone::commands::house_command(c, a)
    }
    fn act(&self, control: &Control, action: &Action) -> Result<Option<Reading>, ControllerError> {
        let mut seen = self.seen.lock().unwrap();
        seen.1.push(format!("{} {action:?}", control.name));
        if !self.meet.contains(&control.uuid) {
            return Ok(None);
        }
        seen.0 += 1;
        self.arrived.notify_all();
        let (seen, waited) = self
            .arrived
            .wait_timeout_while(seen, PATIENCE, |s| s.0 < self.meet.len())
            .unwrap();
        drop(seen);
        if waited.timed_out() {
            return Err(ControllerError::Connection(format!(
                "{} waited {PATIENCE:?} for the other steps of its group: not run in parallel",
                control.name
            )));
        }
        Ok(None)
    }

    fn read(&self, _: &Control) -> Result<Reading, ControllerError> {
        Err(ControllerError::Connection("no values in this test".into()))
    }
}

#[test]
fn parallel_groups_run_at_the_same_time_and_groups_in_order() {
    let home = support::unreachable::demo_home();
    let kitchen = support::find::uuid_in(&home, "Deckenlicht", "Küche");
    let garden = support::find::uuid_in(&home, "Gartenbeleuchtung", "Außenbereich");
    // The two steps of group 1 meet in the controller: the run succeeds only when they are
    // in progress at the same time (no clock decides it).
    let controller = Arc::new(Rendezvous {
        meet: vec![kitchen.clone(), garden.clone()],
        seen: Mutex::new((0, Vec::new())),
        arrived: Condvar::new(),
    });
    let house = House::new(home.clone(), controller.clone(), Duration::from_secs(5))
        .with_verify_timeout(Duration::ZERO);
    let tools = HomeTools::with_store(Arc::new(house), Arc::new(WorkflowStore::in_memory()));
    const DELAY: f64 = 0.2;
    let delayed = |device: &str, group: u32| {
        json!({"tool": "control_device", "arguments": {"device": device, "action": "on"},
               "delay_seconds": DELAY, "parallel_group": group})
    };
    ok(
        &tools,
        "create_workflow",
        json!({"name": "Parallel", "steps": [
            delayed(&kitchen, 1),
            {"tool": "list_rooms", "parallel_group": 2},
            delayed(&garden, 1),
            {"tool": "control_device", "arguments": {"device": garden, "action": "off"}, "parallel_group": 2},
            {"tool": "list_rooms", "arguments": {"limit": 1}}
        ]}),
    );
    assert_eq!(
        ok(&tools, "get_workflow", json!({"name": "Parallel"}))["stages"],
        json!([[0, 2], [1, 3], [4]])
    );
    let run = ok(&tools, "execute_workflow", json!({"name": "Parallel"}));
    assert_eq!(run["succeeded"], 5, "{run}");
    // Groups in order: group 2 switched the garden light off only after group 1 had
    // switched both lights on.
    let log = controller.seen.lock().unwrap().1.clone();
    assert_eq!(log.len(), 3, "{log:?}");
    let mut group_1 = log[..2].to_vec();
    group_1.sort();
    assert_eq!(
        group_1,
        ["Deckenlicht On", "Gartenbeleuchtung On"],
        "{log:?}"
    );
    assert_eq!(log[2], "Gartenbeleuchtung Off", "{log:?}");
    let steps = run["steps"].as_array().unwrap();
    let indexes: Vec<u64> = steps.iter().map(|s| s["index"].as_u64().unwrap()).collect();
    assert_eq!(indexes, vec![0, 1, 2, 3, 4]);
    assert_eq!(steps[0]["parallel_group"], 1);
    assert_eq!(steps[0]["delay_seconds"], DELAY);
    assert_eq!(steps[4]["parallel_group"], Value::Null);
}

/// A controller that logs every command ("name Action") with the moment it arrived.
#[derive(Default)]
struct Timed {
    log: Mutex<Vec<(String, Instant)>>,
}

impl Controller for Timed {
    /// The Loxone client's own wording of the command (what dry runs and answers show).
    fn command(
        &self,
        c: &home_mcp::home::Control,
        a: &home_mcp::home::Action,
    ) -> Result<home_mcp::home::Command, home_mcp::home::ControllerError> {
        home_mcp::loxone::commands::house_command(c, a)
    }
    fn act(&self, control: &Control, action: &Action) -> Result<Option<Reading>, ControllerError> {
        self.log
            .lock()
            .unwrap()
            .push((format!("{} {action:?}", control.name), Instant::now()));
        Ok(None)
    }

    fn read(&self, _: &Control) -> Result<Reading, ControllerError> {
        Err(ControllerError::Connection("no values in this test".into()))
    }
}

/// The run waits a step's delay before the step: real time must pass, so the delay is short
/// and the run ends within the test. The verdict is a lower bound on the gap between the two
/// commands (both stamped by the controller as they arrive), which a busy machine can only
/// lengthen.
#[test]
fn a_step_waits_its_delay() {
    let home = support::unreachable::demo_home();
    let kitchen = support::find::uuid_in(&home, "Deckenlicht", "Küche");
    let garden = support::find::uuid_in(&home, "Gartenbeleuchtung", "Außenbereich");
    let controller = Arc::new(Timed::default());
    let house = House::new(home.clone(), controller.clone(), Duration::from_secs(5))
        .with_verify_timeout(Duration::ZERO);
    let tools = HomeTools::with_store(Arc::new(house), Arc::new(WorkflowStore::in_memory()));
    const DELAY: f64 = 0.5;
    ok(
        &tools,
        "create_workflow",
        json!({"name": "Später", "steps": [
            {"tool": "control_device", "arguments": {"device": kitchen, "action": "on"}},
            {"tool": "control_device", "arguments": {"device": garden, "action": "on"}, "delay_seconds": DELAY}
        ]}),
    );
    let run = support::wait::finishes("the run with its delayed step", move || {
        ok(&tools, "execute_workflow", json!({"name": "Später"}))
    });
    assert_eq!(run["succeeded"], 2, "{run}");
    let log = controller.log.lock().unwrap().clone();
    let names: Vec<&str> = log.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["Deckenlicht On", "Gartenbeleuchtung On"]);
    let gap = log[1].1 - log[0].1;
    assert!(
        gap >= Duration::from_secs_f64(DELAY),
        "the delayed step came {gap:?} after the first, before its {DELAY} s"
    );
}

#[test]
fn a_failing_step_does_not_hide_the_others() {
    let (app, tools) = demo();
    let s = sim(&app);
    let kitchen = uuid_of(&app, "Deckenlicht", "Küche");
    ok(
        &tools,
        "control_device",
        json!({"device": kitchen, "action": "off"}),
    );
    ok(
        &tools,
        "create_workflow",
        json!({"name": "Holprig", "steps": [
            {"tool": "control_device", "arguments": {"device": "Gibtsnicht", "action": "on"}},
            {"tool": "set_room_temperature", "arguments": {"room": "Außenbereich", "temperature": 20}, "parallel_group": 3},
            {"tool": "list_rooms", "parallel_group": 3},
            {"tool": "control_device", "arguments": {"device": kitchen, "action": "on"}}
        ]}),
    )
    .get("id")
    .expect("created");
    let run = ok(&tools, "execute_workflow", json!({"name": "Holprig"}));
    assert_eq!(run["total"], 4);
    assert_eq!(run["failed"], 2);
    assert_eq!(run["succeeded"], 2);
    assert_eq!(run["skipped"], 0);
    let steps = run["steps"].as_array().unwrap();
    assert_eq!(steps[0]["status"], "error");
    assert_eq!(steps[0]["error"]["code"], "DEVICE_NOT_FOUND");
    assert!(steps[0]["error"]["message"]
        .as_str()
        .unwrap()
        .contains("Gibtsnicht"));
    assert!(steps[0].get("data").is_none());
    // Valid arguments, but the garden has no room controller: refused when it runs.
    assert_eq!(steps[1]["status"], "error");
    assert_eq!(steps[1]["error"]["code"], "DEVICE_NOT_FOUND");
    assert!(steps[1]["error"]["message"]
        .as_str()
        .unwrap()
        .contains("no room controller"));
    assert_eq!(steps[2]["status"], "success");
    assert_eq!(steps[3]["status"], "success");
    assert_eq!(s.state(&kitchen, "active"), Some(1.0));

    // stop_on_error: the rest is reported as skipped, and not done.
    ok(
        &tools,
        "control_device",
        json!({"device": kitchen, "action": "off"}),
    );
    let run = ok(
        &tools,
        "execute_workflow",
        json!({"name": "Holprig", "stop_on_error": true}),
    );
    assert_eq!(run["stop_on_error"], true);
    assert_eq!(run["failed"], 1);
    assert_eq!(run["skipped"], 3);
    let steps = run["steps"].as_array().unwrap();
    assert_eq!(steps[3]["status"], "skipped");
    assert!(steps[3]["reason"]
        .as_str()
        .unwrap()
        .contains("step 0 failed"));
    assert_eq!(s.state(&kitchen, "active"), Some(0.0));
}

#[test]
fn dry_run_sends_nothing() {
    let (app, tools) = demo();
    let s = sim(&app);
    let kitchen = uuid_of(&app, "Deckenlicht", "Küche");
    ok(
        &tools,
        "control_device",
        json!({"device": kitchen, "action": "on"}),
    );
    ok(
        &tools,
        "create_workflow",
        json!({"name": "Trocken", "steps": [
            {"tool": "control_room_lights", "arguments": {"room": "Küche", "action": "off"}, "delay_seconds": 600},
            {"tool": "control_device", "arguments": {"device": kitchen, "action": "off"}},
            {"tool": "list_rooms"}
        ]}),
    );
    // A dry run does not wait the step's delay (600 s, ten times PATIENCE): it answers at all
    // only because it does not wait.
    let run = support::wait::finishes("the dry run (without waiting the delays)", move || {
        ok(
            &tools,
            "execute_workflow",
            json!({"id": 1, "dry_run": true}),
        )
    });
    assert_eq!(run["dry_run"], true);
    let steps = run["steps"].as_array().unwrap();
    assert_eq!(steps[0]["status"], "success");
    assert_eq!(steps[0]["data"]["dry_run"], true);
    assert!(!steps[0]["data"]["results"][0]["commands"]
        .as_array()
        .unwrap()
        .is_empty());
    // control_device takes dry_run too (issue 20): the command it would send, nothing sent.
    assert_eq!(steps[1]["status"], "success", "{}", steps[1]);
    assert_eq!(steps[1]["data"]["dry_run"], true);
    assert_eq!(steps[1]["data"]["command"], "off");
    assert_eq!(steps[2]["status"], "success");
    assert_eq!(run["planned"], 0);
    assert_eq!(run["succeeded"], 3);
    assert_eq!(s.state(&kitchen, "active"), Some(1.0));
    assert_eq!(
        sent_commands(s, &kitchen),
        ["on"],
        "only the command before the dry run reached the Miniserver"
    );
}

#[test]
fn workflows_survive_a_restart() {
    let (app, _) = demo();
    let dir = TempDir::new("restart");
    let file = dir.join("workflows.db");
    {
        let store = Arc::new(WorkflowStore::open(&file).unwrap());
        let tools = HomeTools::with_store(app.house.clone(), store);
        ok(&tools, "create_workflow", evening());
        ok(
            &tools,
            "create_workflow",
            json!({"name": "Kurz", "steps": [{"tool": "list_rooms"}]}),
        );
        ok(&tools, "delete_workflow", json!({"name": "Kurz"}));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    }
    let store = Arc::new(WorkflowStore::open(&file).unwrap());
    assert_eq!(store.path(), Some(file.as_path()));
    let tools = HomeTools::with_store(app.house.clone(), store);
    let list = ok(&tools, "list_workflows", json!({}));
    assert_eq!(list["total"], 1);
    assert_eq!(list["workflows"][0]["name"], "Abend");
    let w = ok(&tools, "get_workflow", json!({"name": "Abend"}));
    assert_eq!(w["steps"][1]["arguments"]["temperature"], 21.5);
    let run = ok(&tools, "execute_workflow", json!({"name": "Abend"}));
    assert_eq!(run["succeeded"], 3);
    // Ids are not reused after a delete.
    let again = ok(
        &tools,
        "create_workflow",
        json!({"name": "Kurz", "steps": [{"tool": "list_rooms"}]}),
    );
    assert_eq!(again["id"], 3);

    // The server opens <data_dir>/workflows.db, creating the directory.
    let nested = dir.join("state/home-mcp");
    let store = open_store(&nested).unwrap();
    assert_eq!(store.path(), Some(nested.join("workflows.db").as_path()));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&nested).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700, "{mode:o}");
    }
}

#[test]
fn a_damaged_store_is_a_clear_error() {
    let dir = TempDir::new("corrupt");
    let file = dir.join("workflows.db");
    std::fs::write(
        &file,
        b"this is not a SQLite database, just some text ".repeat(100),
    )
    .unwrap();
    match WorkflowStore::open(&file) {
        Err(StoreError::Open { path, message }) => {
            assert!(path.ends_with("workflows.db"), "{path}");
            assert!(message.contains("not a database"), "{message}");
            assert!(message.contains("move it away"), "{message}");
        }
        other => panic!("expected Open error, got {other:?}"),
    }
    // Through the server's start path: a StartError naming the file.
    match open_store(&dir.0) {
        Err(StartError::Store(e)) => assert!(e.to_string().contains("workflows.db"), "{e}"),
        Err(e) => panic!("unexpected {e}"),
        Ok(_) => panic!("a damaged store must not open"),
    }
    // A store from a newer version is refused, not misread.
    let newer = dir.join("newer.db");
    drop(WorkflowStore::open(&newer).unwrap());
    rusqlite::Connection::open(&newer)
        .unwrap()
        .execute("UPDATE schema_version SET version = 99", [])
        .unwrap();
    match WorkflowStore::open(&newer) {
        Err(StoreError::Open { message, .. }) => {
            assert!(message.contains("schema version 99"), "{message}")
        }
        other => panic!("expected Open error, got {other:?}"),
    }
    // A data directory that is a file.
    let not_dir = dir.join("plain-file");
    std::fs::write(&not_dir, b"x").unwrap();
    assert!(open_store(&not_dir.join("sub")).is_err());
}

#[test]
fn execute_needs_the_highest_step_permission() {
    let (app, _) = demo();
    let store = Arc::new(WorkflowStore::in_memory());
    let tools = HomeTools::with_store(app.house.clone(), store.clone());
    ok(
        &tools,
        "create_workflow",
        json!({"name": "Lesen", "steps": [{"tool": "list_rooms"}]}),
    );
    // Stored by a build with security tools: recorded and reported as such.
    store
        .create(&NewWorkflow {
            name: "Scharf".into(),
            description: None,
            steps: vec![],
            permission: "security".into(),
        })
        .unwrap();
    let args = |v: Value| -> Map<String, Value> { v.as_object().unwrap().clone() };
    assert_eq!(
        tools.required_permission("execute_workflow", &args(json!({"name": "Lesen"}))),
        Some(Permission::Control)
    );
    assert_eq!(
        tools.required_permission("execute_workflow", &args(json!({"name": "scharf"}))),
        Some(Permission::Security)
    );
    assert_eq!(
        tools.required_permission("execute_workflow", &args(json!({"id": 2}))),
        Some(Permission::Security)
    );
    assert_eq!(
        tools.required_permission("list_workflows", &args(json!({}))),
        Some(Permission::Read)
    );
    assert_eq!(
        tools.required_permission("create_workflow", &args(json!({}))),
        Some(Permission::Control)
    );
    assert_eq!(tools.required_permission("nope", &args(json!({}))), None);
    let list = ok(&tools, "list_workflows", json!({}));
    assert_eq!(list["workflows"][1]["permission"], "security");
}

#[test]
fn workflow_tools_are_listed_with_schemas() {
    let (_app, tools) = demo();
    let listed = tools.list_tools();
    for name in [
        "create_workflow",
        "list_workflows",
        "get_workflow",
        "execute_workflow",
        "delete_workflow",
        "execute_workflow_demo",
    ] {
        let t = listed
            .iter()
            .find(|t| t.name == name)
            .unwrap_or_else(|| panic!("{name} not listed"));
        assert_eq!(t.input_schema["type"], "object");
        assert_eq!(t.input_schema["additionalProperties"], false);
        assert!(t.output_schema.is_some());
        assert!(t.description.contains("(permission: "));
    }
    let list = listed.iter().find(|t| t.name == "list_workflows").unwrap();
    assert!(list.annotations.read_only_hint);
    let exec = listed
        .iter()
        .find(|t| t.name == "execute_workflow")
        .unwrap();
    assert!(exec.annotations.destructive_hint);
    assert!(exec.description.contains("(permission: control)"));
}

/// Every step of a demo run succeeded, was skipped with a reason, or (with `errors_allowed`)
/// failed with the tool's error; returns the steps.
fn demo_steps(data: &Value, errors_allowed: bool) -> Vec<Value> {
    let steps = data["steps"].as_array().unwrap().clone();
    if !errors_allowed {
        assert_eq!(data["failed"], 0, "{data}");
    }
    assert_eq!(data["total"], steps.len());
    for s in &steps {
        assert!(s["purpose"].is_string(), "{s}");
        match s["status"].as_str().unwrap() {
            "success" => assert!(s.get("data").is_some()),
            "skipped" => assert!(!s["reason"].as_str().unwrap().is_empty()),
            "error" if errors_allowed => {
                assert!(s["error"]["code"].is_string(), "{s}");
                assert!(s["error"]["message"].is_string(), "{s}");
            }
            other => panic!("status {other} in {s}"),
        }
    }
    steps
}

fn step<'a>(steps: &'a [Value], tool: &str) -> &'a Value {
    steps
        .iter()
        .find(|s| s["tool"] == tool)
        .unwrap_or_else(|| panic!("{tool} not in the demo"))
}

#[test]
fn demo_runs_on_the_demo_house() {
    let (app, tools) = demo();
    let s = sim(&app);
    let data = ok(&tools, "execute_workflow_demo", json!({}));
    assert_eq!(data["workflow"]["name"], "demo");
    assert_eq!(data["dry_run"], false);
    let steps = demo_steps(&data, false);
    assert_eq!(step(&steps, "list_rooms")["status"], "success");
    let lights: Vec<&Value> = steps
        .iter()
        .filter(|s| s["tool"] == "control_room_lights")
        .collect();
    assert_eq!(lights.len(), 2);
    for l in &lights {
        assert_eq!(l["status"], "success", "{l}");
    }
    assert!(lights[0]["purpose"].as_str().unwrap().ends_with(" on"));
    assert!(lights[1]["purpose"].as_str().unwrap().ends_with(" off"));
    // The room it chose ends with its lights off.
    let room = lights[1]["data"]["target"].as_str().unwrap().to_string();
    for r in lights[1]["data"]["results"].as_array().unwrap() {
        let d = &r["device"];
        let u = d["uuid"].as_str().unwrap();
        let on = s
            .state(u, "active")
            .or_else(|| s.state(u, "position"))
            .unwrap_or(0.0);
        assert_eq!(on, 0.0, "{} in {room}", d["name"]);
    }
    // The demo house has every family: temperatures, blinds, audio and alarms are read.
    for tool in ["get_temperature_sensors", "discover_rolladen_capabilities"] {
        assert_eq!(step(&steps, tool)["status"], "success");
    }
    let listed: Vec<&Value> = steps
        .iter()
        .filter(|s| s["tool"] == "list_devices")
        .collect();
    assert_eq!(listed.len(), 2);
    assert!(listed.iter().all(|s| s["status"] == "success"));
    assert!(listed[0]["data"]["total"].as_u64().unwrap() >= 1);
}

#[test]
fn demo_dry_run_changes_nothing() {
    let (app, tools) = demo();
    let s = sim(&app);
    let before: Vec<(String, Option<f64>)> = app
        .house
        .home()
        .controls
        .iter()
        .map(|c| (c.uuid.clone(), s.state(&c.uuid, "active")))
        .collect();
    let data = ok(&tools, "execute_workflow_demo", json!({"dry_run": true}));
    assert_eq!(data["dry_run"], true);
    let steps = demo_steps(&data, false);
    let light = step(&steps, "control_room_lights");
    assert_eq!(light["data"]["dry_run"], true);
    for (u, v) in before {
        assert_eq!(s.state(&u, "active"), v, "{u}");
    }
}

#[test]
fn demo_adapts_to_real_structure_files() {
    let mut lights_somewhere = false;
    let mut skipped_somewhere = false;
    for fixture in support::fixture_app::FIXTURES {
        let f = support::fixture_house(fixture);
        let tools = &f.tools;
        // A dry run first: nothing fails, the light steps show their commands.
        let dry = ok(tools, "execute_workflow_demo", json!({"dry_run": true}));
        demo_steps(&dry, false);
        // The real run: every step succeeds or is skipped with a reason.
        let data = ok(tools, "execute_workflow_demo", json!({}));
        let steps = demo_steps(&data, false);
        assert_eq!(step(&steps, "list_rooms")["status"], "success", "{fixture}");
        let light = step(&steps, "control_room_lights");
        lights_somewhere |= light["status"] != "skipped";
        skipped_somewhere |= steps.iter().any(|s| {
            s["status"] == "skipped"
                && s["reason"]
                    .as_str()
                    .unwrap()
                    .starts_with("the house has no")
        });
    }
    assert!(lights_somewhere, "some fixture has lights");
    assert!(skipped_somewhere, "some fixture lacks a family");
}
