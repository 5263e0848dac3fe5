//! The simulator's one command table: every command it serves, in which flavours and over
//! which transports, who may send it, where the research notes describe it, and the function
//! that answers it. The router ([`Simulator::run`]) reads only this table, for HTTP and for
//! the WebSocket alike, so a command is added with one row and one handler.
//!
//! **Flavours** (loxone-protocol.md §2.1): `jdev/...` answers JSON, `dev/...` answers XML
//! (`<LL control="..." value="..." Code="..."/>`); a few commands have no prefix at all
//! (`data/LoxAPP3.json`, `keepalive`, `authwithtoken/...`). **Transports**: HTTP (Basic auth or
//! `?autht=`, §3.1, §3.3) and the WebSocket (`/ws/rfc6455`, §4), each plain or wrapped in
//! `jdev/sys/enc/{cipher}` / `fenc` (§3.4). Every request gets an answer: an unknown command
//! 404, a command over the wrong transport 400, one that cannot be decrypted 401, in the
//! usual shapes ([`Answer`]).
//!
//! **Adding a command**: write `fn handler(sim: &Simulator, call: &mut Call<'_>) -> Answer`
//! (in a file of its own if it is a feature of its own), add a [`Command`] row to
//! [`COMMANDS`] with [`Command::new`] (pattern, source section, handler) and the builder
//! methods for what differs from the default (both flavours, both transports, user login
//! needed). Patterns are the path after `jdev/` or `dev/`, segments separated by `/`:
//! a literal word (matched case-insensitively), `{name}` (one segment, percent-decoded into
//! [`Call::args`]), `{control}` (a control's `uuidAction`, a sub-control `uuid/suffix` or a
//! unique name, resolved into [`Call::target`]) and, last, `{rest...}` (one or more segments,
//! into [`Call::rest`]). Rows are tried in order: put the specific before the general.
//! `docs/development.md` shows the table ([`markdown_table`]; a test keeps the two equal).

use std::net::IpAddr;

use log::debug;

use super::answer::{
    Answer, Call, Command, Flavour, Flavours, Gate, Ll, Over, Reply, Request, Transport, WsLogin,
};
use super::house::House;
use super::Simulator;

