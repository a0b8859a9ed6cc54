//! Leader election on a `coordination.k8s.io/v1` Lease, as client-go's leaderelection does it:
//! a candidate takes the Lease when no one holds it or the holder stopped renewing for
//! `leaseDurationSeconds`; the leader renews it every few seconds and gives it up on shutdown
//! (holder cleared), so a standby takes over at its next try instead of after the lease
//! expires. Written here because the crates that do this for kube-rs lag kube's releases;
//! the decision is a pure function, the IO a thin loop around it.
//!
//! Writes are replaces carrying the resourceVersion read: of two candidates racing for a free
//! Lease, one write wins and the other gets a conflict and reads again.

use std::time::Duration;

use k8s_openapi::{
    api::coordination::v1::{Lease, LeaseSpec},
    apimachinery::pkg::apis::meta::v1::MicroTime,
    jiff::{SignedDuration, Timestamp},
};
use kube::{
    Api, Client,
    api::{ObjectMeta, PostParams},
};
use tokio::sync::watch;

/// How leadership is contested.
#[derive(Debug, Clone)]
pub struct LeaseSettings {
    /// Namespace of the Lease.
    pub namespace: String,
    /// Name of the Lease (one per shard).
    pub name: String,
    /// This candidate (unique per process: host name and a random suffix).
    pub identity: String,
    /// A holder that has not renewed for this long has lost the Lease.
    pub duration: Duration,
    /// The leader gives up when it could not renew for this long (less than `duration`, so it
    /// stops before anyone else may start).
    pub renew_deadline: Duration,
    /// How often candidates try and the leader renews.
    pub retry: Duration,
}

impl LeaseSettings {
    /// client-go's defaults: 15 s lease, 10 s renew deadline, 2 s retry.
    pub fn new(namespace: &str, name: &str, identity: &str) -> LeaseSettings {
        LeaseSettings {
            namespace: namespace.to_string(),
            name: name.to_string(),
            identity: identity.to_string(),
            duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry: Duration::from_secs(2),
        }
    }

    /// These settings with a lease of `duration` (whole seconds, at least one: the Lease
    /// records seconds), the renew deadline and retry period scaled as client-go's defaults
    /// are (15 s : 10 s : 2 s), so the leader still stops renewing before anyone may take over.
    pub fn with_duration(self, duration: Duration) -> LeaseSettings {
        let duration = Duration::from_secs(duration.as_secs().max(1));
        LeaseSettings { duration, renew_deadline: duration * 2 / 3, retry: duration * 2 / 15, ..self }
    }
}

/// What a candidate does with the Lease it read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeaseDecision {
    /// Take it: free, released, or expired.
    Acquire,
    /// It is ours: renew it.
    Renew,
    /// Someone else holds it.
    Wait {
        /// The holder.
        holder: String,
    },
}

/// Decides from the Lease's spec (none: no Lease yet) at `now`.
pub fn decide(spec: Option<&LeaseSpec>, identity: &str, now: Timestamp) -> LeaseDecision {
    let Some(spec) = spec else { return LeaseDecision::Acquire };
    let holder = spec.holder_identity.clone().unwrap_or_default();
    if holder.is_empty() {
        return LeaseDecision::Acquire;
    }
    if holder == identity {
        return LeaseDecision::Renew;
    }
    let duration = SignedDuration::from_secs(i64::from(spec.lease_duration_seconds.unwrap_or(15)));
    let renewed = spec.renew_time.as_ref().or(spec.acquire_time.as_ref()).map(|t| t.0);
    match renewed {
        Some(renewed) if renewed.saturating_add(duration).is_ok_and(|expires| expires > now) => {
            LeaseDecision::Wait { holder }
        }
        _ => LeaseDecision::Acquire,
    }
}

/// The spec after this candidate acquires or renews.
fn held(previous: Option<&LeaseSpec>, settings: &LeaseSettings, now: Timestamp, acquiring: bool) -> LeaseSpec {
    let previous = previous.cloned().unwrap_or_default();
    let transitions = previous.lease_transitions.unwrap_or(0);
    LeaseSpec {
        holder_identity: Some(settings.identity.clone()),
        lease_duration_seconds: Some(settings.duration.as_secs() as i32),
        acquire_time: if acquiring { Some(MicroTime(now)) } else { previous.acquire_time },
        renew_time: Some(MicroTime(now)),
        lease_transitions: Some(if acquiring && previous.holder_identity.is_some() {
            transitions + 1
        } else {
            transitions
        }),
        ..previous
    }
}

