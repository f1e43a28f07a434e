//! The `Supervisor` actor: one per process. It owns the actor counts, the session registry and
//! the listener's address, and orders shutdown: the listener is stopped (draining its endpoint),
//! then every session, then the supervisor itself. Its one timer is the sessions' sweeper: every
//! [`SLOT`] it tells the sessions whose check is due ([`SessionRegistry::sweep`]).
//!
//! Handles `StopSupervisor` and `ActorCountsQuery`.

use std::sync::Arc;
use std::time::Duration;

use actix::{
    Actor, ActorContext, ActorFutureExt as _, Addr, AsyncContext as _, AtomicResponse, Context, Handler, Message,
    WrapFuture as _,
};

use crate::counts::{ActorCounts, ActorKind};
use crate::listener::{Listener, StopListener};
use crate::session::{EndReason, SessionRegistry, StopSession, SWEEP_SLOT_MS};

/// How often the sweeper looks for due checks.
const SLOT: Duration = Duration::from_millis(SWEEP_SLOT_MS);

/// The root of the actor tree.
#[derive(Debug)]
pub(crate) struct Supervisor {
    counts: Arc<ActorCounts>,
    listener: Addr<Listener>,
    sessions: Arc<SessionRegistry>,
}

impl Supervisor {
    /// A supervisor over a started listener and the session registry.
    pub(crate) fn new(counts: Arc<ActorCounts>, listener: Addr<Listener>, sessions: Arc<SessionRegistry>) -> Self {
        Supervisor { counts, listener, sessions }
    }
}

impl Actor for Supervisor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        self.counts.started(ActorKind::Supervisor);
        ctx.run_interval(SLOT, |act, _| act.sessions.sweep());
    }

    fn stopped(&mut self, _ctx: &mut Self::Context) {
        self.counts.stopped(ActorKind::Supervisor);
    }
}

/// Stop everything: the listener (and its endpoint), then the supervisor.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub(crate) struct StopSupervisor;

impl Handler<StopSupervisor> for Supervisor {
    type Result = AtomicResponse<Self, ()>;

    fn handle(&mut self, _msg: StopSupervisor, _ctx: &mut Self::Context) -> Self::Result {
        self.counts.handled(ActorKind::Supervisor);
        let listener = self.listener.clone();
        let sessions = self.sessions.handles();
        AtomicResponse::new(Box::pin(
            async move {
                if let Err(e) = listener.send(StopListener).await {
                    log::debug!("listener already gone: {e}");
                }
                for handle in sessions {
                    let _ = handle.session.send(StopSession { reason: EndReason::Shutdown }).await;
                }
            }
            .into_actor(self)
            .map(|(), _act, ctx| ctx.stop()),
        ))
    }
}

/// Live actors per kind.
#[derive(Debug, Message)]
#[rtype(result = "Vec<(ActorKind, i64)>")]
pub(crate) struct ActorCountsQuery;

impl Handler<ActorCountsQuery> for Supervisor {
    type Result = actix::MessageResult<ActorCountsQuery>;

    fn handle(&mut self, _msg: ActorCountsQuery, _ctx: &mut Self::Context) -> Self::Result {
        self.counts.handled(ActorKind::Supervisor);
        actix::MessageResult(self.counts.snapshot())
    }
}
