//! A Flux `HelmRelease` read as the `Package` that does the same (pure): the chart (from a
//! `HelmRepository`, HTTP or OCI, an `OCIRepository`, or a path of a `GitRepository` or
//! `Bucket`), its values, release name and namespaces (the target one created when asked),
//! Helm's storage, post-renderers, waiting, remediation by rollback, dependencies, identity and
//! remote cluster — and the first field bosun cannot honour yet, by name. Objects carry Flux's `helm.toolkit.fluxcd.io/name` and `/namespace`
//! labels, as helm-controller stamps them.

use bosun_api::flux::ValuesSourceKind;
use bosun_api::flux::helm::HelmRelease;
use bosun_api::flux::source::{HelmRepository, OciRepository};
use bosun_api::package::{
    CommonMetadata, HelmChartSource, HelmSpec, HelmStorage, PackageSpec, PostRenderStrategy, RenderSpec, RollbackSpec,
    SourceReference, SourceSpec, ValuesKind, ValuesReference,
};
use bosun_api::{Interval, LocalObjectReference};

use crate::fetch::unsupported::{self, Unsupported};
use crate::flux::child;

/// The label naming the HelmRelease on what it applied (and on its Package).
pub(crate) const NAME_LABEL: &str = "helm.toolkit.fluxcd.io/name";
/// The label naming the HelmRelease's namespace on what it applied.
pub(crate) const NAMESPACE_LABEL: &str = "helm.toolkit.fluxcd.io/namespace";
/// How soon a `RetryOnFailure` strategy retries a failed action unless it says.
const RETRY_ON_FAILURE: Interval = Interval(std::time::Duration::from_secs(300));
/// Revisions Flux keeps in Helm's storage unless `maxHistory` says otherwise.
const FLUX_MAX_HISTORY: u32 = 5;

/// The object the chart comes from, as the reconciler found it.
#[derive(Debug, Clone)]
pub(crate) enum ChartOrigin {
    /// `chart.spec.sourceRef` names a `HelmRepository` (HTTP index or `type: oci`).
    HelmRepository(Box<HelmRepository>),
    /// `chartRef` names an `OCIRepository` holding the chart.
    OciRepository(Box<OciRepository>),
    /// `chart.spec.sourceRef` names a `GitRepository` or `Bucket`: the chart is a path in it.
    Artifact,
}

/// The kind of object the chart comes from and its reference, as the HelmRelease names it.
pub(crate) fn chart_source(release: &HelmRelease) -> Result<(String, String, Option<String>), Unsupported> {
    let spec = &release.spec;
    match (&spec.chart, &spec.chart_ref) {
        (Some(chart), None) => {
            let source = &chart.spec.source_ref;
            Ok((source.kind.clone(), source.name.clone(), source.namespace.clone()))
        }
        (None, Some(reference)) if reference.kind == "OCIRepository" => {
            Ok((reference.kind.clone(), reference.name.clone(), reference.namespace.clone()))
        }
        (None, Some(_)) => Err(Unsupported { field: "spec.chartRef.kind".into() }),
        _ => Err(Unsupported { field: "spec.chart".into() }),
    }
}

/// The release's name: `releaseName`, else `[<targetNamespace>-]<name>` (Flux's default).
pub(crate) fn release_name(release: &HelmRelease) -> String {
    let name = release.metadata.name.clone().unwrap_or_default();
    match (&release.spec.release_name, &release.spec.target_namespace) {
        (Some(given), _) => given.clone(),
        (None, Some(target)) => format!("{target}-{name}"),
        (None, None) => name,
    }
}

/// The namespace of the release's records in Helm's storage.
pub(crate) fn storage_namespace(release: &HelmRelease) -> String {
    release.spec.storage_namespace.clone().or_else(|| release.metadata.namespace.clone()).unwrap_or_default()
}

