//! Argo CD's own objects, reconciled by bosun (`bosun controller --argo`): each `Application`
//! is read into the `Package` that does the same (`translate`), checked against its
//! `AppProject` (`project`), written as its child (same name and namespace, owned), and the
//! Package's status and its objects' live health are written back in Argo CD's shape
//! (`status`). Argo CD's CRD has no status subresource, so the status is applied with the
//! object. The finalizer `resources-finalizer.argocd.argoproj.io` deletes the objects with
//! the Application; without it they are kept. A field bosun cannot honour is refused by name
//! with Argo CD's `InvalidSpecError` condition, and nothing is written.

pub mod appset;
mod clusters;
mod project;
mod repositories;
mod status;
mod translate;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::Secret;
use kube::{
    Api, Client,
    api::{ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams},
    runtime::{events::EventType, reflector::ObjectRef},
};
use serde_json::{Value, json};

use bosun_api::argo::operation::SyncOperation;
use bosun_api::argo::{self, AppProject, Application};
use bosun_api::inventory;
use bosun_api::package::{self, KubeConfigSpec, PackageResource};
use bosun_core::cluster::ClusterError;
use bosun_kit::{self as kit, Failure, Run};

use crate::flux::Scope;
use crate::flux::child::{self, WrittenFor};

/// The controller's name: its field manager and event reporter.
pub const NAME: &str = "argo-application";

/// The label naming the Application on its Package.
const NAME_LABEL: &str = "bosun.dev/argo-application";
/// The label naming the Application's namespace on its Package.
const NAMESPACE_LABEL: &str = "bosun.dev/argo-application-namespace";
/// The annotation on an Application's Package naming the digest of what it was written from.
const WRITTEN_FOR: &str = "bosun.dev/application-digest";

/// How soon an application still progressing is looked at again (its objects' health may
/// change without its Package's status changing).
const PROGRESSING_RECHECK: Duration = Duration::from_secs(5);

/// How long after a full reconcile one woken by nothing but the Application's own status
/// write is skipped: Argo CD's CRD has no status subresource, so each status write is a new
/// generation, which wakes the controller again.
const SETTLED: Duration = Duration::from_secs(2);

/// The `Application` reconciler.
#[derive(Default)]
pub struct Applications {
    /// Per Application (uid): what its last full reconcile saw (its spec and metadata, its
    /// Package's resourceVersion), when it ended, and when it asked to be looked at again.
    settled: Arc<Mutex<HashMap<String, Settled>>>,
    /// The remote clusters whose objects' health was read, by their kubeconfig's digest.
    remotes: Arc<Mutex<HashMap<String, Arc<Remote>>>>,
}

/// A remote cluster an Application delivers to: its objects are read there.
struct Remote {
    client: Client,
    resolver: bosun_core::discovery::Resolver,
}

/// What an Application's last full reconcile saw.
struct Settled {
    seen: String,
    at: std::time::Instant,
    next: std::time::Instant,
}

/// The `Application` controller, ready to [`kit::Controller::run`]: a change of an
/// Application, of its Package or of its AppProject reconciles it; those carrying Argo CD's
/// resources finalizer have their objects deleted before they go. `scope` is as Flux's
/// objects' (`--argo-selector`, shards).
pub fn controller(client: Client, scope: &Scope) -> kit::Controller<Applications> {
    let applications = Applications::default();
    let settled = applications.settled.clone();
    kit::Controller::new(NAME, applications, client)
        .finalizer_named(argo::RESOURCES_FINALIZER)
        .triggered_by::<AppProject>(move |project, applications| {
            let (name, namespace) = (project.metadata.name.as_ref(), project.metadata.namespace.as_ref());
            let governed: Vec<&Arc<Application>> = applications
                .iter()
                .filter(|a| Some(&a.spec.project) == name && a.metadata.namespace.as_ref() == namespace)
                .collect();
            // Looked at in full, not skipped as settled: the project is not among what they saw.
            let mut settled = settled.lock().unwrap_or_else(|e| e.into_inner());
            for application in &governed {
                settled.remove(application.metadata.uid.as_deref().unwrap_or_default());
            }
            governed.iter().map(|a| ObjectRef::from_obj(&***a)).collect()
        })
        .without_status()
        .owns_labelled::<PackageResource>(NAME_LABEL)
        .backoff(Duration::from_secs(1), Duration::from_secs(300))
        .confined(scope.namespace.as_deref(), scope.selector.as_deref(), scope.metrics.clone())
}

