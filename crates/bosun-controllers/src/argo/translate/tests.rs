use serde_json::json;

use super::*;

fn application(spec: Value) -> (Application, Value) {
    let raw = json!({
        "apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
        "metadata": {"name": "guestbook", "namespace": "argocd", "finalizers": ["resources-finalizer.argocd.argoproj.io"]},
        "spec": spec,
    });
    (serde_json::from_value(raw.clone()).expect("Application"), raw)
}

fn base() -> Value {
    json!({
        "project": "default",
        "source": {"repoURL": "https://github.com/argoproj/argocd-example-apps.git", "targetRevision": "HEAD", "path": "guestbook"},
        "destination": {"server": "https://kubernetes.default.svc", "namespace": "guestbook"},
        "syncPolicy": {"automated": {"prune": true, "selfHeal": true}},
    })
}

fn with(pointer: &str, value: Value) -> Value {
    let mut spec = base();
    let (parent, field) = pointer.rsplit_once('/').expect("pointer");
    let target = if parent.is_empty() { &mut spec } else { spec.pointer_mut(parent).expect("parent") };
    target[field] = value;
    spec
}

fn translated(spec: Value) -> Result<Translated, TranslateError> {
    let (application, raw) = application(spec);
    package_spec(&application, &raw, None)
}

#[test]
fn a_git_directory_application_becomes_a_package_of_the_same_repository_path_and_namespace() {
    let translated = translated(base()).expect("translated");
    let spec = translated.spec;
    let source = spec.source.expect("source");
    let git = source.git.expect("git");
    assert_eq!((git.url.as_str(), git.reference), ("https://github.com/argoproj/argocd-example-apps.git", None));
    assert_eq!(source.path.as_deref(), Some("guestbook"));
    assert_eq!(source.ignore.as_deref(), None, "no directory options: the directory as bosun reads it");
    assert_eq!(spec.default_namespace.as_deref(), Some("guestbook"));
    assert_eq!(spec.target_namespace, None, "objects naming a namespace keep it, as in Argo CD");
    assert_eq!((spec.prune, spec.wait), (Some(true), Some(true)));
    assert_eq!(spec.deletion_policy, Some(DeletionPolicy::Delete), "the resources finalizer cascades");
    let labels = spec.common_metadata.expect("metadata").labels;
    assert_eq!(labels.get("app.kubernetes.io/instance").map(String::as_str), Some("guestbook"));
    assert!(translated.differences.is_empty(), "{:?}", translated.differences);
}

#[test]
fn target_revisions_are_commits_ranges_tags_or_branches() {
    let commit = "0123456789abcdef0123456789abcdef01234567";
    let cases = [
        (commit, GitReference { commit: Some(commit.into()), ..GitReference::default() }),
        ("1.2.*", GitReference { semver: Some("1.2.*".into()), ..GitReference::default() }),
        (">=1.0.0 <2.0.0", GitReference { semver: Some(">=1.0.0 <2.0.0".into()), ..GitReference::default() }),
        ("v1.2.0", GitReference { tag: Some("v1.2.0".into()), ..GitReference::default() }),
        ("main", GitReference { branch: Some("main".into()), ..GitReference::default() }),
        ("release-1.0", GitReference { branch: Some("release-1.0".into()), ..GitReference::default() }),
    ];
    for (revision, expected) in cases {
        assert_eq!(git_reference(revision), expected, "{revision}");
    }
    for head in ["HEAD", ""] {
        let spec = translated(with("/source/targetRevision", json!(head))).expect(head).spec;
        assert_eq!(spec.source.and_then(|s| s.git).and_then(|g| g.reference), None, "{head:?}: the remote's HEAD");
    }
}

#[test]
fn helm_options_become_the_helm_renderer_and_a_chart_repository_a_helm_source() {
    let spec = with(
        "/source",
        json!({
            "repoURL": "https://charts.example.com", "chart": "guestbook", "targetRevision": "1.2.*",
            "helm": {
                "valueFiles": ["values-prod.yaml"], "values": "replicas: 2\n", "releaseName": "gb", "skipCrds": true,
                "parameters": [{"name": "image.tag", "value": "v2"}, {"name": "port", "value": "80", "forceString": true}],
                "fileParameters": [{"name": "config", "path": "files/config.json"}],
            },
        }),
    );
    let package = translated(spec).expect("translated").spec;
    let helm = package.source.and_then(|s| s.helm).expect("helm source");
    assert_eq!(
        (helm.url.as_str(), helm.chart.as_str(), helm.version.as_deref()),
        ("https://charts.example.com", "guestbook", Some("1.2.*"))
    );
    let Some(RenderSpec::Helm(render)) = package.render else { panic!("helm renderer") };
    assert_eq!(render.release_name.as_deref(), Some("gb"));
    assert_eq!(render.values, Some(json!({"replicas": 2})));
    assert_eq!(
        (render.set.clone(), render.set_string.clone()),
        (vec!["image.tag=v2".to_string()], vec!["port=80".to_string()])
    );
    assert_eq!(render.set_file, ["config=files/config.json"]);
    assert!(render.skip_crds);
    let object = with("/source/helm", json!({"values": "a: 1", "valuesObject": {"a": 2}}));
    let Some(RenderSpec::Helm(render)) = translated(object).expect("translated").spec.render else { panic!("helm") };
    assert_eq!(render.values, Some(json!({"a": 2})), "valuesObject wins");
    assert_eq!(render.release_name.as_deref(), Some("guestbook"), "the application's name by default");
}

