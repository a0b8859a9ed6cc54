//! What the tests of `bosun dev`'s long-running modes share: the process stopped however the
//! test ends, `git` with a test identity, and a client of the API server it started.

use std::{
    path::Path,
    process::Command,
    time::{Duration, Instant},
};

/// How long a test waits for `bosun dev` to get anywhere.
pub const BOUND: Duration = Duration::from_secs(120);

/// Stops `bosun dev` however the test ends.
pub struct Dev(pub std::process::Child);

impl Drop for Dev {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs `git ARGS` in `dir` with a test identity; fails the test when it fails.
pub fn git(dir: &Path, args: &[&str]) {
    let output = Command::new(bosun_test_tools::require("git"))
        .args(["-c", "user.name=Test", "-c", "user.email=test@example.com"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git runs");
    assert!(output.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&output.stderr));
}

/// A client of the API server whose kubeconfig `bosun dev` writes at `kubeconfig`, once it has
/// (a file still being written is read again).
pub async fn client(kubeconfig: &Path) -> kube::Client {
    let deadline = Instant::now() + BOUND;
    let kubeconfig = loop {
        match kube::config::Kubeconfig::read_from(kubeconfig) {
            Ok(read) if !read.clusters.is_empty() => break read,
            read => assert!(Instant::now() < deadline, "bosun dev wrote no kubeconfig: {:?}", read.err()),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await.expect("config");
    kube::Client::try_from(config).expect("client")
}
