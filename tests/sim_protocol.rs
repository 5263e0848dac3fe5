//! Every command of the simulator's command table (`home_mcp::sim::command_table`) in each
//! flavour (`jdev/` JSON, `dev/` XML), plain and inside `jdev/sys/enc|fenc` with each padding
//! clients use (zero bytes, a NUL and zeros, a NUL and PKCS#7, PKCS#7), over HTTP (Basic auth
//! and `?autht=` tokens) and the WebSocket, against loxone-protocol.md §2-§4 and the real
//! captures in `tests/fixtures/captures`; a command that cannot be decrypted gets an error
//! answer at once; every answer arrives in one TCP segment from a `TCP_NODELAY` socket.
//!
//! The client side (AES, RSA, hashing) is written here from the protocol notes, not taken from
//! the simulator. Each row of the table needs an example below ([`example`]): a new row without
//! one fails [`every_command_in_every_flavour_transport_and_padding`] with its name.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{IpAddr, Ipv4Addr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use aes::Aes256;
use base64::prelude::{Engine as _, BASE64_STANDARD};
use cbc::cipher::block_padding::NoPadding;
use cbc::cipher::{BlockDecryptMut, BlockEncryptMut, KeyIvInit};
use hmac::{Hmac, Mac};
use home_mcp::loxone::crypto::PublicKey;
use home_mcp::loxone::ws::{Incoming, Reader, WsError, WsStream};
use home_mcp::sim::{command_table, sim_rsa, CommandInfo, SimServer, Simulator, DEMO_STRUCTURE};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::support::PATIENCE;

/// The demo house's "Partymodus" Switch (not secured).
const SWITCH: &str = "1d5c3a8f-0208-51f9-ffff504f94d0e5a1";
/// The demo house's Loxone Intercom (issue 30: `securedDetails`, bell pictures, the bell switch).
const INTERCOM: &str = "1d5c3ca0-022a-60b0-ffff504f94d0e5a1";
/// "Alarmanlage Garage", a secured Alarm.
const SECURED: &str = "1d5c3c68-0226-5ee8-ffff504f94d0e5a1";
/// The demo house's Message Center.
const MC: &str = "1d5c3cf2-0230-600e-ffff504f94d0e5a1";
/// The id the simulator gives its first Message Center entry (the seeded warning).
const FIRST_ENTRY: &str = "4d430000-0000-4000-ffff000000000001";
const USER: &str = "demo";
const PASSWORD: &str = "demo";
const VISU_PASSWORD: &str = "1234";
/// A client UUID as Loxone documents it (four groups) and one with five groups.
const UUID4: &str = "098802e1-02b4-603c-ffffeee000d80cfd";
const UUID5: &str = "edfc5f9a-df3f-4cad-9ddd-cdc42c732be2";
const LOCAL: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);
/// How long an undecryptable command may go unanswered (issue 32).
const ERROR_ANSWER: Duration = Duration::from_secs(1);

/// The demo house's `lastModified` (parsed once).
fn last_modified() -> String {
    static IT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    IT.get_or_init(|| {
        serde_json::from_str::<Value>(DEMO_STRUCTURE).unwrap()["lastModified"]
            .as_str()
            .unwrap()
            .to_string()
    })
    .clone()
}

fn capture(name: &str) -> Value {
    let path = format!(
        "{}/tests/fixtures/captures/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

fn answers_capture(id: &str) -> Value {
    static ANSWERS: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    ANSWERS.get_or_init(|| capture("answers.json"))["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["id"] == id)
        .unwrap_or_else(|| panic!("capture {id}"))
        .clone()
}

fn basic() -> String {
    format!(
        "Basic {}",
        BASE64_STANDARD.encode(format!("{USER}:{PASSWORD}"))
    )
}

fn hmac256(key: &[u8], msg: &str) -> String {
    let mut m = Hmac::<Sha256>::new_from_slice(key).unwrap();
    m.update(msg.as_bytes());
    hex::encode(m.finalize().into_bytes())
}

fn uri(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).to_string()
}

// ---- AES as clients do it -------------------------------------------------------------------

/// How a client pads the plaintext of an encrypted command.
#[derive(Debug, Clone, Copy)]
enum Padding {
    /// Zero bytes to the block size (lxcommunicator's `ZeroPadding`).
    Zero,
    /// A NUL terminator, then zero bytes (loxws).
    NulZero,
    /// A NUL terminator, then PKCS#7 (PyLoxone, node-lox-ws-api).
    NulPkcs7,
    /// PKCS#7 alone.
    Pkcs7,
}

const PADDINGS: [Padding; 4] = [
    Padding::Zero,
    Padding::NulZero,
    Padding::NulPkcs7,
    Padding::Pkcs7,
];

fn pad(p: Padding, plain: &str) -> Vec<u8> {
    let mut v = plain.as_bytes().to_vec();
    let pkcs7 = |v: &mut Vec<u8>| {
        let n = 16 - v.len() % 16;
        v.extend(std::iter::repeat_n(n as u8, n));
    };
    match p {
        Padding::Zero => {
            while v.is_empty() || !v.len().is_multiple_of(16) {
                v.push(0);
            }
        }
        Padding::NulZero => {
            v.push(0);
            while !v.len().is_multiple_of(16) {
                v.push(0);
            }
        }
        Padding::NulPkcs7 => {
            v.push(0);
            pkcs7(&mut v);
        }
        Padding::Pkcs7 => pkcs7(&mut v),
    }
    v
}

/// An AES-256 key and IV of a client.
#[derive(Debug, Clone)]
struct Key {
    key: [u8; 32],
    iv: [u8; 16],
}

impl Key {
    fn new(seed: u8) -> Key {
        Key {
            key: std::array::from_fn(|i| seed.wrapping_mul(7).wrapping_add(i as u8)),
            iv: std::array::from_fn(|i| seed.wrapping_add(3 * i as u8)),
        }
    }

    /// base64 of RSA("{keyHex}:{ivHex}") with the simulator's public key (§3.4).
    fn rsa(&self) -> String {
        let pk = PublicKey::parse(sim_rsa().unwrap().public_key_line()).unwrap();
        let text = format!("{}:{}", hex::encode(self.key), hex::encode(self.iv));
        BASE64_STANDARD.encode(pk.encrypt(text.as_bytes()).unwrap())
    }

    /// base64 of AES-256-CBC of `salt/{salt}/{cmd}` padded as `p` pads.
    fn seal(&self, p: Padding, cmd: &str) -> String {
        let plain = pad(p, &format!("salt/{}/{cmd}", hex::encode([p as u8, 0x5a])));
        let c = cbc::Encryptor::<Aes256>::new(&self.key.into(), &self.iv.into())
            .encrypt_padded_vec_mut::<NoPadding>(&plain);
        BASE64_STANDARD.encode(c)
    }

    /// A `fenc` answer: base64 of AES-CBC with zero padding.
    fn open(&self, b64: &str) -> String {
        let bytes = BASE64_STANDARD
            .decode(b64.trim())
            .unwrap_or_else(|e| panic!("fenc answer is not base64 ({e}): {b64}"));
        let plain = cbc::Decryptor::<Aes256>::new(&self.key.into(), &self.iv.into())
            .decrypt_padded_vec_mut::<NoPadding>(&bytes)
            .unwrap();
        let end = plain.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
        String::from_utf8(plain[..end].to_vec()).unwrap()
    }
}

// ---- what a request looks like and what it must get -----------------------------------------

/// How the command travels.
#[derive(Debug, Clone, Copy)]
enum Wrap {
    Plain,
    Enc(Padding),
    Fenc(Padding),
}

/// The flavour of a request.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Flavour {
    Json,
    Xml,
    Bare,
}

impl Flavour {
    fn prefix(self) -> &'static str {
        match self {
            Flavour::Json => "jdev/",
            Flavour::Xml => "dev/",
            Flavour::Bare => "",
        }
    }
}

