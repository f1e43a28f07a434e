//! OAuth on a link's HTTP requests (when [`LinkConfig::oauth`](super::LinkConfig::oauth) is
//! set): every request to the server's origin carries `Authorization: Bearer <token>` once a
//! token is known; a `401`, or a `403` whose `WWW-Authenticate` says `insufficient_scope`, has
//! the link's [`Authorizer`] find a token (concurrent requests share one authorization) and the
//! request is sent again. At most [`MAX_AUTHORIZATIONS`] authorizations per request, of which at
//! most [`MAX_UNAUTHORIZED_RETRIES`] answer a `401`; then the request fails with
//! [`ClientError::Auth`]. The challenge is read from the response's typed header; without OAuth
//! none of this runs.

use std::rc::Rc;

use awc::http::header;
use bytes::Bytes;
use mcpd::client::oauth::{bearer_challenge, discovery, Challenge};

use super::Link;
use crate::client::error::ClientError;
use crate::client::oauth::authorizer::Authorizer;
use crate::client::oauth::AuthError;

/// Authorizations one request may cause (a first one and step-ups: the MCP specification's "no
/// more than a few times").
pub(super) const MAX_AUTHORIZATIONS: usize = 3;
/// Of those, how many may answer a `401` (a stored token refused, then a new one).
pub(super) const MAX_UNAUTHORIZED_RETRIES: usize = 2;

impl Link {
    /// Sends the request `build` makes (with `body`, or none) with the bearer token, answering
    /// challenges as the module says; the response that is not a challenge.
    pub(super) async fn send_authorized(
        &self,
        auth: &Rc<Authorizer>,
        url: &str,
        build: &dyn Fn() -> awc::ClientRequest,
        body: Option<Bytes>,
    ) -> Result<super::http::Response, ClientError> {
        // A bearer token goes only to the server's own origin.
        let ours = url == self.cfg.url || discovery::same_origin(&self.cfg.url, url);
        let mut bearer = if ours { auth.bearer_for_request().await } else { None };
        let (mut authorizations, mut unauthorized) = (0, 0);
        loop {
            let mut request = build();
            if let Some(bearer) = &bearer {
                request = request.insert_header((header::AUTHORIZATION, bearer.clone()));
            }
            let sent = match &body {
                Some(body) => request.send_body(body.clone()).await,
                None => request.send().await,
            };
            let response = sent.map_err(|e| self.not_sent(e))?;
            let Some((challenge, step_up)) = challenge_of(&response).filter(|_| ours) else {
                if let Some(share) = self.published().filter(|_| ours) {
                    share.set_bearer(bearer.as_ref());
                }
                return Ok(response);
            };
            if !step_up {
                unauthorized += 1;
            }
            if authorizations >= MAX_AUTHORIZATIONS || unauthorized > MAX_UNAUTHORIZED_RETRIES {
                return Err(ClientError::Auth(given_up(&challenge, step_up)));
            }
            authorizations += 1;
            let fresh = auth.challenged(bearer.as_ref(), challenge, step_up).await.map_err(ClientError::Auth)?;
            bearer = Some(fresh);
        }
    }

    /// The bearer a request that is not retried carries (a standalone stream, a DELETE).
    pub(super) fn current_bearer(&self) -> Option<header::HeaderValue> {
        self.auth.as_ref().and_then(|auth| auth.bearer())
    }
}

/// A challenge the flow answers: `(challenge, step_up)` for a `401` (any `WWW-Authenticate`, or
/// none) or a `403` whose Bearer challenge says `insufficient_scope`.
fn challenge_of(response: &super::http::Response) -> Option<(Challenge, bool)> {
    let status = response.status().as_u16();
    if status != 401 && status != 403 {
        return None;
    }
    let challenge =
        response.headers().get_all(header::WWW_AUTHENTICATE).find_map(|value| bearer_challenge(value.as_bytes()));
    if status == 401 {
        Some((challenge.unwrap_or_default(), false))
    } else {
        challenge.filter(Challenge::insufficient_scope).map(|challenge| (challenge, true))
    }
}

/// The error of a request that is still refused after the allowed authorizations.
fn given_up(challenge: &Challenge, step_up: bool) -> AuthError {
    if step_up {
        let scope = challenge.scope.as_deref().map(|s| format!(" for scope {s:?}")).unwrap_or_default();
        AuthError::Refused(format!("403 insufficient_scope{scope}"))
    } else {
        AuthError::Flow("the server still answers 401 after re-authorizing".into())
    }
}
