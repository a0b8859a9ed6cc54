//! Credentials from a Secret's data, and the `ssh` invocation that uses an SSH key without
//! touching the user's own `~/.ssh`.

use std::{
    collections::BTreeMap,
    fmt,
    io::Write,
    os::unix::fs::OpenOptionsExt,
    path::{Path, PathBuf},
    time::Duration,
};

use super::SourceError;

/// Credentials for a Git remote, read from a Secret's data with Flux's keys.
///
/// `Debug` shows which kind they are, never the values.
#[derive(Clone)]
pub struct Credentials {
    secret: String,
    pub(crate) kind: Kind,
}

/// The kinds of credentials.
#[derive(Clone)]
pub(crate) enum Kind {
    /// HTTP basic authentication (`username`, `password`).
    Basic { username: String, password: String },
    /// An HTTP bearer token (`bearerToken`).
    Bearer(String),
    /// An SSH private key (`identity`), the server keys it may talk to (`known_hosts`) and the
    /// key's passphrase (`password`), if it is encrypted.
    Ssh { identity: Vec<u8>, known_hosts: Vec<u8>, passphrase: Option<Vec<u8>> },
}

/// The keys bosun reads; `identity.pub` (which `flux create secret git` writes) is accepted
/// and not needed.
const KEYS: &[&str] = &["username", "password", "bearerToken", "identity", "known_hosts", "identity.pub"];

impl Credentials {
    /// A digest of the credentials themselves (never shown): what tells one tenant's access to
    /// a source from another's in the cache's memory of it.
    pub(crate) fn fingerprint(&self) -> String {
        let fields: Vec<&[u8]> = match &self.kind {
            Kind::Basic { username, password } => vec![b"basic", username.as_bytes(), password.as_bytes()],
            Kind::Bearer(token) => vec![b"bearer", token.as_bytes()],
            Kind::Ssh { identity, known_hosts, passphrase } => {
                vec![b"ssh", identity, known_hosts, passphrase.as_deref().unwrap_or_default()]
            }
        };
        super::cache::hex_digest_bytes(&fields)
    }

    /// Credentials from the data of Secret `secret_name`: `username` and `password` (HTTP basic),
    /// `bearerToken` (HTTP), or `identity` and `known_hosts` with an optional `password` (the
    /// key's passphrase) for SSH.
    ///
    /// # Errors
    ///
    /// Any other combination, or a key bosun does not know, is an error naming the keys.
    pub fn from_secret(secret_name: &str, data: &BTreeMap<String, Vec<u8>>) -> Result<Self, SourceError> {
        let fail = |message: String| SourceError::Credentials { secret: secret_name.to_string(), message };
        let unknown: Vec<&str> = data.keys().map(String::as_str).filter(|k| !KEYS.contains(k)).collect();
        if !unknown.is_empty() {
            return Err(fail(format!(
                "unsupported keys {} (bosun reads username and password, bearerToken, or identity, known_hosts and password)",
                unknown.join(", ")
            )));
        }
        let text = |key: &str| -> Result<Option<String>, SourceError> {
            data.get(key)
                .map(|bytes| String::from_utf8(bytes.clone()).map_err(|_| fail(format!("{key} is not UTF-8 text"))))
                .transpose()
        };
        let has = |key: &str| data.contains_key(key);
        let kind = match (has("identity"), has("bearerToken"), has("username")) {
            (true, false, false) => {
                let known_hosts = data
                    .get("known_hosts")
                    .ok_or_else(|| fail("identity needs known_hosts (the server's host keys)".into()))?;
                Kind::Ssh {
                    identity: data["identity"].clone(),
                    known_hosts: known_hosts.clone(),
                    passphrase: data.get("password").cloned(),
                }
            }
            (false, true, false) if !has("password") => {
                Kind::Bearer(text("bearerToken")?.unwrap_or_default().trim_end().to_string())
            }
            (false, false, true) => match text("password")? {
                Some(password) => Kind::Basic { username: text("username")?.unwrap_or_default(), password },
                None => return Err(fail("username needs password".into())),
            },
            (false, false, false) => {
                let present: Vec<&str> = data.keys().map(String::as_str).collect();
                return Err(fail(format!(
                    "no credentials in keys [{}]: set username and password, bearerToken, or identity and known_hosts",
                    present.join(", ")
                )));
            }
            _ => {
                let present: Vec<&str> =
                    ["username", "password", "bearerToken", "identity"].into_iter().filter(|k| has(k)).collect();
                return Err(fail(format!(
                    "keys {} do not go together: set username and password, bearerToken, or identity and known_hosts",
                    present.join(", ")
                )));
            }
        };
        Ok(Credentials { secret: secret_name.to_string(), kind })
    }

