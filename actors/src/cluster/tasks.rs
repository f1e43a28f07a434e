//! Tasks in Redis (cluster mode): a [`TaskStore`] every instance shares, so a task created on
//! one instance is read, answered and cancelled through any other.
//!
//! **Keys.** A task is the hash `mcpd:task:<id>` (`rec`: the task as `tasks/get` shows it, JSON;
//! `owner`; `instance`: the id of the instance running it; `status`; `v`: a version) expiring
//! with the task's time to live. The caps are two sorted sets scored by expiry time,
//! `mcpd:tasks` and `mcpd:tasks:owner:<owner>` (expired members are dropped before a creation
//! counts them); `mcpd:instance:<id>:tasks` lists the tasks an instance runs.
//!
//! **Changes** are read-modify-write: the new record is computed here (the core's
//! [`apply_update`] and [`accept_answers`], as the memory store does) and written by a Lua script
//! only when the version is still the one read and the status is not terminal, else read again.
//! A terminal state therefore never changes, and no concurrent change is lost.
//!
//! **The running future stays on its instance.** A `tasks/cancel` or `tasks/update` on another
//! instance changes the record (answers are also queued in the list `mcpd:task:<id>:relay`); the
//! running instance polls the records of the tasks it runs on every sweep of its task runner
//! (500 ms, one script call, only while it runs tasks), aborts those that ended elsewhere or
//! expired and hands relayed answers to their tasks. Polling rather than pub/sub: nothing is lost when the
//! connection drops and comes back, no second connection, and the cost is bounded by what runs.
//!
//! **Instance death.** Every instance refreshes `mcpd:instance:<id>` (expiring after
//! [`HEARTBEAT_TTL`]) every [`HEARTBEAT`] and registers in the set `mcpd:instances`; at the same
//! pace each sweeps the others: an instance whose heartbeat is gone has its unfinished tasks
//! marked `failed` ("the instance running this task stopped") and is forgotten.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use mcpd::catalog::BoxFuture;
use mcpd::tasks::{
    accept_answers, apply_update, new_working_task, now_millis, Answered, DetailedTask, RemoteChanges, StoreLimits,
    Task, TaskCounts, TaskCreateError, TaskLookupError, TaskStatus, TaskStore, TaskUpdate,
};
use redis::aio::ConnectionManager;
use serde_json::{json, Map, Value};

/// How often an instance refreshes its heartbeat and sweeps dead instances.
pub const HEARTBEAT: Duration = Duration::from_secs(3);
/// How long an instance is alive without refreshing its heartbeat.
pub const HEARTBEAT_TTL: Duration = Duration::from_secs(10);
/// The status message of a task whose instance died.
pub const INSTANCE_STOPPED: &str = "the instance running this task stopped";
/// Read-modify-write attempts before a change gives up (each lost only to a concurrent change).
const CAS_TRIES: usize = 16;
/// How long relayed answers of a task without a time to live are kept for their instance.
const RELAY_TTL_MS: u64 = 3_600_000;

const INSTANCES: &str = "mcpd:instances";
const ALL: &str = "mcpd:tasks";
const CREATED: &str = "mcpd:tasks:created";
const EXPIRED: &str = "mcpd:tasks:expired";

fn task_key(id: &str) -> String {
    format!("mcpd:task:{id}")
}
fn relay_key(id: &str) -> String {
    format!("mcpd:task:{id}:relay")
}
fn owner_key(owner: &str) -> String {
    format!("mcpd:tasks:owner:{owner}")
}
pub(super) fn heartbeat_key(instance: &str) -> String {
    format!("mcpd:instance:{instance}")
}
fn instance_tasks_key(instance: &str) -> String {
    format!("mcpd:instance:{instance}:tasks")
}

