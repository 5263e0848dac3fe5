//! The README and the `docs/` pages as a reader uses them (issue 22): the README stays short
//! (at most 20,000 bytes) with the two set-up commands at the top and a link to every `docs/`
//! page; every fenced `json` and `toml` snippet parses (TOML ones also as the server's
//! configuration, through `Config::load` as `serve --config` reads it); and every client
//! snippet (Claude Desktop over stdio and through `mcp-remote`, Claude Code, VS Code, Cursor)
//! answers `tools/list` from `serve --demo` started exactly as the README says: its URL path and
//! headers, with the demo's printed admin key in place of the key placeholder, or its command
//! and arguments with `--demo`. `home-mcp check`'s failure lines are held against the README's
//! troubleshooting by `tests/check.rs` ([`readme_shows_check_failure`]).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;

use serde_json::{json, Value};

use crate::support::demo::{split_url, Demo};
use crate::support::mcp::{answer_of, McpStdio};
use crate::support::net::{free_port, request, Reply};
use crate::support::server::TempDir;

/// The README's size limit, bytes.
const README_MAX_BYTES: usize = 20_000;

/// What a snippet writes where the user's API key goes.
const KEY_PLACEHOLDER: &str = "YOUR_KEY";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("read {rel}: {e}"))
}

/// `README.md` and every `docs/*.md`, as paths relative to the repository.
fn pages() -> Vec<String> {
    let mut docs: Vec<String> = std::fs::read_dir(root().join("docs"))
        .expect("a docs/ directory")
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .filter(|n| n.ends_with(".md"))
        .map(|n| format!("docs/{n}"))
        .collect();
    docs.sort();
    assert!(!docs.is_empty(), "no docs/*.md pages");
    let mut all = vec!["README.md".to_string()];
    all.extend(docs);
    all
}

/// One fenced code block of a Markdown page.
#[derive(Debug)]
struct Block {
    /// `file:line` of the opening fence.
    at: String,
    /// The info string's first word (`json`, `toml`, `sh`, ... or empty).
    lang: String,
    /// The content, with the opening fence's indentation removed.
    text: String,
}

/// The fenced blocks of page `rel` (fences may be indented, as inside list items).
fn blocks(rel: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Option<(usize, String, usize, Vec<String>)> = None;
    for (i, line) in read(rel).lines().enumerate() {
        let trimmed = line.trim_start();
        let spaces = line.len() - line.trim_start_matches(' ').len();
        match open.as_mut() {
            None => {
                if let Some(info) = trimmed.strip_prefix("```") {
                    let lang = info.split_whitespace().next().unwrap_or("").to_string();
                    open = Some((i + 1, lang, spaces, Vec::new()));
                }
            }
            Some((start, lang, indent, lines)) => {
                if trimmed.trim_end() == "```" {
                    out.push(Block {
                        at: format!("{rel}:{start}"),
                        lang: std::mem::take(lang),
                        text: lines.join("\n"),
                    });
                    open = None;
                } else {
                    lines.push(line[spaces.min(*indent)..].to_string());
                }
            }
        }
    }
    assert!(open.is_none(), "{rel}: a code fence is not closed");
    out
}

/// Splits a shell command line into words: whitespace separates, '...' and "..." quote, an
/// unquoted `#` starting a word begins a comment.
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    for c in line.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => word.push(c),
            None if c == '\'' || c == '"' => {
                quote = Some(c);
                in_word = true;
            }
            None if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            None if c == '#' && !in_word => break,
            None => {
                word.push(c);
                in_word = true;
            }
        }
    }
    assert!(quote.is_none(), "unbalanced quote in {line:?}");
    if in_word {
        words.push(word);
    }
    words
}

/// The README's set-up commands: the words of each command of its first fenced block.
fn setup_commands() -> Vec<Vec<String>> {
    let readme = blocks("README.md");
    let first = readme.first().expect("a code block in the README");
    assert_eq!(
        first.lang, "sh",
        "the README starts with the set-up commands"
    );
    first
        .text
        .lines()
        .map(shell_words)
        .filter(|w| !w.is_empty())
        .collect()
}

