//! Handlers of the simulator's system commands (rows of `commands.rs`): version probes
//! (loxone-protocol.md §2.2), the structure file (§2.3), the WebSocket session commands
//! (`enablebinstatusupdate`, `keepalive`, §4.1) and the diagnostics of §2.6 (`sys/numtasks`,
//! `sys/cpu`, `sys/heap`, the `lan/*` and `bus/*` counters) and `sps/state`.
//!
//! Diagnostic values are the simulator's own, in the formats clients parse (loxone-java:
//! counters as integer strings, `cpu` as `"12%"`, `heap` as `"{used}/{allowed}kB"`); they say
//! nothing about the machine the simulator runs on.

use super::answer::{Answer, Call, Ll};
use super::http::FIRMWARE_VERSION;
use super::Simulator;

/// `cfg/api` (§2.2): single-quoted pseudo-JSON with `snr`, `version`, `hasEventSlots`, ...
pub(crate) fn api(sim: &Simulator, _: &mut Call<'_>) -> Answer {
    Answer::Ll(Ll::ok(sim.api_value(false)))
}

/// `cfg/apiKey` (§2.2): as `cfg/api` plus `key`, `address`, `httpsStatus`, ...
pub(crate) fn api_key(sim: &Simulator, _: &mut Call<'_>) -> Answer {
    Answer::Ll(Ll::ok(sim.api_value(true)))
}

/// `cfg/version` (§2.2, *inferred*: the firmware version as `cfg/api` reports it).
pub(crate) fn version(_: &Simulator, _: &mut Call<'_>) -> Answer {
    Answer::Ll(Ll::ok(FIRMWARE_VERSION))
}

/// `data/LoxAPP3.json` (§2.3): the structure text, unchanged.
pub(crate) fn structure_file(sim: &Simulator, _: &mut Call<'_>) -> Answer {
    Answer::File(sim.structure_text())
}

/// `sps/LoxAPPversion3` (§2.3): the structure file's `lastModified`.
pub(crate) fn structure_version(sim: &Simulator, _: &mut Call<'_>) -> Answer {
    Answer::Ll(Ll::ok(sim.structure_version()))
}

/// `sps/enablebinstatusupdate` (§4.1 step 5): code 200, then the event tables.
pub(crate) fn enable_updates(_: &Simulator, _: &mut Call<'_>) -> Answer {
    Answer::EnableUpdates
}

/// `keepalive` (§4.1 step 6): a header with identifier 6, no payload.
pub(crate) fn keepalive(_: &Simulator, _: &mut Call<'_>) -> Answer {
    Answer::Keepalive
}

/// `sps/state`: the PLC state, 5 = running (the 0-8 scale monitoring scripts read:
/// 0 no status ... 5 running ... 8 update; *inferred*, §2.6 names only the command).
pub(crate) fn plc_state(_: &Simulator, _: &mut Call<'_>) -> Answer {
    Answer::Ll(Ll::ok("5"))
}

/// A diagnostic counter (`sys/numtasks`, `sys/ints`, `lan/txp`, `bus/packetssent`, ...): an
/// integer as a string. `numtasks` counts the simulator's own threads (HTTP workers and
/// WebSocket sessions); the others count the requests it answered (transmitted) or nothing
/// went wrong (errors).
pub(crate) fn counter(sim: &Simulator, call: &mut Call<'_>) -> Answer {
    let path = call.path.to_ascii_lowercase();
    let word = path.rsplit('/').next().unwrap_or("");
    let n = match word {
        "numtasks" => 2 + sim.ws_session_count(),
        "txp" | "rxp" | "packetssent" | "packetsreceived" | "contextswitches" | "ints"
        | "lanints" | "comints" | "contextswitchesi" => sim.request_count(),
        _ => 0,
    };
    Answer::Ll(Ll::ok(n.to_string()))
}

/// `sys/cpu`: the load in percent, `"{n}%"` (loxone-java `PercentValue`).
pub(crate) fn cpu(_: &Simulator, _: &mut Call<'_>) -> Answer {
    Answer::Ll(Ll::ok("3%"))
}

/// `sys/heap`: `"{used}/{allowed}kB"` (loxone-java `Heap`); the simulator's house is small.
pub(crate) fn heap(_: &Simulator, _: &mut Call<'_>) -> Answer {
    Answer::Ll(Ll::ok("5120/65536kB"))
}