    /// Username and password read from Secret `secret` some other way (a Docker config).
    pub(crate) fn basic(secret: &str, username: String, password: String) -> Credentials {
        Credentials { secret: secret.to_string(), kind: Kind::Basic { username, password } }
    }

    /// The Secret the credentials came from.
    pub(crate) fn secret(&self) -> &str {
        &self.secret
    }

    /// The strings that must never appear in a message.
    pub(crate) fn secrets(&self) -> Vec<String> {
        match &self.kind {
            Kind::Basic { password, .. } => vec![password.clone()],
            Kind::Bearer(token) => vec![token.clone()],
            Kind::Ssh { .. } => Vec::new(),
        }
    }
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match &self.kind {
            Kind::Basic { .. } => "basic",
            Kind::Bearer(_) => "bearer token",
            Kind::Ssh { .. } => "ssh key",
        };
        write!(f, "Credentials({kind} from secret {})", self.secret)
    }
}

/// An `ssh` invocation for one fetch: the key, known hosts and log in a private directory
/// (0700, files 0600) removed when this is dropped.
pub(crate) struct SshSession {
    _dir: tempfile::TempDir,
    /// The command line gix runs (through `sh`, which gix uses for commands with arguments).
    pub(crate) command: String,
    log: PathBuf,
}

impl SshSession {
    /// Writes the key material under `tmp` and composes the command.
    pub(crate) fn start(
        identity: &[u8],
        known_hosts: &[u8],
        passphrase: Option<&[u8]>,
        tmp: &Path,
        connect_timeout: Duration,
    ) -> std::io::Result<SshSession> {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::Builder::new()
            .prefix("ssh-")
            .permissions(std::fs::Permissions::from_mode(0o700))
            .tempdir_in(tmp)?;
        let write = |name: &str, content: &[u8], mode: u32| -> std::io::Result<PathBuf> {
            let path = dir.path().join(name);
            let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(mode).open(&path)?;
            file.write_all(content)?;
            // OpenSSH refuses a key whose last line has no newline.
            if !content.ends_with(b"\n") {
                file.write_all(b"\n")?;
            }
            Ok(path)
        };
        let files = SshFiles {
            identity: write("identity", identity, 0o600)?,
            known_hosts: write("known_hosts", known_hosts, 0o600)?,
            askpass: match passphrase {
                Some(passphrase) => {
                    let secret = write("passphrase", passphrase.strip_suffix(b"\n").unwrap_or(passphrase), 0o600)?;
                    // ssh reads a passphrase only from a terminal or an askpass program.
                    let script = format!("#!/bin/sh\nexec cat {}\n", quote(&secret));
                    Some(write("askpass", script.as_bytes(), 0o700)?)
                }
                None => None,
            },
            log: dir.path().join("ssh.log"),
        };
        let command = ssh_command(&files, connect_timeout);
        Ok(SshSession { _dir: dir, command, log: files.log })
    }

