//! [`Authorizer`]: the OAuth state of one link — the bearer token its requests carry, the
//! credentials it came from, the scopes asked for so far — and the one authorization under way,
//! which concurrent requests share (a second `401` waits for it instead of starting another).
//!
//! On a challenge: discovery (every time: the authorization server may have changed), then, for
//! the issuer found, stored credentials that were not the ones refused, else a refresh, else new
//! tokens (`client_credentials`, or the authorization-code flow through the user agent — without
//! one, [`AuthError::LoginRequired`] at once). Credentials are saved per (canonical resource,
//! issuer) and never used with another issuer. Before a request, a token about to expire is
//! refreshed when it can be.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use awc::http::header::HeaderValue;
use futures_util::future::{LocalBoxFuture, WeakShared};
use futures_util::FutureExt as _;
use mcpd::client::oauth::canonical_resource;
use mcpd::client::oauth::metadata::AuthorizationServerMetadata;
use mcpd::client::oauth::rules;
use mcpd::client::oauth::Challenge;

use super::discover::{discover, Discovered};
use super::grant::{self, client_of, now, Client, Tokens};
use super::http::AsHttp;
use super::{AuthError, Credentials, Grant, OAuthConfig};

/// A token that expires within this is refreshed before a request (when it can be).
pub(crate) const REFRESH_MARGIN: Duration = Duration::from_secs(60);

type Pending = WeakShared<LocalBoxFuture<'static, Result<HeaderValue, AuthError>>>;

/// What the link holds: the bearer and where it came from.
#[derive(Default)]
struct Held {
    bearer: Option<HeaderValue>,
    credentials: Option<Credentials>,
    /// For refreshing without discovery: the server's metadata and the resource value.
    server: Option<Rc<AuthorizationServerMetadata>>,
    resource: Option<String>,
    /// Every scope asked for so far (the base of a step-up).
    scopes: Vec<String>,
}

/// The OAuth side of one link (lives on the link's thread).
pub(crate) struct Authorizer {
    server_url: String,
    cfg: OAuthConfig,
    http: AsHttp,
    held: RefCell<Held>,
    pending: RefCell<Option<Pending>>,
}

impl std::fmt::Debug for Authorizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authorizer").field("server_url", &self.server_url).finish_non_exhaustive()
    }
}

impl Authorizer {
    /// The authorizer of the MCP endpoint `server_url`; `timeout` bounds each exchange with an
    /// authorization server.
    pub(crate) fn new(server_url: String, cfg: OAuthConfig, timeout: Duration) -> Rc<Authorizer> {
        Rc::new(Authorizer {
            server_url,
            cfg,
            http: AsHttp::new(timeout),
            held: RefCell::new(Held::default()),
            pending: RefCell::new(None),
        })
    }

    /// The `Authorization` value requests carry now, if a token is known.
    pub(crate) fn bearer(&self) -> Option<HeaderValue> {
        self.held.borrow().bearer.clone()
    }

    /// The bearer for a request about to go out: refreshed first when it expires within
    /// [`REFRESH_MARGIN`] and a refresh token is held (a failed refresh keeps the old token: the
    /// server decides).
    pub(crate) async fn bearer_for_request(self: &Rc<Self>) -> Option<HeaderValue> {
        let due = {
            let held = self.held.borrow();
            let credentials = held.credentials.as_ref();
            let expiring =
                credentials.and_then(|c| c.expires_at).is_some_and(|at| at <= now() + REFRESH_MARGIN.as_secs());
            expiring && credentials.is_some_and(|c| c.refresh_token.is_some()) && held.server.is_some()
        };
        if due {
            let refresh = self.share(|me| Box::pin(async move { me.refresh_held().await }));
            if let Err(e) = refresh.await {
                log::debug!("{}: refreshing the token before it expires failed: {e}", self.server_url);
            }
        }
        self.bearer()
    }

    /// Answers a challenge (`401`, or `403 insufficient_scope` when `step_up`) to a request that
    /// carried `used`: the bearer to retry with.
    pub(crate) async fn challenged(
        self: &Rc<Self>,
        used: Option<&HeaderValue>,
        challenge: Challenge,
        step_up: bool,
    ) -> Result<HeaderValue, AuthError> {
        if !step_up {
            // Another request already replaced the refused token.
            if let Some(current) = self.bearer().filter(|current| Some(current) != used) {
                return Ok(current);
            }
        }
        let used = used.cloned();
        self.share(move |me| Box::pin(async move { me.authorize(used, challenge, step_up).await })).await
    }

