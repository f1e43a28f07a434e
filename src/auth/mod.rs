//! Who may talk to the server: API keys compared in constant time, and the Origin / Host checks
//! that stop DNS-rebinding attacks on a server bound to loopback (here); OAuth 2.1 resource-server
//! rules without any I/O: the configuration, the checks of a verified token's claims, the
//! `WWW-Authenticate` challenge, the RFC 9728 metadata document and per-tool scopes
//! ([`oauth`], [`challenge`], [`scopes`]); per-client access from the access file ([`access`]).

pub mod access;
pub mod challenge;
pub(crate) mod globs;
mod granted;
pub mod identity;
pub mod oauth;
pub mod scopes;

use subtle::ConstantTimeEq;

/// Request headers that may carry a key, besides `Authorization: Bearer <key>`.
pub const KEY_HEADERS: [&str; 3] = ["x-mcp-key", "x-api-key", "api-key"];

/// The configured API keys. Empty means the server is open.
#[derive(Clone, Default)]
pub struct KeySet {
    keys: Vec<Vec<u8>>,
    /// Each key's identity (its digest), in the order of `keys`.
    identities: Vec<identity::Identity>,
}

impl std::fmt::Debug for KeySet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the keys themselves.
        f.debug_struct("KeySet").field("count", &self.keys.len()).finish()
    }
}

impl KeySet {
    /// Keys from strings; blank entries are ignored, surrounding white space is trimmed.
    pub fn new<I, S>(keys: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let keys: Vec<Vec<u8>> =
            keys.into_iter().map(|k| k.as_ref().trim().as_bytes().to_vec()).filter(|k| !k.is_empty()).collect();
        let identities = keys.iter().map(|key| identity::Identity::key(key)).collect();
        KeySet { keys, identities }
    }

    /// Whether no key is configured (every request is let through).
    pub fn is_open(&self) -> bool {
        self.keys.is_empty()
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Whether a request is authorized. `header` looks a header up by lower-case name. Every
    /// candidate is compared with every key without early exit, so timing reveals nothing but
    /// the number of keys.
    pub fn authorizes<'a>(&self, header: impl Fn(&str) -> Option<&'a str>) -> bool {
        if self.is_open() {
            return true;
        }
        let bearer = header("authorization").and_then(|value| {
            let (scheme, token) = value.trim().split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
        });
        let mut ok = subtle::Choice::from(0u8);
        for candidate in bearer.into_iter().chain(KEY_HEADERS.iter().filter_map(|name| header(name).map(str::trim))) {
            for key in &self.keys {
                ok |= candidate.as_bytes().ct_eq(key);
            }
        }
        ok.into()
    }

    /// The identity of the key at `index` (as [`KeySet::identify`] finds it).
    pub fn identity(&self, index: usize) -> Option<&identity::Identity> {
        self.identities.get(index)
    }

    /// Which configured key a request presents (its position in the set), for telling callers
    /// apart (task ownership); `None` when none matches or the set is open. Constant time like
    /// [`KeySet::authorizes`].
    pub fn identify<'a>(&self, header: impl Fn(&str) -> Option<&'a str>) -> Option<usize> {
        // An open set identifies nobody: no header is read.
        if self.is_open() {
            return None;
        }
        let bearer = header("authorization").and_then(|value| {
            let (scheme, token) = value.trim().split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
        });
        use subtle::ConditionallySelectable as _;
        let mut found = 0u64;
        let mut any = subtle::Choice::from(0u8);
        for candidate in bearer.into_iter().chain(KEY_HEADERS.iter().filter_map(|name| header(name).map(str::trim))) {
            for (index, key) in self.keys.iter().enumerate() {
                let matches = candidate.as_bytes().ct_eq(key);
                found.conditional_assign(&(index as u64), matches);
                any |= matches;
            }
        }
        bool::from(any).then(|| usize::try_from(found).ok()).flatten()
    }
}

/// Which browser origins and Host names the server accepts.
#[derive(Debug, Clone, Default)]
pub struct OriginPolicy {
    /// Origins allowed besides loopback ones, exact (`scheme://host[:port]`, no trailing slash).
    pub allowed_origins: Vec<String>,
    /// Host names allowed besides loopback ones, when the server is bound to loopback.
    pub allowed_hosts: Vec<String>,
}

impl OriginPolicy {
    /// Whether a present `Origin` header is acceptable: a loopback origin or an allowed one.
    pub fn origin_allowed(&self, origin: &str) -> bool {
        let origin = origin.trim();
        if self.allowed_origins.iter().any(|o| o.eq_ignore_ascii_case(origin)) {
            return true;
        }
        let Some(rest) = origin.strip_prefix("http://").or_else(|| origin.strip_prefix("https://")) else {
            return false;
        };
        is_loopback_authority(rest)
    }

