//! This thread's satellite links, one per manager and server: a stateless link on the caller's
//! thread that follows its connection's primary link through their [`LinkShare`], so a call runs
//! where its caller runs. Kept in a `thread_local` (a link is the thread's: `Rc`, awc), made on
//! first use, replaced when the connection is; those of servers removed since go when the next
//! one is made.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;

use super::ClientManager;
use crate::client::link::{Link, LinkShare};

/// A satellite link on this thread, and the share of the primary it follows.
#[derive(Clone)]
pub(super) struct Satellite {
    pub(super) share: Arc<LinkShare>,
    pub(super) link: Rc<Link>,
}

thread_local! {
    /// This thread's satellites, by manager serial and server id.
    static SATELLITES: RefCell<HashMap<u64, HashMap<String, Satellite>>> = RefCell::new(HashMap::new());
}

impl ClientManager {
    /// This thread's satellite of the server's connection, when calls may take one: the
    /// connection is up to date, on the stateless wire, and this thread is an actix arbiter
    /// (a satellite's HTTP client needs one). Made on first use; replaced when the connection
    /// is.
    pub(super) fn satellite(&self, id: &str) -> Option<Satellite> {
        actix_rt::Arbiter::try_current()?;
        let share = {
            let stored = self.records.get(id)?;
            let entry = self.connections.get(id)?;
            if !entry.serves(&stored.key) || !entry.share.stateless() {
                return None;
            }
            entry.share.clone()
        };
        let found = SATELLITES.with(|satellites| {
            let satellites = satellites.borrow();
            let satellite = satellites.get(&self.serial)?.get(id)?;
            Arc::ptr_eq(&satellite.share, &share).then(|| satellite.link.clone())
        });
        if let Some(link) = found {
            return Some(Satellite { share, link });
        }
        let config = self.record(id)?.link_config(&self.credentials).ok()?;
        let link = Link::satellite(config, self.handlers_for(id), self.client_info.clone(), share.clone());
        SATELLITES.with(|satellites| {
            let mut satellites = satellites.borrow_mut();
            let mine = satellites.entry(self.serial).or_default();
            // Servers removed since: their satellites go (stateless links hold no session).
            mine.retain(|server, _| self.connections.contains_key(server));
            mine.insert(id.to_owned(), Satellite { share: share.clone(), link: link.clone() });
        });
        Some(Satellite { share, link })
    }
}