/// The arguments the README gives the binary to start the demo (`cargo run --release --
/// serve --demo` -> `["serve", "--demo"]`); tests/e2e/browser/demo.mjs reads them the same way.
fn readme_demo_args() -> Vec<String> {
    let commands = setup_commands();
    let demo = commands
        .iter()
        .find(|w| w.iter().any(|a| a == "--demo"))
        .unwrap_or_else(|| panic!("no `--demo` command in the README's set-up: {commands:?}"));
    // `cargo run` runs the package's default binary, home-mcp (Cargo.toml `default-run`).
    let args = demo
        .strip_prefix(&["cargo", "run", "--release", "--"].map(String::from))
        .unwrap_or_else(|| {
            panic!("the README's demo command is not `cargo run --release -- ...`: {demo:?}")
        });
    assert!(
        read("Cargo.toml").contains("default-run = \"home-mcp\""),
        "cargo run must run home-mcp"
    );
    args.to_vec()
}

/// `serve --demo` started with exactly the README's arguments (the port from `HOME_LISTEN`,
/// since other tests hold 3001), at security level `level` (`None`: the default).
fn readme_demo(level: Option<&str>) -> Demo {
    let args = readme_demo_args();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let listen = format!("127.0.0.1:{}", free_port());
    let mut env = vec![("HOME_LISTEN", listen.as_str())];
    if let Some(level) = level {
        env.push(("SECURITY_LEVEL", level));
    }
    Demo::start_args(&args, &env)
}

#[test]
fn the_readme_is_short_starts_with_the_set_up_and_links_every_docs_page() {
    let readme = read("README.md");
    assert!(
        readme.len() <= README_MAX_BYTES,
        "README.md is {} bytes, at most {README_MAX_BYTES}",
        readme.len()
    );
    let commands = setup_commands();
    assert_eq!(
        commands,
        vec![
            vec!["cargo", "run", "--release", "--", "serve", "--demo"],
            vec!["cargo", "test"],
        ],
        "the README's two set-up commands"
    );
    // .ci/run runs the README's test command as it stands.
    assert!(
        read(".ci/run").lines().any(|l| l.trim() == "cargo test"),
        ".ci/run runs `cargo test`"
    );
    let docs: Vec<String> = pages().into_iter().skip(1).collect();
    for page in &docs {
        assert!(
            readme.contains(&format!("]({page})")) || readme.contains(&format!("]({page}#")),
            "README.md does not link {page}"
        );
    }
}

/// GitHub's anchor of a heading: lower case, punctuation but `-` and `_` dropped, spaces to `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of page `rel`'s headings (outside code blocks).
fn anchors(rel: &str) -> Vec<String> {
    let mut fenced = false;
    read(rel)
        .lines()
        .filter(|l| {
            if l.trim_start().starts_with("```") {
                fenced = !fenced;
            }
            !fenced
        })
        .filter_map(|l| l.strip_prefix('#'))
        .map(|h| slug(h.trim_start_matches('#')))
        .collect()
}

#[test]
fn every_link_between_the_pages_resolves_to_a_page_and_heading() {
    let mut seen = 0;
    for page in pages() {
        let text = read(&page);
        let dir = std::path::Path::new(&page).parent().unwrap().to_path_buf();
        for link in text.split("](").skip(1).filter_map(|r| r.split(')').next()) {
            if link.starts_with("http") || link.contains(' ') {
                continue;
            }
            seen += 1;
            let (file, anchor) = link.split_once('#').unwrap_or((link, ""));
            let target = if file.is_empty() {
                page.clone()
            } else {
                // docs/x.md -> ../README.md, and README -> docs/x.md, relative to the page.
                let joined = dir.join(file);
                let mut parts: Vec<String> = Vec::new();
                for c in joined.components() {
                    match c {
                        std::path::Component::ParentDir => {
                            parts.pop();
                        }
                        std::path::Component::Normal(s) => parts.push(s.to_string_lossy().into()),
                        _ => {}
                    }
                }
                parts.join("/")
            };
            assert!(
                root().join(&target).exists(),
                "{page}: the link {link} names no file"
            );
            if !anchor.is_empty() && target.ends_with(".md") {
                assert!(
                    anchors(&target).iter().any(|a| a == anchor),
                    "{page}: the link {link} names no heading of {target}: {:?}",
                    anchors(&target)
                );
            }
        }
    }
    assert!(seen >= 20, "links found: {seen}");
}

