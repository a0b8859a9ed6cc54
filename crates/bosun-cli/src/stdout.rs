//! Standard output that a closed pipe cannot crash.
//!
//! Rust ignores SIGPIPE, so `println!` to a reader that went away (`bosun crds | head -1`)
//! panics. Everything the command prints to stdout goes through [`write`] instead: the first
//! broken pipe is remembered, later output is dropped, long-running commands stop as they do on
//! Ctrl-C ([`crate::signal::shutdown`] completes), and the command exits 141 with no message,
//! as a C tool killed by SIGPIPE looks to the shell.

use std::{
    io::{ErrorKind, Write},
    sync::{
        OnceLock,
        atomic::{AtomicBool, Ordering},
    },
};

use tokio::sync::Notify;

static BROKEN: AtomicBool = AtomicBool::new(false);

fn closed() -> &'static Notify {
    static CLOSED: OnceLock<Notify> = OnceLock::new();
    CLOSED.get_or_init(Notify::new)
}

/// The exit code of a command whose reader went away (128 + SIGPIPE, as the shell reports a
/// process SIGPIPE killed).
pub const BROKEN_PIPE_EXIT: u8 = 141;

/// Writes `text` to stdout and flushes it; after the reader has gone, does nothing.
pub fn write(text: &str) {
    if BROKEN.load(Ordering::Relaxed) {
        return;
    }
    let mut stdout = std::io::stdout().lock();
    let written = stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush());
    match written {
        Err(error) if error.kind() == ErrorKind::BrokenPipe => reader_gone(),
        // Any other failure (a full disk behind a redirect) is as final for the output.
        Err(error) => {
            reader_gone();
            eprintln!("error: writing to stdout: {error}");
        }
        Ok(()) => {}
    }
}

/// Records that stdout's reader has gone (found out here, or by a child writing there).
pub fn reader_gone() {
    BROKEN.store(true, Ordering::Relaxed);
    closed().notify_waiters();
}

/// Whether stdout's reader has gone.
pub fn broken() -> bool {
    BROKEN.load(Ordering::Relaxed)
}

/// Completes once stdout's reader has gone (immediately if it already has).
pub async fn closed_by_reader() {
    let notified = closed().notified();
    if broken() {
        return;
    }
    notified.await;
}

/// `print!` through [`write`].
macro_rules! out {
    ($($arg:tt)*) => { $crate::stdout::write(&format!($($arg)*)) };
}

/// `println!` through [`write`].
macro_rules! outln {
    () => { $crate::stdout::write("\n") };
    ($($arg:tt)*) => { $crate::stdout::write(&format!("{}\n", format_args!($($arg)*))) };
}

pub(crate) use {out, outln};
