//! The generators' parameters as Argo CD names them, flat and nested.

use serde_json::json;

use super::*;
use bosun_api::argo::applicationset::ApplicationSetSpec;

fn engine(go: bool) -> Engine {
    let spec: ApplicationSetSpec = serde_json::from_value(json!({"goTemplate": go})).expect("spec");
    Engine::of(&spec).expect("engine")
}

fn generator(value: Value) -> ApplicationSetGenerator {
    serde_json::from_value(value).expect("generator")
}

fn clusters() -> Vec<ArgoCluster> {
    let labels = |env: &str| BTreeMap::from([("env".to_string(), env.to_string())]);
    vec![
        ArgoCluster {
            name: "Prod_EU".into(),
            server: "https://eu.example".into(),
            project: "platform".into(),
            labels: labels("prod"),
            annotations: BTreeMap::from([("team".to_string(), "web".to_string())]),
            ..Default::default()
        },
        ArgoCluster {
            name: "staging".into(),
            server: "https://staging.example".into(),
            labels: labels("staging"),
            ..Default::default()
        },
    ]
}

fn tree() -> (tempfile::TempDir, BTreeMap<RepoKey, Tree>) {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("config/eu")).expect("dir");
    std::fs::write(dir.path().join("config/eu/config.json"), r#"{"cluster": {"address": "https://eu", "size": 3}}"#)
        .expect("file");
    std::fs::write(dir.path().join("config/eu/more.yaml"), "- {cluster: {address: a}}\n- {cluster: {address: b}}\n")
        .expect("file");
    let tree = Tree {
        directories: ["apps", "apps/Web_UI", "apps/api", "apps/legacy", "config", "config/eu"]
            .map(String::from)
            .to_vec(),
        files: ["config/eu/config.json", "config/eu/more.yaml"].map(String::from).to_vec(),
        root: dir.path().to_path_buf(),
    };
    (dir, BTreeMap::from([(("https://github.com/org/repo".to_string(), "HEAD".to_string()), tree)]))
}

fn sets(go: bool, value: Value) -> Result<Vec<Params>, Stop> {
    let (_dir, trees) = tree();
    let clusters = clusters();
    let found =
        generate("spec.generators[0]", &generator(value), &engine(go), Inputs { clusters: &clusters, trees: &trees })?;
    Ok(found.into_iter().map(|s| s.values).collect())
}

fn flat(pairs: &[(&str, &str)]) -> Params {
    pairs.iter().map(|(k, v)| (k.to_string(), json!(v))).collect()
}

#[test]
fn list_elements_are_text_flat_and_anything_nested() {
    let list =
        json!({"list": {"elements": [{"cluster": "eu", "values": {"size": "3"}}], "elementsYaml": "- cluster: us\n"}});
    assert_eq!(
        sets(false, list.clone()).expect("sets"),
        [flat(&[("cluster", "eu"), ("values.size", "3")]), flat(&[("cluster", "us")])]
    );
    assert_eq!(sets(true, list).expect("sets")[0]["values"], json!({"size": "3"}));
    let nested = json!({"list": {"elements": [{"cluster": {"name": "eu"}}]}});
    let Err(Stop::Invalid(error)) = sets(false, nested.clone()) else { panic!("nested values need goTemplate") };
    assert_eq!(error.field, "spec.generators[0].list.elements[0].cluster");
    assert_eq!(sets(true, nested).expect("sets")[0]["cluster"], json!({"name": "eu"}));
}

#[test]
fn clusters_give_argo_cd_s_parameters_and_in_cluster_only_without_a_selector() {
    let all =
        sets(false, json!({"clusters": {"values": {"revision": "{{metadata.labels.env}}-branch"}}})).expect("sets");
    assert_eq!(all.len(), 3, "the two Secrets and in-cluster");
    assert_eq!(
        all[0],
        flat(&[
            ("name", "Prod_EU"),
            ("nameNormalized", "prod-eu"),
            ("server", "https://eu.example"),
            ("project", "platform"),
            ("metadata.labels.env", "prod"),
            ("metadata.annotations.team", "web"),
            ("values.revision", "prod-branch"),
        ])
    );
    assert_eq!(all[2]["name"], "in-cluster");
    assert_eq!(all[2]["server"], "https://kubernetes.default.svc");
    let selected = sets(false, json!({"clusters": {"selector": {"matchLabels": {"env": "staging"}}}})).expect("sets");
    assert_eq!(selected.iter().map(|s| &s["name"]).collect::<Vec<_>>(), [&json!("staging")], "no in-cluster");
    let nested = sets(true, json!({"clusters": {"values": {"env": "{{ .metadata.labels.env }}"}}})).expect("sets");
    assert_eq!(nested[0]["metadata"], json!({"labels": {"env": "prod"}, "annotations": {"team": "web"}}));
    assert_eq!(nested[0]["values"], json!({"env": "prod"}));
    let Err(Stop::Invalid(error)) = sets(false, json!({"clusters": {"flatList": true}})) else { panic!("refused") };
    assert_eq!(error.field, "spec.generators[0].clusters.flatList");
}