#[test]
fn every_json_and_toml_snippet_parses_and_toml_ones_as_the_configuration() {
    let dir = TempDir::new("docs-toml");
    let (mut json_seen, mut toml_seen) = (0, 0);
    for page in pages() {
        for b in blocks(&page) {
            assert!(
                !matches!(b.lang.as_str(), "jsonc" | "json5" | "js" | "javascript"),
                "{}: a `{}` snippet; write it as valid `json`",
                b.at,
                b.lang
            );
            match b.lang.as_str() {
                "json" => {
                    json_seen += 1;
                    if let Err(e) = serde_json::from_str::<Value>(&b.text) {
                        panic!("{}: not JSON ({e}):\n{}", b.at, b.text);
                    }
                }
                "toml" => {
                    toml_seen += 1;
                    if let Err(e) = toml::from_str::<toml::Table>(&b.text) {
                        panic!("{}: not TOML ({e}):\n{}", b.at, b.text);
                    }
                    let path = dir.join("config.toml");
                    std::fs::write(&path, &b.text).unwrap();
                    if let Err(e) = home_mcp::config::Config::load(Some(&path), &|_| None) {
                        panic!(
                            "{}: not a configuration serve reads ({e}):\n{}",
                            b.at, b.text
                        );
                    }
                }
                _ => {}
            }
        }
    }
    assert!(json_seen >= 7, "JSON snippets found: {json_seen}");
    assert!(toml_seen >= 4, "TOML snippets found: {toml_seen}");
}

/// How a client snippet reaches the server.
#[derive(Debug, Clone)]
enum Reach {
    /// `home-mcp` started by the client: its arguments and environment.
    Stdio {
        args: Vec<String>,
        env: Vec<(String, String)>,
    },
    /// Streamable HTTP: the URL and the headers sent with every request.
    Http {
        url: String,
        headers: Vec<(String, String)>,
    },
}

/// One client configuration of the docs.
#[derive(Debug, Clone)]
struct ClientSnippet {
    at: String,
    /// Which client's format: `stdio`, `mcp-remote`, `claude-code`, `vscode`, `cursor`.
    client: &'static str,
    reach: Reach,
    /// Placeholders in it that stand for the user's key (`YOUR_KEY`, VS Code's
    /// `${input:ID}` of a declared password input).
    placeholders: Vec<String>,
}

impl ClientSnippet {
    fn keyed(&self) -> bool {
        match &self.reach {
            Reach::Http { headers, .. } => !headers.is_empty(),
            Reach::Stdio { .. } => false,
        }
    }

    /// The headers with `key` in place of every placeholder.
    fn headers_with(&self, key: &str) -> Vec<(String, String)> {
        let Reach::Http { headers, .. } = &self.reach else {
            return Vec::new();
        };
        headers
            .iter()
            .map(|(n, v)| {
                let v = self
                    .placeholders
                    .iter()
                    .fold(v.clone(), |v, p| v.replace(p, key));
                assert!(
                    !v.contains("${"),
                    "{}: unresolved variable in {v:?}",
                    self.at
                );
                (n.clone(), v)
            })
            .collect()
    }
}

/// A `Name: value` header of an `mcp-remote --header` or `claude mcp add --header` argument.
fn header_arg(at: &str, arg: &str) -> (String, String) {
    let (n, v) = arg
        .split_once(':')
        .unwrap_or_else(|| panic!("{at}: header without a colon: {arg:?}"));
    (n.trim().to_string(), v.trim().to_string())
}

