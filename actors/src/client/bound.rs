//! Satellite calls bound to their thread, awaited through a `Send` handle.
//!
//! A satellite's call future holds the thread's link (`Rc`, awc): it is not `Send`, while a
//! catalog handler's future must be. The call's future waits in a table of this thread, and the
//! caller's future holds only its number there ([`ThreadBound`]): polling the handle polls the
//! call, whose wakes reach the caller's own task — no task per call, and the answer itself wakes
//! the caller, not a task's end — and dropping the handle drops the call (which closes its
//! stream).
//!
//! The call is polled only when something it waits for woke it: the caller's task also wakes
//! for its own reasons (an HTTP handler's task, for the end of its request body), and each such
//! poll of the call's whole chain of futures would find nothing to do.
//!
//! A handle that moves to another thread (an mcpd task made of the gateway's call runs on the task
//! runner's thread) hands its call to the call's own thread: the call goes on there as a task of
//! its own, whose outcome comes back through a channel, and dropping the handle stops it. A
//! handle made on a thread without an actix arbiter answers [`ClientError::Closed`] there.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use futures_util::task::{waker_ref, ArcWake, AtomicWaker};
use tokio::sync::oneshot;

use super::error::ClientError;
use super::tool_call::Passed;

/// A call's outcome.
type Outcome = Result<Passed, ClientError>;

/// A call waiting in its thread's table.
type Call = Pin<Box<dyn Future<Output = Outcome>>>;

/// Numbers threads' tables, so that a handle is never read on another thread.
static NEXT_TABLE: AtomicU64 = AtomicU64::new(1);

/// This thread's calls.
struct Table {
    /// This table's number.
    serial: u64,
    /// The calls by number.
    slots: Vec<Slot>,
    /// Numbers free for the next call.
    free: Vec<usize>,
}

thread_local! {
    static TABLE: RefCell<Table> = RefCell::new(Table {
        serial: NEXT_TABLE.fetch_add(1, Ordering::Relaxed),
        slots: Vec::new(),
        free: Vec::new(),
    });
}

/// Takes call `key` out of this thread's table when it is table `table` (to poll or drop it
/// without the table borrowed).
fn take(table: u64, key: usize) -> Option<Call> {
    TABLE
        .try_with(|cell| {
            let mut calls = cell.try_borrow_mut().ok()?;
            if calls.serial != table {
                return None;
            }
            calls.slots.get_mut(key)?.call.take()
        })
        .ok()
        .flatten()
}

/// Frees number `key` of this thread's table when it is table `table` (its call taken out).
fn release(table: u64, key: usize) {
    let _ = TABLE.try_with(|cell| {
        if let Ok(mut calls) = cell.try_borrow_mut() {
            if calls.serial == table {
                calls.free.push(key);
            }
        }
    });
}

/// Whether this thread's table is table `table`.
fn is_here(table: u64) -> bool {
    TABLE.try_with(|cell| cell.try_borrow().is_ok_and(|calls| calls.serial == table)).unwrap_or(false)
}

/// One number of a thread's table.
struct Slot {
    /// Its call; `None` while the number is free, or while its call is being polled.
    call: Option<Call>,
    /// The waker its calls are polled with, kept for the number's next call (no allocation a
    /// call).
    wake: Arc<CallWake>,
}

/// The waker a bound call is polled with: notes that the call was woken, and wakes the task
/// that awaits its handle.
#[derive(Debug)]
struct CallWake {
    /// Woken since it was last polled (true before the first poll).
    woken: AtomicBool,
    /// The waker of the handle's last poll.
    handle: AtomicWaker,
}

impl ArcWake for CallWake {
    fn wake_by_ref(this: &Arc<Self>) {
        this.woken.store(true, Ordering::Release);
        this.handle.wake();
    }
}

/// A call of this thread, awaited (and cancelled by dropping) from a `Send` future.
#[derive(Debug)]
pub(super) struct ThreadBound {
    /// The number of the call's table.
    table: u64,
    /// The call's number in it.
    key: usize,
    /// The call answered, or went to a task of its own (its number is not this handle's any more).
    done: bool,
    /// The arbiter of the call's thread, if it has one.
    home: Option<actix_rt::ArbiterHandle>,
    /// The handle moved to another thread: the outcome of the call's task, and what stops that
    /// task when dropped.
    moved: Option<(oneshot::Receiver<Outcome>, oneshot::Sender<()>)>,
    /// What the call is polled with on this thread.
    wake: Arc<CallWake>,
}

