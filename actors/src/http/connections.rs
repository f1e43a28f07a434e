//! Open HTTP connections: capped, counted, and the cap kept within the descriptors the process has.
//!
//! actix-web enforces the cap (`max_connections`, shared out among the workers): a worker at its
//! share accepts no more, and new connections wait in the kernel's accept backlog until one
//! closes — they are delayed, not refused. This module counts open connections (a guard in each
//! connection's extensions, dropped with the connection) for `mcpd_connections_open` and for one
//! warning when the cap is reached, and lowers the cap at start to three quarters of the
//! process's open-file limit, so that a flood of connections never takes the descriptors that
//! files, commands and remote servers need.
//!
//! On Linux each connection also gets `TCP_USER_TIMEOUT` (the send timeout): a client that
//! accepts none of the data sent to it for that long — an SSE reader that stopped reading — is
//! dropped by the kernel, which frees its socket buffers and whatever its response still holds.

use std::any::Any;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use actix_web::dev::Extensions;

use crate::counts::EdgeCounters;

/// The share of the open-file limit that connections may take.
const CONNECTION_SHARE: (u64, u64) = (3, 4);

/// The process's soft limit on open files, where the system tells it (Linux `/proc`).
fn open_file_limit() -> Option<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line.trim_start_matches("Max open files").split_whitespace().next()?.parse().ok()
}

/// `requested`, lowered (and logged) to what the open-file limit allows.
pub(crate) fn within_descriptors(requested: usize) -> usize {
    let Some(limit) = open_file_limit() else { return requested.max(1) };
    let allowed = usize::try_from(limit / CONNECTION_SHARE.1 * CONNECTION_SHARE.0).unwrap_or(usize::MAX).max(1);
    if requested > allowed {
        log::info!(
            "at most {allowed} HTTP connections (not {requested}): the process may open {limit} files and keeps a \
             quarter of them for files, commands and remote servers; raise `ulimit -n` for more"
        );
        return allowed;
    }
    requested.max(1)
}

/// One open connection, counted until the connection (and with it this guard) is dropped.
struct Open {
    edge: Arc<EdgeCounters>,
    max: usize,
}

impl Drop for Open {
    fn drop(&mut self) {
        let open = self.edge.connections.fetch_sub(1, Ordering::Relaxed) - 1;
        let below = usize::try_from(open).unwrap_or(0).saturating_mul(10) < self.max.saturating_mul(9);
        if below && self.edge.at_connection_limit.swap(false, Ordering::Relaxed) {
            log::info!("open connections are below their limit again ({open}, limit {})", self.max);
        }
    }
}

/// Sets the send timeout of an accepted connection (Linux; elsewhere nothing).
fn set_send_timeout(connection: &dyn Any, timeout: Duration) {
    #[cfg(target_os = "linux")]
    if let Some(stream) = connection.downcast_ref::<actix_rt::net::TcpStream>() {
        if let Err(e) = socket2::SockRef::from(stream).set_tcp_user_timeout(Some(timeout)) {
            log::debug!("cannot set TCP_USER_TIMEOUT: {e}");
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (connection, timeout);
}

/// The per-connection hook of the listener: counts the connection, warns once when the open
/// connections reach `max`, and sets the send timeout (unless zero).
pub(crate) fn on_connect(
    edge: Arc<EdgeCounters>,
    max: usize,
    send_timeout: Duration,
) -> impl Fn(&dyn Any, &mut Extensions) + Send + Sync {
    move |connection, extensions| {
        if !send_timeout.is_zero() {
            set_send_timeout(connection, send_timeout);
        }
        let open = edge.connections.fetch_add(1, Ordering::Relaxed) + 1;
        if usize::try_from(open).unwrap_or(0) >= max && !edge.at_connection_limit.swap(true, Ordering::Relaxed) {
            log::warn!(
                "{open} HTTP connections are open, the limit (--max-connections {max}): new connections wait until \
                 one closes"
            );
        }
        extensions.insert(Open { edge: edge.clone(), max });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_open_file_limit_is_read_where_the_system_tells_it() {
        if cfg!(target_os = "linux") {
            let limit = open_file_limit().expect("Linux reports its limits");
            assert!(limit > 0);
            let allowed = within_descriptors(usize::MAX);
            assert_eq!(allowed as u64, limit / 4 * 3);
            assert_eq!(within_descriptors(10), 10);
        }
    }

    #[test]
    fn connections_are_counted_while_open() {
        let edge = Arc::new(EdgeCounters::default());
        let hook = on_connect(edge.clone(), 2, Duration::from_secs(1));
        let (mut a, mut b) = (Extensions::new(), Extensions::new());
        hook(&(), &mut a);
        hook(&(), &mut b);
        assert_eq!(edge.connections.load(Ordering::Relaxed), 2);
        assert!(edge.at_connection_limit.load(Ordering::Relaxed));
        drop(a);
        drop(b);
        assert_eq!(edge.connections.load(Ordering::Relaxed), 0);
        assert!(!edge.at_connection_limit.load(Ordering::Relaxed));
    }
}
