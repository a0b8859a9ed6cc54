//! Registry credentials: explicit `user:pass` (the CLI's `--creds`), a Docker config file or a
//! Kubernetes `dockerconfigjson` Secret (the same JSON), and Docker credential helpers
//! (`docker-credential-<name> get`) as every registry tool runs them.
//!
//! Which entry of a Docker config applies follows Docker: `credHelpers.<host>`, else
//! `credsStore`, else `auths.<host>` (`auth` = base64 `user:pass`, or `username`/`password`, or
//! `identitytoken`). Keys may be URLs (`https://index.docker.io/v1/`): the host is what counts.

use std::{collections::BTreeMap, fmt, path::PathBuf, process::Stdio};

use base64::Engine;
use serde::Deserialize;
use tokio::io::AsyncWriteExt;

/// What to present to a registry.
#[derive(Clone, PartialEq, Eq, Default)]
pub enum RegistryCredentials {
    /// Nothing: public repositories.
    #[default]
    Anonymous,
    /// A user name and password (or a token used as password): sent as HTTP Basic to registries
    /// that ask for it, or to the token service of registries that ask for a bearer token.
    Basic {
        /// The user name; named in errors.
        username: String,
        /// Never shown.
        password: String,
    },
    /// An OAuth2 refresh token (a Docker config's `identitytoken`), exchanged at the registry's
    /// token service.
    IdentityToken(String),
    /// A registry token used as it is (`Authorization: Bearer`).
    Bearer(String),
}

impl fmt::Debug for RegistryCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RegistryCredentials::Anonymous => f.write_str("Anonymous"),
            RegistryCredentials::Basic { username, .. } => write!(f, "Basic({username}, <redacted>)"),
            RegistryCredentials::IdentityToken(_) => f.write_str("IdentityToken(<redacted>)"),
            RegistryCredentials::Bearer(_) => f.write_str("Bearer(<redacted>)"),
        }
    }
}

impl RegistryCredentials {
    /// Parses `USER:PASSWORD` as the CLI's `--creds` takes it (the password may contain `:`).
    ///
    /// # Errors
    ///
    /// [`CredentialsError::Invalid`] without a `:` or with an empty user name.
    pub fn from_creds(creds: &str) -> Result<RegistryCredentials, CredentialsError> {
        match creds.split_once(':') {
            Some((username, password)) if !username.is_empty() => {
                Ok(RegistryCredentials::Basic { username: username.into(), password: password.into() })
            }
            _ => Err(CredentialsError::Invalid {
                origin: "--creds".into(),
                message: "expected USER:PASSWORD (the user name is not empty)".into(),
            }),
        }
    }

    /// The user name to name in errors: the Basic user, or what kind of credential it is.
    pub fn user(&self) -> &str {
        match self {
            RegistryCredentials::Anonymous => "anonymous",
            RegistryCredentials::Basic { username, .. } => username,
            RegistryCredentials::IdentityToken(_) => "<identity token>",
            RegistryCredentials::Bearer(_) => "<bearer token>",
        }
    }
}

/// Why credentials could not be had. Names where they came from, never a secret.
#[derive(Debug, thiserror::Error)]
pub enum CredentialsError {
    /// A malformed `--creds`, config file or Secret.
    #[error("credentials from {origin}: {message}")]
    Invalid {
        /// `--creds`, the config file's path, or what the caller named the Secret.
        origin: String,
        /// What is wrong.
        message: String,
    },
    /// A credential helper failed (other than having nothing for the registry).
    #[error("credential helper docker-credential-{helper} for registry {registry}: {message}")]
    Helper {
        /// The helper's name (`desktop`, `ecr-login`, …).
        helper: String,
        /// The registry asked about.
        registry: String,
        /// What went wrong.
        message: String,
    },
}

/// A parsed Docker config (`config.json`, or a Secret's `.dockerconfigjson`).
#[derive(Debug, Clone, Default)]
pub struct DockerConfig {
    origin: String,
    /// Keyed by host.
    auths: BTreeMap<String, AuthEntry>,
    /// Keyed by host.
    helpers: BTreeMap<String, String>,
    store: Option<String>,
}

#[derive(Clone, Default, Deserialize)]
struct AuthEntry {
    #[serde(default)]
    auth: Option<String>,
    #[serde(default)]
    username: Option<String>,
    #[serde(default)]
    password: Option<String>,
    #[serde(default, rename = "identitytoken")]
    identity_token: Option<String>,
    #[serde(default, rename = "registrytoken")]
    registry_token: Option<String>,
}

impl fmt::Debug for AuthEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AuthEntry(<redacted>)")
    }
}

