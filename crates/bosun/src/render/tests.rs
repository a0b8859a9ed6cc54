use std::{collections::BTreeMap, path::Path};

use serde_json::{Value, json};

use super::*;
use crate::package::Origin;
use bosun_api::package::{CommonMetadata, ExecSpec, FilesSpec, JsonnetSpec, PackageSpec};

fn write(dir: &Path, name: &str, text: &str) {
    let path = dir.join(name);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

fn package(dir: &Path, render: RenderSpec) -> Package {
    Package {
        dir: dir.to_path_buf(),
        name: "test".into(),
        namespace: None,
        spec: PackageSpec { render: Some(render), ..PackageSpec::default() },
        origin: Origin::Detected,
    }
}

fn files() -> RenderSpec {
    RenderSpec::Files(FilesSpec { dir: ".".into(), rollout: None })
}

fn jsonnet() -> RenderSpec {
    RenderSpec::Jsonnet(JsonnetSpec::default())
}

fn keys(rendered: &Rendered) -> Vec<&str> {
    rendered.manifests.iter().map(|m| m.key.as_str()).collect()
}

fn render_dir(package: &Package) -> Result<Rendered, RenderError> {
    render(package, &json!({}), &Scopes::builtin())
}

const CM: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: NAME\n";

#[test]
fn files_are_keyed_by_relative_path_in_sorted_order() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), "b.yaml", &CM.replace("NAME", "b"));
    write(dir.path(), "a/z.json", r#"{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "z"}}"#);
    write(dir.path(), "multi.yml", &format!("{}---\n{}", CM.replace("NAME", "m0"), CM.replace("NAME", "m1")));
    write(
        dir.path(),
        "list.yaml",
        "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Secret, metadata: {name: s0}}\n- {apiVersion: v1, kind: Secret, metadata: {name: s1}}\n",
    );
    write(dir.path(), "notes.txt", "ignored");
    write(dir.path(), ".hidden/x.yaml", &CM.replace("NAME", "hidden"));
    write(dir.path(), "bosun.yaml", "apiVersion: bosun.dev/v1alpha1\nkind: Package\n");
    let rendered = render_dir(&package(dir.path(), files())).expect("render");
    assert_eq!(keys(&rendered), ["a/z.json", "b.yaml", "list.yaml#0", "list.yaml#1", "multi.yml#0", "multi.yml#1"]);
    assert_eq!(rendered.manifests.named("multi.yml").len(), 2, "a file key names all its documents");
}

#[test]
fn a_locutus_rollout_among_the_files_is_the_rollout() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), "grafana/deployment.yaml", &CM.replace("NAME", "grafana"));
    write(
        dir.path(),
        "rollout.yaml",
        "apiVersion: workflow.kubernetes.io/v1alpha1\nkind: Rollout\nmetadata: {name: r}\nspec:\n  groups:\n  - steps:\n    - {object: grafana/deployment.yaml, action: CreateOrUpdate}\n",
    );
    let rendered = render_dir(&package(dir.path(), files())).expect("render");
    assert_eq!(keys(&rendered), ["grafana/deployment.yaml"]);
    assert_eq!(
        rendered.rollout.expect("rollout").groups[0].steps[0].object.as_deref(),
        Some("grafana/deployment.yaml")
    );
}

#[test]
fn jsonnet_sees_the_configuration_both_ways_and_returns_any_shape() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(
        dir.path(),
        "vendor/lib.libsonnet",
        "{ cm(name):: {apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: name}} }",
    );
    let cases = [
        ("local lib = import 'lib.libsonnet'; lib.cm(std.extVar('config').name)", vec!["main.jsonnet"]),
        (
            "local c = import 'generic-operator/config'; [{apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: c.name + i}} for i in ['a', 'b']]",
            vec!["main.jsonnet#0", "main.jsonnet#1"],
        ),
        (
            "local lib = import 'lib.libsonnet'; {web: {cm: lib.cm('x'), other: lib.cm('y')}, db: lib.cm('z')}",
            vec!["db", "web/cm", "web/other"],
        ),
    ];
    for (program, expected) in cases {
        write(dir.path(), "main.jsonnet", program);
        let rendered =
            render(&package(dir.path(), jsonnet()), &json!({"name": "grafana"}), &Scopes::builtin()).expect(program);
        assert_eq!(keys(&rendered), expected, "{program}");
        if expected == ["main.jsonnet"] {
            assert_eq!(rendered.manifests.iter().next().expect("one").object["metadata"]["name"], "grafana");
        }
    }
}

