//! Starting and finding sessions for the HTTP edge: a new session for `initialize` (within the
//! cap and its opener's share), the session a request names (this instance's, or in cluster
//! mode one adopted from its record), served only to the identity that opened it and on the
//! endpoint it was opened on (`/mcp` or a virtual server's `/mcp/<name>`), and a request run on
//! the session's executor, which its first request starts.

use std::sync::Arc;

use actix::Actor as _;
use actix_web::HttpResponse;
use mcpd::auth::identity::Identity;
use mcpd::auth::scopes::Access;
use mcpd::jsonrpc::{ErrorCode, Request};
use mcpd::server::{Interest, Reply, Scope, Screen, Subscription};
use mcpd::ProtocolError;

use super::guard::Caller;
use super::reply::{plain_error, session_not_found, share_refused};
use super::state::AppState;
use crate::counts::EdgeCounters;
use crate::session::{ChangeSubscription, Negotiated, Session, SessionHandle, SessionId, SessionShared};
use crate::shares::{Held, Resource, ShareRefusal};
use crate::tool_executor::{run, ToolExecutor};

/// Why no session could be started.
#[derive(Debug)]
pub(super) enum SpawnError {
    Full(usize),
    NoRandomness(String),
    /// The opener's share of sessions is used up.
    Share(ShareRefusal),
}

impl SpawnError {
    pub(super) fn response(&self) -> HttpResponse {
        match self {
            SpawnError::Full(max) => plain_error(
                503,
                ErrorCode::INVALID_REQUEST,
                format!("Too many sessions: the limit is {max}; try again later"),
            ),
            SpawnError::NoRandomness(e) => {
                plain_error(500, ErrorCode::INTERNAL_ERROR, format!("cannot create a session id: {e}"))
            }
            SpawnError::Share(refusal) => share_refused(None, refusal),
        }
    }
}

/// Starts a session actor (and its executor) on this worker and registers it.
pub(super) fn spawn_session(
    state: &AppState,
    negotiated: Option<Negotiated>,
    legacy_sse: bool,
    owner: &Caller,
) -> Result<SessionHandle, SpawnError> {
    let shares = state.sessions.shares();
    let share =
        shares.take(owner.identity.as_ref(), owner.access.as_deref(), Resource::Sessions).map_err(SpawnError::Share)?;
    if !state.sessions.has_room() && !state.sessions.evict_idle() {
        return Err(SpawnError::Full(state.sessions.max()));
    }
    let id = SessionId::random().map_err(|e| SpawnError::NoRandomness(e.to_string()))?;
    let opener = (owner.identity.clone(), owner.access.as_deref());
    let endpoint = endpoint_of(owner).map(str::to_owned);
    let handle = start_session(state, id, negotiated, legacy_sse, (opener, endpoint), Some(share));
    state.sessions.insert(handle.clone());
    // Counted here, synchronously: the actor's started() runs only after this handler yields.
    state.metrics.session_opened();
    Ok(handle)
}

/// The virtual server a caller's request came to (`None`: the whole server).
fn endpoint_of(caller: &Caller) -> Option<&str> {
    caller.access.as_ref().and_then(|access| access.view.as_ref()).map(|view| view.name())
}

/// Starts a session actor and its executor (not registered), bound to `owner` and the endpoint
/// it is opened on.
fn start_session(
    state: &AppState,
    id: SessionId,
    negotiated: Option<Negotiated>,
    legacy_sse: bool,
    ((owner, owner_access), endpoint): ((Option<Identity>, Option<&Access>), Option<String>),
    share: Option<Held>,
) -> SessionHandle {
    let mut shared =
        SessionShared::new(id, negotiated, state.limits.max_in_flight).owned_by(owner).on_endpoint(endpoint.as_deref());
    if let Some(share) = share {
        shared = shared.holding(share);
    }
    if let Some(cluster) = state.cluster().filter(|_| !legacy_sse) {
        shared = shared.numbered_from(i64::try_from(cluster.number_base()).unwrap_or(1) + 1);
    }
    let shared = Arc::new(shared);
    let session = Session::new(
        shared.clone(),
        state.sessions.clone(),
        state.counts.clone(),
        state.metrics.clone(),
        state.session_config.idle_timeout,
        state.server.live_catalog().clone(),
    )
    // No list change of a kind the opener sees none of (the screen's rule for sessions).
    .hearing(Screen::new(owner_access).interest(Interest::every_list()))
    .legacy_sse(legacy_sse)
    .start();
    SessionHandle { session, shared }
}

