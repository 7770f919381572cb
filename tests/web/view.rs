//! A scripted `start --ui` run to look at: the sample repository, the scripted model behind a
//! recording relay, and the web view's address; and a session opened the way a browser opens
//! the printed address.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use git_orchestra::demo;
use serde_json::{Value, json};

use crate::support::{git, hermetic, orchestra_command};

pub struct Run {
    pub tmp: tempfile::TempDir,
    pub repo: PathBuf,
    pub model: demo::MockModel,
    /// Every request body the model received, in order.
    pub prompts: Arc<Mutex<Vec<String>>>,
    pub child: Child,
    /// What the process printed on stderr so far.
    pub stderr: Arc<Mutex<String>>,
    /// The printed address, token included.
    pub url: String,
    /// `http://127.0.0.1:<port>`.
    pub base: String,
}

impl Drop for Run {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn call(name: &str, args: Value) -> Value {
    json!({"calls": [{"name": name, "args": args}]})
}

/// Forwards each request to `upstream` and keeps its body.
fn recording_relay(upstream: &str, seen: Arc<Mutex<Vec<String>>>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let upstream = upstream
        .trim_start_matches("http://")
        .trim_end_matches("/v1")
        .to_string();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let (seen, upstream) = (seen.clone(), upstream.clone());
            std::thread::spawn(move || relay(stream, &upstream, &seen));
        }
    });
    url
}

fn relay(mut stream: TcpStream, upstream: &str, seen: &Mutex<Vec<String>>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut head = String::new();
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        if let Some((k, v)) = line.trim_end().split_once(':')
            && k.eq_ignore_ascii_case("content-length")
        {
            length = v.trim().parse().unwrap_or(0);
        }
        head.push_str(&line);
        if line.trim_end().is_empty() {
            break;
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).unwrap();
    seen.lock()
        .unwrap()
        .push(String::from_utf8_lossy(&body).into_owned());
    let mut up = TcpStream::connect(upstream).unwrap();
    up.write_all(head.as_bytes()).unwrap();
    up.write_all(&body).unwrap();
    let mut answer = Vec::new();
    let _ = up.read_to_end(&mut answer);
    let _ = stream.write_all(&answer);
}

/// Starts `git orchestra start --ui` (without --yes: the plan waits on the page) for a plan of
/// two packets: p1 writes NOTES.md and its validation waits for the file `release`; p2 writes
/// p2.txt. p1's agent has a second pair of turns for a fix round.
pub fn start(release: &std::path::Path) -> Run {
    hermetic();
    let tmp = tempfile::tempdir().unwrap();
    let repo = demo::create_sample(&tmp.path().join("greeter")).unwrap();
    let plan = format!(
        "```toml\n[[packet]]\nid = \"p1\"\ntitle = \"Write p1\"\ndescription = \"d\"\nfiles = [\"NOTES.md\"]\nvalidation = [\"while [ ! -e {} ]; do sleep 0.1; done\"]\n\n[[packet]]\nid = \"p2\"\ntitle = \"Write p2\"\ndescription = \"d\"\nfiles = [\"p2.txt\"]\ndepends_on = [\"p1\"]\n```",
        release.display()
    );
    // The fix round's prompt carries the comment (a continued conversation would take p1's
    // third and fourth replies instead).
    let scripts = json!([
        {"name": "p1-fix", "match": ["# Coder", "Add a line saying what was fixed"], "replies": [
            call("write_file", json!({"path": "NOTES.md", "content": "first notes\nfixed as the person asked\n"})),
            call("complete", json!({"summary": "notes fixed"}))]},
        {"name": "p1", "match": ["# Coder", "# Write p1"], "replies": [
            call("write_file", json!({"path": "NOTES.md", "content": "first notes\n"})),
            call("complete", json!({"summary": "notes written"})),
            call("write_file", json!({"path": "NOTES.md", "content": "first notes\nfixed as the person asked\n"})),
            call("complete", json!({"summary": "notes fixed"}))]},
        {"name": "p2", "match": ["# Coder", "# Write p2"], "replies": [
            call("write_file", json!({"path": "p2.txt", "content": "p2\n"})),
            call("complete", json!({"summary": "p2 written"}))]},
        {"name": "planner", "match": ["# Planner"], "replies": [{"text": plan}]},
        {"name": "review", "match": ["# Reviewer"], "replies": [{"text": "{\"verdict\": \"approve\"}"}]},
        {"name": "orchestrator", "match": ["# Orchestrator"], "replies": [{"text": "{}"}]},
    ]);
    let model = demo::MockModel::start(demo::parse_scripts(&scripts.to_string()).unwrap()).unwrap();
    let prompts = Arc::new(Mutex::new(Vec::new()));
    let relay_url = recording_relay(&model.url, prompts.clone());
    let root = tmp.path().join("worktrees");
    let mut child = orchestra_command(
        &repo,
        &[
            "start",
            "--ui",
            "--no-clarify",
            "--worktree-root",
            root.to_str().unwrap(),
            "Write notes",
        ],
    )
    .env("ORCHESTRA_PROVIDER", "openai-compatible")
    .env("ORCHESTRA_BASE_URL", &relay_url)
    .env("ORCHESTRA_MODEL", "scripted")
    .stdin(Stdio::null())
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let stderr = Arc::new(Mutex::new(String::new()));
    let err = child.stderr.take().unwrap();
    let sink = stderr.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            let mut s = sink.lock().unwrap();
            s.push_str(&line);
            s.push('\n');
        }
    });
    let url = wait_for_url(&stderr, &mut child);
    let base = url.split("/?").next().unwrap().to_string();
    Run {
        tmp,
        repo,
        model,
        prompts,
        child,
        stderr,
        url,
        base,
    }
}