/// KEYS: task, all, owner, instance tasks, created, expired.
/// ARGV: now, max tasks, max per owner, id, rec, owner, instance, ttl ms (0: none), expiry score.
/// Returns 0 (created), 1 (server full), 2 (owner full).
const CREATE: &str = r"
local now = tonumber(ARGV[1])
local gone = redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
if gone > 0 then redis.call('INCRBY', KEYS[6], gone) end
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[2]) then return 1 end
if redis.call('ZCARD', KEYS[3]) >= tonumber(ARGV[3]) then return 2 end
redis.call('HSET', KEYS[1], 'rec', ARGV[5], 'owner', ARGV[6], 'instance', ARGV[7], 'status', 'working', 'v', '0')
local ttl = tonumber(ARGV[8])
if ttl > 0 then redis.call('PEXPIRE', KEYS[1], ttl) end
redis.call('ZADD', KEYS[2], ARGV[9], ARGV[4])
redis.call('ZADD', KEYS[3], ARGV[9], ARGV[4])
redis.call('SADD', KEYS[4], ARGV[4])
redis.call('INCR', KEYS[5])
return 0
";

/// KEYS: task, its instance's tasks, relay. ARGV: version read, rec, status, terminal (1/0), id,
/// relayed answers (JSON, empty: none), relay ttl ms for a task without one.
/// Returns 1 (written), 0 (changed since read), -1 (gone), -2 (already ended).
const CHANGE: &str = r"
local cur = redis.call('HMGET', KEYS[1], 'v', 'status')
if not cur[1] then return -1 end
if cur[1] ~= ARGV[1] then return 0 end
if cur[2] == 'completed' or cur[2] == 'failed' or cur[2] == 'cancelled' then return -2 end
redis.call('HSET', KEYS[1], 'rec', ARGV[2], 'status', ARGV[3], 'v', tostring(tonumber(ARGV[1]) + 1))
if ARGV[4] == '1' then redis.call('SREM', KEYS[2], ARGV[5]) end
if ARGV[6] ~= '' then
  redis.call('RPUSH', KEYS[3], ARGV[6])
  local ttl = redis.call('PTTL', KEYS[1])
  if ttl <= 0 then ttl = tonumber(ARGV[7]) end
  redis.call('PEXPIRE', KEYS[3], ttl)
end
return 1
";

/// KEYS: task, relay, task, relay, … Returns per task {status ('' when gone), {relayed…}},
/// taking the relayed answers.
const POLL: &str = r"
local out = {}
for i = 1, #KEYS, 2 do
  local status = redis.call('HGET', KEYS[i], 'status')
  local relay = redis.call('LRANGE', KEYS[i + 1], 0, -1)
  if #relay > 0 then redis.call('DEL', KEYS[i + 1]) end
  out[#out + 1] = {status or '', relay}
end
return out
";

/// One task as read from Redis.
struct Record {
    task: DetailedTask,
    owner: String,
    instance: String,
    version: String,
}

/// What a change does to a record read.
enum Edit<T> {
    /// Nothing to write; the answer.
    Keep(T),
    /// Write the edited task (with answers to relay to its instance); the answer.
    Write(T, Option<Map<String, Value>>),
}

/// The Redis task store of one instance (cheap to clone: one store shared).
#[derive(Debug, Clone)]
pub struct RedisTaskStore(Arc<Store>);

struct Store {
    connection: ConnectionManager,
    limits: StoreLimits,
    instance: String,
    /// The tasks created here (so run here) that have not ended as far as this instance knows.
    local: Mutex<HashSet<String>>,
    /// The counts as of the last [`RedisTaskStore::refresh_counts`].
    counts: Mutex<TaskCounts>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisTaskStore").field("instance", &self.instance).finish_non_exhaustive()
    }
}

fn store_error(error: &redis::RedisError) -> String {
    format!("Redis: {error}")
}

impl RedisTaskStore {
    /// The store of instance `instance` over `connection`.
    pub fn new(connection: ConnectionManager, limits: StoreLimits, instance: String) -> Self {
        RedisTaskStore(Arc::new(Store {
            connection,
            limits,
            instance,
            local: Mutex::new(HashSet::new()),
            counts: Mutex::new(TaskCounts::default()),
        }))
    }