/// Every command the simulator serves. The router reads only this list.
pub(crate) const COMMANDS: &[Command] = &[
    // §2.2 reachability and version.
    Command::new("cfg/api", "§2.2", super::system::api).open(),
    Command::new("cfg/apiKey", "§2.2", super::system::api_key).open(),
    Command::new("cfg/version", "§2.2 (inferred)", super::system::version).open(),
    // §2.3 structure file.
    Command::new(
        "data/LoxAPP3.json",
        "§2.3, §4.1",
        super::system::structure_file,
    )
    .bare(),
    Command::new(
        "sps/LoxAPPversion3",
        "§2.3",
        super::system::structure_version,
    ),
    // The Message Center (intercom-alerts §2, §5; before the controls' commands: its UUID is
    // no control's).
    Command::new(
        "sps/io/{mc}/getEntries/{n}",
        "intercom-alerts §2",
        super::message_center::get_entries,
    ),
    Command::new(
        "sps/io/{mc}/readEntry/{entry}",
        "intercom-alerts §2",
        super::message_center::read_entry,
    ),
    Command::new(
        "sps/io/{mc}/action/{entry}/{action-id}",
        "intercom-alerts §2 (1005 confirms)",
        super::message_center::entry_action,
    ),
    // §2.5 reading values (before the commands of §2.4: the more specific first).
    Command::new("sps/io/{control}", "§2.5", super::http::io_read),
    Command::new("sps/io/{control}/state", "§2.5", super::http::io_read),
    Command::new("sps/io/{control}/astate", "§2.5", super::http::io_read),
    Command::new("sps/io/{control}/all", "§2.5", super::http::io_all),
    // Intercoms and cameras (door.rs, issue 30): the stream data of a Door Controller,
    // asked in plain or inside enc/fenc, and the pictures of its rings.
    Command::new(
        "sps/io/{control}/securedDetails",
        "§2.4; intercom-alerts.md §1",
        super::door::secured_details,
    ),
    Command::new(
        "camimage/{control}/{timestamp}",
        "intercom-alerts.md §1 (never encrypted)",
        super::door::camimage,
    )
    .bare(),
    // §2.4 commands, secured commands.
    Command::new(
        "sps/io/{control}/{command...}",
        "§2.4",
        super::http::io_command,
    ),
    Command::new("sps/ios/{hash}/{control}", "§2.4", super::http::ios),
    Command::new(
        "sps/ios/{hash}/{control}/{command...}",
        "§2.4",
        super::http::ios,
    ),
    Command::new(
        "sys/getvisusalt/{user}",
        "§2.4, §2.6",
        super::http::visu_salt,
    ),
    Command::new(
        "sps/checkuservisupwd/{hash}",
        "§2.4",
        super::http::check_visu_password,
    ),
    // §2.6 / §3 keys, encryption, tokens.
    Command::new("sys/getkey", "§2.6, §3.3", super::auth::getkey).open(),
    Command::new("sys/getkey2/{user}", "§2.6, §3.2", super::auth::getkey2).open(),
    Command::new("sys/getPublicKey", "§2.6, §3.4", super::auth::public_key).open(),
    Command::new(
        "sys/getcertificate",
        "§2.6 (inferred: the key line)",
        super::auth::public_key,
    )
    .open(),
    Command::new(
        "sys/keyexchange/{session-key...}",
        "§3.4, §4.1",
        super::auth::keyexchange,
    )
    .open()
    .ws_only(),
    Command::new("sys/enc/{cipher...}", "§3.4", super::auth::enc).open(),
    Command::new("sys/fenc/{cipher...}", "§3.4", super::auth::enc).open(),
    Command::new(
        "sys/getjwt/{hash}/{user}/{permission}/{client-uuid}/{info}",
        "§3.3",
        super::auth::get_token,
    )
    .encrypted_only(),
    Command::new(
        "sys/gettoken/{hash}/{user}/{permission}/{client-uuid}/{info}",
        "§2.6, §3.3 (legacy)",
        super::auth::get_token,
    )
    .open(),
    Command::new(
        "sys/refreshjwt/{token-hash}/{user}",
        "§3.3",
        super::auth::refresh,
    )
    .open(),
    Command::new(
        "sys/refreshtoken/{token-hash}/{user}",
        "§3.3 (legacy, as refreshjwt)",
        super::auth::refresh,
    )
    .open(),
    Command::new(
        "sys/checktoken/{token-hash}/{user}",
        "§3.3",
        super::auth::check_token,
    )
    .open(),
    Command::new(
        "sys/killtoken/{token-hash}/{user}",
        "§3.3",
        super::auth::kill_token,
    )
    .open(),
    Command::new(
        "authwithtoken/{token-hash}/{user}",
        "§3.3, §4.1",
        super::auth::auth_with_token,
    )
    .open()
    .ws_only()
    .bare(),
    Command::new(
        "sys/authwithtoken/{token-hash}/{user}",
        "§3.3, §4.1 (also with jdev/sys/)",
        super::auth::auth_with_token,
    )
    .open()
    .ws_only(),
    // Statistics (statistics.md A1, A2, A4; sim/stats.rs).
    Command::new(
        "sps/getStatisticInfo/{control}",
        "statistics.md A2 (V2, firmware 13.1+)",
        super::stats::info,
    ),
    Command::new(
        "sps/getStatistic/{control}/{mode-from-until-unit-group-output...}",
        "statistics.md A2 (V2 records: u32 Unix UTC + f64 per output)",
        super::stats::data,
    ),
    Command::new(
        "stats",
        "statistics.md A1 (index, inferred HTML)",
        super::stats::index,
    )
    .bare(),
    Command::new(
        "stats/statisticdata.xml/{uuid}/{date}",
        "statistics.md A1 (V1 month or day, XML)",
        super::stats::statisticdata,
    )
    .bare(),
    Command::new(
        "stats/{file}",
        "statistics.md A1 ({uuid}.{YYYYMM}.xml, {uuid}_{group}.{YYYYMM}.xml)",
        super::stats::file,
    )
    .bare(),
    Command::new(
        "binstatisticdata/{uuid}/{date}",
        "statistics.md A1 (V1 binary: u32 local seconds since 2009 + f64 per output)",
        super::stats::binstat,
    )
    .bare()
    .ws_only(),
    // §4 the WebSocket session.
    Command::new(
        "sps/enablebinstatusupdate",
        "§2.6, §4.1",
        super::system::enable_updates,
    )
    .ws_only(),
    Command::new("keepalive", "§4.1", super::system::keepalive)
        .open()
        .ws_only()
        .bare(),
    // The simulator's own switches (not Loxone commands; issue 30): the doorbell button and
    // the camera fault switches.
    Command::new(
        "sim/door/{control}/ring",
        "simulator switch (door.rs)",
        super::door::ring_switch,
    )
    .bare(),
    Command::new(
        "sim/camera/{control}/fault/{fault}",
        "simulator switch (door.rs)",
        super::door::fault_switch,
    )
    .bare(),
    // §2.6 diagnostics (loxone-java's command list) and the PLC state.
    Command::new(
        "sps/state",
        "§2.6 (inferred: 5 running)",
        super::system::plc_state,
    ),
    Command::new("sys/numtasks", "§2.6", super::system::counter),
    Command::new("sys/cpu", "§2.6", super::system::cpu),
    Command::new("sys/heap", "§2.6", super::system::heap),
    Command::new("sys/contextswitches", "§2.6", super::system::counter),
    Command::new("sys/contextswitchesi", "§2.6", super::system::counter),
    Command::new("sys/ints", "§2.6", super::system::counter),
    Command::new("sys/comints", "§2.6", super::system::counter),
    Command::new("sys/lanints", "§2.6", super::system::counter),
    Command::new("lan/txp", "§2.6", super::system::counter),
    Command::new("lan/txe", "§2.6", super::system::counter),
    Command::new("lan/txc", "§2.6", super::system::counter),
    Command::new("lan/exh", "§2.6", super::system::counter),
    Command::new("lan/txu", "§2.6", super::system::counter),
    Command::new("lan/rxp", "§2.6", super::system::counter),
    Command::new("lan/eof", "§2.6", super::system::counter),
    Command::new("lan/rxo", "§2.6", super::system::counter),
    Command::new("lan/nob", "§2.6", super::system::counter),
    Command::new("bus/packetssent", "§2.6", super::system::counter),
    Command::new("bus/packetsreceived", "§2.6", super::system::counter),
    Command::new("bus/receiveerrors", "§2.6", super::system::counter),
    Command::new("bus/frameerrors", "§2.6", super::system::counter),
    Command::new("bus/overruns", "§2.6", super::system::counter),
    Command::new("bus/parityerrors", "§2.6", super::system::counter),
    // The test drive: what happens in the house, for tests in another process (no Miniserver
    // has these paths; message_center.rs).
    Command::new(
        "sim/drive/messagecenter/raise",
        "test drive (inferred entry shape, intercom-alerts §5)",
        super::message_center::drive_raise,
    )
    .bare(),
    Command::new(
        "sim/drive/messagecenter/clear/{entry}",
        "test drive",
        super::message_center::drive_clear,
    )
    .bare(),
    Command::new(
        "sim/drive/notify",
        "test drive (intercom-alerts §2 notification shape)",
        super::message_center::drive_notify,
    )
    .bare(),
    Command::new(
        "sim/drive/requests/{mark}",
        "test drive (the request log)",
        super::message_center::drive_requests,
    )
    .bare(),
    Command::new(
        "sim/drive/state/{control}/{state}/{value}",
        "test drive (a Virtual Status or sensor set by the Miniserver's logic)",
        super::message_center::drive_state,
    )
    .bare(),
];

