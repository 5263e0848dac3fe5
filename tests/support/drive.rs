//! The simulated Miniserver driven as the house drives a real one: over its HTTP API, as a
//! wall button, the Loxone app or another integration would, and read back over the same API
//! (`jdev/sps/io/{uuid}/all`). The oracle of a test is what the simulator says here, never
//! what the server under test computed.

use std::net::SocketAddr;

use serde_json::{Map, Value};

use home_mcp::sim::{DEMO_PASSWORD, DEMO_USER};

use super::net::request;

/// A Miniserver's HTTP API at `addr` with Basic credentials.
#[derive(Debug, Clone)]
pub struct MiniserverApi {
    pub addr: SocketAddr,
    pub user: String,
    pub password: String,
}

impl MiniserverApi {
    /// The simulator at `addr` with the demo credentials (`demo`/`demo`).
    pub fn demo(addr: SocketAddr) -> Self {
        MiniserverApi {
            addr,
            user: DEMO_USER.into(),
            password: DEMO_PASSWORD.into(),
        }
    }

    fn get(&self, path: &str) -> Value {
        use base64::Engine;
        let auth = base64::engine::general_purpose::STANDARD
            .encode(format!("{}:{}", self.user, self.password));
        let r = request(
            self.addr,
            "GET",
            path,
            &[format!("Authorization: Basic {auth}")],
            "",
        );
        assert_eq!(r.status, 200, "GET {path}: {r:?}");
        r.json()["LL"].clone()
    }

    /// The HTTP API of a demo app's in-process simulator (`--demo`); fails for an app that is
    /// not a demo.
    pub fn of(app: &home_mcp::app::App) -> Self {
        let (_, server) = app.simulator.as_ref().expect("demo has a simulator");
        MiniserverApi::demo(server.addr())
    }

    /// Sends `command` to `uuid` (`GET /jdev/sps/io/{uuid}/{command}`) as a wall button would;
    /// fails the test unless the Miniserver answers code 200. Returns the `LL.value`.
    pub fn command(&self, uuid: &str, command: &str) -> String {
        let ll = self.get(&format!("/jdev/sps/io/{uuid}/{command}"));
        let code = ll
            .get("Code")
            .or_else(|| ll.get("code"))
            .and_then(Value::as_str)
            .unwrap_or("");
        assert_eq!(code, "200", "{uuid}/{command}: {ll}");
        match &ll["value"] {
            Value::String(s) => s.clone(),
            v => v.to_string(),
        }
    }

    /// Rings the bell of the intercom `uuid` with the simulator's switch
    /// (`GET /sim/door/{uuid}/ring`, the doorbell button of issue 30); returns the ring's time
    /// as the Miniserver writes it into `lastBellEvents` (`YYYYMMDDHHMMSS`, its local time).
    pub fn ring(&self, uuid: &str) -> String {
        let ll = self.get(&format!("/sim/door/{uuid}/ring"));
        ll["value"].as_str().expect("the ring's time").to_string()
    }

    /// Sets the fault switch of the camera of `uuid` (`GET /sim/camera/{uuid}/fault/{fault}`:
    /// `none`, `silent`, `huge`, `html`, `wrongpassword`).
    pub fn camera_fault(&self, uuid: &str, fault: &str) {
        self.get(&format!("/sim/camera/{uuid}/fault/{fault}"));
    }

