//! Argo CD's `ApplicationSet`, reconciled by bosun (`bosun controller --argo`) as Argo CD's
//! ApplicationSet controller reconciles it: its generators' parameter sets (`generators`, the
//! same generation code as bosun's Fleet), the template filled with each (`template`), the
//! Applications written as its children (owner references: the API server's garbage collector
//! deletes them with it) and kept as `syncPolicy.applicationsSync` says, rolled out step by
//! step with `RollingSync` (`rolling`), and the status Argo CD writes (`status`). A field bosun
//! cannot honour is refused by name in an `ErrorOccurred` condition, and nothing is written.

mod generators;
mod rolling;
mod status;
mod template;

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::Secret;
use kube::{
    Api, Client,
    api::{ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams},
    runtime::{events::EventType, reflector::ObjectRef},
};
use serde_json::{Value, json};

use bosun::source::Fetcher;
use bosun_api::argo::applicationset::{ApplicationSetSpec, ApplicationSetStatus};
use bosun_api::argo::{self, Application, ApplicationSet};
use bosun_api::package::{GitSource, PackageResource, SourceSpec};
use bosun_kit::{self as kit, Failure, Run};

use crate::argo::clusters::SECRET_TYPE_LABEL;
use crate::flux::Scope;
use crate::generate::{GenerateError, ParamSet};
use generators::{ArgoCluster, Inputs, RepoKey, Stop, Tree};
use status::{Outcome, Rolling};
use template::{Engine, Generated};

/// The controller's name: its field manager and event reporter.
pub const NAME: &str = "argo-applicationset";

/// How often an ApplicationSet reading Git looks again (Argo CD's default
/// `requeueAfterSeconds`, 3 minutes).
const GIT_INTERVAL: Duration = Duration::from_secs(180);

/// How soon an ApplicationSet rolling out with `RollingSync` is looked at again.
const ROLLOUT_INTERVAL: Duration = Duration::from_secs(3);

/// How soon an ApplicationSet that could not generate is looked at again (as Argo CD's).
const INVALID_INTERVAL: Duration = Duration::from_secs(180);

/// The `ApplicationSet` reconciler.
pub struct ApplicationSets {
    /// Fetches the repositories of `git` generators.
    fetcher: Fetcher,
}

/// The `ApplicationSet` controller, ready to [`kit::Controller::run`]: a change of an
/// ApplicationSet, of an Application it generated, or of a cluster Secret in its namespace
/// reconciles it. `scope` is as the Applications' (`--argo-selector`, shards).
pub fn controller(client: Client, scope: &Scope, fetcher: Fetcher) -> kit::Controller<ApplicationSets> {
    kit::Controller::new(NAME, ApplicationSets { fetcher }, client)
        .finalizer_on_demand()
        .without_status()
        .owns::<Application>()
        .triggered_by::<Secret>(|secret, sets| {
            let cluster = secret
                .metadata
                .labels
                .as_ref()
                .is_some_and(|l| l.get(SECRET_TYPE_LABEL).is_some_and(|t| t == "cluster"));
            sets.iter()
                .filter(|set| cluster && set.metadata.namespace == secret.metadata.namespace)
                .map(|set| ObjectRef::from_obj(&**set))
                .collect()
        })
        .backoff(Duration::from_secs(1), Duration::from_secs(300))
        .confined(scope.namespace.as_deref(), scope.selector.as_deref(), scope.metrics.clone())
}

