//! The stdio transport of the client: a child process speaking newline-delimited JSON-RPC on
//! its stdin/stdout. Its stderr goes to our log; when it exits, pending requests fail and the
//! next call starts it again.
//!
//! Bounded both ways: what we write waits in a queue of [`WRITE_QUEUE`] messages (a child that
//! does not read its stdin makes sends fail with a clear error, not memory grow), and what it
//! writes is read line by line up to the response limit (a longer line, or stderr line, is
//! skipped without being held whole).

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::process::Stdio;
use std::rc::Rc;

use mcpd::client::config::StdioCommand;
use mcpd::jsonrpc::RequestId;
use serde_json::Value;
use tokio::io::{AsyncWriteExt as _, BufReader};
use tokio::sync::mpsc::error::TrySendError;
use tokio::sync::mpsc::{channel, Sender};
use tokio::sync::oneshot;

use super::error::ClientError;
use crate::panics::{self, Site};
use crate::stdio::{read_line, Line};

/// Messages waiting to be written to the child's stdin; a child that reads none of them makes
/// the next send fail.
pub(crate) const WRITE_QUEUE: usize = 64;
/// The longest stderr line of a child that is logged (longer ones are skipped).
const MAX_STDERR_LINE: usize = 64 * 1024;

type Pending = Rc<RefCell<HashMap<RequestId, oneshot::Sender<Result<Value, ClientError>>>>>;

/// A running child and the tasks that talk to it.
pub(crate) struct StdioChannel {
    out: Sender<Vec<u8>>,
    pending: Pending,
    alive: Rc<Cell<bool>>,
    tasks: Vec<actix_rt::task::JoinHandle<()>>,
}

impl StdioChannel {
    /// Starts the child. `on_message` receives what the child sends that is not a response to
    /// one of our requests (its requests and notifications).
    pub(crate) fn spawn(
        command: &StdioCommand,
        name: &str,
        max_line: usize,
        on_message: impl Fn(Value) + 'static,
    ) -> Result<StdioChannel, ClientError> {
        let mut process = tokio::process::Command::new(&command.program);
        process
            .args(&command.args)
            .envs(command.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        if let Some(cwd) = &command.cwd {
            process.current_dir(cwd);
        }
        #[cfg(unix)]
        process.process_group(0);
        let mut child =
            process.spawn().map_err(|e| ClientError::Transport(format!("cannot start {}: {e}", command.program)))?;
        let (Some(mut stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(ClientError::Transport("the child's pipes are missing".into()));
        };
        let (out, mut out_rx) = channel::<Vec<u8>>(WRITE_QUEUE);
        let pending: Pending = Rc::new(RefCell::new(HashMap::new()));
        let alive = Rc::new(Cell::new(true));
        let writer = panics::spawn(Site::Client, async move {
            while let Some(mut line) = out_rx.recv().await {
                line.push(b'\n');
                if stdin.write_all(&line).await.is_err() || stdin.flush().await.is_err() {
                    break;
                }
            }
        });
        let log_name = name.to_owned();
        let errors = panics::spawn(Site::Client, async move {
            let mut stderr = BufReader::new(stderr);
            let mut line = Vec::new();
            loop {
                match read_line(&mut stderr, &mut line, MAX_STDERR_LINE).await {
                    Ok(Line::Complete) => log::info!("[{log_name}] {}", String::from_utf8_lossy(&line).trim_end()),
                    Ok(Line::TooLong) => log::info!("[{log_name}] (a line over {MAX_STDERR_LINE} bytes, skipped)"),
                    Ok(Line::Eof) | Err(_) => break,
                }
            }
        });
        let (reader_pending, reader_alive, reader_name) = (pending.clone(), alive.clone(), name.to_owned());
        let reader = panics::spawn(Site::Client, async move {
            let mut stdout = BufReader::new(stdout);
            let mut line = Vec::new();
            loop {
                match read_line(&mut stdout, &mut line, max_line).await {
                    Ok(Line::Eof) | Err(_) => break,
                    Ok(Line::TooLong) => {
                        log::warn!("{reader_name}: dropping a message over {max_line} bytes");
                        continue;
                    }
                    Ok(Line::Complete) => {}
                }
                let Ok(message) = serde_json::from_slice::<Value>(&line) else {
                    log::debug!("{reader_name}: not JSON on stdout: {}", String::from_utf8_lossy(&line).trim());
                    continue;
                };
                let is_response = message.get("method").is_none();
                let id = message.get("id").and_then(RequestId::from_value);
                match (is_response, id) {
                    (true, Some(id)) => {
                        let waiter = reader_pending.borrow_mut().remove(&id);
                        if let Some(waiter) = waiter {
                            let _ = waiter.send(super::link::outcome(message, &id));
                        }
                    }
                    (true, None) => log::debug!("{reader_name}: a response without an id"),
                    (false, _) => on_message(message),
                }
            }
            reader_alive.set(false);
            let status = child.wait().await.map(|s| s.to_string()).unwrap_or_else(|e| e.to_string());
            log::warn!("{reader_name}: the server process exited ({status})");
            for (_, waiter) in reader_pending.borrow_mut().drain() {
                let _ = waiter.send(Err(ClientError::Transport(format!("the server process exited ({status})"))));
            }
        });
        Ok(StdioChannel { out, pending, alive, tasks: vec![writer, errors, reader] })
    }

    /// Whether the child is still running.
    pub(crate) fn alive(&self) -> bool {
        self.alive.get()
    }

    /// Sends a message that gets no answer (a notification, or our answer to its request);
    /// fails when [`WRITE_QUEUE`] messages already wait for the child to read them.
    pub(crate) fn send(&self, message: Vec<u8>) -> Result<(), ClientError> {
        if !self.alive() {
            return Err(ClientError::Transport("the server process has exited".into()));
        }
        self.out.try_send(message).map_err(|e| match e {
            TrySendError::Full(_) => ClientError::Transport(format!(
                "the server process is not reading its input ({WRITE_QUEUE} messages are waiting)"
            )),
            TrySendError::Closed(_) => ClientError::Transport("the server process's stdin is closed".into()),
        })
    }

    /// Sends a request and waits for its answer (the caller applies the time limit).
    pub(crate) async fn request(&self, id: &RequestId, message: Vec<u8>) -> Result<Value, ClientError> {
        let (tx, rx) = oneshot::channel();
        self.pending.borrow_mut().insert(id.clone(), tx);
        if let Err(e) = self.send(message) {
            self.pending.borrow_mut().remove(id);
            return Err(e);
        }
        rx.await.map_err(|_| ClientError::Closed)?
    }

    /// Stops the child (its process group) and the tasks.
    pub(crate) fn close(&self) {
        self.alive.set(false);
        for task in &self.tasks {
            task.abort();
        }
        for (_, waiter) in self.pending.borrow_mut().drain() {
            let _ = waiter.send(Err(ClientError::Closed));
        }
    }
}

impl Drop for StdioChannel {
    fn drop(&mut self) {
        // Aborting the reader drops the child, whose kill_on_drop ends the process.
        self.close();
    }
}
