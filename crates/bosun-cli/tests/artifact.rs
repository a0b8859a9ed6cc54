//! `bosun push|pull|list|tag artifact` and `bosun push chart` — the real binary against a real
//! registry (Debian's `docker-registry` on loopback with htpasswd basic auth, plain HTTP as
//! Docker allows there): the round trip, credentials from --creds and from a Docker config,
//! refusals with their exit codes.

use std::{
    os::unix::fs::PermissionsExt,
    path::Path,
    process::{Command, Output},
};

use bosun_test_tools::{files, registry::Registry};

const USER: &str = "ci";
const PASSWORD: &str = "s3cret-pass";

fn bosun(args: &[&str], docker_config: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bosun"))
        .args(args)
        .env("DOCKER_CONFIG", docker_config)
        .output()
        .expect("bosun runs")
}

fn stdout(output: &Output) -> String {
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout.clone()).expect("utf8")
}

fn write(root: &Path, path: &str, text: &str) {
    let at = root.join(path);
    std::fs::create_dir_all(at.parent().expect("parent")).expect("dirs");
    std::fs::write(at, text).expect("write");
}

#[test]
fn push_list_tag_and_pull_round_trip() {
    let registry = Registry::start(false, Some((USER, PASSWORD)));
    let scratch = tempfile::tempdir().expect("tempdir");
    let no_config = scratch.path().join("no-docker-config");
    let creds = format!("{USER}:{PASSWORD}");
    let source = scratch.path().join("deploy");
    write(&source, "apps/web/deployment.yaml", "kind: Deployment\n");
    write(&source, "kustomization.yaml", "resources: [apps/web]\n");
    write(&source, "render.sh", "#!/bin/sh\n");
    std::fs::set_permissions(source.join("render.sh"), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    write(&source, "logo.png", "left out by Flux's defaults");
    write(&source, ".sourceignore", "notes/\n");
    write(&source, "notes/todo.md", "left out by .sourceignore");
    write(&source, "local.env", "left out by --ignore-paths");

    let v1 = registry.url("fleet/apps:v1");
    let source_arg = source.display().to_string();
    let pushed = bosun(
        &[
            "push",
            "artifact",
            &v1,
            &source_arg,
            "--creds",
            &creds,
            "--tag",
            "latest",
            "--annotation",
            "team=web",
            "--source",
            "https://github.com/org/fleet",
            "--revision",
            "main@sha1:0123abcd",
            "--ignore-paths",
            "*.env",
        ],
        &no_config,
    );
    let digest = stdout(&pushed).trim().to_string();
    assert!(digest.starts_with("sha256:") && digest.len() == 71, "the digest alone: {digest:?}");

    write(&source, "apps/web/deployment.yaml", "kind: Deployment\nreplicas: 2\n");
    let v2 = registry.url("fleet/apps:v2");
    let second = stdout(&bosun(&["push", "artifact", &v2, "--path", &source_arg, "--creds", &creds], &no_config));
    assert_ne!(second.trim(), digest);

    let tagged =
        stdout(&bosun(&["tag", "artifact", &v1, "--tag", "stable", "--tag", "prod", "--creds", &creds], &no_config));
    assert_eq!(tagged.trim(), digest);

    let listed = stdout(&bosun(&["list", "artifacts", &registry.url("fleet/apps"), "--creds", &creds], &no_config));
    let lines: Vec<Vec<&str>> = listed.lines().map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(lines[0], ["TAG", "DIGEST", "REVISION", "CREATED"], "{listed}");
    assert_eq!(lines[1][..3], ["v2", second.trim(), "-"], "newest first: {listed}");
    let mut older: Vec<(&str, &str, &str)> = lines[2..].iter().map(|l| (l[0], l[1], l[2])).collect();
    older.sort();
    let revision = "main@sha1:0123abcd";
    assert_eq!(
        older,
        [
            ("latest", digest.as_str(), revision),
            ("prod", &digest, revision),
            ("stable", &digest, revision),
            ("v1", &digest, revision)
        ],
        "{listed}"
    );

    // Credentials from a Docker config, as `docker login` writes them.
    let config_dir = scratch.path().join("docker");
    use base64::Engine;
    let auth = base64::engine::general_purpose::STANDARD.encode(&creds);
    write(&config_dir, "config.json", &format!(r#"{{"auths": {{"{}": {{"auth": "{auth}"}}}}}}"#, registry.host));
    let out = scratch.path().join("pulled");
    let out_arg = out.display().to_string();
    let pulled = stdout(&bosun(&["pull", "artifact", &registry.url("fleet/apps:stable"), "-o", &out_arg], &config_dir));
    assert_eq!(pulled.trim(), format!("stable@{digest}"));
    assert_eq!(
        files(&out),
        [
            (".sourceignore".to_string(), b"notes/\n".to_vec(), false),
            ("apps/web/deployment.yaml".into(), b"kind: Deployment\n".to_vec(), false),
            ("kustomization.yaml".into(), b"resources: [apps/web]\n".to_vec(), false),
            ("render.sh".into(), b"#!/bin/sh\n".to_vec(), true),
        ],
        "v1's files, without those the ignore rules leave out"
    );

    // Refusals, each `error: …` with exit 2 as every command's: a wrong password (the registry
    // and 401 named, the password not), a missing tag, a malformed reference.
    let refused = bosun(&["list", "artifacts", &registry.url("fleet/apps"), "--creds", "ci:wrong-pass"], &no_config);
    let said = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{said}");
    assert!(said.starts_with("error: "), "{said}");
    assert!(said.contains(&registry.host) && said.contains("401") && !said.contains("wrong-pass"), "{said}");
    let missing = bosun(
        &["pull", "artifact", &registry.url("fleet/apps:v9"), "-o", &format!("{out_arg}-9"), "--creds", &creds],
        &no_config,
    );
    let said = String::from_utf8_lossy(&missing.stderr);
    assert!(missing.status.code() == Some(2) && said.contains("tag v9 not found"), "{said}");
    let malformed = bosun(&["pull", "artifact", "ghcr.io/app:v1", "-o", &out_arg], &no_config);
    let said = String::from_utf8_lossy(&malformed.stderr);
    assert!(malformed.status.code() == Some(2) && said.contains("must start with oci://"), "{said}");
    // No registry listening: one plain line naming it, not the HTTP client's chain.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("address");
    let unreachable = bosun(&["list", "artifacts", &format!("oci://{closed}/fleet/apps")], &no_config);
    let said = String::from_utf8_lossy(&unreachable.stderr);
    assert_eq!(said, format!("error: registry {closed}: cannot connect: connection refused\n"));
}

#[test]
fn charts_are_pushed_where_helm_puts_them() {
    let registry = Registry::start(false, Some((USER, PASSWORD)));
    let scratch = tempfile::tempdir().expect("tempdir");
    let chart = scratch.path().join("chart");
    write(&chart, "web/Chart.yaml", "apiVersion: v2\nname: web\nversion: 1.2.0+build.3\n");
    write(&chart, "web/templates/cm.yaml", "kind: ConfigMap\n");
    let archive = scratch.path().join("web-1.2.0+build.3.tgz");
    bosun_oci::archive::pack(&chart, &|_, _| true, &archive).expect("package the chart");
    let creds = format!("{USER}:{PASSWORD}");
    let no_config = scratch.path().join("no-docker-config");
    let archive_arg = archive.display().to_string();
    let digest =
        stdout(&bosun(&["push", "chart", &archive_arg, &registry.url("charts"), "--creds", &creds], &no_config));
    let listed = stdout(&bosun(&["list", "artifacts", &registry.url("charts/web"), "--creds", &creds], &no_config));
    let row: Vec<&str> = listed.lines().nth(1).expect("a row").split_whitespace().collect();
    assert_eq!(row[..2], ["1.2.0_build.3", digest.trim()], "{listed}");
}

#[test]
fn the_help_says_how_to_push_and_where_credentials_come_from() {
    let help = stdout(&bosun(&["push", "artifact", "--help"], Path::new("/nonexistent")));
    for expected in [
        "--annotation",
        "--tag",
        "--path",
        "--source",
        "--revision",
        "--creds",
        "--insecure",
        ".sourceignore",
        "~/.docker/config.json",
        "127.0.0.0/8",
    ] {
        assert!(help.contains(expected), "{expected}: {help}");
    }
    let top = stdout(&bosun(&["--help"], Path::new("/nonexistent")));
    assert!(top.contains("Artifacts (OCI registries):"), "{top}");
}
