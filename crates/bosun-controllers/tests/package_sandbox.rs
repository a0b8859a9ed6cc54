//! A tenant who writes a repository cannot make the controller run commands, read the host
//! or leave the source (issue 49): each attack of the published flaw classes, replayed as a
//! tenant's Package, is refused with a plain condition, writes nothing, and never quotes a
//! host file — and the same packages work where they are legitimate.

use std::path::Path;

use serde_json::{Value, json};

#[path = "support/package_harness.rs"]
mod harness;

use harness::*;

/// What the host holds that no tenant may read.
const HOST_SECRET: &str = "host-secret-3f9a1c";

/// A file of the controller's machine, outside every source: its path.
fn host_file(dir: &Path) -> String {
    let path = dir.join("credentials");
    std::fs::write(&path, format!("token: {HOST_SECRET}\n")).expect("write");
    path.display().to_string()
}

/// A tenant's package directory with `files`.
fn package(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("dir");
    for (name, text) in files {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }
    dir
}

/// Creates Package `name` from `dir` with `render` and waits until it fails; its message.
async fn refused(h: &Harness, name: &str, dir: &Path, mut spec: Value) -> String {
    spec["source"] = json!({"dir": dir});
    spec["retryInterval"] = json!("1s");
    create(h, name, spec).await;
    let package = wait_ready(h, name, |status, _, _| status == "False").await;
    let (_, reason, message) = ready(&package).expect("ready");
    assert!(!message.contains(HOST_SECRET), "{name}: a host file quoted: {message}");
    assert_eq!(reason, "BuildFailed", "{name}: {message}");
    message
}

/// A chart whose template prints `.Values.token` into a ConfigMap.
const CHART: [(&str, &str); 3] = [
    ("chart/Chart.yaml", "apiVersion: v2\nname: web\nversion: 1.0.0\n"),
    ("chart/values.yaml", "token: none\n"),
    (
        "chart/templates/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: leaked\ndata:\n  token: {{ .Values.token | quote }}\n",
    ),
];

#[tokio::test]
async fn paths_a_package_names_stay_inside_its_source() {
    let h = start().await;
    let host = tempfile::tempdir().expect("host");
    let secret = host_file(host.path());
    let relative_escape = "../".repeat(12) + secret.trim_start_matches('/');
    let mut chart_files = CHART.to_vec();
    chart_files.push(("chart/prod.yaml", "token: from-the-chart\n"));
    let chart = package(&chart_files);
    let cases = [
        (
            "values-absolute",
            json!({"render": {"helm": {"chart": "chart", "valuesFiles": [secret]}}}),
            "spec.render.helm.valuesFiles[0]",
        ),
        (
            "values-climbing",
            json!({"render": {"helm": {"chart": "chart", "valuesFiles": [relative_escape]}}}),
            "spec.render.helm.valuesFiles[0]",
        ),
        (
            "set-file",
            json!({"render": {"helm": {"chart": "chart", "setFile": [format!("token={secret}")]}}}),
            "spec.render.helm.setFile",
        ),
        ("chart-outside", json!({"render": {"helm": {"chart": host.path()}}}), "spec.render.helm.chart"),
        (
            "config-file",
            json!({"render": {"jsonnet": {"entrypoint": "x.jsonnet"}}, "config": {"file": secret}}),
            "spec.config.file",
        ),
        ("files-dir", json!({"render": {"files": {"dir": host.path()}}}), "spec.render.files.dir"),
        ("kustomize-dir", json!({"render": {"kustomize": {"dir": host.path()}}}), "spec.render.kustomize.dir"),
    ];
    for (name, spec, field) in cases {
        let message = refused(&h, name, chart.path(), spec).await;
        assert!(message.contains(field) && message.contains("is outside the package's source"), "{name}: {message}");
    }
    assert!(h.configmaps.get_opt("leaked").await.expect("get").is_none(), "nothing written");

    // A values file inside the chart is what charts do.
    let spec = json!({"source": {"dir": chart.path()}, "render": {"helm": {"chart": "chart", "valuesFiles": ["chart/prod.yaml"]}}});
    create(&h, "values-inside", spec).await;
    wait_ready(&h, "values-inside", |status, _, _| status == "True").await;
    let leaked = h.configmaps.get("leaked").await.expect("rendered");
    assert_eq!(leaked.data.unwrap_or_default()["token"], "from-the-chart");
}

