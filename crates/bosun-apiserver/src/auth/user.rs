//! Who a request comes from: a user name, a uid, groups and extra attributes, as upstream's
//! `user.Info`, with the names and groups upstream gives the identities the server knows.

use std::collections::BTreeMap;

/// The group whose members may do anything (checked before RBAC, as upstream does).
pub const MASTERS: &str = "system:masters";
/// Every authenticated user's group.
pub const AUTHENTICATED: &str = "system:authenticated";
/// The group of requests that carry no credentials.
pub const UNAUTHENTICATED: &str = "system:unauthenticated";
/// The user of requests that carry no credentials.
pub const ANONYMOUS: &str = "system:anonymous";
/// The group of every ServiceAccount.
pub const SERVICE_ACCOUNTS: &str = "system:serviceaccounts";
/// The user the server's own token (and, over plain HTTP, a request without a token) acts as:
/// the name kubeadm gives the admin of a cluster.
pub const ADMIN: &str = "kubernetes-admin";

const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";

/// An authenticated (or anonymous) user.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct User {
    /// The user name.
    pub name: String,
    /// A unique id; empty when unknown.
    pub uid: String,
    /// The groups, in the order upstream lists them.
    pub groups: Vec<String>,
    /// Extra attributes (`authentication.kubernetes.io/credential-id`, impersonated extras, …).
    pub extra: BTreeMap<String, Vec<String>>,
}

impl User {
    /// The cluster administrator: member of `system:masters`.
    pub fn admin() -> Self {
        Self::authenticated(ADMIN, "", vec![MASTERS.to_string()])
    }

    /// The user of a request without credentials.
    pub fn anonymous() -> Self {
        User { name: ANONYMOUS.to_string(), groups: vec![UNAUTHENTICATED.to_string()], ..User::default() }
    }

    /// A user who proved who they are: their groups plus `system:authenticated` (unless they
    /// already name it or `system:unauthenticated`), as upstream's authenticators add it.
    pub fn authenticated(name: &str, uid: &str, mut groups: Vec<String>) -> Self {
        if !groups.iter().any(|g| g == AUTHENTICATED || g == UNAUTHENTICATED) {
            groups.push(AUTHENTICATED.to_string());
        }
        User { name: name.to_string(), uid: uid.to_string(), groups, extra: BTreeMap::new() }
    }

    /// A ServiceAccount: `system:serviceaccount:NS:NAME` in `system:serviceaccounts`,
    /// `system:serviceaccounts:NS` and `system:authenticated`.
    pub fn service_account(namespace: &str, name: &str, uid: &str) -> Self {
        Self::authenticated(&service_account_name(namespace, name), uid, service_account_groups(namespace))
    }

    /// Whether the user is a member of `group`.
    pub fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }

    /// Whether the user may do anything regardless of RBAC (`system:masters`).
    pub fn is_privileged(&self) -> bool {
        self.in_group(MASTERS)
    }
}

/// The user name of a ServiceAccount.
pub fn service_account_name(namespace: &str, name: &str) -> String {
    format!("{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}")
}

/// The groups of a ServiceAccount (without `system:authenticated`).
pub fn service_account_groups(namespace: &str) -> Vec<String> {
    vec![SERVICE_ACCOUNTS.to_string(), format!("{SERVICE_ACCOUNTS}:{namespace}")]
}

/// The namespace and name of a ServiceAccount user name, when it is one (both parts valid, as
/// upstream's `SplitUsername` requires).
pub fn split_service_account(user: &str) -> Option<(&str, &str)> {
    let rest = user.strip_prefix(SERVICE_ACCOUNT_PREFIX)?;
    let (namespace, name) = rest.split_once(':')?;
    let valid = crate::names::dns1123_label(namespace).is_empty()
        && crate::names::dns1123_subdomain(name).is_empty()
        && !name.contains(':');
    valid.then_some((namespace, name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identities_have_upstreams_groups() {
        assert_eq!(User::admin().groups, [MASTERS, AUTHENTICATED]);
        assert_eq!(User::anonymous().groups, [UNAUTHENTICATED]);
        let sa = User::service_account("team-a", "deployer", "u1");
        assert_eq!(sa.name, "system:serviceaccount:team-a:deployer");
        assert_eq!(sa.groups, ["system:serviceaccounts", "system:serviceaccounts:team-a", "system:authenticated"]);
        let named = User::authenticated("alice", "", vec![UNAUTHENTICATED.to_string()]);
        assert_eq!(named.groups, [UNAUTHENTICATED], "no system:authenticated beside system:unauthenticated");
    }

    #[test]
    fn service_account_names_split_only_when_valid() {
        let cases = [
            ("system:serviceaccount:ns:sa", Some(("ns", "sa"))),
            ("system:serviceaccount:ns:sa.dotted", Some(("ns", "sa.dotted"))),
            ("system:serviceaccount:ns", None),
            ("system:serviceaccount:ns:sa:extra", None),
            ("system:serviceaccount:NS:sa", None),
            ("system:serviceaccount::sa", None),
            ("alice", None),
        ];
        for (user, expected) in cases {
            assert_eq!(split_service_account(user), expected, "{user}");
        }
    }
}