    /// This instance's id.
    pub fn instance(&self) -> &str {
        &self.0.instance
    }

    /// Refreshes this instance's heartbeat, then marks `failed` the unfinished tasks of every
    /// instance whose heartbeat is gone, and forgets those instances. Returns how many tasks it
    /// failed.
    ///
    /// # Errors
    /// Redis's.
    pub async fn heartbeat_and_sweep(&self) -> redis::RedisResult<usize> {
        self.0.heartbeat_and_sweep().await
    }

    /// Reads the cluster-wide counts (held tasks by status, created and expired since the store
    /// was first used) for [`TaskStore::counts`].
    ///
    /// # Errors
    /// Redis's.
    pub async fn refresh_counts(&self) -> redis::RedisResult<()> {
        self.0.refresh_counts().await
    }
}

impl Store {
    fn local(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.local.lock().unwrap_or_else(PoisonError::into_inner)
    }

    async fn create_task(
        &self,
        owner: String,
        ttl_ms: Option<u64>,
        poll: Option<u64>,
    ) -> Result<Task, TaskCreateError> {
        let now = now_millis();
        let detailed = new_working_task(now, ttl_ms, poll)?;
        let (task, task_id) = (detailed.task.clone(), detailed.task.task_id.clone());
        let rec = serde_json::to_string(&detailed).map_err(|e| TaskCreateError::Store(e.to_string()))?;
        let score = ttl_ms.map_or_else(|| "+inf".to_owned(), |ttl| now.saturating_add(ttl).to_string());
        let mut connection = self.connection.clone();
        let created: i64 = redis::cmd("EVAL")
            .arg(CREATE)
            .arg(6)
            .arg(task_key(&task_id))
            .arg(ALL)
            .arg(owner_key(&owner))
            .arg(instance_tasks_key(&self.instance))
            .arg(CREATED)
            .arg(EXPIRED)
            .arg(now)
            .arg(self.limits.max_tasks)
            .arg(self.limits.max_per_owner)
            .arg(&task_id)
            .arg(rec)
            .arg(&owner)
            .arg(&self.instance)
            .arg(ttl_ms.unwrap_or(0))
            .arg(score)
            .query_async(&mut connection)
            .await
            .map_err(|e| TaskCreateError::Store(store_error(&e)))?;
        match created {
            0 => {
                self.local().insert(task_id);
                Ok(task)
            }
            1 => Err(TaskCreateError::ServerFull { limit: self.limits.max_tasks }),
            _ => Err(TaskCreateError::OwnerFull { limit: self.limits.max_per_owner }),
        }
    }