/// The time now as Argo CD writes times (RFC 3339, seconds).
fn now() -> String {
    k8s_openapi::jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// The first field of `spec` bosun refuses: a newer Argo CD's (not in the types, from `raw`)
/// or one it does not honour yet.
fn refused(spec: &ApplicationSetSpec, raw: &Value) -> Option<String> {
    let mut given = Vec::new();
    crate::argo::translate::leaves(raw.get("spec").unwrap_or(&Value::Null), "spec", &mut given);
    let mut known = Vec::new();
    crate::argo::translate::leaves(&serde_json::to_value(spec).unwrap_or_default(), "spec", &mut known);
    if let Some(field) = given.into_iter().find(|path| !known.contains(path)) {
        return Some(format!("{field}: bosun does not honour this yet: a field bosun does not know"));
    }
    let strategy = spec.strategy.as_ref();
    let fields = [
        ("spec.templatePatch", spec.template_patch.is_some()),
        ("spec.preservedFields", spec.preserved_fields.is_some()),
        ("spec.ignoreApplicationDifferences", !spec.ignore_application_differences.is_empty()),
        ("spec.applyNestedSelectors", spec.apply_nested_selectors.is_some()),
        ("spec.strategy.deletionOrder", strategy.is_some_and(|s| s.deletion_order.is_some())),
    ];
    if let Some((field, _)) = fields.iter().find(|(_, set)| *set) {
        return Some(format!(
            "{field}: bosun does not honour this yet (docs/argo-applicationset.md lists what it does)"
        ));
    }
    match strategy.map(|s| s.type_.as_str()) {
        None | Some("" | "AllAtOnce" | "RollingSync") => {}
        Some(other) => return Some(format!("spec.strategy.type: {other:?}: one of AllAtOnce, RollingSync")),
    }
    match spec.sync_policy.as_ref().and_then(|p| p.applications_sync.as_deref()) {
        None | Some("create-only" | "create-update" | "create-delete" | "sync") => None,
        Some(other) => Some(format!(
            "spec.syncPolicy.applicationsSync: {other:?}: one of create-only, create-update, create-delete, sync"
        )),
    }
}

/// What `syncPolicy.applicationsSync` allows: (update, delete); creating always is.
fn allowed(spec: &ApplicationSetSpec) -> (bool, bool) {
    match spec.sync_policy.as_ref().and_then(|p| p.applications_sync.as_deref()) {
        Some("create-only") => (false, false),
        Some("create-update") => (true, false),
        Some("create-delete") => (false, true),
        _ => (true, true),
    }
}

/// Whether `spec` uses the `RollingSync` strategy.
fn rolling_sync(spec: &ApplicationSetSpec) -> bool {
    spec.strategy.as_ref().is_some_and(|s| s.type_ == "RollingSync")
}

/// How soon an ApplicationSet whose generators (nested ones too) read Git looks again: the
/// shortest `requeueAfterSeconds` of its `git` generators, 3 minutes when none is given.
fn git_interval(spec: &ApplicationSetSpec) -> Option<Duration> {
    fn walk(value: &Value, found: &mut Vec<Option<u64>>) {
        match value {
            Value::Object(object) => {
                if let Some(git) = object.get("git") {
                    found.push(git.get("requeueAfterSeconds").and_then(Value::as_u64));
                }
                object.values().for_each(|v| walk(v, found));
            }
            Value::Array(items) => items.iter().for_each(|v| walk(v, found)),
            _ => {}
        }
    }
    let mut found = Vec::new();
    walk(&serde_json::to_value(&spec.generators).unwrap_or_default(), &mut found);
    found.into_iter().map(|s| s.map_or(GIT_INTERVAL, |s| Duration::from_secs(s.max(1)))).min()
}

/// A generated Application as `RollingSync` sees it, from what is live (as the reconcile
/// began: `spec_changed` is whether this reconcile writes a new spec).
fn member<'a>(generated: &'a Generated, live: Option<&'a Value>) -> rolling::Member<'a> {
    let text = |pointer: &str| live.and_then(|l| l.pointer(pointer)).and_then(Value::as_str);
    let status = live.map(|l| &l["status"]);
    let revisions = match status.and_then(|s| s.pointer("/sync/revisions")).and_then(Value::as_array) {
        Some(revisions) => revisions.iter().filter_map(Value::as_str).map(str::to_string).collect(),
        None => text("/status/sync/revision").map(str::to_string).into_iter().collect(),
    };
    let conditions = status.and_then(|s| s["conditions"].as_array()).cloned().unwrap_or_default();
    rolling::Member {
        name: &generated.name,
        labels: &generated.labels,
        live: live.is_some(),
        spec_changed: live.is_some_and(|l| l["spec"] != generated.object["spec"]),
        revisions,
        sync: text("/status/sync/status").unwrap_or_default(),
        health: text("/status/health/status").unwrap_or_default(),
        phase: text("/status/operationState/phase"),
        started_at: text("/status/operationState/startedAt"),
        reconciled_at: text("/status/reconciledAt"),
        error: conditions.iter().any(|c| matches!(c["type"].as_str(), Some("InvalidSpecError" | "UnknownError"))),
    }
}

/// The operation Argo CD's ApplicationSet controller writes to sync an Application of a
/// `RollingSync` step: its sync options, its retry (a limit of 5 when it names none), and
/// `prune` as its `automated.prune` (automated sync itself is turned off in the generated
/// Applications).
fn sync_operation(application: &Value) -> Value {
    let policy = &application["spec"]["syncPolicy"];
    let prune = policy.pointer("/automated/prune") == Some(&json!(true));
    let mut sync = json!({});
    if let Some(options) = policy.get("syncOptions").filter(|o| o.as_array().is_some_and(|o| !o.is_empty())) {
        sync["syncOptions"] = options.clone();
    }
    if prune {
        sync["prune"] = json!(true);
    }
    json!({
        "initiatedBy": {"username": "applicationset-controller", "automated": true},
        "info": [{"name": "Reason", "value": "ApplicationSet RollingSync triggered a sync of this Application resource"}],
        "sync": sync,
        "retry": policy.get("retry").cloned().unwrap_or_else(|| json!({"limit": 5})),
    })
}

impl ApplicationSets {
    /// The cluster Secrets in `namespace`.
    async fn clusters(client: &Client, namespace: &str) -> Result<Vec<ArgoCluster>, kube::Error> {
        let secrets: Api<Secret> = Api::namespaced(client.clone(), namespace);
        let listed = secrets.list(&ListParams::default().labels(&format!("{SECRET_TYPE_LABEL}=cluster"))).await?;
        // A Secret that is not a cluster Argo CD could use gives no parameters either.
        let mut clusters: Vec<ArgoCluster> =
            listed.items.iter().filter_map(|secret| ArgoCluster::from_secret(secret).ok()).collect();
        clusters.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(clusters)
    }

    /// A `git` generator's repository at its revision (`HEAD`: the default branch).
    async fn tree(&self, run: &Run<ApplicationSet>, (url, revision): &RepoKey) -> Result<Tree, String> {
        let revision = Some(revision.trim()).filter(|r| !r.is_empty() && *r != "HEAD");
        let git = GitSource {
            url: url.clone(),
            reference: revision.map(crate::argo::translate::git_reference),
            ..GitSource::default()
        };
        let source = SourceSpec { git: Some(git), ..SourceSpec::default() };
        let scope = crate::fetch::Scope { namespace: run.namespace(), cross_namespace: false, seen: None };
        let (snapshot, _) = crate::fetch::fetch_source(&self.fetcher, run.client(), Some(&source), scope, false)
            .await
            .map_err(|e| format!("{url}: {e}"))?;
        let (directories, files) = crate::generate::entries_under(&snapshot.root);
        Ok(Tree { directories, files, root: snapshot.root.clone() })
    }

    /// Every generator's parameter sets, reading the repositories they name as they need them.
    async fn parameters(
        &self,
        run: &Run<ApplicationSet>,
        engine: &Engine,
        clusters: &[ArgoCluster],
    ) -> Result<Result<Vec<ParamSet>, GenerateError>, Failure> {
        let set = run.object();
        let mut trees: BTreeMap<RepoKey, Tree> = BTreeMap::new();
        loop {
            let inputs = Inputs { clusters, trees: &trees };
            let mut sets = Vec::new();
            let mut needed = None;
            for (index, generator) in set.spec.generators.iter().enumerate() {
                match generators::generate(&format!("spec.generators[{index}]"), generator, engine, inputs) {
                    Ok(found) => sets.extend(found),
                    Err(Stop::Invalid(error)) => return Ok(Err(error)),
                    Err(Stop::Read(key)) => {
                        needed = Some(key);
                        break;
                    }
                }
            }
            let Some(key) = needed else { return Ok(Ok(sets)) };
            match self.tree(run, &key).await {
                Ok(tree) => trees.insert(key, tree),
                Err(message) => {
                    // Reported as Argo CD reports a repository it cannot read, and retried.
                    let message = format!("spec.generators: {message}");
                    Self::report(run, Outcome::NoParameters(status::PARAMS_ERROR, message.clone())).await?;
                    return Err(Failure::retry("GitFetchFailed", format!("{}: {message}", run.describe())));
                }
            };
        }
    }

    /// Writes `status` when it differs from the live one (the status subresource).
    async fn write_status(run: &Run<ApplicationSet>, status: ApplicationSetStatus) -> Result<(), Failure> {
        if run.object().status.as_ref() == Some(&status) {
            return Ok(());
        }
        let api: Api<ApplicationSet> = run.api();
        let body = json!({"apiVersion": argo::API_VERSION, "kind": "ApplicationSet", "status": status});
        let params = PatchParams::apply(NAME).force();
        match api.patch_status(run.name(), &params, &Patch::Apply(&body)).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
            Err(error) => Err(Failure::from_error("StatusUpdateFailed", &error)),
        }
    }

    /// Reports a failure in the conditions (Argo CD's reason), with a Warning event.
    async fn report(run: &Run<ApplicationSet>, outcome: Outcome) -> Result<(), Failure> {
        let (Outcome::NoParameters(reason, message) | Outcome::Failed(reason, message)) = &outcome else {
            return Ok(());
        };
        run.publish(EventType::Warning, reason, &format!("{}: {message}", run.describe()), "Reconcile").await;
        let mut status = run.object().status.clone().unwrap_or_default();
        let rolling = if rolling_sync(&run.object().spec) { Rolling::Keep } else { Rolling::Off };
        status.conditions = status::conditions(&status.conditions, &outcome, rolling, &now());
        Self::write_status(run, status).await
    }

    /// The Applications this ApplicationSet owns, as stored, by name.
    async fn owned(run: &Run<ApplicationSet>) -> Result<BTreeMap<String, Value>, Failure> {
        let uid = run.object().metadata.uid.clone().unwrap_or_default();
        let api: Api<DynamicObject> =
            Api::namespaced_with(run.client().clone(), run.namespace(), &ApiResource::erase::<Application>(&()));
        let listed = api.list(&ListParams::default()).await.map_err(|e| Failure::from_error("ListFailed", &e))?;
        Ok(listed
            .items
            .into_iter()
            .filter(|a| a.metadata.owner_references.iter().flatten().any(|o| o.uid == uid))
            .map(|a| (a.metadata.name.clone().unwrap_or_default(), serde_json::to_value(a).unwrap_or_default()))
            .collect())
    }
}

