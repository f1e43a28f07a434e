//! When idle sessions end: one table of deadlines for every session of the process, swept by
//! one timer (the supervisor's), instead of a timer per session.
//!
//! A session files its next check — the moment it would have been idle for its idle time, or
//! its next keep-alive or record refresh when it has an open stream or a shared record — in a
//! slot of [`SLOT_MS`]. The sweep takes the slots that are due and tells each session named in
//! them to check itself; a session then ends, or files its next check. A request only marks its
//! session's last activity (one atomic store); the check finds it. So an idle session costs
//! nothing until its deadline, and a sweep costs what is due, not what exists.

use std::collections::BTreeMap;
use std::sync::Mutex;

use super::id::SessionId;

/// The width of a slot: sessions are checked at most this long after their deadline.
pub(crate) const SLOT_MS: u64 = 50;

/// Sessions to check, by slot (`deadline / SLOT_MS`, rounded up).
#[derive(Debug, Default)]
pub(crate) struct Deadlines {
    slots: Mutex<BTreeMap<u64, Vec<SessionId>>>,
}

impl Deadlines {
    /// Files a check of `id` at `due_ms` (the sessions' clock); answers its slot.
    pub(crate) fn file(&self, id: &SessionId, due_ms: u64) -> u64 {
        let slot = due_ms.div_ceil(SLOT_MS);
        let mut slots = self.slots.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        slots.entry(slot).or_default().push(id.clone());
        slot
    }

    /// Takes every check due at `now_ms`: the slots that have begun, with the sessions filed in
    /// them.
    pub(crate) fn due(&self, now_ms: u64) -> Vec<(u64, Vec<SessionId>)> {
        let mut slots = self.slots.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if slots.first_key_value().is_none_or(|(slot, _)| *slot * SLOT_MS > now_ms) {
            return Vec::new();
        }
        let later = slots.split_off(&(now_ms / SLOT_MS + 1));
        std::mem::replace(&mut *slots, later).into_iter().collect()
    }

    /// How many checks are filed.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.slots.lock().map(|s| s.values().map(Vec::len).sum()).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u8) -> SessionId {
        SessionId::adopted(&format!("s{n}"))
    }

    #[test]
    fn a_check_is_due_once_its_slot_has_begun_and_only_once() {
        let table = Deadlines::default();
        let slot = table.file(&id(1), 1_020);
        assert_eq!(slot, 21, "rounded up: never before its deadline");
        table.file(&id(2), 1_000);
        table.file(&id(3), 5_000);
        assert!(table.due(999).is_empty());
        let due = table.due(1_000);
        assert_eq!(due, vec![(20, vec![id(2)])]);
        assert!(table.due(1_049).is_empty(), "slot 21 begins at 1,050");
        assert_eq!(table.due(1_060), vec![(21, vec![id(1)])]);
        assert_eq!(table.len(), 1);
        assert!(table.due(4_999).is_empty());
        assert_eq!(table.due(60_000), vec![(100, vec![id(3)])]);
        assert!(table.due(u64::MAX / 2).is_empty(), "taken once");
    }

    #[test]
    fn a_sweep_takes_every_slot_that_is_due_in_order() {
        let table = Deadlines::default();
        for n in 0..100u8 {
            table.file(&id(n), 100 * u64::from(n));
        }
        let due = table.due(2_500);
        let slots: Vec<u64> = due.iter().map(|(slot, _)| *slot).collect();
        assert_eq!(slots, (0..=25).map(|n| n * 2).collect::<Vec<_>>());
        assert_eq!(table.len(), 74);
    }
}
