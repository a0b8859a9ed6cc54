//! Who may do what, as a real API server decides it: authentication (tokens → users),
//! impersonation, RBAC authorization with upstream's default roles, escalation prevention, and
//! the review APIs clients ask these questions through (`kubectl auth can-i`, `whoami`,
//! `create token`). The decisions are pure functions of a [`rbac::Policy`] snapshot; [`Auth`]
//! keeps that snapshot current and is what the HTTP layer calls.

pub mod attributes;
pub mod authentication;
pub mod defaults;
pub mod escalation;
pub mod impersonation;
pub mod rbac;
pub mod reviews;
pub mod serviceaccount;
pub mod user;

use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::{
    cluster::{self, Cluster},
    error::ApiError,
};
use attributes::Attributes;
use authentication::Authenticator;
use rbac::{Decision, Policy};
use user::User;

/// How requests are authorized.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AuthorizationMode {
    /// RBAC, with `system:masters` allowed everything (upstream's default setup).
    #[default]
    Rbac,
    /// Every authenticated request is allowed (and, as upstream, anonymous requests are refused).
    AlwaysAllow,
}

/// Authentication, authorization and the RBAC snapshot they share.
#[derive(Debug)]
pub struct Auth {
    /// Who tokens stand for.
    pub authenticator: Authenticator,
    /// How requests are authorized.
    pub mode: AuthorizationMode,
    /// Whether requests must carry credentials (HTTPS): without, they are anonymous (RBAC) or
    /// refused (AlwaysAllow). Over plain HTTP a request without a token acts as the admin, as
    /// upstream's old insecure port did; tokens given are still honoured.
    pub credentials_required: bool,
    policy: Mutex<Option<(u64, Arc<Policy>)>>,
}

impl Auth {
    /// Authentication and authorization with these settings.
    pub fn new(authenticator: Authenticator, mode: AuthorizationMode, credentials_required: bool) -> Self {
        Self { authenticator, mode, credentials_required, policy: Mutex::new(None) }
    }

    /// The user of a request from its `Authorization` header: 401 for a token that stands for
    /// nobody (and, without RBAC, for a missing one where credentials are required).
    pub fn identify(&self, authorization: Option<&str>, cluster: &Cluster) -> Result<User, ApiError> {
        let token = authorization.and_then(|value| value.strip_prefix("Bearer ")).map(str::trim);
        match token {
            Some(token) if !token.is_empty() => match self.authenticator.authenticate(token, None, &cluster.store) {
                Ok(authenticated) => Ok(authenticated.user),
                Err(error) => {
                    // The token itself is never logged.
                    tracing::debug!(%error, "authentication failed");
                    Err(ApiError::unauthorized())
                }
            },
            _ if !self.credentials_required => Ok(User::admin()),
            _ if self.mode == AuthorizationMode::Rbac => Ok(User::anonymous()),
            _ => Err(ApiError::unauthorized()),
        }
    }

    /// The current RBAC snapshot, rebuilt when RBAC objects changed since the last one.
    pub fn policy(&self, cluster: &Cluster) -> Arc<Policy> {
        let generation = cluster.rbac_generation();
        let mut cached = self.policy.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((built, policy)) = cached.as_ref()
            && *built == generation
        {
            return policy.clone();
        }
        let all = |key: &str| -> Vec<Value> { cluster.store.all(key).iter().map(|s| s.value.clone()).collect() };
        let policy = Arc::new(Policy::new(
            &all(cluster::CLUSTER_ROLES_KEY),
            &all(cluster::ROLES_KEY),
            &all(cluster::CLUSTER_ROLE_BINDINGS_KEY),
            &all(cluster::ROLE_BINDINGS_KEY),
        ));
        *cached = Some((generation, policy.clone()));
        policy
    }

    /// Decides whether `user` may do what `attributes` say.
    pub fn authorize(&self, user: &User, attributes: &Attributes, cluster: &Cluster) -> Decision {
        match self.mode {
            AuthorizationMode::AlwaysAllow => Decision::Allow(String::new()),
            AuthorizationMode::Rbac if user.is_privileged() => Decision::Allow(String::new()),
            AuthorizationMode::Rbac => self.policy(cluster).authorize(user, attributes),
        }
    }

    /// Authorizes or answers upstream's 403.
    pub fn check(&self, user: &User, attributes: &Attributes, cluster: &Cluster) -> Result<(), ApiError> {
        match self.authorize(user, attributes, cluster) {
            Decision::Allow(_) => Ok(()),
            Decision::Deny(reason) => Err(attributes.forbidden(&user.name, &reason)),
        }
    }
}