#[tokio::test]
async fn jsonnet_imports_kustomize_bases_and_symlinks_stay_inside_the_source() {
    let h = start().await;
    let host = tempfile::tempdir().expect("host");
    let secret = host_file(host.path());
    std::fs::write(host.path().join("kustomization.yaml"), "resources: [cm.yaml]\n").expect("write");
    std::fs::write(host.path().join("cm.yaml"), configmap("host-base", "1")).expect("write");
    let import = |what: &str| {
        format!("{{apiVersion: 'v1', kind: 'ConfigMap', metadata: {{name: 'leaked'}}, data: {{x: {what}}}}}")
    };
    let cases = [
        ("importstr", format!("importstr '{secret}'"), "is outside the package's source"),
        (
            "import-climbing",
            format!("importstr '{}'", "../".repeat(12) + secret.trim_start_matches('/')),
            "is outside the package's source",
        ),
    ];
    for (name, expression, expected) in cases {
        let dir = package(&[("main.jsonnet", &import(&expression))]);
        let message = refused(&h, name, dir.path(), json!({})).await;
        assert!(message.contains(expected), "{name}: {message}");
    }
    // A library path out of the source.
    let dir = package(&[("main.jsonnet", &import("(import 'lib.libsonnet').x"))]);
    let spec = json!({"render": {"jsonnet": {"jpath": [host.path()]}}});
    let message = refused(&h, "jpath", dir.path(), spec).await;
    assert!(message.contains("spec.render.jsonnet.jpath[0]"), "{message}");

    // kustomize: a base outside the source, a file:// base, a remote base.
    for (name, resource, expected) in [
        ("base-outside", host.path().display().to_string(), "is outside the package's source"),
        ("base-file-url", format!("file://{}", host.path().display()), "is outside the package's source"),
        ("base-remote", "github.com/example/repo//deploy?ref=v1".to_string(), "--allow-remote-bases"),
    ] {
        let dir = package(&[("kustomization.yaml", &format!("resources: [{resource:?}]\n"))]);
        let message = refused(&h, name, dir.path(), json!({})).await;
        assert!(
            message.contains("kustomization.yaml: resources[0]: ") && message.contains(expected),
            "{name}: {message}"
        );
    }
    assert!(h.configmaps.get_opt("host-base").await.expect("get").is_none(), "nothing written");
    assert!(h.configmaps.get_opt("leaked").await.expect("get").is_none(), "nothing written");

    // A kustomization inside the source with a base beside it renders.
    let dir = package(&[
        ("apps/web/kustomization.yaml", "resources: [../../base]\n"),
        ("base/kustomization.yaml", "resources: [cm.yaml]\n"),
        ("base/cm.yaml", &configmap("kustomized", "1")),
    ]);
    let spec = json!({"source": {"dir": dir.path(), }, "render": {"kustomize": {"dir": "apps/web"}}});
    create(&h, "kustomize-inside", spec).await;
    wait_ready(&h, "kustomize-inside", |status, _, _| status == "True").await;
    assert!(h.configmaps.get_opt("kustomized").await.expect("get").is_some());
}

#[tokio::test]
async fn exec_renderers_are_refused_unless_the_administrator_allows_them() {
    let h = start().await;
    let dir = package(&[]);
    let spec = json!({"render": {"exec": {"command": ["sh", "-c", "echo ran > /tmp/bosun-exec-ran-by-tenant"]}}});
    let message = refused(&h, "exec", dir.path(), spec).await;
    assert!(message.contains("spec.render.exec") && message.contains("--allow-exec"), "{message}");
}

