//! Who is asking, and with which credentials the dashboard reads and writes for them.
//!
//! - `bosun ui`: the kubeconfig's identity, for the one person at this machine (loopback).
//! - In a cluster (`bosun controller --ui-addr`, `bosun ui --sign-in`): each person's own bearer
//!   token — typed into the sign-in form (kept server-side, in memory, behind a random session
//!   cookie) or put in the `Authorization` header by an authenticating proxy. The controller's own
//!   credentials are never used for a person: every API call is theirs, so RBAC decides what
//!   they see and may press.
//!
//! Every form that changes something carries a CSRF token: an HMAC, under a key made at start,
//! of who is asking (the session, the bearer token's hash, or the local user), checked in
//! constant time.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use axum::http::{HeaderMap, header};
use bosun_core::discovery::Resolver;
use hmac::{Hmac, KeyInit, Mac};
use k8s_openapi::api::authentication::v1::SelfSubjectReview;
use kube::{Api, Client, api::PostParams};
use rand::RngCore;
use sha2::{Digest, Sha256};
use tokio::sync::OnceCell;

/// The session cookie.
pub(crate) const SESSION_COOKIE: &str = "bosun_session";
/// The cookie binding the sign-in form's CSRF token (before there is a session).
pub(crate) const LOGIN_COOKIE: &str = "bosun_login";
/// A session ends this long after sign-in.
const SESSION_LIFETIME: Duration = Duration::from_secs(12 * 3600);
/// Or after this long unused.
const SESSION_IDLE: Duration = Duration::from_secs(2 * 3600);
/// Sessions kept at most (the oldest go first).
const MAX_SESSIONS: usize = 10_000;
/// Clients of `Authorization` header tokens kept at most.
const MAX_BEARER_CLIENTS: usize = 1_000;

/// How people are authenticated.
#[derive(Clone)]
pub enum Authentication {
    /// Everyone is the kubeconfig's user (`bosun ui` on loopback).
    Kubeconfig {
        /// The client.
        client: Client,
        /// Who that is, for the header (the context's name).
        user: String,
    },
    /// Each person signs in with their bearer token (or a proxy sends it); this configuration
    /// says where the API server is and which authority to trust. Its own credentials are
    /// dropped: they are never used.
    Token(Box<kube::Config>),
}

impl std::fmt::Debug for Authentication {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Authentication::Kubeconfig { user, .. } => write!(f, "Kubeconfig({user})"),
            Authentication::Token(config) => write!(f, "Token({})", config.cluster_url),
        }
    }
}

/// Someone's credentials as the pages use them.
#[derive(Clone)]
pub(crate) struct Identity {
    /// Their client.
    pub client: Client,
    /// Who they are (`alice`), as the API server said.
    pub user: String,
    resolver: Arc<OnceCell<Resolver>>,
}

impl Identity {
    fn new(client: Client, user: String) -> Identity {
        Identity { client, user, resolver: Arc::default() }
    }

    /// Discovery, read once with these credentials.
    ///
    /// # Errors
    /// When discovery cannot be read.
    pub(crate) async fn resolver(&self) -> Result<&Resolver, kube::Error> {
        self.resolver.get_or_try_init(|| Resolver::new(self.client.clone())).await
    }
}

/// The person behind a request.
#[derive(Clone)]
pub(crate) struct Caller {
    /// Their credentials.
    pub identity: Identity,
    /// The CSRF token their forms carry.
    pub csrf: String,
    /// Whether they signed in here (and so can sign out).
    pub signed_in: bool,
}

struct Session {
    identity: Identity,
    started: Instant,
    seen: Instant,
}

/// Sessions, clients and the CSRF key.
pub(crate) struct Auth {
    authentication: Authentication,
    key: [u8; 32],
    local: Option<Identity>,
    sessions: Mutex<HashMap<String, Session>>,
    bearers: Mutex<HashMap<[u8; 32], Identity>>,
}

/// Why a sign-in failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SignInError {
    /// The token is empty.
    #[error("enter a token")]
    Empty,
    /// The API server did not accept it.
    #[error("the API server did not accept this token: {0}")]
    Refused(String),
    /// No client could be made.
    #[error("cannot reach the API server: {0}")]
    Client(String),
}

fn random_hex() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    hex::encode(bytes)
}

/// The value of cookie `name` in the request's headers.
pub(crate) fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value)
}

/// A `Set-Cookie` value: `HttpOnly`, `SameSite=Strict`, `Secure` when served over HTTPS (directly
/// or by a proxy), for `max_age` seconds (0: delete it).
pub(crate) fn set_cookie(name: &str, value: &str, max_age: u64, secure: bool) -> String {
    let secure = if secure { "; Secure" } else { "" };
    format!("{name}={value}; Path=/; Max-Age={max_age}; HttpOnly; SameSite=Strict{secure}")
}

