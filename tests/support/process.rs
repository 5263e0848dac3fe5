//! The real `home-mcp` binary as a child process, killed when the test ends.

use std::process::{Child, Command};

/// `home-mcp` as built for this test run, with a clean logging environment.
pub fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_home-mcp"));
    c.env_remove("JOURNAL_STREAM")
        .env_remove("NOTIFY_SOCKET")
        .env_remove("HOME_STDIO_KEY");
    c
}

/// A child process killed and reaped when dropped.
pub struct Kill(pub Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
