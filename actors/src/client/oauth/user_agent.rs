//! Who approves an authorization request ([`UserAgent`]) and what reaches the redirect URI
//! ([`Callback`]).

use std::fmt;

use futures_util::future::LocalBoxFuture;

use super::error::AuthError;

/// What came back to the redirect URI (RFC 6749 §4.1.2, RFC 9207): the query parameters that
/// matter, untrusted and unchecked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Callback {
    /// `code`.
    pub code: Option<String>,
    /// `state`.
    pub state: Option<String>,
    /// `iss` (RFC 9207).
    pub iss: Option<String>,
    /// `error`.
    pub error: Option<String>,
    /// `error_description`.
    pub error_description: Option<String>,
}

impl Callback {
    /// The callback parameters among a redirect's decoded query `pairs` (others ignored).
    ///
    /// # Errors
    /// A parameter given twice (RFC 6749 §3.1: parameters are not repeated): which one.
    pub fn from_pairs<K: AsRef<str>>(pairs: impl IntoIterator<Item = (K, String)>) -> Result<Callback, String> {
        let mut callback = Callback::default();
        for (name, value) in pairs {
            let name = name.as_ref();
            let slot = match name {
                "code" => &mut callback.code,
                "state" => &mut callback.state,
                "iss" => &mut callback.iss,
                "error" => &mut callback.error,
                "error_description" => &mut callback.error_description,
                _ => continue,
            };
            if slot.replace(value).is_some() {
                return Err(format!("the redirect repeated the parameter {name}"));
            }
        }
        Ok(callback)
    }
}

/// Who approves an authorization request: a browser and a person, or something standing in
/// for them. Runs on the connection's thread (the future need not be `Send`).
pub trait UserAgent: Send + Sync + fmt::Debug {
    /// The redirect URI to register and to send (for a person: a loopback listener bound
    /// already, RFC 8252 `http://127.0.0.1:<port>/callback`).
    fn redirect_uri(&self) -> String;
    /// Has the authorization request at `url` approved and returns what reached the redirect
    /// URI (or an error saying why nothing did, e.g. a time limit).
    fn authorize(&self, url: String) -> LocalBoxFuture<'static, Result<Callback, AuthError>>;
}

#[cfg(test)]
mod tests {
    use super::Callback;

    #[test]
    fn callback_parameters_are_taken_once_and_others_ignored() {
        let pairs = [("code", "c"), ("state", "s"), ("iss", "https://as"), ("extra", "x")];
        let callback = Callback::from_pairs(pairs.map(|(k, v)| (k, v.to_owned()))).unwrap();
        assert_eq!(
            callback,
            Callback {
                code: Some("c".into()),
                state: Some("s".into()),
                iss: Some("https://as".into()),
                ..Callback::default()
            }
        );
        let repeated = Callback::from_pairs([("state", "a".to_owned()), ("state", "b".to_owned())]);
        assert_eq!(repeated, Err("the redirect repeated the parameter state".to_owned()));
    }
}
