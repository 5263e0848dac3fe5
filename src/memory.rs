//! Giving memory back after a burst (issue 14): after a load or an attack stops, the
//! process's RSS returns to within 2 MB of its idle value.
//!
//! Rust's default allocator is the C library's `malloc`.
//!
//! - **glibc** (the Pi's Raspberry Pi OS / Debian builds) keeps freed memory: the dynamic mmap
//!   threshold grows with each large free (up to 32 MiB), so the large answers of a burst end
//!   up on the heap instead of in their own mappings; every thread that allocates may get its
//!   own arena (up to 8 per core), each keeping its free chunks; and only the top of the main
//!   heap is given back. [`configure`] fixes the mmap threshold at 128 KiB (`M_MMAP_THRESHOLD`;
//!   setting it also stops the dynamic growth), so every large buffer is its own mapping and
//!   goes back to the kernel when freed; lowers the trim threshold to 128 KiB
//!   (`M_TRIM_THRESHOLD`); and caps the arenas at 2 (`M_ARENA_MAX`: one arena measured
//!   slower under 16 connections, every allocation of every thread behind one lock).
//!   [`start_trimmer`] calls `malloc_trim(0)` every [`TRIM_INTERVAL`]: it returns the free
//!   pages inside every arena (not only at the top), which is what brings RSS back after a
//!   burst of mid-sized allocations. Each thread's cache of freed chunks (tcache, up to 7
//!   chunks of each size to 1 KiB) is invisible to `malloc_trim` and pins the pages it holds:
//!   with the connection threads and workers of a load that was about 2 MB after the bench.
//!   It can only be set before `malloc` starts, through the environment: the packaged unit
//!   sets `GLIBC_TUNABLES=glibc.malloc.tcache_count=0` (`systemd/home-mcp.service`; measured
//!   at 16 connections: the same rate within the noise; RSS 10 s after a load +0.9 MB instead
//!   of +1.6 to +2.9 MB). The server does not re-execute itself to set it: a re-execution
//!   depends on how the binary was started (under qemu-user without binfmt, `execvp` handed
//!   the ARM binary to `/bin/sh`).
//! - **musl** (the static `cross` builds): mallocng serves large allocations from their own
//!   mappings and gives back freed groups itself, and has no per-thread caches; it has neither
//!   `mallopt` nor `malloc_trim` nor `GLIBC_TUNABLES`, so these functions do nothing there.
//!
//! What stays after a load on glibc (`/proc/<pid>/smaps` after the bench's load): live state
//! (MCP sessions stay until their idle timeout, ~1.2 KB each; their tables over 128 KiB have
//! mappings of their own) and the stacks of exited connection threads, which glibc caches for
//! reuse with ~20 KB of each still resident (it releases the rest at thread exit). Both are
//! bounded: sessions by their caps, cached stacks by the connection cap.
//!
//! A well-kept allocator crate (mimalloc, jemalloc) would do the same on both, at the cost of
//! a C library compiled into the binary and more resident memory at idle on a 1 GB Pi; the
//! C library's allocator tuned this way costs one `malloc_trim` per interval (well under a
//! millisecond on this server's heap).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How often [`start_trimmer`] gives free memory back.
pub const TRIM_INTERVAL: Duration = Duration::from_secs(2);

/// Sets the allocator's thresholds (glibc; nothing elsewhere). Call once at start, before
/// other threads run.
pub fn configure() {
    imp::configure();
}

/// Gives free heap memory back to the kernel now (glibc `malloc_trim(0)`; nothing elsewhere).
pub fn trim() {
    imp::trim();
}

/// Starts the thread that calls [`trim`] every [`TRIM_INTERVAL`] until `stop` is set (not
/// started where trimming does nothing).
pub fn start_trimmer(stop: Arc<AtomicBool>) -> std::io::Result<()> {
    if !imp::TRIMS {
        return Ok(());
    }
    std::thread::Builder::new()
        .name("malloc-trim".into())
        .spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(TRIM_INTERVAL);
                trim();
            }
        })?;
    Ok(())
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod imp {
    pub const TRIMS: bool = true;

    pub fn configure() {
        // SAFETY: mallopt only sets allocator parameters; called before threads allocate
        // concurrently. A refused setting (return 0) leaves the default in place.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, 128 * 1024);
            libc::mallopt(libc::M_TRIM_THRESHOLD, 128 * 1024);
            libc::mallopt(libc::M_ARENA_MAX, 2);
        }
    }

    pub fn trim() {
        // SAFETY: malloc_trim is thread-safe (it locks each arena in turn).
        unsafe {
            libc::malloc_trim(0);
        }
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
mod imp {
    pub const TRIMS: bool = false;

    pub fn configure() {}

    pub fn trim() {}
}