impl ThreadBound {
    /// Puts `call` in this thread's table.
    pub(super) fn new(call: impl Future<Output = Outcome> + 'static) -> ThreadBound {
        let call: Call = Box::pin(call);
        let home = actix_rt::Arbiter::try_current();
        TABLE.with(|table| {
            let mut table = table.borrow_mut();
            let key = match table.free.pop() {
                Some(key) => {
                    table.slots[key].call = Some(call);
                    key
                }
                None => {
                    let wake = Arc::new(CallWake { woken: AtomicBool::new(true), handle: AtomicWaker::new() });
                    table.slots.push(Slot { call: Some(call), wake });
                    table.slots.len() - 1
                }
            };
            // The number's previous call is gone, and its handle done: nothing else polls with it.
            let wake = table.slots[key].wake.clone();
            wake.woken.store(true, Ordering::Release);
            ThreadBound { table: table.serial, key, done: false, home, moved: None, wake }
        })
    }

    /// Hands the call to its own thread, as a task of its own there (the handle moved).
    fn send_home(&mut self) {
        let (answer, outcome) = oneshot::channel();
        let (stop, stopped) = oneshot::channel::<()>();
        let (table, key) = (self.table, self.key);
        self.done = true;
        self.moved = Some((outcome, stop));
        let Some(home) = &self.home else { return };
        // Not sent (the arbiter stopped): the outcome's channel closes, and the call is Closed.
        home.spawn_fn(move || {
            actix_rt::spawn(async move {
                let Some(call) = take(table, key) else { return };
                tokio::select! {
                    outcome = call => {
                        let _ = answer.send(outcome);
                    }
                    _ = stopped => {}
                }
                release(table, key);
            });
        });
    }
}

impl Future for ThreadBound {
    type Output = Outcome;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Outcome> {
        let this = self.get_mut();
        if !this.done && !is_here(this.table) {
            this.send_home();
        }
        if let Some((outcome, _)) = &mut this.moved {
            return Pin::new(outcome).poll(cx).map(|outcome| outcome.unwrap_or(Err(ClientError::Closed)));
        }
        if this.done {
            return Poll::Ready(Err(ClientError::Closed));
        }
        this.wake.handle.register(cx.waker());
        if !this.wake.woken.swap(false, Ordering::AcqRel) {
            // The handle's task woke for something else: the call has nothing new.
            return Poll::Pending;
        }
        // Out of the table while it runs: the call may start calls of its own.
        let Some(mut call) = take(this.table, this.key) else {
            this.done = true;
            return Poll::Ready(Err(ClientError::Closed));
        };
        let waker = waker_ref(&this.wake);
        match call.as_mut().poll(&mut Context::from_waker(&waker)) {
            Poll::Ready(outcome) => {
                drop(call);
                this.done = true;
                release(this.table, this.key);
                Poll::Ready(outcome)
            }
            Poll::Pending => {
                let back = TABLE.with(|table| {
                    let mut table = table.borrow_mut();
                    match table.slots.get_mut(this.key) {
                        Some(slot) => {
                            slot.call = Some(call);
                            None
                        }
                        None => Some(call),
                    }
                });
                // The table lost the number (it cannot): the call ends here.
                if back.is_some() {
                    this.done = true;
                    return Poll::Ready(Err(ClientError::Closed));
                }
                Poll::Pending
            }
        }
    }
}