/// Leadership held: renewed in the background until released or lost.
pub struct Leadership {
    settings: LeaseSettings,
    api: Api<Lease>,
    lost: watch::Receiver<bool>,
    renewing: tokio::task::JoinHandle<()>,
}

/// Tries once: `Ok(true)` when this candidate holds the Lease afterwards.
async fn try_hold(api: &Api<Lease>, settings: &LeaseSettings) -> Result<bool, kube::Error> {
    let now = Timestamp::now();
    let existing = api.get_opt(&settings.name).await?;
    let decision = decide(existing.as_ref().and_then(|l| l.spec.as_ref()), &settings.identity, now);
    let acquiring = match decision {
        LeaseDecision::Wait { .. } => return Ok(false),
        LeaseDecision::Acquire => true,
        LeaseDecision::Renew => false,
    };
    let spec = held(existing.as_ref().and_then(|l| l.spec.as_ref()), settings, now, acquiring);
    let written = match existing {
        Some(mut lease) => {
            lease.spec = Some(spec);
            api.replace(&settings.name, &PostParams::default(), &lease).await
        }
        None => {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(settings.name.clone()),
                    namespace: Some(settings.namespace.clone()),
                    ..ObjectMeta::default()
                },
                spec: Some(spec),
            };
            api.create(&PostParams::default(), &lease).await
        }
    };
    match written {
        Ok(_) => {
            if acquiring {
                tracing::info!(lease = %settings.name, identity = %settings.identity, "became the leader");
            }
            Ok(true)
        }
        // Another candidate wrote first.
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(false),
        Err(error) => Err(error),
    }
}

/// Waits until this candidate leads; `None` if `stop` completes first.
///
/// # Errors
/// Only when the Lease cannot be read or written at all (no permission): a standby keeps
/// trying through passing errors.
pub async fn acquire(
    client: Client,
    settings: LeaseSettings,
    stop: impl std::future::Future<Output = ()>,
) -> Result<Option<Leadership>, kube::Error> {
    let api: Api<Lease> = Api::namespaced(client, &settings.namespace);
    let waiting = async {
        let mut announced = false;
        loop {
            match try_hold(&api, &settings).await {
                Ok(true) => return Ok(()),
                Ok(false) if !announced => {
                    announced = true;
                    tracing::info!(lease = %settings.name, "another instance leads; standing by");
                }
                Ok(false) => {}
                Err(kube::Error::Api(status)) if status.code == 403 || status.code == 401 => {
                    return Err(kube::Error::Api(status));
                }
                Err(error) => tracing::warn!(%error, "leader election: trying again"),
            }
            tokio::time::sleep(settings.retry).await;
        }
    };
    tokio::select! {
        result = waiting => result?,
        () = stop => return Ok(None),
    }
    let (report, lost) = watch::channel(false);
    let renewing = tokio::spawn(renew(api.clone(), settings.clone(), report));
    Ok(Some(Leadership { settings, api, lost, renewing }))
}

/// Renews every `retry`; reports loss when renewing failed for `renew_deadline` or someone
/// else took the Lease.
async fn renew(api: Api<Lease>, settings: LeaseSettings, lost: watch::Sender<bool>) {
    let mut last_renewed = tokio::time::Instant::now();
    loop {
        tokio::time::sleep(settings.retry).await;
        match try_hold(&api, &settings).await {
            Ok(true) => last_renewed = tokio::time::Instant::now(),
            Ok(false) => {
                tracing::error!(lease = %settings.name, "another instance took the lease");
                let _ = lost.send(true);
                return;
            }
            Err(error) => tracing::warn!(%error, "renewing the lease failed"),
        }
        if last_renewed.elapsed() > settings.renew_deadline {
            tracing::error!(lease = %settings.name, "could not renew the lease in time");
            let _ = lost.send(true);
            return;
        }
    }
}

