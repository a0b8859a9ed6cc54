//! Authentication: which user a bearer token stands for — the server's own token
//! (`system:masters`), named users' static tokens (`--user`, a token file in upstream's CSV
//! format), or a ServiceAccount token this server signed, checked for audience, expiry and
//! that its ServiceAccount (and the Pod or Secret it is bound to) still exists.

use std::path::{Path, PathBuf};

use subtle::ConstantTimeEq as _;

use super::{
    serviceaccount::{Claims, ISSUER, ObjectRef, Signer, TokenError, looks_like_jwt},
    user::User,
};
use crate::store::Store;

/// The extra attribute naming the credential a ServiceAccount user authenticated with.
const CREDENTIAL_ID: &str = "authentication.kubernetes.io/credential-id";
const POD_NAME: &str = "authentication.kubernetes.io/pod-name";
const POD_UID: &str = "authentication.kubernetes.io/pod-uid";

/// Why a token does not authenticate anyone (or the token file cannot be read).
#[derive(Debug, thiserror::Error)]
pub enum AuthenticationError {
    /// No known token, and not a token this server signed.
    #[error("invalid bearer token")]
    UnknownToken,
    /// A ServiceAccount token that does not verify (signature, issuer, expiry).
    #[error(transparent)]
    ServiceAccount(#[from] TokenError),
    /// A ServiceAccount token for other audiences.
    #[error("token audiences {token:?} is invalid for the target audiences {wanted:?}")]
    Audience {
        /// The token's audiences.
        token: Vec<String>,
        /// The audiences accepted.
        wanted: Vec<String>,
    },
    /// The object a token names (its ServiceAccount, or the Pod or Secret it is bound to) is
    /// gone or was replaced.
    #[error("{kind} {namespace}/{name} has been deleted")]
    Deleted {
        /// `service account`, `pod` or `secret`.
        kind: &'static str,
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
    },
    /// A static token file could not be used.
    #[error("token file {path}: {message}")]
    TokenFile {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

/// A named user with a static bearer token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaticUser {
    /// The user name.
    pub name: String,
    /// Its uid (may be empty).
    pub uid: String,
    /// Its groups (`system:authenticated` is added).
    pub groups: Vec<String>,
    /// The bearer token.
    pub token: String,
}

impl StaticUser {
    /// The user this token authenticates.
    fn user(&self) -> User {
        User::authenticated(&self.name, &self.uid, self.groups.clone())
    }
}

/// Reads a static token file in upstream's format: `token,user,uid[,"group1,group2"]` per line.
pub fn read_token_file(path: &Path) -> Result<Vec<StaticUser>, AuthenticationError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| AuthenticationError::TokenFile { path: path.to_path_buf(), message: e.to_string() })?;
    parse_token_file(&text).map_err(|message| AuthenticationError::TokenFile { path: path.to_path_buf(), message })
}

/// Parses the lines of a static token file (blank lines skipped).
pub fn parse_token_file(text: &str) -> Result<Vec<StaticUser>, String> {
    let mut users = Vec::new();
    for (number, line) in text.lines().enumerate().filter(|(_, line)| !line.trim().is_empty()) {
        let fields = csv_fields(line);
        if fields.len() < 3 {
            return Err(format!(
                "line {}: must have at least 3 columns (token, user name, user uid), found {}",
                number + 1,
                fields.len()
            ));
        }
        if fields[0].is_empty() {
            return Err(format!("line {}: the token is empty", number + 1));
        }
        let groups = fields.get(3).map(|g| g.split(',').map(|g| g.trim().to_string()).filter(|g| !g.is_empty()));
        users.push(StaticUser {
            token: fields[0].clone(),
            name: fields[1].clone(),
            uid: fields[2].clone(),
            groups: groups.into_iter().flatten().collect(),
        });
    }
    Ok(users)
}

/// The fields of one CSV line (double quotes group commas; `""` is a quote).
fn csv_fields(line: &str) -> Vec<String> {
    let (mut fields, mut field, mut quoted) = (Vec::new(), String::new(), false);
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            ',' if !quoted => fields.push(std::mem::take(&mut field).trim().to_string()),
            c => field.push(c),
        }
    }
    fields.push(field.trim().to_string());
    fields
}

/// Who tokens stand for.
#[derive(Debug)]
pub struct Authenticator {
    admin_token: Option<String>,
    users: Vec<StaticUser>,
    signer: Signer,
}

