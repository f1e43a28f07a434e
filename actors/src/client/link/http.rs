//! The link's awc client, and what it learns about how its server keeps connections.
//!
//! awc (through actix-http's response decoder) takes an HTTP/1.0 answer that carries a
//! `Content-Length` and no `Connection` header for a keep-alive one and puts its connection back
//! in its pool, although HTTP/1.0 closes unless the answer says `keep-alive`: the next request
//! then goes out on a connection the server is closing, and fails with "connector has been
//! disconnected" whenever the server's close arrives after the request was written (a race a
//! busy machine loses most of the time). awc's pool does drop a connection whose close it has
//! already seen, and handles `Connection: close` itself.
//!
//! So every answer's head is looked at ([`HttpClient::learn`]): once the server answers HTTP/1.0
//! without `Connection: keep-alive`, the link's client is replaced by one whose connector never
//! reuses a connection (the old pool, with the connection it took back, is dropped with the old
//! client). A server that speaks HTTP/1.0 this way never keeps a connection, so nothing is lost;
//! an HTTP/1.1 server keeps its pool.
//!
//! The client also decodes `Content-Encoding: gzip` answers (awc's `compress-gzip`): with no
//! `Accept-Encoding`, a server may choose any coding, and the body's limit applies to the
//! decoded bytes.

use std::cell::{Cell, RefCell};
use std::time::Duration;

use awc::http::{header, Version};

use super::LinkConfig;

/// An answer as the link's client gives it: its body decoded as its `Content-Encoding` says.
pub(super) type Response = awc::ClientResponse<actix_web::dev::Decompress<actix_web::dev::Payload>>;

/// A link's awc client.
pub(super) struct HttpClient {
    client: RefCell<awc::Client>,
    /// Whether connections are reused (until the server shows it closes them).
    reuse: Cell<bool>,
    /// awc's own time limit: a backstop behind the link's.
    timeout: Duration,
    /// The configured headers, sent with every request.
    headers: Vec<(String, String)>,
}

impl HttpClient {
    /// The client of a link configured as `cfg`.
    pub(super) fn new(cfg: &LinkConfig) -> HttpClient {
        // awc's own limit is only a backstop: the link's time limits decide, so that a silent
        // server is reported as a timeout (and, in a session, cancelled).
        let timeout = cfg.timeout + Duration::from_secs(5);
        let headers = cfg.headers.clone();
        HttpClient { client: RefCell::new(build(&headers, timeout, true)), reuse: Cell::new(true), timeout, headers }
    }

    /// The client to build a request with.
    pub(super) fn client(&self) -> awc::Client {
        self.client.borrow().clone()
    }

    /// Learns from an answer's head whether the server keeps connections: an HTTP/1.0 answer
    /// without `Connection: keep-alive` means it does not, and from now on none is reused.
    pub(super) fn learn(&self, response: &Response, server: &str) {
        if !self.reuse.get() || response.version() != Version::HTTP_10 {
            return;
        }
        let keep_alive = response
            .headers()
            .get_all(header::CONNECTION)
            .filter_map(|value| value.to_str().ok())
            .flat_map(|value| value.split(','))
            .any(|token| token.trim().eq_ignore_ascii_case("keep-alive"));
        if !keep_alive {
            log::debug!("{server} answers HTTP/1.0 and closes its connections: they are not reused");
            self.reuse.set(false);
            *self.client.borrow_mut() = build(&self.headers, self.timeout, false);
        }
    }
}

/// An awc client with the link's default headers; with `reuse` false, its connector keeps no
/// connection for another request.
fn build(headers: &[(String, String)], timeout: Duration, reuse: bool) -> awc::Client {
    let connector = match crate::client::tls::client_config() {
        Some(tls) => awc::Connector::new().rustls_0_23(tls),
        None => awc::Connector::new(),
    };
    let connector = match reuse {
        true => connector,
        false => connector.conn_keep_alive(Duration::ZERO).conn_lifetime(Duration::ZERO),
    };
    let mut builder = awc::Client::builder()
        .connector(connector)
        .timeout(timeout)
        .disable_redirects()
        .add_default_header((header::ACCEPT, "application/json, text/event-stream"))
        .add_default_header((header::CONTENT_TYPE, "application/json"));
    for (name, value) in headers {
        builder = builder.add_default_header((name.as_str(), value.as_str()));
    }
    builder.finish()
}
