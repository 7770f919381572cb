//! One language server process spoken to over its standard input and output: requests with
//! deadlines, written within deadlines too (a server that stops reading its input fails
//! instead of blocking the thread that asks), the server's own requests answered
//! (configuration, registrations, progress), its state (starting, ready, failed) and a clean
//! shutdown.
//!
//! The process (the sandbox launcher, see `launch`, or the server itself) is started with
//! `PR_SET_PDEATHSIG` from a thread that lasts as long as the process (the signal comes when
//! the thread that forked it ends, so a killed engine takes it along but an agent's thread
//! ending does not) in its own process group, and is shut down — `shutdown`, `exit`, SIGTERM
//! (on which the launcher ends the server and all it started), then SIGKILL to the group —
//! when the connection is dropped: no server outlives the process that started it.

use std::collections::HashMap;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::mpsc::{Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use lsp_types::notification::{
    Cancel, DidChangeConfiguration, DidChangeWorkspaceFolders, Exit, Initialized, Notification,
    PublishDiagnostics,
};
use lsp_types::request::{Initialize, Request, Shutdown};
use lsp_types::{
    CallHierarchyClientCapabilities, CancelParams, ClientCapabilities, ConfigurationParams,
    DidChangeConfigurationParams, DidChangeWorkspaceFoldersParams, GeneralClientCapabilities,
    GotoCapability, ImplementationProviderCapability, InitializeParams, InitializedParams,
    NumberOrString, PositionEncodingKind, PublishDiagnosticsParams, ReferenceClientCapabilities,
    ServerCapabilities, TextDocumentClientCapabilities, TextDocumentSyncClientCapabilities,
    WorkspaceClientCapabilities, WorkspaceFolder, WorkspaceFoldersChangeEvent,
};
use serde_json::Value;

use super::rpc;

/// Where a server stands.
#[derive(Debug, Clone, PartialEq)]
pub enum State {
    /// Started at `since`, not initialized yet.
    Starting { since: Instant },
    /// Initialized; it took `warmup` from the start.
    Ready { warmup: Duration },
    /// Gone or unusable, and why.
    Failed(String),
}

type Pending = Arc<Mutex<HashMap<i64, Sender<Result<Value, String>>>>>;

/// A running language server.
pub struct Connection {
    /// The command, for notices (`pyright-langserver`).
    pub name: String,
    child: Mutex<Child>,
    pid: u32,
    stdin: Arc<Input>,
    /// How long a notification may wait for the server to read it.
    write_timeout: Duration,
    pending: Pending,
    next_id: AtomicI64,
    state: Arc<Mutex<State>>,
    /// The `capabilities` of the server's `initialize` answer.
    capabilities: Mutex<ServerCapabilities>,
    /// When the server last said anything.
    heard: Arc<Mutex<Instant>>,
    /// Documents the server published diagnostics for: it has analysed them.
    diagnosed: Arc<Mutex<std::collections::HashSet<String>>>,
    /// Whether it was shut down (its process reaped).
    closed: std::sync::atomic::AtomicBool,
    /// What it is told at `initialize` beyond our capabilities.
    init: Init,
}

/// What a server is told at `initialize` beyond the client's capabilities.
#[derive(Debug, Clone, Default)]
pub struct Init {
    /// Its `initializationOptions`.
    pub options: Option<Value>,
    /// Whether it is given our process id, which servers watch to exit once the client is
    /// gone; a sandboxed server cannot see processes outside its sandbox (it would exit at
    /// once), and its launcher ends it with us anyway.
    pub process_id: bool,
}

/// How long a server must stay quiet after `initialized` to count as ready: servers load
/// their workspace after it (pyright asks for its settings, then finds the source files) and
/// answer emptily until they have.
const SETTLE: Duration = Duration::from_millis(500);

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Connection {
    /// Starts `cmd`, the server `command`, in `dir`; the server is not initialized yet (see
    /// [`Connection::initialize`], which tells it `init`). A message the server does not read
    /// within `write_timeout` (a request: within its own timeout) fails it.
    pub fn spawn(
        command: &str,
        mut cmd: Command,
        init: Init,
        dir: &Path,
        write_timeout: Duration,
    ) -> std::io::Result<Arc<Connection>> {
        cmd.current_dir(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            use std::os::unix::process::CommandExt;
            cmd.pre_exec(|| {
                libc::setpgid(0, 0);
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let mut child = spawn_lasting(cmd)?;
        let pid = child.id();
        let stdin = child
            .stdin
            .take()
            .ok_or_else(|| std::io::Error::other("the server's standard input is not a pipe"))?;
        let stdin = Arc::new(Input::new(stdin)?);
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| std::io::Error::other("the server's standard output is not a pipe"))?;
        let conn = Arc::new(Connection {
            name: command.rsplit('/').next().unwrap_or(command).to_string(),
            child: Mutex::new(child),
            pid,
            stdin,
            write_timeout,
            pending: Arc::new(Mutex::new(HashMap::new())),
            next_id: AtomicI64::new(1),
            state: Arc::new(Mutex::new(State::Starting {
                since: Instant::now(),
            })),
            capabilities: Mutex::new(ServerCapabilities::default()),
            heard: Arc::new(Mutex::new(Instant::now())),
            diagnosed: Arc::new(Mutex::new(std::collections::HashSet::new())),
            closed: std::sync::atomic::AtomicBool::new(false),
            init,
        });
        let shared = Shared {
            pending: conn.pending.clone(),
            state: conn.state.clone(),
            stdin: conn.stdin.clone(),
            write_timeout,
            heard: conn.heard.clone(),
            diagnosed: conn.diagnosed.clone(),
        };
        std::thread::spawn(move || read_loop(stdout, shared));
        Ok(conn)
    }

    /// Returns the server's process id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Returns where the server stands, noticing a process that ended.
    pub fn state(&self) -> State {
        if let Ok(Some(status)) = lock(&self.child).try_wait() {
            let mut s = lock(&self.state);
            if !matches!(*s, State::Failed(_)) {
                *s = State::Failed(format!("exited ({status})"));
            }
        }
        lock(&self.state).clone()
    }

    /// Marks the server failed, for `why` (after a shutdown: why it was shut down).
    pub(super) fn fail(&self, why: String) {
        *lock(&self.state) = State::Failed(why);
    }

    /// Initializes the server for the worktree at `root` within `timeout`; the state says how
    /// it went.
    pub fn initialize(&self, root: &Path, timeout: Duration) {
        let started = match self.state() {
            State::Starting { since } => since,
            _ => return,
        };
        let params = InitializeParams {
            initialization_options: self.init.options.clone(),
            process_id: self.init.process_id.then(std::process::id),
            ..initialize_params(root)
        };
        match self.call::<Initialize>(params, timeout) {
            Ok(result) => {
                *lock(&self.capabilities) = result.capabilities;
                self.send::<Initialized>(InitializedParams {});
                // Servers that pull their settings (pyright) start loading on this.
                self.send::<DidChangeConfiguration>(DidChangeConfigurationParams {
                    settings: Value::Object(Default::default()),
                });
                let sent = Instant::now();
                let deadline = started + timeout;
                while Instant::now() < deadline && !matches!(self.state(), State::Failed(_)) {
                    let quiet = lock(&self.heard).elapsed();
                    if quiet >= SETTLE && sent.elapsed() >= SETTLE {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(25));
                }
                let mut s = lock(&self.state);
                if matches!(*s, State::Starting { .. }) {
                    *s = State::Ready {
                        warmup: started.elapsed(),
                    };
                }
            }
            Err(e) => self.fail(format!("did not initialize: {e}")),
        }
    }

    /// Returns true if and only if the server said it serves several workspace folders.
    pub fn serves_folders(&self) -> bool {
        lock(&self.capabilities)
            .workspace
            .as_ref()
            .and_then(|w| w.workspace_folders.as_ref())
            .and_then(|f| f.supported)
            == Some(true)
    }

    /// Returns true if and only if the server's capabilities offer `textDocument/implementation`.
    pub fn offers_implementations(&self) -> bool {
        !matches!(
            lock(&self.capabilities).implementation_provider,
            None | Some(ImplementationProviderCapability::Simple(false))
        )
    }

    /// Returns true if and only if the server's capabilities offer the call hierarchy.
    pub fn offers_call_hierarchy(&self) -> bool {
        use lsp_types::CallHierarchyServerCapability as C;
        !matches!(
            lock(&self.capabilities).call_hierarchy_provider,
            None | Some(C::Simple(false))
        )
    }

    /// Adds the worktree at `root` to the server's workspace folders.
    pub fn add_folder(&self, root: &Path) {
        self.send::<DidChangeWorkspaceFolders>(DidChangeWorkspaceFoldersParams {
            event: WorkspaceFoldersChangeEvent {
                added: vec![folder(root)],
                removed: Vec::new(),
            },
        });
    }

    /// Sends request `R` and waits at most `timeout` for its result, decoded as the protocol
    /// types it.
    pub fn call<R: Request>(
        &self,
        params: R::Params,
        timeout: Duration,
    ) -> Result<R::Result, String> {
        let params = serde_json::to_value(params)
            .map_err(|e| format!("cannot encode {}: {e}", R::METHOD))?;
        decode::<R>(self.request(R::METHOD, params, timeout)?)
    }

    /// Sends notification `N` (errors show in the state later, when the process is gone).
    pub fn send<N: Notification>(&self, params: N::Params) {
        match serde_json::to_value(params) {
            Ok(params) => self.notify(N::METHOD, params),
            Err(e) => {
                tracing::warn!(method = N::METHOD, error = %e, "cannot encode a notification")
            }
        }
    }

    /// Sends a request and waits at most `timeout` for its raw result.
    fn request(&self, method: &str, params: Value, timeout: Duration) -> Result<Value, String> {
        if let State::Failed(why) = self.state() {
            return Err(why);
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = channel();
        lock(&self.pending).insert(id, tx);
        if let Err(why) = self.write(&rpc::request(id, method, params), timeout) {
            lock(&self.pending).remove(&id);
            return Err(why);
        }
        let answer = rx.recv_timeout(timeout);
        lock(&self.pending).remove(&id);
        match answer {
            Ok(r) => r,
            Err(_) => {
                // Tell the server to stop working on it; the answer no longer matters.
                self.send::<Cancel>(CancelParams {
                    id: NumberOrString::Number(id as i32),
                });
                Err(format!("no answer within {:.1} s", timeout.as_secs_f64()))
            }
        }
    }

    /// Sends a raw notification.
    fn notify(&self, method: &str, params: Value) {
        let _ = self.write(&rpc::notification(method, params), self.write_timeout);
    }

    /// Writes `message` unless the server failed; a server that does not read it within
    /// `timeout` has failed (what was written of it cannot be taken back).
    fn write(&self, message: &Value, timeout: Duration) -> Result<(), String> {
        if let State::Failed(why) = self.state() {
            return Err(why);
        }
        self.stdin
            .write(message, timeout)
            .inspect_err(|why| self.fail(why.clone()))
    }

    /// Waits up to `wait` for the server to publish diagnostics of `uri` — the sign that it
    /// has analysed the document (answers asked before can come back empty); returns true if
    /// it did.
    pub fn await_analysis(&self, uri: &str, wait: Duration) -> bool {
        let deadline = Instant::now() + wait;
        loop {
            if lock(&self.diagnosed).contains(uri) {
                return true;
            }
            if Instant::now() >= deadline || matches!(self.state(), State::Failed(_)) {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Forgets that `uri` was analysed (its text changed).
    pub fn changed(&self, uri: &str) {
        lock(&self.diagnosed).remove(uri);
    }

    /// Returns the server's resident memory in MiB, its children's included.
    pub fn memory_mb(&self) -> Option<u64> {
        let mut total = 0u64;
        let mut todo = vec![self.pid];
        let mut seen = 0;
        while let Some(pid) = todo.pop() {
            seen += 1;
            if seen > 64 {
                break;
            }
            total += rss_kb(pid)?;
            todo.extend(children(pid));
        }
        Some(total / 1024)
    }

    /// Shuts the server down: `shutdown` and `exit` when it is ready, then, after a moment
    /// for it to exit (none when it was not ready), SIGKILL to its process group. Only once:
    /// after that the process id may belong to someone else.
    pub fn shutdown(&self) {
        if self.closed.swap(true, Ordering::SeqCst) {
            return;
        }
        let told = matches!(self.state(), State::Ready { .. });
        if told {
            let _ = self.call::<Shutdown>((), Duration::from_secs(2));
            self.send::<Exit>(());
        }
        let mut child = lock(&self.child);
        // Only a server told to exit is given time to: a failed or starting one (stuck,
        // maybe) is killed at once.
        let deadline = Instant::now() + Duration::from_secs(if told { 2 } else { 0 });
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // A sandbox launcher ends the server and everything it started on SIGTERM; SIGKILL
        // would leave it no time to.
        if !matches!(child.try_wait(), Ok(Some(_))) {
            // SAFETY: a plain system call on our child, not yet waited for.
            unsafe { libc::kill(self.pid as i32, libc::SIGTERM) };
            let deadline = Instant::now() + Duration::from_secs(6);
            while Instant::now() < deadline && !matches!(child.try_wait(), Ok(Some(_))) {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        // The group too: servers start helpers of their own.
        // SAFETY: a plain system call on the group this connection created.
        unsafe { libc::kill(-(self.pid as i32), libc::SIGKILL) };
        let _ = child.kill();
        let _ = child.wait();
        drop(child);
        let mut s = lock(&self.state);
        if !matches!(*s, State::Failed(_)) {
            *s = State::Failed("shut down".into());
        }
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Spawns `cmd` from a thread that lives as long as the process: `PR_SET_PDEATHSIG` fires
/// when the thread that forked the child ends, and the threads asking for servers (an agent's,
/// a background start) end long before the servers should.
fn spawn_lasting(cmd: Command) -> std::io::Result<Child> {
    type Request = (Command, Sender<std::io::Result<Child>>);
    static SPAWNER: std::sync::OnceLock<Option<Mutex<Sender<Request>>>> =
        std::sync::OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (tx, rx) = channel::<Request>();
        std::thread::Builder::new()
            .name("lsp-spawner".into())
            .spawn(move || {
                for (mut cmd, reply) in rx {
                    let _ = reply.send(cmd.spawn());
                }
            })
            .ok()
            .map(|_| Mutex::new(tx))
    });
    let Some(spawner) = spawner else {
        return Err(std::io::Error::other(
            "cannot start the thread servers start from",
        ));
    };
    let (tx, rx) = channel();
    lock(spawner)
        .send((cmd, tx))
        .map_err(|_| std::io::Error::other("the thread servers start from has ended"))?;
    rx.recv()
        .map_err(|_| std::io::Error::other("the thread servers start from has ended"))?
}

fn folder(root: &Path) -> WorkspaceFolder {
    let name = root
        .file_name()
        .map_or(String::new(), |n| n.to_string_lossy().into_owned());
    WorkspaceFolder {
        uri: super::convert::path_uri(root),
        name,
    }
}

/// The `initialize` request for the worktree at `root`: what this client can do — UTF-16
/// positions, workspace folders and settings, `didSave`, definitions and implementations as
/// plain locations, references, the call hierarchy.
fn initialize_params(root: &Path) -> InitializeParams {
    let text_document = TextDocumentClientCapabilities {
        synchronization: Some(TextDocumentSyncClientCapabilities {
            did_save: Some(true),
            ..Default::default()
        }),
        definition: Some(GotoCapability {
            link_support: Some(false),
            ..Default::default()
        }),
        references: Some(ReferenceClientCapabilities::default()),
        implementation: Some(GotoCapability {
            link_support: Some(false),
            ..Default::default()
        }),
        call_hierarchy: Some(CallHierarchyClientCapabilities::default()),
        ..Default::default()
    };
    // `rootUri` is deprecated for workspace folders, which come too; older servers read it.
    #[allow(deprecated)]
    InitializeParams {
        process_id: Some(std::process::id()),
        root_uri: Some(super::convert::path_uri(root)),
        workspace_folders: Some(vec![folder(root)]),
        capabilities: ClientCapabilities {
            general: Some(GeneralClientCapabilities {
                position_encodings: Some(vec![PositionEncodingKind::UTF16]),
                ..Default::default()
            }),
            workspace: Some(WorkspaceClientCapabilities {
                workspace_folders: Some(true),
                configuration: Some(true),
                ..Default::default()
            }),
            text_document: Some(text_document),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// Decodes the result of request `R` as the protocol types it.
pub fn decode<R: Request>(result: Value) -> Result<R::Result, String> {
    serde_json::from_value(result)
        .map_err(|e| format!("sent a malformed answer to {}: {e}", R::METHOD))
}

/// Reads the server's messages: responses go to their waiting request, the server's requests
/// are answered, notifications are dropped. At the end of the output, the server has failed.
/// What the reading thread shares with the connection.
struct Shared {
    pending: Pending,
    state: Arc<Mutex<State>>,
    stdin: Arc<Input>,
    write_timeout: Duration,
    heard: Arc<Mutex<Instant>>,
    diagnosed: Arc<Mutex<std::collections::HashSet<String>>>,
}

fn read_loop(stdout: std::process::ChildStdout, shared: Shared) {
    let Shared {
        pending,
        state,
        stdin,
        write_timeout,
        heard,
        diagnosed,
    } = shared;
    let mut input = BufReader::new(stdout);
    let why = loop {
        let message = match rpc::read_message(&mut input) {
            Ok(Some(m)) => {
                *lock(&heard) = Instant::now();
                m
            }
            Ok(None) => break "exited".to_string(),
            Err(e) => break format!("sent a malformed message: {e}"),
        };
        let id = message.get("id").cloned();
        tracing::debug!(message = %message, "language server said");
        match (message.get("method").and_then(Value::as_str), id) {
            (Some(method), Some(id)) => {
                let result = match method {
                    // One answer per item asked: no settings of ours.
                    "workspace/configuration" => Value::Array(
                        serde_json::from_value::<ConfigurationParams>(message["params"].clone())
                            .map_or(Vec::new(), |p| {
                                p.items.iter().map(|_| Value::Null).collect()
                            }),
                    ),
                    // Registrations, progress tokens, folders: acknowledged, nothing more.
                    _ => Value::Null,
                };
                if let Err(why) = stdin.write(&rpc::response(id, result), write_timeout) {
                    // The server is not reading: it is stuck, whatever it sends.
                    let mut s = lock(&state);
                    if !matches!(*s, State::Failed(_)) {
                        *s = State::Failed(why);
                    }
                }
            }
            (None, Some(id)) => {
                let Some(id) = id.as_i64() else { continue };
                if let Some(tx) = lock(&pending).remove(&id) {
                    let r = match message.get("error") {
                        Some(e) => Err(e["message"].as_str().unwrap_or("error").to_string()),
                        None => Ok(message.get("result").cloned().unwrap_or(Value::Null)),
                    };
                    let _ = tx.send(r);
                }
            }
            (Some(PublishDiagnostics::METHOD), None) => {
                if let Ok(p) =
                    serde_json::from_value::<PublishDiagnosticsParams>(message["params"].clone())
                {
                    lock(&diagnosed).insert(p.uri.as_str().to_string());
                }
            }
            _ => {}
        }
    };
    {
        let mut s = lock(&state);
        if !matches!(*s, State::Failed(_)) {
            *s = State::Failed(why.clone());
        }
    }
    for (_, tx) in lock(&pending).drain() {
        let _ = tx.send(Err(why.clone()));
    }
}

/// The server's standard input, written without blocking: a server that stops reading (a
/// stopped or stuck process with a full pipe) makes a write fail at its deadline instead of
/// holding the asking thread forever.
struct Input {
    pipe: Mutex<ChildStdin>,
}

impl Input {
    fn new(pipe: ChildStdin) -> std::io::Result<Input> {
        use std::os::fd::AsRawFd;
        let fd = pipe.as_raw_fd();
        // SAFETY: plain system calls on a descriptor this connection owns; the flag is the
        // parent's end's own (the server's end of the pipe stays blocking).
        let set = unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFL);
            flags >= 0 && libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) == 0
        };
        if !set {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Input {
            pipe: Mutex::new(pipe),
        })
    }

    /// Writes `message`, framed, whole within `timeout` (waiting for the lock included), or
    /// says why not.
    fn write(&self, message: &Value, timeout: Duration) -> Result<(), String> {
        use std::io::Write;
        use std::os::fd::AsRawFd;
        let deadline = Instant::now() + timeout;
        let late = || {
            format!(
                "did not read its input within {:.1} s",
                timeout.as_secs_f64()
            )
        };
        let mut bytes = Vec::new();
        rpc::write_message(&mut bytes, message).map_err(|e| format!("cannot encode: {e}"))?;
        let mut pipe = loop {
            match self.pipe.try_lock() {
                Ok(p) => break p,
                Err(std::sync::TryLockError::Poisoned(p)) => break p.into_inner(),
                Err(std::sync::TryLockError::WouldBlock) if Instant::now() >= deadline => {
                    return Err(late());
                }
                Err(std::sync::TryLockError::WouldBlock) => {
                    std::thread::sleep(Duration::from_millis(5))
                }
            }
        };
        let mut rest = bytes.as_slice();
        while !rest.is_empty() {
            match pipe.write(rest) {
                Ok(0) => return Err("closed its input".into()),
                Ok(n) => rest = &rest[n..],
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Err(late());
                    }
                    let mut ready = libc::pollfd {
                        fd: pipe.as_raw_fd(),
                        events: libc::POLLOUT,
                        revents: 0,
                    };
                    let ms = left.as_millis().clamp(1, i32::MAX as u128) as i32;
                    // SAFETY: one valid pollfd for the duration of the call.
                    unsafe { libc::poll(&mut ready, 1, ms) };
                }
                Err(e) => return Err(format!("cannot write to it: {e}")),
            }
        }
        Ok(())
    }
}

fn rss_kb(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

fn children(pid: u32) -> Vec<u32> {
    let tasks = PathBuf::from(format!("/proc/{pid}/task"));
    let Ok(dir) = std::fs::read_dir(tasks) else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
        .flat_map(|c| {
            c.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect()
}
