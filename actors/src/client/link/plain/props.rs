//! Properties of the plain client's response reader, over a real loopback connection: answers
//! in every framing (Content-Length, chunked with extensions and trailers, close-delimited,
//! gzip), HTTP/1.0 and 1.1, cut after any byte (the server closes), followed by stray bytes, and
//! hostile heads (floods of headers, huge or malformed sizes, bodies over the limit). The reader
//! returns an answer or an error and never hangs or panics; a whole answer is read exactly; a
//! cut one is an error (but a close-delimited body, which a close ends); and no connection with
//! unread bytes goes back to the pool.

use std::io::Write as _;
use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpListener;

use super::head::{MAX_HEADERS, MAX_HEAD_BYTES};
use super::*;

/// How an answer's body is framed.
#[derive(Debug, Clone)]
enum Frame {
    /// Content-Length.
    Length,
    /// Chunked, in chunks of this size, with trailers or not.
    Chunked(usize, bool),
    /// Ends at close (HTTP/1.0, or 1.1 without a length).
    Close,
    /// Gzip with Content-Length.
    Gzip,
}

/// One answer to serve.
#[derive(Debug, Clone)]
struct Case {
    http10: bool,
    close_header: bool,
    frame: Frame,
    body: Vec<u8>,
    /// Bytes written after the answer.
    stray: Vec<u8>,
    /// Close after this many bytes of the answer (`None`: after all of it, and the stray).
    cut: Option<usize>,
}

impl Case {
    /// The answer's bytes.
    fn answer(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let version = if self.http10 { "HTTP/1.0" } else { "HTTP/1.1" };
        out.extend_from_slice(format!("{version} 200 OK\r\ncontent-type: application/json\r\n").as_bytes());
        if self.close_header {
            out.extend_from_slice(b"Connection: close\r\n");
        }
        match &self.frame {
            Frame::Length => {
                out.extend_from_slice(format!("Content-Length: {}\r\n\r\n", self.body.len()).as_bytes());
                out.extend_from_slice(&self.body);
            }
            Frame::Gzip => {
                let mut packed = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
                packed.write_all(&self.body).unwrap();
                let packed = packed.finish().unwrap();
                out.extend_from_slice(
                    format!("Content-Encoding: gzip\r\nContent-Length: {}\r\n\r\n", packed.len()).as_bytes(),
                );
                out.extend_from_slice(&packed);
            }
            Frame::Chunked(size, trailers) => {
                out.extend_from_slice(b"Transfer-Encoding: chunked\r\n\r\n");
                for piece in self.body.chunks((*size).max(1)) {
                    out.extend_from_slice(format!("{:X};ext=\"1\"\r\n", piece.len()).as_bytes());
                    out.extend_from_slice(piece);
                    out.extend_from_slice(b"\r\n");
                }
                out.extend_from_slice(b"0\r\n");
                if *trailers {
                    out.extend_from_slice(b"X-Sum: 1\r\nX-More: 2\r\n");
                }
                out.extend_from_slice(b"\r\n");
            }
            Frame::Close => {
                out.extend_from_slice(b"\r\n");
                out.extend_from_slice(&self.body);
            }
        }
        out
    }

    /// Where the head ends in [`Case::answer`].
    fn head_len(answer: &[u8]) -> usize {
        answer.windows(4).position(|w| w == b"\r\n\r\n").map_or(answer.len(), |at| at + 4)
    }
}

fn cases() -> impl Strategy<Value = Case> {
    let frame = prop_oneof![
        Just(Frame::Length),
        (1usize..40, any::<bool>()).prop_map(|(size, trailers)| Frame::Chunked(size, trailers)),
        Just(Frame::Close),
        Just(Frame::Gzip),
    ];
    (
        any::<bool>(),
        any::<bool>(),
        frame,
        proptest::collection::vec(any::<u8>(), 0..300),
        prop_oneof![3 => Just(Vec::new()), 1 => proptest::collection::vec(any::<u8>(), 1..12)],
        proptest::option::weighted(0.5, any::<usize>()),
    )
        .prop_map(|(http10, close_header, frame, body, stray, cut)| {
            let mut case = Case { http10, close_header, frame, body, stray, cut: None };
            let length = case.answer().len();
            case.cut = cut.map(|at| at % length.max(1));
            case
        })
}

/// Serves `bytes` on the next connection after reading its request, then closes it.
async fn serve_once(listener: &TcpListener, bytes: Vec<u8>) {
    let (mut stream, _) = listener.accept().await.unwrap();
    let mut request = Vec::new();
    let mut chunk = [0u8; 4096];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut chunk).await.unwrap();
        if n == 0 {
            return;
        }
        request.extend_from_slice(&chunk[..n]);
    }
    let _ = stream.write_all(&bytes).await;
    let _ = stream.shutdown().await;
}