#[test]
fn kustomize_options_become_the_overlay() {
    let spec = with(
        "/source/kustomize",
        json!({
            "namePrefix": "prod-", "nameSuffix": "-v2", "commonLabels": {"team": "a"}, "components": ["../c"],
            "images": ["nginx:1.27", "app=registry.example.com:5000/app:v2@sha256:abc"],
            "patches": [{"patch": "- op: remove\n  path: /x", "target": {"kind": "Deployment"}}],
        }),
    );
    let Some(RenderSpec::Kustomize(render)) = translated(spec).expect("translated").spec.render else {
        panic!("kustomize")
    };
    assert_eq!((render.name_prefix.as_deref(), render.name_suffix.as_deref()), (Some("prod-"), Some("-v2")));
    assert_eq!(render.common_labels.get("team").map(String::as_str), Some("a"));
    assert_eq!(
        render.images[0],
        Image { name: "nginx".into(), new_name: None, new_tag: Some("1.27".into()), digest: None }
    );
    assert_eq!(
        render.images[1],
        Image {
            name: "app".into(),
            new_name: Some("registry.example.com:5000/app".into()),
            new_tag: Some("v2".into()),
            digest: Some("sha256:abc".into()),
        }
    );
    assert_eq!((render.patches.len(), render.components.len()), (1, 1));
}

#[test]
fn directory_options_become_ignore_lines_and_jsonnet_variables() {
    let spec = with("/source/directory", json!({"include": "{*.yaml,*.yml}", "exclude": "secret.yaml"}));
    let source = translated(spec).expect("translated").spec.source.expect("source");
    assert_eq!(
        source.ignore.as_deref(),
        Some("/guestbook/*/\n/guestbook/**/*.*\n!/guestbook/*.yaml\n!/guestbook/*.yml\n/guestbook/secret.yaml")
    );
    let spec = with("/source/directory", json!({"recurse": true}));
    assert_eq!(translated(spec).expect("recurse").spec.source.and_then(|s| s.ignore), None);
    let jsonnet = json!({"jsonnet": {"extVars": [{"name": "env", "value": "prod"}, {"name": "n", "value": "1+1", "code": true}], "tlas": [{"name": "replicas", "value": "3", "code": true}], "libs": ["vendor"]}});
    let Some(RenderSpec::Jsonnet(render)) =
        translated(with("/source/directory", jsonnet)).expect("jsonnet").spec.render
    else {
        panic!("jsonnet")
    };
    assert_eq!(render.ext_vars.get("env"), Some(&json!("prod")));
    assert_eq!(render.ext_code.get("n").map(String::as_str), Some("1+1"));
    assert_eq!(render.tla_code.get("replicas").map(String::as_str), Some("3"));
    assert_eq!(render.jpath, ["vendor"]);
}

#[test]
fn sync_options_and_retry() {
    let spec =
        with("/syncPolicy/syncOptions", json!(["CreateNamespace=true", "ServerSideApply=true", "PruneLast=true"]));
    let package = translated(spec).expect("translated").spec;
    assert_eq!((package.create_namespace, package.sync_options.len()), (Some(true), 0));
    let spec =
        with("/syncPolicy/syncOptions", json!(["Prune=false", "Replace=true", "Validate=false", "PruneLast=true"]));
    let package = translated(spec).expect("translated").spec;
    assert_eq!(package.sync_options, ["Prune=false", "Replace=true", "Validate=false"], "each object's");
    let spec =
        with("/syncPolicy/retry", json!({"limit": 5, "backoff": {"duration": "5s", "factor": 2, "maxDuration": "3m"}}));
    let translated = translated(spec).expect("translated");
    assert_eq!(translated.spec.retry_interval.map(|i| i.0.as_secs()), Some(180));
    assert_eq!(translated.differences.len(), 1, "the limit is reported: {:?}", translated.differences);
}

