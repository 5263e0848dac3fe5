//! What went over the wire to a simulator: the commands among the request lines it recorded
//! (`Simulator::requests`), for tests that hold a `Simulator` rather than a
//! [`super::server::Miniserver`] (the in-process demo house: `sim(&app)`).

use home_mcp::sim::Simulator;

/// The commands (not reads) `sim` received for `uuid`: request lines of
/// `jdev/sps/io/{uuid}/...` or `jdev/sps/ios/{hash}/{uuid}/...` with a command after the
/// UUID other than `all`, `state` or `getEntries/{n}`, oldest first, exactly as received.
pub fn commands_to(sim: &Simulator, uuid: &str) -> Vec<String> {
    sim.requests()
        .into_iter()
        .filter(|line| line.contains(uuid) && !is_read(command_of(line, uuid)))
        .collect()
}

/// Whether the command part of a request line only reads: none (the primary value), `all`,
/// `state`, or the Message Center's entry list (`getEntries/{n}`).
fn is_read(command: &str) -> bool {
    matches!(command, "" | "all" | "state")
        || command
            .get(..11)
            .is_some_and(|c| c.eq_ignore_ascii_case("getEntries/"))
}

/// The command part of a request line for `uuid`: the raw (still percent-encoded) path after
/// `{uuid}/`, without the query. `"GET /jdev/sps/io/{uuid}/on?autht=..."` gives `"on"`.
pub fn command_of<'a>(line: &'a str, uuid: &str) -> &'a str {
    let path = line.split(' ').nth(1).unwrap_or("");
    let path = path.split('?').next().unwrap_or("");
    path.split_once(uuid)
        .map_or("", |(_, rest)| rest.trim_start_matches('/'))
}

/// The commands `sim` received for `uuid`, as [`command_of`] each (`["on", "off"]`).
pub fn sent_commands(sim: &Simulator, uuid: &str) -> Vec<String> {
    commands_to(sim, uuid)
        .iter()
        .map(|l| command_of(l, uuid).to_string())
        .collect()
}

/// The commands (not reads) to any control among the request lines `sim` received after the
/// first `mark` ([`Simulator::request_count`] taken earlier): `jdev/sps/io/{target}/{command}`
/// or `jdev/sps/ios/{hash}/{target}/{command}` with a command other than `all`, `state` or
/// the Message Center's `getEntries/{n}`.
/// (A sub-control target `{uuid}/{name}` counts as a command to its parent: the check errs
/// on the side of "something was sent".)
pub fn commands_since(sim: &Simulator, mark: usize) -> Vec<String> {
    sim.requests_since(mark)
        .into_iter()
        .filter(|line| {
            let path = line.split(' ').nth(1).unwrap_or("");
            let path = path.split('?').next().unwrap_or("");
            let rest = if let Some(r) = path.strip_prefix("/jdev/sps/io/") {
                r
            } else if let Some(r) = path.strip_prefix("/jdev/sps/ios/") {
                r.split_once('/').map_or("", |(_, r)| r)
            } else {
                return false;
            };
            let command = rest.split_once('/').map_or("", |(_, c)| c);
            !is_read(command)
        })
        .collect()
}

/// How many secured exchanges `sim` received: request lines of the visualisation password's
/// handshake (`jdev/sys/getvisusalt/{user}`) or of a secured command (`jdev/sps/ios/{hash}/...`).
/// A count taken before and after an action shows whether anything tried the password.
pub fn secured_requests(sim: &Simulator) -> usize {
    sim.requests()
        .iter()
        .filter(|l| l.contains("getvisusalt") || l.contains("/sps/ios/"))
        .count()
}