#[test]
fn git_directories_give_path_basename_and_segments() {
    let git = |go: bool, prefix: &str| {
        sets(
            go,
            json!({"git": {"repoURL": "https://github.com/org/repo", "revision": "HEAD", "pathParamPrefix": prefix,
                "directories": [{"path": "apps/*"}, {"path": "apps/legacy", "exclude": true}]}}),
        )
        .expect("sets")
    };
    let found = git(false, "");
    assert_eq!(found.len(), 2);
    assert_eq!(
        found[0],
        flat(&[
            ("path", "apps/Web_UI"),
            ("path.basename", "Web_UI"),
            ("path.basenameNormalized", "web-ui"),
            ("path[0]", "apps"),
            ("path[1]", "Web_UI"),
        ])
    );
    assert_eq!(git(false, "app")[1]["app.path.basename"], "api");
    let nested = git(true, "");
    assert_eq!(
        nested[1]["path"],
        json!({"path": "apps/api", "basename": "api", "basenameNormalized": "api", "segments": ["apps", "api"]})
    );
    assert_eq!(git(true, "app")[1]["app"]["path"]["basename"], "api");
    let unread = json!({"git": {"repoURL": "https://github.com/org/other", "directories": [{"path": "*"}]}});
    assert_eq!(sets(false, unread), Err(Stop::Read(("https://github.com/org/other".into(), String::new()))));
}

#[test]
fn git_files_give_their_objects_with_the_file_s_path() {
    let files = json!({"git": {"repoURL": "https://github.com/org/repo", "revision": "HEAD", "files": [{"path": "config/**/*.json"}]}});
    let found = sets(false, files.clone()).expect("sets");
    assert_eq!(
        found,
        [flat(&[
            ("cluster.address", "https://eu"),
            ("cluster.size", "3"),
            ("path", "config/eu"),
            ("path.basename", "eu"),
            ("path.basenameNormalized", "eu"),
            ("path.filename", "config.json"),
            ("path.filenameNormalized", "config.json"),
            ("path[0]", "config"),
            ("path[1]", "eu"),
        ])]
    );
    let nested = sets(true, files).expect("sets");
    assert_eq!(nested[0]["cluster"], json!({"address": "https://eu", "size": 3}));
    assert_eq!(nested[0]["path"]["filename"], "config.json");
    let list = json!({"git": {"repoURL": "https://github.com/org/repo", "revision": "HEAD", "files": [{"path": "config/eu/*.yaml"}]}});
    assert_eq!(sets(false, list).expect("sets").len(), 2, "a YAML list gives a set per item");
}

#[test]
fn a_matrix_s_second_generator_uses_the_first_s_parameters() {
    let matrix = json!({"matrix": {"generators": [
        {"list": {"elements": [{"dir": "apps"}, {"dir": "config"}]}},
        {"git": {"repoURL": "https://github.com/org/repo", "revision": "HEAD", "directories": [{"path": "{{dir}}/*"}]}},
    ]}});
    let found = sets(false, matrix).expect("sets");
    let paths: Vec<&Value> = found.iter().map(|s| &s["path"]).collect();
    assert_eq!(paths, ["apps/Web_UI", "apps/api", "apps/legacy", "config/eu"]);
    assert!(found.iter().all(|s| s.contains_key("dir")));
    let clash = json!({"matrix": {"generators": [
        {"list": {"elements": [{"a": "1"}]}}, {"list": {"elements": [{"a": "2"}]}},
    ]}});
    let Err(Stop::Invalid(error)) = sets(false, clash) else { panic!("clash") };
    assert_eq!(error.to_string(), "spec.generators[0].matrix: both generators set a (\"1\" and \"2\")");
    let nested = json!({"matrix": {"generators": [
        {"clusters": {"selector": {"matchLabels": {"env": "prod"}}}},
        {"list": {"elements": [{"app": "web-{{ .nameNormalized }}"}]}},
    ]}});
    assert_eq!(sets(true, nested).expect("sets")[0]["app"], "web-prod-eu");
}

#[test]
fn a_merge_overrides_base_sets_by_keys_and_selectors_filter() {
    let merge = json!({"merge": {"mergeKeys": ["server"], "generators": [
        {"clusters": {"values": {"size": "s"}}},
        {"list": {"elements": [{"server": "https://eu.example", "values": {"size": "l"}}]}},
    ]}});
    let found = sets(false, merge).expect("sets");
    let sizes: Vec<(&Value, &Value)> = found.iter().map(|s| (&s["name"], &s["values.size"])).collect();
    assert_eq!(
        sizes,
        [(&json!("Prod_EU"), &json!("l")), (&json!("staging"), &json!("s")), (&json!("in-cluster"), &json!("s"))]
    );
    let selected = json!({"clusters": {}, "selector": {"matchExpressions": [{"key": "metadata.labels.env", "operator": "In", "values": ["prod"]}]}});
    assert_eq!(sets(false, selected).expect("sets").len(), 1);
}

#[test]
fn generators_bosun_does_not_evaluate_are_refused_by_name() {
    let cases = [
        (json!({"pullRequest": {"github": {}}}), "spec.generators[0].pullRequest"),
        (json!({"list": {"elements": [], "template": {"metadata": {}}}}), "spec.generators[0].list.template"),
        (json!({"list": {"elements": []}, "clusters": {}}), "spec.generators[0]"),
        (json!({"matrix": {"generators": [{"list": {"elements": []}}]}}), "spec.generators[0].matrix.generators"),
    ];
    for (value, field) in cases {
        let Err(Stop::Invalid(error)) = sets(false, value.clone()) else { panic!("{value}") };
        assert_eq!(error.field, field, "{value}");
    }
}
