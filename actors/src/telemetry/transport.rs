//! The HTTP side of export: one awc client on the telemetry thread posts span bodies to the
//! collector, and serves the OTLP crate's exporters (metrics, JSON spans) through [`Bridge`],
//! their `HttpClient`. awc is the HTTP client the runtime already has (the OAuth client and the
//! links to remote servers use it, TLS through the same rustls configuration), so exporting
//! adds no second HTTP stack; its futures are not `Send`, so the crate's exporters, which want
//! a `Send` client, hand their requests to the telemetry thread through a bounded channel.

use std::time::Duration;

use bytes::Bytes;
use opentelemetry_http::{HttpClient, HttpError, Request, Response};
use tokio::sync::{mpsc, oneshot};

/// `Content-Type` of protobuf bodies.
pub(crate) const PROTOBUF: &str = "application/x-protobuf";
/// `Content-Type` of JSON bodies.
pub(crate) const JSON: &str = "application/json";
/// The most of a collector's answer that is read (its body says why a request was refused).
const MAX_ANSWER: usize = 64 * 1024;

/// The collector's client: awc with the export headers and time limit. Lives on the telemetry
/// thread.
pub(crate) struct Collector {
    client: awc::Client,
    headers: Vec<(String, String)>,
    timeout: Duration,
}

impl std::fmt::Debug for Collector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Collector").field("timeout", &self.timeout).finish_non_exhaustive()
    }
}

impl Collector {
    /// Must be called on the telemetry thread's runtime.
    pub(crate) fn new(timeout: Duration, headers: Vec<(String, String)>) -> Collector {
        let connector = match crate::client::tls::client_config() {
            Some(tls) => awc::Connector::new().rustls_0_23(tls),
            None => awc::Connector::new(),
        }
        .timeout(timeout);
        let client = awc::Client::builder().connector(connector).timeout(timeout).finish();
        Collector { client, headers, timeout }
    }

    /// Posts one export body; `Err` says why it was not accepted (no connection, a time-out, a
    /// status other than 2xx).
    pub(crate) async fn post(&self, url: &str, content_type: &str, body: Bytes) -> Result<(), String> {
        let mut request = self.client.post(url).insert_header(("content-type", content_type));
        for (name, value) in &self.headers {
            request = request.insert_header((name.as_str(), value.as_str()));
        }
        let (status, _) = self.answer(request, body).await?;
        if (200..300).contains(&status) {
            Ok(())
        } else {
            Err(format!("the collector answered {status}"))
        }
    }

    /// Sends a request made by the OTLP crate (its headers already set).
    async fn send(&self, request: Request<Bytes>) -> Result<Response<Bytes>, String> {
        let (parts, body) = request.into_parts();
        let method = awc::http::Method::from_bytes(parts.method.as_str().as_bytes()).map_err(|e| e.to_string())?;
        let mut outgoing = self.client.request(method, parts.uri.to_string());
        for (name, value) in &parts.headers {
            let value = value.to_str().map_err(|e| e.to_string())?;
            outgoing = outgoing.insert_header((name.as_str(), value));
        }
        let (status, answer) = self.answer(outgoing, body).await?;
        Response::builder().status(status).body(answer).map_err(|e| e.to_string())
    }

    async fn answer(&self, request: awc::ClientRequest, body: Bytes) -> Result<(u16, Bytes), String> {
        let exchange = async {
            let mut response = request.send_body(body).await.map_err(|e| e.to_string())?;
            let status = response.status().as_u16();
            let answer = response.body().limit(MAX_ANSWER).await.unwrap_or_default();
            Ok((status, answer))
        };
        actix_rt::time::timeout(self.timeout, exchange)
            .await
            .unwrap_or_else(|_| Err(format!("no answer within {:?}", self.timeout)))
    }
}

/// A request of the OTLP crate's exporters, to be sent on the telemetry thread.
#[derive(Debug)]
pub(crate) struct Job {
    request: Request<Bytes>,
    reply: oneshot::Sender<Result<Response<Bytes>, String>>,
}

/// The OTLP crate's `HttpClient`: sends each request to the telemetry thread and waits for its
/// answer. A full channel (the thread stuck behind a dead collector) or a stopped thread fails
/// the export at once.
#[derive(Debug, Clone)]
pub(crate) struct Bridge {
    jobs: mpsc::Sender<Job>,
}

impl Bridge {
    /// The bridge and the receiving end the telemetry thread serves.
    pub(crate) fn new() -> (Bridge, mpsc::Receiver<Job>) {
        let (jobs, receiver) = mpsc::channel(16);
        (Bridge { jobs }, receiver)
    }
}

#[async_trait::async_trait]
impl HttpClient for Bridge {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let (reply, answer) = oneshot::channel();
        self.jobs
            .try_send(Job { request, reply })
            .map_err(|_| HttpError::from("the telemetry thread is busy or stopped"))?;
        match answer.await {
            Ok(result) => result.map_err(HttpError::from),
            Err(_) => Err(HttpError::from("the telemetry thread stopped")),
        }
    }
}

/// Serves the bridge's requests until every sender is gone, each request a task of its own.
pub(crate) async fn serve_jobs(collector: std::rc::Rc<Collector>, mut jobs: mpsc::Receiver<Job>) {
    while let Some(job) = jobs.recv().await {
        let collector = collector.clone();
        actix_rt::spawn(async move {
            let result = collector.send(job.request).await;
            let _ = job.reply.send(result);
        });
    }
}
