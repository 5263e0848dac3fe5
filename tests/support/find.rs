//! Controls of a [`Home`] found as a test names them (by name and room, or the room
//! controller of a room), and a device's entry in what the tools answer. Each fails the test
//! when it does not find exactly one.

use home_mcp::home::{Control, ControlKind, Home};
use home_mcp::tools::HomeTools;
use serde_json::{json, Value};

use super::house::ok;

/// The control `name` in `room` (as [`Home::resolve_control`] takes them); fails when it is
/// not exactly one control.
pub fn control_in<'h>(home: &'h Home, name: &str, room: &str) -> &'h Control {
    home.resolve_control(name, Some(room), &|_| true)
        .unwrap_or_else(|e| panic!("{name} in {room}: {e:?}"))
}

/// The UUID of the control `name` in `room` (see [`control_in`]); for a house held without
/// an `App` (with one, [`super::house::uuid_of`]).
pub fn uuid_in(home: &Home, name: &str, room: &str) -> String {
    control_in(home, name, room).uuid.clone()
}

/// Whether `c` is an Intelligent Room Controller (v1 or V2).
pub fn is_room_controller(c: &Control) -> bool {
    matches!(
        c.kind,
        ControlKind::IRoomControllerV2 | ControlKind::IRoomController
    )
}

/// The room controller (v1 or V2) of `room` (a room as [`Home::resolve_room`] takes it),
/// which must be the only one there; with `None`, the first room controller of the house.
pub fn room_controller<'h>(home: &'h Home, room: Option<&str>) -> &'h Control {
    let Some(room) = room else {
        return home
            .controls
            .iter()
            .find(|c| is_room_controller(c))
            .expect("the house has a room controller");
    };
    let uuid = &home
        .resolve_room(room)
        .unwrap_or_else(|e| panic!("room {room}: {e:?}"))
        .uuid;
    let found: Vec<&Control> = home
        .controls
        .iter()
        .filter(|c| is_room_controller(c) && c.room.as_ref() == Some(uuid))
        .collect();
    match found.as_slice() {
        [c] => c,
        other => panic!("{} room controllers in {room}", other.len()),
    }
}

/// The entry of device `uuid` in what `list_devices` answers for `room`; fails with the
/// listing when it is not there.
pub fn listed(tools: &HomeTools, room: &str, uuid: &str) -> Value {
    let data = ok(tools, "list_devices", json!({"room": room}));
    let devices = data["devices"]
        .as_array()
        .unwrap_or_else(|| panic!("list_devices has no devices array: {data}"));
    devices
        .iter()
        .find(|d| d["uuid"] == uuid)
        .cloned()
        .unwrap_or_else(|| panic!("{uuid} not listed in {room}: {data}"))
}
