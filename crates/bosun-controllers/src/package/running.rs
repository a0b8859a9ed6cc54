//! Runs under way, by Package, and what each was started for: a change that asks for a newer
//! run (a new generation, a new reconcile request, a rollback asked for or withdrawn) stops the
//! running one's waits, so a fix does not wait for a failing rollout's timeout (Flux's
//! CancelHealthCheckOnNewRevision).

use std::{collections::HashMap, sync::Mutex};

use tokio_util::sync::CancellationToken;

use super::{Key, key, requested_at, rollback};
use bosun_api::package::PackageResource;

/// What a run was started for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StartedFor {
    /// The spec's generation.
    pub generation: Option<i64>,
    /// The reconcile request handled.
    pub requested_at: Option<String>,
    /// The revision a rollback asked for (`bosun.dev/rollback-to`).
    pub rollback_to: Option<String>,
}

impl StartedFor {
    /// What a run of `package` as it is now is for.
    pub(crate) fn of(package: &PackageResource) -> StartedFor {
        StartedFor {
            generation: package.metadata.generation,
            requested_at: requested_at(package),
            rollback_to: rollback::requested_revision(package).map(str::to_string),
        }
    }

    /// Whether a Package that now looks like `now` wants a newer run than this one.
    pub(crate) fn overtaken_by(&self, now: &StartedFor) -> bool {
        let newer_spec = now.generation.is_some() && now.generation != self.generation;
        let newer_request = now.requested_at.is_some() && now.requested_at != self.requested_at;
        newer_spec || newer_request || now.rollback_to != self.rollback_to
    }
}

/// The runs under way.
#[derive(Debug)]
pub(crate) struct Running {
    runs: Mutex<HashMap<Key, (StartedFor, CancellationToken)>>,
    /// Cancelled when the controller stops: every run's waits end, so it stops in seconds.
    stopping: CancellationToken,
}

impl Running {
    /// No runs yet; `stopping` stops them all.
    pub(crate) fn new(stopping: CancellationToken) -> Running {
        Running { runs: Mutex::default(), stopping }
    }

    /// A run starts; the token stops its waits.
    pub(crate) fn start(&self, key: &Key, started: StartedFor) -> CancellationToken {
        let token = self.stopping.child_token();
        self.runs.lock().unwrap_or_else(|e| e.into_inner()).insert(key.clone(), (started, token.clone()));
        token
    }

    /// The run ended.
    pub(crate) fn end(&self, key: &Key) {
        self.runs.lock().unwrap_or_else(|e| e.into_inner()).remove(key);
    }

    /// A Package changed: its run stops waiting if the change asks for a newer one.
    pub(crate) fn changed(&self, package: &PackageResource) {
        let now = StartedFor::of(package);
        let runs = self.runs.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((started, token)) = runs.get(&key(package))
            && started.overtaken_by(&now)
        {
            tracing::info!(package = %format!("{}/{}", key(package).0, key(package).1), "a newer spec or request arrived: the running rollout stops waiting");
            token.cancel();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_generation_request_or_rollback_overtakes_a_run() {
        let at = |generation: i64, request: Option<&str>| StartedFor {
            generation: Some(generation),
            requested_at: request.map(str::to_string),
            rollback_to: None,
        };
        let rollback = |revision: Option<&str>| StartedFor { rollback_to: revision.map(str::to_string), ..at(1, None) };
        let cases = [
            (at(1, None), rollback(Some("main@sha1:a")), true),
            (rollback(Some("main@sha1:a")), rollback(Some("main@sha1:a")), false),
            (rollback(Some("main@sha1:a")), rollback(None), true),
            (at(1, None), at(1, None), false),
            (at(1, None), at(2, None), true),
            (at(1, Some("a")), at(1, Some("a")), false),
            (at(1, Some("a")), at(1, Some("b")), true),
            (at(1, None), at(1, Some("a")), true),
            (at(1, Some("a")), at(1, None), false),
        ];
        for (started, now, expected) in cases {
            assert_eq!(started.overtaken_by(&now), expected, "{started:?} → {now:?}");
        }
    }
}
