//! Talking to a cluster: why a request failed, in the terms a user acts on. kube-rs reports a
//! refused connection as `ServiceError: client error (Connect)`; the cause a user needs
//! (`connection refused`, an expired token, a missing permission) sits at the end of the error's
//! source chain or in the API status, and is what these errors say.

use std::error::Error as StdError;

/// A request to the cluster failed.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// The cluster did not answer (no route, refused, TLS failure, timeout).
    #[error("cannot reach the cluster: {cause}")]
    Unreachable {
        /// The innermost cause, e.g. `connection refused`.
        cause: String,
        /// The client's error.
        #[source]
        source: kube::Error,
    },
    /// The cluster answered 401: the credentials are missing, wrong or expired.
    #[error(
        "the cluster rejected the credentials (401 Unauthorized): the token may have expired; log in again or get a new kubeconfig"
    )]
    Unauthorized(#[source] kube::Error),
    /// The cluster answered 403 with the reason (`User "x" cannot list resource …`).
    #[error("forbidden: {message}")]
    Forbidden {
        /// The API server's message.
        message: String,
        /// The client's error.
        #[source]
        source: kube::Error,
    },
    /// An answer that is no Kubernetes API status: not an API server (a web server, a proxy's
    /// page), or a path it does not serve.
    #[error("{}", not_kubernetes_message(*.code, .answer))]
    NotKubernetes {
        /// The HTTP status code.
        code: u16,
        /// The answer's text (its first line), if any.
        answer: String,
        /// The client's error.
        #[source]
        source: kube::Error,
    },
    /// Any other answer.
    #[error("{message}")]
    Other {
        /// What went wrong.
        message: String,
        /// The client's error.
        #[source]
        source: kube::Error,
    },
}

impl ClusterError {
    /// Whether the cluster refused to authorize the request (403).
    pub fn is_forbidden(&self) -> bool {
        matches!(self, ClusterError::Forbidden { .. })
    }
}

impl From<kube::Error> for ClusterError {
    fn from(source: kube::Error) -> Self {
        match &source {
            kube::Error::Api(status) if status.code == 401 => ClusterError::Unauthorized(source),
            kube::Error::Api(status) if status.code == 403 => {
                ClusterError::Forbidden { message: status.message.clone(), source }
            }
            // kube-rs' reason for an answer whose body is no `Status`.
            kube::Error::Api(status) if status.reason == "Failed to parse error data" => {
                let answer = status.message.lines().next().unwrap_or_default().chars().take(200).collect();
                ClusterError::NotKubernetes { code: status.code, answer, source }
            }
            kube::Error::Api(status) => {
                ClusterError::Other { message: format!("{} ({})", status.message, status.code), source }
            }
            kube::Error::HyperError(_) | kube::Error::Service(_) => {
                ClusterError::Unreachable { cause: root_cause(&source), source }
            }
            _ => ClusterError::Other { message: root_cause(&source), source },
        }
    }
}

fn not_kubernetes_message(code: u16, answer: &str) -> String {
    let answered = match answer {
        "" => format!("an empty {code}"),
        text => format!("{code} {text:?}"),
    };
    format!(
        "the server answered {answered}, which is not how a Kubernetes API server answers: check that the address is the cluster's API server (kubectl cluster-info) and that it serves this API"
    )
}

/// The innermost message of an error's source chain, without the `(os error N)` suffix and
/// starting lower-case, to end a sentence: `Connection refused (os error 111)` → `connection
/// refused`.
///
/// ```
/// let error = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
/// assert_eq!(bosun_core::cluster::root_cause(&error), "connection refused");
/// ```
pub fn root_cause(error: &(dyn StdError + 'static)) -> String {
    let mut innermost = error;
    while let Some(source) = innermost.source() {
        innermost = source;
    }
    let text = innermost.to_string();
    let text = match text.find(" (os error ") {
        Some(index) if text.ends_with(')') => &text[..index],
        _ => text.as_str(),
    };
    let mut chars = text.chars();
    match chars.next() {
        Some(first) if !chars.as_str().starts_with(|c: char| c.is_uppercase()) => {
            first.to_lowercase().chain(chars).collect()
        }
        _ => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("client error (Connect)")]
    struct Outer(#[source] std::io::Error);

    #[test]
    fn root_cause_is_the_innermost_message_as_a_sentence_ending() {
        let cases: [(&(dyn StdError + 'static), &str); 3] = [
            (&Outer(std::io::Error::from_raw_os_error(111)), "connection refused"),
            (&std::io::Error::other("TLS handshake failed"), "TLS handshake failed"),
            (
                &std::io::Error::other("invalid peer certificate: UnknownIssuer"),
                "invalid peer certificate: UnknownIssuer",
            ),
        ];
        for (error, expected) in cases {
            assert_eq!(root_cause(error), expected);
        }
    }

    #[test]
    fn statuses_become_what_users_act_on() {
        let status = |code: u16, message: &str| {
            kube::Error::Api(kube::core::Status::failure(message, "").with_code(code).boxed())
        };
        assert!(matches!(ClusterError::from(status(401, "Unauthorized")), ClusterError::Unauthorized(_)));
        let forbidden = ClusterError::from(status(403, r#"User "x" cannot list resource "pods""#));
        assert_eq!(forbidden.to_string(), r#"forbidden: User "x" cannot list resource "pods""#);
        assert_eq!(ClusterError::from(status(500, "boom")).to_string(), "boom (500)");
        let not_kubernetes = |code: u16, body: &str| {
            kube::Error::Api(kube::core::Status::failure(body, "Failed to parse error data").with_code(code).boxed())
        };
        for (code, body, expected) in [
            (404, "404 page not found", "the server answered 404 \"404 page not found\", which is not how"),
            (404, "", "the server answered an empty 404, which is not how"),
            (502, "<html>\n<body>Bad Gateway</body>", "the server answered 502 \"<html>\", which is not how"),
        ] {
            let message = ClusterError::from(not_kubernetes(code, body)).to_string();
            assert!(message.starts_with(expected) && message.contains("kubectl cluster-info"), "{message}");
        }
    }
}
