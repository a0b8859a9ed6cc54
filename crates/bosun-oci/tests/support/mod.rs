//! The registry of the tests (bosun-test-tools' `docker-registry`), a token service for its
//! bearer-token mode, and files written and read back.

use bosun_oci::{Client, ClientOptions, CredentialSource, Protocol, Reference, RegistryCredentials};
pub use bosun_test_tools::{
    files,
    registry::{Auth, ISSUER, Registry, SERVICE},
    write_files,
};

/// What the tests ask of a registry in bosun-oci's terms.
pub trait RegistryExt {
    /// `oci://HOST/path`.
    fn reference(&self, path: &str) -> Reference;
    /// Client options for this registry (HTTPS with its CA when it has TLS).
    fn options(&self, credentials: RegistryCredentials) -> ClientOptions;
    /// A client for this registry.
    fn client(&self, credentials: RegistryCredentials) -> Client;
}

impl RegistryExt for Registry {
    fn reference(&self, path: &str) -> Reference {
        Reference::parse(&self.url(path)).expect("reference")
    }

    fn options(&self, credentials: RegistryCredentials) -> ClientOptions {
        ClientOptions {
            credentials: CredentialSource::Fixed(credentials),
            ca_pem: self.ca_pem.clone(),
            protocol: if self.ca_pem.is_some() { Protocol::Https } else { Protocol::Auto },
            ..ClientOptions::default()
        }
    }

    fn client(&self, credentials: RegistryCredentials) -> Client {
        Client::new(self.options(credentials)).expect("client")
    }
}

/// A token service as registries use (Docker's token authentication): `GET /token?scope=…`
/// with HTTP Basic, or `POST /token` with an OAuth2 refresh token, answers a JWT (ES256, the
/// signing certificate in `x5c`) granting the scope; the registry verifies it.
pub struct TokenService {
    /// `http://127.0.0.1:PORT/token`.
    pub realm: String,
    /// The signing certificate, for the registry's `rootcertbundle`.
    pub signer_pem: String,
    /// How many tokens were issued.
    pub issued: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for TokenService {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl TokenService {
    /// Serves tokens to `user`/`password` and to the refresh token `refresh`.
    pub async fn start(user: &str, password: &str, refresh: &str) -> TokenService {
        use axum::{
            extract::{Query, State},
            http::{HeaderMap, StatusCode},
            routing::get,
        };
        use base64::Engine;
        use std::collections::HashMap;
        let key = rcgen::KeyPair::generate().expect("signing key");
        let mut params = rcgen::CertificateParams::default();
        params.distinguished_name.push(rcgen::DnType::CommonName, "bosun-oci token signer");
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let certificate = params.self_signed(&key).expect("certificate");
        let signer = ring::signature::EcdsaKeyPair::from_pkcs8(
            &ring::signature::ECDSA_P256_SHA256_FIXED_SIGNING,
            &key.serialize_der(),
            &ring::rand::SystemRandom::new(),
        )
        .expect("ring key");
        let x5c = base64::engine::general_purpose::STANDARD.encode(certificate.der());
        let basic = format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}")));
        let issued = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        struct Service {
            signer: ring::signature::EcdsaKeyPair,
            x5c: String,
            basic: String,
            refresh: String,
            issued: std::sync::Arc<std::sync::atomic::AtomicUsize>,
        }
        let service =
            std::sync::Arc::new(Service { signer, x5c, basic, refresh: refresh.to_string(), issued: issued.clone() });
        fn token(service: &Service, scope: &str) -> String {
            let url = base64::engine::general_purpose::URL_SAFE_NO_PAD;
            let now = jiff::Timestamp::now().as_second();
            let access: Vec<serde_json::Value> = scope
                .split(' ')
                .filter_map(|s| {
                    let mut parts = s.splitn(3, ':');
                    let (kind, name, actions) = (parts.next()?, parts.next()?, parts.next()?);
                    Some(serde_json::json!({"type": kind, "name": name, "actions": actions.split(',').collect::<Vec<_>>()}))
                })
                .collect();
            let header = serde_json::json!({"typ": "JWT", "alg": "ES256", "x5c": [service.x5c]});
            let claims = serde_json::json!({
                "iss": ISSUER, "sub": "test", "aud": SERVICE, "exp": now + 300, "nbf": now - 10, "iat": now,
                "jti": format!("{now}-{}", service.issued.load(std::sync::atomic::Ordering::SeqCst)), "access": access,
            });
            let signed = format!("{}.{}", url.encode(header.to_string()), url.encode(claims.to_string()));
            let signature = service.signer.sign(&ring::rand::SystemRandom::new(), signed.as_bytes()).expect("sign");
            service.issued.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            format!("{signed}.{}", url.encode(signature.as_ref()))
        }
        type Answer = Result<([(axum::http::header::HeaderName, &'static str); 1], String), StatusCode>;
        fn json(value: serde_json::Value) -> ([(axum::http::header::HeaderName, &'static str); 1], String) {
            ([(axum::http::header::CONTENT_TYPE, "application/json")], value.to_string())
        }
        async fn by_password(
            State(service): State<std::sync::Arc<Service>>,
            headers: HeaderMap,
            Query(query): Query<HashMap<String, String>>,
        ) -> Answer {
            let authorization = headers.get("authorization").and_then(|v| v.to_str().ok());
            if authorization != Some(service.basic.as_str()) {
                return Err(StatusCode::UNAUTHORIZED);
            }
            let scope = query.get("scope").cloned().unwrap_or_default();
            Ok(json(serde_json::json!({"token": token(&service, &scope)})))
        }
        async fn by_refresh(State(service): State<std::sync::Arc<Service>>, body: String) -> Answer {
            let form: HashMap<String, String> =
                serde_urlencoded::from_str(&body).map_err(|_| StatusCode::BAD_REQUEST)?;
            let valid = form.get("grant_type").map(String::as_str) == Some("refresh_token")
                && form.get("refresh_token") == Some(&service.refresh);
            if !valid {
                return Err(StatusCode::UNAUTHORIZED);
            }
            let scope = form.get("scope").cloned().unwrap_or_default();
            Ok(json(serde_json::json!({"access_token": token(&service, &scope)})))
        }
        let app = axum::Router::new().route("/token", get(by_password).post(by_refresh)).with_state(service);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let realm = format!("http://{}/token", listener.local_addr().expect("addr"));
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.expect("token service");
        });
        TokenService { realm, signer_pem: certificate.pem(), issued, task }
    }
}