/// What the answer's value must be.
#[derive(Debug, Clone)]
enum Value_ {
    Any,
    Eq(String),
    OneOf(&'static [&'static str]),
    Contains(&'static [&'static str]),
    Digits,
    Hex,
    /// An object with (at least) these members; over XML, attributes of `LL`.
    Object(Vec<String>),
    /// `/all`: output objects (JSON) or `nN`/`uN`/`vN` attributes (XML).
    Outputs,
}

#[derive(Debug, Clone)]
enum Expect {
    /// Code 200 and this value.
    Ok(Value_),
    /// This code (an HTTP status with the HTML page, or `Code` in the `LL` answer).
    Code(u16),
    /// The structure file itself.
    File,
    /// Binary data (statistics records, `application/octet-stream`; over the WebSocket a
    /// binary file, header id 1), not empty.
    Data,
    /// A text file of this content type beginning with this text (statistics XML, the
    /// `stats` index).
    Text(&'static str, &'static str),
    /// A header with id 6 only.
    Keepalive,
}

#[derive(Debug, Clone)]
struct Example {
    /// The command after the flavour prefix (or the whole bare command).
    cmd: String,
    /// What an HTTP answer echoes, when not `dev/{cmd}`.
    http_echo: Option<String>,
    expect: Expect,
    /// A `keyexchange` gives the socket this key from now on.
    rekey: Option<Key>,
}

impl Example {
    fn ok(cmd: impl Into<String>, v: Value_) -> Example {
        Example {
            cmd: cmd.into(),
            http_echo: None,
            expect: Expect::Ok(v),
            rekey: None,
        }
    }

    /// [`Example::ok`] for a bare path (the simulator's test drive): an HTTP answer echoes it
    /// as it is.
    fn bare(cmd: impl Into<String>, v: Value_) -> Example {
        let cmd = cmd.into();
        Example {
            http_echo: Some(cmd.clone()),
            ..Example::ok(cmd, v)
        }
    }
}

/// The simulator and in-process helpers that prepare secrets the way a client would.
struct Setup {
    sim: Arc<Simulator>,
    server: SimServer,
    next_key: u8,
    /// The key of HTTP `enc`/`fenc` requests and its URI-encoded RSA form (`?sk=`): one RSA
    /// encryption for all of them, as a client may keep its key.
    http_key: Key,
    http_sk: String,
}

impl Setup {
    fn new() -> Setup {
        let sim = Arc::new(Simulator::demo());
        let server = SimServer::start(sim.clone(), "127.0.0.1:0").unwrap();
        let http_key = Key::new(99);
        let http_sk = uri(&http_key.rsa());
        Setup {
            sim,
            server,
            next_key: 100,
            http_key,
            http_sk,
        }
    }

    fn ll(&self, url: &str) -> Value {
        let r = self.sim.handle("GET", url, Some(&basic()), LOCAL);
        assert_eq!(r.status, 200, "{url}: {}", r.body);
        serde_json::from_str::<Value>(&r.body).unwrap()["LL"].clone()
    }

    /// The hash of §3.2 for getjwt/gettoken, from a fresh getkey2.
    fn credentials_hash(&self) -> String {
        let v = self.ll(&format!("/jdev/sys/getkey2/{USER}"))["value"].clone();
        assert_eq!(v["hashAlg"], "SHA256");
        let key = hex::decode(v["key"].as_str().unwrap()).unwrap();
        let salt = v["salt"].as_str().unwrap();
        let pw = hex::encode_upper(Sha256::digest(format!("{PASSWORD}:{salt}").as_bytes()));
        hmac256(&key, &format!("{USER}:{pw}"))
    }

    /// The hash of the visualisation password for `sps/ios` (§2.4), from a fresh getvisusalt.
    fn visu_hash(&self) -> String {
        let v = self.ll(&format!("/jdev/sys/getvisusalt/{USER}"))["value"].clone();
        let key = hex::decode(v["key"].as_str().unwrap()).unwrap();
        let salt = v["salt"].as_str().unwrap();
        let pw = hex::encode_upper(Sha256::digest(format!("{VISU_PASSWORD}:{salt}").as_bytes()));
        hmac256(&key, &pw)
    }

    /// A fresh token (legacy gettoken, plain, client UUID with five groups).
    fn token(&self) -> String {
        let hash = self.credentials_hash();
        let ll = self.ll(&format!(
            "/jdev/sys/gettoken/{hash}/{USER}/4/{UUID5}/protocol%20test"
        ));
        ll["value"]["token"].as_str().unwrap().to_string()
    }

    /// HMAC-SHA256 of `token` with the `getkey` key (§3.3).
    fn token_hash(&self, token: &str) -> String {
        let key = self.ll("/jdev/sys/getkey")["value"]
            .as_str()
            .unwrap()
            .to_string();
        hmac256(&hex::decode(key).unwrap(), token)
    }

    fn fresh_key(&mut self) -> Key {
        self.next_key = self.next_key.wrapping_add(1);
        Key::new(self.next_key)
    }
}

const TOKEN_KEYS: &[&str] = &["token", "key", "validUntil", "tokenRights", "unsecurePass"];

fn keys(list: &[&str]) -> Value_ {
    Value_::Object(list.iter().map(|s| s.to_string()).collect())
}

