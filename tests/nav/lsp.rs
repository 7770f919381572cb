//! `git orchestra lsp` spoken to by a scripted client: the binary is spawned and every message
//! goes over its standard input and output, framed as the protocol frames them.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use serde_json::{Value, json};

use super::fixture;
use crate::support::{TestRepo, hermetic};

/// How long any answer may take (the first one indexes the fixture).
const ANSWER: Duration = Duration::from_secs(60);

/// A scripted language client of the binary.
pub struct Client {
    child: Child,
    stdin: ChildStdin,
    incoming: Receiver<Value>,
    next_id: i64,
}

/// Reads framed messages from `out` into the channel until the stream ends.
fn read_frames(out: impl Read + Send + 'static) -> Receiver<Value> {
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        let mut r = BufReader::new(out);
        loop {
            let mut len = 0usize;
            loop {
                let mut line = String::new();
                if r.read_line(&mut line).unwrap_or(0) == 0 {
                    return;
                }
                let line = line.trim_end();
                if line.is_empty() {
                    break;
                }
                if let Some(v) = line.strip_prefix("Content-Length:") {
                    len = v.trim().parse().unwrap();
                }
            }
            let mut body = vec![0; len];
            if r.read_exact(&mut body).is_err() {
                return;
            }
            if tx.send(serde_json::from_slice(&body).unwrap()).is_err() {
                return;
            }
        }
    });
    rx
}