/// Whether the live Application already is what is generated (spec exactly; labels,
/// annotations and finalizers at least).
fn current(live: &Value, generated: &Generated) -> bool {
    let live_spec = &live["spec"];
    let (live, wanted) = (&live["metadata"], &generated.object["metadata"]);
    let maps = ["labels", "annotations"]
        .iter()
        .all(|key| wanted[key].as_object().into_iter().flatten().all(|(k, v)| live[key].get(k) == Some(v)));
    let finalizers = wanted["finalizers"]
        .as_array()
        .into_iter()
        .flatten()
        .all(|f| live["finalizers"].as_array().is_some_and(|l| l.contains(f)));
    generated.object["spec"] == *live_spec && maps && finalizers
}

impl kit::Reconciler for ApplicationSets {
    type Resource = ApplicationSet;

    async fn reconcile(&self, run: &mut Run<ApplicationSet>) -> Result<(), Failure> {
        let set = run.object().clone();
        let spec = &set.spec;
        if spec.sync_policy.as_ref().is_some_and(|p| p.preserve_resources_on_deletion) {
            run.add_finalizer().await?;
        }
        // As stored: fields the types do not name are refused by name, never dropped.
        let stored: Api<DynamicObject> =
            Api::namespaced_with(run.client().clone(), run.namespace(), &ApiResource::erase::<ApplicationSet>(&()));
        let raw = stored.get(run.name()).await.map_err(|e| Failure::from_error("ReconciliationFailed", &e))?;
        if let Some(message) = refused(spec, &serde_json::to_value(raw).unwrap_or_default()) {
            return Self::report(run, Outcome::NoParameters(status::PARAMS_ERROR, message)).await;
        }
        let engine = match Engine::of(spec) {
            Ok(engine) => engine,
            Err(error) => {
                return Self::report(run, Outcome::NoParameters(status::PARAMS_ERROR, error.to_string())).await;
            }
        };
        let cluster_error = |e: kube::Error| Failure::from_error("ClustersUnreadable", &e);
        let clusters = Self::clusters(run.client(), run.namespace()).await.map_err(cluster_error)?;
        if let Some(interval) = git_interval(spec) {
            run.requeue_after(interval);
        }
        let sets = match self.parameters(run, &engine, &clusters).await? {
            Ok(sets) => sets,
            Err(error) => {
                run.requeue_after(INVALID_INTERVAL);
                return Self::report(run, Outcome::NoParameters(status::PARAMS_ERROR, error.to_string())).await;
            }
        };
        let rolling = rolling_sync(spec);
        let generated = match template::applications(&set, &sets, &engine, rolling) {
            Ok(generated) => generated,
            Err(error) => {
                run.requeue_after(INVALID_INTERVAL);
                return Self::report(run, Outcome::Failed(status::TEMPLATE_ERROR, error.to_string())).await;
            }
        };
        let live = Self::owned(run).await?;
        let (update, delete) = allowed(spec);
        let owner = json!([{
            "apiVersion": argo::API_VERSION, "kind": "ApplicationSet", "name": run.name(),
            "uid": set.metadata.uid.clone().unwrap_or_default(), "controller": true, "blockOwnerDeletion": true,
        }]);
        let api: Api<DynamicObject> =
            Api::namespaced_with(run.client().clone(), run.namespace(), &ApiResource::erase::<Application>(&()));
        let params = PatchParams::apply(NAME).force();
        for application in &generated {
            let existing = live.get(&application.name);
            if existing.is_some_and(|live| current(live, application)) || (existing.is_some() && !update) {
                continue;
            }
            let mut object = application.object.clone();
            object["metadata"]["ownerReferences"] = owner.clone();
            if let Err(error) = api.patch(&application.name, &params, &Patch::Apply(&object)).await {
                let message = format!("Application/{}/{}: {error}", run.namespace(), application.name);
                Self::report(run, Outcome::Failed(status::UPDATE_ERROR, message.clone())).await?;
                return Err(Failure::retry(status::UPDATE_ERROR, message));
            }
        }
        if delete {
            for name in live.keys().filter(|name| !generated.iter().any(|g| &g.name == *name)) {
                match api.delete(name, &DeleteParams::background()).await {
                    Err(kube::Error::Api(status)) if status.code == 404 => {}
                    Ok(_) => {}
                    Err(error) => return Err(Failure::from_error("DeleteApplicationError", &error)),
                }
            }
        }
        let names: Vec<(String, Option<&Value>)> =
            generated.iter().map(|g| (g.name.clone(), live.get(&g.name))).collect();
        let mut status = set.status.clone().unwrap_or_default();
        let mut rolled = Rolling::Off;
        if let Some(steps) = spec.strategy.as_ref().filter(|_| rolling).and_then(|s| s.rolling_sync.as_ref()) {
            let members: Vec<rolling::Member<'_>> = generated.iter().map(|g| member(g, live.get(&g.name))).collect();
            let rollout = match rolling::advance(&steps.steps, &members, &status.application_status, &now()) {
                Ok(rollout) => rollout,
                Err(message) => return Self::report(run, Outcome::Failed(status::TEMPLATE_ERROR, message)).await,
            };
            for name in &rollout.sync {
                let Some(application) = generated.iter().find(|g| &g.name == name) else { continue };
                let operation = json!({"operation": sync_operation(&application.object)});
                api.patch(name, &PatchParams::default(), &Patch::Merge(&operation))
                    .await
                    .map_err(|e| Failure::from_error("SyncApplicationError", &e))?;
            }
            rolled = rollout.progressing.map_or(Rolling::Complete, Rolling::Step);
            if rollout.progressing.is_some() {
                // A step moves on when its Applications' statuses do, which may not change again
                // after the last write that woke this reconcile.
                run.requeue_after(ROLLOUT_INTERVAL);
            }
            status.application_status = rollout.statuses;
        } else {
            status.application_status.clear();
        }
        status.conditions = status::conditions(&status.conditions, &Outcome::UpToDate, rolled, &now());
        status.resources = status::resources(run.namespace(), &names);
        Self::write_status(run, status).await
    }