/// How a pattern segment matches.
enum Seg<'p> {
    Lit(&'p str),
    Arg,
    Control,
    Rest,
}

fn seg_kind(s: &str) -> Seg<'_> {
    match s {
        "{control}" => Seg::Control,
        _ if s.starts_with('{') && s.ends_with("...}") => Seg::Rest,
        _ if s.starts_with('{') => Seg::Arg,
        _ => Seg::Lit(s),
    }
}

/// Captures of a matched pattern (raw segments).
#[derive(Default)]
struct Captures {
    args: Vec<String>,
    target: Option<usize>,
    rest: Vec<String>,
}

/// Matches `segs` (raw path segments after the prefix) against `pattern`.
fn matches(pattern: &str, segs: &[&str], house: &House) -> Option<Captures> {
    let pat: Vec<&str> = pattern.split('/').collect();
    let mut caps = Captures::default();
    let mut i = 0;
    for (k, p) in pat.iter().enumerate() {
        match seg_kind(p) {
            Seg::Lit(w) => {
                if !segs.get(i)?.eq_ignore_ascii_case(w) {
                    return None;
                }
                i += 1;
            }
            Seg::Arg => {
                caps.args.push(segs.get(i)?.to_string());
                i += 1;
            }
            Seg::Rest => {
                if k + 1 != pat.len() || i >= segs.len() {
                    return None;
                }
                caps.rest = segs[i..].iter().map(|s| s.to_string()).collect();
                i = segs.len();
            }
            Seg::Control => {
                let decoded: Vec<String> = segs[i..]
                    .iter()
                    .map(|s| super::http::percent_decode(s).unwrap_or_else(|| s.to_string()))
                    .collect();
                if decoded.is_empty() {
                    return None;
                }
                // The longest run of segments that is a uuidAction wins when what follows
                // still fits the pattern; else shorter ones, then a name (§2.4).
                let left = pat.len() - k - 1;
                let mut found = None;
                for (idx, used) in super::http::targets(house, &decoded) {
                    let remaining = segs.len() - i - used;
                    let fits = match pat.get(k + 1).map(|p| seg_kind(p)) {
                        None => remaining == 0,
                        Some(Seg::Rest) => remaining >= 1,
                        Some(_) => remaining == left,
                    };
                    if fits {
                        found = Some((idx, used));
                        break;
                    }
                }
                let (idx, used) = found?;
                caps.target = Some(idx);
                i += used;
            }
        }
    }
    (i == segs.len()).then_some(caps)
}

