//! A shared session's record: the Redis hash `mcpd:session:<id>` that lets any instance serve
//! the session, and what is done with it — written when the session is created, read when an
//! instance adopts it, kept alive while any instance uses it, changed by `logging/setLevel` and
//! (un)subscriptions, deleted by DELETE.
//!
//! The hash holds `version`, `caps` (the client's capabilities, JSON), `owner` (the identity that
//! opened it), `endpoint` (the virtual server it was opened on, when not the whole server),
//! `level` (the log level set) and `sub:<uri>` for each resource subscription. It
//! expires after the idle time; the instances holding the session refresh it while it is used
//! ([`Records::keep_alive`], at most every quarter of the idle time). A change of the record is
//! published on the bus in the same round trip, so every instance's copy takes it. A DELETE
//! leaves a tombstone, `mcpd:session:<id>:ended`, so that a copy that missed the bus's message
//! ends at its next refresh rather than writing the record again.

use std::time::Duration;

use actix::Recipient;
use mcpd::auth::identity::Identity;
use mcpd::context::LogLevel;
use mcpd::server::Subscription;
use mcpd::version::ProtocolVersion;
use serde_json::{json, Value};

use super::bus::{encode, BusMessage, BUS};
use super::link::{millis, RedisLink, Unreachable};
use crate::session::store::{RecordCopy, RecordNews};
use crate::session::Negotiated;

/// Longest session id looked up in Redis (mcpd makes 32 hex digits).
const MAX_SESSION_ID: usize = 64;

fn record_key(session: &str) -> String {
    format!("mcpd:session:{session}")
}

/// Set (expiring after the idle time) when a session is deleted, so a copy that missed the
/// bus's message ends at its next refresh rather than writing the record again.
fn ended_key(session: &str) -> String {
    format!("mcpd:session:{session}:ended")
}

/// Whether `id` could be a session id (what is looked up in Redis: visible ASCII, bounded).
fn plausible_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= MAX_SESSION_ID && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

/// What a session's record holds.
#[derive(Debug, Clone)]
pub(crate) struct SessionRecord {
    /// The handshake.
    pub negotiated: Negotiated,
    /// The level `logging/setLevel` set.
    pub log_level: Option<LogLevel>,
    /// Subscribed resource URIs.
    pub subscriptions: Vec<String>,
    /// The identity that opened it (every instance serves only that one).
    pub owner: Option<Identity>,
    /// The virtual server it was opened on (every instance serves it there only).
    pub endpoint: Option<String>,
}

/// The commands that write `copy` as the record `key`, expiring after `idle`.
fn write(copy: &RecordCopy, key: &str, idle: Duration) -> redis::Pipeline {
    let caps = serde_json::to_string(&*copy.negotiated.client_capabilities).unwrap_or_else(|_| "{}".into());
    let mut pipe = redis::pipe();
    pipe.atomic()
        .cmd("HSET")
        .arg(key)
        .arg("version")
        .arg(copy.negotiated.version.as_str())
        .arg("caps")
        .arg(caps)
        .ignore();
    if let Some(level) = copy.log_level {
        pipe.cmd("HSET").arg(key).arg("level").arg(level_name(level)).ignore();
    }
    if let Some(owner) = &copy.owner {
        pipe.cmd("HSET").arg(key).arg("owner").arg(owner.as_str()).ignore();
    }
    if let Some(endpoint) = &copy.endpoint {
        pipe.cmd("HSET").arg(key).arg("endpoint").arg(endpoint).ignore();
    }
    for uri in &copy.subscriptions {
        pipe.cmd("HSET").arg(key).arg(format!("sub:{uri}")).arg("1").ignore();
    }
    pipe.cmd("PEXPIRE").arg(key).arg(millis(idle)).ignore();
    pipe
}

fn level_name(level: LogLevel) -> String {
    serde_json::to_value(level).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
}

/// The records of the sessions this instance serves.
#[derive(Debug, Clone)]
pub(crate) struct Records {
    link: RedisLink,
}

impl Records {
    /// The records, through `link`.
    pub(super) fn new(link: RedisLink) -> Self {
        Records { link }
    }

    /// Writes a new session's record (awaited: the next request may land anywhere).
    pub(crate) async fn create(
        &self,
        session: &str,
        negotiated: &Negotiated,
        (owner, endpoint): (Option<&Identity>, Option<&str>),
        idle: Duration,
    ) -> Result<(), Unreachable> {
        let copy = RecordCopy {
            negotiated: negotiated.clone(),
            log_level: None,
            subscriptions: Vec::new(),
            owner: owner.cloned(),
            endpoint: endpoint.map(str::to_owned),
        };
        write(&copy, &record_key(session), idle)
            .query_async::<()>(&mut self.link.connection())
            .await
            .map_err(|e| self.link.failed(&e))
    }

    /// The record of a session another instance created; `None` when there is none (ended,
    /// expired, never existed).
    pub(crate) async fn load(&self, session: &str) -> Result<Option<SessionRecord>, Unreachable> {
        if !plausible_id(session) {
            return Ok(None);
        }
        let fields: Vec<(String, String)> = redis::cmd("HGETALL")
            .arg(record_key(session))
            .query_async(&mut self.link.connection())
            .await
            .map_err(|e| self.link.failed(&e))?;
        let mut version = None;
        let mut caps = None;
        let mut log_level = None;
        let mut subscriptions = Vec::new();
        let (mut owner, mut endpoint) = (None, None);
        for (field, value) in fields {
            match field.as_str() {
                "version" => version = ProtocolVersion::parse(&value),
                "owner" => owner = Some(Identity::from_stored(&value)),
                "endpoint" => endpoint = Some(value),
                "caps" => caps = serde_json::from_str::<Value>(&value).ok(),
                "level" => log_level = LogLevel::parse(&value),
                _ => {
                    if let Some(uri) = field.strip_prefix("sub:") {
                        subscriptions.push(uri.to_owned());
                    }
                }
            }
        }
        let Some(version) = version else { return Ok(None) };
        let client_capabilities = caps.unwrap_or_else(|| json!({})).into();
        Ok(Some(SessionRecord {
            negotiated: Negotiated { version, client_capabilities },
            log_level,
            subscriptions,
            owner,
            endpoint,
        }))
    }

