//! Argo CD's own objects, reconciled by bosun (`bosun controller --argo`): each `Application`
//! is read into the `Package` that does the same (`translate`), checked against its
//! `AppProject` (`project`), written as its child (same name and namespace, owned), and the
//! Package's status and its objects' live health are written back in Argo CD's shape
//! (`status`). Argo CD's CRD has no status subresource, so the status is applied with the
//! object. The finalizer `resources-finalizer.argocd.argoproj.io` deletes the objects with
//! the Application; without it they are kept. A field bosun cannot honour is refused by name
//! with Argo CD's `InvalidSpecError` condition, and nothing is written.

pub mod appset;
mod project;
mod status;
mod translate;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kube::{
    Api, Client,
    api::{ApiResource, DeleteParams, DynamicObject, Patch, PatchParams},
    runtime::{events::EventType, reflector::ObjectRef},
};
use serde_json::{Value, json};

use bosun_api::argo::operation::SyncOperation;
use bosun_api::argo::{self, AppProject, Application};
use bosun_api::inventory;
use bosun_api::package::{self, PackageResource};
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
    ) -> Result<Result<(translate::Translated, bosun_api::argo::project::AppProjectSpec), String>, Failure> {
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
        let repo = application.spec.source.as_ref().map(|s| s.repo_url.as_str()).unwrap_or_default();
        let permitted = project::honourable(name, &project)
            .and_then(|()| project::permits(name, &project, repo, &application.spec.destination));
        if let Err(error) = permitted {
            return Ok(Err(error.to_string()));
        }
        Ok(Ok((translated, project)))
    }

    /// Each object of the application, as it is live: those the Package compared (compared
    /// only), else those it applied.
    async fn live(
        run: &Run<Application>,
        package: Option<&PackageResource>,
    ) -> Vec<(bosun_api::inventory::Entry, Option<Value>)> {
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
            let object = match run.resolver().kind(&entry.v, kind).await {
                Some(found) => found.api(run.client(), namespace).get_opt(name).await.ok().flatten(),
                None => None,
            };
            let object = object.map(|o| serde_json::to_value(o).unwrap_or_default());
            live.push((entry, object));
        }
        live
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
        let manual = status::ManualSync::of(&application, &now());
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
        let (mut translated, project) = match self.translated(run, &application, sync.as_ref()).await? {
            Ok(found) => found,
            Err(message) => {
                let message = format!("{described}: {message}");
                run.publish(EventType::Warning, "InvalidSpecError", &message, "Reconcile").await;
                return Self::write_status(run, status::refused(&application, &message, &now())).await;
            }
        };
        // The project's kinds and namespaces are checked on what the Package renders, before
        // anything is written.
        translated.spec.permitted = Some(project::permitted(&application.spec.project, &project));
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
        let live = Self::live(run, package.as_ref()).await;
        let observed = status::Observed {
            application: &application,
            package: package.as_ref(),
            live,
            now: now(),
            manual: manual.as_ref(),
        };
        let written = status::status(&observed);
        let running = written.operation_state.as_ref().is_some_and(|s| s.phase == status::RUNNING);
        let progressing = running || written.health.as_ref().is_some_and(|h| h.status == "Progressing");
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
