//! [`LoopbackAgent`]: the [`UserAgent`] for a person at a terminal (RFC 8252 §7.3). It binds
//! `127.0.0.1:0` when created, so its redirect URI `http://127.0.0.1:<port>/callback` is known
//! before registration; `authorize` prints the authorization URL on stderr, starts the browser
//! on it when it can, and waits for the one request to `/callback`.
//!
//! The browser is `$BROWSER` when set, else `xdg-open` (Linux) or `open` (macOS), run directly
//! with the URL as its only argument (no shell); not being able to start it is fine, the URL is
//! printed. Only `http://` and `https://` URLs are opened.
//!
//! The listener is untrusted input like any other: a request head larger than
//! [`MAX_CALLBACK_REQUEST_BYTES`] is answered `431`, one slower than
//! [`CALLBACK_READ_TIMEOUT`] is dropped, other paths get `404` and do not end the wait, at most
//! [`MAX_PENDING_CALLBACK_CONNECTIONS`] connections are read at once, and the whole wait ends
//! after the time limit (default [`DEFAULT_AUTHORIZE_TIMEOUT`], see
//! [`LoopbackAgent::with_timeout`]). Nothing the browser sends is echoed in the page.

use std::ffi::{OsStr, OsString};
use std::net::{Ipv4Addr, SocketAddr};
use std::process::Stdio;
use std::time::Duration;

use futures_util::future::LocalBoxFuture;
use futures_util::stream::{FuturesUnordered, StreamExt as _};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};

use super::{AuthError, Callback, UserAgent};

/// How long `authorize` waits for the browser to come back by default (5 minutes).
pub const DEFAULT_AUTHORIZE_TIMEOUT: Duration = Duration::from_secs(300);
/// The largest request head the listener reads.
pub const MAX_CALLBACK_REQUEST_BYTES: usize = 8 * 1024;
/// How long one connection may take to send its request head.
pub const CALLBACK_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// How many connections are read at once (more wait in the kernel's backlog).
pub const MAX_PENDING_CALLBACK_CONNECTIONS: usize = 16;

/// The page a browser gets after the redirect.
const DONE_PAGE: &str = "<!doctype html><html><head><meta charset=\"utf-8\"><title>mcpd</title></head>\
<body><p>mcpd received the authorization response. You can close this window.</p></body></html>\n";

/// A person approving in a browser, the answer arriving on a loopback listener (see the module docs).
#[derive(Debug)]
pub struct LoopbackAgent {
    listener: std::net::TcpListener,
    port: u16,
    timeout: Duration,
    browser: Option<OsString>,
}

/// The program that opens a URL: `browser_env` (the value of `$BROWSER`) when it is set and
/// not blank, else `xdg-open` on Linux, `open` on macOS, nothing elsewhere.
pub fn browser_program(browser_env: Option<OsString>) -> Option<OsString> {
    if let Some(browser) = browser_env.filter(|b| !b.to_string_lossy().trim().is_empty()) {
        return Some(browser);
    }
    if cfg!(target_os = "macos") {
        Some("open".into())
    } else if cfg!(any(target_os = "linux", target_os = "freebsd", target_os = "openbsd", target_os = "netbsd")) {
        Some("xdg-open".into())
    } else {
        None
    }
}

impl LoopbackAgent {
    /// Binds `127.0.0.1:0`; the browser is [`browser_program`] of `$BROWSER`.
    ///
    /// # Errors
    /// The listener cannot be bound.
    pub fn bind() -> std::io::Result<LoopbackAgent> {
        let listener = std::net::TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))?;
        let port = listener.local_addr()?.port();
        let browser = browser_program(std::env::var_os("BROWSER"));
        Ok(LoopbackAgent { listener, port, timeout: DEFAULT_AUTHORIZE_TIMEOUT, browser })
    }

    /// Waits at most `timeout` for the browser to come back.
    pub fn with_timeout(self, timeout: Duration) -> LoopbackAgent {
        LoopbackAgent { timeout, ..self }
    }

    /// Opens URLs with `program` (`None`: only print them).
    pub fn with_browser(self, program: Option<OsString>) -> LoopbackAgent {
        LoopbackAgent { browser: program, ..self }
    }

    /// The port the listener is bound to.
    pub fn port(&self) -> u16 {
        self.port
    }
}

impl UserAgent for LoopbackAgent {
    fn redirect_uri(&self) -> String {
        format!("http://127.0.0.1:{}/callback", self.port)
    }

    fn authorize(&self, url: String) -> LocalBoxFuture<'static, Result<Callback, AuthError>> {
        let listener = self.listener.try_clone();
        let (timeout, browser, redirect) = (self.timeout, self.browser.clone(), self.redirect_uri());
        Box::pin(async move {
            let listener = listener
                .and_then(|l| {
                    l.set_nonblocking(true)?;
                    TcpListener::from_std(l)
                })
                .map_err(|e| AuthError::Flow(format!("the loopback listener for {redirect} failed: {e}")))?;
            // The URL comes from the authorization server: no control character reaches the terminal.
            let shown: String = url.chars().filter(|c| !c.is_control()).collect();
            eprintln!("Open this URL to authorize: {shown}");
            if let Some(program) = browser {
                open_browser(&program, &url);
            }
            wait(&listener, timeout, &redirect).await
        })
    }
}

