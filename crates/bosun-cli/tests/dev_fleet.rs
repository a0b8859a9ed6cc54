//! `bosun dev --clusters 3 examples/fleet` as a user runs it: three embedded workload clusters
//! registered beside the management one, the example Fleet delivering its package to all
//! three, staging first.

use std::{path::Path, time::Duration};

use tokio::process::Command;

const BOUND: Duration = Duration::from_secs(120);

/// Runs `bosun dev --clusters N --once examples/fleet` in `dir` (with `extra` arguments); its
/// stdout, and stdout with stderr for messages, once it succeeded.
async fn dev_once(dir: &Path, clusters: &str, extra: &[&str]) -> (String, String) {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/fleet");
    let run = Command::new(env!("CARGO_BIN_EXE_bosun"))
        .args(["dev", "--clusters", clusters, "--once", "--port", "0", "--ui-addr", "off"])
        .args(["--workload-delay", "100ms"])
        .args(extra)
        .arg(&example)
        .current_dir(dir)
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(BOUND, run).await.expect("bosun dev --once ends").expect("bosun dev runs");
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    let all = format!("{stdout}{}", String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "{all}");
    (stdout, all)
}

#[tokio::test]
async fn the_fleet_example_reaches_every_cluster_staging_first() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (stdout, all) = dev_once(dir.path(), "3", &["--in-memory"]).await;
    for line in [
        "cluster staging (env=staging): http://",
        "cluster prod-1 (env=prod): http://",
        "cluster prod-2 (env=prod): http://",
    ] {
        assert!(stdout.contains(line), "{line}: {all}");
    }
    assert!(stdout.contains("fleet default/hello: 3/3 Ready"), "{all}");
    let ready_at = |name: &str| {
        stdout
            .lines()
            .position(|l| l.starts_with(&format!("✔ default/{name}:")))
            .unwrap_or_else(|| panic!("{name} never Ready: {all}"))
    };
    let staging = ready_at("hello-staging");
    assert!(staging < ready_at("hello-prod-1") && staging < ready_at("hello-prod-2"), "{all}");
}