/// The example for a row of the table, prepared afresh (tokens and one-time keys are used up).
/// `wrapped` says whether it will travel inside `enc`/`fenc`.
fn example(row: &CommandInfo, s: &mut Setup, wrapped: bool) -> Example {
    match row.pattern {
        "cfg/api" => Example::ok(
            "cfg/api",
            Value_::Contains(&["'snr': '", "'version':'14.5.12.7'", "'hasEventSlots':true"]),
        ),
        "cfg/apiKey" => Example::ok(
            "cfg/apiKey",
            Value_::Contains(&["'key':'", "'httpsStatus':"]),
        ),
        "cfg/version" => Example::ok("cfg/version", Value_::Eq("14.5.12.7".into())),
        "data/LoxAPP3.json" => Example {
            cmd: "data/LoxAPP3.json".into(),
            expect: Expect::File,
            rekey: None,
            http_echo: None,
        },
        "sps/LoxAPPversion3" => Example::ok("sps/LoxAPPversion3", Value_::Eq(last_modified())),
        // Statistics (statistics.md A1, A2; sim/stats.rs): files and data are never carried
        // inside enc/fenc (CWM "Statistic Files and Data"), info is an LL answer.
        "sps/getStatisticInfo/{control}" => Example::ok(
            format!("sps/getStatisticInfo/{GRID_METER}"),
            Value_::Contains(&["activeSince"]),
        ),
        p if p.starts_with("sps/getStatistic/") => {
            let now = jiff::Timestamp::now().as_second();
            stats_example(
                format!(
                    "sps/getStatistic/{GRID_METER}/raw/{}/{now}/all/2/total",
                    now - 7200
                ),
                Expect::Data,
                wrapped,
            )
        }
        "stats" => stats_example("stats".into(), Expect::Text("text/html", "<html>"), wrapped),
        "stats/statisticdata.xml/{uuid}/{date}" => stats_example(
            format!("stats/statisticdata.xml/{WALLBOX}/{}", this_month()),
            Expect::Text(
                "text/xml",
                "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<Statistics",
            ),
            wrapped,
        ),
        "stats/{file}" => stats_example(
            format!("stats/{WALLBOX}.{}.xml", this_month()),
            Expect::Text(
                "text/xml",
                "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<Statistics",
            ),
            wrapped,
        ),
        "binstatisticdata/{uuid}/{date}" => stats_example(
            format!("binstatisticdata/{WALLBOX}/{}", this_month()),
            Expect::Data,
            wrapped,
        ),
        "sps/io/{control}" => Example::ok(format!("sps/io/{SWITCH}"), Value_::OneOf(&["0", "1"])),
        // The KB: `dev/sps/io/LivingroomLight/state` answers control="dev/sps/io/LivingroomLight".
        "sps/io/{control}/state" | "sps/io/{control}/astate" => Example {
            http_echo: Some(format!("dev/sps/io/{SWITCH}")),
            ..Example::ok(
                format!(
                    "sps/io/{SWITCH}/{}",
                    row.pattern.rsplit('/').next().unwrap()
                ),
                Value_::OneOf(&["0", "1"]),
            )
        },
        "sps/io/{control}/all" => Example::ok(format!("sps/io/{SWITCH}/all"), Value_::Outputs),
        "sps/io/{control}/{command...}" => {
            Example::ok(format!("sps/io/{SWITCH}/on"), Value_::Eq("1".into()))
        }
        "sps/ios/{hash}/{control}" => Example::ok(
            format!("sps/ios/{}/{SECURED}", s.visu_hash()),
            Value_::OneOf(&["0", "1"]),
        ),
        "sps/ios/{hash}/{control}/{command...}" => Example::ok(
            format!("sps/ios/{}/{SECURED}/off", s.visu_hash()),
            Value_::Eq("0".into()),
        ),
        "sys/getvisusalt/{user}" => Example::ok(
            format!("sys/getvisusalt/{USER}"),
            keys(&["key", "salt", "hashAlg"]),
        ),
        "sps/checkuservisupwd/{hash}" => Example::ok(
            format!("sps/checkuservisupwd/{}", s.visu_hash()),
            Value_::Any,
        ),
        "sys/getkey" => Example::ok("sys/getkey", Value_::Hex),
        "sys/getkey2/{user}" => {
            // The members of the getkey2 capture (Smarteon/loxone-java getKeyMessage.json).
            let cap = capture("Smarteon-loxone-java-getkey2-answer.json");
            let members: Vec<String> = cap["LL"]["value"]
                .as_object()
                .unwrap()
                .keys()
                .cloned()
                .collect();
            Example::ok(format!("sys/getkey2/{USER}"), Value_::Object(members))
        }
        "sys/getPublicKey" => Example::ok(
            "sys/getPublicKey",
            Value_::Contains(&["-----BEGIN CERTIFICATE-----", "-----END CERTIFICATE-----"]),
        ),
        "sys/getcertificate" => Example::ok(
            "sys/getcertificate",
            Value_::Contains(&["-----BEGIN CERTIFICATE-----"]),
        ),
        "sys/keyexchange/{session-key...}" => {
            let key = s.fresh_key();
            Example {
                cmd: format!("sys/keyexchange/{}", key.rsa()),
                expect: Expect::Ok(Value_::Any),
                http_echo: None,
                rekey: Some(key),
            }
        }
        // The plain form of enc/fenc is the wrapper itself (see `send`); wrapped once more it
        // is refused.
        "sys/enc/{cipher...}" | "sys/fenc/{cipher...}" => Example {
            cmd: format!("sps/io/{SWITCH}"),
            expect: Expect::Ok(Value_::OneOf(&["0", "1"])),
            rekey: None,
            http_echo: None,
        },
        "sys/getjwt/{hash}/{user}/{permission}/{client-uuid}/{info}" => {
            let cmd = format!(
                "sys/getjwt/{}/{USER}/4/{UUID4}/protocol%20test",
                s.credentials_hash()
            );
            if wrapped {
                Example::ok(cmd, keys(TOKEN_KEYS))
            } else {
                // §3.3: "Unencrypted getjwt requests will be declined with 400".
                Example {
                    cmd,
                    expect: Expect::Code(400),
                    http_echo: None,
                    rekey: None,
                }
            }
        }
        "sys/gettoken/{hash}/{user}/{permission}/{client-uuid}/{info}" => Example::ok(
            format!(
                "sys/gettoken/{}/{USER}/2/{UUID5}/protocol%20test",
                s.credentials_hash()
            ),
            keys(TOKEN_KEYS),
        ),
        "sys/refreshjwt/{token-hash}/{user}" | "sys/refreshtoken/{token-hash}/{user}" => {
            let word = row.pattern.split('/').nth(1).unwrap();
            let hash = s.token_hash(&s.token());
            Example::ok(
                format!("sys/{word}/{hash}/{USER}"),
                keys(&["token", "validUntil", "tokenRights"]),
            )
        }
        "sys/checktoken/{token-hash}/{user}" => {
            let hash = s.token_hash(&s.token());
            Example::ok(
                format!("sys/checktoken/{hash}/{USER}"),
                keys(&["validUntil", "tokenRights"]),
            )
        }
        "sys/killtoken/{token-hash}/{user}" => {
            // Since 11.2 the token itself may be sent instead of its hash (§3.3).
            Example::ok(format!("sys/killtoken/{}/{USER}", s.token()), Value_::Any)
        }
        "authwithtoken/{token-hash}/{user}" | "sys/authwithtoken/{token-hash}/{user}" => {
            let stem = row.pattern.split("/{").next().unwrap();
            let hash = s.token_hash(&s.token());
            Example::ok(
                format!("{stem}/{hash}/{USER}"),
                keys(&["validUntil", "tokenRights"]),
            )
        }
        // Issue 30: the intercom's stream data (a JSON string by default), a bell picture (a
        // binary JPEG, tests/door.rs; here a ring the intercom does not list: 404 in every
        // flavour and transport), and the simulator's own switches.
        "sps/io/{control}/securedDetails" => Example::ok(
            format!("sps/io/{INTERCOM}/securedDetails"),
            Value_::Contains(&["videoInfo", "alertImage"]),
        ),
        "camimage/{control}/{timestamp}" => Example {
            cmd: format!("camimage/{INTERCOM}/20200101000000"),
            expect: Expect::Code(404),
            http_echo: None,
            rekey: None,
        },
        // Bare commands echo the path as sent.
        "sim/door/{control}/ring" => Example {
            http_echo: Some(format!("sim/door/{INTERCOM}/ring")),
            ..Example::ok(format!("sim/door/{INTERCOM}/ring"), Value_::Digits)
        },
        "sim/camera/{control}/fault/{fault}" => Example {
            http_echo: Some(format!("sim/camera/{INTERCOM}/fault/none")),
            ..Example::ok(
                format!("sim/camera/{INTERCOM}/fault/none"),
                Value_::Eq("none".into()),
            )
        },
        "sps/enablebinstatusupdate" => {
            Example::ok("sps/enablebinstatusupdate", Value_::Eq("1".into()))
        }
        "keepalive" => Example {
            cmd: "keepalive".into(),
            expect: Expect::Keepalive,
            rekey: None,
            http_echo: None,
        },
        "sps/state" => Example::ok("sps/state", Value_::Eq("5".into())),
        // The Message Center (issue 31): the entry list as a JSON string; reading and
        // confirming the seeded warning (its id is the simulator's first) may repeat.
        "sps/io/{mc}/getEntries/{n}" => Example::ok(
            format!("sps/io/{MC}/getEntries/2"),
            Value_::Contains(&["\"entries\":[", "\"entryUuid\""]),
        ),
        "sps/io/{mc}/readEntry/{entry}" => Example::ok(
            format!("sps/io/{MC}/readEntry/{FIRST_ENTRY}"),
            Value_::Eq("1".into()),
        ),
        "sps/io/{mc}/action/{entry}/{action-id}" => Example::ok(
            format!("sps/io/{MC}/action/{FIRST_ENTRY}/1005"),
            Value_::Eq("1".into()),
        ),
        // The test drive (bare paths no Miniserver has).
        "sim/drive/messagecenter/raise" => {
            Example::bare("sim/drive/messagecenter/raise", Value_::Any)
        }
        "sim/drive/messagecenter/clear/{entry}" => Example::bare(
            format!("sim/drive/messagecenter/clear/{FIRST_ENTRY}"),
            Value_::Eq(FIRST_ENTRY.into()),
        ),
        "sim/drive/notify" => {
            Example::bare("sim/drive/notify", Value_::Contains(&["sim-notification-"]))
        }
        "sim/drive/requests/{mark}" => Example::bare(
            "sim/drive/requests/0",
            Value_::Contains(&["\"count\":", "\"lines\":"]),
        ),
        "sim/drive/state/{control}/{state}/{value}" => Example::bare(
            format!("sim/drive/state/{SWITCH}/active/1"),
            Value_::Eq("1".into()),
        ),
        "sys/cpu" => Example::ok("sys/cpu", Value_::Contains(&["%"])),
        "sys/heap" => Example::ok("sys/heap", Value_::Contains(&["/", "kB"])),
        p if p.starts_with("sys/") || p.starts_with("lan/") || p.starts_with("bus/") => {
            if p.contains('{') {
                panic!("no example for the command table's row {p:?}: add one in tests/sim_protocol.rs");
            }
            Example::ok(p, Value_::Digits)
        }
        p => {
            panic!("no example for the command table's row {p:?}: add one in tests/sim_protocol.rs")
        }
    }
}