fn wait_for_url(stderr: &Mutex<String>, child: &mut Child) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(url) = stderr
            .lock()
            .unwrap()
            .lines()
            .find_map(|l| l.strip_prefix("web view: "))
        {
            return url.trim().to_string();
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "start ended: {}",
            stderr.lock().unwrap()
        );
        assert!(Instant::now() < deadline, "no web view address printed");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A `git orchestra ui --no-open` process.
pub struct Ui {
    pub child: Child,
    pub url: String,
    pub base: String,
}

impl Drop for Ui {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `git orchestra ui --no-open` in `repo`.
pub fn ui(repo: &std::path::Path) -> Ui {
    ui_with(repo, &[])
}

/// Starts `git orchestra ui --no-open` in `repo` with `env` added (a model profile for the
/// runs it resumes).
pub fn ui_with(repo: &std::path::Path, env: &[(&str, &str)]) -> Ui {
    let mut child = orchestra_command(repo, &["ui", "--no-open"])
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line.trim().to_string();
    let base = url.split("/?").next().unwrap().to_string();
    Ui { child, url, base }
}

impl Run {
    /// The exit status of `start`, once it ended.
    pub fn child_exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().unwrap()
    }

    pub fn run_id(&self) -> String {
        let runs =
            git_orchestra::orchestrator::StartJournal::runs(&self.repo.join(".git")).unwrap();
        runs[0].clone()
    }

    /// The file at the tip of `packet`'s branch; empty while it is not there (a fix round
    /// takes the rejected commit back first).
    pub fn branch_file(&self, packet: &str, path: &str) -> String {
        let branch = format!("orchestra/{}/{packet}", self.run_id());
        let out = std::process::Command::new("git")
            .current_dir(&self.repo)
            .args(["show", &format!("{branch}:{path}")])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    pub fn branch_tip(&self, packet: &str) -> String {
        let branch = format!("orchestra/{}/{packet}", self.run_id());
        git(&self.repo, &["rev-parse", &branch])
    }
}

/// What the page holds once the printed address was opened: the server's address, its
/// cookie (`name=value`) and the key it sends in `X-Orchestra-Token`.
#[derive(Clone, Debug)]
pub struct Session {
    pub addr: String,
    pub cookie: String,
    pub key: String,
}

/// Sends `request` (a whole HTTP/1.1 request) to `addr` and returns the status and the whole
/// answer.
pub fn send(addr: &str, request: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    let _ = s.read_to_string(&mut answer);
    let status = answer
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, answer)
}

/// Returns the value of the header `name` in the whole HTTP `answer`.
pub fn header_of(answer: &str, name: &str) -> Option<String> {
    let head = answer.split("\r\n\r\n").next().unwrap_or("");
    head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim()
            .eq_ignore_ascii_case(name)
            .then(|| v.trim().to_string())
    })
}

