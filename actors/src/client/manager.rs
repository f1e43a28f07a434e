//! [`ClientManager`]: the manager API over client connections. It keeps server records
//! ([`ServerRecord`]), hands each server one `ClientConnection` actor keyed by the fingerprint of
//! its configuration, and replaces that actor when the configuration changes; a credential store
//! given to it answers servers' `401`s (see `credentials`).
//!
//! # Layout
//!
//! - this file: the records, the connections, and what only the connection actor does —
//!   listings, tasks, any other request;
//! - `calls`: tool calls, on this thread's satellite when there is one (a gateway's usual call,
//!   and [`ClientManager::forward`], its plain call's one entry point), else through the
//!   connection;
//! - `satellite`: this thread's satellite links, made on first use and replaced with their
//!   connection.

mod calls;
mod satellite;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use actix::{Actor as _, Addr};
use dashmap::DashMap;
use mcpd::client::config::ConfigDocument;
use mcpd::client::list::Listing;
use mcpd::model::{Implementation, Tool};
use serde_json::{Map, Value};

use super::connection::{
    CancelTask, ClientConnection, GetTask, List, Listable, SendRequest, StopClientConnection, Traced,
};
use super::credentials::CredentialStores;
use super::error::ClientError;
use super::handlers::ClientHandlers;
use super::link::LinkShare;
use super::oauth::{CredentialStore, MemoryStore};
use super::record::ServerRecord;
use crate::counts::ActorCounts;

/// A record with what every call needs from it, worked out once when it is stored.
#[derive(Debug)]
struct Stored {
    record: ServerRecord,
    /// [`ServerRecord::connection_key`].
    key: String,
    /// The configured server name (HTTP records), for [`super::CallResult::server_name`].
    server_name: Option<String>,
}

impl Stored {
    fn new(record: ServerRecord) -> Stored {
        let key = record.connection_key();
        let server_name = record.document().and_then(|document| document.resolve().ok()).map(|config| config.name);
        Stored { record, key, server_name }
    }
}

/// A server's connection.
#[derive(Debug)]
struct Connection {
    /// The [`ServerRecord::connection_key`] it was made for.
    key: String,
    /// Its actor.
    addr: Addr<ClientConnection>,
    /// What its link publishes to satellites.
    share: Arc<LinkShare>,
}

impl Connection {
    /// Whether it is up and made for the configuration `key`.
    fn serves(&self, key: &str) -> bool {
        self.key == key && self.addr.connected()
    }
}

/// A server's live connection, and its configured name.
struct Live {
    addr: Addr<ClientConnection>,
    /// [`Stored::server_name`].
    server_name: Option<String>,
}

/// Numbers managers, so that a thread's satellites are told apart by manager.
static NEXT_MANAGER: AtomicU64 = AtomicU64::new(1);

/// Client connections by server id.
///
/// A server whose connection speaks the stateless 2026-07-28 HTTP wire is also called from
/// *satellite* links (see `LinkShare`): one per server on each thread that calls it (an
/// actix-web worker of a gateway, say), so a call runs on the caller's thread instead of
/// hopping to the connection actor's and back. Everything else — negotiation, listings, other
/// wires, OAuth challenges, tasks' follow-up requests — goes through the connection actor.
#[derive(Debug)]
pub struct ClientManager {
    records: DashMap<String, Stored>,
    connections: DashMap<String, Connection>,
    serial: u64,
    handlers: ClientHandlers,
    client_info: Implementation,
    counts: Arc<ActorCounts>,
    credentials: CredentialStores,
}

impl ClientManager {
    /// A manager whose connections answer server requests with `handlers`.
    pub fn new(handlers: ClientHandlers, client_info: Implementation, counts: Arc<ActorCounts>) -> Self {
        crate::panics::install();
        let credentials = CredentialStores { store: None, memory: Arc::new(MemoryStore::default()) };
        ClientManager {
            records: DashMap::new(),
            connections: DashMap::new(),
            serial: NEXT_MANAGER.fetch_add(1, Ordering::Relaxed),
            handlers,
            client_info,
            counts,
            credentials,
        }
    }

    /// The same manager answering `401`s with OAuth and the credentials in `store`: those of
    /// every HTTP server (stored tokens only, refreshed; nobody is asked to log in) but servers
    /// configured with an `Authorization` header and no `oauth` settings, and those of servers
    /// with `oauth` settings. Set before the first call: open connections keep what they had.
    pub fn with_credentials(mut self, store: Arc<dyn CredentialStore>) -> Self {
        self.credentials.store = Some(store);
        self
    }

    /// Adds or replaces a server record. A changed configuration takes effect at the next call:
    /// the old connection is closed and a new one opened.
    pub fn upsert(&self, record: ServerRecord) {
        self.records.insert(record.id.clone(), Stored::new(record));
    }

    /// A copy of a server record.
    pub fn record(&self, id: &str) -> Option<ServerRecord> {
        self.records.get(id).map(|r| r.value().record.clone())
    }

    /// Every record's id.
    pub fn ids(&self) -> Vec<String> {
        self.records.iter().map(|r| r.key().clone()).collect()
    }

    /// Removes a server and closes its connection.
    pub async fn remove(&self, id: &str) {
        self.records.remove(id);
        self.invalidate(id).await;
    }

    /// Closes the server's connection (its session is DELETEd); the next call reconnects.
    pub async fn invalidate(&self, id: &str) {
        if let Some((_, connection)) = self.connections.remove(id) {
            let _ = connection.addr.send(StopClientConnection).await;
        }
    }

    /// Closes every connection.
    pub async fn close(&self) {
        for id in self.connections.iter().map(|e| e.key().clone()).collect::<Vec<_>>() {
            self.invalidate(&id).await;
        }
    }