    /// Sends `command` to the secured control `uuid` as the Loxone app or a keypad does
    /// (loxone-protocol.md §2.4): a one-time key and salt from `jdev/sys/getvisusalt/{user}`,
    /// then `GET /jdev/sps/ios/{hash}/{uuid}/{command}` with `hash` =
    /// HMAC-`hashAlg`(key, uppercase hex(`hashAlg`("{visu_password}:{salt}"))), written here
    /// apart from the product's and the simulator's own. Fails the test unless the Miniserver
    /// answers code 200.
    pub fn secured_command(&self, uuid: &str, command: &str, visu_password: &str) -> String {
        use hmac::{Hmac, Mac};
        use sha2::Digest;
        let salt = self.get(&format!("/jdev/sys/getvisusalt/{}", self.user));
        let v = &salt["value"];
        let field = |k: &str| {
            v[k].as_str()
                .unwrap_or_else(|| panic!("getvisusalt has no {k}: {salt}"))
                .to_string()
        };
        let key = hex::decode(field("key")).expect("the key is hex");
        let text = format!("{visu_password}:{}", field("salt"));
        let hash = match field("hashAlg").as_str() {
            "SHA1" => {
                let pw = hex::encode_upper(sha1::Sha1::digest(text.as_bytes()));
                let mut mac = Hmac::<sha1::Sha1>::new_from_slice(&key).expect("an HMAC key");
                mac.update(pw.as_bytes());
                hex::encode(mac.finalize().into_bytes())
            }
            _ => {
                let pw = hex::encode_upper(sha2::Sha256::digest(text.as_bytes()));
                let mut mac = Hmac::<sha2::Sha256>::new_from_slice(&key).expect("an HMAC key");
                mac.update(pw.as_bytes());
                hex::encode(mac.finalize().into_bytes())
            }
        };
        let ll = self.get(&format!("/jdev/sps/ios/{hash}/{uuid}/{command}"));
        let code = ll
            .get("Code")
            .or_else(|| ll.get("code"))
            .map(|c| c.as_str().map_or_else(|| c.to_string(), str::to_string))
            .unwrap_or_default();
        assert_eq!(code, "200", "secured {uuid}/{command}: {ll}");
        match &ll["value"] {
            Value::String(s) => s.clone(),
            v => v.to_string(),
        }
    }

    /// The primary value of `uuid` as the Miniserver answers it (`jdev/sps/io/{uuid}` without
    /// a command: `LL.value`, as text).
    pub fn value(&self, uuid: &str) -> String {
        match &self.get(&format!("/jdev/sps/io/{uuid}"))["value"] {
            Value::String(s) => s.clone(),
            v => v.to_string(),
        }
    }

    /// Every state of `uuid` by name, as the Miniserver reports them
    /// (`jdev/sps/io/{uuid}/all`: `outputN: {name, nr, value}`).
    pub fn states(&self, uuid: &str) -> Map<String, Value> {
        let ll = self.get(&format!("/jdev/sps/io/{uuid}/all"));
        let mut out = Map::new();
        for (k, v) in ll.as_object().expect("LL object") {
            if k.starts_with("output") {
                if let Some(name) = v["name"].as_str() {
                    out.insert(name.to_string(), v["value"].clone());
                }
            }
        }
        assert!(!out.is_empty(), "{uuid} reports no states: {ll}");
        out
    }

    /// One state of `uuid` as a number; fails when the state is missing or not a number.
    pub fn state(&self, uuid: &str, state: &str) -> f64 {
        let states = self.states(uuid);
        let v = states
            .get(state)
            .unwrap_or_else(|| panic!("{uuid} has no state {state}: {states:?}"));
        v.as_f64()
            .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
            .unwrap_or_else(|| panic!("{uuid}.{state} is not a number: {v}"))
    }

    /// Every entry of the Message Center `mc` as the Miniserver lists them
    /// (`jdev/sps/io/{mc}/getEntries/2`, whose `LL.value` is a JSON string).
    pub fn message_center_entries(&self, mc: &str) -> Vec<Value> {
        let ll = self.get(&format!("/jdev/sps/io/{mc}/getEntries/2"));
        let text = ll["value"]
            .as_str()
            .expect("getEntries answers a JSON string");
        let doc: Value = serde_json::from_str(text).expect("the string is JSON");
        doc["entries"].as_array().expect("an entries list").clone()
    }

    /// The entry `id` of the Message Center `mc` as the Miniserver lists it; fails when it
    /// lists none.
    pub fn message_center_entry(&self, mc: &str, id: &str) -> Value {
        self.message_center_entries(mc)
            .into_iter()
            .find(|e| e["entryUuid"] == id)
            .unwrap_or_else(|| panic!("the Message Center lists no entry {id}"))
    }

    /// A request of the simulator's test drive (`/sim/drive/{path}`, see `home_mcp::sim`:
    /// raise and clear Message Center entries, push notifications, set a state as the
    /// Miniserver's logic would); its `LL.value` (an entry's id, a notification's uid).
    pub fn drive(&self, path: &str) -> String {
        match &self.get(&format!("/sim/drive/{path}"))["value"] {
            Value::String(s) => s.clone(),
            v => v.to_string(),
        }
    }
}
