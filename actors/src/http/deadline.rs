//! Deadlines for request bodies without a timer per request.
//!
//! Every `POST` body is read under a deadline ([`super::body`]), and almost every one arrives
//! within microseconds. A tokio timer per body would register with and deregister from the
//! worker's timer wheel (a mutex) on every request; instead each worker thread keeps its waiting
//! bodies in a thread-local slab (an index, a deadline, a waker: no lock, no allocation once the
//! slab has grown), and one sweeper task per worker wakes the expired ones every [`TICK`]. A
//! deadline therefore fires up to one tick late, which is nothing next to seconds of timeout.
//!
//! HTTP handlers run on the worker thread that accepted their connection and never move, so a
//! [`Deadline`] (which is `!Send`) always finds its slot in the same thread's slab.

use std::cell::RefCell;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

/// How often a worker's sweeper looks for expired deadlines.
pub(crate) const TICK: Duration = Duration::from_millis(100);
/// Ticks without a waiting body after which a sweeper ends (the next body starts it again).
const IDLE_TICKS: u32 = 50;

/// One waiting body.
struct Entry {
    deadline: Instant,
    waker: Waker,
    expired: bool,
}

/// The waiting bodies of one worker thread.
#[derive(Default)]
struct Watch {
    entries: Vec<Option<Entry>>,
    free: Vec<usize>,
    /// Whether this thread's sweeper task runs.
    sweeping: bool,
}

thread_local! {
    static WATCH: RefCell<Watch> = RefCell::new(Watch::default());
}

impl Watch {
    fn insert(&mut self, entry: Entry) -> usize {
        match self.free.pop() {
            Some(slot) => {
                self.entries[slot] = Some(entry);
                slot
            }
            None => {
                self.entries.push(Some(entry));
                self.entries.len() - 1
            }
        }
    }

    fn remove(&mut self, slot: usize) {
        if let Some(entry) = self.entries.get_mut(slot) {
            if entry.take().is_some() {
                self.free.push(slot);
            }
        }
    }

    /// Marks and wakes the entries whose deadline has passed; whether any body waits.
    fn expire(&mut self, now: Instant) -> bool {
        let mut waiting = false;
        for entry in self.entries.iter_mut().flatten() {
            waiting = true;
            if !entry.expired && entry.deadline <= now {
                entry.expired = true;
                entry.waker.wake_by_ref();
            }
        }
        waiting
    }
}

/// Clears the thread's `sweeping` flag when its sweeper task ends (the worker stops).
struct Sweeping;

impl Drop for Sweeping {
    fn drop(&mut self) {
        let _ = WATCH.try_with(|watch| watch.borrow_mut().sweeping = false);
    }
}

/// Starts this thread's sweeper unless it runs.
fn ensure_sweeper(watch: &mut Watch) {
    if watch.sweeping {
        return;
    }
    watch.sweeping = true;
    actix_rt::spawn(async {
        let _sweeping = Sweeping;
        let mut idle = 0;
        while idle < IDLE_TICKS {
            actix_rt::time::sleep(TICK).await;
            let waiting = WATCH.with(|watch| watch.borrow_mut().expire(Instant::now()));
            idle = if waiting { 0 } else { idle + 1 };
        }
    });
}

/// The deadline passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Elapsed;

/// `inner`, unless it is still pending `within` after its first pending poll.
pub(crate) fn within<F: Future>(within: Duration, inner: F) -> Deadline<F> {
    Deadline { inner, within, slot: None, _thread: PhantomData }
}

/// A future with a deadline, registered with its worker's sweeper only once it waits.
pub(crate) struct Deadline<F> {
    inner: F,
    within: Duration,
    slot: Option<usize>,
    /// The slot is in this thread's slab.
    _thread: PhantomData<Rc<()>>,
}

impl<F> Deadline<F> {
    fn release(&mut self) {
        if let Some(slot) = self.slot.take() {
            let _ = WATCH.try_with(|watch| watch.borrow_mut().remove(slot));
        }
    }
}

impl<F> Drop for Deadline<F> {
    fn drop(&mut self) {
        self.release();
    }
}

impl<F: Future + Unpin> Future for Deadline<F> {
    type Output = Result<F::Output, Elapsed>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        if let Poll::Ready(output) = Pin::new(&mut this.inner).poll(cx) {
            this.release();
            return Poll::Ready(Ok(output));
        }
        let expired = WATCH.with(|watch| {
            let mut watch = watch.borrow_mut();
            match this.slot.and_then(|slot| watch.entries.get_mut(slot)?.as_mut()) {
                Some(entry) => {
                    if !entry.waker.will_wake(cx.waker()) {
                        entry.waker = cx.waker().clone();
                    }
                    entry.expired
                }
                None => {
                    let deadline = Instant::now() + this.within;
                    let entry = Entry { deadline, waker: cx.waker().clone(), expired: false };
                    this.slot = Some(watch.insert(entry));
                    ensure_sweeper(&mut watch);
                    false
                }
            }
        });
        if expired {
            this.release();
            return Poll::Ready(Err(Elapsed));
        }
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[actix_rt::test]
    async fn a_future_that_finishes_in_time_is_not_held() {
        let quick = within(Duration::from_secs(5), Box::pin(actix_rt::time::sleep(Duration::from_millis(10))));
        assert_eq!(quick.await, Ok(()));
        WATCH.with(|watch| assert!(watch.borrow().entries.iter().all(Option::is_none), "the slot is freed"));
    }

    #[actix_rt::test]
    async fn a_future_still_pending_at_its_deadline_fails() {
        let started = Instant::now();
        let stalled = within(Duration::from_millis(200), std::future::pending::<()>());
        assert_eq!(stalled.await, Err(Elapsed));
        let waited = started.elapsed();
        assert!(waited >= Duration::from_millis(200) && waited < Duration::from_millis(200) + 3 * TICK, "{waited:?}");
        WATCH.with(|watch| assert!(watch.borrow().entries.iter().all(Option::is_none), "the slot is freed"));
    }

    #[actix_rt::test]
    async fn dropping_a_waiting_future_frees_its_slot() {
        let waiting = within(Duration::from_secs(60), std::future::pending::<()>());
        assert!(actix_rt::time::timeout(Duration::from_millis(10), waiting).await.is_err());
        WATCH.with(|watch| {
            let watch = watch.borrow();
            assert!(watch.entries.iter().all(Option::is_none));
            assert_eq!(watch.free.len(), watch.entries.len(), "every slot can be reused");
        });
    }
}
