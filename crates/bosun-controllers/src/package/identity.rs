//! Who a Package's run acts as — its ServiceAccount, impersonated, or the controller itself —
//! and on which cluster: the run's [`Target`].

use kube::Client;

use bosun_api::package::PackageResource;
use bosun_kit::{Failure, Run};

use super::{
    PackageReconciler,
    remote::{RemoteError, Target},
    status::FAILED,
};

/// The user a Package applies as: its ServiceAccount (`system:serviceaccount:ns:name`), if it
/// names one or the controller has a default; a name that is no ServiceAccount name (blank,
/// spaces, capitals) is refused rather than impersonated.
fn service_account(resource: &PackageResource, default: Option<&str>) -> Result<Option<String>, Failure> {
    let Some(name) = resource.spec.service_account_name.as_deref().or(default) else { return Ok(None) };
    if !is_service_account_name(name) {
        let message = format!(
            "spec.serviceAccountName: {name:?} is not a ServiceAccount name (lowercase letters, digits, '-' and '.')"
        );
        return Err(Failure::give_up("InvalidServiceAccount", &message));
    }
    let namespace = resource.metadata.namespace.as_deref().unwrap_or_default();
    Ok(Some(format!("system:serviceaccount:{namespace}:{name}")))
}

/// Whether `name` is a valid object name (a DNS subdomain), as ServiceAccounts' are.
fn is_service_account_name(name: &str) -> bool {
    let allowed = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.';
    let alphanumeric = |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    name.len() <= 253
        && name.chars().all(allowed)
        && alphanumeric(name.chars().next())
        && alphanumeric(name.chars().last())
}

impl PackageReconciler {
    /// Where the run applies: this cluster or the `spec.kubeConfig` one, as the controller or
    /// as the Package's ServiceAccount (impersonated on the cluster applied to).
    pub(super) async fn target(&self, run: &Run<PackageResource>) -> Result<Target, Failure> {
        let resource = run.object();
        let user = service_account(resource, self.settings.default_service_account.as_deref())?;
        if let Some(kube_config) = &resource.spec.kube_config {
            let retry = resource.spec.retry_interval();
            let failed = |e: RemoteError| Failure::retry(e.reason(), e.to_string()).within(retry);
            let target = self
                .remotes
                .target(run.client(), resource, &kube_config.secret_ref, user.as_deref())
                .await
                .map_err(failed)?;
            // Every run asks the remote cluster whether it answers: a resync served from the
            // cache would otherwise say nothing of a cluster gone.
            target.check_reachable(&self.remotes).await.map_err(failed)?;
            return Ok(target);
        }
        let (client, cache) = match user {
            None => (run.client().clone(), self.cache.clone()),
            Some(user) => (self.impersonating(&user)?, self.cache.namespaces_only()),
        };
        Ok(Target { client, resolver: run.resolver().clone(), cache, remote: None })
    }

    /// The client a chart's `valuesFrom` is read with: this cluster (where the Package is), as
    /// the Package's ServiceAccount when it has one — a tenant reads only what that account may.
    pub(super) fn values_client(&self, run: &Run<PackageResource>) -> Result<Client, Failure> {
        let resource = run.object();
        match service_account(resource, self.settings.default_service_account.as_deref())? {
            Some(user) => self.impersonating(&user),
            None => Ok(run.client().clone()),
        }
    }

    /// A client of this cluster impersonating `user`, made once.
    fn impersonating(&self, user: &str) -> Result<Client, Failure> {
        self.clients.client(user).map_err(|e| Failure::retry(FAILED, format!("a client impersonating {user}: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_service_account_names_are_impersonated() {
        let package = |name: Option<&str>| {
            let mut resource = PackageResource::new("web", bosun_api::package::PackageSpec::default());
            resource.metadata.namespace = Some("team-a".into());
            resource.spec.service_account_name = name.map(str::to_string);
            resource
        };
        let cases = [
            (None, None, Ok(None)),
            (None, Some("deployer"), Ok(Some("system:serviceaccount:team-a:deployer"))),
            (Some("ci.bot-1"), Some("deployer"), Ok(Some("system:serviceaccount:team-a:ci.bot-1"))),
            (Some(""), Some("deployer"), Err("\"\" is not a ServiceAccount name")),
            (Some("  "), None, Err("\"  \" is not a ServiceAccount name")),
            (Some("Admin"), None, Err("\"Admin\" is not")),
            (Some("-x"), None, Err("\"-x\" is not")),
            (Some("a:b"), None, Err("\"a:b\" is not")),
        ];
        for (name, default, expected) in cases {
            let result = service_account(&package(name), default);
            match expected {
                Ok(user) => assert_eq!(result.expect("valid").as_deref(), user, "{name:?}"),
                Err(message) => {
                    let failure = result.expect_err("invalid");
                    assert!(failure.message.contains(message), "{name:?}: {}", failure.message);
                    assert_eq!(failure.reason, "InvalidServiceAccount");
                }
            }
        }
    }
}
