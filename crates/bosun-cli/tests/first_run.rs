//! What a newcomer meets first: the messages for the common mistakes (a server that is down, a
//! typo in a kind, an empty directory, no directory, a second `bosun dev`, a missing package)
//! and the help. Each test checks the exact first line and the exit code, as users and scripts
//! see them.

use std::{
    io::{BufRead, BufReader},
    path::Path,
    process::{Command, Output, Stdio},
};

use bosun_apiserver::ApiServer;

fn bosun(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bosun"))
        .args(args)
        .current_dir(dir)
        .env_remove("RUST_LOG")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .output()
        .expect("bosun runs")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn write(dir: &Path, name: &str, text: &str) {
    let path = dir.join(name);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

const TYPO: &str = "apiVersion: apps/v1\nkind: Deploymnet\nmetadata:\n  name: web\nspec: {}\n";

/// A kubeconfig for a server that is not there: a port that was just free.
fn kubeconfig_for_nothing(dir: &Path) -> (String, std::path::PathBuf) {
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
    let url = format!("https://127.0.0.1:{port}");
    let path = dir.join("down.kubeconfig");
    write(
        dir,
        "down.kubeconfig",
        &format!(
            "apiVersion: v1\nkind: Config\nclusters: [{{name: c, cluster: {{server: \"{url}\"}}}}]\nusers: [{{name: u, user: {{token: t}}}}]\ncontexts: [{{name: c, context: {{cluster: c, user: u}}}}]\ncurrent-context: c\n"
        ),
    );
    (url, path)
}

#[test]
fn a_server_that_is_down_is_one_line_naming_it_and_the_cause() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), "pkg/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n");
    let (url, kubeconfig) = kubeconfig_for_nothing(dir.path());
    for command in ["apply", "diff"] {
        let output = bosun(&[command, "pkg", "--kubeconfig", kubeconfig.to_str().expect("utf-8")], dir.path());
        assert_eq!(output.status.code(), Some(2), "{command}: {}", stderr(&output));
        // One line, no library log lines, no colour codes (stderr is not a terminal here).
        assert_eq!(stderr(&output), format!("error: cannot reach the cluster at {url}: connection refused\n"));
    }
}

#[tokio::test]
async fn a_typo_in_a_kind_is_a_warning_at_render_and_an_error_at_diff() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), "pkg/web.yaml", TYPO);
    let output = bosun(&["render", "pkg"], dir.path());
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(
        stderr(&output).lines().next(),
        Some(
            r#"warning: Deploymnet/web (from "web.yaml"): Deploymnet is not a kind bosun knows; did you mean Deployment?"#
        )
    );

    let server = ApiServer::in_memory().start().await.expect("server");
    server.write_kubeconfig(dir.path().join("kubeconfig")).expect("kubeconfig");
    write(dir.path(), "pkg/settings.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n");
    let kubeconfig = "kubeconfig".to_string();
    let dir_path = dir.path().to_path_buf();
    let output = tokio::task::spawn_blocking(move || bosun(&["diff", "pkg", "--kubeconfig", &kubeconfig], &dir_path))
        .await
        .expect("diff");
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.lines().any(|l| l == "! Deploymnet/web: the cluster serves no Deploymnet in apps/v1"), "{stdout}");
    assert!(stdout.contains("+ ConfigMap/default/settings (new)"), "{stdout}");
}

#[test]
fn an_empty_package_directory_is_an_error_saying_what_was_looked_at() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(dir.path().join("empty")).expect("mkdir");
    write(dir.path(), "docs-only/README.md", "# notes\n");
    let (_, kubeconfig) = kubeconfig_for_nothing(dir.path());
    let cases = [
        (vec!["render", "empty"], "error: no manifests found in empty: the directory is empty"),
        (
            vec!["apply", "empty", "--kubeconfig", kubeconfig.to_str().expect("utf-8")],
            "error: no manifests found in empty: the directory is empty",
        ),
        (
            vec!["render", "docs-only"],
            "error: no manifests found in docs-only: it has no *.yaml, *.yml or *.json files, only README.md",
        ),
    ];
    for (args, expected) in cases {
        let output = bosun(&args, dir.path());
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        assert_eq!(stderr(&output).lines().next(), Some(expected), "{args:?}");
    }
}

#[test]
fn without_a_directory_only_a_marked_current_directory_is_a_package() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), "fixtures/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fixture\n");
    let output = bosun(&["render"], dir.path());
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        stderr(&output).lines().next(),
        Some(
            "error: no package given: pass DIR, --files DIR or --jsonnet FILE (the current directory has none of bosun.yaml, Chart.yaml, kustomization.yaml, kustomization.yml, Kustomization, main.jsonnet)"
        )
    );
    assert!(output.stdout.is_empty(), "nothing rendered");

    write(dir.path(), "kustomization.yaml", "resources:\n  - fixtures/cm.yaml\n");
    let output = bosun(&["render"], dir.path());
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(String::from_utf8_lossy(&output.stdout).contains("name: fixture"));
}

