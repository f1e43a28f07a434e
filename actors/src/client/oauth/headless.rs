//! [`HeadlessAgent`]: a [`UserAgent`] for authorization servers that approve requests without a
//! person (test servers, the conformance suite's): it fetches the authorization URL without
//! following redirects and reads `code`, `state`, `iss`, `error` and `error_description` from the
//! `Location` of the `3xx` answer. Its redirect URI is a loopback one on a port that was free
//! when the agent was made; nothing listens there (the answer is read from the redirect itself).

use std::time::Duration;

use awc::http::Method;
use futures_util::future::LocalBoxFuture;

use super::http::AsHttp;
use super::{AuthError, Callback, UserAgent};

/// How long the authorization endpoint may take to answer.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// A user agent that approves by fetching the authorization URL (see the module docs).
#[derive(Debug, Clone)]
pub struct HeadlessAgent {
    redirect_uri: String,
    timeout: Duration,
}

impl HeadlessAgent {
    /// An agent with the redirect URI `http://127.0.0.1:<a free port>/callback`.
    pub fn new() -> HeadlessAgent {
        let port = std::net::TcpListener::bind(("127.0.0.1", 0))
            .and_then(|listener| listener.local_addr())
            .map_or(9, |address| address.port());
        HeadlessAgent::with_redirect_uri(format!("http://127.0.0.1:{port}/callback"))
    }

    /// An agent that registers and sends `redirect_uri`.
    pub fn with_redirect_uri(redirect_uri: String) -> HeadlessAgent {
        HeadlessAgent { redirect_uri, timeout: DEFAULT_TIMEOUT }
    }

    /// The time limit for the authorization endpoint's answer.
    pub fn with_timeout(mut self, timeout: Duration) -> HeadlessAgent {
        self.timeout = timeout;
        self
    }
}

impl Default for HeadlessAgent {
    fn default() -> Self {
        HeadlessAgent::new()
    }
}

impl UserAgent for HeadlessAgent {
    fn redirect_uri(&self) -> String {
        self.redirect_uri.clone()
    }

    fn authorize(&self, url: String) -> LocalBoxFuture<'static, Result<Callback, AuthError>> {
        let timeout = self.timeout;
        Box::pin(async move {
            let http = AsHttp::new(timeout);
            let fetched = http
                .send(Method::GET, &url, Vec::new(), Vec::new())
                .await
                .map_err(|e| AuthError::Flow(format!("the authorization request failed: {e}")))?;
            if !(300..400).contains(&fetched.status) {
                return Err(AuthError::Flow(format!(
                    "the authorization endpoint answered HTTP {} instead of a redirect",
                    fetched.status
                )));
            }
            let location = fetched
                .location
                .ok_or_else(|| AuthError::Flow("the authorization endpoint's redirect has no Location".into()))?;
            callback_of(&location)
        })
    }
}

/// The authorization response parameters of a redirect URL.
pub(crate) fn callback_of(location: &str) -> Result<Callback, AuthError> {
    let url = url::Url::parse(location)
        .map_err(|e| AuthError::Flow(format!("the authorization redirect is not a URL: {e}")))?;
    Callback::from_pairs(url.query_pairs().map(|(name, value)| (name, value.into_owned())))
        .map_err(|e| AuthError::Flow(format!("the authorization redirect is malformed: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_redirect_gives_the_callback_parameters_decoded() {
        let callback =
            callback_of("http://127.0.0.1:9/callback?code=c%201&state=s&iss=http%3A%2F%2Flocalhost%3A1%2F&x=y")
                .unwrap();
        assert_eq!(callback.code.as_deref(), Some("c 1"));
        assert_eq!(callback.state.as_deref(), Some("s"));
        assert_eq!(callback.iss.as_deref(), Some("http://localhost:1/"), "decoded, never normalized");
        let refused = callback_of("http://127.0.0.1:9/callback?error=access_denied&error_description=no").unwrap();
        assert_eq!((refused.error.as_deref(), refused.code), (Some("access_denied"), None));
        assert!(matches!(callback_of("/relative"), Err(AuthError::Flow(_))));
        let agent = HeadlessAgent::new();
        assert!(agent.redirect_uri().starts_with("http://127.0.0.1:") && agent.redirect_uri().ends_with("/callback"));
    }
}