// ---- the two transports -------------------------------------------------------------------

/// The demo's grid meter (Statistics V2) and wallbox (V1).
const GRID_METER: &str = "1d5c3c2e-0222-5d52-ffff504f94d0e5a1";
const WALLBOX: &str = "1d5c3bfc-021f-5bf4-ffff504f94d0e5a1";

/// `YYYYMM` of the current month in the simulator's zone (Europe/Berlin).
fn this_month() -> String {
    let tz = jiff::tz::TimeZone::get("Europe/Berlin")
        .or_else(|_| jiff::tz::TimeZone::posix("CET-1CEST,M3.5.0,M10.5.0/3"))
        .unwrap();
    let d = jiff::Timestamp::now().to_zoned_datetime(tz).date();
    format!("{:04}{:02}", d.year(), d.month())
}

/// A statistics example: `expect` when plain, 400 inside enc/fenc.
fn stats_example(cmd: String, expect: Expect, wrapped: bool) -> Example {
    Example {
        cmd,
        http_echo: None,
        expect: if wrapped { Expect::Code(400) } else { expect },
        rekey: None,
    }
}

/// An answer as a client sees it: a status code and, for `LL` answers, control and value.
#[derive(Debug)]
struct Seen {
    code: u16,
    control: Option<String>,
    /// JSON: `LL.value`; XML: the attributes of `LL` as a JSON object.
    value: Value,
    /// `/all` outputs (JSON output objects or XML `nN` attributes).
    outputs: Vec<Value>,
    file: Option<String>,
    keepalive: bool,
    raw: String,
}

/// Parses an `LL` answer in JSON or XML.
fn parse_ll(text: &str, flavour: Flavour) -> Seen {
    if flavour == Flavour::Xml {
        const PREFIX: &str = "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<LL control=\"";
        // The XML capture (sarnau/Inside-The-Loxone-Miniserver): prolog, then control, value,
        // Code in that order.
        let cap = answers_capture("sps-io-xml-pulse")["body"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(cap.starts_with(PREFIX));
        assert!(text.starts_with(PREFIX), "XML answer: {text}");
        assert!(text.ends_with("/>"), "{text}");
        let mut attrs = serde_json::Map::new();
        let mut order = Vec::new();
        let mut rest = &text[text.find("<LL ").unwrap() + 4..];
        while let Some(eq) = rest.find("=\"") {
            let name = rest[..eq].trim().to_string();
            let after = &rest[eq + 2..];
            let end = after.find('"').unwrap();
            let v = after[..end]
                .replace("&quot;", "\"")
                .replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&apos;", "'")
                .replace("&amp;", "&");
            order.push(name.clone());
            attrs.insert(name, Value::String(v));
            rest = &after[end + 1..];
        }
        assert_eq!(&order[..2], ["control", "value"], "{text}");
        assert!(matches!(order[2].as_str(), "Code" | "code"), "{text}");
        let code = attrs
            .get("Code")
            .or_else(|| attrs.get("code"))
            .and_then(Value::as_str)
            .unwrap()
            .parse()
            .unwrap();
        let outputs = (1..)
            .map_while(|n| {
                attrs.get(&format!("n{n}")).map(|name| {
                    serde_json::json!({"name": name, "uuid": attrs[&format!("u{n}")],
                        "value": attrs[&format!("v{n}")]})
                })
            })
            .collect();
        let control = attrs["control"].as_str().map(str::to_string);
        let value = if attrs["value"] == "" {
            Value::Object(attrs.clone())
        } else {
            attrs["value"].clone()
        };
        return Seen {
            code,
            control,
            value,
            outputs,
            file: None,
            keepalive: false,
            raw: text.to_string(),
        };
    }
    let v: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"));
    let ll = v["LL"]
        .as_object()
        .unwrap_or_else(|| panic!("no LL: {text}"));
    // Code or code, a string or a number (§2.1).
    let code = ll
        .get("Code")
        .or_else(|| ll.get("code"))
        .and_then(|c| c.as_u64().or_else(|| c.as_str()?.parse().ok()))
        .unwrap_or_else(|| panic!("no code: {text}")) as u16;
    let outputs = (0..)
        .map_while(|i| ll.get(&format!("output{i}")).cloned())
        .collect();
    Seen {
        code,
        control: ll["control"].as_str().map(str::to_string),
        value: ll.get("value").cloned().unwrap_or(Value::Null),
        outputs,
        file: None,
        keepalive: false,
        raw: text.to_string(),
    }
}

/// A keep-alive HTTP connection that counts the TCP segments of each answer.
struct Http {
    stream: TcpStream,
    reader: BufReader<TcpStream>,
}

/// Data segments received on `s` so far (Linux `TCP_INFO`).
fn data_segs_in(s: &TcpStream) -> u32 {
    use std::os::fd::AsRawFd;
    // SAFETY: `tcp_info` is plain data; getsockopt writes at most `len` bytes into it.
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    let rc = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut len,
        )
    };
    assert_eq!(rc, 0, "TCP_INFO: {}", std::io::Error::last_os_error());
    info.tcpi_data_segs_in
}