/// The control an HTTP answer echoes for `path` (`jdev/...` shown as `dev/...`, §2.1); over the
/// WebSocket the command is echoed as sent.
fn echo(path: &str, transport: Transport) -> String {
    match transport {
        Transport::Http => super::http::http_control(&segments(path)),
        Transport::Ws => path.to_string(),
    }
}

/// The segments of `path` (leading `/` already gone): empty ones in the middle are kept (a
/// base64 cipher sent without URI-encoding may hold `//`), one trailing `/` is dropped.
fn segments(path: &str) -> Vec<&str> {
    let mut segs: Vec<&str> = path.split('/').collect();
    if segs.len() > 1 && segs.last() == Some(&"") {
        segs.pop();
    }
    segs
}

/// Whether `path` is a token command (its answers use the captures' `"code"`).
fn is_token_command(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    let lower = lower
        .strip_prefix("jdev/sys/")
        .or_else(|| lower.strip_prefix("dev/sys/"))
        .unwrap_or("");
    [
        "getkey2/",
        "getjwt/",
        "gettoken/",
        "refreshjwt/",
        "refreshtoken/",
        "checktoken/",
        "killtoken/",
    ]
    .iter()
    .any(|p| lower.starts_with(p))
}

impl Simulator {
    /// The router: finds the row of [`COMMANDS`] for `req`, checks transport, login and
    /// encryption, runs its handler and, for `enc`/`fenc`, the command inside (once). Records
    /// every command but `keepalive` for [`Simulator::requests`]. Never panics.
    pub(crate) fn run(&self, req: Request<'_>) -> Reply {
        let Request {
            url,
            transport,
            peer,
            authorization,
            mut login,
        } = req;
        let first = self.run_one(
            url,
            transport,
            peer,
            authorization,
            login.as_deref_mut(),
            false,
        );
        let Answer::Decrypted { command, fenc } = first.answer else {
            return first;
        };
        let inner = command.trim().trim_start_matches('/').to_string();
        let mut reply = self.run_one(&inner, transport, peer, authorization, login, true);
        if let Answer::Decrypted { .. } = reply.answer {
            // An encrypted command inside an encrypted command: not decrypted twice.
            reply.answer = Answer::Error(400, "Bad Request");
        }
        if transport == Transport::Ws && fenc.is_none() {
            // Over the WebSocket an `enc` answer, in the clear, echoes the encrypted command as
            // received, its cipher no longer URI-encoded (PyLoxone decrypts the echo to match
            // its command). A `fenc` answer is encrypted as a whole and echoes the command
            // itself (loxws matches `getkey2`, `getjwt`, `enablebinstatusupdate` in the
            // decrypted answer's control) (*inferred* from the two clients).
            reply.control = first.control;
        }
        reply.fenc = fenc;
        reply
    }