#[test]
fn dev_on_a_missing_directory_starts_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let output = bosun(&["dev", "nope", "--port", "0", "--once"], dir.path());
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(stderr(&output), "error: nope: no such package directory\n");
    assert!(output.stdout.is_empty(), "{}", String::from_utf8_lossy(&output.stdout));
    assert!(!dir.path().join(".bosun").exists(), "no server was started");
}

/// Kills the first `bosun dev` however the test ends.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `bosun ARGS` in `dir` and waits until it watches (killed when dropped).
fn dev_watching(dir: &Path, args: &[&str]) -> Killed {
    let mut first = Killed(
        Command::new(env!("CARGO_BIN_EXE_bosun"))
            .args(args)
            .current_dir(dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("first bosun dev"),
    );
    let stdout = first.0.stdout.take().expect("stdout");
    let watching = std::thread::spawn(move || {
        BufReader::new(stdout).lines().map_while(Result::ok).any(|line| line.starts_with("watching "))
    });
    assert!(watching.join().expect("reader"), "the first bosun dev never started watching");
    first
}

#[test]
fn a_second_dev_on_the_same_data_directory_names_the_first() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), "pkg/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n");
    let first = dev_watching(dir.path(), &["dev", "pkg", "--port", "0"]);

    let second = bosun(&["dev", "pkg", "--port", "0", "--once"], dir.path());
    assert_eq!(second.status.code(), Some(2));
    assert_eq!(
        stderr(&second),
        format!("error: another bosun (pid {}) is using .bosun/apiserver; stop it or pass --data-dir\n", first.0.id())
    );

    // Once the first has stopped, the directory is free again, with its objects.
    drop(first);
    let third = bosun(&["dev", "pkg", "--port", "0", "--once"], dir.path());
    assert_eq!(third.status.code(), Some(0), "{}", stderr(&third));
    let stdout = String::from_utf8_lossy(&third.stdout);
    assert!(stdout.contains("1 unchanged"), "{stdout}");
}

#[test]
fn a_second_in_memory_dev_does_not_take_the_first_ones_kubeconfig() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), "pkg/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n");
    let first = dev_watching(dir.path(), &["dev", "pkg", "--in-memory", "--port", "0"]);
    let kubeconfig = std::fs::read_to_string(dir.path().join(".bosun/kubeconfig")).expect("kubeconfig");

    let second = bosun(&["dev", "pkg", "--in-memory", "--port", "0", "--once"], dir.path());
    assert_eq!(second.status.code(), Some(2), "{}", stderr(&second));
    assert_eq!(
        stderr(&second),
        format!(
            "error: .bosun/kubeconfig belongs to another bosun (pid {}), still running; stop it, or give this one its own with --kubeconfig FILE\n",
            first.0.id()
        )
    );
    let after = std::fs::read_to_string(dir.path().join(".bosun/kubeconfig")).expect("kubeconfig");
    assert_eq!(after, kubeconfig, "the first run's kubeconfig is untouched");
    // Its own kubeconfig, the second runs beside the first.
    let own =
        bosun(&["dev", "pkg", "--in-memory", "--port", "0", "--once", "--kubeconfig", "second.kubeconfig"], dir.path());
    assert_eq!(own.status.code(), Some(0), "{}", stderr(&own));
}

#[tokio::test]
async fn a_port_in_use_says_what_to_do() {
    let server = ApiServer::in_memory().start().await.expect("server");
    let port = server.address().port().to_string();
    let dir = tempfile::tempdir().expect("tempdir");
    let dir_path = dir.path().to_path_buf();
    let output = tokio::task::spawn_blocking(move || bosun(&["apiserver", "--in-memory", "--port", &port], &dir_path))
        .await
        .expect("apiserver");
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        stderr(&output),
        format!(
            "error: cannot listen on 127.0.0.1:{}: Address already in use (os error 98) (is a bosun server already running there? pass --port, or --port 0 for a free one)\n",
            server.address().port()
        )
    );
}

#[test]
fn help_explains_and_groups_the_commands() {
    let dir = tempfile::tempdir().expect("tempdir");
    let output = bosun(&["--help"], dir.path());
    let help = String::from_utf8_lossy(&output.stdout);
    assert!(help.starts_with("bosun is declarative Kubernetes automation"), "{help}");
    for heading in ["Try it:", "Deliver:", "Automate:", "Serve:", "Examples:"] {
        assert!(help.lines().any(|l| l == heading), "{heading} missing:\n{help}");
    }
    for command in ["render", "diff", "apply", "dev", "observe", "apiserver"] {
        let output = bosun(&[command, "--help"], dir.path());
        let help = String::from_utf8_lossy(&output.stdout);
        assert!(help.contains("Examples:") || help.contains("Example:"), "bosun {command} --help:\n{help}");
    }
}