/// Whether the simulator's end of `client` (found among this process's descriptors: the
/// simulator runs in the test process) has `TCP_NODELAY`.
fn server_side_nodelay(client: &TcpStream) -> bool {
    use std::os::fd::{BorrowedFd, RawFd};
    let (want_local, want_peer) = (client.peer_addr().unwrap(), client.local_addr().unwrap());
    let find = || {
        for entry in std::fs::read_dir("/proc/self/fd").ok()?.flatten() {
            let Some(fd) = entry
                .file_name()
                .to_str()
                .and_then(|s| s.parse::<RawFd>().ok())
            else {
                continue;
            };
            // SAFETY: only used for these calls while the connection (and its socket) is
            // open; a number reused meanwhile fails the address comparison.
            let fd = unsafe { BorrowedFd::borrow_raw(fd) };
            let sock = socket2::SockRef::from(&fd);
            let (Ok(l), Ok(p)) = (sock.local_addr(), sock.peer_addr()) else {
                continue;
            };
            if l.as_socket() == Some(want_local) && p.as_socket() == Some(want_peer) {
                return sock.tcp_nodelay().ok();
            }
        }
        None
    };
    // The listing of /proc/self/fd can lag behind a socket accepted on another thread.
    crate::support::wait_until(
        &format!("the simulator's socket for {want_peer} among this process's descriptors"),
        PATIENCE,
        || find().ok_or("not found"),
    )
}

/// A small answer must arrive in one segment (the loopback MSS is 32 KB or more).
const ONE_SEGMENT: usize = 30_000;

impl Http {
    fn open(s: &Setup) -> Http {
        let stream = TcpStream::connect(s.server.addr()).unwrap();
        stream.set_nodelay(true).unwrap();
        stream.set_read_timeout(Some(PATIENCE)).unwrap();
        let reader = BufReader::new(stream.try_clone().unwrap());
        Http { stream, reader }
    }

    /// GETs `path`; returns status, content type, body. Asserts the answer came in one
    /// segment when it is small.
    fn get(&mut self, path: &str, auth: Option<&str>) -> (u16, String, String) {
        let before = data_segs_in(&self.stream);
        let mut head = format!("GET /{path} HTTP/1.1\r\nHost: 127.0.0.1\r\n");
        if let Some(a) = auth {
            head.push_str(&format!("Authorization: {a}\r\n"));
        }
        head.push_str("\r\n");
        self.stream.write_all(head.as_bytes()).unwrap();
        let mut status_line = String::new();
        self.reader.read_line(&mut status_line).unwrap();
        let status: u16 = status_line
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("status line {status_line:?}"));
        let (mut len, mut ctype) = (0usize, String::new());
        let mut head_len = status_line.len();
        loop {
            let mut line = String::new();
            self.reader.read_line(&mut line).unwrap();
            head_len += line.len();
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            if let Some((k, v)) = l.split_once(':') {
                match k.to_ascii_lowercase().as_str() {
                    "content-length" => len = v.trim().parse().unwrap(),
                    "content-type" => ctype = v.trim().to_string(),
                    _ => {}
                }
            }
        }
        let mut body = vec![0u8; len];
        self.reader.read_exact(&mut body).unwrap();
        if head_len + len < ONE_SEGMENT {
            assert_eq!(
                data_segs_in(&self.stream) - before,
                1,
                "{path}: the answer ({} bytes) came in more than one segment",
                head_len + len
            );
        }
        // Binary answers (statistics records) are compared as lossy text.
        (status, ctype, String::from_utf8_lossy(&body).into_owned())
    }
}

/// A WebSocket session logged in with a token (authwithtoken), with its AES key.
struct Ws {
    reader: Reader<WsStream>,
    key: Key,
}

impl Ws {
    fn open(s: &mut Setup) -> Ws {
        let url = format!("ws://{}/ws/rfc6455", s.server.addr());
        let key = s.fresh_key();
        let mut ws = Ws {
            reader: Reader::connect(&url, PATIENCE).unwrap(),
            key: key.clone(),
        };
        let seen = ws.ask(
            &format!("jdev/sys/keyexchange/{}", key.rsa()),
            Flavour::Json,
        );
        assert_eq!(seen.code, 200, "{}", seen.raw);
        let hash = s.token_hash(&s.token());
        let seen = ws.ask(&format!("authwithtoken/{hash}/{USER}"), Flavour::Bare);
        assert_eq!(seen.code, 200, "{}", seen.raw);
        ws
    }

    fn tcp(&self) -> &TcpStream {
        self.reader.get_ref().get_ref().tcp()
    }

    /// The next answer (event tables skipped), waiting at most `patience`.
    fn next(&mut self, flavour: Flavour, patience: Duration) -> Result<Seen, String> {
        self.reader
            .get_ref()
            .get_ref()
            .set_timeout(Some(patience))
            .unwrap();
        loop {
            match self.reader.next_message() {
                Ok(Incoming::Events(_)) => continue,
                Ok(Incoming::Keepalive) => {
                    return Ok(Seen {
                        code: 200,
                        control: None,
                        value: Value::Null,
                        outputs: Vec::new(),
                        file: None,
                        keepalive: true,
                        raw: "<keepalive>".into(),
                    })
                }
                Ok(Incoming::File(bytes)) => {
                    // A binary file (statistics records).
                    let t = String::from_utf8_lossy(&bytes).into_owned();
                    return Ok(Seen {
                        code: 200,
                        control: None,
                        value: Value::Null,
                        outputs: Vec::new(),
                        file: Some(t.clone()),
                        keepalive: false,
                        raw: t,
                    });
                }
                Ok(Incoming::Text(t))
                    if t.starts_with("<html")
                        || (t.starts_with("<?xml") && !t.contains("<LL ")) =>
                {
                    // A text file (statistics XML, the stats index).
                    return Ok(Seen {
                        code: 200,
                        control: None,
                        value: Value::Null,
                        outputs: Vec::new(),
                        file: Some(t.clone()),
                        keepalive: false,
                        raw: t,
                    });
                }
                Ok(Incoming::Text(t)) => {
                    if t.trim_start().starts_with('{') || t.starts_with("<?xml") {
                        if t.contains("\"LL\"") || t.starts_with("<?xml") {
                            return Ok(parse_ll(&t, flavour));
                        }
                        // A text file (the structure file).
                        return Ok(Seen {
                            code: 200,
                            control: None,
                            value: Value::Null,
                            outputs: Vec::new(),
                            file: Some(t.clone()),
                            keepalive: false,
                            raw: t,
                        });
                    }
                    // An encrypted (fenc) answer: the caller opens it.
                    return Ok(Seen {
                        code: 0,
                        control: None,
                        value: Value::String(t.clone()),
                        outputs: Vec::new(),
                        file: None,
                        keepalive: false,
                        raw: t,
                    });
                }
                Ok(other) => return Err(format!("unexpected {other:?}")),
                Err(WsError::Timeout) => return Err(format!("no answer within {patience:?}")),
                Err(e) => return Err(format!("{e}")),
            }
        }
    }