    /// The authorization under way, or a new one made by `start`.
    fn share(
        self: &Rc<Self>,
        start: impl FnOnce(Rc<Self>) -> LocalBoxFuture<'static, Result<HeaderValue, AuthError>>,
    ) -> LocalBoxFuture<'static, Result<HeaderValue, AuthError>> {
        let shared = {
            let mut pending = self.pending.borrow_mut();
            match pending.as_ref().and_then(WeakShared::upgrade) {
                Some(running) => running,
                None => {
                    let running = start(self.clone()).shared();
                    // Held weakly: when every waiter is gone (their requests cancelled), the
                    // authorization is dropped with them instead of keeping this alive.
                    *pending = running.downgrade();
                    running
                }
            }
        };
        let me = self.clone();
        Box::pin(async move {
            let outcome = shared.clone().await;
            // The first waiter to finish forgets it (a later challenge starts afresh).
            let mut pending = me.pending.borrow_mut();
            if pending.as_ref().and_then(WeakShared::upgrade).is_none_or(|running| running.ptr_eq(&shared)) {
                *pending = None;
            }
            outcome
        })
    }

    async fn refresh_held(self: Rc<Self>) -> Result<HeaderValue, AuthError> {
        let (credentials, server, resource, scopes) = {
            let held = self.held.borrow();
            match (&held.credentials, &held.server, &held.resource) {
                (Some(c), Some(s), Some(r)) => (c.clone(), s.clone(), r.clone(), held.scopes.clone()),
                _ => return Err(AuthError::Flow("nothing to refresh".into())),
            }
        };
        let refresh_token = credentials.refresh_token.clone().unwrap_or_default();
        let client = client_of(&self.cfg, &credentials, &server);
        let tokens = grant::refresh(&self.http, &client, &server, &resource, &refresh_token, &scopes).await?;
        let updated = with_tokens(credentials, tokens);
        self.adopt(updated, server, resource, scopes)
    }

    async fn authorize(
        self: Rc<Self>,
        used: Option<HeaderValue>,
        challenge: Challenge,
        step_up: bool,
    ) -> Result<HeaderValue, AuthError> {
        let status = if step_up { 403 } else { 401 };
        let found = discover(&self.http, &self.server_url, status, challenge.resource_metadata.as_deref()).await?;
        let key = canonical_resource(&found.resource.resource);
        let stored = self.cfg.store.load(&key, &found.issuer);
        let scopes = if step_up {
            rules::step_up_scopes(&self.held.borrow().scopes, challenge.scope.as_deref())
        } else {
            rules::initial_scopes(
                self.cfg.scope.as_deref(),
                challenge.scope.as_deref(),
                found.resource.scopes_supported.as_deref(),
            )
        };
        let server = Rc::new(found.server.clone());
        let resource = found.resource.resource.clone();
        if let (false, Some(stored)) = (step_up, &stored) {
            if let Some(bearer) = self.try_stored(stored, used.as_ref(), &server, &resource, &scopes).await {
                return Ok(bearer);
            }
        }
        let redirect_uri = self.cfg.user_agent.as_ref().map(|agent| agent.redirect_uri());
        let (client, tokens, scopes) = match &self.cfg.grant {
            Grant::ClientSecret | Grant::PrivateKeyJwt { .. } => {
                if self.cfg.registration.client_id.is_none() {
                    return Err(AuthError::Flow("client_credentials needs a configured client id".into()));
                }
                let client = grant::register(&self.http, &self.cfg, &found, None, None).await?;
                let tokens = grant::client_credentials(&self.http, &self.cfg, &client, &found, &scopes).await?;
                (client, tokens, scopes)
            }
            Grant::AuthorizationCode => {
                let Some(agent) = self.cfg.user_agent.clone() else {
                    return Err(AuthError::LoginRequired { url: self.server_url.clone() });
                };
                let client =
                    grant::register(&self.http, &self.cfg, &found, stored.as_ref(), redirect_uri.as_deref()).await?;
                self.save_registration(&key, &found, &client);
                let scopes = rules::with_offline_access(scopes, &found.server);
                let tokens = grant::authorization_code(&self.http, agent.as_ref(), &client, &found, &scopes).await?;
                (client, tokens, scopes)
            }
        };
        let credentials = with_tokens(registration_record(&self.cfg, &key, &found, &client), tokens);
        self.adopt(credentials, server, resource, scopes)
    }

    /// Stored credentials for this issuer: their token when it is not the refused one and not
    /// expired, else a refresh.
    async fn try_stored(
        &self,
        stored: &Credentials,
        used: Option<&HeaderValue>,
        server: &Rc<AuthorizationServerMetadata>,
        resource: &str,
        scopes: &[String],
    ) -> Option<HeaderValue> {
        let fresh = stored.expires_at.is_none_or(|at| at > now() + REFRESH_MARGIN.as_secs());
        if let Some(token) = &stored.access_token {
            let bearer = bearer_value(token).ok()?;
            if fresh && Some(&bearer) != used {
                let scopes = stored.scope.as_deref().map(rules::split_scopes).unwrap_or_else(|| scopes.to_vec());
                return self.adopt(stored.clone(), server.clone(), resource.to_owned(), scopes).ok();
            }
        }
        let refresh_token = stored.refresh_token.as_deref()?;
        if !server.supports_refresh() {
            return None;
        }
        let client = client_of(&self.cfg, stored, server);
        match grant::refresh(&self.http, &client, server, resource, refresh_token, scopes).await {
            Ok(tokens) => self
                .adopt(with_tokens(stored.clone(), tokens), server.clone(), resource.to_owned(), scopes.to_vec())
                .ok(),
            Err(e) => {
                log::info!("{}: refreshing the stored token failed ({e}); authorizing again", self.server_url);
                None
            }
        }
    }

    fn save_registration(&self, key: &str, found: &Discovered, client: &Client) {
        if let Err(e) = self.cfg.store.save(&registration_record(&self.cfg, key, found, client)) {
            log::warn!("{}: could not store the client registration: {e}", self.server_url);
        }
    }

    /// Makes `credentials` the link's and stores them; their bearer.
    fn adopt(
        &self,
        credentials: Credentials,
        server: Rc<AuthorizationServerMetadata>,
        resource: String,
        scopes: Vec<String>,
    ) -> Result<HeaderValue, AuthError> {
        let bearer = bearer_value(credentials.access_token.as_deref().unwrap_or_default())?;
        if let Err(e) = self.cfg.store.save(&credentials) {
            log::warn!("{}: could not store the credentials: {e}", self.server_url);
        }
        let mut held = self.held.borrow_mut();
        let mut all = std::mem::take(&mut held.scopes);
        for scope in scopes {
            if !all.contains(&scope) {
                all.push(scope);
            }
        }
        *held = Held {
            bearer: Some(bearer.clone()),
            credentials: Some(credentials),
            server: Some(server),
            resource: Some(resource),
            scopes: all,
        };
        Ok(bearer)
    }
}