/// The Package doing what `release` asks, its chart coming from `origin`.
///
/// # Errors
/// The first field bosun cannot honour yet.
pub(crate) fn package_spec(release: &HelmRelease, origin: &ChartOrigin) -> Result<PackageSpec, Unsupported> {
    let spec = &release.spec;
    let install = spec.install.clone().unwrap_or_default();
    let upgrade = spec.upgrade.clone().unwrap_or_default();
    let upgrade_remediation = upgrade.remediation.clone().unwrap_or_default();
    let namespace = release.metadata.namespace.clone().unwrap_or_default();
    unsupported::refuse(&[
        ("spec.dependsOn.readyExpr", spec.depends_on.iter().any(|d| d.ready_expr.is_some())),
        ("spec.test.enable", spec.test.as_ref().is_some_and(|t| t.enable == Some(true))),
        ("spec.chart.spec.verify", spec.chart.as_ref().is_some_and(|c| c.spec.verify.is_some())),
        ("spec.install.replace", install.replace == Some(true)),
        ("spec.upgrade.preserveValues", upgrade.preserve_values == Some(true)),
        ("spec.upgrade.remediation.strategy", upgrade_remediation.strategy.as_deref().is_some_and(|s| s != "rollback")),
        ("spec.valuesFrom.targetPath", spec.values_from.iter().any(|v| v.target_path.is_some())),
        ("spec.kubeConfig.configMapRef", spec.kube_config.as_ref().is_some_and(|k| k.config_map_ref.is_some())),
    ])?;
    let (source, chart) = chart(release, origin)?;
    let post_render_strategy = match &spec.post_render_strategy {
        Some(strategy) => Some(
            serde_json::from_value::<PostRenderStrategy>(serde_json::json!(strategy))
                .map_err(|_| Unsupported { field: "spec.postRenderStrategy".into() })?,
        ),
        None => None,
    };
    let values_files = spec.chart.as_ref().map(|c| c.spec.values_files.clone()).unwrap_or_default();
    let helm = HelmSpec {
        chart,
        release_name: Some(release_name(release)),
        values: spec.values.clone(),
        values_files,
        values_from: spec
            .values_from
            .iter()
            .map(|from| ValuesReference {
                kind: match from.kind {
                    ValuesSourceKind::ConfigMap => ValuesKind::ConfigMap,
                    ValuesSourceKind::Secret => ValuesKind::Secret,
                },
                name: from.name.clone(),
                values_key: from.values_key.clone(),
                optional: from.optional == Some(true),
            })
            .collect(),
        skip_crds: install.skip_crds == Some(true) || install.crds.as_deref() == Some("Skip"),
        storage: Some(HelmStorage {
            namespace: Some(storage_namespace(release)),
            max_history: Some(spec.max_history.map_or(FLUX_MAX_HISTORY, |m| m.max(0) as u32)),
        }),
        post_renderers: spec.post_renderers.clone(),
        post_render_strategy,
        ..HelmSpec::default()
    };
    let mut common = spec.common_metadata.clone().unwrap_or_default();
    common.labels.insert(NAME_LABEL.into(), release.metadata.name.clone().unwrap_or_default());
    common.labels.insert(NAMESPACE_LABEL.into(), namespace);
    // Flux remediates a failed upgrade only when asked (retries, or the last failure), and
    // never under `RetryOnFailure`, which retries every `retryInterval` (5m) instead.
    let retrying = [&install.strategy, &upgrade.strategy].map(|s| {
        s.as_ref().filter(|s| s.name == "RetryOnFailure").map(|s| s.retry_interval.unwrap_or(RETRY_ON_FAILURE))
    });
    let remediate = retrying[1].is_none()
        && (upgrade_remediation.retries.is_some_and(|r| r != 0)
            || upgrade_remediation.remediate_last_failure == Some(true));
    let disable_wait = install.disable_wait == Some(true) || upgrade.disable_wait == Some(true);
    Ok(PackageSpec {
        source: Some(source),
        render: Some(RenderSpec::Helm(Box::new(helm))),
        target_namespace: spec.target_namespace.clone(),
        // Only a target namespace is created, as Flux: the HelmRelease's own exists.
        create_namespace: (install.create_namespace == Some(true) && spec.target_namespace.is_some()).then_some(true),
        common_metadata: Some(CommonMetadata { labels: common.labels, annotations: common.annotations }),
        prune: Some(true),
        // Helm's `--force`: objects replaced when a change cannot be patched.
        force: upgrade.force,
        health_check_exprs: spec.health_check_exprs.clone(),
        wait: Some(!disable_wait),
        timeout: spec.timeout.or(upgrade.timeout).or(install.timeout),
        interval: Some(spec.interval),
        depends_on: child::depends_on(&spec.depends_on),
        suspend: spec.suspend,
        service_account_name: spec.service_account_name.clone(),
        rollback: remediate.then_some(RollbackSpec { on_failure: true, keep: None }),
        retry_interval: retrying[1].or(retrying[0]),
        kube_config: child::kube_config(spec.kube_config.as_ref()),
        ..PackageSpec::default()
    })
}

