//! Finding one device in what the tools answer.

use home_mcp::tools::HomeTools;
use serde_json::{json, Value};

use super::house::ok;

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