    /// The task, or why not: gone with its place still held means expired.
    async fn read(&self, task_id: &str) -> Result<Record, TaskLookupError> {
        // Ids are 32 hex digits (`new_task_id`): anything else names no task, and never a key.
        if task_id.len() != 32 || !task_id.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(TaskLookupError::NotFound);
        }
        let mut connection = self.connection.clone();
        type Fields = (Option<String>, Option<String>, Option<String>, Option<String>);
        let (fields, score): (Fields, Option<f64>) = redis::pipe()
            .cmd("HMGET")
            .arg(task_key(task_id))
            .arg(&["rec", "owner", "instance", "v"])
            .cmd("ZSCORE")
            .arg(ALL)
            .arg(task_id)
            .query_async(&mut connection)
            .await
            .map_err(|e| TaskLookupError::Store(store_error(&e)))?;
        match fields {
            (Some(rec), Some(owner), Some(instance), Some(version)) => {
                let task = serde_json::from_str(&rec)
                    .map_err(|e| TaskLookupError::Store(format!("task {task_id} unreadable in Redis: {e}")))?;
                Ok(Record { task, owner, instance, version })
            }
            _ if score.is_some_and(|at| at <= now_millis() as f64) => Err(TaskLookupError::Expired),
            _ => Err(TaskLookupError::NotFound),
        }
    }

    /// Reads the task (`owner`'s, when given), edits it and writes it back unless it changed in
    /// between (then again).
    async fn change<T>(
        &self,
        task_id: &str,
        owner: Option<&str>,
        mut edit: impl FnMut(&mut DetailedTask, &Record, u64) -> Edit<T>,
    ) -> Result<T, TaskLookupError> {
        for _ in 0..CAS_TRIES {
            let record = self.read(task_id).await?;
            if owner.is_some_and(|owner| owner != record.owner) {
                return Err(TaskLookupError::NotFound);
            }
            let mut task = record.task.clone();
            let (answer, relay) = match edit(&mut task, &record, now_millis()) {
                Edit::Keep(answer) => return Ok(answer),
                Edit::Write(answer, relay) => (answer, relay),
            };
            let terminal = task.task.status.is_terminal();
            let rec = serde_json::to_string(&task).map_err(|e| TaskLookupError::Store(e.to_string()))?;
            let relay = relay.map(|r| Value::Object(r).to_string()).unwrap_or_default();
            let mut connection = self.connection.clone();
            let written: i64 = redis::cmd("EVAL")
                .arg(CHANGE)
                .arg(3)
                .arg(task_key(task_id))
                .arg(instance_tasks_key(&record.instance))
                .arg(relay_key(task_id))
                .arg(&record.version)
                .arg(rec)
                .arg(task.task.status.as_str())
                .arg(if terminal { "1" } else { "0" })
                .arg(task_id)
                .arg(relay)
                .arg(RELAY_TTL_MS)
                .query_async(&mut connection)
                .await
                .map_err(|e| TaskLookupError::Store(store_error(&e)))?;
            if written == 1 {
                if terminal {
                    self.local().remove(task_id);
                }
                return Ok(answer);
            }
        }
        Err(TaskLookupError::Store(format!("task {task_id} changed {CAS_TRIES} times while being changed")))
    }

    /// Applies `update` unless the task has ended: the new state, or `None`.
    async fn update_task(
        &self,
        task_id: &str,
        owner: Option<&str>,
        update: TaskUpdate,
    ) -> Result<Option<DetailedTask>, TaskLookupError> {
        self.change(task_id, owner, |task, _, now| {
            if task.task.status.is_terminal() {
                return Edit::Keep(None);
            }
            apply_update(task, update.clone(), now);
            Edit::Write(Some(task.clone()), None)
        })
        .await
    }

    async fn answer_task(
        &self,
        owner: &str,
        task_id: &str,
        responses: Map<String, Value>,
    ) -> Result<Answered, TaskLookupError> {
        let here = self.instance.clone();
        self.change(task_id, Some(owner), |task, record, now| {
            let answered = accept_answers(task, responses.clone(), now);
            if answered.accepted.is_empty() {
                return Edit::Keep(answered);
            }
            // The running instance gets them through the relay unless it is this one.
            let relay = (record.instance != here).then(|| answered.accepted.clone());
            Edit::Write(answered, relay)
        })
        .await
    }

    async fn poll(&self) -> RemoteChanges {
        let ids: Vec<String> = self.local().iter().cloned().collect();
        if ids.is_empty() {
            return RemoteChanges::default();
        }
        let mut eval = redis::cmd("EVAL");
        eval.arg(POLL).arg(ids.len() * 2);
        for id in &ids {
            eval.arg(task_key(id)).arg(relay_key(id));
        }
        let mut connection = self.connection.clone();
        let polled: Vec<(String, Vec<String>)> = match eval.query_async(&mut connection).await {
            Ok(polled) => polled,
            Err(e) => {
                log::debug!("cluster: polling the tasks running here: {e}");
                return RemoteChanges::default();
            }
        };
        let mut changes = RemoteChanges::default();
        let mut local = self.local();
        for (id, (status, relayed)) in ids.into_iter().zip(polled) {
            let mut answers = Map::new();
            for batch in relayed {
                if let Ok(Value::Object(batch)) = serde_json::from_str::<Value>(&batch) {
                    answers.extend(batch);
                }
            }
            if !answers.is_empty() {
                changes.answers.push((id.clone(), answers));
            }
            let ended = !matches!(status.as_str(), "working" | "input_required");
            if ended && local.remove(&id) {
                changes.stopped.push(id);
            }
        }
        changes
    }

    async fn heartbeat_and_sweep(&self) -> redis::RedisResult<usize> {
        let mut connection = self.connection.clone();
        let (_, _, instances): ((), (), Vec<String>) = redis::pipe()
            .cmd("SET")
            .arg(heartbeat_key(&self.instance))
            .arg(now_millis())
            .arg("PX")
            .arg(u64::try_from(HEARTBEAT_TTL.as_millis()).unwrap_or(u64::MAX))
            .cmd("SADD")
            .arg(INSTANCES)
            .arg(&self.instance)
            .cmd("SMEMBERS")
            .arg(INSTANCES)
            .query_async(&mut connection)
            .await?;
        let others: Vec<String> = instances.into_iter().filter(|i| *i != self.instance).collect();
        if others.is_empty() {
            return Ok(0);
        }
        let mut alive = redis::pipe();
        for other in &others {
            alive.cmd("EXISTS").arg(heartbeat_key(other));
        }
        let alive: Vec<bool> = alive.query_async(&mut connection).await?;
        let mut failed = 0;
        for (dead, _) in others.iter().zip(alive).filter(|(_, alive)| !alive) {
            let tasks: Vec<String> =
                redis::cmd("SMEMBERS").arg(instance_tasks_key(dead)).query_async(&mut connection).await?;
            for task_id in tasks {
                let error = json!({"code": -32603, "message": INSTANCE_STOPPED});
                let update = TaskUpdate::Failed { error, message: INSTANCE_STOPPED.to_owned() };
                match self.update_task(&task_id, None, update).await {
                    Ok(Some(_)) => failed += 1,
                    Ok(None) | Err(TaskLookupError::NotFound | TaskLookupError::Expired) => {}
                    Err(e) => log::warn!("cluster: task {task_id} of stopped instance {dead}: {e}"),
                }
            }
            log::info!("cluster: instance {dead} stopped (no heartbeat); its unfinished tasks are failed");
            redis::pipe()
                .cmd("DEL")
                .arg(instance_tasks_key(dead))
                .ignore()
                .cmd("SREM")
                .arg(INSTANCES)
                .arg(dead)
                .ignore()
                .query_async::<()>(&mut connection)
                .await?;
        }
        Ok(failed)
    }

    async fn refresh_counts(&self) -> redis::RedisResult<()> {
        let mut connection = self.connection.clone();
        let (ids, created, expired): (Vec<String>, Option<u64>, Option<u64>) = redis::pipe()
            .cmd("ZRANGEBYSCORE")
            .arg(ALL)
            .arg(format!("({}", now_millis()))
            .arg("+inf")
            .cmd("GET")
            .arg(CREATED)
            .cmd("GET")
            .arg(EXPIRED)
            .query_async(&mut connection)
            .await?;
        let mut statuses = redis::pipe();
        for id in &ids {
            statuses.cmd("HGET").arg(task_key(id)).arg("status");
        }
        let statuses: Vec<Option<String>> =
            if ids.is_empty() { Vec::new() } else { statuses.query_async(&mut connection).await? };
        let mut counts = TaskCounts { by_status: [0; 5], created: created.unwrap_or(0), expired: expired.unwrap_or(0) };
        for status in statuses.into_iter().flatten() {
            if let Some(i) = TaskStatus::ALL.iter().position(|s| s.as_str() == status) {
                counts.by_status[i] += 1;
            }
        }
        *self.counts.lock().unwrap_or_else(PoisonError::into_inner) = counts;
        Ok(())
    }
}

