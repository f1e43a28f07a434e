//! Each identity's share of the server's capacity: how many sessions, open streams (standalone
//! `GET /mcp`, `subscriptions/listen`, 2024-11-05 streams) and requests in flight (across its
//! sessions and stateless calls) one caller may hold, so that no caller — the least trusted one
//! included — can take the capacity every other caller needs.
//!
//! A share is taken ([`Shares::take`]) when the thing is opened and given back when its
//! [`Held`] guard drops. Past its share a caller gets its own refusal ([`ShareRefusal`]: `429` with
//! `Retry-After`); other callers are unaffected until the global caps, which stay as they are.
//! The share of an access-file client is its `limits`, else the server's default share
//! (`--session-share`, `--stream-share`, `--in-flight-share`; by default a quarter of the
//! sessions cap, and of the connections cap for streams and requests). Without any
//! authentication there is one caller and no one to protect from it: its share is the whole
//! capacity and nothing is counted.
//!
//! In cluster mode every instance publishes what each identity holds on it
//! ([`Shares::local_counts`]) and hears the others' ([`Shares::set_remote`]): a share is
//! counted across instances, a second or so behind.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, PoisonError, RwLock};

use dashmap::DashMap;
use mcpd::auth::access::ShareLimits;
use mcpd::auth::identity::Identity;
use mcpd::auth::scopes::Access;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric as _};
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use serde_json::{json, Value};

/// What a share counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Resource {
    /// Sessions (streamable HTTP and 2024-11-05).
    Sessions = 0,
    /// Open streams.
    Streams = 1,
    /// Requests running.
    InFlight = 2,
}

impl Resource {
    /// Every resource, in index order.
    pub(crate) const ALL: [Resource; 3] = [Resource::Sessions, Resource::Streams, Resource::InFlight];

    /// Its name in the status JSON, the metrics and the access file's `limits`.
    pub(crate) const fn label(self) -> &'static str {
        match self {
            Resource::Sessions => "sessions",
            Resource::Streams => "streams",
            Resource::InFlight => "inFlight",
        }
    }

    /// How a refusal names it.
    const fn noun(self) -> &'static str {
        match self {
            Resource::Sessions => "sessions",
            Resource::Streams => "open streams",
            Resource::InFlight => "requests in flight",
        }
    }

    fn of(self, limits: &ShareLimits) -> Option<usize> {
        match self {
            Resource::Sessions => limits.sessions,
            Resource::Streams => limits.streams,
            Resource::InFlight => limits.in_flight,
        }
    }
}

/// The default shares, configured.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ShareConfig {
    /// Sessions one identity may hold (default: a quarter of the sessions cap).
    pub sessions: Option<usize>,
    /// Streams one identity may hold open (default: a quarter of the connections cap).
    pub streams: Option<usize>,
    /// Requests one identity may have running (default: a quarter of the connections cap).
    pub in_flight: Option<usize>,
    /// When the sessions cap is reached, end an idle session of the identity holding the most
    /// sessions to make room (never a session with a request running or a stream open).
    pub evict_idle: bool,
}

/// Why a share was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ShareRefusal {
    /// What ran out.
    pub(crate) resource: Resource,
    /// The share.
    pub(crate) limit: usize,
    /// Who, as the message names it.
    pub(crate) who: String,
}

impl std::fmt::Display for ShareRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Too many {}: {} holds {}, its share (the limit is {}); end one, or retry later",
            self.resource.noun(),
            self.who,
            self.limit,
            self.limit
        )
    }
}

/// What one identity holds on this instance.
#[derive(Debug, Default)]
struct Counts([AtomicUsize; 3]);

/// A share held; given back when dropped.
#[derive(Debug)]
pub(crate) struct Held {
    counts: Option<(Arc<Counts>, Resource)>,
}

impl Held {
    /// A guard that holds nothing (the uncounted caller of a server without authentication).
    pub(crate) const fn nothing() -> Held {
        Held { counts: None }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if let Some((counts, resource)) = &self.counts {
            counts.0[*resource as usize].fetch_sub(1, Relaxed);
        }
    }
}

/// The shares of every identity.
#[derive(Debug, Default)]
pub(crate) struct Shares {
    /// The default share of each resource (`usize::MAX`: none).
    defaults: RwLock<[usize; 3]>,
    /// Whether the anonymous caller (no authentication configured) is counted at all.
    anonymous_counted: AtomicBool,
    /// Whether idle sessions may be ended to make room.
    evict_idle: AtomicBool,
    held: DashMap<Identity, Arc<Counts>>,
    /// What the other instances of a cluster hold, by identity.
    remote: RwLock<HashMap<String, [usize; 3]>>,
}

