//! `WWW-Authenticate` challenges (RFC 7235 §4.1, RFC 6750 §3, RFC 9728 §5.1): the `Bearer`
//! challenge's `resource_metadata`, `scope`, `error` and `error_description`, read from an
//! untrusted header value — several challenges in one value, quoted strings with escapes, any
//! case of the scheme and parameter names. Bounded: a value longer than
//! [`MAX_CHALLENGE_BYTES`] is not read, each parameter value is capped, and nothing panics.

/// Longest `WWW-Authenticate` value read.
pub const MAX_CHALLENGE_BYTES: usize = 8 * 1024;
/// Longest parameter value kept (longer ones are dropped).
const MAX_PARAM_BYTES: usize = 2048;

/// The parameters of a `Bearer` challenge that drive the client.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Challenge {
    /// `resource_metadata`: the protected-resource metadata URL (RFC 9728 §5.1).
    pub resource_metadata: Option<String>,
    /// `scope`: the scopes the request needs, space-separated.
    pub scope: Option<String>,
    /// `error` (`invalid_token`, `insufficient_scope`, …).
    pub error: Option<String>,
    /// `error_description`.
    pub error_description: Option<String>,
}

impl Challenge {
    /// Whether the server said the token lacks scope (`error="insufficient_scope"`).
    pub fn insufficient_scope(&self) -> bool {
        self.error.as_deref() == Some("insufficient_scope")
    }
}

/// The first `Bearer` challenge in a `WWW-Authenticate` value, if there is one.
pub fn bearer_challenge(value: &[u8]) -> Option<Challenge> {
    if value.len() > MAX_CHALLENGE_BYTES {
        return None;
    }
    let mut reader = Reader { bytes: value, at: 0 };
    let mut in_bearer = false;
    let mut found: Option<Challenge> = None;
    loop {
        reader.skip(|b| b == b' ' || b == b'\t' || b == b',');
        if reader.done() {
            break;
        }
        let token = reader.token();
        if token.is_empty() {
            // Not a token character where one must be: the rest cannot be read reliably.
            break;
        }
        reader.skip(|b| b == b' ' || b == b'\t');
        if reader.peek() == Some(b'=') && reader.peek_at(1) != Some(b'=') {
            reader.at += 1;
            reader.skip(|b| b == b' ' || b == b'\t');
            let value = if reader.peek() == Some(b'"') { reader.quoted() } else { Some(reader.bare().to_vec()) };
            if let (true, Some(challenge), Some(value)) = (in_bearer, found.as_mut(), value) {
                challenge.set(token, value);
            }
            continue;
        }
        // A new challenge (its scheme), or a token68 after a scheme.
        if reader.peek() == Some(b'=') {
            // token68 with padding: skip it.
            reader.skip(|b| b == b'=');
            continue;
        }
        if found.is_some() {
            // The challenge after the Bearer one: the Bearer one is complete.
            break;
        }
        if token.eq_ignore_ascii_case(b"bearer") {
            in_bearer = true;
            found = Some(Challenge::default());
        } else {
            in_bearer = false;
        }
    }
    found
}