impl Leadership {
    /// Completes when leadership is lost: the leader must stop at once.
    pub async fn lost(&self) {
        let mut lost = self.lost.clone();
        let _ = lost.wait_for(|lost| *lost).await;
    }

    /// Stops renewing and gives the Lease up, so a standby takes over at its next try.
    pub async fn release(&self) {
        self.renewing.abort();
        let Ok(Some(mut lease)) = self.api.get_opt(&self.settings.name).await else { return };
        let Some(spec) = lease.spec.as_mut() else { return };
        if spec.holder_identity.as_deref() != Some(self.settings.identity.as_str()) {
            return;
        }
        spec.holder_identity = None;
        spec.lease_duration_seconds = Some(1);
        spec.renew_time = Some(MicroTime(Timestamp::now()));
        match self.api.replace(&self.settings.name, &PostParams::default(), &lease).await {
            Ok(_) => tracing::info!(lease = %self.settings.name, "gave up the lease"),
            Err(error) => tracing::warn!(%error, "giving up the lease failed; it expires on its own"),
        }
    }
}

/// A candidate identity: the host name and a random suffix (two processes on one host differ).
pub fn identity() -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok().map(|h| h.trim().to_string()))
        .unwrap_or_else(|| "bosun".into());
    format!("{host}_{:08x}", rand::random::<u32>())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(second: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + second).expect("time")
    }

    fn lease(holder: Option<&str>, renewed: i64, duration: i32) -> LeaseSpec {
        LeaseSpec {
            holder_identity: holder.map(str::to_string),
            renew_time: Some(MicroTime(at(renewed))),
            lease_duration_seconds: Some(duration),
            ..LeaseSpec::default()
        }
    }

    #[test]
    fn a_lease_is_taken_when_free_released_or_expired() {
        let wait = |holder: &str| LeaseDecision::Wait { holder: holder.into() };
        let cases = [
            (None, 0, LeaseDecision::Acquire),
            (Some(lease(None, 0, 15)), 1, LeaseDecision::Acquire),
            (Some(lease(Some(""), 0, 15)), 1, LeaseDecision::Acquire),
            (Some(lease(Some("me"), 0, 15)), 100, LeaseDecision::Renew),
            (Some(lease(Some("other"), 0, 15)), 14, wait("other")),
            (Some(lease(Some("other"), 0, 15)), 15, LeaseDecision::Acquire),
            (Some(lease(Some("other"), 0, 1)), 2, LeaseDecision::Acquire),
        ];
        for (spec, now, expected) in cases {
            assert_eq!(decide(spec.as_ref(), "me", at(now)), expected, "{spec:?} at +{now}s");
        }
    }

    #[test]
    fn a_shorter_lease_renews_and_retries_as_much_sooner() {
        let cases =
            [(15_000, (15, 10_000, 2_000)), (3_000, (3, 2_000, 400)), (1_500, (1, 666, 133)), (0, (1, 666, 133))];
        for (millis, (seconds, renew, retry)) in cases {
            let settings = LeaseSettings::new("ns", "lease", "me").with_duration(Duration::from_millis(millis));
            let got = (settings.duration.as_secs(), settings.renew_deadline.as_millis(), settings.retry.as_millis());
            assert_eq!(got, (seconds, renew, retry), "{millis} ms");
        }
    }

    #[test]
    fn acquiring_counts_transitions_and_renewing_keeps_the_acquire_time() {
        let settings = LeaseSettings::new("ns", "lease", "me");
        let first = held(None, &settings, at(0), true);
        assert_eq!((first.lease_transitions, first.lease_duration_seconds), (Some(0), Some(15)));
        let renewed = held(Some(&first), &settings, at(2), false);
        assert_eq!(renewed.acquire_time, Some(MicroTime(at(0))));
        assert_eq!(renewed.renew_time, Some(MicroTime(at(2))));
        let other = LeaseSpec { holder_identity: Some("other".into()), lease_transitions: Some(3), ..first };
        assert_eq!(held(Some(&other), &settings, at(30), true).lease_transitions, Some(4));
    }
}