#[test]
fn the_locutus_objects_and_rollout_form_is_understood() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(
        dir.path(),
        "rollout.json",
        r#"{"apiVersion":"workflow.kubernetes.io/v1alpha1","kind":"Rollout","metadata":{"name":"jsonnet"},"spec":{"groups":[{"steps":[{"action":"CreateOrUpdate","object":"deployment"}]}]}}"#,
    );
    write(
        dir.path(),
        "main.jsonnet",
        "local config = import 'generic-operator/config';\n{ objects: { deployment: {apiVersion: 'apps/v1', kind: 'Deployment', metadata: {name: config.name}} }, rollout: (import 'rollout.json') }",
    );
    let rendered =
        render(&package(dir.path(), jsonnet()), &json!({"name": "overridden"}), &Scopes::builtin()).expect("render");
    assert_eq!(keys(&rendered), ["deployment"]);
    assert_eq!(rendered.manifests.get("deployment").expect("deployment").object["metadata"]["name"], "overridden");
    assert_eq!(rendered.rollout.expect("rollout").groups[0].steps[0].object.as_deref(), Some("deployment"));
}

#[test]
fn jsonnet_packages_may_be_given_by_a_path_with_parent_components() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), "pkg/main.jsonnet", "{apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: std.thisFile}}");
    std::fs::create_dir_all(dir.path().join("other")).expect("mkdir");
    let roundabout = dir.path().join("other/../pkg");
    let rendered = render_dir(&package(&roundabout, jsonnet())).expect("render");
    assert_eq!(rendered.manifests.iter().next().expect("one").object["metadata"]["name"], "main.jsonnet");
}

#[test]
fn jsonnet_ext_vars_and_top_level_arguments() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(
        dir.path(),
        "main.jsonnet",
        "function(replicas) {apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: std.extVar('env')}, data: {replicas: std.toString(replicas), debug: std.toString(std.extVar('debug'))}}",
    );
    let spec = RenderSpec::Jsonnet(JsonnetSpec {
        ext_vars: [("env".to_string(), json!("prod")), ("debug".to_string(), json!(true))].into(),
        tlas: [("replicas".to_string(), json!(3))].into(),
        ..JsonnetSpec::default()
    });
    let rendered = render_dir(&package(dir.path(), spec)).expect("render");
    let object = &rendered.manifests.iter().next().expect("one").object;
    assert_eq!(object["metadata"]["name"], "prod");
    assert_eq!(object["data"], json!({"replicas": "3", "debug": "true"}));
}

#[test]
fn jsonnet_errors_carry_file_and_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), "main.jsonnet", "local f(x) = error 'boom: ' + x;\n{\n  a: f('here'),\n}\n");
    let err = render_dir(&package(dir.path(), jsonnet())).expect_err("runtime error").to_string();
    assert!(err.contains("boom: here"), "{err}");
    assert!(err.contains("main.jsonnet:1:") && err.contains("main.jsonnet:3:"), "the trace names each frame: {err}");
    write(dir.path(), "main.jsonnet", "{\n  a: 1,\n  b: [\n}\n");
    let err = render_dir(&package(dir.path(), jsonnet())).expect_err("syntax error").to_string();
    assert!(err.contains("main.jsonnet:4"), "{err}");
    write(dir.path(), "main.jsonnet", "{ a: 'not an object' }");
    let err = render_dir(&package(dir.path(), jsonnet())).expect_err("not objects").to_string();
    assert!(err.contains("field \"a\" is a string, not a Kubernetes object"), "{err}");
}

#[test]
fn exec_gets_the_configuration_and_its_output_is_keyed_by_identity() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(
        dir.path(),
        "gen.sh",
        "#!/bin/sh\nname=$(sed 's/.*\"name\":\"\\([^\"]*\\)\".*/\\1/')\ncat <<EOF\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: $name}\ndata: {env: '$BOSUN_CONFIG'}\nEOF\n",
    );
    std::process::Command::new("chmod").args(["+x", "gen.sh"]).current_dir(dir.path()).status().expect("chmod");
    let spec = RenderSpec::Exec(ExecSpec { command: vec!["./gen.sh".into()], timeout: None });
    let rendered =
        render(&package(dir.path(), spec), &json!({"name": "from-stdin"}), &Scopes::builtin()).expect("render");
    assert_eq!(keys(&rendered), ["ConfigMap/from-stdin"]);
    assert_eq!(rendered.manifests.iter().next().expect("one").object["data"]["env"], r#"{"name":"from-stdin"}"#);

    write(dir.path(), "fail.sh", "#!/bin/sh\necho 'cannot reach the vault' >&2\nexit 3\n");
    std::process::Command::new("chmod").args(["+x", "fail.sh"]).current_dir(dir.path()).status().expect("chmod");
    let failing = RenderSpec::Exec(ExecSpec { command: vec!["./fail.sh".into()], timeout: None });
    let err = render_dir(&package(dir.path(), failing)).expect_err("exit 3").to_string();
    assert_eq!(err, "./fail.sh: exited with status 3:\ncannot reach the vault");

    let slow = RenderSpec::Exec(ExecSpec {
        command: vec!["sleep".into(), "5".into()],
        timeout: Some("200ms".parse().expect("interval")),
    });
    let err = render_dir(&package(dir.path(), slow)).expect_err("timeout").to_string();
    assert_eq!(err, "sleep 5: timed out after 200ms and was stopped");
}