/// The names of the CRDs of the Argo CD kinds bosun reconciles.
pub fn reconciled_crds() -> Vec<String> {
    argo::crds().into_iter().filter_map(|crd| crd.metadata.name).collect()
}

/// The first CRD of [`reconciled_crds`] the cluster lacks, if any.
///
/// # Errors
/// The cluster cannot be asked.
pub async fn missing_crd(client: &Client) -> Result<Option<String>, ClusterError> {
    crate::flux::first_missing(client, reconciled_crds()).await
}

/// The time now as Argo CD writes times (RFC 3339, seconds).
fn now() -> String {
    k8s_openapi::jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// The time now with milliseconds (still RFC 3339): when a sync by hand starts, which is also
/// the token its Package run is requested with, so two syncs asked for within one second
/// differ.
fn now_precise() -> String {
    let now = k8s_openapi::jiff::Timestamp::now();
    format!("{}.{:03}Z", now.strftime("%Y-%m-%dT%H:%M:%S"), now.subsec_millisecond())
}

impl Applications {
    /// The Application's spec and metadata (not its status) and its Package's version, as a
    /// reconcile woken by the Application's own status write finds them unchanged.
    fn seen(run: &Run<Application>, application: &Application) -> Option<String> {
        let package = run.owned_child::<PackageResource>(run.name())?;
        let meta = &application.metadata;
        let seen = json!({
            "spec": application.spec, "labels": meta.labels, "annotations": meta.annotations,
            "finalizers": meta.finalizers, "deleting": meta.deletion_timestamp.is_some(),
            "operation": application.operation,
            "package": package.metadata.resource_version,
        });
        Some(bosun_kit::digest::of(&seen))
    }

    /// When nothing changed since a full reconcile that ended moments ago: how long until the
    /// next look it asked for.
    fn unchanged(&self, uid: &str, seen: Option<&String>) -> Option<Duration> {
        let settled = self.settled.lock().unwrap_or_else(|e| e.into_inner());
        let last = settled.get(uid)?;
        let now = std::time::Instant::now();
        (Some(&last.seen) == seen && now.duration_since(last.at) < SETTLED)
            .then(|| last.next.saturating_duration_since(now))
    }

    /// The Application's spec checked and translated, or the message of its `InvalidSpecError`.
    async fn translated(
        &self,
        run: &Run<Application>,
        application: &Application,
        sync: Option<&SyncOperation>,
    ) -> Result<Result<(translate::Translated, Option<(String, String)>), String>, Failure> {
        let cluster_error = |e: kube::Error| Failure::from_error("ReconciliationFailed", &e);
        // As stored: fields the types do not name are refused by name, never dropped.
        let stored: Api<DynamicObject> =
            Api::namespaced_with(run.client().clone(), run.namespace(), &ApiResource::erase::<Application>(&()));
        let raw = serde_json::to_value(stored.get(run.name()).await.map_err(cluster_error)?).unwrap_or_default();
        let projects: Api<AppProject> = run.api();
        let name = &application.spec.project;
        let found = projects.get_opt(name).await.map_err(cluster_error)?;
        let project = match project::governing(name, found.as_ref()) {
            Ok(project) => project,
            Err(message) => return Ok(Err(message)),
        };
        let translated = match translate::package_spec(application, &raw, sync) {
            Ok(translated) => translated,
            Err(error) => return Ok(Err(error.to_string())),
        };
        let (known, credentials) = Self::argo_secrets(run).await?;
        let target = match clusters::resolve(&application.spec.destination, &known) {
            Ok(target) => target,
            Err(error) => return Ok(Err(error.to_string())),
        };
        let destination = target.named(&application.spec.destination);
        let repo = application.spec.source.as_ref().map(|s| s.repo_url.as_str()).unwrap_or_default();
        let permitted =
            project::honourable(name, &project).and_then(|()| project::permits(name, &project, repo, &destination));
        if let Err(error) = permitted {
            return Ok(Err(error.to_string()));
        }
        let mut translated = translated;
        // The project's kinds and namespaces (those of its destinations naming this cluster)
        // are checked on what the Package renders, before anything is written.
        translated.spec.permitted = Some(project::permitted(name, &project, &destination));
        if let Some(found) = repositories::matching(repo, &credentials) {
            match Self::write_source_secret(run, found).await? {
                Ok(Some(name)) => translate::with_credentials(&mut translated.spec, name),
                Ok(None) => {}
                Err(message) => return Ok(Err(message)),
            }
        }
        let mut remote = None;
        if let clusters::Target::Remote(cluster) = target {
            let kubeconfig = match cluster.kubeconfig() {
                Ok(kubeconfig) => kubeconfig,
                Err(error) => return Ok(Err(error.to_string())),
            };
            translated.spec.kube_config = Some(Self::write_kubeconfig(run, cluster, &kubeconfig).await?);
            remote = Some((kubeconfig, format!("cluster {} ({})", cluster.name, cluster.server)));
        }
        Ok(Ok((translated, remote)))
    }

    /// Argo CD's clusters and repository credentials in the Application's namespace (one list
    /// of the Secrets Argo CD types).
    async fn argo_secrets(
        run: &Run<Application>,
    ) -> Result<(Vec<clusters::ArgoCluster>, Vec<repositories::RepoCredentials>), Failure> {
        let secrets: Api<Secret> = run.api();
        let typed = ListParams::default().labels(clusters::SECRET_TYPE_LABEL);
        let listed = secrets.list(&typed).await.map_err(|e| Failure::from_error("ReconciliationFailed", &e))?;
        let (mut known, mut credentials) = (Vec::new(), Vec::new());
        for secret in &listed.items {
            let type_ = secret.metadata.labels.as_ref().and_then(|l| l.get(clusters::SECRET_TYPE_LABEL));
            match type_.map(String::as_str) {
                // A Secret that is not a cluster Argo CD could use is no destination here either.
                Some("cluster") => known.extend(clusters::ArgoCluster::from_secret(secret).ok()),
                Some(type_) => credentials.extend(repositories::RepoCredentials::from_secret(secret, type_)),
                None => {}
            }
        }
        Ok((known, credentials))
    }

    /// Writes the credentials of one of Argo CD's repository Secrets beside it, in the shape
    /// bosun's sources read (owned by it: it goes with it): its name (`None` when the Secret
    /// holds no credentials), or why it cannot be used.
    async fn write_source_secret(
        run: &Run<Application>,
        found: &repositories::RepoCredentials,
    ) -> Result<Result<Option<String>, String>, Failure> {
        let cluster_error = |e: kube::Error| Failure::from_error("ReconciliationFailed", &e);
        let configmaps: Api<k8s_openapi::api::core::v1::ConfigMap> = run.api();
        let known_hosts = match found.needs_known_hosts() {
            true => configmaps
                .get_opt(repositories::KNOWN_HOSTS_CONFIGMAP)
                .await
                .map_err(cluster_error)?
                .and_then(|map| map.data.unwrap_or_default().get("ssh_known_hosts").cloned()),
            false => None,
        };
        let keys = match found.source_secret(known_hosts.as_deref()) {
            Ok(keys) if keys.is_empty() => return Ok(Ok(None)),
            Ok(keys) => keys,
            Err(error) => return Ok(Err(error.to_string())),
        };
        let name = found.source_secret_name();
        Self::write_owned_secret(run, &found.secret, &name, json!(keys)).await?;
        Ok(Ok(Some(name)))
    }

    /// Writes the kubeconfig of one of Argo CD's clusters beside its Secret (owned by it: it
    /// goes with it), for the Package to name.
    async fn write_kubeconfig(
        run: &Run<Application>,
        cluster: &clusters::ArgoCluster,
        kubeconfig: &str,
    ) -> Result<KubeConfigSpec, Failure> {
        let name = cluster.kubeconfig_secret();
        Self::write_owned_secret(run, &cluster.secret, &name, json!({package::KUBECONFIG_KEY: kubeconfig})).await?;
        Ok(KubeConfigSpec { secret_ref: package::SecretKeyReference { name, key: None } })
    }

    /// Each object of the application, as it is live: those the Package compared (compared
    /// only), else those it applied.
    async fn live(
        run: &Run<Application>,
        package: Option<&PackageResource>,
        remote: Option<&Remote>,
    ) -> Vec<(bosun_api::inventory::Entry, Option<Value>)> {
        let (client, resolver) = match remote {
            Some(remote) => (&remote.client, &remote.resolver),
            None => (run.client(), run.resolver()),
        };
        let status = package.and_then(|p| p.status.as_ref());
        let compared = status
            .and_then(|s| s.comparison.as_ref())
            .filter(|_| package.is_some_and(|p| p.spec.compare_only == Some(true)))
            .map(|c| c.objects.iter().map(|o| o.entry.clone()).collect::<Vec<_>>());
        let entries = compared.unwrap_or_else(|| status.map(|s| s.inventory.clone()).unwrap_or_default());
        let mut live = Vec::new();
        for entry in entries {
            let (kind, namespace, name) = entry.parts();
            // A kind the cluster no longer serves, or an object it cannot read, counts as missing.
            let object = match resolver.kind(&entry.v, kind).await {
                Some(found) => found.api(client, namespace).get_opt(name).await.ok().flatten(),
                None => None,
            };
            let object = object.map(|o| serde_json::to_value(o).unwrap_or_default());
            live.push((entry, object));
        }
        live
    }

    /// Applies Secret `name` with `string_data`, owned by Secret `owner` (deleted with it) and
    /// labelled with its name.
    async fn write_owned_secret(
        run: &Run<Application>,
        owner: &str,
        name: &str,
        string_data: Value,
    ) -> Result<(), Failure> {
        let cluster_error = |e: kube::Error| Failure::from_error("ReconciliationFailed", &e);
        let secrets: Api<Secret> = run.api();
        let uid = secrets.get(owner).await.map_err(cluster_error)?.metadata.uid.unwrap_or_default();
        let secret = json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {
                "name": name,
                "labels": {clusters::WRITTEN_FOR_LABEL: owner},
                "ownerReferences": [{"apiVersion": "v1", "kind": "Secret", "name": owner, "uid": uid}],
            },
            "stringData": string_data,
        });
        let params = PatchParams::apply(NAME).force();
        secrets.patch(name, &params, &Patch::Apply(&secret)).await.map_err(cluster_error)?;
        Ok(())
    }

    /// The client and kinds of the cluster `kubeconfig` reaches, made once per kubeconfig.
    async fn remote(&self, kubeconfig: &str) -> Result<Arc<Remote>, String> {
        let key = bosun_kit::digest::of(&json!(kubeconfig));
        if let Some(remote) = self.remotes.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
            return Ok(remote.clone());
        }
        let why = |e: &(dyn std::error::Error + 'static)| bosun_core::cluster::root_cause(e);
        let parsed = kube::config::Kubeconfig::from_yaml(kubeconfig).map_err(|e| why(&e))?;
        let options = kube::config::KubeConfigOptions::default();
        let config = kube::Config::from_custom_kubeconfig(parsed, &options).await.map_err(|e| why(&e))?;
        let client = Client::try_from(config).map_err(|e| why(&e))?;
        let resolver = bosun_core::discovery::Resolver::new(client.clone()).await.map_err(|e| why(&e))?;
        let remote = Arc::new(Remote { client, resolver });
        self.remotes.lock().unwrap_or_else(|e| e.into_inner()).insert(key, remote.clone());
        Ok(remote)
    }

    /// Passes a refresh asked for with `argocd.argoproj.io/refresh` on to the Package as a
    /// reconcile request (`hard`: its source fetched again too), and removes the annotation,
    /// as Argo CD does once the refresh is handled.
    async fn refresh(run: &Run<Application>, application: &Application) -> Result<(), Failure> {
        let annotations = application.metadata.annotations.clone().unwrap_or_default();
        let Some(refresh) = annotations.get(argo::REFRESH_ANNOTATION) else { return Ok(()) };
        let cluster_error = |e: kube::Error| Failure::from_error("RefreshFailed", &e);
        let token = package::request_token();
        let mut requests = json!({package::REQUESTED_AT: token});
        if refresh == "hard" {
            requests[package::SOURCE_REQUESTED_AT] = json!(token);
        }
        let packages: Api<PackageResource> = run.api();
        let params = PatchParams::default();
        let requested = json!({"metadata": {"annotations": requests}});
        packages.patch(run.name(), &params, &Patch::Merge(&requested)).await.map_err(cluster_error)?;
        let handled = json!({"metadata": {"annotations": {argo::REFRESH_ANNOTATION: null}}});
        let applications: Api<Application> = run.api();
        applications.patch(run.name(), &params, &Patch::Merge(&handled)).await.map_err(cluster_error)?;
        Ok(())
    }

    /// Removes the `operation` once its sync has ended (its state is in the status), as Argo
    /// CD does: the next one is asked for by writing it again.
    async fn operation_ended(run: &Run<Application>) -> Result<(), Failure> {
        let api: Api<Application> = run.api();
        let ended = json!({"operation": null});
        match api.patch(run.name(), &PatchParams::default(), &Patch::Merge(&ended)).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
            Err(error) => Err(Failure::from_error("OperationUpdateFailed", &error)),
        }
    }

    /// Applies the status with the object (Argo CD's CRD has no status subresource) when it
    /// says something new, or the last comparison is older than the reconciliation interval.
    async fn write_status(
        run: &Run<Application>,
        mut status: argo::application::ApplicationStatus,
    ) -> Result<(), Failure> {
        let previous = run.object().status.clone().unwrap_or_default();
        let fresh = previous
            .reconciled_at
            .as_deref()
            .and_then(|at| at.parse::<k8s_openapi::jiff::Timestamp>().ok())
            .is_some_and(|at| {
                let age = k8s_openapi::jiff::Timestamp::now().duration_since(at);
                age.as_secs() < translate::RECONCILIATION.as_secs() as i64
            });
        let unchanged = {
            let mut compared = status.clone();
            compared.reconciled_at.clone_from(&previous.reconciled_at);
            compared == previous
        };
        if unchanged && fresh {
            return Ok(());
        }
        if unchanged {
            status.reconciled_at = Some(now());
        }
        let body = json!({
            "apiVersion": argo::API_VERSION, "kind": "Application",
            "metadata": {"name": run.name(), "namespace": run.namespace()},
            "status": status,
        });
        let api: Api<Application> = run.api();
        let params = PatchParams::apply(NAME).force();
        match api.patch(run.name(), &params, &Patch::Apply(&body)).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
            Err(error) => Err(Failure::from_error("StatusUpdateFailed", &error)),
        }
    }
}

