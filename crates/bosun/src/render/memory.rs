//! A memory bound for jsonnet evaluation.
//!
//! jrsonnet has no allocation limit and cannot be interrupted, and a counting allocator needs
//! `unsafe`, which the workspace forbids. So while programs are evaluated a watchdog thread
//! samples the process's resident memory and, past the limit, stops the process with the
//! programs named: a runaway program (`std.makeArray(1e8, …)`, a string doubled forty times)
//! otherwise grows until the kernel kills the process without a word. Rendering comes before
//! any write, so nothing is applied from a stopped evaluation.
//!
//! In `bosun controller` the process stopped is a render worker (see [`super::worker`]), which
//! watches its whole render at its `--render-memory-limit`: the controller fails that render and
//! carries on.

use std::{
    collections::BTreeMap,
    sync::{
        Mutex, Once,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

/// The environment variable that sets the limit: bytes, or with a `KiB`, `MiB` or `GiB` suffix.
pub(crate) const LIMIT_VARIABLE: &str = "BOSUN_JSONNET_MEMORY_LIMIT";

/// The limit when the variable is not set: far above what rendering a package takes (tens of
/// MiB), well below what a runaway program reaches.
const DEFAULT_LIMIT: u64 = 4 << 30;

/// How often the watchdog looks; memory grows by a few MiB at most in between.
const SAMPLE_EVERY: Duration = Duration::from_millis(20);

/// The entrypoints being evaluated, by evaluation.
static RUNNING: Mutex<BTreeMap<u64, String>> = Mutex::new(BTreeMap::new());
static NEXT_ID: AtomicU64 = AtomicU64::new(0);
static WATCHDOG: Once = Once::new();

/// An evaluation under the watchdog's eye, until dropped.
pub(super) struct Watched(u64);

impl Drop for Watched {
    fn drop(&mut self) {
        running().remove(&self.0);
    }
}

fn running() -> std::sync::MutexGuard<'static, BTreeMap<u64, String>> {
    RUNNING.lock().unwrap_or_else(|e| e.into_inner())
}

/// The limit the watchdog holds the process to (set at each evaluation's start).
static LIMIT: AtomicU64 = AtomicU64::new(DEFAULT_LIMIT);

/// Watches the process's memory while `entrypoint` is evaluated; refuses a limit variable that
/// is not a size, naming it.
pub(super) fn watch(entrypoint: &str) -> Result<Watched, String> {
    let limit = match std::env::var(LIMIT_VARIABLE) {
        Err(_) => DEFAULT_LIMIT,
        Ok(text) => parse_size(&text)
            .ok_or_else(|| format!("{LIMIT_VARIABLE}={text:?} is not a size (examples: 512MiB, 4GiB)"))?,
    };
    LIMIT.store(limit, Ordering::Relaxed);
    WATCHDOG.call_once(|| {
        let _ = std::thread::Builder::new().name("bosun-jsonnet-memory".into()).spawn(watchdog);
    });
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    running().insert(id, entrypoint.to_string());
    Ok(Watched(id))
}

fn watchdog() {
    loop {
        std::thread::sleep(SAMPLE_EVERY);
        let limit = LIMIT.load(Ordering::Relaxed);
        let programs: Vec<String> = running().values().cloned().collect();
        if programs.is_empty() {
            continue;
        }
        if let Some(resident) = resident_bytes().filter(|resident| *resident > limit) {
            eprintln!("{}", over_limit_message(&programs, resident, limit));
            std::process::exit(1);
        }
    }
}

/// What the user is told when the watchdog stops the process.
fn over_limit_message(programs: &[String], resident: u64, limit: u64) -> String {
    format!(
        "error: jsonnet {}: evaluation stopped: the process uses {} of memory, over the limit of {} \
         (a program this large is almost certainly a runaway; set {LIMIT_VARIABLE}, e.g. 8GiB, to allow more)",
        programs.join(", "),
        size(resident),
        size(limit)
    )
}

/// The process's resident memory (`VmRSS`), where /proc has it.
fn resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kib = status.lines().find_map(|line| line.strip_prefix("VmRSS:"))?;
    Some(kib.trim().trim_end_matches("kB").trim().parse::<u64>().ok()? * 1024)
}

/// `123`, `512KiB`, `300MiB`, `4GiB` (also `K`, `M`, `G`, `KB`, `MB`, `GB`, all powers of 1024).
pub(super) fn parse_size(text: &str) -> Option<u64> {
    let text = text.trim();
    let digits = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, unit) = text.split_at(digits);
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        _ => return None,
    };
    number.parse::<u64>().ok()?.checked_mul(1 << shift)
}

/// Bytes in MiB (whole: the two figures of the message must differ where they do).
fn size(bytes: u64) -> String {
    format!("{} MiB", bytes >> 20)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_binary_units() {
        let cases = [
            ("123", Some(123)),
            ("512KiB", Some(512 << 10)),
            ("300MiB", Some(300 << 20)),
            ("300M", Some(300 << 20)),
            ("4GiB", Some(4 << 30)),
            (" 2 gb ", Some(2 << 30)),
            ("", None),
            ("MiB", None),
            ("1.5GiB", None),
            ("4TiB", None),
            ("18446744073709551615GiB", None),
        ];
        for (text, expected) in cases {
            assert_eq!(parse_size(text), expected, "{text:?}");
        }
    }

    #[test]
    fn the_message_names_the_programs_the_memory_and_the_variable() {
        let message = over_limit_message(&["main.jsonnet".into()], 5 << 30, 4 << 30);
        assert!(message.starts_with("error: jsonnet main.jsonnet: evaluation stopped"), "{message}");
        assert!(message.contains("uses 5120 MiB") && message.contains("limit of 4096 MiB"), "{message}");
        assert!(message.contains(LIMIT_VARIABLE), "{message}");
        assert_eq!(size(300 << 20), "300 MiB");
    }

    #[test]
    fn this_process_has_a_resident_size() {
        assert!(resident_bytes().is_some_and(|bytes| bytes > 1 << 20));
    }
}