/// Whether `insecure` (plain HTTP to the registry of `url`) asks what bosun cannot do: it
/// speaks plain HTTP to loopback registries only (as Docker), and TLS to the others.
fn plain_http_refused(url: &str, insecure: Option<bool>) -> bool {
    let authority = url.trim_start_matches("oci://").split('/').next().unwrap_or_default();
    let host = match authority.strip_prefix('[') {
        Some(bracketed) => bracketed.split(']').next().unwrap_or_default(),
        None => authority.split(':').next().unwrap_or_default(),
    };
    let loopback =
        host.eq_ignore_ascii_case("localhost") || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback());
    insecure == Some(true) && !loopback
}

/// Where the chart comes from, and its path in the source.
fn chart(release: &HelmRelease, origin: &ChartOrigin) -> Result<(SourceSpec, String), Unsupported> {
    let namespace = release.metadata.namespace.as_deref();
    let unsupported = |field: &str| Unsupported { field: field.into() };
    match origin {
        ChartOrigin::HelmRepository(repository) => {
            let template = release.spec.chart.as_ref().ok_or_else(|| unsupported("spec.chart"))?;
            let repo = &repository.spec;
            let oci = repo.type_.as_deref() == Some("oci");
            unsupported::refuse(&[
                ("HelmRepository spec.provider", oci && repo.provider.as_deref().is_some_and(|p| p != "generic")),
                ("HelmRepository spec.certSecretRef", repo.cert_secret_ref.is_some()),
                // bosun sends a repository's credentials to its own host only.
                ("HelmRepository spec.passCredentials", !oci && repo.pass_credentials == Some(true)),
                ("HelmRepository spec.insecure", oci && plain_http_refused(&repo.url, repo.insecure)),
                // Its Secret is read beside the Package, in the HelmRelease's namespace.
                (
                    "spec.chart.spec.sourceRef.namespace",
                    repo.secret_ref.is_some() && repository.metadata.namespace.as_deref() != namespace,
                ),
            ])?;
            let version = template.spec.version.clone().filter(|v| v != "*" && !v.is_empty());
            let source = HelmChartSource {
                url: repo.url.clone(),
                chart: template.spec.chart.clone(),
                version,
                secret_ref: repo.secret_ref.as_ref().map(|r| LocalObjectReference { name: r.name.clone() }),
                timeout: repo.timeout,
            };
            Ok((SourceSpec { helm: Some(source), ..SourceSpec::default() }, ".".into()))
        }
        ChartOrigin::OciRepository(repository) => {
            let repo = &repository.spec;
            let reference = repo.reference.clone().unwrap_or_default();
            unsupported::refuse(&[
                ("OCIRepository spec.provider", repo.provider.as_deref().is_some_and(|p| p != "generic")),
                ("OCIRepository spec.verify", repo.verify.is_some()),
                ("OCIRepository spec.certSecretRef", repo.cert_secret_ref.is_some()),
                ("OCIRepository spec.ref.digest", reference.digest.is_some()),
                ("OCIRepository spec.ref.semverFilter", reference.semver_filter.is_some()),
                ("OCIRepository spec.insecure", plain_http_refused(&repo.url, repo.insecure)),
                (
                    "spec.chartRef.namespace",
                    repo.secret_ref.is_some() && repository.metadata.namespace.as_deref() != namespace,
                ),
            ])?;
            // `oci://host/charts/web` is the chart `web` of the repository `oci://host/charts`.
            let (url, chart) = repo.url.rsplit_once('/').ok_or_else(|| unsupported("OCIRepository spec.url"))?;
            let source = HelmChartSource {
                url: url.to_string(),
                chart: chart.to_string(),
                // Flux's precedence: a semver range over a tag.
                version: reference.semver.or(reference.tag),
                secret_ref: repo.secret_ref.as_ref().map(|r| LocalObjectReference { name: r.name.clone() }),
                timeout: repo.timeout,
            };
            Ok((SourceSpec { helm: Some(source), ..SourceSpec::default() }, ".".into()))
        }
        ChartOrigin::Artifact => {
            let template = release.spec.chart.as_ref().ok_or_else(|| unsupported("spec.chart"))?;
            let source = &template.spec.source_ref;
            let reference = SourceReference {
                api_version: source.api_version.clone(),
                kind: source.kind.clone(),
                name: source.name.clone(),
                namespace: source.namespace.clone(),
            };
            let path = template.spec.chart.trim_start_matches("./");
            let path = if path.is_empty() { "." } else { path };
            Ok((SourceSpec { source_ref: Some(reference), ..SourceSpec::default() }, path.to_string()))
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn helm_release(spec: Value) -> HelmRelease {
        serde_json::from_value(json!({
            "apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
            "metadata": {"name": "podinfo", "namespace": "flux-system"}, "spec": spec,
        }))
        .expect("HelmRelease")
    }

    fn from_repository(extra: Value) -> Value {
        let mut spec = json!({
            "interval": "10m",
            "chart": {"spec": {"chart": "podinfo", "version": "6.x",
                               "sourceRef": {"kind": "HelmRepository", "name": "podinfo"}}},
        });
        for (k, v) in extra.as_object().expect("object") {
            spec[k] = v.clone();
        }
        spec
    }

    fn repository(spec: Value, namespace: &str) -> ChartOrigin {
        let repository = serde_json::from_value(json!({
            "apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "HelmRepository",
            "metadata": {"name": "podinfo", "namespace": namespace}, "spec": spec,
        }))
        .expect("HelmRepository");
        ChartOrigin::HelmRepository(Box::new(repository))
    }

    fn helm(spec: &PackageSpec) -> &HelmSpec {
        match spec.render.as_ref() {
            Some(RenderSpec::Helm(helm)) => helm,
            other => panic!("not helm: {other:?}"),
        }
    }

    #[test]
    fn a_release_from_a_helm_repository_is_a_chart_source_with_flux_s_defaults() {
        let origin =
            repository(json!({"url": "https://charts.example.com", "secretRef": {"name": "auth"}}), "flux-system");
        let values = json!({"replicaCount": 2});
        let release = helm_release(from_repository(json!({
            "targetNamespace": "apps", "values": values,
            "valuesFrom": [{"kind": "Secret", "name": "prod", "valuesKey": "v.yaml", "optional": true}],
            "upgrade": {"remediation": {"retries": 2}},
            "dependsOn": [{"name": "redis"}],
        })));
        let spec = package_spec(&release, &origin).expect("translated");
        let source = spec.source.as_ref().and_then(|s| s.helm.as_ref()).expect("chart source");
        assert_eq!((source.url.as_str(), source.chart.as_str()), ("https://charts.example.com", "podinfo"));
        assert_eq!(source.version.as_deref(), Some("6.x"));
        assert_eq!(source.secret_ref.as_ref().map(|r| r.name.as_str()), Some("auth"));
        let helm = helm(&spec);
        assert_eq!(helm.release_name.as_deref(), Some("apps-podinfo"), "Flux's default name");
        assert_eq!(helm.values.as_ref(), Some(&values));
        assert_eq!(helm.values_from[0].key(), "v.yaml");
        assert!(helm.values_from[0].optional);
        let storage = helm.storage.as_ref().expect("storage");
        assert_eq!((storage.namespace.as_deref(), storage.max_history), (Some("flux-system"), Some(5)));
        assert_eq!(spec.target_namespace.as_deref(), Some("apps"));
        assert_eq!(spec.wait, Some(true));
        assert_eq!(spec.rollback.as_ref().map(|r| r.on_failure), Some(true));
        assert_eq!(spec.depends_on[0].name, "redis");
        let labels = &spec.common_metadata.as_ref().expect("metadata").labels;
        assert_eq!(labels[NAME_LABEL], "podinfo");
        assert_eq!(labels[NAMESPACE_LABEL], "flux-system");
    }

    #[test]
    fn retry_on_failure_retries_at_its_interval_without_remediation() {
        let origin = repository(json!({"url": "https://charts.example.com"}), "flux-system");
        let retries = json!({"retries": 2});
        for (install, upgrade, rollback, retry) in [
            (json!({}), json!({"remediation": retries}), true, None),
            (
                json!({"strategy": {"name": "RetryOnFailure"}}),
                json!({"strategy": {"name": "RetryOnFailure"}, "remediation": retries}),
                false,
                Some(300),
            ),
            (json!({}), json!({"strategy": {"name": "RetryOnFailure", "retryInterval": "1m"}}), false, Some(60)),
            (
                json!({"strategy": {"name": "RetryOnFailure", "retryInterval": "2m"}}),
                json!({"remediation": retries}),
                true,
                Some(120),
            ),
            (
                json!({"strategy": {"name": "RemediateOnFailure"}}),
                json!({"strategy": {"name": "RemediateOnFailure"}, "remediation": retries}),
                true,
                None,
            ),
        ] {
            let release = helm_release(from_repository(json!({"install": install, "upgrade": upgrade})));
            let spec = package_spec(&release, &origin).expect("translated");
            assert_eq!(spec.rollback.is_some(), rollback, "{install} {upgrade}");
            assert_eq!(spec.retry_interval.map(|i| i.0.as_secs()), retry, "{install} {upgrade}");
        }
    }

    #[test]
    fn charts_from_oci_and_git_sources() {
        let oci: OciRepository = serde_json::from_value(json!({
            "apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "OCIRepository",
            "metadata": {"name": "podinfo", "namespace": "flux-system"},
            "spec": {"interval": "5m", "url": "oci://ghcr.io/stefanprodan/charts/podinfo", "ref": {"semver": ">=6.0.0"}},
        }))
        .expect("OCIRepository");
        let release = helm_release(json!({"interval": "5m", "chartRef": {"kind": "OCIRepository", "name": "podinfo"}}));
        let spec = package_spec(&release, &ChartOrigin::OciRepository(Box::new(oci))).expect("translated");
        let source = spec.source.as_ref().and_then(|s| s.helm.as_ref()).expect("chart source");
        assert_eq!(source.url, "oci://ghcr.io/stefanprodan/charts");
        assert_eq!((source.chart.as_str(), source.version.as_deref()), ("podinfo", Some(">=6.0.0")));
        let both = json!({"interval": "5m", "url": "oci://127.0.0.1:5000/charts/web", "insecure": true,
                          "ref": {"tag": "1.0.0", "semver": "^2.0.0"}});
        let both: OciRepository = serde_json::from_value(json!({
            "apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "OCIRepository",
            "metadata": {"name": "web", "namespace": "default"}, "spec": both,
        }))
        .expect("OCIRepository");
        let spec = package_spec(&release, &ChartOrigin::OciRepository(Box::new(both))).expect("insecure on loopback");
        let source = spec.source.as_ref().and_then(|s| s.helm.as_ref()).expect("chart source");
        assert_eq!(source.version.as_deref(), Some("^2.0.0"), "semver takes precedence over tag, as in Flux");
        assert_eq!(helm(&spec).release_name.as_deref(), Some("podinfo"));
        assert_eq!(spec.rollback, None, "no remediation unless asked");

        let release = helm_release(json!({
            "interval": "5m", "releaseName": "web", "storageNamespace": "helm", "maxHistory": 0,
            "install": {"disableWait": true},
            "chart": {"spec": {"chart": "./charts/web", "sourceRef": {"kind": "GitRepository", "name": "fleet"}}},
        }));
        let spec = package_spec(&release, &ChartOrigin::Artifact).expect("translated");
        let reference = spec.source.as_ref().and_then(|s| s.source_ref.as_ref()).expect("sourceRef");
        assert_eq!((reference.kind.as_str(), reference.name.as_str()), ("GitRepository", "fleet"));
        let helm = helm(&spec);
        assert_eq!((helm.chart.as_str(), helm.release_name.as_deref()), ("charts/web", Some("web")));
        let storage = helm.storage.as_ref().expect("storage");
        assert_eq!((storage.namespace.as_deref(), storage.max_history), (Some("helm"), Some(0)));
        assert_eq!(spec.wait, Some(false));
    }

    #[test]
    fn post_renderers_and_the_created_namespace_are_the_package_s() {
        let origin = repository(json!({"url": "https://charts.example.com"}), "flux-system");
        let renderers = json!([
            {"kustomize": {"patches": [{"patch": "- op: add\n  path: /x\n  value: 1\n", "target": {"kind": "ConfigMap"}}]}},
            {"kustomize": {"images": [{"name": "nginx", "newTag": "1.27"}]}},
        ]);
        // (the HelmRelease's fields, the post-render strategy, the namespace created)
        let cases = [
            (json!({}), None, None),
            (json!({"postRenderers": renderers}), None, None),
            (
                json!({"postRenderers": renderers, "postRenderStrategy": "nohooks"}),
                Some(PostRenderStrategy::NoHooks),
                None,
            ),
            (json!({"postRenderStrategy": "separate"}), Some(PostRenderStrategy::Separate), None),
            (json!({"install": {"createNamespace": true}, "targetNamespace": "apps"}), None, Some(true)),
            // Its own namespace exists: nothing to create, as Flux.
            (json!({"install": {"createNamespace": true}}), None, None),
            (json!({"install": {"createNamespace": false}, "targetNamespace": "apps"}), None, None),
        ];
        for (extra, strategy, create_namespace) in cases {
            let release = helm_release(from_repository(extra.clone()));
            let spec = package_spec(&release, &origin).expect("translated");
            let helm = helm(&spec);
            assert_eq!(helm.post_renderers, release.spec.post_renderers, "{extra}");
            assert_eq!(helm.post_render_strategy, strategy, "{extra}");
            assert_eq!(spec.create_namespace, create_namespace, "{extra}");
        }
    }

    #[test]
    fn fields_bosun_cannot_honour_are_refused_by_name() {
        let origin = repository(json!({"url": "https://charts.example.com"}), "flux-system");
        let cases = [
            (json!({"test": {"enable": true}}), "spec.test.enable"),
            (json!({"postRenderStrategy": "later"}), "spec.postRenderStrategy"),
            (
                json!({"upgrade": {"remediation": {"retries": 1, "strategy": "uninstall"}}}),
                "spec.upgrade.remediation.strategy",
            ),
            (
                json!({"valuesFrom": [{"kind": "ConfigMap", "name": "a", "targetPath": "x.y"}]}),
                "spec.valuesFrom.targetPath",
            ),
        ];
        for (extra, field) in cases {
            let error = package_spec(&helm_release(from_repository(extra)), &origin).expect_err(field);
            assert_eq!(error.field, field);
        }
        // A Secret of a repository in another namespace would be read in the wrong one.
        let elsewhere = repository(json!({"url": "https://charts.example.com", "secretRef": {"name": "a"}}), "charts");
        let error = package_spec(&helm_release(from_repository(json!({}))), &elsewhere).expect_err("namespace");
        assert_eq!(error.field, "spec.chart.spec.sourceRef.namespace");
        let repository_cases = [
            (json!({"url": "https://c.example.com", "passCredentials": true}), "HelmRepository spec.passCredentials"),
            (json!({"url": "oci://ghcr.io/org", "type": "oci", "insecure": true}), "HelmRepository spec.insecure"),
            (json!({"url": "oci://ghcr.io/org", "type": "oci", "provider": "aws"}), "HelmRepository spec.provider"),
        ];
        for (spec, field) in repository_cases {
            let origin = repository(spec, "flux-system");
            let error = package_spec(&helm_release(from_repository(json!({}))), &origin).expect_err(field);
            assert_eq!(error.field, field);
        }
        // Read for OCI registries only, as Flux; plain HTTP is what bosun speaks to loopback.
        for spec in [
            json!({"url": "https://c.example.com", "provider": "aws", "insecure": true}),
            json!({"url": "oci://127.0.0.1:5000/charts", "type": "oci", "insecure": true}),
        ] {
            let origin = repository(spec.clone(), "flux-system");
            assert!(package_spec(&helm_release(from_repository(json!({}))), &origin).is_ok(), "{spec}");
        }
        let release = helm_release(json!({"interval": "5m", "chartRef": {"kind": "HelmChart", "name": "podinfo"}}));
        assert_eq!(chart_source(&release).expect_err("kind").field, "spec.chartRef.kind");
    }
}