#[derive(Deserialize)]
struct ConfigFile {
    #[serde(default)]
    auths: BTreeMap<String, AuthEntry>,
    #[serde(default, rename = "credHelpers")]
    cred_helpers: BTreeMap<String, String>,
    #[serde(default, rename = "credsStore")]
    creds_store: Option<String>,
}

/// Where a registry's credentials are, per a Docker config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CredentialLookup {
    /// In the file.
    Inline(RegistryCredentials),
    /// With the helper of that name.
    Helper(String),
    /// Nowhere: anonymous.
    None,
}

impl DockerConfig {
    /// Parses a Docker config; `origin` names it in errors (a path, `Secret ns/name`).
    ///
    /// # Errors
    ///
    /// [`CredentialsError::Invalid`] when it is not JSON of that shape or an `auth` is not base64
    /// of `user:pass`.
    pub fn from_json(bytes: &[u8], origin: &str) -> Result<DockerConfig, CredentialsError> {
        let invalid = |message: String| CredentialsError::Invalid { origin: origin.to_string(), message };
        let value: serde_json::Value =
            serde_json::from_slice(bytes).map_err(|e| invalid(format!("not a Docker config: {e}")))?;
        if !value.is_object() {
            return Err(invalid("not a Docker config: not a JSON object".into()));
        }
        let file: ConfigFile =
            serde_json::from_value(value).map_err(|e| invalid(format!("not a Docker config: {e}")))?;
        let config = DockerConfig {
            origin: origin.to_string(),
            auths: file.auths.into_iter().map(|(key, entry)| (host_of(&key), entry)).collect(),
            helpers: file.cred_helpers.into_iter().map(|(key, helper)| (host_of(&key), helper)).collect(),
            store: file.creds_store.filter(|s| !s.is_empty()),
        };
        // Report a broken entry now rather than at the first pull from that registry.
        for host in config.auths.keys() {
            config.lookup(host)?;
        }
        Ok(config)
    }

    /// The config at `$DOCKER_CONFIG/config.json`, else `~/.docker/config.json`; `None` when
    /// there is no such file.
    ///
    /// # Errors
    ///
    /// [`CredentialsError::Invalid`] when the file cannot be read or parsed.
    pub fn from_default_file() -> Result<Option<DockerConfig>, CredentialsError> {
        let dir = match std::env::var_os("DOCKER_CONFIG") {
            Some(dir) => PathBuf::from(dir),
            None => match std::env::var_os("HOME") {
                Some(home) => PathBuf::from(home).join(".docker"),
                None => return Ok(None),
            },
        };
        let path = dir.join("config.json");
        match std::fs::read(&path) {
            Ok(bytes) => DockerConfig::from_json(&bytes, &path.display().to_string()).map(Some),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(CredentialsError::Invalid { origin: path.display().to_string(), message: e.to_string() }),
        }
    }

    /// Where the credentials of `registry` (`HOST[:PORT]`) are.
    ///
    /// # Errors
    ///
    /// [`CredentialsError::Invalid`] when its `auth` is not base64 of `user:pass`.
    pub fn lookup(&self, registry: &str) -> Result<CredentialLookup, CredentialsError> {
        let host = host_of(registry);
        let keys = aliases(&host);
        if let Some(helper) = keys.iter().find_map(|k| self.helpers.get(*k)) {
            return Ok(CredentialLookup::Helper(helper.clone()));
        }
        if let Some(store) = &self.store {
            return Ok(CredentialLookup::Helper(store.clone()));
        }
        let Some(entry) = keys.iter().find_map(|k| self.auths.get(*k)) else { return Ok(CredentialLookup::None) };
        let invalid = |message: &str| CredentialsError::Invalid {
            origin: self.origin.clone(),
            message: format!("auths entry of {host}: {message}"),
        };
        let nonempty = |s: &Option<String>| s.clone().filter(|s| !s.is_empty());
        if let Some(token) = nonempty(&entry.identity_token) {
            return Ok(CredentialLookup::Inline(RegistryCredentials::IdentityToken(token)));
        }
        if let Some(token) = nonempty(&entry.registry_token) {
            return Ok(CredentialLookup::Inline(RegistryCredentials::Bearer(token)));
        }
        if let Some(auth) = nonempty(&entry.auth) {
            let decoded = base64::engine::general_purpose::STANDARD
                .decode(auth.trim())
                .map_err(|_| invalid("auth is not base64"))?;
            let decoded = String::from_utf8(decoded).map_err(|_| invalid("auth is not UTF-8"))?;
            let (username, password) = decoded.split_once(':').ok_or_else(|| invalid("auth is not user:password"))?;
            return Ok(CredentialLookup::Inline(RegistryCredentials::Basic {
                username: username.into(),
                password: password.into(),
            }));
        }
        match (nonempty(&entry.username), entry.password.clone()) {
            (Some(username), Some(password)) => {
                Ok(CredentialLookup::Inline(RegistryCredentials::Basic { username, password }))
            }
            _ => Ok(CredentialLookup::None),
        }
    }