    /// Refreshes a used session's record (not awaited; a failure is counted). A record that is
    /// gone although the session is in use is written again from this copy (Redis restarted
    /// without persistence, or was flushed), unless the session was deleted (its tombstone is
    /// there: a DELETE whose bus message this instance missed) — then the copy hears
    /// [`RecordNews::Deleted`]. When `reconcile` (the bus was down, its messages lost), a record
    /// that is there is read and its log level and subscriptions handed to the copy
    /// ([`RecordNews::Reconciled`]): a `logging/setLevel` or a (un)subscription made elsewhere
    /// meanwhile reaches this copy too.
    pub(super) fn keep_alive(
        &self,
        session: &str,
        idle: Duration,
        copy: RecordCopy,
        news: Recipient<RecordNews>,
        reconcile: bool,
    ) {
        let this = self.clone();
        let id = session.to_owned();
        let key = record_key(session);
        let ended = ended_key(session);
        actix_rt::spawn(async move {
            let mut connection = this.link.connection();
            let read: redis::RedisResult<(i64, i64)> = redis::pipe()
                .cmd("PEXPIRE")
                .arg(&key)
                .arg(millis(idle))
                .cmd("EXISTS")
                .arg(&ended)
                .query_async(&mut connection)
                .await;
            let outcome = match read {
                Ok((0, 0)) => {
                    log::info!("cluster: the record of {key} was gone from Redis; written again");
                    write(&copy, &key, idle).query_async::<()>(&mut connection).await
                }
                Ok((_, 1)) => {
                    log::debug!("cluster: {key} was deleted elsewhere; this copy ends");
                    news.do_send(RecordNews::Deleted);
                    Ok(())
                }
                Ok(_) if reconcile => {
                    // A failure was counted by `load`; the next reconcile tries again.
                    if let Ok(Some(record)) = this.load(&id).await {
                        let (log_level, subscriptions) = (record.log_level, record.subscriptions);
                        news.do_send(RecordNews::Reconciled { log_level, subscriptions });
                    }
                    Ok(())
                }
                Ok(_) => Ok(()),
                Err(error) => Err(error),
            };
            if let Err(error) = outcome {
                this.link.failed(&error);
            }
        });
    }

    /// `logging/setLevel` in a session: recorded, and every instance's copy told.
    pub(crate) async fn set_level(&self, session: &str, level: LogLevel) -> Result<(), Unreachable> {
        let mut pipe = redis::pipe();
        pipe.cmd("HSET").arg(record_key(session)).arg("level").arg(level_name(level)).ignore();
        self.record_and_tell(pipe, BusMessage::Level { session: session.to_owned(), level }).await
    }

    /// `resources/(un)subscribe` in a session: recorded, and every instance's copy told.
    pub(crate) async fn subscription(&self, session: &str, change: &Subscription) -> Result<(), Unreachable> {
        let (uri, on) = match change {
            Subscription::Subscribe(uri) => (uri, true),
            Subscription::Unsubscribe(uri) => (uri, false),
        };
        let mut pipe = redis::pipe();
        if on {
            pipe.cmd("HSET").arg(record_key(session)).arg(format!("sub:{uri}")).arg("1").ignore();
        } else {
            pipe.cmd("HDEL").arg(record_key(session)).arg(format!("sub:{uri}")).ignore();
        }
        let message = BusMessage::Sub { session: session.to_owned(), uri: uri.clone(), on };
        self.record_and_tell(pipe, message).await
    }

    /// Runs `pipe` (a change of a session's record) with the bus `message` telling every
    /// instance's copy, in one round trip.
    async fn record_and_tell(&self, mut pipe: redis::Pipeline, message: BusMessage) -> Result<(), Unreachable> {
        pipe.cmd("PUBLISH")
            .arg(BUS)
            .arg(encode(&self.link.instance, message))
            .ignore()
            .query_async::<()>(&mut self.link.connection())
            .await
            .map_err(|e| self.link.failed(&e))
    }

    /// DELETE: the record goes (a tombstone stays for the idle time) and every instance ends
    /// its copy. Answers whether the record was there.
    pub(crate) async fn delete(&self, session: &str, idle: Duration) -> Result<bool, Unreachable> {
        if !plausible_id(session) {
            return Ok(false);
        }
        let message = encode(&self.link.instance, BusMessage::End { session: session.to_owned() });
        let (deleted,): (i64,) = redis::pipe()
            .cmd("DEL")
            .arg(record_key(session))
            .cmd("SET")
            .arg(ended_key(session))
            .arg("1")
            .arg("PX")
            .arg(millis(idle))
            .ignore()
            .cmd("PUBLISH")
            .arg(BUS)
            .arg(message)
            .ignore()
            .query_async(&mut self.link.connection())
            .await
            .map_err(|e| self.link.failed(&e))?;
        Ok(deleted > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plausible_session_ids_are_looked_up() {
        assert!(plausible_id("0123456789abcdef0123456789abcdef"));
        assert!(!plausible_id(""));
        assert!(!plausible_id("a:b"));
        assert!(!plausible_id("*"));
        assert!(!plausible_id(&"a".repeat(65)));
    }
}
