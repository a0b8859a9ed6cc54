//! What a real cluster needs to run `bosun controller` (`bosun install`): the CRDs, a
//! namespace, a ServiceAccount bound to `cluster-admin` (the controller applies whatever
//! Packages hold, as Flux's kustomize-controller does; tenants are confined by
//! `serviceAccountName` / `--default-service-account`), and a Deployment with leader election,
//! probes, a metrics port, a source cache and a locked-down security context, and a Service for
//! the Receivers' webhooks (`http://<service>/hook/…`; expose it with an Ingress of your own).
//! With shards, a Deployment and a Service for each shard beside the unsharded controller's,
//! all with the one ServiceAccount.

use serde_json::{Value, json};

use crate::shard;

/// What `bosun install` prints.
#[derive(Debug, Clone)]
pub struct InstallOptions {
    /// Namespace of the controller.
    pub namespace: String,
    /// Container image.
    pub image: String,
    /// Packages reconciled at once.
    pub concurrency: u16,
    /// Only Packages whose labels match (one installation per selector).
    pub watch_label_selector: Option<String>,
    /// Shard controllers beside the unsharded one: `shard-0` … `shard-{N-1}`, each reconciling
    /// the objects labelled `bosun.dev/shard: shard-I` ([`shard_names`]).
    pub shards: u16,
    /// Apply as this ServiceAccount when a Package names none.
    pub default_service_account: Option<String>,
    /// Flux's multi-tenancy lockdown: cross-namespace references refused, and Packages that
    /// name no ServiceAccount apply as `default` of their namespace unless another default is
    /// given. (Exec renderers, remote bases and local sources are off in any installation.)
    pub multi_tenant: bool,
    /// Flux's CRDs too (`GitRepository`, `OCIRepository`, `HelmRepository`, `Bucket`,
    /// `Kustomization`, `HelmRelease`), for a cluster that has no Flux installed, and the
    /// controller started with `--flux` to reconcile them.
    pub flux: bool,
    /// Argo CD's CRDs too (`Application`, `AppProject`), and the controller started with
    /// `--argo` to reconcile Applications.
    pub argo: bool,
}

/// The image of this version.
pub fn default_image() -> String {
    format!("ghcr.io/bosun-dev/bosun:v{}", env!("CARGO_PKG_VERSION"))
}

/// The port of `/metrics`, `/healthz` and `/readyz` in the pod.
const METRICS_PORT: u16 = 8080;
/// The port of the Receivers' webhooks in the pod.
const WEBHOOK_PORT: u16 = 9292;

/// The CRDs to apply: bosun's, then Flux's and Argo CD's when asked for, as objects with
/// their kind.
pub fn crd_manifests(flux: bool, argo: bool) -> Vec<Value> {
    let flux_crds = if flux { bosun_api::flux::crds() } else { Vec::new() };
    let argo_crds = if argo { bosun_api::argo::crds() } else { Vec::new() };
    bosun_api::crds().iter().chain(&flux_crds).chain(&argo_crds).map(crd_value).collect()
}

/// A CRD with its `apiVersion` and `kind`.
fn crd_value(
    crd: &k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
) -> Value {
    let mut value = serde_json::to_value(crd).unwrap_or_default();
    value["apiVersion"] = json!("apiextensions.k8s.io/v1");
    value["kind"] = json!("CustomResourceDefinition");
    value
}

/// Everything to apply, CRDs first.
pub fn manifests(options: &InstallOptions) -> Vec<Value> {
    let mut objects = crd_manifests(options.flux, options.argo);
    let namespace = options.namespace.as_str();
    let selector = options.watch_label_selector.as_deref();
    let account = shard::lease_name(None, selector);
    objects.push(json!({
        "apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": namespace, "labels": {"app.kubernetes.io/name": "bosun"}},
    }));
    let account_labels = labels(&account);
    objects.push(json!({
        "apiVersion": "v1", "kind": "ServiceAccount",
        "metadata": {"name": account, "namespace": namespace, "labels": account_labels},
    }));
    objects.push(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": account, "labels": account_labels},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
    }));
    let shards = std::iter::once(None).chain(shard_names(options.shards).into_iter().map(Some));
    for shard in shards {
        // Named as its Lease: shards and selectors install side by side.
        let name = shard::lease_name(shard.as_deref(), selector);
        let labels = labels(&name);
        objects.push(deployment(options, shard.as_deref(), &name, &account, &labels));
        objects.push(json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": format!("{name}-webhook"), "namespace": namespace, "labels": labels},
            "spec": {
                "selector": {"app.kubernetes.io/instance": name},
                "ports": [{"name": "http-webhook", "port": 80, "targetPort": "http-webhook", "protocol": "TCP"}],
            },
        }));
    }
    objects
}