/// The client snippets of one JSON block (`mcpServers` or VS Code's `servers`); none when the
/// block configures no client.
fn json_clients(b: &Block) -> Vec<ClientSnippet> {
    let v: Value = serde_json::from_str(&b.text).unwrap_or_else(|e| panic!("{}: {e}", b.at));
    let (servers, vscode) = match (v.get("mcpServers"), v.get("servers")) {
        (Some(s), None) => (s, false),
        (None, Some(s)) => (s, true),
        _ => return Vec::new(),
    };
    let mut placeholders = vec![KEY_PLACEHOLDER.to_string()];
    for input in v["inputs"].as_array().into_iter().flatten() {
        assert_eq!(
            input["password"], true,
            "{}: a key input is a password",
            b.at
        );
        placeholders.push(format!("${{input:{}}}", input["id"].as_str().unwrap()));
    }
    let servers = servers.as_object().expect("servers is an object");
    assert!(!servers.is_empty(), "{}: no server", b.at);
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .into_iter()
            .flatten()
            .map(|a| a.as_str().expect("a string argument").to_string())
            .collect()
    };
    // A snippet's `env` or `headers`: an object of strings, as (name, value) pairs.
    let pairs = |v: &Value| -> Vec<(String, String)> {
        v.as_object()
            .into_iter()
            .flatten()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
            .collect()
    };
    servers
        .values()
        .map(|s| {
            let (client, reach) = if let Some(command) = s["command"].as_str() {
                let args = strings(&s["args"]);
                if command == "home-mcp" || command.ends_with("/home-mcp") {
                    let env = pairs(&s["env"]);
                    ("stdio", Reach::Stdio { args, env })
                } else if command == "npx" && args.first().map(String::as_str) == Some("mcp-remote")
                {
                    let mut url = None;
                    let mut headers = Vec::new();
                    let mut rest = args[1..].iter();
                    while let Some(a) = rest.next() {
                        match a.as_str() {
                            "--header" => {
                                let h = rest.next().expect("a value after --header");
                                headers.push(header_arg(&b.at, h));
                            }
                            "--allow-http" => {}
                            u if u.starts_with("http") && url.is_none() => {
                                url = Some(u.to_string())
                            }
                            other => panic!(
                                "{}: an mcp-remote argument this test does not know: {other}",
                                b.at
                            ),
                        }
                    }
                    let url = url.unwrap_or_else(|| panic!("{}: no URL for mcp-remote", b.at));
                    ("mcp-remote", Reach::Http { url, headers })
                } else {
                    panic!("{}: a command this test does not know: {command}", b.at);
                }
            } else {
                let url = s["url"]
                    .as_str()
                    .unwrap_or_else(|| panic!("{}: a server without command or url", b.at))
                    .to_string();
                if let Some(t) = s.get("type") {
                    assert_eq!(t, "http", "{}: Streamable HTTP", b.at);
                }
                let headers = pairs(&s["headers"]);
                let client = if vscode { "vscode" } else { "cursor" };
                (client, Reach::Http { url, headers })
            };
            ClientSnippet {
                at: b.at.clone(),
                client,
                reach,
                placeholders: placeholders.clone(),
            }
        })
        .collect()
}

/// The `claude mcp add` commands of one shell block.
fn claude_code_clients(b: &Block) -> Vec<ClientSnippet> {
    let mut out = Vec::new();
    for line in b.text.lines() {
        let words = shell_words(line);
        let Some(rest) = words.strip_prefix(&["claude", "mcp", "add"].map(String::from)) else {
            continue;
        };
        let mut positional = Vec::new();
        let mut headers = Vec::new();
        let mut it = rest.iter();
        while let Some(w) = it.next() {
            match w.as_str() {
                "--transport" | "-t" => {
                    assert_eq!(it.next().map(String::as_str), Some("http"), "{}", b.at)
                }
                "--header" | "-H" => headers.push(header_arg(&b.at, it.next().unwrap())),
                f if f.starts_with('-') => panic!("{}: a flag this test does not know: {f}", b.at),
                p => positional.push(p.to_string()),
            }
        }
        assert_eq!(positional.len(), 2, "{}: name and URL: {line}", b.at);
        out.push(ClientSnippet {
            at: b.at.clone(),
            client: "claude-code",
            reach: Reach::Http {
                url: positional[1].clone(),
                headers,
            },
            placeholders: vec![KEY_PLACEHOLDER.to_string()],
        });
    }
    out
}

