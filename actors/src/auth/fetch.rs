//! The resource server's own HTTP fetches (issuer metadata, key sets, introspection): each under
//! a time limit for the whole exchange and a cap on the body, so an issuer that is slow, down or
//! hostile costs a bounded wait and a clear error, never a hang or unbounded memory.

use std::time::Duration;

use serde_json::Value;

/// Limits of one fetch.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FetchLimits {
    /// The whole exchange (connect, request, body).
    pub(crate) timeout: Duration,
    /// The largest body.
    pub(crate) max_bytes: usize,
}

fn client(limits: FetchLimits) -> awc::Client {
    let mut connector = awc::Connector::new().timeout(limits.timeout);
    // The same TLS as the MCP client: Mozilla's roots plus SSL_CERT_FILE (a private CA).
    if let Some(config) = crate::client::tls::client_config() {
        connector = connector.rustls_0_23(config);
    }
    awc::Client::builder().connector(connector).timeout(limits.timeout).disable_redirects().finish()
}

/// `GET url` (or `POST` of `form` with HTTP Basic `basic`) answered `200` with a JSON object.
///
/// # Errors
/// One line naming the URL and what went wrong (never a credential).
pub(crate) async fn json(
    url: &str,
    form: Option<&[(&str, &str)]>,
    basic: Option<(&str, &str)>,
    limits: FetchLimits,
) -> Result<Value, String> {
    let exchange = async {
        let client = client(limits);
        let mut request = match form {
            Some(_) => client.post(url),
            None => client.get(url),
        }
        .insert_header(("Accept", "application/json"));
        if let Some((user, password)) = basic {
            request = request.basic_auth(user, password);
        }
        let sent = match form {
            Some(form) => request.send_form(&form).await,
            None => request.send().await,
        };
        let mut response = sent.map_err(|e| format!("{url}: {e}"))?;
        if response.status() != awc::http::StatusCode::OK {
            return Err(format!("{url}: HTTP {}", response.status().as_u16()));
        }
        let body = response.body().limit(limits.max_bytes).await.map_err(|e| match e {
            awc::error::PayloadError::Overflow => format!("{url}: body larger than {} bytes", limits.max_bytes),
            other => format!("{url}: {other}"),
        })?;
        match serde_json::from_slice::<Value>(&body) {
            Ok(value @ Value::Object(_)) => Ok(value),
            Ok(_) => Err(format!("{url}: not a JSON object")),
            Err(e) => Err(format!("{url}: invalid JSON: {e}")),
        }
    };
    match actix_rt::time::timeout(limits.timeout, exchange).await {
        Ok(result) => result,
        Err(_) => Err(format!("{url}: no answer within {} s", limits.timeout.as_secs_f64())),
    }
}