    fn ask(&mut self, cmd: &str, flavour: Flavour) -> Seen {
        self.reader.send_text(cmd).unwrap();
        self.next(flavour, PATIENCE)
            .unwrap_or_else(|e| panic!("{cmd}: {e}"))
    }
}

/// How one request of [`every_command_in_every_flavour_transport_and_padding`] travels.
#[derive(Debug, Clone, Copy)]
struct Case {
    over_ws: bool,
    /// Over HTTP: `?autht=` instead of Basic auth.
    token_auth: bool,
    flavour: Flavour,
    wrap: Wrap,
}

/// Sends `ex` over `transport` in `flavour` wrapped as `wrap`; returns what came back (a
/// `fenc` answer decrypted) and the control the answer should echo.
fn send(s: &mut Setup, http: &mut Http, ws: &mut Ws, case: Case, ex: &Example) -> (Seen, String) {
    let Case {
        over_ws,
        token_auth,
        flavour,
        wrap,
    } = case;
    let plain = format!("{}{}", flavour.prefix(), ex.cmd);
    let prefix = if flavour == Flavour::Xml {
        "dev"
    } else {
        "jdev"
    };
    let ws_key = ws.key.clone();
    let (text, key, echo) = match wrap {
        Wrap::Plain => (plain.clone(), None, plain.clone()),
        Wrap::Enc(p) | Wrap::Fenc(p) => {
            let word = if matches!(wrap, Wrap::Enc(_)) {
                "enc"
            } else {
                "fenc"
            };
            let mut inner = plain.clone();
            if !over_ws && token_auth {
                // §3.3: the credentials go inside the encrypted command.
                let hash = s.token_hash(&s.token());
                inner.push_str(&format!("?autht={hash}&user={USER}"));
            }
            if over_ws {
                let b64 = ws_key.seal(p, &inner);
                // An enc answer echoes the encrypted command, a fenc answer (encrypted as a
                // whole) the command itself.
                let echo = if word == "enc" {
                    format!("{prefix}/sys/{word}/{b64}")
                } else {
                    plain.clone()
                };
                (
                    format!("{prefix}/sys/{word}/{}", uri(&b64)),
                    Some(ws_key.clone()),
                    echo,
                )
            } else {
                let key = s.http_key.clone();
                let b64 = key.seal(p, &inner);
                (
                    format!("{prefix}/sys/{word}/{}?sk={}", uri(&b64), s.http_sk),
                    Some(key),
                    ex.http_echo.clone().unwrap_or(format!("dev/{}", ex.cmd)),
                )
            }
        }
    };
    let fenc = matches!(wrap, Wrap::Fenc(_));
    let parse_flavour = if flavour == Flavour::Bare {
        Flavour::Json
    } else {
        flavour
    };
    if over_ws {
        ws.reader.send_text(&text).unwrap();
        let mut seen = ws
            .next(parse_flavour, PATIENCE)
            .unwrap_or_else(|e| panic!("{text}: {e}"));
        if fenc && seen.code == 0 {
            let opened = key.unwrap().open(seen.value.as_str().unwrap());
            seen = if ex.expect.is_file() {
                Seen {
                    file: Some(opened.clone()),
                    raw: opened,
                    ..seen
                }
            } else {
                parse_ll(&opened, parse_flavour)
            };
        }
        if let Some(k) = &ex.rekey {
            if seen.code == 200 {
                ws.key = k.clone();
            }
        }
        return (seen, echo);
    }
    let mut path = text.clone();
    if token_auth && matches!(wrap, Wrap::Plain) {
        let hash = s.token_hash(&s.token());
        path.push_str(&format!("?autht={hash}&user={USER}"));
    }
    let auth = (!token_auth).then(basic);
    let (status, ctype, body) = http.get(&path, auth.as_deref());
    let body = match (&key, fenc, status) {
        (Some(k), true, 200) => k.open(&body),
        _ => body,
    };
    let echo = if matches!(wrap, Wrap::Plain) {
        match flavour {
            Flavour::Bare => plain.clone(),
            _ => ex.http_echo.clone().unwrap_or(format!("dev/{}", ex.cmd)),
        }
    } else {
        echo
    };
    if status != 200 {
        // §2.7: an HTML page with the code (the 401/403 captures' shape).
        assert!(ctype.starts_with("text/html"), "{path}: {ctype}");
        assert!(
            body.contains(&format!("<errorcode>{status}</errorcode>")),
            "{path}: {body}"
        );
        let seen = Seen {
            code: status,
            control: None,
            value: Value::Null,
            outputs: Vec::new(),
            file: None,
            keepalive: false,
            raw: body,
        };
        return (seen, echo);
    }
    if let Expect::Data | Expect::Text(..) = ex.expect {
        let want = match ex.expect {
            Expect::Text(t, _) => t,
            _ => "application/octet-stream",
        };
        assert!(ctype.starts_with(want), "{path}: {ctype}");
        let seen = Seen {
            code: 200,
            control: None,
            value: Value::Null,
            outputs: Vec::new(),
            file: Some(body.clone()),
            keepalive: false,
            raw: body,
        };
        return (seen, echo);
    }
    if ex.expect.is_file() {
        assert!(ctype.starts_with("application/json"), "{ctype}");
        let seen = Seen {
            code: 200,
            control: None,
            value: Value::Null,
            outputs: Vec::new(),
            file: Some(body.clone()),
            keepalive: false,
            raw: body,
        };
        return (seen, echo);
    }
    let want_type = if flavour == Flavour::Xml {
        "text/xml"
    } else {
        "application/json"
    };
    assert!(ctype.starts_with(want_type), "{path}: {ctype}");
    (parse_ll(&body, parse_flavour), echo)
}

impl Expect {
    fn is_file(&self) -> bool {
        matches!(self, Expect::File)
    }
}

