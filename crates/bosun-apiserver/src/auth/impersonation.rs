//! Impersonation headers (`Impersonate-User`, `-Group`, `-Uid`, `-Extra-<key>`) as upstream
//! reads them: each asks for an `impersonate` permission (on users, groups, serviceaccounts,
//! uids or userextras), and together they describe the user the request then acts as.

use std::collections::BTreeMap;

use super::{
    attributes::Attributes,
    user::{self, User},
};

const USER_HEADER: &str = "impersonate-user";
const GROUP_HEADER: &str = "impersonate-group";
const UID_HEADER: &str = "impersonate-uid";
const EXTRA_PREFIX: &str = "impersonate-extra-";

/// One thing a request asks to impersonate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A user.
    User(String),
    /// A ServiceAccount (an `Impersonate-User` of the form `system:serviceaccount:NS:NAME`).
    ServiceAccount {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
    },
    /// A group.
    Group(String),
    /// One value of an extra attribute.
    Extra {
        /// The key (lower case, unescaped).
        key: String,
        /// The value.
        value: String,
    },
    /// A uid.
    Uid(String),
}

/// Why impersonation headers cannot be honoured.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImpersonationError {
    /// Groups, extras or a uid without a user (upstream answers 500 with this text).
    #[error("requested {0} without impersonating a user")]
    WithoutUser(String),
}

impl Target {
    /// The `impersonate` check this target needs.
    pub fn attributes(&self) -> Attributes {
        match self {
            Target::User(name) => Attributes::resource("impersonate", "", "users", "", name),
            Target::ServiceAccount { namespace, name } => {
                Attributes::resource("impersonate", "", "serviceaccounts", namespace, name)
            }
            Target::Group(name) => Attributes::resource("impersonate", "", "groups", "", name),
            Target::Extra { key, value } => {
                Attributes::resource("impersonate", "authentication.k8s.io", "userextras", "", value)
                    .with_subresource(key)
            }
            Target::Uid(uid) => Attributes::resource("impersonate", "authentication.k8s.io", "uids", "", uid),
        }
    }

    /// Go's `%v` of the `ObjectReference` upstream builds for this target (its error text).
    fn go_value(&self) -> String {
        // Kind, Namespace, Name, UID, APIVersion, ResourceVersion, FieldPath.
        let fields: [&str; 7] = match self {
            Target::User(name) => ["User", "", name, "", "", "", ""],
            Target::ServiceAccount { namespace, name } => ["ServiceAccount", namespace, name, "", "", "", ""],
            Target::Group(name) => ["Group", "", name, "", "", "", ""],
            Target::Extra { key, value } => ["UserExtra", "", value, "", "authentication.k8s.io/v1", "", key],
            Target::Uid(uid) => ["UID", "", uid, "", "authentication.k8s.io/v1", "", ""],
        };
        format!("{{{}}}", fields.join(" "))
    }
}

/// Reads the impersonation headers (names in lower case, in the order given) into targets:
/// the user, groups, extras, uid. Empty when there are none.
pub fn targets<'a>(headers: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<Vec<Target>, ImpersonationError> {
    let (mut user, mut groups, mut extras, mut uid) = (None, Vec::new(), Vec::new(), None);
    for (name, value) in headers {
        match name {
            USER_HEADER if user.is_none() && !value.is_empty() => user = Some(value),
            GROUP_HEADER => groups.push(Target::Group(value.to_string())),
            UID_HEADER if uid.is_none() && !value.is_empty() => uid = Some(Target::Uid(value.to_string())),
            _ => {
                if let Some(key) = name.strip_prefix(EXTRA_PREFIX) {
                    extras.push(Target::Extra { key: unescape(key), value: value.to_string() });
                }
            }
        }
    }
    let mut targets: Vec<Target> = user
        .map(|name| match user::split_service_account(name) {
            Some((namespace, sa)) => Target::ServiceAccount { namespace: namespace.into(), name: sa.into() },
            None => Target::User(name.to_string()),
        })
        .into_iter()
        .collect();
    let has_user = !targets.is_empty();
    targets.extend(groups);
    targets.extend(extras);
    targets.extend(uid);
    if !has_user && !targets.is_empty() {
        let listed: Vec<String> = targets.iter().map(Target::go_value).collect();
        return Err(ImpersonationError::WithoutUser(format!("[{}]", listed.join(" "))));
    }
    Ok(targets)
}