impl kit::Reconciler for Applications {
    type Resource = Application;

    async fn reconcile(&self, run: &mut Run<Application>) -> Result<(), Failure> {
        let application = run.object().clone();
        let uid = application.metadata.uid.clone().unwrap_or_default();
        let seen = Self::seen(run, &application);
        if let Some(next) = self.unchanged(&uid, seen.as_ref()) {
            run.requeue_after(next);
            return Ok(());
        }
        let described = run.describe().to_string();
        let manual = status::ManualSync::of(&application, &now_precise());
        let sync = match manual.as_ref().map(|m| translate::sync_operation(&m.requested)) {
            None => None,
            Some(Ok(sync)) => Some(sync),
            Some(Err(error)) => {
                let message = format!("{described}: {error}");
                run.publish(EventType::Warning, "OperationError", &message, "Sync").await;
                let manual = manual.as_ref().map(|m| (m.requested.clone(), m.started_at.clone())).unwrap_or_default();
                Self::write_status(run, status::operation_refused(&application, manual, &message, &now())).await?;
                return Self::operation_ended(run).await;
            }
        };
        let (translated, kubeconfig) = match self.translated(run, &application, sync.as_ref()).await? {
            Ok(found) => found,
            Err(message) => {
                let message = format!("{described}: {message}");
                run.publish(EventType::Warning, "InvalidSpecError", &message, "Reconcile").await;
                return Self::write_status(run, status::refused(&application, &message, &now())).await;
            }
        };
        let packages: Api<PackageResource> = run.api();
        let existing = child::existing::<_, PackageResource>(run, "Application").await?;
        let mut labels = child::package_labels(&application.metadata, (NAME_LABEL, NAMESPACE_LABEL));
        // What tracks the Application itself (an app of apps' labels) does not track its Package.
        for tracking in [argo::TRACKING_LABEL, inventory::PACKAGE_LABEL, inventory::PACKAGE_NAMESPACE_LABEL] {
            labels.remove(tracking);
        }
        let digest = bosun_kit::digest::of(&json!({"spec": translated.spec, "labels": labels}));
        // A sync asked for by hand is a run of the Package requested under its start time.
        let token: Vec<(&str, String)> = manual.iter().map(|m| (package::REQUESTED_AT, m.started_at.clone())).collect();
        let written_for = WrittenFor {
            annotation: WRITTEN_FOR,
            written: digest,
            labels: &labels,
            requests: &[],
            annotations: &token,
        };
        let current = existing.filter(|p| written_for.matches(p, &application));
        let refreshing =
            application.metadata.annotations.as_ref().is_some_and(|a| a.contains_key(argo::REFRESH_ANNOTATION));
        let written = match current {
            Some(_) => None,
            None => {
                for difference in &translated.differences {
                    run.publish(EventType::Normal, "FieldHonouredDifferently", difference, "Reconcile").await;
                }
                Some(written_for.write(run, &translated.spec).await?)
            }
        };
        Self::refresh(run, &application).await?;
        // The Package as the watch of it has it or as just written, else (asked for a run) read.
        let package = match current.or(written).filter(|_| !refreshing) {
            Some(package) => Some(package),
            None => packages.get_opt(run.name()).await.map_err(|e| Failure::from_error("ReconciliationFailed", &e))?,
        };
        // A destination that does not answer: its objects' state is unknown, and said why.
        let (live, unreachable) = match &kubeconfig {
            Some((kubeconfig, cluster)) => match self.remote(kubeconfig).await {
                Ok(remote) => (Self::live(run, package.as_ref(), Some(&remote)).await, None),
                Err(why) => (Vec::new(), Some(format!("{described}: {cluster} does not answer: {why}"))),
            },
            None => (Self::live(run, package.as_ref(), None).await, None),
        };
        let observed = status::Observed {
            application: &application,
            package: package.as_ref(),
            live,
            now: now(),
            manual: manual.as_ref(),
        };
        let mut written = status::status(&observed);
        if let Some(message) = &unreachable {
            let previous = application.status.clone().unwrap_or_default();
            written.conditions.push(status::condition(&previous, "ComparisonError", message, &now()));
            written.health = Some(argo::application::HealthStatus { status: "Unknown".into(), message: None });
        }
        let running = written.operation_state.as_ref().is_some_and(|s| s.phase == status::RUNNING);
        let progressing =
            running || unreachable.is_some() || written.health.as_ref().is_some_and(|h| h.status == "Progressing");
        Self::write_status(run, written).await?;
        if application.operation.is_some() && !running {
            Self::operation_ended(run).await?;
        }
        let after = if progressing { PROGRESSING_RECHECK } else { translate::RECONCILIATION };
        run.requeue_after(after);
        if let Some(seen) = seen {
            let at = std::time::Instant::now();
            let mut settled = self.settled.lock().unwrap_or_else(|e| e.into_inner());
            // Only the last few seconds' are of use: the map stays as small as the churn.
            settled.retain(|_, last| at.duration_since(last.at) < SETTLED);
            settled.insert(uid, Settled { seen, at, next: at + after });
        }
        Ok(())
    }

    async fn finalize(&self, run: &mut Run<Application>) -> Result<(), Failure> {
        // The Package was written with `deletionPolicy: Delete` while the finalizer was there:
        // deleting it deletes the objects; the finalizer goes once it is gone.
        let packages: Api<PackageResource> = run.api();
        let cluster_error = |e: kube::Error| Failure::from_error("DeletionFailed", &e);
        let Some(package) = packages.get_opt(run.name()).await.map_err(cluster_error)? else { return Ok(()) };
        if package.metadata.deletion_timestamp.is_none() {
            packages.delete(run.name(), &DeleteParams::foreground()).await.map_err(cluster_error)?;
        }
        Err(Failure::retry(
            "DeletionInProgress",
            format!(
                "{}: waiting for its objects to be deleted (Package/{}/{})",
                run.describe(),
                run.namespace(),
                run.name()
            ),
        )
        .within(Duration::from_secs(2)))
    }
}