/// Every client snippet of the README and the docs.
fn client_snippets() -> Vec<ClientSnippet> {
    let mut out = Vec::new();
    for page in pages() {
        for b in blocks(&page) {
            match b.lang.as_str() {
                "json" => out.extend(json_clients(&b)),
                "sh" => out.extend(claude_code_clients(&b)),
                _ => {}
            }
        }
    }
    out
}

/// POSTs one JSON-RPC message to `path` with `headers`.
fn post(addr: SocketAddr, path: &str, headers: &[String], message: &Value) -> Reply {
    let mut all = headers.to_vec();
    all.push("Content-Type: application/json".into());
    all.push("Accept: application/json, text/event-stream".into());
    request(addr, "POST", path, &all, &message.to_string())
}

/// `initialize`, `notifications/initialized` and `tools/list` on `url`'s path at `addr` with
/// `headers`: the tool names, or the refusal (status, `WWW-Authenticate`, body).
fn tools_list_http(
    addr: SocketAddr,
    url: &str,
    headers: &[(String, String)],
) -> Result<Vec<String>, (u16, Option<String>, String)> {
    let path = url
        .split_once("://")
        .and_then(|(_, rest)| rest.find('/').map(|i| rest[i..].to_string()))
        .unwrap_or_else(|| panic!("a URL with a path: {url}"));
    let mut lines: Vec<String> = headers.iter().map(|(n, v)| format!("{n}: {v}")).collect();
    let version = "2025-11-25";
    let init = post(
        addr,
        &path,
        &lines,
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": {},
            "clientInfo": {"name": "docs snippet", "version": "1"}}}),
    );
    if init.status != 200 {
        let www = init.header("www-authenticate").map(str::to_string);
        return Err((init.status, www, init.body));
    }
    let session = init
        .header("mcp-session-id")
        .expect("a session")
        .to_string();
    lines.push(format!("Mcp-Session-Id: {session}"));
    lines.push(format!("MCP-Protocol-Version: {version}"));
    let n = post(
        addr,
        &path,
        &lines,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    assert_eq!(n.status, 202, "notifications/initialized: {n:?}");
    let r = post(
        addr,
        &path,
        &lines,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
    );
    if r.status != 200 {
        return Err((r.status, None, r.body));
    }
    Ok(tool_names(&answer_of(&r, 1)))
}