    /// Whether a `Host` header is acceptable for a server bound to loopback: a loopback name or
    /// an allowed one. (A server bound elsewhere accepts any Host and relies on its keys.)
    pub fn host_allowed(&self, host: &str) -> bool {
        let host = host.trim();
        is_loopback_authority(host)
            || self
                .allowed_hosts
                .iter()
                .any(|h| h.eq_ignore_ascii_case(host) || h.eq_ignore_ascii_case(strip_port(host)))
    }
}

fn strip_port(authority: &str) -> &str {
    if authority.starts_with('[') {
        return authority.split_once(']').map_or(authority, |(h, _)| &authority[..h.len() + 1]);
    }
    authority
        .rsplit_once(':')
        .map_or(authority, |(h, port)| if port.bytes().all(|b| b.is_ascii_digit()) { h } else { authority })
}

fn is_loopback_authority(authority: &str) -> bool {
    if authority.contains('/') || authority.contains('@') {
        return false;
    }
    let host = strip_port(authority);
    if let Some(port) = authority.strip_prefix(host).and_then(|p| p.strip_prefix(':')) {
        if port.is_empty() || !port.bytes().all(|b| b.is_ascii_digit()) {
            return false;
        }
    } else if authority != host {
        return false;
    }
    is_loopback_host(host)
}

/// Whether a host name or address literal names this machine's loopback interface.
pub fn is_loopback_host(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    // The names every local client sends, answered without parsing an address (this runs on
    // every request to a loopback listener).
    if host == "127.0.0.1" || host == "::1" || host.eq_ignore_ascii_case("localhost") {
        return true;
    }
    host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<&'a str> + 'a {
        move |name| pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
    }

    #[test]
    fn open_when_no_key() {
        assert!(KeySet::new(Vec::<String>::new()).authorizes(headers(&[])));
        assert!(KeySet::new(["  "]).is_open());
    }

    #[test]
    fn bearer_and_key_headers_are_accepted() {
        let keys = KeySet::new(["k1", "k2"]);
        assert!(keys.authorizes(headers(&[("authorization", "Bearer k2")])));
        assert!(keys.authorizes(headers(&[("authorization", "bearer  k1 ")])));
        assert!(keys.authorizes(headers(&[("x-mcp-key", "k1")])));
        assert!(keys.authorizes(headers(&[("x-api-key", "k2")])));
        assert!(keys.authorizes(headers(&[("api-key", "k1")])));
        assert!(!keys.authorizes(headers(&[("authorization", "k1")])));
        assert!(!keys.authorizes(headers(&[("authorization", "Basic k1")])));
        assert!(!keys.authorizes(headers(&[("x-api-key", "k3")])));
        assert!(!keys.authorizes(headers(&[])));
    }

    #[test]
    fn loopback_origins_pass_and_others_need_allowing() {
        let policy = OriginPolicy { allowed_origins: vec!["https://app.example.com".into()], allowed_hosts: vec![] };
        for ok in [
            "http://localhost",
            "http://localhost:3000",
            "http://127.0.0.1:8080",
            "https://[::1]:9",
            "https://app.example.com",
        ] {
            assert!(policy.origin_allowed(ok), "{ok}");
        }
        for bad in [
            "http://evil.example.com",
            "null",
            "http://localhost.evil.com",
            "file://",
            "http://127.0.0.1:80/x",
            "http://localhost:x",
        ] {
            assert!(!policy.origin_allowed(bad), "{bad}");
        }
    }

    #[test]
    fn loopback_names_and_every_loopback_address_are_loopback_hosts() {
        for ok in ["127.0.0.1", "::1", "[::1]", "localhost", "LocalHost", "127.0.0.2", "0:0:0:0:0:0:0:1"] {
            assert!(is_loopback_host(ok), "{ok}");
        }
        for bad in ["127.0.0.1.evil.com", "::2", "localhost.evil.com", "10.0.0.1", ""] {
            assert!(!is_loopback_host(bad), "{bad}");
        }
    }

    #[test]
    fn host_check_accepts_loopback_names_with_ports() {
        let policy = OriginPolicy::default();
        assert!(policy.host_allowed("127.0.0.1:8080"));
        assert!(policy.host_allowed("localhost"));
        assert!(policy.host_allowed("[::1]:3000"));
        assert!(!policy.host_allowed("evil.example.com"));
        assert!(!policy.host_allowed("evil.example.com:8080"));
        let allowing = OriginPolicy { allowed_origins: vec![], allowed_hosts: vec!["mybox".into()] };
        assert!(allowing.host_allowed("mybox:8080"));
    }
}
