//! The bare actix-web handler the load bench measures mcpd against: parse the JSON body into a
//! `Value` and write it back. Shared by the load bench and `examples/perf_server.rs` (which
//! runs it alone, for profiling), so that both measure the same ceiling.

use actix_web::{web, HttpResponse};
use serde_json::Value;

/// Echoes a JSON body (400 when it is not JSON).
pub(crate) async fn bare_echo(body: web::Bytes) -> HttpResponse {
    match serde_json::from_slice::<Value>(&body) {
        Ok(value) => match serde_json::to_vec(&value) {
            Ok(bytes) => HttpResponse::Ok().content_type("application/json").body(bytes),
            Err(e) => HttpResponse::InternalServerError().body(e.to_string()),
        },
        Err(e) => HttpResponse::BadRequest().body(e.to_string()),
    }
}