impl TaskStore for RedisTaskStore {
    fn create(
        &self,
        owner: &str,
        ttl_ms: Option<u64>,
        poll_interval_ms: Option<u64>,
    ) -> BoxFuture<Result<Task, TaskCreateError>> {
        let (store, owner) = (self.0.clone(), owner.to_owned());
        Box::pin(async move { store.create_task(owner, ttl_ms, poll_interval_ms).await })
    }

    fn get(&self, owner: &str, task_id: &str) -> BoxFuture<Result<DetailedTask, TaskLookupError>> {
        let (store, owner, task_id) = (self.0.clone(), owner.to_owned(), task_id.to_owned());
        Box::pin(async move {
            let record = store.read(&task_id).await?;
            if record.owner != owner {
                return Err(TaskLookupError::NotFound);
            }
            Ok(record.task)
        })
    }

    fn update(&self, task_id: &str, update: TaskUpdate) -> BoxFuture<Result<Option<DetailedTask>, TaskLookupError>> {
        let (store, task_id) = (self.0.clone(), task_id.to_owned());
        Box::pin(async move {
            let updated = store.update_task(&task_id, None, update).await;
            if !matches!(updated, Ok(Some(_))) {
                // Ended (elsewhere) or gone: this instance no longer runs it.
                store.local().remove(&task_id);
            }
            updated
        })
    }