    fn run_one(
        &self,
        url: &str,
        transport: Transport,
        peer: IpAddr,
        authorization: Option<&str>,
        login: Option<&mut WsLogin>,
        encrypted: bool,
    ) -> Reply {
        let url = url.trim_start_matches('/');
        let (path, query) = match url.split_once('?') {
            Some((p, q)) => (p, q.split('#').next().unwrap_or("")),
            None => (url.split('#').next().unwrap_or(""), ""),
        };
        if !path.eq_ignore_ascii_case("keepalive") {
            self.record_request("GET", &format!("/{url}"));
        }
        let segs = segments(path);
        let (flavour, rest) = match segs.first().map(|s| s.to_ascii_lowercase()) {
            Some(p) if p == "jdev" => (Flavour::Json, &segs[1..]),
            Some(p) if p == "dev" => (Flavour::Xml, &segs[1..]),
            _ => (Flavour::Bare, &segs[..]),
        };
        let control = echo(path, transport);
        let token = is_token_command(path);
        let reply = |answer: Answer, control: String| Reply {
            answer,
            control,
            flavour,
            fenc: None,
            token,
        };
        let found = {
            let house = self.house.lock().unwrap_or_else(|e| e.into_inner());
            COMMANDS.iter().find_map(|c| {
                let fits = matches!(
                    (c.flavours, flavour),
                    (Flavours::Both, Flavour::Json | Flavour::Xml)
                        | (Flavours::Bare, Flavour::Bare)
                );
                if !fits {
                    return None;
                }
                matches(c.pattern, rest, &house).map(|caps| (c, caps))
            })
        };
        let Some((command, caps)) = found else {
            debug!("sim: unknown command {path}");
            // A Miniserver asks who is calling before it looks the command up: a stranger
            // gets 401 for any path it does not serve openly, never a 404 that tells it what
            // exists.
            if transport == Transport::Http {
                if let Err(page) = self.authenticate(authorization, query, peer) {
                    return reply(Answer::Page(page), control);
                }
            }
            return reply(Answer::Error(404, "Not Found"), control);
        };
        if command.over == Over::Ws && transport == Transport::Http {
            debug!("sim: {path} is a WebSocket command");
            return reply(Answer::Error(400, "Bad Request"), control);
        }
        match command.gate {
            Gate::Open => {}
            Gate::Encrypted if !encrypted => {
                log::info!("sim: plain {} refused (must be encrypted)", command.pattern);
                return reply(Answer::Error(400, "Bad Request"), control);
            }
            Gate::Encrypted => {}
            Gate::User => match (transport, login.as_deref()) {
                (Transport::Ws, Some(l)) if l.user.is_some() => {}
                (Transport::Ws, _) => {
                    return reply(Answer::Ll(Ll::coded(400, "")), control);
                }
                (Transport::Http, _) => {
                    if let Err(page) = self.authenticate(authorization, query, peer) {
                        return reply(Answer::Page(page), control);
                    }
                }
            },
        }
        let decode = |raw: &[String]| -> Option<Vec<String>> {
            raw.iter().map(|s| super::http::percent_decode(s)).collect()
        };
        let (Some(args), Some(rest_decoded)) = (decode(&caps.args), decode(&caps.rest)) else {
            return reply(Answer::Error(400, "Bad Request"), control);
        };
        let mut call = Call {
            args,
            raw_args: caps.args,
            target: caps.target,
            rest: rest_decoded,
            raw_rest: caps.rest,
            control: control.clone(),
            path: path.to_string(),
            transport,
            encrypted,
            peer,
            query: query.to_string(),
            login,
        };
        let answer = (command.handler)(self, &mut call);
        reply(answer, call.control)
    }
}