#[tokio::test]
async fn an_allowed_exec_renderer_runs_with_a_clean_environment_inside_its_source() {
    let h = start_with(|settings| settings.tenancy.allow_exec = true).await;
    // What the command sees, as a ConfigMap: its environment's names and its working tree.
    let script = "printf 'apiVersion: v1\\nkind: ConfigMap\\nmetadata: {name: seen}\\ndata:\\n  env: \"%s\"\\n  files: \"%s\"\\n' \"$(env | cut -d= -f1 | sort | tr '\\n' ' ')\" \"$(ls | tr '\\n' ' ')\"";
    let dir = package(&[("render.sh", script), ("notes.txt", "mine")]);
    let spec = json!({"source": {"dir": dir.path()}, "render": {"exec": {"command": ["sh", "render.sh"]}}});
    create(&h, "seen", spec).await;
    wait_ready(&h, "seen", |status, _, _| status == "True").await;
    let seen = h.configmaps.get("seen").await.expect("rendered").data.unwrap_or_default();
    let names: Vec<&str> = seen["env"].split_whitespace().collect();
    for name in &names {
        assert!(
            ["PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "TZ", "PWD", "SHLVL", "_", "OLDPWD"].contains(name)
                || name.starts_with("BOSUN_"),
            "{name} reached the command: {names:?}"
        );
    }
    assert!(names.contains(&"BOSUN_CONFIG"), "{names:?}");
    assert_eq!(seen["files"].split_whitespace().collect::<Vec<_>>(), ["notes.txt", "render.sh"]);

    // Outside its source it reads nothing of the host (where the kernel enforces Landlock).
    let host = tempfile::tempdir().expect("host");
    let secret = host_file(host.path());
    let dir = package(&[]);
    let spec = json!({"render": {"exec": {"command": ["cat", secret]}}});
    let message = refused(&h, "reads-host", dir.path(), spec).await;
    if bosun::render::landlock_enforced() {
        assert!(message.contains("Permission denied") || message.contains("exited with status 1"), "{message}");
    }
}

#[tokio::test]
async fn an_exec_renderer_that_runs_away_is_stopped_by_its_limits() {
    let h = start_with(|settings| {
        settings.tenancy.allow_exec = true;
        settings.tenancy.exec_limits.output = 1 << 20;
    })
    .await;
    let dir = package(&[]);
    let spec = json!({"render": {"exec": {"command": ["sh", "-c", "yes 'name: x'"]}}});
    let message = refused(&h, "chatty", dir.path(), spec).await;
    assert!(message.contains("printed more than 1 MiB and was stopped"), "{message}");
    // Another Package of the same controller still reconciles.
    let ok = package(&[("cm.yaml", &configmap("still-here", "1"))]);
    create(&h, "other", json!({"source": {"dir": ok.path()}})).await;
    wait_ready(&h, "other", |status, _, _| status == "True").await;
}

#[tokio::test]
async fn local_sources_are_refused_outside_the_allowed_directories_and_the_cache() {
    let allowed = tempfile::tempdir().expect("allowed");
    let roots = vec![allowed.path().to_path_buf()];
    let h = start_with(move |settings| settings.tenancy.local_roots = roots).await;
    let elsewhere = package(&[("cm.yaml", &configmap("elsewhere", "1"))]);
    for (name, source) in [
        ("dir-elsewhere", json!({"dir": elsewhere.path()})),
        ("git-by-path", json!({"git": {"url": elsewhere.path()}})),
        ("git-file-url", json!({"git": {"url": format!("file://{}", elsewhere.path().display())}})),
    ] {
        create(&h, name, json!({"source": source})).await;
        let package = wait_ready(&h, name, |status, _, _| status == "False").await;
        let (_, reason, message) = ready(&package).expect("ready");
        assert_eq!(reason, "InvalidSource", "{name}: {message}");
        assert!(message.contains("--allow-local-sources"), "{name}: {message}");
    }
    assert!(h.configmaps.get_opt("elsewhere").await.expect("get").is_none());

    std::fs::write(allowed.path().join("cm.yaml"), configmap("allowed", "1")).expect("write");
    create(&h, "dir-allowed", json!({"source": {"dir": allowed.path()}})).await;
    wait_ready(&h, "dir-allowed", |status, _, _| status == "True").await;
}

#[tokio::test]
async fn the_source_cache_is_no_source_even_inside_an_allowed_directory() {
    // The harness allows the temporary directory, where its cache is too.
    let h = start().await;
    let cache = h.cache.path().to_path_buf();
    let other = package(&[("cm.yaml", &configmap("cached", "1"))]);
    create(&h, "fills-the-cache", json!({"source": {"dir": other.path()}})).await;
    wait_ready(&h, "fills-the-cache", |status, _, _| status == "True").await;
    for (name, source) in [
        ("reads-the-cache", json!({"dir": cache.join("snapshots")})),
        ("clones-the-cache", json!({"git": {"url": cache.join("git")}})),
    ] {
        create(&h, name, json!({"source": source})).await;
        let package = wait_ready(&h, name, |status, _, _| status == "False").await;
        let (_, _, message) = ready(&package).expect("ready");
        assert!(message.contains("the controller's source cache is not a source"), "{name}: {message}");
    }
}
