//! A profiling target for the cost of one span: N SERVER spans of a `tools/call` (the
//! attributes a stateless call has) started and ended, after 1000 warm-up spans, with telemetry
//! `off` (nothing installed: what every call pays when unconfigured), `on` (every span
//! sampled, exported in protobuf to a collector stand-in in this process that answers 200) or
//! `ratio` (`parentbased_traceidratio` 0.01, callers' contexts unsampled or absent). Half the
//! spans have a caller's context in `_meta`. The export thread's encoding and sending are in
//! the count: the spans are flushed before the program ends.
//!
//! `cargo run --release --example telemetry_cost -- N off|on|ratio`;
//! `scripts/perf/telemetry-callgrind.sh` runs it under callgrind with N and 2N spans and prints
//! the instructions per span.

#![allow(clippy::print_stdout, clippy::unwrap_used, reason = "an example reports on standard output")]

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;

use mcpd::jsonrpc::RequestId;
use mcpd::telemetry::TelemetryConfig;
use mcpd_actors::telemetry::{self, Incoming, Operation, TraceHeaders, Transport};

const WARM_UP: u64 = 1000;

/// Answers every POST with 200, over keep-alive connections.
fn collector() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut stream = stream;
                loop {
                    let mut length = 0usize;
                    let mut line = String::new();
                    loop {
                        line.clear();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        if line == "\r\n" {
                            break;
                        }
                        let lower = line.to_ascii_lowercase();
                        if let Some(v) = lower.strip_prefix("content-length:") {
                            length = v.trim().parse().unwrap_or(0);
                        }
                    }
                    let mut body = vec![0; length];
                    if reader.read_exact(&mut body).is_err() {
                        return;
                    }
                    let _ = stream.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n");
                }
            });
        }
    });
    port
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: u64 = args.next().and_then(|n| n.parse().ok()).unwrap_or(10_000);
    let mode = args.next().unwrap_or_else(|| "on".into());
    if mode != "off" {
        let mut vars: HashMap<&str, String> = HashMap::new();
        vars.insert("OTEL_EXPORTER_OTLP_ENDPOINT", format!("http://127.0.0.1:{}", collector()));
        vars.insert("OTEL_METRICS_EXPORTER", "none".into());
        vars.insert("OTEL_BSP_MAX_QUEUE_SIZE", "100000".into());
        if mode == "ratio" {
            vars.insert("OTEL_TRACES_SAMPLER", "parentbased_traceidratio".into());
            vars.insert("OTEL_TRACES_SAMPLER_ARG", "0.01".into());
        }
        let config = TelemetryConfig::read(|k| vars.get(k).cloned(), None).unwrap().unwrap();
        telemetry::init(&config).unwrap();
    }
    // With `ratio` the callers' contexts are unsampled: the span is the ratio's to decide.
    let parent = if mode == "ratio" {
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"
    } else {
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    };
    let ids: Vec<RequestId> = (0..WARM_UP + n).map(|i| RequestId::Number(i as i64)).collect();
    for (i, id) in ids.iter().enumerate() {
        let op = Operation {
            method: "tools/call",
            target: Some("echo"),
            target_listed: true,
            request_id: Some(id),
            protocol_version: Some("2026-07-28"),
            transport: Transport::Tcp,
            ..Operation::default()
        };
        let incoming = if i % 2 == 0 {
            Incoming {
                meta: TraceHeaders { traceparent: Some(parent), ..TraceHeaders::default() },
                ..Incoming::default()
            }
        } else {
            Incoming::default()
        };
        telemetry::server_span(&op, &incoming).end();
    }
    let flushed = telemetry::shutdown();
    println!("{n} spans ({mode}), flushed: {flushed}, counts: {:?}", telemetry::span_counts());
}
