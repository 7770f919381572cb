//! A WebDriver client for the tests: chromedriver over plain HTTP + JSON (ureq), Chromium
//! headless with a fresh profile.

#![allow(dead_code)]

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// Finds Chromium and chromedriver; `None` (with the reason printed) when they are missing
/// outside CI. Under `.ci/run` (`ORCHESTRA_REQUIRE_BROWSER=1`) a missing browser fails.
pub fn tools() -> Option<(String, String)> {
    let find = |names: &[&str]| {
        names.iter().find_map(|n| {
            let out = Command::new("sh")
                .arg("-c")
                .arg(format!("command -v {n}"))
                .output()
                .ok()?;
            let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
            (!path.is_empty()).then_some(path)
        })
    };
    let browser = find(&["chromium", "chromium-browser"]);
    let driver = find(&["chromedriver"]);
    match (browser, driver) {
        (Some(b), Some(d)) => Some((b, d)),
        _ if std::env::var_os("ORCHESTRA_REQUIRE_BROWSER").is_some() => {
            panic!(
                "chromium and chromedriver are required here (apt-get install chromium chromium-driver)"
            )
        }
        _ => {
            eprintln!(
                "skipped: chromium or chromedriver is not installed (apt-get install chromium chromium-driver)"
            );
            None
        }
    }
}

/// A chromedriver process with one headless browser session.
pub struct Browser {
    driver: Child,
    base: String,
    session: String,
    _profile: tempfile::TempDir,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(120)))
        .build()
        .into()
}

impl Browser {
    /// Starts chromedriver and a headless Chromium session.
    pub fn start(browser: &str, driver: &str) -> Browser {
        let port = free_port();
        let child = Command::new(driver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let base = format!("http://127.0.0.1:{port}");
        let deadline = Instant::now() + Duration::from_secs(60);
        while agent().get(&format!("{base}/status")).call().is_err() {
            assert!(Instant::now() < deadline, "chromedriver did not start");
            std::thread::sleep(Duration::from_millis(100));
        }
        let profile = tempfile::tempdir().unwrap();
        let args = [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
            "--window-size=1400,1000",
        ];
        let mut all: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        all.push(format!("--user-data-dir={}", profile.path().display()));
        let caps = json!({"capabilities": {"alwaysMatch": {"browserName": "chrome",
            "goog:chromeOptions": {"binary": browser, "args": all}}}});
        let mut b = Browser {
            driver: child,
            base,
            session: String::new(),
            _profile: profile,
        };
        let answer = b.call("POST", "/session", caps);
        b.session = answer["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session: {answer}"))
            .to_string();
        b
    }

    fn call(&self, method: &str, path: &str, body: Value) -> Value {
        let url = format!("{}{path}", self.base);
        let resp = match method {
            "GET" => agent().get(&url).call(),
            "DELETE" => agent().delete(&url).call(),
            _ => agent()
                .post(&url)
                .header("Content-Type", "application/json")
                .send(body.to_string()),
        };
        let mut resp = resp.unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        let text = resp.body_mut().read_to_string().unwrap();
        let v: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        // A command's answer is its `value`; an error's `value` holds `error`, kept under
        // `error` so every caller can tell.
        match v.get("value").cloned() {
            Some(value) if value.get("error").is_some() && path != "/session" => {
                json!({ "error": value })
            }
            Some(value) => value,
            None => v,
        }
    }

    fn session(&self, method: &str, path: &str, body: Value) -> Value {
        self.call(method, &format!("/session/{}{path}", self.session), body)
    }

    pub fn goto(&self, url: &str) {
        let r = self.session("POST", "/url", json!({"url": url}));
        assert!(r.get("error").is_none(), "{r}");
    }

    /// Runs `script` in the page and returns its value.
    pub fn eval(&self, script: &str) -> Value {
        self.session(
            "POST",
            "/execute/sync",
            json!({"script": script, "args": []}),
        )
    }

    /// Waits until `script` returns something truthy, then returns it.
    pub fn wait_for(&self, what: &str, script: &str, timeout: Duration) -> Value {
        let deadline = Instant::now() + timeout;
        loop {
            let v = self.eval(script);
            let truthy = match &v {
                Value::Null | Value::Bool(false) => false,
                Value::String(s) => !s.is_empty(),
                Value::Object(o) => !o.contains_key("error"),
                _ => true,
            };
            if truthy {
                return v;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}; page: {}",
                self.eval("return document.body ? document.body.innerText : ''")
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Returns the element id of the first match of the CSS `selector`.
    pub fn find(&self, selector: &str) -> String {
        let v = self.session(
            "POST",
            "/element",
            json!({"using": "css selector", "value": selector}),
        );
        v.as_object()
            .and_then(|o| o.values().next())
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("no element {selector}: {v}"))
            .to_string()
    }

    /// Runs an element command on the first match of `selector`, again when the page redrew
    /// the element in between (a live update).
    fn on_element(&self, selector: &str, command: &str, body: Value) {
        for _ in 0..50 {
            let id = self.find(selector);
            let r = self.session("POST", &format!("/element/{id}/{command}"), body.clone());
            match r.get("error") {
                None => return,
                Some(e) if e.to_string().contains("stale element") => {
                    std::thread::sleep(Duration::from_millis(50));
                }
                Some(_) => panic!("{command} {selector}: {r}"),
            }
        }
        panic!("{command} {selector}: the element kept being redrawn");
    }

    pub fn click(&self, selector: &str) {
        self.on_element(selector, "click", json!({}));
    }

    pub fn type_into(&self, selector: &str, text: &str) {
        self.on_element(selector, "value", json!({ "text": text }));
    }

    /// The page as a PNG.
    pub fn screenshot(&self) -> Vec<u8> {
        let v = self.session("GET", "/screenshot", Value::Null);
        base64_decode(v.as_str().unwrap_or_else(|| panic!("no screenshot: {v}")))
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let _ = self.session("DELETE", "", Value::Null);
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

fn base64_decode(text: &str) -> Vec<u8> {
    let value = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let digits: Vec<u32> = text.bytes().filter_map(value).collect();
    let mut out = Vec::with_capacity(digits.len() * 3 / 4);
    for chunk in digits.chunks(4) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, d)| acc | (d << (18 - 6 * i)));
        out.push((n >> 16) as u8);
        if chunk.len() > 2 {
            out.push((n >> 8) as u8);
        }
        if chunk.len() > 3 {
            out.push(n as u8);
        }
    }
    out
}