impl Challenge {
    fn set(&mut self, name: &[u8], value: Vec<u8>) {
        if value.len() > MAX_PARAM_BYTES {
            return;
        }
        let Ok(value) = String::from_utf8(value) else { return };
        let slot = if name.eq_ignore_ascii_case(b"resource_metadata") {
            &mut self.resource_metadata
        } else if name.eq_ignore_ascii_case(b"scope") {
            &mut self.scope
        } else if name.eq_ignore_ascii_case(b"error") {
            &mut self.error
        } else if name.eq_ignore_ascii_case(b"error_description") {
            &mut self.error_description
        } else {
            return;
        };
        // The first occurrence of a parameter counts.
        if slot.is_none() {
            *slot = Some(value);
        }
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn done(&self) -> bool {
        self.at >= self.bytes.len()
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn peek_at(&self, ahead: usize) -> Option<u8> {
        self.bytes.get(self.at + ahead).copied()
    }

    fn skip(&mut self, what: impl Fn(u8) -> bool) {
        while self.peek().is_some_and(&what) {
            self.at += 1;
        }
    }

    /// A run of RFC 7230 `tchar`s (also the token68 characters `/` and `+`).
    fn token(&mut self) -> &'a [u8] {
        let start = self.at;
        self.skip(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~/".contains(&b));
        let bytes: &'a [u8] = self.bytes;
        bytes.get(start..self.at).unwrap_or_default()
    }

    /// An unquoted parameter value, read leniently up to white space or a comma (servers send
    /// `scope=files:read`, which is not a strict token).
    fn bare(&mut self) -> &'a [u8] {
        let start = self.at;
        self.skip(|b| !matches!(b, b' ' | b'\t' | b','));
        let bytes: &'a [u8] = self.bytes;
        bytes.get(start..self.at).unwrap_or_default()
    }

    /// A quoted string (the reader is on its opening quote), unescaped; `None` when it does not
    /// end.
    fn quoted(&mut self) -> Option<Vec<u8>> {
        self.at += 1;
        let mut value = Vec::new();
        while let Some(b) = self.peek() {
            self.at += 1;
            match b {
                b'"' => return Some(value),
                b'\\' => {
                    let escaped = self.peek()?;
                    self.at += 1;
                    value.push(escaped);
                }
                _ => value.push(b),
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Option<Challenge> {
        bearer_challenge(text.as_bytes())
    }

    #[test]
    fn a_bearer_challenge_gives_its_parameters() {
        let c = parse(r#"Bearer resource_metadata="https://x/.well-known/oauth-protected-resource/mcp", scope="a b""#)
            .unwrap();
        assert_eq!(c.resource_metadata.as_deref(), Some("https://x/.well-known/oauth-protected-resource/mcp"));
        assert_eq!(c.scope.as_deref(), Some("a b"));
        assert!(!c.insufficient_scope());
        let c = parse(
            r#"Bearer error="insufficient_scope", scope="mcp:admin", resource_metadata="http://h/m", error_description="never \"ok\"""#,
        )
        .unwrap();
        assert!(c.insufficient_scope());
        assert_eq!(c.error_description.as_deref(), Some(r#"never "ok""#));
    }

    #[test]
    fn scheme_and_names_are_case_insensitive_and_tokens_need_no_quotes() {
        let c = parse("bEaReR Error=invalid_token, SCOPE=files:read").unwrap();
        assert_eq!(c.error.as_deref(), Some("invalid_token"));
        assert_eq!(c.scope.as_deref(), Some("files:read"));
    }

    #[test]
    fn the_bearer_challenge_is_found_among_others() {
        let c = parse(r#"Basic realm="a, b", Bearer scope="x", DPoP algs="ES256""#).unwrap();
        assert_eq!(c.scope.as_deref(), Some("x"));
        assert_eq!(c.error, None);
        let c = parse(r#"Bearer realm="r", Basic realm="scope=y""#).unwrap();
        assert_eq!(c.scope, None, "the next challenge's parameters are not the Bearer one's");
        assert_eq!(parse(r#"Basic realm="x""#), None);
        assert_eq!(parse("Bearer").unwrap(), Challenge::default());
        assert_eq!(parse("Negotiate abc+/==, Bearer scope=s").unwrap().scope.as_deref(), Some("s"));
    }

    #[test]
    fn hostile_values_never_panic_and_are_bounded() {
        for text in [
            "",
            ",,,",
            "Bearer scope=\"unterminated",
            "Bearer =\"x\"",
            "Bearer scope=\"a\\",
            "\u{7f}Bearer",
            "Bearer scope=é",
        ] {
            let _ = parse(text);
        }
        assert_eq!(parse("Bearer scope=\"open").unwrap().scope, None);
        let long = format!("Bearer scope=\"{}\"", "a".repeat(MAX_CHALLENGE_BYTES));
        assert_eq!(parse(&long), None);
        let big_param = format!("Bearer scope=\"{}\", error=e", "a".repeat(MAX_PARAM_BYTES + 1));
        let c = parse(&big_param).unwrap();
        assert_eq!((c.scope, c.error.as_deref()), (None, Some("e")));
        assert_eq!(bearer_challenge(b"Bearer scope=\"\xff\""), Some(Challenge::default()));
    }
}
