//! Authenticating to a registry as it asks: the credentials for each registry, read once, and
//! the `Authorization` answering a `401`'s challenge (HTTP Basic, or a token from the
//! registry's token service), remembered per registry and scope.

use base64::Engine;
use reqwest::{RequestBuilder, Response, StatusCode, header};

use super::{
    Access, Client, RegistryError, connection,
    responses::{Challenge, error_message},
};
use crate::{credentials::RegistryCredentials, reference::Reference};

impl Client {
    async fn credentials_for(&self, registry: &str) -> Result<RegistryCredentials, RegistryError> {
        let mut known = self.credentials.lock().await;
        if let Some(credentials) = known.get(registry) {
            return Ok(credentials.clone());
        }
        let credentials = self.options.credentials.credentials(registry).await?;
        known.insert(registry.to_string(), credentials.clone());
        Ok(credentials)
    }

    fn remembered(&self, registry: &str, scope: &str) -> Option<String> {
        let known = self.authorizations.lock().unwrap_or_else(|e| e.into_inner());
        known.get(&format!("{registry}\0{scope}")).or_else(|| known.get(&format!("{registry}\0*"))).cloned()
    }

    fn remember(&self, registry: &str, scope: &str, value: &str) {
        let mut known = self.authorizations.lock().unwrap_or_else(|e| e.into_inner());
        known.insert(format!("{registry}\0{scope}"), value.to_string());
    }

    /// Sends the request `build` makes, authenticating as the registry asks: on a `401`, gets
    /// an `Authorization` for its challenge and sends once more.
    pub(crate) async fn send(
        &self,
        reference: &Reference,
        access: Access,
        build: impl Fn(&reqwest::Client) -> RequestBuilder,
    ) -> Result<Response, RegistryError> {
        let registry = &reference.registry;
        let scope = match access {
            Access::Pull => format!("repository:{}:pull", reference.repository),
            Access::Push => format!("repository:{}:pull,push", reference.repository),
        };
        let credentials = self.credentials_for(registry).await?;
        let attempt = |authorization: Option<String>| {
            let mut request = build(&self.http);
            if let Some(value) = authorization {
                request = request.header(header::AUTHORIZATION, value);
            }
            async move { request.send().await.map_err(|e| connection(registry, &e)) }
        };
        let refused = |reason: String| RegistryError::Unauthorized {
            registry: registry.clone(),
            user: credentials.user().to_string(),
            reason,
        };
        let remembered = match &credentials {
            RegistryCredentials::Bearer(token) => Some(format!("Bearer {token}")),
            _ => self.remembered(registry, &scope),
        };
        let response = attempt(remembered).await?;
        if response.status() != StatusCode::UNAUTHORIZED {
            return Ok(response);
        }
        let challenge = response.headers().get(header::WWW_AUTHENTICATE).and_then(|v| v.to_str().ok());
        let challenge = match (challenge.and_then(Challenge::parse), &credentials) {
            (Some(challenge), credentials) if !matches!(credentials, RegistryCredentials::Bearer(_)) => challenge,
            _ => return Err(refused(format!("HTTP 401: {}", error_message(response).await))),
        };
        let authorization = self.authorize(registry, &scope, &credentials, &challenge).await?;
        let response = attempt(Some(authorization)).await?;
        if response.status() == StatusCode::UNAUTHORIZED {
            return Err(refused(format!("HTTP 401: {}", error_message(response).await)));
        }
        Ok(response)
    }

    /// The `Authorization` answering `challenge`, remembered for the next requests.
    async fn authorize(
        &self,
        registry: &str,
        scope: &str,
        credentials: &RegistryCredentials,
        challenge: &Challenge,
    ) -> Result<String, RegistryError> {
        let refused = |reason: String| RegistryError::Unauthorized {
            registry: registry.to_string(),
            user: credentials.user().to_string(),
            reason,
        };
        match challenge {
            Challenge::Basic => {
                let RegistryCredentials::Basic { username, password } = credentials else {
                    return Err(refused("the registry wants a user name and password (HTTP Basic)".into()));
                };
                let pair = base64::engine::general_purpose::STANDARD.encode(format!("{username}:{password}"));
                let value = format!("Basic {pair}");
                self.remember(registry, "*", &value);
                Ok(value)
            }
            // The scope asked for is what this request needs (`pull,push` for uploads), whatever
            // the challenge names: a `HEAD` of a blob before an upload is challenged for `pull`.
            Challenge::Bearer { realm, service } => {
                let mut query: Vec<(&str, &str)> = vec![("scope", scope)];
                if let Some(service) = service {
                    query.push(("service", service));
                }
                let request = match credentials {
                    RegistryCredentials::IdentityToken(token) => {
                        let mut form = query.clone();
                        form.extend([
                            ("grant_type", "refresh_token"),
                            ("refresh_token", token),
                            ("client_id", "bosun"),
                        ]);
                        self.http.post(realm).form(&form)
                    }
                    RegistryCredentials::Basic { username, password } => {
                        self.http.get(realm).query(&query).basic_auth(username, Some(password))
                    }
                    RegistryCredentials::Anonymous | RegistryCredentials::Bearer(_) => {
                        self.http.get(realm).query(&query)
                    }
                };
                let response = request.send().await.map_err(|e| connection(registry, &e))?;
                let status = response.status();
                if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
                    return Err(refused(format!("the token service answered HTTP {status}")));
                }
                if !status.is_success() {
                    return Err(refused(format!("the token service {realm} answered HTTP {status}")));
                }
                #[derive(serde::Deserialize)]
                struct Token {
                    token: Option<String>,
                    access_token: Option<String>,
                }
                let token: Token = response
                    .json()
                    .await
                    .map_err(|e| refused(format!("the token service's answer is not a token: {e}")))?;
                let token = token
                    .token
                    .or(token.access_token)
                    .ok_or_else(|| refused("the token service's answer has no token".into()))?;
                let value = format!("Bearer {token}");
                self.remember(registry, scope, &value);
                Ok(value)
            }
        }
    }
}
