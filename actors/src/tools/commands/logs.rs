//! The kept output of recent commands, in memory, under random ids; paged by byte offsets
//! that never split a UTF-8 character.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use super::exec::is_continuation;

/// One command's kept output.
#[derive(Debug)]
pub(super) struct CommandLog {
    /// What ran, for display.
    pub(super) command: String,
    /// The first bytes of its output (up to the per-log cap).
    pub(super) data: Vec<u8>,
    /// How many bytes it wrote in all (more than `data` when the cap cut it).
    pub(super) total: u64,
}

/// At most `max_logs` logs; the oldest is evicted first.
#[derive(Debug)]
pub(super) struct LogStore {
    max_logs: usize,
    logs: Mutex<VecDeque<(String, Arc<CommandLog>)>>,
}

impl LogStore {
    pub(super) fn new(max_logs: usize) -> Self {
        LogStore { max_logs: max_logs.max(1), logs: Mutex::new(VecDeque::new()) }
    }

    /// Keeps a log; returns its new id.
    pub(super) fn insert(&self, log: CommandLog) -> String {
        let id = random_id();
        let mut logs = self.logs.lock().unwrap_or_else(PoisonError::into_inner);
        logs.push_back((id.clone(), Arc::new(log)));
        while logs.len() > self.max_logs {
            logs.pop_front();
        }
        id
    }

    /// The log with this id, while it is kept.
    pub(super) fn get(&self, id: &str) -> Option<Arc<CommandLog>> {
        let logs = self.logs.lock().unwrap_or_else(PoisonError::into_inner);
        logs.iter().find(|(i, _)| i == id).map(|(_, log)| log.clone())
    }

    /// How many logs are kept at most.
    pub(super) fn capacity(&self) -> usize {
        self.max_logs
    }
}

fn random_id() -> String {
    let mut bytes = [0u8; 12];
    if getrandom::fill(&mut bytes).is_err() {
        // No entropy source: fall back to time and a counter (ids must only be unique).
        static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        bytes[..4].copy_from_slice(&n.to_le_bytes()[..4]);
        bytes[4..].copy_from_slice(&t.to_le_bytes()[..8]);
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn is_boundary(data: &[u8], at: usize) -> bool {
    at == 0 || at >= data.len() || !is_continuation(data[at])
}

/// The byte range of one page: `offset` moved back to the start of the character it falls in,
/// the end moved back so it does not split a character (forward when the page would be empty).
/// Invalid UTF-8 is cut anywhere after at most 3 steps.
pub(super) fn page_bounds(data: &[u8], offset: usize, limit: usize) -> (usize, usize) {
    let mut start = offset.min(data.len());
    for _ in 0..3 {
        if is_boundary(data, start) {
            break;
        }
        start -= 1;
    }
    let wanted = start.saturating_add(limit.max(1)).min(data.len());
    let mut end = wanted;
    for _ in 0..3 {
        if is_boundary(data, end) || end <= start + 1 {
            break;
        }
        end -= 1;
    }
    if !is_boundary(data, end) {
        // The page is smaller than one character: take the whole character.
        end = wanted;
        for _ in 0..3 {
            if is_boundary(data, end) {
                break;
            }
            end += 1;
        }
    }
    (start, end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_never_split_characters_and_reassemble() {
        let text = "aé€😀b".repeat(50);
        let data = text.as_bytes();
        for limit in 1..12 {
            let mut offset = 0;
            let mut out = String::new();
            while offset < data.len() {
                let (start, end) = page_bounds(data, offset, limit);
                assert_eq!(start, offset);
                assert!(end > start);
                out.push_str(std::str::from_utf8(&data[start..end]).expect("whole characters"));
                offset = end;
            }
            assert_eq!(out, text, "limit {limit}");
        }
        // An offset inside a character starts at that character.
        assert_eq!(page_bounds("é".as_bytes(), 1, 10), (0, 2));
        assert_eq!(page_bounds(b"abc", 10, 10), (3, 3));
    }

    #[test]
    fn the_oldest_log_is_evicted() {
        let store = LogStore::new(2);
        let ids: Vec<String> =
            (0..3).map(|i| store.insert(CommandLog { command: format!("c{i}"), data: vec![], total: 0 })).collect();
        assert!(store.get(&ids[0]).is_none());
        assert_eq!(store.get(&ids[2]).unwrap().command, "c2");
        assert_ne!(ids[1], ids[2]);
    }
}