/// The shards `bosun install --shards N` installs: `shard-0` … `shard-{N-1}`.
pub fn shard_names(count: u16) -> Vec<String> {
    (0..count).map(|index| format!("shard-{index}")).collect()
}

fn labels(instance: &str) -> Value {
    json!({"app.kubernetes.io/name": "bosun", "app.kubernetes.io/component": "controller", "app.kubernetes.io/instance": instance})
}

fn deployment(options: &InstallOptions, shard: Option<&str>, name: &str, account: &str, labels: &Value) -> Value {
    let mut args = vec![
        "controller".to_string(),
        "--leader-elect".to_string(),
        format!("--metrics-addr=0.0.0.0:{METRICS_PORT}"),
        format!("--webhook-addr=0.0.0.0:{WEBHOOK_PORT}"),
        "--log-format=json".to_string(),
        "--cache-dir=/cache".to_string(),
        format!("--concurrency={}", options.concurrency),
    ];
    if let Some(shard) = shard {
        args.push(format!("--shard={shard}"));
    }
    if let Some(selector) = &options.watch_label_selector {
        args.push(format!("--watch-label-selector={selector}"));
    }
    let default_account = options.default_service_account.as_deref().or(options.multi_tenant.then_some("default"));
    if let Some(account) = default_account {
        args.push(format!("--default-service-account={account}"));
    }
    if options.multi_tenant {
        args.push("--no-cross-namespace-refs".to_string());
    }
    if options.flux {
        // The CRDs installed with Flux's are reconciled too.
        args.push("--flux".to_string());
    }
    if options.argo {
        args.push("--argo".to_string());
    }
    let probe = |path: &str| json!({"httpGet": {"path": path, "port": "http-metrics"}, "periodSeconds": 10});
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": options.namespace, "labels": labels},
        "spec": {
            // Leader election makes a second replica a standby; one is enough for most clusters.
            "replicas": 1,
            "selector": {"matchLabels": {"app.kubernetes.io/instance": name}},
            "template": {
                "metadata": {
                    "labels": labels,
                    "annotations": {"prometheus.io/scrape": "true", "prometheus.io/port": METRICS_PORT.to_string()},
                },
                "spec": {
                    "serviceAccountName": account,
                    "terminationGracePeriodSeconds": 30,
                    "securityContext": {"runAsNonRoot": true, "runAsUser": 65532, "fsGroup": 65532, "seccompProfile": {"type": "RuntimeDefault"}},
                    "containers": [{
                        "name": "controller",
                        "image": options.image,
                        "args": args,
                        "ports": [
                            {"name": "http-metrics", "containerPort": METRICS_PORT, "protocol": "TCP"},
                            {"name": "http-webhook", "containerPort": WEBHOOK_PORT, "protocol": "TCP"},
                        ],
                        "readinessProbe": probe("/readyz"),
                        "livenessProbe": probe("/healthz"),
                        "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"memory": "512Mi"}},
                        "securityContext": {
                            "allowPrivilegeEscalation": false,
                            "readOnlyRootFilesystem": true,
                            "capabilities": {"drop": ["ALL"]},
                        },
                        "volumeMounts": [{"name": "cache", "mountPath": "/cache"}, {"name": "tmp", "mountPath": "/tmp"}],
                    }],
                    "volumes": [{"name": "cache", "emptyDir": {}}, {"name": "tmp", "emptyDir": {}}],
                },
            },
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(selector: Option<&str>) -> InstallOptions {
        InstallOptions {
            flux: false,
            argo: false,
            namespace: "bosun-system".into(),
            image: "example.com/bosun:test".into(),
            concurrency: 8,
            watch_label_selector: selector.map(str::to_string),
            shards: 0,
            default_service_account: Some("deployer".into()),
            multi_tenant: false,
        }
    }

    #[test]
    fn multi_tenant_installations_lock_tenants_down_as_flux_does() {
        let args = |options: &InstallOptions| -> Vec<String> {
            let objects = manifests(options);
            let deployment = objects.iter().find(|o| o["kind"] == "Deployment").expect("deployment");
            let args = deployment["spec"]["template"]["spec"]["containers"][0]["args"].as_array().expect("args");
            args.iter().filter_map(Value::as_str).map(str::to_string).collect()
        };
        let cases = [
            (None, false, None, false),
            (None, true, Some("--default-service-account=default"), true),
            (Some("deployer"), true, Some("--default-service-account=deployer"), true),
            (Some("deployer"), false, Some("--default-service-account=deployer"), false),
        ];
        for (account, multi_tenant, expected_account, refuses_cross) in cases {
            let options =
                InstallOptions { default_service_account: account.map(str::to_string), multi_tenant, ..options(None) };
            let args = args(&options);
            let given = args.iter().find(|a| a.starts_with("--default-service-account"));
            assert_eq!(given.map(String::as_str), expected_account, "{account:?} {multi_tenant}");
            assert_eq!(args.iter().any(|a| a == "--no-cross-namespace-refs"), refuses_cross, "{args:?}");
        }
    }

    #[test]
    fn the_installation_is_crds_then_namespace_account_binding_and_deployment() {
        let objects = manifests(&options(None));
        let kinds: Vec<&str> = objects.iter().map(|o| o["kind"].as_str().unwrap_or_default()).collect();
        assert_eq!(
            kinds,
            [
                "CustomResourceDefinition",
                "CustomResourceDefinition",
                "CustomResourceDefinition",
                "CustomResourceDefinition",
                "CustomResourceDefinition",
                "CustomResourceDefinition",
                "CustomResourceDefinition",
                "Namespace",
                "ServiceAccount",
                "ClusterRoleBinding",
                "Deployment",
                "Service"
            ]
        );
        let names: Vec<&str> = objects[..7].iter().filter_map(|o| o["metadata"]["name"].as_str()).collect();
        assert_eq!(
            names,
            [
                "packages.bosun.dev",
                "operators.bosun.dev",
                "alerts.bosun.dev",
                "providers.bosun.dev",
                "receivers.bosun.dev",
                "canaries.bosun.dev",
                "fleets.bosun.dev"
            ]
        );
        let by_kind = |kind: &str| objects.iter().find(|o| o["kind"] == kind).expect(kind);
        let deployment = by_kind("Deployment");
        let container = &deployment["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(container["image"], "example.com/bosun:test");
        let args: Vec<&str> = container["args"].as_array().expect("args").iter().filter_map(Value::as_str).collect();
        let expected_args = [
            "controller",
            "--leader-elect",
            "--concurrency=8",
            "--default-service-account=deployer",
            "--webhook-addr=0.0.0.0:9292",
        ];
        for expected in expected_args {
            assert!(args.contains(&expected), "{expected} in {args:?}");
        }
        assert_eq!(container["readinessProbe"]["httpGet"]["path"], "/readyz");
        assert_eq!(by_kind("ClusterRoleBinding")["subjects"][0]["name"], "bosun-controller");
        assert_eq!(by_kind("Service")["spec"]["ports"][0]["targetPort"], "http-webhook");
    }

    #[test]
    fn shards_install_side_by_side() {
        let one = manifests(&options(Some("sharding.bosun.dev/key=shard1")));
        let deployment = one.iter().find(|o| o["kind"] == "Deployment").expect("deployment");
        let name = deployment["metadata"]["name"].as_str().expect("name");
        assert_ne!(name, "bosun-controller");
        let args = deployment["spec"]["template"]["spec"]["containers"][0]["args"].to_string();
        assert!(args.contains("--watch-label-selector=sharding.bosun.dev/key=shard1"), "{args}");
    }

    #[test]
    fn each_shard_gets_its_deployment_and_lease_beside_the_unsharded_controller() {
        let installed = manifests(&InstallOptions { shards: 3, ..options(None) });
        let of_kind = |kind: &str| -> Vec<&Value> { installed.iter().filter(|o| o["kind"] == kind).collect() };
        let deployments: Vec<(String, String)> = of_kind("Deployment")
            .iter()
            .map(|d| {
                let spec = &d["spec"]["template"]["spec"];
                let args = spec["containers"][0]["args"].as_array().expect("args");
                let shard = args.iter().filter_map(Value::as_str).find(|a| a.starts_with("--shard="));
                assert_eq!(spec["serviceAccountName"], "bosun-controller", "one account for all");
                assert!(args.iter().any(|a| a == "--leader-elect"), "{args:?}");
                (d["metadata"]["name"].as_str().unwrap_or_default().to_string(), shard.unwrap_or("").to_string())
            })
            .collect();
        let expected = [
            ("bosun-controller", ""),
            ("bosun-controller-shard-0", "--shard=shard-0"),
            ("bosun-controller-shard-1", "--shard=shard-1"),
            ("bosun-controller-shard-2", "--shard=shard-2"),
        ];
        assert_eq!(deployments, expected.map(|(name, shard)| (name.to_string(), shard.to_string())));
        assert_eq!((of_kind("Service").len(), of_kind("ServiceAccount").len(), of_kind("Namespace").len()), (4, 1, 1));
        let sharded = manifests(&InstallOptions { shards: 1, ..options(Some("team=web")) });
        let names: Vec<&str> = sharded
            .iter()
            .filter(|o| o["kind"] == "Deployment")
            .filter_map(|d| d["metadata"]["name"].as_str())
            .collect();
        let hash = shard::lease_name(None, Some("team=web")).trim_start_matches("bosun-controller-").to_string();
        assert_eq!(names, [format!("bosun-controller-{hash}"), format!("bosun-controller-shard-0-{hash}")]);
    }

    #[test]
    fn with_flux_s_crds_the_controller_reconciles_flux_s_objects() {
        let args = |flux: bool| {
            let installed = manifests(&InstallOptions { flux, ..options(None) });
            let deployment = installed.iter().find(|o| o["kind"] == "Deployment").expect("deployment").clone();
            deployment["spec"]["template"]["spec"]["containers"][0]["args"].to_string()
        };
        assert!(args(true).contains("\"--flux\""), "{}", args(true));
        assert!(!args(false).contains("--flux"), "{}", args(false));
    }

    #[test]
    fn with_argo_cd_s_crds_the_controller_reconciles_applications() {
        let installed = manifests(&InstallOptions { argo: true, ..options(None) });
        let crds: Vec<&str> = installed
            .iter()
            .filter(|o| o["kind"] == "CustomResourceDefinition")
            .filter_map(|o| o["metadata"]["name"].as_str())
            .filter(|name| name.ends_with(".argoproj.io"))
            .collect();
        let wanted = [
            "applications.argoproj.io",
            "appprojects.argoproj.io",
            "applicationsets.argoproj.io",
            "rollouts.argoproj.io",
            "analysistemplates.argoproj.io",
            "clusteranalysistemplates.argoproj.io",
            "analysisruns.argoproj.io",
        ];
        assert_eq!(crds, wanted, "Argo CD's and Argo Rollouts' CRDs");
        let deployment = installed.iter().find(|o| o["kind"] == "Deployment").expect("deployment");
        let args = deployment["spec"]["template"]["spec"]["containers"][0]["args"].to_string();
        assert!(args.contains("\"--argo\""), "{args}");
    }
}

/// Installs (or updates) bosun's CRDs with server-side apply as `manager`, so running it again
/// after an upgrade updates them.
///
/// # Errors
/// The CRD that could not be applied, and why.
pub async fn install_crds(client: &kube::Client, manager: &str) -> Result<(), InstallError> {
    apply_crds(client, manager, bosun_api::crds()).await
}

/// Installs (or updates) Flux's CRDs ([`bosun_api::flux::crds`]) as [`install_crds`] does
/// bosun's: for a cluster without Flux whose Flux objects bosun reconciles (`bosun dev
/// --flux`).
///
/// # Errors
/// The CRD that could not be applied, and why.
pub async fn install_flux_crds(client: &kube::Client, manager: &str) -> Result<(), InstallError> {
    apply_crds(client, manager, bosun_api::flux::crds()).await
}

/// Applies `crds` with server-side apply as `manager`, forcing conflicts.
async fn apply_crds(
    client: &kube::Client,
    manager: &str,
    crds_to_apply: Vec<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition>,
) -> Result<(), InstallError> {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    use kube::api::{Api, Patch, PatchParams};
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in crds_to_apply {
        let mut body = serde_json::to_value(&crd).unwrap_or_default();
        body["apiVersion"] = json!("apiextensions.k8s.io/v1");
        body["kind"] = json!("CustomResourceDefinition");
        let name = crd.metadata.name.clone().unwrap_or_default();
        crds.patch(&name, &PatchParams::apply(manager).force(), &Patch::Apply(&body))
            .await
            .map_err(|source| InstallError { crd: name, source: source.into() })?;
    }
    Ok(())
}

/// A CRD the cluster did not take.
#[derive(Debug, thiserror::Error)]
#[error("installing the CRD {crd}: {source}")]
pub struct InstallError {
    /// The CRD's name.
    pub crd: String,
    /// Why.
    #[source]
    pub source: bosun_core::cluster::ClusterError,
}