#[test]
fn operator_inputs_reach_exec_and_jsonnet_and_the_response_form_comes_back() {
    let dir = tempfile::tempdir().expect("tempdir");
    // exec: related and finalizing as BOSUN_<NAME>; one JSON document in the response form.
    write(
        dir.path(),
        "sync.sh",
        r##"#!/bin/sh
related=$(printf '%s' "$BOSUN_RELATED" | tr -d '"')
cat <<EOF
{"children": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"related": "$related"}}], "status": {"finalizing": "$BOSUN_FINALIZING"}, "resyncAfterSeconds": 2}
EOF
"##,
    );
    std::process::Command::new("chmod").args(["+x", "sync.sh"]).current_dir(dir.path()).status().expect("chmod");
    let extra = BTreeMap::from([("related".to_string(), json!({"cm": []})), ("finalizing".to_string(), json!(true))]);
    let input = Input { config: &json!({}), extra: &extra, allow_empty: false, keys: None, helm: None, sandbox: None };
    let exec = RenderSpec::Exec(ExecSpec { command: vec!["./sync.sh".into()], timeout: None });
    let rendered = render_with(&package(dir.path(), exec), &input, &Scopes::builtin()).expect("exec");
    assert_eq!(keys(&rendered), ["ConfigMap/c"]);
    assert_eq!(rendered.manifests.iter().next().expect("one").object["data"]["related"], "{cm:[]}");
    assert_eq!(rendered.response.status, Some(serde_json::Map::from_iter([("finalizing".into(), json!("true"))])));
    assert_eq!(rendered.response.resync_after, Some(std::time::Duration::from_secs(2)));
    // jsonnet: std.extVar; no children at all is fine when allowed.
    write(
        dir.path(),
        "main.jsonnet",
        "{children: [], status: {n: std.length(std.extVar('related').cm), f: std.extVar('finalizing')}}",
    );
    let rendered =
        render_with(&package(dir.path(), jsonnet()), &Input { allow_empty: true, ..input }, &Scopes::builtin())
            .expect("jsonnet");
    assert!(rendered.manifests.is_empty());
    assert_eq!(rendered.response.status.expect("status")["f"], json!(true));
    let err = render_with(&package(dir.path(), jsonnet()), &input, &Scopes::builtin()).expect_err("empty");
    assert!(matches!(err, RenderError::Empty { .. }), "{err}");
}

#[test]
fn target_namespace_applies_to_namespaced_kinds_only() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), "cm.yaml", &CM.replace("NAME", "cm"));
    write(dir.path(), "ns.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: apps}\n");
    write(
        dir.path(),
        "role.yaml",
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: reader}\n",
    );
    write(
        dir.path(),
        "crd.yaml",
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.example.com}\nspec: {group: example.com, scope: Cluster, names: {kind: Widget, plural: widgets}}\n",
    );
    write(dir.path(), "widget.yaml", "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n");
    write(dir.path(), "gadget.yaml", "apiVersion: example.com/v1\nkind: Gadget\nmetadata: {name: g}\n");
    let mut package = package(dir.path(), files());
    package.spec.target_namespace = Some("team-a".into());
    let rendered = render_dir(&package).expect("render");
    let namespace = |key: &str| rendered.manifests.get(key).expect(key).object.pointer("/metadata/namespace").cloned();
    assert_eq!(namespace("cm.yaml"), Some(json!("team-a")));
    assert_eq!(namespace("ns.yaml"), None);
    assert_eq!(namespace("role.yaml"), None);
    assert_eq!(namespace("widget.yaml"), None, "the package's CRD says Widget is cluster-scoped");
    assert_eq!(namespace("gadget.yaml"), Some(json!("team-a")), "unknown kinds are treated as namespaced");
    assert_eq!(rendered.warnings.len(), 1);
    assert!(rendered.warnings[0].contains("Gadget is not a built-in kind"), "{:?}", rendered.warnings);
}