/// One exchange with `bytes` as the server's whole output: the client's answer (its JSON body,
/// or the error), and whether every pooled connection is clean.
async fn exchange(listener: &TcpListener, plain: &PlainHttp, bytes: Vec<u8>) -> (Result<Vec<u8>, String>, bool) {
    let served = serve_once(listener, bytes);
    let no_headers = Vec::new();
    let call = plain.post(b"{}".to_vec(), &no_headers);
    let (answer, ()) = tokio::time::timeout(Duration::from_secs(5), async { tokio::join!(call, served) })
        .await
        .expect("the reader never hangs on an answer the server closed");
    let answer = answer.map_err(|e| e.to_string()).and_then(|answer| match answer.body {
        AnswerBody::Json(bytes) => Ok(bytes.to_vec()),
        AnswerBody::Events(_) => Err("an event stream".into()),
    });
    let clean = plain.idle.borrow().iter().all(|c| c.pending().is_empty());
    plain.idle.borrow_mut().clear();
    (answer, clean)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

#[test]
fn every_answer_cut_anywhere_is_read_or_refused_and_never_pools_unread_bytes() {
    let runtime = runtime();
    let (listener, plain) = runtime.block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://127.0.0.1:{}/mcp", listener.local_addr().unwrap().port());
        (listener, PlainHttp::for_url(&url, &[]).unwrap())
    });
    let count = std::env::var("MCPD_PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(256);
    let mut runner = TestRunner::new(Config { cases: count, failure_persistence: None, ..Config::default() });
    let outcomes = std::cell::Cell::new([0u32; 3]);
    runner
        .run(&cases(), |case| {
            let answer = case.answer();
            let mut bytes = match case.cut {
                Some(at) => answer[..at].to_vec(),
                None => answer.clone(),
            };
            if case.cut.is_none() {
                bytes.extend_from_slice(&case.stray);
            }
            let (read, clean) = runtime.block_on(exchange(&listener, &plain, bytes));
            prop_assert!(clean, "a pooled connection holds unread bytes: {case:?}");
            let head = Case::head_len(&answer);
            let whole = case.cut.is_none();
            let in_head = case.cut.is_some_and(|at| at < head);
            let mut seen = outcomes.get();
            match (&read, &case.frame) {
                (Ok(body), Frame::Close) => {
                    prop_assert!(!in_head, "a cut head was read: {case:?}");
                    // A close ends this body: what came before it is the body.
                    let mut expected = answer[head..].to_vec();
                    if whole {
                        expected.extend_from_slice(&case.stray);
                    } else {
                        expected.truncate(case.cut.unwrap_or_default().saturating_sub(head));
                    }
                    prop_assert_eq!(body, &expected);
                    seen[0] += 1;
                }
                (Ok(body), _) => {
                    prop_assert!(whole, "an answer cut at {:?} was read: {case:?}", case.cut);
                    prop_assert_eq!(body, &case.body);
                    seen[1] += 1;
                }
                (Err(e), _) => {
                    prop_assert!(!whole, "a whole answer was refused ({e}): {case:?}");
                    prop_assert!(e.starts_with("transport error:"), "{e}");
                    seen[2] += 1;
                }
            }
            outcomes.set(seen);
            Ok(())
        })
        .unwrap();
    let [close, framed, refused] = outcomes.get();
    assert!(close > 0 && framed > 0 && refused > 0, "every outcome was seen: {:?}", outcomes.get());
}

#[test]
fn hostile_heads_and_sizes_are_refused_without_pooling() {
    let runtime = runtime();
    runtime.block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://127.0.0.1:{}/mcp", listener.local_addr().unwrap().port());
        let plain = PlainHttp::for_url(&url, &[]).unwrap();
        let flood: String = (0..MAX_HEADERS + 1).map(|i| format!("X-{i}: v\r\n")).collect();
        let long = format!("X-Long: {}\r\n", "a".repeat(MAX_HEAD_BYTES));
        let too_big = MAX_RESPONSE_BYTES + 1;
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (format!("HTTP/1.1 200 OK\r\n{flood}Content-Length: 0\r\n\r\n").into_bytes(), "more than 64 headers"),
            (format!("HTTP/1.1 200 OK\r\n{long}\r\n").into_bytes(), "over the 64 KiB limit"),
            (b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\n".to_vec(), "invalid Content-Length"),
            (format!("HTTP/1.1 200 OK\r\nContent-Length: {too_big}\r\n\r\n").into_bytes(), "limit"),
            (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffffffffff\r\n".to_vec(), "chunk size"),
            (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n".to_vec(), "chunk size"),
            (format!("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n{too_big:x}\r\n").into_bytes(), "limit"),
            (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n".to_vec(), "unsupported Transfer-Encoding"),
            (b"HTTP/1.1 200 OK\r\nContent-Encoding: br\r\nContent-Length: 2\r\n\r\n{}".to_vec(), "not one mcpd reads"),
            (b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 2\r\n\r\n{}".to_vec(), "cannot be decoded"),
            (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}".to_vec(), "conflicting"),
            (b"SSH-2.0-OpenSSH\r\n\r\n".to_vec(), "not HTTP/1.1"),
        ];
        for (bytes, expected) in cases {
            let (read, clean) = exchange(&listener, &plain, bytes.clone()).await;
            let error = read.expect_err(expected);
            assert!(error.contains(expected), "{expected}: {error}");
            assert!(clean, "{expected}");
        }
        // A gzip body that inflates past the limit is refused once decoded.
        let mut packed = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        packed.write_all(&vec![b' '; MAX_RESPONSE_BYTES + 10]).unwrap();
        let packed = packed.finish().unwrap();
        let mut bomb = format!("HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: {}\r\n\r\n", packed.len())
            .into_bytes();
        bomb.extend_from_slice(&packed);
        let (read, _) = exchange(&listener, &plain, bomb).await;
        assert!(read.expect_err("a gzip bomb").contains("over the"), "a gzip bomb is bounded");
    });
}