    /// What `ssh` logged (errors only), to tell why a connection failed.
    pub(crate) fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

/// The files an `ssh` invocation uses.
struct SshFiles {
    identity: PathBuf,
    known_hosts: PathBuf,
    askpass: Option<PathBuf>,
    log: PathBuf,
}

/// The `ssh` command line: no configuration files, agent or default keys of the user running
/// bosun (`-F /dev/null`, `IdentitiesOnly`, `IdentityAgent none`), only the given key and known
/// hosts, strict host key checking, no prompts, errors to a log file.
fn ssh_command(files: &SshFiles, connect_timeout: Duration) -> String {
    let option = |name: &str, value: &str| format!(" -o {name}={value}");
    let mut command = String::new();
    if let Some(askpass) = &files.askpass {
        command.push_str(&format!("SSH_ASKPASS={} SSH_ASKPASS_REQUIRE=force DISPLAY=none ", quote(askpass)));
    }
    command.push_str("ssh -F /dev/null");
    command.push_str(&option("IdentityFile", &quote(&files.identity)));
    command.push_str(&option("IdentitiesOnly", "yes"));
    command.push_str(&option("IdentityAgent", "none"));
    command.push_str(&option("UserKnownHostsFile", &quote(&files.known_hosts)));
    command.push_str(&option("GlobalKnownHostsFile", "/dev/null"));
    command.push_str(&option("StrictHostKeyChecking", "yes"));
    command.push_str(&option("UpdateHostKeys", "no"));
    // BatchMode would also refuse to ask the askpass program for the key's passphrase.
    command.push_str(&option("BatchMode", if files.askpass.is_some() { "no" } else { "yes" }));
    command.push_str(&option("PasswordAuthentication", "no"));
    command.push_str(&option("KbdInteractiveAuthentication", "no"));
    command.push_str(&option("ConnectTimeout", &connect_timeout.as_secs().max(1).to_string()));
    command.push_str(&option("LogLevel", "ERROR"));
    command.push_str(&format!(" -E {}", quote(&files.log)));
    command
}

/// `path` quoted for `sh`.
fn quote(path: &Path) -> String {
    format!("'{}'", path.display().to_string().replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(pairs: &[(&str, &str)]) -> BTreeMap<String, Vec<u8>> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.as_bytes().to_vec())).collect()
    }

    #[test]
    fn secrets_give_one_kind_of_credentials_or_an_error_naming_the_keys() {
        let kind = |pairs: &[(&str, &str)]| {
            Credentials::from_secret("git-auth", &data(pairs)).map(|c| format!("{c:?}")).map_err(|e| e.to_string())
        };
        let ok = |text: &str| Ok(format!("Credentials({text} from secret git-auth)"));
        assert_eq!(kind(&[("username", "u"), ("password", "p")]), ok("basic"));
        assert_eq!(kind(&[("bearerToken", "t\n")]), ok("bearer token"));
        assert_eq!(kind(&[("identity", "k"), ("known_hosts", "h"), ("identity.pub", "p")]), ok("ssh key"));
        assert_eq!(kind(&[("identity", "k"), ("known_hosts", "h"), ("password", "pp")]), ok("ssh key"));
        for (pairs, message) in [
            (&[("identity", "k")][..], "secret git-auth: identity needs known_hosts"),
            (&[("username", "u")], "secret git-auth: username needs password"),
            (
                &[("username", "u"), ("password", "p"), ("bearerToken", "t")],
                "secret git-auth: keys username, password, bearerToken do not go together",
            ),
            (
                &[("bearerToken", "t"), ("password", "p")],
                "secret git-auth: keys password, bearerToken do not go together",
            ),
            (&[("known_hosts", "h")], "secret git-auth: no credentials in keys [known_hosts]"),
            (&[("ca.crt", "c"), ("username", "u")], "secret git-auth: unsupported keys ca.crt"),
        ] {
            let error = kind(pairs).expect_err(message);
            assert!(error.starts_with(message), "{pairs:?}: {error}");
        }
        let error = Credentials::from_secret("s", &data(&[("username", "u"), ("password", "hunter2")]))
            .map(|c| format!("{c:?}"));
        assert!(!error.expect("basic").contains("hunter2"));
        let token = Credentials::from_secret("s", &data(&[("bearerToken", "tok\n")])).expect("bearer");
        assert_eq!(token.secrets(), ["tok"], "a trailing newline (kubectl --from-file) is not part of a token");
    }

    #[test]
    fn ssh_uses_only_the_given_key_and_known_hosts() {
        let files = SshFiles {
            identity: "/c/s/identity".into(),
            known_hosts: "/c/s/known_hosts".into(),
            askpass: None,
            log: "/c/s/ssh.log".into(),
        };
        let command = ssh_command(&files, Duration::from_secs(30));
        for part in [
            "ssh -F /dev/null ",
            " -o IdentityFile='/c/s/identity' -o IdentitiesOnly=yes -o IdentityAgent=none",
            " -o UserKnownHostsFile='/c/s/known_hosts' -o GlobalKnownHostsFile=/dev/null -o StrictHostKeyChecking=yes",
            " -o BatchMode=yes",
            " -o ConnectTimeout=30",
            " -E '/c/s/ssh.log'",
        ] {
            assert!(command.contains(part), "{part:?} in {command}");
        }
        let with_passphrase =
            ssh_command(&SshFiles { askpass: Some("/c/it's/askpass".into()), ..files }, Duration::ZERO);
        assert!(
            with_passphrase
                .starts_with(r"SSH_ASKPASS='/c/it'\''s/askpass' SSH_ASKPASS_REQUIRE=force DISPLAY=none ssh "),
            "{with_passphrase}"
        );
        assert!(with_passphrase.contains(" -o BatchMode=no") && with_passphrase.contains("ConnectTimeout=1"));
    }

    #[test]
    fn key_files_are_private_and_gone_after_the_session() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().expect("tempdir");
        let session =
            SshSession::start(b"KEY", b"HOSTS", Some(b"pass\n"), tmp.path(), Duration::from_secs(5)).expect("start");
        let dir = std::fs::read_dir(tmp.path()).expect("read").next().expect("one").expect("entry").path();
        let mode = |p: &Path| std::fs::metadata(p).expect("metadata").permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&dir.join("identity")), 0o600);
        assert_eq!(std::fs::read(dir.join("identity")).expect("read"), b"KEY\n");
        assert_eq!(std::fs::read(dir.join("passphrase")).expect("read"), b"pass\n");
        drop(session);
        assert!(!dir.exists());
    }
}
