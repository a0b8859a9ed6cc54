//! `dependsOn`: when a dependency counts as ready, how a cycle is found, and which waiting
//! Packages a dependency's change wakes. Decisions are pure; the controller feeds them the
//! Packages it reads.

use std::{
    collections::{HashMap, HashSet},
    sync::Mutex,
};

use kube::{Api, runtime::reflector::ObjectRef};

use bosun_kit::conditions::{self, READY};
use bosun_kit::{Failure, Run};

use bosun_api::ObjectReference;

use bosun_api::package::PackageResource;

use super::{PackageReconciler, key};

/// `namespace/name` of a Package.
pub type Key = (String, String);

/// The key a reference names, relative to the referring Package's namespace.
pub fn key_of(reference: &ObjectReference, namespace: &str) -> Key {
    (reference.namespace.clone().unwrap_or_else(|| namespace.to_string()), reference.name.clone())
}

/// Whether a dependency is ready as Flux defines it: it exists, its status describes its
/// current generation, and `Ready` is `True`. `Err` says why not.
pub(crate) fn ready(key: &Key, dependency: Option<&PackageResource>) -> Result<(), String> {
    let (namespace, name) = key;
    let Some(dependency) = dependency else {
        return Err(format!("dependency '{namespace}/{name}' not found"));
    };
    let status = dependency.status.clone().unwrap_or_default();
    let generation = dependency.metadata.generation;
    if generation.is_some() && status.observed_generation != generation {
        return Err(format!(
            "dependency '{namespace}/{name}' is not ready: its latest generation is not reconciled yet"
        ));
    }
    if !conditions::is_true(&status.conditions, READY) {
        return Err(format!("dependency '{namespace}/{name}' is not ready"));
    }
    Ok(())
}

/// The first cycle through `start`, as `a -> b -> a` (namespace/name), following `dependsOn`
/// as `depends_on` reports it (None: the Package does not exist).
pub fn cycle(start: &Key, depends_on: &dyn Fn(&Key) -> Option<Vec<Key>>) -> Option<String> {
    fn visit(
        key: &Key,
        start: &Key,
        depends_on: &dyn Fn(&Key) -> Option<Vec<Key>>,
        path: &mut Vec<Key>,
        seen: &mut HashSet<Key>,
    ) -> bool {
        for next in depends_on(key).unwrap_or_default() {
            if &next == start {
                path.push(next);
                return true;
            }
            if seen.insert(next.clone()) {
                path.push(next.clone());
                if visit(&next, start, depends_on, path, seen) {
                    return true;
                }
                path.pop();
            }
        }
        false
    }
    let mut path = vec![start.clone()];
    let mut seen = HashSet::from([start.clone()]);
    visit(start, start, depends_on, &mut path, &mut seen)
        .then(|| path.iter().map(|(namespace, name)| format!("{namespace}/{name}")).collect::<Vec<_>>().join(" -> "))
}

/// Packages waiting for a dependency, by the dependency: the moment a dependency is seen
/// ready, its waiters are reconciled (no polling).
#[derive(Debug, Default)]
pub struct Waiting {
    waiters: Mutex<HashMap<Key, HashSet<ObjectRef<PackageResource>>>>,
}

impl Waiting {
    /// `waiter` waits for `dependency`.
    pub fn wait(&self, dependency: Key, waiter: ObjectRef<PackageResource>) {
        let mut waiters = self.waiters.lock().unwrap_or_else(|e| e.into_inner());
        waiters.entry(dependency).or_default().insert(waiter);
    }

    /// `waiter` no longer waits for `dependency` (it found it ready).
    pub fn forget(&self, dependency: &Key, waiter: &ObjectRef<PackageResource>) {
        let mut waiters = self.waiters.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(set) = waiters.get_mut(dependency) {
            set.remove(waiter);
            if set.is_empty() {
                waiters.remove(dependency);
            }
        }
    }

    /// The Packages to reconcile now that `changed` changed: its waiters if it is ready (and
    /// they stop waiting), none otherwise.
    pub fn woken(&self, changed: &PackageResource) -> Vec<ObjectRef<PackageResource>> {
        let key =
            (changed.metadata.namespace.clone().unwrap_or_default(), changed.metadata.name.clone().unwrap_or_default());
        if ready(&key, Some(changed)).is_err() {
            return Vec::new();
        }
        let mut waiters = self.waiters.lock().unwrap_or_else(|e| e.into_inner());
        waiters.remove(&key).map(|set| set.into_iter().collect()).unwrap_or_default()
    }
}

/// The keys of a Package's dependencies.
fn dependency_keys(resource: &PackageResource) -> Vec<Key> {
    let namespace = resource.metadata.namespace.clone().unwrap_or_default();
    resource.spec.depends_on.iter().map(|d| key_of(d, &namespace)).collect()
}