    fn answer(
        &self,
        owner: &str,
        task_id: &str,
        responses: Map<String, Value>,
    ) -> BoxFuture<Result<Answered, TaskLookupError>> {
        let (store, owner, task_id) = (self.0.clone(), owner.to_owned(), task_id.to_owned());
        Box::pin(async move { store.answer_task(&owner, &task_id, responses).await })
    }

    fn cancel(&self, owner: &str, task_id: &str) -> BoxFuture<Result<Option<DetailedTask>, TaskLookupError>> {
        let (store, owner, task_id) = (self.0.clone(), owner.to_owned(), task_id.to_owned());
        Box::pin(async move {
            let update = TaskUpdate::Cancelled { message: Some("Cancelled by the client".into()) };
            store.update_task(&task_id, Some(&owner), update).await
        })
    }

    fn expire(&self) -> BoxFuture<Vec<String>> {
        // Redis expires the records itself; a running task's expiry reaches its instance as a
        // remote change (the record is gone).
        Box::pin(std::future::ready(Vec::new()))
    }

    fn counts(&self) -> BoxFuture<TaskCounts> {
        Box::pin(std::future::ready(*self.0.counts.lock().unwrap_or_else(PoisonError::into_inner)))
    }

    fn remote_changes(&self) -> BoxFuture<RemoteChanges> {
        let store = self.0.clone();
        Box::pin(async move { store.poll().await })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::tests::redis_server;

    fn store(connection: &ConnectionManager, instance: &str) -> RedisTaskStore {
        let limits = StoreLimits { max_tasks: 3, max_per_owner: 2 };
        RedisTaskStore::new(connection.clone(), limits, instance.to_owned())
    }

    /// Against a real `redis-server` (skipped without one): caps across instances, owners kept
    /// apart, a terminal state never changes (also when a completion and a cancel race), a
    /// cancel and answers on another instance reach the running one, expiry, and the sweep of a
    /// stopped instance.
    #[actix_rt::test]
    async fn instances_share_tasks_through_redis() {
        let Some((_redis, mut connection)) = redis_server() else { return };
        let mut up = false;
        for _ in 0..200 {
            if redis::cmd("PING").query_async::<String>(&mut connection).await.is_ok() {
                up = true;
                break;
            }
            actix_rt::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(up, "redis-server answered within 10 s");
        let (a, b) = (store(&connection, "a"), store(&connection, "b"));

        // Caps count every instance's tasks.
        let first = a.create("x", Some(60_000), None).await.unwrap();
        let second = b.create("x", Some(60_000), None).await.unwrap();
        assert_eq!(a.create("x", None, None).await, Err(TaskCreateError::OwnerFull { limit: 2 }));
        let third = a.create("y", Some(50), None).await.unwrap();
        assert_eq!(b.create("z", None, None).await, Err(TaskCreateError::ServerFull { limit: 3 }));

        // Owners apart; another instance reads the task.
        assert_eq!(b.get("y", &first.task_id).await, Err(TaskLookupError::NotFound));
        assert_eq!(b.get("x", "not-an-id").await, Err(TaskLookupError::NotFound));
        assert_eq!(b.get("x", &first.task_id).await.unwrap().task.status, TaskStatus::Working);

        // Cancelled on b: a is told to stop its work, and a late completion is dropped.
        let cancelled = b.cancel("x", &first.task_id).await.unwrap().expect("cancelled");
        assert_eq!(cancelled.task.status, TaskStatus::Cancelled);
        let changes = a.remote_changes().await;
        assert_eq!(changes.stopped, vec![first.task_id.clone()], "{changes:?}");
        let late = a.update(&first.task_id, TaskUpdate::Completed { result: Map::new() }).await;
        assert_eq!(late, Ok(None), "a terminal state never changes");
        assert_eq!(b.cancel("x", &first.task_id).await, Ok(None));

        // Answers accepted on a reach b, which runs the task.
        let requests: Map<String, Value> =
            serde_json::from_value(json!({"q": {"method": "elicitation/create"}})).unwrap();
        let message = None;
        b.update(&second.task_id, TaskUpdate::InputRequired { requests, message }).await.unwrap();
        let answers: Map<String, Value> = serde_json::from_value(json!({"q": {"action": "accept"}, "z": 1})).unwrap();
        let answered = a.answer("x", &second.task_id, answers).await.unwrap();
        assert_eq!((answered.accepted.len(), answered.outstanding), (1, 0));
        assert_eq!(answered.task.task.status, TaskStatus::Working);
        let changes = b.remote_changes().await;
        assert_eq!(changes.answers, vec![(second.task_id.clone(), answered.accepted)]);
        assert!(changes.stopped.is_empty(), "{changes:?}");
        assert!(b.remote_changes().await.answers.is_empty(), "relayed once");

        // A completion and a cancel racing: exactly one wins, and the task shows that one.
        let (completed, cancelled) = futures_util::future::join(
            b.update(&second.task_id, TaskUpdate::Completed { result: Map::new() }),
            a.cancel("x", &second.task_id),
        )
        .await;
        let (completed, cancelled) = (completed.unwrap(), cancelled.unwrap());
        assert!(completed.is_some() != cancelled.is_some(), "{completed:?} {cancelled:?}");
        let winner = completed.or(cancelled).unwrap().task.status;
        assert_eq!(a.get("x", &second.task_id).await.unwrap().task.status, winner);

        // The 50 ms task expires: "expired", and its instance stops it.
        actix_rt::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(b.get("y", &third.task_id).await, Err(TaskLookupError::Expired));
        assert!(a.remote_changes().await.stopped.contains(&third.task_id));

        // Instance c stops (its heartbeat gone): a's sweep fails its unfinished task.
        let c = store(&connection, "c");
        let orphan = c.create("w", None, None).await.unwrap();
        c.heartbeat_and_sweep().await.unwrap();
        redis::cmd("DEL").arg(heartbeat_key("c")).query_async::<()>(&mut connection).await.unwrap();
        assert_eq!(a.heartbeat_and_sweep().await.unwrap(), 1);
        let failed = b.get("w", &orphan.task_id).await.unwrap();
        assert_eq!(failed.task.status, TaskStatus::Failed);
        assert_eq!(failed.task.status_message.as_deref(), Some(INSTANCE_STOPPED));
        assert_eq!(b.heartbeat_and_sweep().await.unwrap(), 0, "c is forgotten");

        a.refresh_counts().await.unwrap();
        let counts = a.counts().await;
        assert_eq!((counts.created, counts.held()), (4, 3), "{counts:?}");
        assert_eq!(counts.with_status(TaskStatus::Failed), 1, "{counts:?}");
    }
}