#[tokio::test]
async fn a_rejected_token_says_so_and_how_to_fix_it() {
    let server = ApiServer::in_memory().tls(true).start().await.expect("server");
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("kubeconfig");
    server.write_kubeconfig(&kubeconfig).expect("kubeconfig");
    let text = std::fs::read_to_string(&kubeconfig).expect("read");
    let token = text.lines().find_map(|l| l.trim().strip_prefix("token: ")).expect("token line").to_string();
    std::fs::write(&kubeconfig, text.replace(&token, "expired-token")).expect("write");
    write(dir.path(), "pkg/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n");
    let url = server.url().to_string();
    let dir_path = dir.path().to_path_buf();
    let output = tokio::task::spawn_blocking(move || bosun(&["apply", "pkg", "--kubeconfig", "kubeconfig"], &dir_path))
        .await
        .expect("apply");
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        stderr(&output),
        format!(
            "error: {url}: the cluster rejected the credentials (401 Unauthorized): the token may have expired; log in again or get a new kubeconfig\n"
        )
    );
}

#[test]
fn controller_only_fields_are_reported_and_a_suspended_package_is_not_applied() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(
        dir.path(),
        "pkg/bosun.yaml",
        "apiVersion: bosun.dev/v1alpha1\nkind: Package\nmetadata:\n  name: web\nspec:\n  dependsOn:\n    - name: database\n  suspend: true\n",
    );
    write(dir.path(), "pkg/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n");
    let file = Path::new("pkg").join("bosun.yaml");
    let file = file.display();

    let render = bosun(&["render", "pkg"], dir.path());
    assert_eq!(render.status.code(), Some(0));
    assert_eq!(
        stderr(&render),
        format!(
            "warning: {file}: spec.dependsOn is only acted on by the Package controller; this command ignores it\n\
             warning: {file}: spec.suspend is only acted on by the Package controller; this command ignores it; `bosun apply` and `bosun dev` refuse a suspended package\n"
        )
    );

    let (_, kubeconfig) = kubeconfig_for_nothing(dir.path());
    let apply = bosun(&["apply", "pkg", "--kubeconfig", kubeconfig.to_str().expect("utf-8")], dir.path());
    assert_eq!(apply.status.code(), Some(2));
    assert_eq!(
        stderr(&apply).lines().last(),
        Some(
            format!(
                "error: {file}: spec.suspend is true: the package is suspended; set it to false (or remove it) to apply"
            )
            .as_str()
        )
    );
}

#[test]
fn dev_re_applies_on_a_change_and_never_on_its_own_writes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let configmap =
        |value: &str| format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  v: \"{value}\"\n");
    write(dir.path(), "pkg/cm.yaml", &configmap("1"));
    // The data directory and the kubeconfig inside the package: the server's own writes there
    // must not count as changes of the package.
    let mut dev = Killed(
        Command::new(env!("CARGO_BIN_EXE_bosun"))
            .args(["dev", "pkg", "--port", "0", "--data-dir", "pkg/state", "--kubeconfig", "pkg/kubeconfig"])
            .current_dir(dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("bosun dev"),
    );
    let (lines, receiver) = std::sync::mpsc::channel();
    let stdout = dev.0.stdout.take().expect("stdout");
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let next = |prefix: &str| loop {
        let line = receiver.recv_timeout(std::time::Duration::from_secs(60)).expect("bosun dev went quiet");
        if line.starts_with(prefix) {
            return line;
        }
    };
    assert_eq!(next("pkg: "), "pkg: 1 created, 0 configured, 0 unchanged, 0 deleted, 0 failed");
    next("watching ");
    for value in ["2", "3"] {
        write(dir.path(), "pkg/cm.yaml", &configmap(value));
        // The next run is the one this change caused: a run caused by the server's own writes
        // would find nothing to change and come first.
        assert_eq!(next("pkg: "), "pkg: 0 created, 1 configured, 0 unchanged, 0 deleted, 0 failed");
    }
}

/// A web server on loopback that answers every request `404 page not found` (as a wrong
/// address or path does): its URL.
fn not_an_api_server() -> String {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut request = [0u8; 4096];
            let _ = stream.read(&mut request);
            let body = "404 page not found\n";
            let answer = format!(
                "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(answer.as_bytes());
        }
    });
    url
}

#[test]
fn a_server_that_is_no_kubernetes_api_server_is_named_with_what_it_answered() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), "pkg/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n");
    let url = not_an_api_server();
    write(
        dir.path(),
        "web.kubeconfig",
        &format!(
            "apiVersion: v1\nkind: Config\nclusters: [{{name: c, cluster: {{server: \"{url}\"}}}}]\nusers: [{{name: u, user: {{token: t}}}}]\ncontexts: [{{name: c, context: {{cluster: c, user: u}}}}]\ncurrent-context: c\n"
        ),
    );
    for command in ["apply", "diff"] {
        let output = bosun(&[command, "pkg", "--kubeconfig", "web.kubeconfig"], dir.path());
        assert_eq!(output.status.code(), Some(2), "{command}: {}", stderr(&output));
        let said = stderr(&output);
        assert!(
            said.starts_with(&format!("error: {url}: the server answered 404 \"404 page not found\", which is not how a Kubernetes API server answers"))
                && said.lines().count() == 1,
            "{command}: {said}"
        );
    }
}