    fn connection(&self, record: &ServerRecord) -> Result<Addr<ClientConnection>, ClientError> {
        let key = record.connection_key();
        if let Some(entry) = self.connections.get(&record.id) {
            if entry.serves(&key) {
                return Ok(entry.addr.clone());
            }
        }
        let config = record.link_config(&self.credentials)?;
        let share = LinkShare::new(config.oauth.is_some());
        let addr = ClientConnection::primary(
            config,
            self.handlers_for(&record.id),
            self.client_info.clone(),
            self.counts.clone(),
            share.clone(),
        )
        .start();
        if let Some(old) = self.connections.insert(record.id.clone(), Connection { key, addr: addr.clone(), share }) {
            // The configuration changed: the old connection closes its streams and session.
            old.addr.do_send(StopClientConnection);
        }
        Ok(addr)
    }

    /// The handlers of the connections to server `id`: its notifications reach the hook under
    /// the record's id (two servers' documents may carry the same name).
    fn handlers_for(&self, id: &str) -> ClientHandlers {
        let mut handlers = self.handlers.clone();
        if let Some(hook) = handlers.notifications.take() {
            let id = id.to_owned();
            handlers.notifications = Some(Arc::new(move |_name: &str, method: &str, params: &Value| {
                hook(&id, method, params);
            }));
        }
        handlers
    }

    /// The live connection of a server and its configured name, without copying its record
    /// when the connection is up to date (the path of every call).
    fn live(&self, id: &str) -> Result<Live, ClientError> {
        let (key, server_name) = {
            let stored = self.records.get(id).ok_or_else(|| ClientError::UnknownServer(id.to_owned()))?;
            (stored.key.clone(), stored.server_name.clone())
        };
        if let Some(entry) = self.connections.get(id) {
            if entry.serves(&key) {
                return Ok(Live { addr: entry.addr.clone(), server_name });
            }
        }
        let record = self.require(id)?;
        Ok(Live { addr: self.connection(&record)?, server_name })
    }

    /// The live connection of a server.
    fn addr(&self, id: &str) -> Result<Addr<ClientConnection>, ClientError> {
        self.live(id).map(|live| live.addr)
    }

    fn require(&self, id: &str) -> Result<ServerRecord, ClientError> {
        self.record(id).ok_or_else(|| ClientError::UnknownServer(id.to_owned()))
    }

    /// Lists every tool of the server and stores the list in its record, unless the record's
    /// configuration changed while the list was fetched.
    ///
    /// # Errors
    /// Transport, protocol and configuration failures; [`ClientError::ConfigChanged`].
    pub async fn test_and_refresh_tools(&self, id: &str) -> Result<Vec<Tool>, ClientError> {
        self.refresh_tools(id).await.map(|listing| listing.items)
    }

    /// As [`ClientManager::test_and_refresh_tools`], with what the listing skipped and why.
    ///
    /// # Errors
    /// As [`ClientManager::test_and_refresh_tools`].
    pub async fn refresh_tools(&self, id: &str) -> Result<Listing<Tool>, ClientError> {
        let record = self.require(id)?;
        let before = record.connection_key();
        let listing = self
            .connection(&record)?
            .send(Traced::current(List::<Tool>::new()))
            .await
            .map_err(|_| ClientError::Closed)??;
        let mut current = self.records.get_mut(id).ok_or(ClientError::ConfigChanged)?;
        let text = |record: &ServerRecord| record.document().map(ConfigDocument::text);
        if current.key != before || text(&current.record) != text(&record) {
            return Err(ClientError::ConfigChanged);
        }
        current.record.tools = listing.items.clone();
        Ok(listing)
    }

    /// Lists every entry of one kind — `Prompt`, `Resource`, `ResourceTemplate` (or `Tool`,
    /// without storing them) — with what the listing skipped and why.
    ///
    /// # Errors
    /// Transport, protocol and configuration failures; a listing past its bounds.
    pub async fn list<T: Listable>(&self, id: &str) -> Result<Listing<T>, ClientError> {
        let connection = self.addr(id)?;
        connection.send(Traced::current(List::<T>::new())).await.map_err(|_| ClientError::Closed)?
    }

    /// A task's state (`tasks/get`).
    ///
    /// # Errors
    /// Transport, protocol and configuration failures; the server's JSON-RPC error (`-32602`
    /// for a task it does not know); [`ClientError::Task`] when the server does not speak
    /// 2026-07-28.
    pub async fn get_task(&self, id: &str, task_id: &str) -> Result<mcpd::tasks::DetailedTask, ClientError> {
        let connection = self.addr(id)?;
        let get = Traced::current(GetTask { task_id: task_id.to_owned() });
        connection.send(get).await.map_err(|_| ClientError::Closed)?
    }

    /// Asks the server to cancel a task (`tasks/cancel`: acknowledged at once; the task ends
    /// `cancelled` unless it finished first).
    ///
    /// # Errors
    /// As [`ClientManager::get_task`].
    pub async fn cancel_task(&self, id: &str, task_id: &str) -> Result<(), ClientError> {
        let connection = self.addr(id)?;
        let cancel = Traced::current(CancelTask { task_id: task_id.to_owned() });
        connection.send(cancel).await.map_err(|_| ClientError::Closed)?
    }

    /// Any other request; its result.
    ///
    /// # Errors
    /// Transport, protocol and configuration failures, and the server's JSON-RPC errors.
    pub async fn request(&self, id: &str, method: &str, params: Map<String, Value>) -> Result<Value, ClientError> {
        let connection = self.addr(id)?;
        let request = SendRequest { method: method.to_owned(), params };
        connection.send(Traced::current(request)).await.map_err(|_| ClientError::Closed)?
    }
}