impl Client {
    /// Starts `git-orchestra lsp` in `dir` without initializing it.
    pub fn spawn(dir: &std::path::Path) -> Client {
        hermetic();
        let mut child = Command::new(env!("CARGO_BIN_EXE_git-orchestra"))
            .arg("lsp")
            .current_dir(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let incoming = read_frames(child.stdout.take().unwrap());
        Client {
            child,
            stdin,
            incoming,
            next_id: 1,
        }
    }

    /// Starts the server and initializes it (UTF-16 positions, the protocol's default).
    pub fn start(repo: &TestRepo) -> Client {
        let mut c = Client::spawn(&repo.path);
        let root = format!("file://{}", repo.path.display());
        let caps = c.request(
            "initialize",
            json!({"processId": null, "rootUri": root, "capabilities": {}}),
        );
        assert_eq!(caps["capabilities"]["definitionProvider"], true, "{caps}");
        c.notify("initialized", json!({}));
        c
    }

    fn send(&mut self, message: &Value) {
        self.send_body(&serde_json::to_vec(message).unwrap());
    }

    /// Sends `body` framed as a message, whatever it holds.
    fn send_body(&mut self, body: &[u8]) {
        write!(self.stdin, "Content-Length: {}\r\n\r\n", body.len()).unwrap();
        self.stdin.write_all(body).unwrap();
        self.stdin.flush().unwrap();
    }

    pub fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Sends a request and returns the whole response message.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let m = self
                .incoming
                .recv_timeout(ANSWER)
                .unwrap_or_else(|_| panic!("no answer to {method} within {ANSWER:?}"));
            if m["id"] == json!(id) {
                return m;
            }
        }
    }

    /// Sends a request and returns its result, panicking on an error response.
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let m = self.call(method, params);
        assert!(m.get("error").is_none(), "{method}: {m}");
        m["result"].clone()
    }

    /// Waits for the process to end and returns its exit code.
    pub fn wait(mut self) -> Option<i32> {
        for _ in 0..600 {
            if let Some(s) = self.child.try_wait().unwrap() {
                return s.code();
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        self.child.kill().unwrap();
        panic!("the server did not exit");
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn uri(repo: &TestRepo, path: &str) -> String {
    format!("file://{}/{path}", repo.path.display())
}

/// Text document position params of `token` on the first line of `path` holding `needle`,
/// with the column counted in UTF-16 units.
fn pos(repo: &TestRepo, path: &str, needle: &str, token: &str) -> Value {
    let at = super::at(repo, path, needle, token);
    let text = std::fs::read_to_string(repo.path.join(path)).unwrap();
    let line = text.lines().nth(at.line as usize - 1).unwrap();
    let byte = at.col.unwrap() as usize - 1;
    let character = line[..byte].encode_utf16().count();
    json!({"textDocument": {"uri": uri(repo, path)}, "position": {"line": at.line - 1, "character": character}})
}

/// `path:line:character` (zero-based, as the protocol counts) of each location, sorted.
fn spots(v: &Value) -> Vec<String> {
    let mut out: Vec<String> = v
        .as_array()
        .unwrap_or_else(|| panic!("not a list: {v}"))
        .iter()
        .map(|l| {
            let u = l["uri"].as_str().unwrap();
            let path = u.rsplit_once("/app/").map_or(u, |(_, p)| p);
            let s = &l["range"]["start"];
            format!("{path}:{}:{}", s["line"], s["character"])
        })
        .collect();
    out.sort();
    out
}

fn with(mut p: Value, key: &str, v: Value) -> Value {
    p[key] = v;
    p
}

#[test]
fn definition_references_implementation_and_hover_answer_from_the_graph() {
    let repo = fixture("lsp");
    let mut c = Client::start(&repo);
    // `Greeter` after a non-ASCII character on the line: UTF-16 columns both ways.
    let def = c.request(
        "textDocument/definition",
        pos(&repo, "app/main.py", "print(", "Greeter"),
    );
    assert_eq!(spots(&def), ["models.py:0:6"], "{def}");
    assert_eq!(def[0]["range"]["end"]["character"], 13);
    let greet = pos(&repo, "app/main.py", "super().greet", "greet");
    let def = c.request("textDocument/definition", greet.clone());
    assert_eq!(spots(&def), ["models.py:3:8"], "{def}");

    let refs = c.request(
        "textDocument/references",
        with(
            pos(&repo, "app/models.py", "def make", "make"),
            "context",
            json!({"includeDeclaration": false}),
        ),
    );
    assert_eq!(spots(&refs), ["main.py:0:32", "main.py:4:8"], "{refs}");
    let refs = c.request(
        "textDocument/references",
        with(
            pos(&repo, "app/models.py", "def make", "make"),
            "context",
            json!({"includeDeclaration": true}),
        ),
    );
    assert!(
        spots(&refs).contains(&"models.py:8:4".to_string()),
        "{refs}"
    );

    let impls = c.request(
        "textDocument/implementation",
        pos(&repo, "app/models.py", "class Greeter", "Greeter"),
    );
    assert_eq!(spots(&impls), ["main.py:9:6"], "{impls}");

    let hover = c.request("textDocument/hover", greet);
    let text = hover["contents"]["value"].as_str().unwrap();
    assert!(text.contains("def greet(self, name):"), "{text}");
    assert!(text.contains("Say hello to someone."), "{text}");
    // Nothing at a position is an empty answer, not an error.
    let none = c.request(
        "textDocument/definition",
        json!({"textDocument": {"uri": uri(&repo, "app/main.py")}, "position": {"line": 2, "character": 0}}),
    );
    assert!(none.as_array().is_none_or(|a| a.is_empty()), "{none}");
}

#[test]
fn a_body_that_is_not_json_gets_a_parse_error_and_the_server_keeps_serving() {
    let repo = fixture("lsp");
    let mut c = Client::start(&repo);
    c.send_body(b"{\"jsonrpc\": \"2.0\", \"id\": 7, not json");
    let error = c
        .incoming
        .recv_timeout(ANSWER)
        .expect("an answer to the body that is not JSON");
    assert_eq!(error["error"]["code"], -32700, "{error}");
    assert_eq!(error["id"], Value::Null, "{error}");
    // The next message is served as usual.
    let def = c.request(
        "textDocument/definition",
        pos(&repo, "app/main.py", "print(", "Greeter"),
    );
    assert_eq!(spots(&def), ["models.py:0:6"], "{def}");
}

#[test]
fn symbols_and_the_call_hierarchy() {
    let repo = fixture("lsp");
    let mut c = Client::start(&repo);
    let doc = c.request(
        "textDocument/documentSymbol",
        json!({"textDocument": {"uri": uri(&repo, "app/models.py")}}),
    );
    let names: Vec<&str> = doc
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Greeter", "make"], "{doc}");
    assert_eq!(doc[0]["kind"], 5, "a class: {doc}");
    assert_eq!(doc[0]["children"][0]["name"], "greet");
    assert_eq!(
        doc[0]["children"][0]["selectionRange"]["start"],
        json!({"line": 3, "character": 8})
    );
    assert_eq!(doc[0]["range"]["end"]["line"], 5, "{doc}");

    let found = c.request("workspace/symbol", json!({"query": "make"}));
    let locs: Value = found
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["location"].clone())
        .collect();
    assert_eq!(spots(&locs), ["models.py:8:4"], "{found}");

    let items = c.request(
        "textDocument/prepareCallHierarchy",
        pos(&repo, "app/models.py", "def make", "make"),
    );
    assert_eq!(items[0]["name"], "make", "{items}");
    let incoming = c.request("callHierarchy/incomingCalls", json!({"item": items[0]}));
    assert_eq!(incoming.as_array().unwrap().len(), 1, "{incoming}");
    assert_eq!(incoming[0]["from"]["name"], "run");
    assert_eq!(
        incoming[0]["fromRanges"][0]["start"],
        json!({"line": 4, "character": 8})
    );

    let run = c.request(
        "textDocument/prepareCallHierarchy",
        pos(&repo, "app/main.py", "def run", "run"),
    );
    let outgoing = c.request("callHierarchy/outgoingCalls", json!({"item": run[0]}));
    let mut to: Vec<String> = outgoing
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            format!(
                "{} {}",
                o["to"]["name"].as_str().unwrap(),
                o["fromRanges"][0]["start"]["line"]
            )
        })
        .collect();
    to.sort();
    assert!(
        to.contains(&"make 4".to_string()) && to.contains(&"greet 5".to_string()),
        "{outgoing}"
    );
}