/// `Bearer <token>` as a header value (a token that cannot be one is refused).
fn bearer_value(token: &str) -> Result<HeaderValue, AuthError> {
    if token.is_empty() {
        return Err(AuthError::Flow("the token response has an empty access token".into()));
    }
    let mut value = HeaderValue::try_from(format!("Bearer {token}"))
        .map_err(|_| AuthError::Flow("the access token cannot be sent in a header".into()))?;
    value.set_sensitive(true);
    Ok(value)
}

/// The registration part of stored credentials.
fn registration_record(cfg: &OAuthConfig, key: &str, found: &Discovered, client: &Client) -> Credentials {
    // A configured secret stays in the configuration.
    let configured = cfg.registration.client_secret.is_some() && cfg.registration.client_secret == client.secret;
    Credentials {
        resource: key.to_owned(),
        issuer: found.issuer.clone(),
        client_id: client.id.clone(),
        client_secret: client.secret.clone().filter(|_| !configured),
        redirect_uri: client.redirect_uri.clone(),
        token_endpoint_auth_method: Some(client.auth.as_str().to_owned()),
        ..Credentials::default()
    }
}

/// `credentials` with new tokens (a refresh response without a refresh token keeps the old
/// one).
fn with_tokens(mut credentials: Credentials, tokens: Tokens) -> Credentials {
    credentials.access_token = Some(tokens.access_token);
    if tokens.refresh_token.is_some() {
        credentials.refresh_token = tokens.refresh_token;
    }
    credentials.expires_at = tokens.expires_at;
    credentials.scope = tokens.scope.or(credentials.scope);
    credentials
}
