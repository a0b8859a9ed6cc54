//! What an observer reports while it runs, and where it goes. The library decides nothing about
//! printing: `bosun observe` prints oc observe's lines, an embedding program can log, count or
//! forward them. The default, [`Log`], writes `tracing` events.

use std::time::Duration;

use super::known::{BadName, EventType, Key, TemplateMissed};

/// Why one run (or one `--names` pass, or the watch) failed. Each counts toward
/// `--maximum-errors`.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// A strict template found nothing in the object.
    #[error("{event} {key}: command failed: {source}")]
    Template {
        /// Why the object was to be run for.
        event: EventType,
        /// The object.
        key: Key,
        /// Which template, and what it missed.
        #[source]
        source: TemplateMissed,
    },
    /// The command exited with a non-zero code (after its retries).
    #[error("{event} {key}: command failed: exit code {code}")]
    Exit {
        /// Why it ran.
        event: EventType,
        /// The object.
        key: Key,
        /// The exit code.
        code: i32,
    },
    /// The command was killed by a signal.
    #[error("{event} {key}: command failed: killed by signal {signal}")]
    Killed {
        /// Why it ran.
        event: EventType,
        /// The object.
        key: Key,
        /// The signal's number.
        signal: i32,
    },
    /// The command could not be started.
    #[error("{event} {key}: command failed: cannot run {program:?}: {source}")]
    Start {
        /// Why it was to run.
        event: EventType,
        /// The object.
        key: Key,
        /// The program.
        program: String,
        /// Why it could not start.
        #[source]
        source: std::io::Error,
    },
    /// The object could not be read for `--object-env-var`/`--object-stdin` (a resync).
    #[error("{event} {key}: command failed: reading {kind} {key}: {source}")]
    Read {
        /// Why it was to run.
        event: EventType,
        /// The object.
        key: Key,
        /// Its kind.
        kind: String,
        /// The client's error.
        #[source]
        source: kube::Error,
    },
    /// The `--names` command could not be started.
    #[error("--names: {0}")]
    NamesStart(#[source] std::io::Error),
    /// The `--names` command failed.
    #[error("--names failed ({status}): {stderr}")]
    NamesFailed {
        /// How it exited.
        status: std::process::ExitStatus,
        /// What it printed on stderr.
        stderr: String,
    },
    /// The `--names` command printed a line that is no name.
    #[error("--names printed {0}")]
    NamesOutput(#[from] BadName),
    /// Checking whether a name `--names` printed still exists failed.
    #[error("checking {kind} {key}: {source}")]
    NamesCheck {
        /// The kind.
        kind: String,
        /// The object.
        key: Key,
        /// The client's error.
        #[source]
        source: kube::Error,
    },
    /// The watch failed (it is retried with backoff).
    #[error("watching {resource}: {source}")]
    Watch {
        /// The resource, as discovery names it.
        resource: String,
        /// The watcher's error.
        #[source]
        source: kube::runtime::watcher::Error,
    },
    /// A command's task panicked or was cancelled.
    #[error("a command task failed: {0}")]
    Task(#[from] tokio::task::JoinError),
}

/// Something an observer did or met.
#[derive(Debug)]
pub enum Event<'a> {
    /// A command is about to run.
    Running {
        /// Why.
        event: EventType,
        /// The object.
        key: &'a Key,
        /// Its resourceVersion (empty when unknown, e.g. for deletions found by `--names`).
        resource_version: &'a str,
        /// The whole command line.
        line: &'a [String],
    },
    /// A command exited with `--retry-on-exit-code`'s code; it runs again after `wait`.
    Retrying {
        /// Why it ran.
        event: EventType,
        /// The object.
        key: &'a Key,
        /// The exit code.
        code: i32,
        /// This retry's number, from 1.
        attempt: u32,
        /// `--retry-count`.
        of: u32,
        /// The backoff before it.
        wait: Duration,
    },
    /// An error, counted toward `--maximum-errors`.
    Error(&'a RunError),
    /// More than `--maximum-errors` errors happened: the observer stops.
    TooManyErrors {
        /// The limit.
        limit: u64,
    },
}

/// Where an observer reports. Called from the observer's tasks, so it must be cheap and must not
/// block for long.
pub trait Output: Send + Sync {
    /// Reports one event.
    fn event(&self, event: &Event<'_>);
}

/// The default output: `tracing` events under the target `bosun::observe`.
#[derive(Debug, Default, Clone, Copy)]
pub struct Log;

impl Output for Log {
    fn event(&self, event: &Event<'_>) {
        match event {
            Event::Running { event, key, resource_version, line } => {
                tracing::info!(event = event.as_str(), object = %key, resource_version, command = ?line, "running");
            }
            Event::Retrying { event, key, code, attempt, of, wait } => {
                tracing::warn!(event = event.as_str(), object = %key, code, attempt, of, wait = ?wait, "retrying");
            }
            Event::Error(error) => tracing::error!(%error, "run failed"),
            Event::TooManyErrors { limit } => tracing::error!(limit, "more than --maximum-errors errors; stopping"),
        }
    }
}