    /// The credentials of `registry`, running its credential helper if the config names one.
    ///
    /// # Errors
    ///
    /// [`CredentialsError`] when the entry is malformed or the helper fails (a helper that has
    /// nothing for the registry means anonymous).
    pub async fn credentials(&self, registry: &str) -> Result<RegistryCredentials, CredentialsError> {
        match self.lookup(registry)? {
            CredentialLookup::Inline(credentials) => Ok(credentials),
            CredentialLookup::None => Ok(RegistryCredentials::Anonymous),
            CredentialLookup::Helper(helper) => {
                let program = PathBuf::from(format!("docker-credential-{helper}"));
                run_helper(&program, &helper, &helper_server(registry)).await
            }
        }
    }
}

/// The host of a config key or registry: `https://index.docker.io/v1/` is `index.docker.io`.
fn host_of(key: &str) -> String {
    let rest = key.split_once("://").map_or(key, |(_, rest)| rest);
    rest.split('/').next().unwrap_or_default().to_ascii_lowercase()
}

/// The keys under which `host` may be found: Docker Hub has three names.
fn aliases(host: &str) -> Vec<&str> {
    const HUB: [&str; 3] = ["index.docker.io", "docker.io", "registry-1.docker.io"];
    if HUB.contains(&host) { HUB.to_vec() } else { vec![host] }
}

/// What a helper is asked about: the host, or Docker Hub's historical URL.
fn helper_server(registry: &str) -> String {
    let host = host_of(registry);
    if aliases(&host).len() > 1 { "https://index.docker.io/v1/".into() } else { host }
}

#[derive(Deserialize)]
struct HelperAnswer {
    #[serde(rename = "Username", default)]
    username: String,
    #[serde(rename = "Secret", default)]
    secret: String,
}

/// Runs `program get` with `server` on standard input, as Docker does.
pub(crate) async fn run_helper(
    program: &std::path::Path,
    helper: &str,
    server: &str,
) -> Result<RegistryCredentials, CredentialsError> {
    let fail = |message: String| CredentialsError::Helper {
        helper: helper.to_string(),
        registry: server.to_string(),
        message,
    };
    let mut child = tokio::process::Command::new(program)
        .arg("get")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| fail(format!("cannot run {}: {e}", program.display())))?;
    if let Some(mut stdin) = child.stdin.take() {
        // A helper that does not read its input (and closed it) is no error.
        match stdin.write_all(server.as_bytes()).await {
            Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => return Err(fail(format!("writing to it: {e}"))),
            _ => {}
        }
    }
    let output = child.wait_with_output().await.map_err(|e| fail(format!("waiting for it: {e}")))?;
    if !output.status.success() {
        let said =
            String::from_utf8_lossy(&output.stdout).trim().to_string() + String::from_utf8_lossy(&output.stderr).trim();
        // The helpers' protocol for "nothing stored for this server".
        if said.contains("credentials not found") {
            return Ok(RegistryCredentials::Anonymous);
        }
        return Err(fail(format!("{}: {said}", output.status)));
    }
    let answer: HelperAnswer =
        serde_json::from_slice(&output.stdout).map_err(|e| fail(format!("its answer is not JSON: {e}")))?;
    Ok(match answer.username.as_str() {
        "<token>" => RegistryCredentials::IdentityToken(answer.secret),
        _ => RegistryCredentials::Basic { username: answer.username, password: answer.secret },
    })
}

/// Where a client's credentials come from.
#[derive(Debug, Clone, Default)]
pub enum CredentialSource {
    /// None: every registry anonymously.
    #[default]
    Anonymous,
    /// The same credentials for every registry (the CLI's `--creds`, a Secret's username and
    /// password).
    Fixed(RegistryCredentials),
    /// A Docker config (the user's file, or a `dockerconfigjson` Secret), per registry.
    Docker(DockerConfig),
}