impl PackageReconciler {
    /// `Some(why)` when a dependency is not ready: the Package waits, and is woken the moment
    /// it is. A cycle stalls the Package. Dependencies are read from the controller's cache;
    /// one that looks unready there is read again from the cluster (the cache may lag the
    /// event that woke this run).
    pub(super) async fn unready_dependency(&self, run: &Run<PackageResource>) -> Result<Option<String>, Failure> {
        let resource = run.object();
        let own = key(resource);
        let mut known: HashMap<Key, Option<Vec<Key>>> = HashMap::new();
        known.insert(own.clone(), Some(dependency_keys(resource)));
        for (index, dependency) in dependency_keys(resource).into_iter().enumerate() {
            if !self.settings.tenancy.may_refer(&own.0, &dependency.0) {
                let message = format!(
                    "spec.dependsOn[{index}]: {}/{} is in another namespace, and this controller refuses cross-namespace references ({})",
                    dependency.0,
                    dependency.1,
                    crate::tenancy::NO_CROSS_NAMESPACE_REFS_FLAG
                );
                return Err(Failure::give_up("AccessDenied", message));
            }
            // Registered before reading: a dependency that turns ready in between still wakes us.
            self.waiting.wait(dependency.clone(), ObjectRef::from_obj(resource));
            let mut found = run.peer(&dependency.0, &dependency.1).map(|p| (*p).clone());
            if ready(&dependency, found.as_ref()).is_err() {
                let api = Api::<PackageResource>::namespaced(run.client().clone(), &dependency.0);
                let retry = resource.spec.retry_interval();
                found = api.get_opt(&dependency.1).await.map_err(|e| Failure::from(e).within(retry))?;
            }
            known.insert(dependency.clone(), found.as_ref().map(dependency_keys));
            if let Err(why) = ready(&dependency, found.as_ref()) {
                if let Some(cycle) = self.find_cycle(run, &own, &mut known) {
                    return Err(Failure::give_up("DependencyCycle", format!("dependency cycle: {cycle}")));
                }
                return Ok(Some(why));
            }
            self.waiting.forget(&dependency, &ObjectRef::from_obj(resource));
        }
        Ok(None)
    }

    /// Reads `dependsOn` of the Packages reachable from `own` (from the cache) and names a
    /// cycle through it.
    fn find_cycle(
        &self,
        run: &Run<PackageResource>,
        own: &Key,
        known: &mut HashMap<Key, Option<Vec<Key>>>,
    ) -> Option<String> {
        let mut pending: Vec<Key> = known.values().flatten().flatten().cloned().collect();
        while let Some(next) = pending.pop() {
            if known.contains_key(&next) {
                continue;
            }
            let edges = run.peer(&next.0, &next.1).map(|p| dependency_keys(&p));
            pending.extend(edges.iter().flatten().cloned());
            known.insert(next, edges);
        }
        cycle(own, &|k: &Key| known.get(k).cloned().flatten())
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::{apimachinery::pkg::apis::meta::v1::Condition, jiff::Timestamp};
    use kube::api::ObjectMeta;

    use super::*;
    use bosun_api::package::{PackageSpec, PackageStatus};

    fn package(name: &str, generation: i64, observed: Option<i64>, ready: Option<&str>) -> PackageResource {
        let conditions = ready
            .map(|status| {
                vec![Condition {
                    type_: READY.into(),
                    status: status.into(),
                    reason: "R".into(),
                    message: String::new(),
                    last_transition_time: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(Timestamp::UNIX_EPOCH),
                    observed_generation: observed,
                }]
            })
            .unwrap_or_default();
        PackageResource {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("ns".into()),
                generation: Some(generation),
                ..ObjectMeta::default()
            },
            spec: PackageSpec::default(),
            status: Some(PackageStatus { conditions, observed_generation: observed, ..PackageStatus::default() }),
        }
    }

    fn key(name: &str) -> Key {
        ("ns".into(), name.into())
    }

    #[test]
    fn a_dependency_is_ready_when_current_and_ready() {
        let cases = [
            (None, Some("not found")),
            (Some(package("a", 1, Some(1), Some("True"))), None),
            (Some(package("a", 2, Some(1), Some("True"))), Some("latest generation")),
            (Some(package("a", 1, Some(1), Some("False"))), Some("is not ready")),
            (Some(package("a", 1, None, None)), Some("latest generation")),
        ];
        for (dependency, expected) in cases {
            let result = ready(&key("a"), dependency.as_ref());
            match expected {
                None => assert!(result.is_ok(), "{result:?}"),
                Some(text) => {
                    assert!(result.as_ref().is_err_and(|e| e.contains(text) && e.contains("ns/a")), "{result:?}")
                }
            }
        }
    }

    #[test]
    fn cycles_are_named_from_the_start() {
        let graph: HashMap<&str, Vec<&str>> =
            HashMap::from([("a", vec!["b"]), ("b", vec!["c", "d"]), ("c", vec![]), ("d", vec!["a"]), ("e", vec!["a"])]);
        let depends_on = |k: &Key| graph.get(k.1.as_str()).map(|d| d.iter().map(|n| key(n)).collect());
        assert_eq!(cycle(&key("a"), &depends_on).as_deref(), Some("ns/a -> ns/b -> ns/d -> ns/a"));
        assert_eq!(cycle(&key("e"), &depends_on), None, "e depends on a cycle but is not in it");
        assert_eq!(cycle(&key("c"), &depends_on), None);
        assert_eq!(cycle(&key("missing"), &depends_on), None);
        let self_loop = |_: &Key| Some(vec![key("s")]);
        assert_eq!(cycle(&key("s"), &self_loop).as_deref(), Some("ns/s -> ns/s"));
    }

    #[test]
    fn waiters_wake_once_when_their_dependency_is_ready() {
        let waiting = Waiting::default();
        let waiter = ObjectRef::new("b").within("ns");
        waiting.wait(key("a"), waiter.clone());
        assert!(waiting.woken(&package("a", 1, Some(1), Some("False"))).is_empty());
        assert_eq!(waiting.woken(&package("a", 1, Some(1), Some("True"))), vec![waiter]);
        assert!(waiting.woken(&package("a", 1, Some(1), Some("True"))).is_empty(), "woken once");
    }
}
