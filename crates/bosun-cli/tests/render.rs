//! `bosun render` on the packages in `examples/`, compared with the expected output kept in
//! `tests/golden/`, and on bad input. Set `BOSUN_BLESS=1` to rewrite the expected output after
//! an intended change (and review the diff).

use std::{
    path::{Path, PathBuf},
    process::{Command, Output},
};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("repository root")
}

fn bosun(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bosun"))
        .args(args)
        .current_dir(dir)
        .env("KUBECONFIG", "/nonexistent")
        .output()
        .expect("bosun runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Runs `bosun render` from the repository root and compares stdout with a golden file.
fn golden(name: &str, args: &[&str]) {
    let output = bosun(args, &repo());
    assert!(output.status.success(), "bosun {args:?} failed: {}", stderr(&output));
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden").join(name);
    let actual = stdout(&output);
    if std::env::var_os("BOSUN_BLESS").is_some() {
        std::fs::write(&path, &actual).expect("bless");
        return;
    }
    let expected =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e} (run with BOSUN_BLESS=1)", path.display()));
    assert_eq!(actual, expected, "bosun {args:?} differs from {}", path.display());
}

#[test]
fn plain_files() {
    golden("files.yaml", &["render", "examples/files"]);
}

#[test]
fn jsonnet_with_configuration() {
    golden("jsonnet.yaml", &["render", "examples/jsonnet"]);
}

#[test]
fn kustomize_overlay_with_a_base() {
    golden("kustomize.yaml", &["render", "examples/kustomize/overlays/prod"]);
}

#[test]
fn exec_renderer() {
    golden("exec.yaml", &["render", "examples/exec"]);
}

#[test]
fn locutus_files_with_a_rollout_file_as_a_map() {
    golden(
        "locutus-files.json",
        &[
            "render",
            "--files",
            "examples/locutus/files/manifests",
            "--rollout",
            "examples/locutus/files/rollout.yaml",
            "-o",
            "map",
        ],
    );
}

#[test]
fn locutus_jsonnet_with_a_config_file_as_a_map() {
    golden(
        "locutus-jsonnet.json",
        &[
            "render",
            "--jsonnet",
            "examples/locutus/jsonnet-with-config/main.jsonnet",
            "--config",
            "examples/locutus/jsonnet-with-config/config.json",
            "-o",
            "map",
        ],
    );
}

#[test]
fn json_output_is_a_v1_list() {
    golden("files.json", &["render", "examples/files", "-o", "json"]);
}

#[test]
fn show_plan_prints_the_rollout() {
    golden(
        "locutus-files.plan",
        &[
            "render",
            "--files",
            "examples/locutus/files/manifests",
            "--rollout",
            "examples/locutus/files/rollout.yaml",
            "--show-plan",
        ],
    );
}

#[test]
fn show_plan_prints_argo_cd_phases_waves_and_hooks() {
    golden("argocd-sync-waves.plan", &["render", "examples/argocd/sync-waves", "--show-plan"]);
    golden("argocd-helm-hooks.plan", &["render", "examples/argocd/helm-hooks", "--show-plan"]);
}

/// The objects `bosun render ARGS -o json` prints from the repository root.
fn rendered(args: &[&str]) -> Vec<serde_json::Value> {
    let output = bosun(&[&["render"], args, &["-o", "json"]].concat(), &repo());
    assert!(output.status.success(), "{}", stderr(&output));
    let list: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
    list["items"].as_array().expect("items").clone()
}

#[test]
fn jsonnet_directories_take_top_level_arguments_and_external_variables_from_flags() {
    let tla = "examples/argocd/jsonnet-guestbook-tla";
    let defaults = rendered(&[tla]);
    let names: Vec<&str> = defaults.iter().filter_map(|o| o["metadata"]["name"].as_str()).collect();
    assert_eq!(names, ["jsonnet-guestbook-ui", "jsonnet-guestbook-ui"]);
    let given = rendered(&[tla, "--tla-str", "name=demo", "--tla-code", "replicas=1 + 2"]);
    let deployment = given.iter().find(|o| o["kind"] == "Deployment").expect("deployment");
    assert_eq!(deployment["metadata"]["name"], "demo");
    assert_eq!(deployment["spec"]["replicas"], 3, "--tla-code is jsonnet code");

    let dir = tempfile::tempdir().expect("tempdir");
    write(
        dir.path(),
        "settings.jsonnet",
        "{apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: std.extVar('name')}, data: {n: std.toString(std.extVar('n') * 2)}}\n",
    );
    let path = dir.path().to_str().expect("utf-8");
    let objects = rendered(&[path, "--ext-str", "name=settings", "--ext-code", "n=21"]);
    assert_eq!(objects.len(), 1, "{objects:?}");
    assert_eq!(objects[0]["metadata"]["name"], "settings");
    assert_eq!(objects[0]["data"]["n"], "42");
}

#[test]
fn a_config_flag_overrides_the_package_configuration() {
    let dir = tempfile::tempdir().expect("tempdir");
    let extra = dir.path().join("prod.yaml");
    std::fs::write(&extra, "replicas: 5\n").expect("write");
    let output =
        bosun(&["render", "examples/jsonnet", "--config", extra.to_str().expect("utf-8"), "-o", "json"], &repo());
    assert!(output.status.success(), "{}", stderr(&output));
    let list: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
    let deployment =
        list["items"].as_array().expect("items").iter().find(|o| o["kind"] == "Deployment").expect("deployment");
    assert_eq!(deployment["spec"]["replicas"], 5);
    assert_eq!(deployment["spec"]["template"]["spec"]["containers"][0]["image"], "grafana/grafana:11.4.0");
}

fn write(dir: &Path, name: &str, text: &str) {
    let path = dir.join(name);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

/// Renders a package written into a temporary directory; it must fail with exit code 2.
fn fails(files: &[(&str, &str)]) -> String {
    let dir = tempfile::tempdir().expect("tempdir");
    for (name, text) in files {
        write(dir.path(), name, text);
    }
    let output = bosun(&["render", "."], dir.path());
    assert_eq!(output.status.code(), Some(2), "expected a failure; stdout: {}", stdout(&output));
    assert!(stdout(&output).is_empty(), "nothing is printed on failure");
    stderr(&output)
}

#[test]
fn yaml_syntax_errors_name_file_line_and_column() {
    let err = fails(&[
        ("good.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"),
        ("bad.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [a\ndata: {}\n"),
    ]);
    assert!(err.contains("bad.yaml: line 5 column 5: illegal placement"), "{err}");
    assert!(err.contains("bad.yaml:5:"), "a snippet points at the line: {err}");
}

#[test]
fn jsonnet_errors_name_file_and_line_with_the_stack() {
    let err = fails(&[
        ("lib.libsonnet", "{\n  port(p):: if p > 0 then p else error 'port must be positive, got ' + p,\n}\n"),
        (
            "main.jsonnet",
            "local lib = import 'lib.libsonnet';\n{\n  svc: {apiVersion: 'v1', kind: 'Service', metadata: {name: 'x'}, spec: {port: lib.port(-1)}},\n}\n",
        ),
    ]);
    assert!(err.contains("port must be positive, got -1"), "{err}");
    assert!(err.contains("lib.libsonnet:2:") && err.contains("main.jsonnet:3:"), "{err}");
}

#[test]
fn a_runaway_jsonnet_program_is_stopped_at_the_memory_limit_with_its_name() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("main.jsonnet"), "std.makeArray(100000000, function(i) {n: i})\n").expect("write");
    let output = Command::new(env!("CARGO_BIN_EXE_bosun"))
        .args(["render", "."])
        .current_dir(dir.path())
        .env("BOSUN_JSONNET_MEMORY_LIMIT", "300MiB")
        .output()
        .expect("bosun runs");
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{err}");
    assert!(err.contains("main.jsonnet: evaluation stopped") && err.contains("over the limit of 300 MiB"), "{err}");
    assert!(stdout(&output).is_empty(), "nothing rendered: {}", stdout(&output));

    // A limit that is not a size is bad input (exit 2), naming the variable.
    let output = Command::new(env!("CARGO_BIN_EXE_bosun"))
        .args(["render", "."])
        .current_dir(dir.path())
        .env("BOSUN_JSONNET_MEMORY_LIMIT", "lots")
        .output()
        .expect("bosun runs");
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains(r#"BOSUN_JSONNET_MEMORY_LIMIT="lots" is not a size"#), "{}", stderr(&output));
}

#[test]
fn a_manifest_without_kind_is_refused() {
    let err = fails(&[("cm.yaml", "apiVersion: v1\nmetadata: {name: a}\n")]);
    assert_eq!(err.trim(), "error: cm.yaml: kind is missing (every object needs apiVersion, kind and metadata.name)");
}

#[test]
fn an_unknown_renderer_field_is_refused_with_its_name() {
    let err = fails(&[(
        "bosun.yaml",
        "apiVersion: bosun.dev/v1alpha1\nkind: Package\nspec:\n  render:\n    jsonnet:\n      entrypoint: main.jsonnet\n      libraryPaths: [lib]\n",
    )]);
    assert!(err.contains("spec.render.jsonnet.libraryPaths") && err.contains("unknown field `libraryPaths`"), "{err}");
    assert!(err.contains("line 7 column 7"), "{err}");
}

#[test]
fn an_exec_renderer_that_exits_1_shows_its_stderr() {
    let err = fails(&[(
        "bosun.yaml",
        "apiVersion: bosun.dev/v1alpha1\nkind: Package\nspec:\n  render:\n    exec: {command: [sh, -c, 'echo \"vault sealed\" >&2; exit 1']}\n",
    )]);
    assert_eq!(err.trim(), "error: sh -c echo \"vault sealed\" >&2; exit 1: exited with status 1:\nvault sealed");
}

#[test]
fn a_missing_kustomize_base_is_reported_by_kustomize() {
    let err = fails(&[("kustomization.yaml", "resources:\n- ../base-that-does-not-exist\n")]);
    assert!(err.contains("kustomize") && err.contains("exited with status 1"), "{err}");
    assert!(err.contains("base-that-does-not-exist"), "{err}");
}

#[test]
fn a_missing_package_directory_is_a_clear_error() {
    let output = bosun(&["render", "no/such/dir"], &repo());
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(stderr(&output), "error: no/such/dir: no such package directory\n");
}

#[test]
fn a_folder_of_packages_is_named_as_such_with_the_packages_below_it() {
    for (folder, first, also) in
        [("examples/kustomize", "base", "overlays/prod"), ("examples/argocd", "helm-dependency", "kustomize-guestbook")]
    {
        let output = bosun(&["render", folder], &repo());
        assert_eq!(output.status.code(), Some(2), "{folder}: {}", stderr(&output));
        let said = stderr(&output);
        assert!(
            said.starts_with(&format!("error: {folder} is not a package: it holds the packages {first}, "))
                && said.contains(also)
                && said.contains(&format!("render one of them (bosun render {folder}/{first})"))
                && said.lines().count() == 1,
            "{folder}: {said}"
        );
    }
}