/// Starts `program URL` (one argument, no shell) and leaves it running; a failure is reported
/// on stderr and otherwise ignored.
fn open_browser(program: &OsStr, url: &str) {
    let lower = url.get(..8).unwrap_or(url).to_ascii_lowercase();
    if !(lower.starts_with("https://") || lower.starts_with("http://")) {
        return;
    }
    let started = tokio::process::Command::new(program)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    // The child is not waited for; tokio reaps it when it exits.
    if let Err(e) = started {
        eprintln!("(could not start {}: {e}; open the URL yourself)", program.to_string_lossy());
    }
}

/// Serves connections until one brings a request to `/callback`, or `timeout` passes.
async fn wait(listener: &TcpListener, timeout: Duration, redirect: &str) -> Result<Callback, AuthError> {
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);
    let mut pending = FuturesUnordered::new();
    loop {
        tokio::select! {
            () = &mut deadline => {
                return Err(AuthError::Flow(format!(
                    "nothing came back to {redirect} within {} s (the authorization was not completed)",
                    timeout.as_secs_f64()
                )));
            }
            Some(callback) = pending.next() => {
                if let Some(callback) = callback {
                    return Ok(callback);
                }
            }
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) if pending.len() < MAX_PENDING_CALLBACK_CONNECTIONS => pending.push(serve(stream)),
                Ok(_) => {} // dropped: too many at once
                Err(e) => {
                    // Out of descriptors, say: try again shortly rather than spin.
                    log::debug!("loopback accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
        }
    }
}

/// Why a request head could not be read.
enum HeadError {
    TooLarge,
    Broken,
}

/// Reads a request head (through the blank line), at most [`MAX_CALLBACK_REQUEST_BYTES`].
async fn read_head(stream: &mut TcpStream) -> Result<String, HeadError> {
    let mut head = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        if head.len() > MAX_CALLBACK_REQUEST_BYTES {
            return Err(HeadError::TooLarge);
        }
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return Err(HeadError::Broken),
            Ok(n) => head.extend_from_slice(chunk.get(..n).unwrap_or_default()),
        }
    }
    if head.len() > MAX_CALLBACK_REQUEST_BYTES {
        return Err(HeadError::TooLarge);
    }
    String::from_utf8(head).map_err(|_| HeadError::Broken)
}

/// Answers one connection; the callback when it was the request to `/callback`.
async fn serve(mut stream: TcpStream) -> Option<Callback> {
    let head = match tokio::time::timeout(CALLBACK_READ_TIMEOUT, read_head(&mut stream)).await {
        Ok(Ok(head)) => head,
        Ok(Err(HeadError::TooLarge)) => {
            respond(&mut stream, "431 Request Header Fields Too Large", "Request too large.\n").await;
            return None;
        }
        Ok(Err(HeadError::Broken)) | Err(_) => return None,
    };
    let mut request_line = head.lines().next().unwrap_or_default().split(' ');
    let (method, target) = (request_line.next().unwrap_or_default(), request_line.next().unwrap_or_default());
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    if method != "GET" || path != "/callback" {
        respond(&mut stream, "404 Not Found", "Not found.\n").await;
        return None;
    }
    let callback = parse_callback(query);
    respond(&mut stream, "200 OK", DONE_PAGE).await;
    Some(callback)
}

/// The parameters of the redirect. A query that cannot be read, or that repeats a parameter
/// (RFC 6749 §3.1), is an `invalid_request` error callback.
fn parse_callback(query: &str) -> Callback {
    let refused = |why: &str| Callback {
        error: Some("invalid_request".into()),
        error_description: Some(why.into()),
        ..Callback::default()
    };
    let Ok(pairs) = actix_web::web::Query::<Vec<(String, String)>>::from_query(query) else {
        return refused("the redirect's query could not be read");
    };
    Callback::from_pairs(pairs.into_inner()).unwrap_or_else(|why| refused(&why))
}

async fn respond(stream: &mut TcpStream, status: &str, body: &str) {
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\n\
         Cache-Control: no-store\r\nReferrer-Policy: no-referrer\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_callbacks_parameters_are_decoded_and_repeats_refused() {
        let callback = parse_callback("code=a%2Bb+c&state=s&iss=https%3A%2F%2Fas.example&other=x");
        assert_eq!(
            callback,
            Callback {
                code: Some("a+b c".into()),
                state: Some("s".into()),
                iss: Some("https://as.example".into()),
                ..Callback::default()
            }
        );
        let denied = parse_callback("error=access_denied&error_description=no&state=s");
        assert_eq!((denied.error.as_deref(), denied.code), (Some("access_denied"), None));
        let repeated = parse_callback("code=a&code=b");
        assert_eq!(repeated.error.as_deref(), Some("invalid_request"));
        assert_eq!(repeated.code, None, "neither code is used");
        assert_eq!(parse_callback(""), Callback::default());
    }

    #[test]
    fn browser_is_dollar_browser_else_the_platform_opener() {
        assert_eq!(browser_program(Some("/opt/b".into())), Some(OsString::from("/opt/b")));
        let platform = browser_program(None);
        assert_eq!(browser_program(Some(" ".into())), platform, "a blank $BROWSER counts as unset");
        if cfg!(target_os = "linux") {
            assert_eq!(platform, Some(OsString::from("xdg-open")));
        }
    }
}
