//! Sprig's `bcrypt` and `htpasswd`: hashes as golang.org/x/crypto/bcrypt makes them (`$2a$`,
//! cost 10, passwords over 72 bytes refused), failures as text in the output, as sprig returns
//! them.

use super::super::{Registry, text};
use crate::template::value::{Type, Value};

/// `bcrypt.DefaultCost`.
const DEFAULT_COST: u32 = 10;

/// Go's bcrypt refuses longer passwords (it would hash only their first 72 bytes).
const MAX_PASSWORD_BYTES: usize = 72;

fn bcrypt(input: &str) -> String {
    if input.len() > MAX_PASSWORD_BYTES {
        return "failed to encrypt string with bcrypt: bcrypt: password length exceeds 72 bytes".to_string();
    }
    // The bcrypt crate's own check is one byte stricter than Go's (it counts the terminating
    // NUL, which Go drops for a 72-byte password too), so it hashes with truncation allowed.
    match bcrypt::hash_with_result(input, DEFAULT_COST) {
        Ok(parts) => parts.format_for_version(bcrypt::Version::TwoA),
        Err(e) => format!("failed to encrypt string with bcrypt: {e}"),
    }
}

/// sprig v3.3's `htpasswd` (Helm's sprig): bcrypt only, no hash-algorithm argument.
fn htpasswd(user: &str, password: &str) -> String {
    if user.contains(':') {
        return format!("invalid username: {user}");
    }
    format!("{user}:{}", bcrypt(password))
}

pub(super) fn register(r: &mut Registry) {
    use Type::String as S;
    r.add("bcrypt", &[S], S, |a| Ok(Value::from(bcrypt(text(&a[0])))));
    r.add("htpasswd", &[S, S], S, |a| Ok(Value::from(htpasswd(text(&a[0]), text(&a[1])))));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bcrypt_hashes_verify_with_go_prefix_and_cost() {
        for password in ["", "secret", "pässwörd", &"x".repeat(72)] {
            let hash = bcrypt(password);
            assert!(hash.starts_with("$2a$10$") && hash.len() == 60, "{hash}");
            assert!(bcrypt::verify(password, &hash).unwrap(), "{password:?} does not verify against {hash}");
            assert!(!bcrypt::verify(format!("{password}!"), &hash).unwrap() || password.len() == 72);
        }
    }

    #[test]
    fn bcrypt_refuses_passwords_go_refuses() {
        assert_eq!(
            bcrypt(&"x".repeat(73)),
            "failed to encrypt string with bcrypt: bcrypt: password length exceeds 72 bytes"
        );
    }

    #[test]
    fn htpasswd_prefixes_the_user_and_refuses_colons() {
        let line = htpasswd("admin", "secret");
        let hash = line.strip_prefix("admin:").unwrap();
        assert!(bcrypt::verify("secret", hash).unwrap(), "{line}");
        assert_eq!(htpasswd("ad:min", "secret"), "invalid username: ad:min");
    }
}
