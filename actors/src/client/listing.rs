//! One listing of a remote's tools, prompts, resources or resource templates: every page
//! requested in turn on the link, judged by the core's rules (`mcpd::client::list`: page shape,
//! entries skipped with their reason, at most `max_pages` pages and `max_items` entries, no
//! cursor twice), and the whole listing — all its pages — under one deadline, the link's
//! timeout. Skipped entries are logged as warnings naming the server and the entry.

use std::rc::Rc;

use mcpd::client::list::{Listed, Lister, Listing};
use serde_json::{Map, Value};

use super::error::ClientError;
use super::link::Link;

/// Lists every entry of kind `T` (all pages).
///
/// # Errors
/// Transport and protocol failures of a page, a page of the wrong shape
/// ([`ClientError::Protocol`]), a bound passed ([`ClientError::Limit`]), or the deadline
/// ([`ClientError::Timeout`]).
pub(crate) async fn list_all<T: Listed>(link: &Rc<Link>) -> Result<Listing<T>, ClientError> {
    let config = link.config();
    let mut lister = Lister::<T>::new(config.list_limits);
    let pages = async {
        let mut cursor: Option<String> = None;
        loop {
            let mut params = Map::new();
            if let Some(cursor) = cursor.take() {
                params.insert("cursor".into(), Value::String(cursor));
            }
            let result = link.request(T::METHOD, params).await?;
            match lister.absorb(result)? {
                Some(next) => cursor = Some(next),
                None => return Ok::<(), ClientError>(()),
            }
        }
    };
    let outcome = actix_rt::time::timeout(config.timeout, pages).await;
    match outcome {
        Ok(Ok(())) => {}
        Ok(Err(error)) => {
            log::warn!("{}: {} failed after {} page(s): {error}", link.name(), T::METHOD, lister.pages());
            return Err(error);
        }
        Err(_) => {
            log::warn!(
                "{}: {} did not finish within {} s ({} page(s), {} entries so far)",
                link.name(),
                T::METHOD,
                config.timeout.as_secs(),
                lister.pages(),
                lister.received()
            );
            return Err(ClientError::Timeout(config.timeout.as_secs()));
        }
    }
    let listing = lister.finish();
    for skipped in &listing.skipped {
        log::warn!("{}: {} skipped {skipped}", link.name(), T::METHOD);
    }
    if listing.skipped_count > listing.skipped.len() {
        log::warn!(
            "{}: {} skipped {} more entries",
            link.name(),
            T::METHOD,
            listing.skipped_count - listing.skipped.len()
        );
    }
    Ok(listing)
}