#[test]
fn unsaved_edits_are_indexed_and_closing_goes_back_to_the_file() {
    let repo = fixture("lsp");
    let mut c = Client::start(&repo);
    let path = "app/main.py";
    let on_disk = std::fs::read_to_string(repo.path.join(path)).unwrap();
    c.notify("textDocument/didOpen", json!({"textDocument": {"uri": uri(&repo, path), "languageId": "python", "version": 1, "text": on_disk}}));
    // An incremental change: a new caller of `make` appended, never saved.
    let lines = on_disk.lines().count();
    c.notify("textDocument/didChange", json!({
        "textDocument": {"uri": uri(&repo, path), "version": 2},
        "contentChanges": [{"range": {"start": {"line": lines, "character": 0}, "end": {"line": lines, "character": 0}}, "text": "\n\ndef later():\n    return make()\n"}]
    }));
    let make = || {
        with(
            pos(&repo, "app/models.py", "def make", "make"),
            "context",
            json!({"includeDeclaration": false}),
        )
    };
    let refs = c.request("textDocument/references", make());
    assert_eq!(
        spots(&refs),
        ["main.py:0:32", "main.py:15:11", "main.py:4:8"],
        "{refs}"
    );
    assert_eq!(
        std::fs::read_to_string(repo.path.join(path)).unwrap(),
        on_disk,
        "the file on disk is untouched"
    );
    // A definition in the unsaved text is found from the unsaved text.
    let later = c.request("workspace/symbol", json!({"query": "later"}));
    assert_eq!(later.as_array().unwrap().len(), 1, "{later}");
    c.notify(
        "textDocument/didClose",
        json!({"textDocument": {"uri": uri(&repo, path)}}),
    );
    let refs = c.request("textDocument/references", make());
    assert_eq!(spots(&refs), ["main.py:0:32", "main.py:4:8"], "{refs}");
    // An edit saved to disk by someone else is seen on the next request.
    repo.write(
        path,
        &format!("{on_disk}\n\ndef other():\n    return make()\n"),
    );
    let refs = c.request("textDocument/references", make());
    assert_eq!(refs.as_array().unwrap().len(), 3, "{refs}");
}

#[test]
fn the_session_follows_the_protocol_lifecycle() {
    let repo = fixture("lsp");
    let mut c = Client::spawn(&repo.path);
    let early = c.call(
        "textDocument/definition",
        pos(&repo, "app/main.py", "print(", "Greeter"),
    );
    assert_eq!(early["error"]["code"], -32002, "{early}");
    c.request("initialize", json!({"processId": null, "rootUri": null, "capabilities": {"general": {"positionEncodings": ["utf-8", "utf-16"]}}}));
    let unknown = c.call("textDocument/rename", json!({}));
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");
    let bad = c.call("textDocument/definition", json!({"textDocument": {"uri": "file:///elsewhere/x.py"}, "position": {"line": 0, "character": 0}}));
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    assert!(
        bad["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not a file of the worktree"),
        "{bad}"
    );
    assert_eq!(c.request("shutdown", Value::Null), Value::Null);
    c.notify("exit", Value::Null);
    assert_eq!(c.wait(), Some(0));

    // Without a shutdown first, `exit` ends the process with status 1.
    let mut c = Client::start(&repo);
    c.notify("exit", Value::Null);
    assert_eq!(c.wait(), Some(1));
}

#[test]
fn utf8_positions_when_the_client_offers_them() {
    let repo = fixture("lsp");
    let mut c = Client::spawn(&repo.path);
    let init = c.request("initialize", json!({"processId": null, "rootUri": null, "capabilities": {"general": {"positionEncodings": ["utf-8"]}}}));
    assert_eq!(init["capabilities"]["positionEncoding"], "utf-8");
    let at = super::at(&repo, "app/main.py", "print(", "Greeter");
    let def = c.request(
        "textDocument/definition",
        json!({"textDocument": {"uri": uri(&repo, "app/main.py")}, "position": {"line": at.line - 1, "character": at.col.unwrap() - 1}}),
    );
    assert_eq!(spots(&def), ["models.py:0:6"], "{def}");
}