/// A token that authenticated: its user and the audiences it is valid for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authenticated {
    /// The user.
    pub user: User,
    /// The audiences (of those asked for) the token is valid for.
    pub audiences: Vec<String>,
}

/// What a new ServiceAccount token says.
#[derive(Debug, Clone)]
pub struct TokenGrant {
    /// The ServiceAccount's namespace.
    pub namespace: String,
    /// The ServiceAccount.
    pub service_account: ObjectRef,
    /// Audiences.
    pub audiences: Vec<String>,
    /// Lifetime in seconds.
    pub expiration_seconds: u64,
    /// The bound object: `Pod` or `Secret`, and which.
    pub bound: Option<(String, ObjectRef)>,
}

/// The audiences the API server accepts when a request names none.
pub fn api_audiences() -> Vec<String> {
    vec![ISSUER.to_string()]
}

impl Authenticator {
    /// An authenticator for the server's own token (if any), static users and ServiceAccount
    /// tokens signed with `signer`.
    pub fn new(admin_token: Option<String>, users: Vec<StaticUser>, signer: Signer) -> Self {
        Self { admin_token, users, signer }
    }

    /// Who `token` stands for, for the given audiences (the API server's when `None`).
    pub fn authenticate(
        &self,
        token: &str,
        audiences: Option<&[String]>,
        store: &Store,
    ) -> Result<Authenticated, AuthenticationError> {
        let wanted = audiences.map(<[String]>::to_vec).unwrap_or_else(api_audiences);
        let same = |known: &str| bool::from(known.as_bytes().ct_eq(token.as_bytes()));
        if self.admin_token.as_deref().is_some_and(same) {
            return Ok(Authenticated { user: User::admin(), audiences: wanted });
        }
        // Every static token is compared in full, so timing does not tell which one is close.
        let found = self.users.iter().fold(None, |found, user| if same(&user.token) { Some(user) } else { found });
        if let Some(user) = found {
            return Ok(Authenticated { user: user.user(), audiences: wanted });
        }
        if !looks_like_jwt(token) {
            return Err(AuthenticationError::UnknownToken);
        }
        let claims = self.signer.verify(token)?;
        let audiences: Vec<String> = claims.aud.iter().filter(|a| wanted.contains(a)).cloned().collect();
        if audiences.is_empty() {
            return Err(AuthenticationError::Audience { token: claims.aud.clone(), wanted });
        }
        Ok(Authenticated { user: service_account_user(&claims, store)?, audiences })
    }

    /// Signs a new ServiceAccount token; returns it with its expiry (seconds since the epoch).
    pub fn issue(&self, grant: &TokenGrant, now: u64, jti: String) -> Result<(String, u64), TokenError> {
        let exp = now + grant.expiration_seconds;
        let mut kubernetes = super::serviceaccount::KubernetesClaims {
            namespace: grant.namespace.clone(),
            serviceaccount: grant.service_account.clone(),
            pod: None,
            secret: None,
        };
        match &grant.bound {
            Some((kind, object)) if kind == "Pod" => kubernetes.pod = Some(object.clone()),
            Some((kind, object)) if kind == "Secret" => kubernetes.secret = Some(object.clone()),
            _ => {}
        }
        let claims = Claims {
            aud: grant.audiences.clone(),
            exp,
            iat: now,
            iss: ISSUER.to_string(),
            jti,
            nbf: now,
            sub: super::user::service_account_name(&grant.namespace, &grant.service_account.name),
            kubernetes,
        };
        Ok((self.signer.sign(&claims)?, exp))
    }
}

