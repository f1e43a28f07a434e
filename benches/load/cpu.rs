//! CPU time from `/proc`: the process's, each thread's and the load generator's, and the server
//! CPU per request by thread name.

/// Kernel clock ticks per second for `/proc/*/stat` (USER_HZ, 100 on Linux).
pub(crate) const CLK_TCK: f64 = 100.0;

/// The calling thread's kernel id.
pub(crate) fn current_tid() -> Option<u32> {
    std::fs::read_link("/proc/thread-self").ok()?.file_name()?.to_str()?.parse().ok()
}

/// utime + stime, in clock ticks, of a `/proc/.../stat` file.
fn cpu_ticks(path: &str) -> Option<u64> {
    let stat = std::fs::read_to_string(path).ok()?;
    let fields: Vec<&str> = stat.get(stat.rfind(')')? + 1..)?.split_whitespace().collect();
    // After the command: field 3 (state) is index 0, so utime (14) and stime (15) are 11 and 12.
    Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct CpuSnapshot {
    pub(crate) process: u64,
    pub(crate) clients: u64,
    pub(crate) main: u64,
}

pub(crate) fn snapshot(client_tids: &[u32], main_tid: u32) -> Option<CpuSnapshot> {
    let mut clients = 0;
    for tid in client_tids {
        clients += cpu_ticks(&format!("/proc/self/task/{tid}/stat"))?;
    }
    Some(CpuSnapshot {
        process: cpu_ticks("/proc/self/stat")?,
        clients,
        main: cpu_ticks(&format!("/proc/self/task/{main_tid}/stat"))?,
    })
}

/// Every thread of the process: (tid, name, utime + stime ticks).
pub(crate) fn thread_ticks() -> Vec<(u32, String, u64)> {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else { return Vec::new() };
    let mut threads = Vec::new();
    for task in tasks.flatten() {
        let Some(tid) = task.file_name().to_str().and_then(|t| t.parse::<u32>().ok()) else { continue };
        let path = format!("/proc/self/task/{tid}/stat");
        let Ok(stat) = std::fs::read_to_string(&path) else { continue };
        let name = match (stat.find('('), stat.rfind(')')) {
            (Some(open), Some(close)) if open < close => stat[open + 1..close].to_owned(),
            _ => String::new(),
        };
        if let Some(ticks) = cpu_ticks(&path) {
            threads.push((tid, name, ticks));
        }
    }
    threads
}

/// CPU µs per request of each server thread name that ran during the window, busiest first.
pub(crate) fn server_threads(
    before: &[(u32, String, u64)],
    after: &[(u32, String, u64)],
    exclude: &[u32],
    labels: &[(u32, String)],
    requests: u64,
) -> Vec<(String, f64)> {
    if requests == 0 {
        return Vec::new();
    }
    let mut by_name: Vec<(String, u64)> = Vec::new();
    for (tid, name, ticks) in after.iter().filter(|(tid, _, _)| !exclude.contains(tid)) {
        let start = before.iter().find(|(t, _, _)| t == tid).map_or(0, |(_, _, ticks)| *ticks);
        let delta = ticks.saturating_sub(start);
        if delta == 0 {
            continue;
        }
        let name = labels.iter().find(|(t, _)| t == tid).map_or(name, |(_, label)| label);
        match by_name.iter_mut().find(|(n, _)| n == name) {
            Some(entry) => entry.1 += delta,
            None => by_name.push((name.clone(), delta)),
        }
    }
    by_name.sort_by_key(|(_, ticks)| std::cmp::Reverse(*ticks));
    by_name.into_iter().map(|(name, ticks)| (name, ticks as f64 * 1e6 / CLK_TCK / requests.max(1) as f64)).collect()
}