/// One row of the command table as tests and docs see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandInfo {
    /// The path after `jdev/`/`dev/`, or the whole path when [`CommandInfo::prefixed`] is
    /// false; `{name}`, `{control}` and `{rest...}` mark arguments (see `commands.rs`).
    pub pattern: &'static str,
    /// Served as `jdev/{pattern}` (JSON) and `dev/{pattern}` (XML); otherwise as written.
    pub prefixed: bool,
    /// Only on the WebSocket (HTTP answers 400).
    pub websocket_only: bool,
    /// Needs a logged-in user (HTTP Basic auth or a token; an authenticated socket).
    pub needs_login: bool,
    /// Only through `enc`/`fenc` (plain: 400).
    pub encrypted_only: bool,
    /// The section of loxone-protocol.md that describes it.
    pub source: &'static str,
}

/// Every command the simulator serves, in the order the router tries them.
pub fn command_table() -> Vec<CommandInfo> {
    COMMANDS
        .iter()
        .map(|c| CommandInfo {
            pattern: c.pattern,
            prefixed: c.flavours == Flavours::Both,
            websocket_only: c.over == Over::Ws,
            needs_login: c.gate == Gate::User,
            encrypted_only: c.gate == Gate::Encrypted,
            source: c.source,
        })
        .collect()
}

/// The table as the Markdown `docs/development.md` shows: command, flavours, transports,
/// login, source.
pub fn markdown_table() -> String {
    let mut out = String::from(
        "| Command | Flavours | Over | Login | Source (loxone-protocol.md) |\n|---|---|---|---|---|\n",
    );
    for c in COMMANDS {
        let (command, flavours) = match c.flavours {
            Flavours::Both => (
                format!("`jdev/{}`", c.pattern),
                "JSON (`jdev/`), XML (`dev/`)",
            ),
            Flavours::Bare => (format!("`{}`", c.pattern), "as written"),
        };
        let over = match c.over {
            Over::Both => "HTTP, WebSocket",
            Over::Ws => "WebSocket",
        };
        let gate = match c.gate {
            Gate::Open => "none (own secret)",
            Gate::User => "user",
            Gate::Encrypted => "encrypted only",
        };
        out.push_str(&format!(
            "| {command} | {flavours} | {over} | {gate} | {} |\n",
            c.source
        ));
    }
    out
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pattern_is_well_formed_and_reachable() {
        for (i, c) in COMMANDS.iter().enumerate() {
            let segs: Vec<&str> = c.pattern.split('/').collect();
            assert!(segs.iter().all(|s| !s.is_empty()), "{}", c.pattern);
            for (k, s) in segs.iter().enumerate() {
                if matches!(seg_kind(s), Seg::Rest) {
                    assert_eq!(k + 1, segs.len(), "{{rest...}} is last: {}", c.pattern);
                }
            }
            assert!(!c.source.is_empty());
            // No earlier row with the same pattern shadows it.
            assert!(
                !COMMANDS[..i]
                    .iter()
                    .any(|o| o.pattern.eq_ignore_ascii_case(c.pattern) && o.flavours == c.flavours),
                "duplicate row {}",
                c.pattern
            );
        }
    }
}