/// How long a session cookie lives.
pub(crate) fn session_max_age() -> u64 {
    SESSION_LIFETIME.as_secs()
}

impl Auth {
    /// Sessions for `authentication`, with a fresh CSRF key.
    pub(crate) fn new(authentication: Authentication) -> Auth {
        let mut key = [0u8; 32];
        rand::rng().fill_bytes(&mut key);
        let local = match &authentication {
            Authentication::Kubeconfig { client, user } => Some(Identity::new(client.clone(), user.clone())),
            Authentication::Token(_) => None,
        };
        Auth { authentication, key, local, sessions: Mutex::default(), bearers: Mutex::default() }
    }

    /// Whether people sign in (rather than being the kubeconfig's user).
    pub(crate) fn signs_in(&self) -> bool {
        self.local.is_none()
    }

    fn mac(&self, subject: &str) -> Hmac<Sha256> {
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&self.key).expect("HMAC takes any key length");
        mac.update(subject.as_bytes());
        mac
    }

    /// The CSRF token of `subject`.
    fn csrf(&self, subject: &str) -> String {
        hex::encode(self.mac(subject).finalize().into_bytes())
    }

    /// Whether `token` is `subject`'s CSRF token (constant time).
    fn csrf_matches(&self, subject: &str, token: &str) -> bool {
        hex::decode(token).is_ok_and(|bytes| self.mac(subject).verify_slice(&bytes).is_ok())
    }

    /// Who is asking: the local user, the bearer token of the `Authorization` header, or the
    /// session of the cookie; `None` when someone must sign in.
    pub(crate) fn caller(&self, headers: &HeaderMap) -> Option<Caller> {
        let (identity, subject, signed_in) = self.identify(headers)?;
        Some(Caller { identity, csrf: self.csrf(&subject), signed_in })
    }

    /// Whether a form's CSRF token is the caller's.
    pub(crate) fn check_csrf(&self, headers: &HeaderMap, token: &str) -> bool {
        self.identify(headers).is_some_and(|(_, subject, _)| self.csrf_matches(&subject, token))
    }

    fn identify(&self, headers: &HeaderMap) -> Option<(Identity, String, bool)> {
        if let Some(local) = &self.local {
            return Some((local.clone(), "local".to_string(), false));
        }
        let bearer = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
            .map(str::trim)
            .filter(|t| !t.is_empty());
        if let Some(token) = bearer {
            let hash: [u8; 32] = Sha256::digest(token.as_bytes()).into();
            let identity = self.bearer_identity(token, hash)?;
            return Some((identity, format!("bearer:{}", hex::encode(hash)), false));
        }
        let id = cookie(headers, SESSION_COOKIE)?;
        let mut sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        let session = sessions.get_mut(id)?;
        if now.duration_since(session.started) > SESSION_LIFETIME || now.duration_since(session.seen) > SESSION_IDLE {
            sessions.remove(id);
            return None;
        }
        session.seen = now;
        Some((session.identity.clone(), format!("session:{id}"), true))
    }

    fn client_with(&self, token: &str) -> Result<Client, SignInError> {
        let Authentication::Token(base) = &self.authentication else {
            return Err(SignInError::Client("this dashboard uses the kubeconfig's identity".into()));
        };
        let mut config = kube::Config::clone(base);
        config.auth_info = kube::config::AuthInfo { token: Some(token.to_string().into()), ..Default::default() };
        Client::try_from(config).map_err(|e| SignInError::Client(e.to_string()))
    }

    fn bearer_identity(&self, token: &str, hash: [u8; 32]) -> Option<Identity> {
        let mut bearers = self.bearers.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(identity) = bearers.get(&hash) {
            return Some(identity.clone());
        }
        if bearers.len() >= MAX_BEARER_CLIENTS {
            bearers.clear();
        }
        let identity = Identity::new(self.client_with(token).ok()?, "(Authorization header)".to_string());
        bearers.insert(hash, identity.clone());
        Some(identity)
    }

    /// Signs in with `token`: the API server says who it is (a `SelfSubjectReview`, made with
    /// the token itself); returns the new session's id.
    ///
    /// # Errors
    /// When the token is empty or the API server refuses it.
    pub(crate) async fn sign_in(&self, token: &str) -> Result<String, SignInError> {
        let token = token.trim();
        if token.is_empty() {
            return Err(SignInError::Empty);
        }
        let client = self.client_with(token)?;
        let reviews: Api<SelfSubjectReview> = Api::all(client.clone());
        let review =
            reviews.create(&PostParams::default(), &SelfSubjectReview::default()).await.map_err(|e| match e {
                kube::Error::Api(status) => SignInError::Refused(format!("{} {}", status.code, status.message)),
                other => SignInError::Client(bosun_core::cluster::ClusterError::from(other).to_string()),
            })?;
        let user =
            review.status.and_then(|s| s.user_info).and_then(|u| u.username).unwrap_or_else(|| "(unknown)".into());
        let id = random_hex();
        let now = Instant::now();
        let mut sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        if sessions.len() >= MAX_SESSIONS {
            sessions.retain(|_, s| {
                now.duration_since(s.started) <= SESSION_LIFETIME && now.duration_since(s.seen) <= SESSION_IDLE
            });
            if let Some(oldest) = sessions.iter().min_by_key(|(_, s)| s.seen).map(|(id, _)| id.clone()) {
                sessions.remove(&oldest);
            }
        }
        tracing::info!(%user, "signed in");
        sessions.insert(id.clone(), Session { identity: Identity::new(client, user), started: now, seen: now });
        Ok(id)
    }

    /// Ends the session of the request's cookie.
    pub(crate) fn sign_out(&self, headers: &HeaderMap) {
        if let Some(id) = cookie(headers, SESSION_COOKIE) {
            self.sessions.lock().unwrap_or_else(|e| e.into_inner()).remove(id);
        }
    }

    /// A fresh value for the sign-in form's cookie, and the CSRF token that goes with it.
    pub(crate) fn login_form(&self) -> (String, String) {
        let nonce = random_hex();
        let token = self.csrf(&format!("login:{nonce}"));
        (nonce, token)
    }

    /// Whether the sign-in form's CSRF token matches its cookie.
    pub(crate) fn check_login_csrf(&self, headers: &HeaderMap, token: &str) -> bool {
        cookie(headers, LOGIN_COOKIE).is_some_and(|nonce| self.csrf_matches(&format!("login:{nonce}"), token))
    }
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn token_auth() -> Auth {
        let config = kube::Config::new("https://127.0.0.1:6443".parse().expect("url"));
        Auth::new(Authentication::Token(Box::new(config)))
    }

    #[test]
    fn csrf_tokens_belong_to_one_subject() {
        let auth = token_auth();
        let token = auth.csrf("session:a");
        assert!(auth.csrf_matches("session:a", &token));
        assert!(!auth.csrf_matches("session:b", &token));
        assert!(!auth.csrf_matches("session:a", "not hex"));
        assert!(!auth.csrf_matches("session:a", ""));
        assert!(!token_auth().csrf_matches("session:a", &token), "another process, another key");
    }

    #[tokio::test]
    async fn a_bearer_header_identifies_without_a_session_and_its_csrf_is_its_own() {
        let auth = token_auth();
        assert!(auth.caller(&HeaderMap::new()).is_none(), "no credentials: sign in");
        let mut headers = HeaderMap::new();
        headers.insert(header::AUTHORIZATION, HeaderValue::from_static("Bearer abc"));
        let caller = auth.caller(&headers).expect("bearer");
        assert!(!caller.signed_in);
        assert!(auth.check_csrf(&headers, &caller.csrf));
        let mut other = HeaderMap::new();
        other.insert(header::AUTHORIZATION, HeaderValue::from_static("Bearer xyz"));
        assert!(!auth.check_csrf(&other, &caller.csrf), "another token's form");
        let mut cookie_only = HeaderMap::new();
        cookie_only.insert(header::COOKIE, HeaderValue::from_static("bosun_session=unknown"));
        assert!(auth.caller(&cookie_only).is_none(), "an unknown session");
    }

    #[test]
    fn cookies_are_read_and_written_strictly() {
        let mut headers = HeaderMap::new();
        headers.insert(header::COOKIE, HeaderValue::from_static("a=1; bosun_session=s2; b=3"));
        assert_eq!(cookie(&headers, SESSION_COOKIE), Some("s2"));
        assert_eq!(cookie(&headers, "c"), None);
        assert_eq!(set_cookie("n", "v", 60, true), "n=v; Path=/; Max-Age=60; HttpOnly; SameSite=Strict; Secure");
        assert!(!set_cookie("n", "v", 60, false).contains("Secure"));
        let auth = token_auth();
        let (nonce, token) = auth.login_form();
        let mut login = HeaderMap::new();
        login.insert(header::COOKIE, HeaderValue::from_str(&format!("{LOGIN_COOKIE}={nonce}")).expect("header"));
        assert!(auth.check_login_csrf(&login, &token));
        assert!(!auth.check_login_csrf(&HeaderMap::new(), &token));
    }
}