/// Percent-decodes an extra key (kept as is when it is not valid escaping).
fn unescape(key: &str) -> String {
    let bytes = key.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let Some(byte) = key.get(i + 1..i + 3).and_then(|hex| u8::from_str_radix(hex, 16).ok()) else {
                return key.to_string();
            };
            out.push(byte);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| key.to_string())
}

/// The user a request acts as once every target was allowed: a ServiceAccount gets its groups
/// unless groups were given; everyone but `system:anonymous` is in `system:authenticated`
/// unless `system:unauthenticated` was asked for.
pub fn impersonated(targets: &[Target]) -> User {
    let groups_given = targets.iter().any(|t| matches!(t, Target::Group(_)));
    let mut user = User::default();
    let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for target in targets {
        match target {
            Target::User(name) => user.name = name.clone(),
            Target::ServiceAccount { namespace, name } => {
                user.name = user::service_account_name(namespace, name);
                if !groups_given {
                    user.groups = user::service_account_groups(namespace);
                }
            }
            Target::Group(group) => user.groups.push(group.clone()),
            Target::Extra { key, value } => extra.entry(key.clone()).or_default().push(value.clone()),
            Target::Uid(uid) => user.uid = uid.clone(),
        }
    }
    user.extra = extra;
    let missing = if user.name == user::ANONYMOUS {
        (!user.in_group(user::UNAUTHENTICATED)).then_some(user::UNAUTHENTICATED)
    } else {
        (!user.in_group(user::AUTHENTICATED) && !user.in_group(user::UNAUTHENTICATED)).then_some(user::AUTHENTICATED)
    };
    user.groups.extend(missing.map(String::from));
    user
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_become_targets_in_upstreams_order() {
        let headers = [
            ("impersonate-group", "ops"),
            ("impersonate-user", "system:serviceaccount:ci:deployer"),
            ("impersonate-extra-scopes", "view"),
            ("impersonate-extra-example.com%2fteam", "blue"),
            ("impersonate-uid", "1234"),
            ("accept", "application/json"),
        ];
        assert_eq!(
            targets(headers).expect("valid"),
            [
                Target::ServiceAccount { namespace: "ci".into(), name: "deployer".into() },
                Target::Group("ops".into()),
                Target::Extra { key: "scopes".into(), value: "view".into() },
                Target::Extra { key: "example.com/team".into(), value: "blue".into() },
                Target::Uid("1234".into()),
            ]
        );
        assert_eq!(targets([("accept", "x")]).expect("none"), []);
        assert_eq!(
            targets([("impersonate-group", "ops")]).expect_err("no user").to_string(),
            "requested [{Group  ops    }] without impersonating a user"
        );
    }

    #[test]
    fn impersonated_users_get_upstreams_groups() {
        let sa = impersonated(&[Target::ServiceAccount { namespace: "ci".into(), name: "deployer".into() }]);
        assert_eq!(sa.name, "system:serviceaccount:ci:deployer");
        assert_eq!(sa.groups, ["system:serviceaccounts", "system:serviceaccounts:ci", "system:authenticated"]);
        let sa_with_group = impersonated(&[
            Target::ServiceAccount { namespace: "ci".into(), name: "deployer".into() },
            Target::Group("ops".into()),
        ]);
        assert_eq!(sa_with_group.groups, ["ops", "system:authenticated"]);
        let bob = impersonated(&[Target::User("bob".into()), Target::Uid("7".into())]);
        assert_eq!((bob.uid.as_str(), bob.groups.as_slice()), ("7", &["system:authenticated".to_string()][..]));
        let anonymous = impersonated(&[Target::User("system:anonymous".into())]);
        assert_eq!(anonymous.groups, ["system:unauthenticated"]);
        let extras = impersonated(&[
            Target::User("bob".into()),
            Target::Extra { key: "scopes".into(), value: "a".into() },
            Target::Extra { key: "scopes".into(), value: "b".into() },
        ]);
        assert_eq!(extras.extra["scopes"], ["a", "b"]);
    }

    #[test]
    fn each_target_asks_for_its_own_permission() {
        let extra = Target::Extra { key: "scopes".into(), value: "view".into() }.attributes();
        assert_eq!(
            extra.refusal("alice"),
            r#"User "alice" cannot impersonate resource "userextras/scopes" in API group "authentication.k8s.io" at the cluster scope"#
        );
        let sa = Target::ServiceAccount { namespace: "ci".into(), name: "d".into() }.attributes();
        assert_eq!(
            sa.forbidden("alice", "").message,
            r#"serviceaccounts "d" is forbidden: User "alice" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "ci""#
        );
    }
}