/// Runs `request` on the session's executor, which its first request starts (on this worker);
/// a session that ended meanwhile runs nothing more.
pub(super) fn run_in_session(
    handle: &SessionHandle,
    state: &AppState,
    request: Request,
    scope: Scope,
) -> impl std::future::Future<Output = Option<Result<Reply, ProtocolError>>> + 'static {
    let executor = handle.shared.executor().get_or_start(|| {
        ToolExecutor::new(state.server.clone(), state.limits.tool_timeout, state.counts.clone(), state.metrics.clone())
            .start()
    });
    async move {
        match executor {
            Some(executor) => run(&executor, request, scope).await,
            None => Some(Err(ProtocolError::Internal("the session ended".into()))),
        }
    }
}

/// The session `id` names for `caller`: this instance's, or (cluster mode) one another
/// instance created, adopted here from its record in Redis. A session another identity opened
/// is answered exactly as one that does not exist (and the refusal counted), and so is one
/// opened on another endpoint (`/mcp` or another virtual server). The error is the response to
/// send.
pub(super) async fn find_session(state: &AppState, id: &str, caller: &Caller) -> Result<SessionHandle, HttpResponse> {
    let handle = find_any_session(state, id).await?;
    if !handle.shared.serves(caller.identity.as_ref()) {
        EdgeCounters::bump(&state.metrics.edge().sessions_refused);
        return Err(session_not_found());
    }
    if handle.shared.endpoint() != endpoint_of(caller) {
        log::debug!("session {id}: used on another endpoint than its own; answered as an unknown session");
        return Err(session_not_found());
    }
    Ok(handle)
}

/// The session `id` names, whoever opened it.
async fn find_any_session(state: &AppState, id: &str) -> Result<SessionHandle, HttpResponse> {
    if let Some(handle) = state.sessions.get(id) {
        return Ok(handle);
    }
    let Some(cluster) = state.cluster() else { return Err(session_not_found()) };
    let record = match cluster.records().load(id).await {
        Ok(Some(record)) => record,
        Ok(None) => return Err(session_not_found()),
        Err(unreachable) => return Err(unreachable_response(&unreachable)),
    };
    if !state.sessions.has_room() {
        return Err(SpawnError::Full(state.sessions.max()).response());
    }
    let mut adopted = false;
    let handle = state.sessions.get_or_insert_with(id, || {
        adopted = true;
        let (negotiated, owner) = (Some(record.negotiated.clone()), record.owner.clone());
        let bound = ((owner, None), record.endpoint.clone());
        start_session(state, SessionId::adopted(id), negotiated, false, bound, None)
    });
    if adopted {
        state.metrics.session_opened();
        log::debug!("session {id} adopted from Redis");
        if let Some(level) = record.log_level {
            handle.shared.set_log_level(level);
        }
        for uri in record.subscriptions {
            handle.session.do_send(ChangeSubscription(Subscription::Subscribe(uri)));
        }
    }
    Ok(handle)
}

/// Cluster mode: Redis's answer turned into the response a request that needed it gets.
pub(super) fn unreachable_response(error: &crate::cluster::sessions::Unreachable) -> HttpResponse {
    plain_error(503, ErrorCode::INTERNAL_ERROR, error.to_string())
}
