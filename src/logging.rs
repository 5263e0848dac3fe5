//! Logging to stderr. Two formats:
//!
//! - a terminal (or a pipe): `INFO  [module] message` through `simple_logger`, no timestamps;
//! - the systemd journal: when `JOURNAL_STREAM` names our stderr (systemd sets it to
//!   `device:inode` of the stream it connected), each line is `<N>module: message` with the
//!   syslog priority prefix journald understands (`SyslogLevelPrefix=`, on by default), so
//!   `journalctl -p warning` filters by level and no timestamp is printed twice.
//!
//! What of an API key id may appear in a log line, the audit log or an error: [`mask_key_id`].

use std::io::Write;

/// Noisy dependencies are held at `warn`.
const QUIET: [&str; 4] = ["tiny_http", "ureq", "ureq_proto", "rustls"];

/// Installs the logger for `level` (first call wins; later calls are ignored).
pub fn init(level: log::LevelFilter) {
    if journal_stream_is_stderr() {
        let _ = log::set_boxed_logger(Box::new(Journal { level })).map(|()| {
            log::set_max_level(level);
        });
        return;
    }
    let mut logger = simple_logger::SimpleLogger::new().with_level(level);
    for m in QUIET {
        logger = logger.with_module_level(m, log::LevelFilter::Warn);
    }
    let _ = logger.init();
}

/// True when `JOURNAL_STREAM` is set and names the device and inode of our stderr.
fn journal_stream_is_stderr() -> bool {
    let Some(value) = std::env::var_os("JOURNAL_STREAM") else {
        return false;
    };
    let Some(stderr) = stderr_dev_ino() else {
        return false;
    };
    matches_journal_stream(&value.to_string_lossy(), stderr)
}

fn stderr_dev_ino() -> Option<(u64, u64)> {
    use std::os::fd::AsFd;
    use std::os::unix::fs::MetadataExt;
    let fd = std::io::stderr().as_fd().try_clone_to_owned().ok()?;
    let meta = std::fs::File::from(fd).metadata().ok()?;
    Some((meta.dev(), meta.ino()))
}

/// `JOURNAL_STREAM` is `device:inode` in decimal (systemd.exec(5)).
fn matches_journal_stream(value: &str, (dev, ino): (u64, u64)) -> bool {
    let Some((d, i)) = value.trim().split_once(':') else {
        return false;
    };
    d.parse() == Ok(dev) && i.parse() == Ok(ino)
}

/// syslog priority of a log level (sd-daemon.h: `<3>` error .. `<7>` debug).
fn priority(level: log::Level) -> u8 {
    match level {
        log::Level::Error => 3,
        log::Level::Warn => 4,
        log::Level::Info => 6,
        log::Level::Debug | log::Level::Trace => 7,
    }
}

/// One journal line: `<N>target: message`, newlines in the message flattened so a record
/// stays one journal entry.
fn journal_line(level: log::Level, target: &str, message: &str) -> String {
    let message = message.replace('\n', " ");
    format!("<{}>{target}: {message}\n", priority(level))
}

struct Journal {
    level: log::LevelFilter,
}

impl log::Log for Journal {
    fn enabled(&self, meta: &log::Metadata) -> bool {
        let quiet = QUIET.iter().any(|m| {
            meta.target()
                .strip_prefix(m)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with("::"))
        });
        meta.level()
            <= if quiet {
                log::LevelFilter::Warn.min(self.level)
            } else {
                self.level
            }
    }

    fn log(&self, record: &log::Record) {
        if self.enabled(record.metadata()) {
            let line = journal_line(record.level(), record.target(), &record.args().to_string());
            // One write per record so lines from threads never interleave.
            let _ = std::io::stderr().lock().write_all(line.as_bytes());
        }
    }

    fn flush(&self) {}
}

/// `homekey_operator_3_a1b2…` -> `homekey_operator_3_a1b2****`: enough to tell keys apart in
/// logs, never enough to use one. Anything not in the `homekey_` format is `****`. (The auth
/// module makes the ids and re-exports this as `auth::mask`.)
pub fn mask_key_id(id: &str) -> String {
    if !id.starts_with("homekey_") {
        // Not our format (the legacy HTTP_API_KEY, a typo): nothing of it is shown.
        return "****".into();
    }
    match id.rfind('_') {
        Some(i) if id.len() > i + 5 => format!("{}****", &id[..i + 5]),
        _ => "****".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn journal_stream_must_name_our_stderr() {
        assert!(matches_journal_stream("64:1234", (64, 1234)));
        assert!(matches_journal_stream("64:1234\n", (64, 1234)));
        assert!(!matches_journal_stream("64:1235", (64, 1234)));
        assert!(!matches_journal_stream("", (64, 1234)));
        assert!(!matches_journal_stream("garbage", (64, 1234)));
    }

    #[test]
    fn journal_lines_carry_the_syslog_priority_and_no_timestamp() {
        assert_eq!(
            journal_line(log::Level::Error, "home_mcp::app", "cannot start"),
            "<3>home_mcp::app: cannot start\n"
        );
        assert_eq!(journal_line(log::Level::Warn, "x", "a\nb"), "<4>x: a b\n");
        assert_eq!(priority(log::Level::Info), 6);
        assert_eq!(priority(log::Level::Debug), 7);
        assert_eq!(priority(log::Level::Trace), 7);
    }
}
