//! Files only their owner may read (the key store and its lock, the audit log, the workflow
//! store, the dashboard's history, the OAuth signing secret): each is created with mode 0600 on
//! Unix before anything is written to it, so it is never readable by others, not even for a
//! moment. A base utility: it knows no feature.

use std::fs::OpenOptions;
use std::path::Path;

/// Options that create a file with mode 0600 (Unix; elsewhere the platform's default); the
/// caller adds how it opens it (`write`, `create_new`, ...).
pub fn private() -> OpenOptions {
    let mut options = OpenOptions::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options
}

/// Creates `path` empty with mode 0600 unless it exists (a database opened next creates no
/// file of its own, with the default mode).
pub fn create_private(path: &Path) -> std::io::Result<()> {
    if path.exists() {
        return Ok(());
    }
    match private().write(true).create_new(true).open(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}