/// Returns the content of the page's `<meta name="orchestra-key">` (or the older
/// `orchestra-token`), empty when there is none.
pub fn page_key(html: &str) -> String {
    ["orchestra-key", "orchestra-token"]
        .iter()
        .find_map(|name| {
            let at = html.find(&format!("name=\"{name}\" content=\""))?;
            let rest = &html[at + name.len() + 17..];
            Some(rest[..rest.find('"')?].to_string())
        })
        .unwrap_or_default()
}

/// Opens the printed `url` the way a browser does, once per address for the whole test
/// process (the address works once): the page it leads to, its cookie and its key.
pub fn session(url: &str) -> Session {
    static OPENED: Mutex<Vec<(String, Session)>> = Mutex::new(Vec::new());
    let mut opened = OPENED.lock().unwrap();
    if let Some((_, s)) = opened.iter().find(|(u, _)| u == url) {
        return s.clone();
    }
    let rest = url.strip_prefix("http://").unwrap();
    let (addr, path) = rest.split_once('/').unwrap();
    let get = |path: &str, cookie: &str| {
        send(
            addr,
            &format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n{cookie}Connection: close\r\n\r\n"),
        )
    };
    let (status, answer) = get(&format!("/{path}"), "");
    assert!(status == 200 || status == 303, "{answer}");
    let set = header_of(&answer, "Set-Cookie").unwrap_or_else(|| panic!("no cookie: {answer}"));
    let cookie = set.split(';').next().unwrap().trim().to_string();
    let page = if status == 303 {
        let location = header_of(&answer, "Location").unwrap();
        get(&location, &format!("Cookie: {cookie}\r\n")).1
    } else {
        answer
    };
    let session = Session {
        addr: addr.to_string(),
        cookie,
        key: page_key(&page),
    };
    assert!(!session.key.is_empty(), "the page has no key: {page}");
    opened.push((url.to_string(), session.clone()));
    session
}

/// An OpenAI-shaped key a hostile worker prints.
pub const SHAPED_KEY: &str = "sk-proj-Zq3vX9kLm2Pw8RtY6uH4jN1bC5dF7gA0";
/// A key of no known shape, known to the view only as the value of a `*_API_KEY` variable.
pub const PLAIN_KEY: &str = "plainKeyValue4242XYZ";

/// The environment holding both keys, for the run and for the view.
pub const KEYS_ENV: [(&str, &str); 2] = [("OPENAI_API_KEY", SHAPED_KEY), ("MY_API_KEY", PLAIN_KEY)];

/// A finished run whose packet `p1`'s worker printed hostile lines: JSON lines shaped like
/// activity with markup in their fields (a link, a form, an image), an activity line without
/// the fields its type has, a line with both keys of [`KEYS_ENV`] in it, and a line of markup.
/// Returns the repository and the run's id.
pub fn hostile_run() -> (crate::support::TestRepo, String) {
    let script = r#"printf '%s\n' '{"type":"tool_call","name":"read","ok":true,"ms":"<a id=\"pwn-ms\" href=\"http://evil.example/\">live link</a>","summary":"s"}'
printf '%s\n' '{"type":"model_waiting","turn":"<form id=\"pwn-form\" action=\"http://evil.example/\"><button>go</button></form>"}'
printf '%s\n' '{"type":"outcome"}'
printf '%s\n' '{"type":"model_call","model":"m","input_tokens":1,"output_tokens":2,"ms":"<img id=\"pwn-img\" src=\"x\">"}'
echo "the key is $OPENAI_API_KEY and $MY_API_KEY"
echo '<b id="pwn-b">bold</b>'
echo notes > notes.txt
"#;
    let repo =
        crate::support::TestRepo::with_files(&[("README.md", "# s\n"), ("hostile.sh", script)]);
    let plan = repo.write_plan(
        "plan.toml",
        &format!(
            "objective = \"notes\"\n\n{}",
            crate::support::packet("p1", "\"notes.txt\"", "", "")
        ),
    );
    let root = repo.scratch().join("wt");
    let out = crate::support::orchestra_with_env(
        &repo.path,
        &[
            "run",
            plan.to_str().unwrap(),
            "--worker-cmd",
            "sh hostile.sh",
            "--worktree-root",
            root.to_str().unwrap(),
        ],
        &KEYS_ENV,
    );
    assert!(out.status.success(), "{}", crate::support::text(&out));
    let run = crate::support::run_id(&repo.path);
    (repo, run)
}