fn tool_names(answer: &Value) -> Vec<String> {
    answer["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools in {answer}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

/// The demo's address: the snippet's scheme, host and port stand for the Pi's.
fn demo_addr(demo: &Demo) -> SocketAddr {
    let (addr, path) = split_url(&demo.printed("MCP"));
    assert_eq!(path, "/mcp", "the printed MCP URL");
    addr
}

#[test]
fn every_client_snippet_answers_tools_list_from_the_demo() {
    let snippets = client_snippets();
    // Every client the README promises, with a static key and with sign-in.
    for client in ["mcp-remote", "claude-code", "vscode", "cursor"] {
        for keyed in [true, false] {
            assert!(
                snippets
                    .iter()
                    .any(|s| s.client == client && s.keyed() == keyed),
                "no {client} snippet {} a key: {snippets:#?}",
                if keyed { "with" } else { "without" }
            );
        }
    }
    assert!(
        snippets.iter().any(|s| s.client == "stdio"),
        "no stdio snippet"
    );

    let demo = readme_demo(None);
    let addr = demo_addr(&demo);
    let key = demo.printed("admin key");
    let mut lists = BTreeMap::new();
    for s in &snippets {
        let names = match &s.reach {
            Reach::Stdio { args, env } => {
                assert_eq!(args.first().map(String::as_str), Some("stdio"), "{}", s.at);
                let mut rest: Vec<&str> = args[1..].iter().map(String::as_str).collect();
                if !rest.contains(&"--demo") {
                    rest.push("--demo");
                }
                let env: Vec<(&str, &str)> =
                    env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
                let mut c = McpStdio::start(&rest, &env);
                tool_names(&c.rpc("tools/list", json!({})))
            }
            Reach::Http { url, headers } => {
                if s.keyed() {
                    // The placeholder is not a key: the server reads the snippet's header.
                    let refused = tools_list_http(addr, url, headers);
                    assert!(
                        matches!(refused, Err((401, _, _))),
                        "{}: the placeholder key should be refused: {refused:?}",
                        s.at
                    );
                }
                tools_list_http(addr, url, &s.headers_with(&key))
                    .unwrap_or_else(|e| panic!("{}: tools/list refused: {e:?}", s.at))
            }
        };
        assert!(
            names.iter().any(|n| n == "list_rooms"),
            "{}: {names:?}",
            s.at
        );
        lists.insert(s.at.clone(), names);
    }
    let first = lists.values().next().unwrap();
    for (at, names) in &lists {
        assert_eq!(names, first, "{at}: another tool list");
    }
}

#[test]
fn where_keys_are_needed_keyed_snippets_pass_and_sign_in_snippets_start_the_sign_in() {
    let snippets: Vec<ClientSnippet> = client_snippets()
        .into_iter()
        .filter(|s| matches!(s.reach, Reach::Http { .. }))
        .collect();
    assert!(!snippets.is_empty(), "no HTTP client snippets");
    let demo = readme_demo(Some("staging"));
    let addr = demo_addr(&demo);
    let key = demo.printed("admin key");
    for s in &snippets {
        let Reach::Http { url, .. } = &s.reach else {
            unreachable!()
        };
        let result = tools_list_http(addr, url, &s.headers_with(&key));
        if s.keyed() {
            let names = result.unwrap_or_else(|e| panic!("{}: tools/list refused: {e:?}", s.at));
            assert!(
                names.iter().any(|n| n == "list_rooms"),
                "{}: {names:?}",
                s.at
            );
        } else {
            match result {
                Err((401, Some(www), _)) => assert!(
                    www.contains("resource_metadata="),
                    "{}: the 401 names the sign-in metadata: {www}",
                    s.at
                ),
                other => panic!("{}: expected 401 with WWW-Authenticate: {other:?}", s.at),
            }
        }
    }
}

/// Asserts that the README's troubleshooting shows `check`'s failure `line` (as printed:
/// `FAIL <name padded to 22> <ms> ms  <detail>; fix: <fix>`): a README line with the same
/// check name and exactly the same fix. Called by tests/check.rs on every failure it sees.
pub(crate) fn readme_shows_check_failure(line: &str) {
    let name = line
        .get(..27)
        .filter(|p| p.starts_with("FAIL "))
        .unwrap_or_else(|| panic!("not a FAIL line: {line:?}"));
    let fix = line
        .split_once("; fix: ")
        .map(|(_, f)| f)
        .unwrap_or_else(|| panic!("no fix in {line:?}"));
    let readme = read("README.md");
    assert!(
        readme.lines().map(str::trim).any(|l| l.starts_with(name)
            && l.ends_with(&format!("; fix: {fix}"))),
        "README.md's troubleshooting does not show this line of `home-mcp check` (name and fix):\n{line}"
    );
}

/// `docs/development.md` walks one `tools/call` from the socket to the Miniserver (issue 27):
/// at most 15 files, each named once and each a file of the repository, numbered in order.
#[test]
fn the_tools_call_walk_names_at_most_fifteen_files_that_exist() {
    let page = read("docs/development.md");
    let section = page
        .split("\n## ")
        .find(|s| s.starts_with("One `tools/call`, from the socket to the Miniserver"))
        .expect("the walk's section in docs/development.md");
    let mut files: Vec<String> = Vec::new();
    for line in section.lines() {
        let Some((n, rest)) = line.split_once(". `") else {
            continue;
        };
        let Ok(n) = n.parse::<usize>() else {
            continue;
        };
        assert_eq!(n, files.len() + 1, "step {n} out of order: {line}");
        let file = rest.split('`').next().unwrap().to_string();
        assert!(root().join(&file).is_file(), "step {n}: no file {file}");
        assert!(!files.contains(&file), "step {n}: {file} named twice");
        files.push(file);
    }
    assert!(!files.is_empty(), "no numbered steps in the walk");
    assert!(files.len() <= 15, "the walk crosses {} files", files.len());
    assert!(
        files[0].starts_with("src/http/"),
        "starts at the socket: {files:?}"
    );
    assert!(
        files.iter().any(|f| f == "src/loxone/client.rs"),
        "ends at the Miniserver: {files:?}"
    );
}