/// The ServiceAccount user of verified claims, once its ServiceAccount (and bound object) are
/// found with the uids the token names.
fn service_account_user(claims: &Claims, store: &Store) -> Result<User, AuthenticationError> {
    let namespace = &claims.kubernetes.namespace;
    let exists = |key: &str, kind: &'static str, object: &ObjectRef| {
        let gone = || AuthenticationError::Deleted { kind, namespace: namespace.clone(), name: object.name.clone() };
        let stored = store.get(key, namespace, &object.name).ok_or_else(gone)?;
        match crate::object::uid(&stored.value) == object.uid {
            true => Ok(()),
            false => Err(gone()),
        }
    };
    let account = &claims.kubernetes.serviceaccount;
    exists("serviceaccounts", "service account", account)?;
    let mut user = User::service_account(namespace, &account.name, &account.uid);
    user.extra.insert(CREDENTIAL_ID.to_string(), vec![format!("JTI={}", claims.jti)]);
    if let Some(pod) = &claims.kubernetes.pod {
        exists("pods", "pod", pod)?;
        user.extra.insert(POD_NAME.to_string(), vec![pod.name.clone()]);
        user.extra.insert(POD_UID.to_string(), vec![pod.uid.clone()]);
    }
    if let Some(secret) = &claims.kubernetes.secret {
        exists("secrets", "secret", secret)?;
    }
    Ok(user)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::store::Mutation;

    #[test]
    fn token_files_read_as_upstreams() {
        let users = parse_token_file("t1,alice,u1,\"dev,ops\"\n\nt2,bob,u2\n").expect("valid");
        assert_eq!(
            users[0],
            StaticUser {
                token: "t1".into(),
                name: "alice".into(),
                uid: "u1".into(),
                groups: vec!["dev".into(), "ops".into()]
            }
        );
        assert_eq!((users[1].name.as_str(), users[1].groups.len()), ("bob", 0));
        assert_eq!(
            parse_token_file("t1,alice").expect_err("short"),
            "line 1: must have at least 3 columns (token, user name, user uid), found 2"
        );
    }

    async fn put(store: &Store, key: &str, namespace: &str, name: &str, uid: &str) {
        let value = json!({"metadata": {"name": name, "namespace": namespace, "uid": uid}});
        store
            .write::<crate::store::StoreError>(key, namespace, name, false, |_| Ok(Some(Mutation::Put(value))))
            .await
            .expect("put");
    }

    #[tokio::test]
    async fn tokens_stand_for_their_users_while_their_objects_exist() {
        let store = Store::in_memory(10);
        let alice = StaticUser {
            token: "alice-token".into(),
            name: "alice".into(),
            uid: String::new(),
            groups: vec!["dev".into()],
        };
        let auth =
            Authenticator::new(Some("admin-token".into()), vec![alice], Signer::load_or_create(None).expect("signer"));
        assert_eq!(auth.authenticate("admin-token", None, &store).expect("admin").user, User::admin());
        assert_eq!(
            auth.authenticate("alice-token", None, &store).expect("alice").user.groups,
            ["dev", "system:authenticated"]
        );
        assert!(matches!(auth.authenticate("nobody", None, &store), Err(AuthenticationError::UnknownToken)));

        put(&store, "serviceaccounts", "ci", "deployer", "sa-uid").await;
        put(&store, "pods", "ci", "runner", "pod-uid").await;
        let grant = TokenGrant {
            namespace: "ci".into(),
            service_account: ObjectRef { name: "deployer".into(), uid: "sa-uid".into() },
            audiences: api_audiences(),
            expiration_seconds: 600,
            bound: Some(("Pod".into(), ObjectRef { name: "runner".into(), uid: "pod-uid".into() })),
        };
        let now = jsonwebtoken::get_current_timestamp();
        let (token, exp) = auth.issue(&grant, now, "jti-1".into()).expect("issue");
        assert_eq!(exp, now + 600);
        let sa = auth.authenticate(&token, None, &store).expect("service account");
        assert_eq!(sa.user.name, "system:serviceaccount:ci:deployer");
        assert_eq!(sa.user.extra[CREDENTIAL_ID], ["JTI=jti-1"]);
        assert_eq!(sa.user.extra[POD_NAME], ["runner"]);
        let other_audience = ["https://vault.example".to_string()];
        assert!(matches!(
            auth.authenticate(&token, Some(&other_audience), &store),
            Err(AuthenticationError::Audience { .. })
        ));

        put(&store, "pods", "ci", "runner", "another-pod").await;
        let error = auth.authenticate(&token, None, &store).expect_err("pod replaced");
        assert_eq!(error.to_string(), "pod ci/runner has been deleted");
        store
            .write::<crate::store::StoreError>("serviceaccounts", "ci", "deployer", false, |_| {
                Ok(Some(Mutation::Delete(None)))
            })
            .await
            .expect("delete");
        let unbound = TokenGrant { bound: None, ..grant };
        let (token, _) = auth.issue(&unbound, now, "jti-2".into()).expect("issue");
        assert_eq!(
            auth.authenticate(&token, None, &store).expect_err("gone").to_string(),
            "service account ci/deployer has been deleted"
        );
    }
}