impl CredentialSource {
    /// The credentials to present to `registry`.
    ///
    /// # Errors
    ///
    /// See [`DockerConfig::credentials`].
    pub async fn credentials(&self, registry: &str) -> Result<RegistryCredentials, CredentialsError> {
        match self {
            CredentialSource::Anonymous => Ok(RegistryCredentials::Anonymous),
            CredentialSource::Fixed(credentials) => Ok(credentials.clone()),
            CredentialSource::Docker(config) => config.credentials(registry).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn basic(username: &str, password: &str) -> CredentialLookup {
        CredentialLookup::Inline(RegistryCredentials::Basic { username: username.into(), password: password.into() })
    }

    #[test]
    fn docker_config_entries_are_found_by_host_as_docker_does() {
        let auth = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        let config = serde_json::json!({
            "auths": {
                "https://index.docker.io/v1/": {"auth": auth("hub:hubpass")},
                "ghcr.io": {"auth": auth("gh:pa:ss")},
                "http://registry.local:5000/v2/": {"username": "u", "password": "p"},
                "quay.io": {"identitytoken": "refresh"},
                "empty.io": {"auth": ""},
                "helped.io": {"auth": auth("ignored:x")},
            },
            "credHelpers": {"helped.io": "ecr-login"},
        });
        let config = DockerConfig::from_json(config.to_string().as_bytes(), "config.json").expect("config");
        for (registry, expected) in [
            ("docker.io", basic("hub", "hubpass")),
            ("registry-1.docker.io", basic("hub", "hubpass")),
            ("GHCR.io", basic("gh", "pa:ss")),
            ("registry.local:5000", basic("u", "p")),
            ("registry.local", CredentialLookup::None),
            ("quay.io", CredentialLookup::Inline(RegistryCredentials::IdentityToken("refresh".into()))),
            ("empty.io", CredentialLookup::None),
            ("helped.io", CredentialLookup::Helper("ecr-login".into())),
            ("other.io", CredentialLookup::None),
        ] {
            assert_eq!(config.lookup(registry).expect(registry), expected, "{registry}");
        }
        let stored = serde_json::json!({"auths": {"ghcr.io": {}}, "credsStore": "desktop"});
        let stored = DockerConfig::from_json(stored.to_string().as_bytes(), "c").expect("config");
        assert_eq!(stored.lookup("ghcr.io").expect("lookup"), CredentialLookup::Helper("desktop".into()));
    }

    #[test]
    fn malformed_configs_and_creds_say_where_and_never_the_secret() {
        for (json, why) in [
            ("[]", "not a Docker config"),
            (r#"{"auths": {"r.io": {"auth": "%%%"}}}"#, "auth is not base64"),
            (r#"{"auths": {"r.io": {"auth": "c2VjcmV0"}}}"#, "auth is not user:password"),
        ] {
            let error = DockerConfig::from_json(json.as_bytes(), "Secret flux/regcred").expect_err(json);
            let text = error.to_string();
            assert!(text.contains("Secret flux/regcred") && text.contains(why), "{text}");
            assert!(!text.contains("secret\""), "{text}");
        }
        assert_eq!(
            RegistryCredentials::from_creds("me:p:w").expect("creds"),
            RegistryCredentials::Basic { username: "me".into(), password: "p:w".into() }
        );
        for bad in ["nocolon", ":pw", ""] {
            assert!(RegistryCredentials::from_creds(bad).is_err(), "{bad}");
        }
        let shown = format!("{:?}", RegistryCredentials::Basic { username: "me".into(), password: "hunter2".into() });
        assert!(shown.contains("me") && !shown.contains("hunter2"), "{shown}");
    }

    #[tokio::test]
    async fn credential_helpers_are_asked_with_the_server_on_stdin() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let write = |name: &str, script: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, format!("#!/bin/sh\n{script}\n")).expect("write");
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
            path
        };
        let echo = write(
            "echo",
            r#"[ "$1" = get ] || exit 3; read server; printf '{"ServerURL":"%s","Username":"u-%s","Secret":"s"}' "$server" "$server""#,
        );
        assert_eq!(
            run_helper(&echo, "echo", "r.io:5000").await.expect("helper"),
            RegistryCredentials::Basic { username: "u-r.io:5000".into(), password: "s".into() }
        );
        let token = write("token", r#"printf '{"Username":"<token>","Secret":"refresh"}'"#);
        assert_eq!(
            run_helper(&token, "token", "r.io").await.expect("helper"),
            RegistryCredentials::IdentityToken("refresh".into())
        );
        let none = write("none", "echo 'credentials not found in native keychain'; exit 1");
        assert_eq!(run_helper(&none, "none", "r.io").await.expect("helper"), RegistryCredentials::Anonymous);
        let broken = write("broken", "echo 'keychain locked' >&2; exit 1");
        let error = run_helper(&broken, "broken", "r.io").await.expect_err("fails");
        assert!(
            error.to_string().contains("docker-credential-broken for registry r.io")
                && error.to_string().contains("keychain locked"),
            "{error}"
        );
        let missing = run_helper(&dir.path().join("missing"), "missing", "r.io").await.expect_err("missing");
        assert!(missing.to_string().contains("cannot run"), "{missing}");
    }
}