#[test]
fn substitution_and_common_metadata_are_applied() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(
        dir.path(),
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: \"app-${cluster}\", labels: {team: old}}\ndata: {region: \"${region:=eu}\", literal: \"$${cluster}\"}\n",
    );
    write(
        dir.path(),
        "script.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: script, annotations: {bosun.dev/substitute: disabled}}\ndata: {run: \"echo ${HOME}\"}\n",
    );
    let mut package = package(dir.path(), files());
    package.spec.substitute = [("cluster".to_string(), "prod".to_string())].into();
    package.spec.common_metadata =
        Some(CommonMetadata { labels: [("team".to_string(), "obs".to_string())].into(), annotations: BTreeMap::new() });
    let rendered = render_dir(&package).expect("render");
    let cm = &rendered.manifests.get("cm.yaml").expect("cm").object;
    assert_eq!(cm["metadata"]["name"], "app-prod");
    assert_eq!(cm["metadata"]["labels"]["team"], "obs");
    assert_eq!(cm["data"], json!({"region": "eu", "literal": "${cluster}"}));
    assert_eq!(rendered.manifests.get("script.yaml").expect("script").object["data"]["run"], "echo ${HOME}");

    write(dir.path(), "cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {a: \"${missing}\"}\n");
    let err = render_dir(&package).expect_err("unset").to_string();
    assert_eq!(err, "ConfigMap/x (from \"cm.yaml\"): ${missing} is not set in `substitute` and has no default");
}

#[test]
fn objects_need_kind_api_version_and_name_and_identities_are_unique() {
    let dir = tempfile::tempdir().expect("tempdir");
    let package = package(dir.path(), files());
    write(dir.path(), "a.yaml", "apiVersion: v1\nmetadata: {name: a}\n");
    assert_eq!(
        render_dir(&package).expect_err("no kind").to_string(),
        "a.yaml: kind is missing (every object needs apiVersion, kind and metadata.name)"
    );
    write(dir.path(), "a.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n");
    assert_eq!(render_dir(&package).expect_err("no name").to_string(), "a.yaml: ConfigMap has no metadata.name");
    write(dir.path(), "a.yaml", &CM.replace("NAME", "same"));
    write(dir.path(), "b.yaml", &CM.replace("NAME", "same"));
    assert_eq!(
        render_dir(&package).expect_err("twice").to_string(),
        "ConfigMap/same is rendered twice: by \"a.yaml\" and by \"b.yaml\""
    );
    write(dir.path(), "b.yaml", "apiVersion: example.com/v1\nkind: ConfigMap\nmetadata: {name: same}\n");
    assert!(render_dir(&package).is_ok(), "the same kind and name in another group is another object");
}

#[test]
fn yaml_errors_point_at_the_file_line_and_column() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), "bad.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [unclosed\n");
    let err = render_dir(&package(dir.path(), files())).expect_err("syntax").to_string();
    assert!(err.contains("bad.yaml") && err.contains("line "), "{err}");
}

#[test]
fn rollout_steps_must_name_rendered_keys() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), "grafana/deployment.yaml", &CM.replace("NAME", "g"));
    let mut package = package(dir.path(), files());
    package.spec.rollout = Some(
        crate::package::rollout::read(
            &json!({"groups": [{"name": "app", "steps": [{"object": "grafana/deploymnt.yaml"}]}]}),
            "t",
        )
        .expect("spec"),
    );
    let err = render_dir(&package).expect_err("unknown key").to_string();
    assert_eq!(
        err,
        "rollout group \"app\" step 1: no manifest has the key \"grafana/deploymnt.yaml\", did you mean \"grafana/deployment.yaml\"?"
    );
}

#[test]
fn outputs_are_deterministic() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), "a.yaml", &CM.replace("NAME", "a"));
    let first = render_dir(&package(dir.path(), files())).expect("render");
    let second = render_dir(&package(dir.path(), files())).expect("render");
    assert_eq!(first.manifests.to_yaml(), second.manifests.to_yaml());
    assert_eq!(first.manifests.to_list()["items"][0]["metadata"]["name"], "a");
    let value: Value = first.manifests.to_map().into();
    assert_eq!(value["a.yaml"]["kind"], "ConfigMap");
}

#[test]
fn a_chart_s_yaml_names_each_document_s_template_as_helm_template_does() {
    let dir = tempfile::tempdir().expect("dir");
    write(dir.path(), "Chart.yaml", "apiVersion: v2\nname: c\nversion: 0.1.0\n");
    let two = format!("{}---\n{}", CM.replace("NAME", "a"), CM.replace("NAME", "b"));
    write(dir.path(), "templates/two.yaml", &two);
    let rendered = render_dir(&Package::load(dir.path()).expect("a chart")).expect("rendered");
    assert_eq!(keys(&rendered), ["c/templates/two.yaml#0", "c/templates/two.yaml#1"], "the keys tell them apart");
    let sources: Vec<String> =
        rendered.to_yaml().lines().filter_map(|l| l.strip_prefix("# Source: ")).map(str::to_string).collect();
    assert_eq!(sources, ["c/templates/two.yaml", "c/templates/two.yaml"]);
    // Other packages' keys are their sources.
    write(dir.path(), "files/two.yaml", &two);
    let files = render_dir(&package(&dir.path().join("files"), files())).expect("rendered");
    assert!(files.to_yaml().contains("# Source: two.yaml#1"), "{}", files.to_yaml());
}