impl Shares {
    /// Sets the default shares from `config`, the global caps and whether any authentication
    /// is configured.
    pub(crate) fn configure(
        &self,
        config: &ShareConfig,
        max_sessions: usize,
        max_connections: usize,
        authenticated: bool,
    ) {
        let quarter = |cap: usize| (cap / 4).max(1);
        let defaults = [
            config.sessions.unwrap_or(quarter(max_sessions)),
            config.streams.unwrap_or(quarter(max_connections)),
            config.in_flight.unwrap_or(quarter(max_connections)),
        ];
        *self.defaults.write().unwrap_or_else(PoisonError::into_inner) = defaults;
        // Explicit shares apply to the anonymous caller too; the defaults protect callers from
        // each other, and without authentication there is only one.
        let explicit = config.sessions.is_some() || config.streams.is_some() || config.in_flight.is_some();
        self.anonymous_counted.store(authenticated || explicit, Relaxed);
        self.evict_idle.store(config.evict_idle, Relaxed);
    }

    /// Whether idle sessions may be ended to make room.
    pub(crate) fn evicts_idle(&self) -> bool {
        self.evict_idle.load(Relaxed)
    }

    /// The share of `resource` for a caller with `access`.
    fn limit(&self, resource: Resource, access: Option<&Access>) -> usize {
        let own = access.and_then(|a| a.client.as_ref()).and_then(|client| resource.of(&client.limits));
        own.unwrap_or_else(|| self.defaults.read().unwrap_or_else(PoisonError::into_inner)[resource as usize])
    }

    /// Takes one of `resource` for `identity` (the anonymous caller when `None`), within its
    /// share (counted with what it holds on the other instances).
    ///
    /// # Errors
    /// The [`ShareRefusal`] naming the share, when it is used up.
    pub(crate) fn take(
        &self,
        identity: Option<&Identity>,
        access: Option<&Access>,
        resource: Resource,
    ) -> Result<Held, ShareRefusal> {
        let identity = match identity {
            Some(identity) => identity.clone(),
            None if self.anonymous_counted.load(Relaxed) => Identity::anonymous(),
            None => return Ok(Held::nothing()),
        };
        let limit = self.limit(resource, access);
        let remote = self
            .remote
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(identity.as_str())
            .map_or(0, |c| c[resource as usize]);
        let counts = self.held.entry(identity.clone()).or_default().clone();
        let slot = &counts.0[resource as usize];
        let taken = slot.fetch_add(1, Relaxed);
        if taken + remote >= limit {
            slot.fetch_sub(1, Relaxed);
            let who = match access.and_then(|a| a.client.as_ref()) {
                Some(client) => format!("client {:?}", client.name),
                None => format!("this caller ({})", identity.shown()),
            };
            return Err(ShareRefusal { resource, limit, who });
        }
        Ok(Held { counts: Some((counts, resource)) })
    }

    /// The identity holding the most sessions here, if any holds one.
    pub(crate) fn largest_session_holder(&self) -> Option<Identity> {
        self.held
            .iter()
            .map(|entry| (entry.key().clone(), entry.value().0[Resource::Sessions as usize].load(Relaxed)))
            .filter(|(_, n)| *n > 0)
            .max_by_key(|(_, n)| *n)
            .map(|(identity, _)| identity)
    }

    /// What each identity holds on this instance (those holding anything), for the other
    /// instances of a cluster.
    pub(crate) fn local_counts(&self) -> HashMap<String, [usize; 3]> {
        // Forget the identities nothing is held for any more (no guard shares their counts).
        self.held.retain(|_, counts| Arc::strong_count(counts) > 1);
        self.held
            .iter()
            .map(|entry| {
                (entry.key().as_str().to_owned(), Resource::ALL.map(|r| entry.value().0[r as usize].load(Relaxed)))
            })
            .filter(|(_, counts)| counts.iter().any(|n| *n > 0))
            .collect()
    }

    /// What `identity` (the anonymous caller when `None`) holds here, as `/status/me` shows it.
    pub(crate) fn held_by(&self, identity: Option<&Identity>) -> Value {
        let identity = identity.cloned().unwrap_or_else(Identity::anonymous);
        let counts = self.held.get(&identity).map(|c| Resource::ALL.map(|r| c.0[r as usize].load(Relaxed)));
        let counts = counts.unwrap_or_default();
        let mut held = json!({});
        for resource in Resource::ALL {
            held[resource.label()] = json!(counts[resource as usize]);
        }
        held
    }

    /// What the other instances hold, summed by identity.
    pub(crate) fn set_remote(&self, remote: HashMap<String, [usize; 3]>) {
        *self.remote.write().unwrap_or_else(PoisonError::into_inner) = remote;
    }

    /// The status JSON's `shares`: the default shares and what each identity holds here.
    pub(crate) fn status_json(&self) -> Value {
        let defaults = *self.defaults.read().unwrap_or_else(PoisonError::into_inner);
        let held: Vec<Value> = self
            .local_counts()
            .into_iter()
            .map(|(identity, counts)| {
                let mut entry = json!({ "identity": shown_identity(&identity) });
                for resource in Resource::ALL {
                    entry[resource.label()] = json!(counts[resource as usize]);
                }
                entry
            })
            .collect();
        let mut shares = json!({ "held": held, "evictIdleSessions": self.evicts_idle() });
        for resource in Resource::ALL {
            shares["defaults"][resource.label()] = json!(defaults[resource as usize]);
        }
        shares
    }