impl Drop for ThreadBound {
    fn drop(&mut self) {
        if self.done {
            // Answered, or a task of its own (which stops when `moved` goes).
            return;
        }
        let (table, key) = (self.table, self.key);
        if is_here(table) {
            // Dropped after the table's borrow ends: the call's drop may reach the table.
            let call = take(table, key);
            release(table, key);
            drop(call);
        } else if let Some(home) = &self.home {
            home.spawn_fn(move || {
                let call = take(table, key);
                release(table, key);
                drop(call);
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::rc::Rc;

    use super::*;
    use crate::client::CallResult;

    fn result(text: &str) -> Passed {
        Passed::Raw(CallResult {
            server_name: "s".into(),
            tool_name: "t".into(),
            content: Vec::new(),
            structured_content: None,
            is_error: false,
            raw: serde_json::json!({"text": text}),
        })
    }

    fn text(passed: Passed) -> String {
        passed.into_call_result("t").raw["text"].as_str().unwrap_or_default().to_owned()
    }

    /// Counts its drops.
    struct Dropped(Rc<Cell<usize>>);

    impl Drop for Dropped {
        fn drop(&mut self) {
            self.0.set(self.0.get() + 1);
        }
    }

    #[actix_rt::test]
    async fn a_bound_call_answers_through_its_handle_and_its_number_is_reused() {
        let (tx, rx) = tokio::sync::oneshot::channel::<&'static str>();
        let first = ThreadBound::new(async move { Ok(result(rx.await.unwrap_or("dropped"))) });
        let key = first.key;
        let waiting = actix_rt::spawn(first);
        actix_rt::task::yield_now().await;
        tx.send("one").unwrap();
        assert_eq!(text(waiting.await.unwrap().unwrap()), "one");
        let second = ThreadBound::new(async { Ok(result("two")) });
        assert_eq!(second.key, key, "the first call's number is free again");
        assert_eq!(text(second.await.unwrap()), "two");
    }

    #[actix_rt::test]
    async fn the_call_is_polled_only_when_it_was_woken() {
        let polls = Rc::new(Cell::new(0));
        let (tx, rx) = tokio::sync::oneshot::channel::<&'static str>();
        let mut rx = Some(rx);
        let counted = polls.clone();
        let mut call = ThreadBound::new(std::future::poll_fn(move |cx| {
            counted.set(counted.get() + 1);
            match Pin::new(rx.as_mut().expect("polled after its answer")).poll(cx) {
                Poll::Ready(answer) => Poll::Ready(Ok(result(answer.unwrap_or("dropped")))),
                Poll::Pending => Poll::Pending,
            }
        }));
        let mut cx = Context::from_waker(std::task::Waker::noop());
        assert!(Pin::new(&mut call).poll(&mut cx).is_pending());
        assert!(Pin::new(&mut call).poll(&mut cx).is_pending(), "a poll without a wake");
        assert_eq!(polls.get(), 1, "the call was not woken: not polled again");
        tx.send("woken").unwrap();
        match Pin::new(&mut call).poll(&mut cx) {
            Poll::Ready(Ok(passed)) => assert_eq!(text(passed), "woken"),
            other => panic!("not answered: {:?}", other.map(|o| o.map(text))),
        }
        assert_eq!(polls.get(), 2);
    }

    #[actix_rt::test]
    async fn dropping_the_handle_drops_the_call_at_once() {
        let drops = Rc::new(Cell::new(0));
        let guard = Dropped(drops.clone());
        let mut call = ThreadBound::new(async move {
            let _guard = guard;
            std::future::pending::<()>().await;
            Ok(result("never"))
        });
        assert!(Pin::new(&mut call).poll(&mut Context::from_waker(std::task::Waker::noop())).is_pending());
        assert_eq!(drops.get(), 0);
        drop(call);
        assert_eq!(drops.get(), 1, "the call went with its handle");
    }

    #[actix_rt::test]
    async fn a_handle_moved_to_another_thread_gets_its_answer_from_the_calls_thread() {
        let (tx, rx) = tokio::sync::oneshot::channel::<&'static str>();
        let call = ThreadBound::new(async move { Ok(result(rx.await.unwrap_or("dropped"))) });
        let other = actix_rt::Arbiter::new();
        let (answer_tx, answer_rx) = tokio::sync::oneshot::channel();
        other.spawn(async move {
            let _ = answer_tx.send(text(call.await.unwrap()));
        });
        actix_rt::time::sleep(std::time::Duration::from_millis(50)).await;
        tx.send("moved").unwrap();
        assert_eq!(answer_rx.await.unwrap(), "moved");

        // Moved, then dropped over there: the call goes on its own thread.
        let drops = Rc::new(Cell::new(0));
        let guard = Dropped(drops.clone());
        let call = ThreadBound::new(async move {
            let _guard = guard;
            std::future::pending::<()>().await;
            Ok(result("never"))
        });
        other.spawn(async move {
            let mut call = call;
            let polled = Pin::new(&mut call).poll(&mut Context::from_waker(std::task::Waker::noop()));
            assert!(polled.is_pending());
        });
        for _ in 0..100 {
            if drops.get() == 1 {
                break;
            }
            actix_rt::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        assert_eq!(drops.get(), 1, "the call went with its handle");
        other.stop();
    }

    #[test]
    fn a_handle_without_an_arbiter_polled_on_another_thread_answers_closed() {
        let call = ThreadBound::new(async { Ok(result("here")) });
        let elsewhere = std::thread::spawn(move || {
            let mut call = call;
            let polled = Pin::new(&mut call).poll(&mut Context::from_waker(std::task::Waker::noop()));
            matches!(polled, Poll::Ready(Err(ClientError::Closed)))
        });
        assert!(elsewhere.join().unwrap(), "a call is only polled on its own thread");
    }
}