#[test]
fn without_the_finalizer_objects_are_kept_and_self_heal_off_is_reported() {
    let mut spec = base();
    spec["syncPolicy"]["automated"] = json!({"prune": false});
    let (mut application, raw) = application(spec);
    application.metadata.finalizers = None;
    let translated = package_spec(&application, &raw, None).expect("translated");
    assert_eq!(translated.spec.deletion_policy, Some(DeletionPolicy::Orphan));
    assert_eq!(translated.spec.prune, Some(false));
    assert!(
        translated.differences[0].starts_with("spec.syncPolicy.automated.selfHeal is off"),
        "{:?}",
        translated.differences
    );
}

#[test]
fn every_field_bosun_cannot_honour_is_named() {
    let source = base()["source"].clone();
    let cases = [
        (with("/sources", json!([source])), "spec.sources"),
        (
            with("/ignoreDifferences", json!([{"kind": "Deployment", "jsonPointers": ["/spec/replicas"]}])),
            "spec.ignoreDifferences",
        ),
        (with("/destination/server", json!("https://prod.example.com")), "spec.destination.server"),
        (with("/destination", json!({"name": "prod", "namespace": "a"})), "spec.destination.name"),
        (with("/syncPolicy/automated/allowEmpty", json!(true)), "spec.syncPolicy.automated.allowEmpty"),
        (with("/syncPolicy/syncOptions", json!(["Retry=forever"])), "spec.syncPolicy.syncOptions Retry=forever"),
        (with("/source/plugin", json!({"name": "cmp"})), "spec.source.plugin"),
        (with("/source/helm", json!({"passCredentials": true})), "spec.source.helm.passCredentials"),
        (with("/source/kustomize", json!({"replicas": [{"name": "a", "count": 2}]})), "spec.source.kustomize.replicas"),
        (with("/source/newField", json!("x")), "spec.source.newField"),
        (with("/sourceHydrator", json!({"drySource": {"repoURL": "x"}})), "spec.sourceHydrator"),
    ];
    for (spec, field) in cases {
        match translated(spec) {
            Err(TranslateError::Unsupported { field: named, .. }) => assert_eq!(named, field),
            other => panic!("{field}: {other:?}"),
        }
    }
    let both = with("/destination", json!({"server": "https://kubernetes.default.svc", "name": "in-cluster"}));
    assert!(matches!(translated(both), Err(TranslateError::Invalid { .. })));
    let mut spec = base();
    spec.as_object_mut().expect("object").remove("source");
    assert!(matches!(translated(spec), Err(TranslateError::Invalid { field, .. }) if field == "spec.source"));
}

#[test]
fn background_cascading_deletion_is_refused_by_name() {
    let (mut application, raw) = application(base());
    application.metadata.finalizers = Some(vec!["resources-finalizer.argocd.argoproj.io/background".into()]);
    match package_spec(&application, &raw, None) {
        Err(TranslateError::Unsupported { field, .. }) => assert_eq!(field, "metadata.finalizers"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn without_automated_sync_an_application_is_compared_until_a_sync_is_asked_for() {
    for spec in [with("/syncPolicy", json!({})), with("/syncPolicy/automated/enabled", json!(false))] {
        let (application, raw) = application(spec);
        let compared = package_spec(&application, &raw, None).expect("translated").spec;
        assert_eq!((compared.compare_only, compared.prune), (Some(true), Some(false)));
        let sync = sync_operation(&json!({
            "initiatedBy": {"username": "admin"},
            "sync": {"revision": "v1.2.0", "prune": true, "syncOptions": ["CreateNamespace=true"]},
        }))
        .expect("a sync");
        let synced = package_spec(&application, &raw, Some(&sync)).expect("translated").spec;
        assert_eq!((synced.compare_only, synced.prune, synced.create_namespace), (None, Some(true), Some(true)));
        let reference = synced.source.and_then(|s| s.git).and_then(|g| g.reference).and_then(|r| r.tag);
        assert_eq!(reference.as_deref(), Some("v1.2.0"), "the operation's revision");
    }
}

#[test]
fn an_operation_bosun_cannot_run_is_refused_by_name() {
    let cases = [
        (json!({"sync": {"dryRun": true}}), "operation.sync.dryRun"),
        (json!({"sync": {"resources": [{"kind": "Deployment", "name": "a"}]}}), "operation.sync.resources"),
        (json!({"sync": {"syncStrategy": {"apply": {"force": true}}}}), "operation.sync.syncStrategy.apply"),
    ];
    for (operation, field) in cases {
        match sync_operation(&operation) {
            Err(TranslateError::Unsupported { field: named, .. }) => assert_eq!(named, field),
            other => panic!("{field}: {other:?}"),
        }
    }
    assert!(matches!(sync_operation(&json!({"initiatedBy": {"username": "a"}})), Err(TranslateError::Invalid { .. })));
    assert!(sync_operation(&json!({"sync": {"syncStrategy": {"hook": {}}}})).is_ok());
}
