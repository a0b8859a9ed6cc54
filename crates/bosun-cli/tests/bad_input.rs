//! The bad-input table of docs/apply.md, row by row: `bosun apply` on each mistake against the
//! embedded API server, with the exact line users see, the exit code, and nothing written.
//! (Unreachable servers, rejected tokens, empty directories and typos in kinds are in
//! `first_run.rs`; missing namespaces and corrupt inventories in `apply.rs`.)

use std::{path::Path, process::Output};

use bosun_apiserver::{ApiServer, RunningServer};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::{
    Api,
    api::{DeleteParams, PostParams},
};
use serde_json::json;

struct Case<'a> {
    /// Files of the package directory `pkg`.
    files: &'a [(&'a str, &'a str)],
    /// Exit code.
    code: i32,
    /// The line that says what is wrong: stderr's first line for exit code 2, else the object's
    /// line under `rollout failed …`.
    line: &'a str,
}

const DEPLOYMENT: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  selector: {matchLabels: {app: a}}\n  template: {metadata: {labels: {app: a}}, spec: {containers: [{name: a, image: x}]}}\n";

async fn bosun(server: &RunningServer, dir: &Path, args: &[&str]) -> Output {
    let kubeconfig = dir.join("kubeconfig");
    server.write_kubeconfig(&kubeconfig).expect("kubeconfig");
    tokio::process::Command::new(env!("CARGO_BIN_EXE_bosun"))
        .args(args)
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .current_dir(dir)
        .output()
        .await
        .expect("bosun runs")
}

/// Runs `bosun apply pkg` on the case's files and checks the line, the code and that nothing
/// was written.
async fn check(server: &RunningServer, case: &Case<'_>) {
    let dir = tempfile::tempdir().expect("tempdir");
    for (name, text) in case.files {
        let path = dir.path().join("pkg").join(name);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        if let Some(target) = text.strip_prefix("symlink:") {
            std::os::unix::fs::symlink(target, &path).expect("symlink");
        } else {
            std::fs::write(&path, text).expect("write");
        }
    }
    let revision = server.revision();
    let output = bosun(server, dir.path(), &["apply", "pkg"]).await;
    let (stdout, stderr) =
        (String::from_utf8_lossy(&output.stdout).into_owned(), String::from_utf8_lossy(&output.stderr).into_owned());
    assert_eq!(output.status.code(), Some(case.code), "{}\n{stdout}{stderr}", case.line);
    let found = if case.code == 2 {
        stderr.lines().next().is_some_and(|first| first == case.line)
    } else {
        stdout.lines().any(|l| l.starts_with("rollout failed in group")) && stdout.lines().any(|l| l == case.line)
    };
    assert!(found, "expected {:?} in:\n{stdout}{stderr}", case.line);
    assert_eq!(server.revision(), revision, "{}: something was written", case.line);
}

#[tokio::test]
async fn each_mistake_gets_its_line_and_exit_code_and_nothing_is_written() {
    let server = ApiServer::in_memory().start().await.expect("server");
    let cases = [
        Case { files: &[], code: 2, line: "error: pkg: no such package directory" },
        Case {
            files: &[("a.yaml", "symlink:gone.yaml")],
            code: 2,
            line: "error: pkg/a.yaml: no such file or directory",
        },
        Case {
            files: &[("a.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n   bad: x\n")],
            code: 2,
            line: "error: pkg/a.yaml: line 5 column 7: mapping values are not allowed in this context",
        },
        Case {
            files: &[("a.json", r#"{"apiVersion": "v1", "kind": "ConfigMap",, }"#)],
            code: 2,
            line: "error: pkg/a.json: line 1 column 42: key must be a string",
        },
        Case {
            files: &[("main.jsonnet", "{ a: error 'boom' }")],
            code: 2,
            line: "error: jsonnet main.jsonnet: runtime error: boom",
        },
        Case {
            files: &[
                (
                    "bosun.yaml",
                    "apiVersion: bosun.dev/v1alpha1\nkind: Package\nspec:\n  render:\n    helm: {chart: ., valuesFiles: [list.yaml]}\n",
                ),
                ("Chart.yaml", "apiVersion: v2\nname: web\nversion: 1.0.0\n"),
                ("list.yaml", "- a\n- b\n"),
            ],
            code: 2,
            line: "error: Helm chart pkg: values file list.yaml: must be a mapping of keys to values, found a list",
        },
        Case {
            files: &[("a.yaml", "apiVersion: example.com/v1\nkind: Gizmo\nmetadata: {name: a}\n")],
            code: 1,
            line: "  Gizmo/a: the cluster serves no Gizmo in example.com/v1",
        },
        Case {
            files: &[(
                "a.yaml",
                "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: s}\nspec:\n  replicas: many\n  selector: {matchLabels: {app: a}}\n  template: {metadata: {labels: {app: a}}, spec: {containers: [{name: a, image: x}]}}\n",
            )],
            code: 1,
            line: "  Deployment/default/s: dry-run failed: Deployment in version \"v1\" cannot be handled as a Deployment: spec.replicas: invalid type: string \"many\", expected i32",
        },
    ];
    for case in &cases {
        check(&server, case).await;
    }
}

#[tokio::test]
async fn an_immutable_field_change_names_the_field_and_the_way_out() {
    let server = ApiServer::in_memory().start().await.expect("server");
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(dir.path().join("pkg")).expect("mkdir");
    std::fs::write(dir.path().join("pkg/d.yaml"), DEPLOYMENT).expect("write");
    let first = bosun(&server, dir.path(), &["apply", "pkg"]).await;
    assert_eq!(first.status.code(), Some(0), "{}", String::from_utf8_lossy(&first.stderr));
    let changed = DEPLOYMENT.replace("app: a}", "app: b}");
    check(
        &server,
        &Case {
            files: &[("d.yaml", &changed)],
            code: 1,
            line: "  Deployment/default/d: dry-run failed: Deployment.apps \"d\" is invalid: spec.selector: Invalid value: {\"matchLabels\":{\"app\":\"b\"}}: field is immutable; use --force or a Recreate step to replace the object",
        },
    )
    .await;
}

#[tokio::test]
async fn a_forbidden_write_quotes_the_server() {
    // A namespace being deleted refuses new content with 403 Forbidden, as upstream does.
    let server = ApiServer::in_memory().start().await.expect("server");
    let namespaces: Api<Namespace> = Api::all(server.client());
    let team = serde_json::from_value(json!({"metadata": {"name": "team"}})).expect("namespace");
    namespaces.create(&PostParams::default(), &team).await.expect("namespace");
    let held = serde_json::from_value(json!({"metadata": {"name": "held", "finalizers": ["example.com/hold"]}}))
        .expect("configmap");
    Api::<ConfigMap>::namespaced(server.client(), "team").create(&PostParams::default(), &held).await.expect("held");
    namespaces.delete("team", &DeleteParams::default()).await.expect("delete namespace");
    check(
        &server,
        &Case {
            files: &[("x.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: team}\n")],
            code: 1,
            line: "  ConfigMap/team/x: dry-run failed: configmaps \"x\" is forbidden: unable to create new content in namespace team because it is being terminated",
        },
    )
    .await;
}
