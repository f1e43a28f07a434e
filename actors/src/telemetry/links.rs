//! Spans found together by what a later request names: the rounds of a multi round-trip call
//! (each retried request is its own SERVER span, linked to the round whose `requestState` it
//! carries back) and a task's polls (`tasks/get`, `tasks/update`, `tasks/cancel`, linked to the
//! span of the task's life). The last [`KEPT`] of each are remembered, by a hash of the state or
//! the task id (never a state itself), with their spans' contexts; an older one is simply not
//! linked.

use std::collections::{HashMap, VecDeque};
use std::hash::{Hash, Hasher};
use std::sync::{Mutex, OnceLock, PoisonError};

use opentelemetry::trace::SpanContext;

use super::span::OperationSpan;

/// How many of each are remembered.
const KEPT: usize = 4096;

/// Span contexts by the hash of what names them, the oldest forgotten first.
#[derive(Default)]
struct Registry {
    spans: HashMap<u64, SpanContext>,
    order: VecDeque<u64>,
}

fn key(name: &str) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    name.hash(&mut hasher);
    hasher.finish()
}

impl Registry {
    fn remember(&mut self, name: &str, context: SpanContext) {
        let key = key(name);
        if self.spans.insert(key, context).is_none() {
            self.order.push_back(key);
        }
        while self.order.len() > KEPT {
            if let Some(oldest) = self.order.pop_front() {
                self.spans.remove(&oldest);
            }
        }
    }
}

fn rounds() -> &'static Mutex<Registry> {
    static ROUNDS: OnceLock<Mutex<Registry>> = OnceLock::new();
    ROUNDS.get_or_init(Mutex::default)
}

fn tasks() -> &'static Mutex<Registry> {
    static TASKS: OnceLock<Mutex<Registry>> = OnceLock::new();
    TASKS.get_or_init(Mutex::default)
}

fn remember(registry: &Mutex<Registry>, name: &str, span: &OperationSpan) {
    if let Some(context) = span.span_context().filter(|_| span.is_recording()) {
        registry.lock().unwrap_or_else(PoisonError::into_inner).remember(name, context);
    }
}

fn link(registry: &Mutex<Registry>, name: &str, span: &OperationSpan) {
    if !span.is_recording() {
        return;
    }
    let earlier = registry.lock().unwrap_or_else(PoisonError::into_inner).spans.get(&key(name)).cloned();
    if let Some(earlier) = earlier {
        span.add_link(earlier);
    }
}

/// Remembers `span` as the round that answered with `state` (nothing without a state).
pub(crate) fn remember_round(state: Option<&str>, span: &OperationSpan) {
    if let Some(state) = state {
        remember(rounds(), state, span);
    }
}

/// Links `span` to the round that answered with `state`, when it is remembered.
pub(crate) fn link_round(state: &str, span: &OperationSpan) {
    link(rounds(), state, span);
}

/// Remembers `span` as the life of task `task_id`.
pub(crate) fn remember_task(task_id: &str, span: &OperationSpan) {
    remember(tasks(), task_id, span);
}

/// Links the current span (a poll of the task) to task `task_id`'s.
pub(crate) fn link_task(task_id: &str) {
    if !super::enabled() {
        return;
    }
    link(tasks(), task_id, &OperationSpan::current());
}