    async fn finalize(&self, run: &mut Run<ApplicationSet>) -> Result<(), Failure> {
        // With preserveResourcesOnDeletion the Applications lose the resources finalizer before
        // the garbage collector deletes them, and their Packages must keep their objects
        // (written again with `deletionPolicy: Orphan`) before this ApplicationSet goes.
        if !run.object().spec.sync_policy.as_ref().is_some_and(|p| p.preserve_resources_on_deletion) {
            return Ok(());
        }
        let api: Api<DynamicObject> =
            Api::namespaced_with(run.client().clone(), run.namespace(), &ApiResource::erase::<Application>(&()));
        let packages: Api<PackageResource> = run.api();
        let mut waiting = Vec::new();
        for (name, live) in Self::owned(run).await? {
            let finalizers: Vec<Value> = live["metadata"]["finalizers"].as_array().cloned().unwrap_or_default();
            if finalizers.iter().any(|f| f.as_str().is_some_and(|f| f.starts_with(argo::RESOURCES_FINALIZER))) {
                let kept: Vec<&Value> = finalizers
                    .iter()
                    .filter(|f| !f.as_str().is_some_and(|f| f.starts_with(argo::RESOURCES_FINALIZER)))
                    .collect();
                let patch = json!({"metadata": {"finalizers": kept}});
                api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    .map_err(|e| Failure::from_error("FinalizerRemovalFailed", &e))?;
            }
            let package = packages.get_opt(&name).await.map_err(|e| Failure::from_error("PackageUnreadable", &e))?;
            let deletes = package.is_some_and(|p| {
                serde_json::to_value(&p.spec).unwrap_or_default()["deletionPolicy"] == json!("Delete")
            });
            if deletes {
                waiting.push(name);
            }
        }
        if waiting.is_empty() {
            return Ok(());
        }
        Err(Failure::retry(
            "PreservingResources",
            format!("{}: waiting for the Packages of {} to keep their objects", run.describe(), waiting.join(", ")),
        )
        .within(Duration::from_secs(2)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(value: Value) -> ApplicationSetSpec {
        serde_json::from_value(value).expect("spec")
    }

    #[test]
    fn applications_sync_allows_what_argo_cd_s_policies_allow() {
        let cases = [
            (None, (true, true)),
            (Some("sync"), (true, true)),
            (Some("create-only"), (false, false)),
            (Some("create-update"), (true, false)),
            (Some("create-delete"), (false, true)),
        ];
        for (policy, expected) in cases {
            let spec = spec(json!({"syncPolicy": {"applicationsSync": policy}}));
            assert_eq!(allowed(&spec), expected, "{policy:?}");
            assert_eq!(refused(&spec, &json!({"spec": serde_json::to_value(&spec).expect("json")})), None);
        }
    }

    #[test]
    fn fields_bosun_does_not_honour_are_refused_by_name() {
        let cases = [
            (json!({"templatePatch": "x"}), "spec.templatePatch: bosun does not honour this yet"),
            (json!({"strategy": {"type": "Canary"}}), "spec.strategy.type: \"Canary\": one of AllAtOnce, RollingSync"),
            (json!({"syncPolicy": {"applicationsSync": "all"}}), "spec.syncPolicy.applicationsSync: \"all\""),
        ];
        for (value, expected) in cases {
            let parsed = spec(value.clone());
            let message = refused(&parsed, &json!({"spec": value})).expect("refused");
            assert!(message.starts_with(expected), "{message}");
        }
        let known = spec(json!({"generators": [{"list": {"elements": []}}]}));
        let raw = json!({"spec": {"generators": [{"list": {"elements": [], "newOption": true}}]}});
        assert_eq!(
            refused(&known, &raw).as_deref(),
            Some("spec.generators.list.newOption: bosun does not honour this yet: a field bosun does not know")
        );
    }

    #[test]
    fn git_generators_set_how_soon_the_set_is_read_again() {
        let nested = spec(json!({"generators": [{"matrix": {"generators": [
            {"clusters": {}},
            {"git": {"repoURL": "u", "requeueAfterSeconds": 30, "directories": [{"path": "*"}]}},
        ]}}]}));
        assert_eq!(git_interval(&nested), Some(Duration::from_secs(30)));
        let default = spec(json!({"generators": [{"git": {"repoURL": "u", "files": [{"path": "*.json"}]}}]}));
        assert_eq!(git_interval(&default), Some(GIT_INTERVAL));
        assert_eq!(git_interval(&spec(json!({"generators": [{"list": {"elements": []}}]}))), None);
    }

    #[test]
    fn a_rolling_sync_writes_the_operation_argo_cd_writes() {
        let application = json!({"spec": {"syncPolicy": {
            "automated": {"prune": true, "enabled": false}, "syncOptions": ["CreateNamespace=true"], "retry": {"limit": 2},
        }}});
        assert_eq!(
            sync_operation(&application),
            json!({
                "initiatedBy": {"username": "applicationset-controller", "automated": true},
                "info": [{"name": "Reason", "value": "ApplicationSet RollingSync triggered a sync of this Application resource"}],
                "sync": {"syncOptions": ["CreateNamespace=true"], "prune": true},
                "retry": {"limit": 2},
            })
        );
        let bare = sync_operation(&json!({"spec": {}}));
        assert_eq!((&bare["sync"], &bare["retry"]), (&json!({}), &json!({"limit": 5})));
    }
}