    /// What access-file client `name` holds here (for `/metrics`), and what every other caller
    /// holds together (`name` `-`).
    pub(crate) fn by_client(&self) -> HashMap<String, [usize; 3]> {
        let mut out: HashMap<String, [usize; 3]> = HashMap::new();
        for (identity, counts) in self.local_counts() {
            let name = identity.strip_prefix("client:").unwrap_or(mcpd::auth::access::ANONYMOUS).to_owned();
            let sum = out.entry(name).or_default();
            for (total, n) in sum.iter_mut().zip(counts) {
                *total += n;
            }
        }
        out
    }
}

impl Shares {
    /// `mcpd_client_held{client, kind}`: what each access-file client holds here (`-`: every
    /// other caller together), by kind (`sessions`, `streams`, `inFlight`).
    pub(crate) fn encode(&self, encoder: &mut DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let mut family = encoder.encode_descriptor(
            "mcpd_client_held",
            "Sessions, open streams and requests in flight held, by access-file client (\"-\": every other caller)",
            None,
            MetricType::Gauge,
        )?;
        for (client, counts) in self.by_client() {
            for resource in Resource::ALL {
                let labels = [("client", client.as_str()), ("kind", resource.label())];
                ConstGauge::new(counts[resource as usize] as i64).encode(family.encode_family(&labels)?)?;
            }
        }
        Ok(())
    }
}

/// An identity as the status shows it: a key by the start of its digest only.
fn shown_identity(identity: &str) -> String {
    match identity.strip_prefix("key:") {
        Some(digest) => format!("key:{}…", &digest[..digest.len().min(12)]),
        None => identity.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcpd::auth::access::{AccessClient, ClientSpec, Credential};

    fn client(name: &str, limits: ShareLimits) -> Access {
        let spec = ClientSpec {
            name: name.into(),
            credential: Credential::Key("k".into()),
            tools: Vec::new(),
            prompts: Vec::new(),
            resources: Vec::new(),
            rate_limit: None,
            limits,
            operator: false,
            servers: None,
        };
        Access::of_client(Arc::new(AccessClient::new(&spec, Arc::default(), std::time::Instant::now())))
    }

    #[test]
    fn a_share_is_taken_given_back_and_refused_past_its_limit() {
        let shares = Shares::default();
        shares.configure(&ShareConfig::default(), 40, 100, true);
        let ci = client("ci", ShareLimits { sessions: Some(2), ..ShareLimits::default() });
        let ci_id = Identity::client("ci");
        let first = shares.take(Some(&ci_id), Some(&ci), Resource::Sessions).unwrap();
        let _second = shares.take(Some(&ci_id), Some(&ci), Resource::Sessions).unwrap();
        let refused = shares.take(Some(&ci_id), Some(&ci), Resource::Sessions).unwrap_err();
        assert_eq!(
            refused.to_string(),
            "Too many sessions: client \"ci\" holds 2, its share (the limit is 2); end one, or retry later"
        );
        // Another identity is unaffected; the default share is a quarter of the cap.
        let dev = Identity::client("dev");
        let held: Vec<Held> = (0..10).map(|_| shares.take(Some(&dev), None, Resource::Sessions).unwrap()).collect();
        assert!(shares.take(Some(&dev), None, Resource::Sessions).is_err(), "40 / 4");
        assert_eq!(shares.largest_session_holder(), Some(dev.clone()));
        drop(held);
        drop(first);
        assert_eq!(shares.local_counts()["client:ci"], [1, 0, 0]);
        assert!(shares.take(Some(&ci_id), Some(&ci), Resource::Sessions).is_ok(), "given back");
        assert_eq!(shares.by_client()["ci"], [1, 0, 0]);
    }

    #[test]
    fn without_authentication_nothing_is_counted_unless_a_share_is_set() {
        let shares = Shares::default();
        shares.configure(&ShareConfig::default(), 4, 4, false);
        let held: Vec<Held> = (0..100).map(|_| shares.take(None, None, Resource::InFlight).unwrap()).collect();
        assert!(shares.local_counts().is_empty());
        drop(held);
        shares.configure(&ShareConfig { in_flight: Some(1), ..ShareConfig::default() }, 4, 4, false);
        let _one = shares.take(None, None, Resource::InFlight).unwrap();
        assert!(shares.take(None, None, Resource::InFlight).is_err());
    }

    #[test]
    fn what_other_instances_hold_counts_against_the_share() {
        let shares = Shares::default();
        shares.configure(&ShareConfig { streams: Some(3), ..ShareConfig::default() }, 100, 100, true);
        let ci = Identity::client("ci");
        shares.set_remote(HashMap::from([("client:ci".to_owned(), [0, 2, 0])]));
        let _one = shares.take(Some(&ci), None, Resource::Streams).unwrap();
        assert!(shares.take(Some(&ci), None, Resource::Streams).is_err(), "2 elsewhere and 1 here");
        assert_eq!(shares.local_counts()["client:ci"], [0, 1, 0]);
    }
}