/// Checks `seen` against `ex` (and the captures), with `what` naming the case.
fn check(ex: &Example, seen: &Seen, echo: &str, flavour: Flavour, what: &str) {
    match &ex.expect {
        Expect::Keepalive => assert!(seen.keepalive, "{what}: {}", seen.raw),
        Expect::File => {
            assert_eq!(
                seen.file.as_deref(),
                Some(DEMO_STRUCTURE),
                "{what}: not the structure file"
            );
        }
        Expect::Data => {
            let file = seen.file.as_deref().unwrap_or("");
            assert!(!file.is_empty(), "{what}: no data: {}", seen.raw);
        }
        Expect::Text(_, start) => {
            let file = seen.file.as_deref().unwrap_or("");
            assert!(
                file.starts_with(start),
                "{what}: {}",
                &file[..file.len().min(200)]
            );
        }
        Expect::Code(code) => assert_eq!(seen.code, *code, "{what}: {}", seen.raw),
        Expect::Ok(v) => {
            assert_eq!(seen.code, 200, "{what}: {}", seen.raw);
            assert_eq!(seen.control.as_deref(), Some(echo), "{what}: {}", seen.raw);
            let text = seen.value.as_str().unwrap_or("");
            match v {
                Value_::Any => {}
                Value_::Eq(want) => assert_eq!(text, want, "{what}"),
                Value_::OneOf(list) => assert!(list.contains(&text), "{what}: {text:?}"),
                Value_::Contains(parts) => {
                    for p in *parts {
                        assert!(text.contains(p), "{what}: {text:?} lacks {p:?}");
                    }
                }
                Value_::Digits => assert!(
                    !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()),
                    "{what}: {text:?}"
                ),
                Value_::Hex => assert!(
                    !text.is_empty() && text.bytes().all(|b| b.is_ascii_hexdigit()),
                    "{what}: {text:?}"
                ),
                Value_::Object(members) => {
                    let obj = seen
                        .value
                        .as_object()
                        .unwrap_or_else(|| panic!("{what}: not an object: {}", seen.raw));
                    for m in members {
                        assert!(obj.contains_key(m), "{what}: no {m} in {}", seen.raw);
                    }
                }
                Value_::Outputs => {
                    assert!(!seen.outputs.is_empty(), "{what}: no outputs: {}", seen.raw);
                    if flavour == Flavour::Xml {
                        // The KB's example: value = the number of outputs.
                        assert_eq!(text, seen.outputs.len().to_string(), "{what}");
                        for o in &seen.outputs {
                            assert!(o["uuid"].as_str().unwrap().len() >= 32, "{what}: {o}");
                        }
                    } else {
                        // The members of the loxone-java alarmAll capture's output objects.
                        let cap = capture("Smarteon-loxone-java-ios-alarm-all-answer.json");
                        let want: Vec<&String> =
                            cap["LL"]["output0"].as_object().unwrap().keys().collect();
                        for o in &seen.outputs {
                            let have: Vec<&String> = o.as_object().unwrap().keys().collect();
                            assert_eq!(have, want, "{what}: {o}");
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn every_command_in_every_flavour_transport_and_padding() {
    let table = command_table();
    assert!(table.len() > 40, "{}", table.len());
    let mut s = Setup::new();
    let mut http = Http::open(&s);
    let mut ws = Ws::open(&mut s);
    let mut cases = 0;
    for row in &table {
        let flavours: &[Flavour] = if row.prefixed {
            &[Flavour::Json, Flavour::Xml]
        } else {
            &[Flavour::Bare]
        };
        let is_enc_row =
            row.pattern.starts_with("sys/enc/") || row.pattern.starts_with("sys/fenc/");
        let mut wraps = vec![Wrap::Plain];
        for p in PADDINGS {
            wraps.push(Wrap::Enc(p));
        }
        wraps.push(Wrap::Fenc(Padding::Zero));
        wraps.push(Wrap::Fenc(Padding::NulPkcs7));
        for &flavour in flavours {
            for &wrap in &wraps {
                // Over HTTP with Basic auth and with a token; over the WebSocket.
                for (over_ws, token_auth) in [(false, false), (false, true), (true, false)] {
                    if token_auth
                        && (!row.needs_login
                            || !matches!(wrap, Wrap::Plain | Wrap::Enc(Padding::Zero)))
                    {
                        continue;
                    }
                    let wrapped = !matches!(wrap, Wrap::Plain);
                    let mut ex = example(row, &mut s, wrapped || is_enc_row);
                    let (actual_wrap, expect_nested) = if is_enc_row {
                        // The enc/fenc row: its plain form is the wrapper around the example;
                        // an encrypted command inside an encrypted command is refused.
                        let fenc = row.pattern.starts_with("sys/fenc/");
                        match wrap {
                            Wrap::Plain if fenc => (Wrap::Fenc(Padding::Zero), false),
                            Wrap::Plain => (Wrap::Enc(Padding::Zero), false),
                            w => (w, true),
                        }
                    } else {
                        (wrap, false)
                    };
                    if expect_nested {
                        ex.cmd = format!("sys/enc/{}", BASE64_STANDARD.encode([0u8; 16]));
                        ex.expect = Expect::Code(400);
                    }
                    if row.websocket_only && !over_ws {
                        ex.expect = Expect::Code(400);
                    }
                    let what = format!(
                        "{} {:?} {:?} over {}{}",
                        ex.cmd,
                        flavour,
                        actual_wrap,
                        if over_ws { "WebSocket" } else { "HTTP" },
                        if token_auth { " (token)" } else { "" }
                    );
                    let case = Case {
                        over_ws,
                        token_auth,
                        flavour,
                        wrap: actual_wrap,
                    };
                    let (seen, echo) = send(&mut s, &mut http, &mut ws, case, &ex);
                    check(&ex, &seen, &echo, flavour, &what);
                    cases += 1;
                    if row.pattern.starts_with("sps/io/{control}/{command") {
                        // Switched on: switch it off again for the next case's reads.
                        s.sim.handle(
                            "GET",
                            &format!("/jdev/sps/io/{SWITCH}/off"),
                            Some(&basic()),
                            LOCAL,
                        );
                    }
                }
            }
        }
    }
    // Every row, both flavours where it has them, 7 wraps, 2 or 3 transports.
    assert!(cases > table.len() * 14, "{cases} cases");
}

impl Key {
    /// base64 of AES-256-CBC of `plain` as it stands (no `salt/` prefix), zero padded.
    fn seal_raw(&self, plain: &str) -> String {
        let c = cbc::Encryptor::<Aes256>::new(&self.key.into(), &self.iv.into())
            .encrypt_padded_vec_mut::<NoPadding>(&pad(Padding::Zero, plain));
        BASE64_STANDARD.encode(c)
    }
}

/// §3.4: "If it cannot be decrypted ... it will return 401": over HTTP as the 401 page, over
/// the WebSocket as an `LL` answer with code 401, within [`ERROR_ANSWER`] and before the
/// answer to the next command (a `keepalive` sent right after it).
#[test]
fn undecryptable_commands_get_an_error_answer_at_once() {
    let mut s = Setup::new();
    let key = s.fresh_key();
    let other = s.fresh_key();
    let sealed = |k: &Key| uri(&k.seal(Padding::NulPkcs7, &format!("jdev/sps/io/{SWITCH}")));
    let mut http = Http::open(&s);
    for path in [
        // Not AES at all.
        format!("jdev/sys/enc/QUJD?sk={}", uri(&key.rsa())),
        // Another key's cipher.
        format!("jdev/sys/enc/{}?sk={}", sealed(&other), uri(&key.rsa())),
        // No salt/ in front of the command.
        format!(
            "jdev/sys/enc/{}?sk={}",
            uri(&key.seal_raw("jdev/cfg/api")),
            uri(&key.rsa())
        ),
        // A session key that does not decrypt, and none at all.
        format!("jdev/sys/fenc/{}?sk=QUJD", sealed(&key)),
        format!("dev/sys/enc/{}", sealed(&key)),
    ] {
        let (status, _, body) = http.get(&path, Some(&basic()));
        assert_eq!(status, 401, "{path}: {body}");
        assert!(body.contains("<errorcode>401</errorcode>"), "{body}");
    }
    let url = format!("ws://{}/ws/rfc6455", s.server.addr());
    // Before any keyexchange.
    let mut fresh = Ws {
        reader: Reader::connect(&url, PATIENCE).unwrap(),
        key: key.clone(),
    };
    let mut ws = Ws::open(&mut s);
    let mine = ws.key.clone();
    for (before_keyexchange, cmd) in [
        (true, format!("jdev/sys/enc/{}", sealed(&key))),
        (false, "jdev/sys/enc/QUJD".to_string()),
        (false, format!("jdev/sys/enc/{}", sealed(&other))),
        (
            false,
            format!("jdev/sys/fenc/{}", uri(&mine.seal_raw("jdev/cfg/api"))),
        ),
        (false, format!("dev/sys/enc/{}", sealed(&other))),
        (false, "jdev/sys/keyexchange/QUJD".to_string()),
    ] {
        let session = if before_keyexchange {
            &mut fresh
        } else {
            &mut ws
        };
        session.reader.send_text(&cmd).unwrap();
        session.reader.send_text("keepalive").unwrap();
        let flavour = if cmd.starts_with("dev/") {
            Flavour::Xml
        } else {
            Flavour::Json
        };
        let seen = session
            .next(flavour, ERROR_ANSWER)
            .unwrap_or_else(|e| panic!("{cmd}: {e}"));
        assert_eq!(seen.code, 401, "{cmd}: {}", seen.raw);
        assert!(!seen.keepalive, "{cmd}: no answer before the keepalive's");
        assert!(
            session.next(Flavour::Json, PATIENCE).unwrap().keepalive,
            "{cmd}"
        );
    }
    // The session still works with its own key.
    let b64 = mine.seal(Padding::NulPkcs7, &format!("jdev/sps/io/{SWITCH}"));
    let seen = ws.ask(&format!("jdev/sys/enc/{}", uri(&b64)), Flavour::Json);
    assert_eq!(seen.code, 200, "{}", seen.raw);
}

/// Every answer goes out in one write on a `TCP_NODELAY` socket: one TCP segment per answer
/// (Linux `TCP_INFO`), for the HTTP paths (JSON, XML, files, error pages) and the WebSocket
/// (header and payload together), so no answer waits for a delayed ACK.
#[test]
fn every_answer_comes_in_one_segment_from_a_nodelay_socket() {
    let mut s = Setup::new();
    let mut http = Http::open(&s);
    assert!(
        server_side_nodelay(&http.stream),
        "TCP_NODELAY on the HTTP socket"
    );
    let auth = basic();
    for (path, auth, status) in [
        ("jdev/cfg/api".to_string(), None, 200),
        (format!("jdev/sps/io/{SWITCH}"), Some(auth.as_str()), 200),
        (format!("dev/sps/io/{SWITCH}/all"), Some(&auth), 200),
        (format!("jdev/sps/io/{SWITCH}/all"), Some(&auth), 200),
        ("jdev/sys/getkey2/demo".to_string(), None, 200),
        ("jdev/sys/getPublicKey".to_string(), None, 200),
        ("jdev/no/such/command".to_string(), Some(&auth), 404),
        (format!("jdev/sps/io/{SWITCH}/on"), None, 401),
    ] {
        // `Http::get` asserts one segment per answer.
        let (got, _, body) = http.get(&path, auth);
        assert_eq!(got, status, "{path}: {body}");
    }
    // An answer over tiny_http's 1 KB write buffer still goes out in one write: `/all` of the
    // control with the most states.
    let doc: Value = serde_json::from_str(DEMO_STRUCTURE).unwrap();
    let biggest = doc["controls"]
        .as_object()
        .unwrap()
        .iter()
        .max_by_key(|(_, c)| c["states"].as_object().map_or(0, |s| s.len()))
        .unwrap()
        .0
        .clone();
    let (status, _, body) = http.get(&format!("jdev/sps/io/{biggest}/all"), Some(&auth));
    assert_eq!(status, 200);
    assert!(body.len() > 1024, "{}", body.len());
    assert!(
        server_side_nodelay(&http.stream),
        "TCP_NODELAY on the HTTP socket"
    );

    let mut ws = Ws::open(&mut s);
    assert!(
        server_side_nodelay(ws.tcp()),
        "TCP_NODELAY on the WebSocket"
    );
    for cmd in [
        "jdev/cfg/api".to_string(),
        format!("jdev/sps/io/{SWITCH}/all"),
        format!("dev/sps/io/{SWITCH}/state"),
        "jdev/sys/getPublicKey".to_string(),
        "jdev/no/such/command".to_string(),
        "keepalive".to_string(),
    ] {
        let before = data_segs_in(ws.tcp());
        let flavour = if cmd.starts_with("dev/") {
            Flavour::Xml
        } else {
            Flavour::Json
        };
        let seen = ws.ask(&cmd, flavour);
        assert!(seen.keepalive || seen.code != 0, "{cmd}");
        assert_eq!(
            data_segs_in(ws.tcp()) - before,
            1,
            "{cmd}: header and payload came in more than one segment"
        );
    }
}

/// `docs/development.md` shows the command table as the code has it
/// (`home_mcp::sim::command_table_markdown`); `UPDATE_DOCS=1` rewrites the doc's copy.
#[test]
fn the_development_doc_shows_the_command_table() {
    const START: &str = "<!-- sim-commands:start -->\n";
    const END: &str = "<!-- sim-commands:end -->";
    let path = format!("{}/docs/development.md", env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(&path).unwrap();
    let a = doc.find(START).expect("start marker") + START.len();
    let b = doc.find(END).expect("end marker");
    let table = home_mcp::sim::command_table_markdown();
    assert_eq!(table.lines().count(), command_table().len() + 2);
    if doc[a..b] != table {
        if std::env::var_os("UPDATE_DOCS").is_some() {
            std::fs::write(&path, format!("{}{table}{}", &doc[..a], &doc[b..])).unwrap();
        } else {
            panic!(
                "docs/development.md's command table differs from src/sim/commands.rs; run \
                 UPDATE_DOCS=1 cargo test --test integration sim_protocol::the_development_doc \
                 or paste:\n{table}"
            );
        }
    }
}
