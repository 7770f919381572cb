//! How each agent CLI is run headless: its program, flags, how it reads the prompt, where our
//! navigation MCP server is registered for it (a settings file in the packet's private
//! temporary directory, never the user's home or the worktree), where it keeps its state, how
//! a session is resumed, and which output format it prints.
//!
//! The built-in adapters are pinned to the versions the user guide lists
//! (`docs/src/agents.md`); `[agents.cli.<name>]` changes a built-in (command, extra arguments,
//! model, environment) or describes a CLI we do not know.

use std::path::{Path, PathBuf};

use serde_json::json;

use super::parse::Format;
use orchestra_core::config::CliAgentConfig;

/// The built-in adapters' names, in the order `agents` lists them.
pub const BUILTIN: [&str; 5] = ["claude", "codex", "gemini", "opencode", "qwen"];

/// How a CLI gets the packet's prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PromptVia {
    /// As the last argument.
    Arg,
    /// On standard input.
    Stdin,
    /// As the value of this flag (e.g. `-p`).
    Flag(String),
}

/// One agent CLI as the worker runs it.
#[derive(Debug, Clone, PartialEq)]
pub struct Adapter {
    pub name: String,
    /// The program (a name on `PATH` or a path).
    pub command: String,
    /// Extra arguments from the configuration, before the adapter's own.
    pub args: Vec<String>,
    pub prompt: PromptVia,
    pub format: Format,
    pub model: Option<String>,
    /// Extra environment from the configuration (no secrets: those come from the environment).
    pub env: Vec<(String, String)>,
    /// True for a built-in adapter: it knows its flags, MCP registration and resumption.
    pub builtin: bool,
}

/// The packet-specific parts of one invocation.
pub struct Call<'a> {
    pub worktree: &'a Path,
    /// The packet's private temporary directory: settings files, the CLI's state, the prompt.
    pub tmp: &'a Path,
    /// The file holding the prompt.
    pub prompt_file: &'a Path,
    /// Our MCP server: program and arguments (`git-orchestra -C <worktree> mcp`).
    pub mcp: (&'a Path, Vec<String>),
    /// The CLI's session to continue (a fix round), when it gave one.
    pub resume: Option<&'a str>,
    /// True when the CLI runs inside our sandbox (it may then skip its own).
    pub confined: bool,
}

/// The shell command line and environment of one invocation, and the settings files it reads.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Invocation {
    pub command: String,
    pub env: Vec<(String, String)>,
    /// Files to write before starting it: path and contents.
    pub files: Vec<(PathBuf, String)>,
}

/// Why an adapter cannot be built.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AdapterError {
    #[error(
        "unknown agent CLI `{name}`: built in are {}; describe another one in .orchestra/config.toml as [agents.cli.{name}] with `command` and `output`",
        BUILTIN.join(", ")
    )]
    Unknown { name: String },
    #[error(
        "[agents.cli.{name}] output = \"{output}\" is not a known format ({})",
        Format::NAMES
    )]
    Format { name: String, output: String },
    #[error(
        "[agents.cli.{name}] prompt = \"{prompt}\" is not known: use \"arg\", \"stdin\" or \"flag:<flag>\" (e.g. \"flag:-p\")"
    )]
    Prompt { name: String, prompt: String },
}

/// Returns the adapter named `name`: a built-in one changed by `config` when given, or the
/// CLI `config` describes.
pub fn adapter(name: &str, config: Option<&CliAgentConfig>) -> Result<Adapter, AdapterError> {
    let mut a = match builtin(name) {
        Some(a) => a,
        None => {
            let c = config.ok_or_else(|| AdapterError::Unknown { name: name.into() })?;
            Adapter {
                name: name.into(),
                command: c.command.clone().unwrap_or_else(|| name.to_string()),
                args: Vec::new(),
                prompt: PromptVia::Arg,
                format: Format::Text,
                model: None,
                env: Vec::new(),
                builtin: false,
            }
        }
    };
    let Some(c) = config else { return Ok(a) };
    if let Some(cmd) = &c.command {
        a.command = cmd.clone();
    }
    a.args.extend(c.args.iter().flatten().cloned());
    a.model = c.model.clone().or(a.model);
    a.env
        .extend(c.env.iter().flatten().map(|(k, v)| (k.clone(), v.clone())));
    if let Some(out) = &c.output {
        a.format = Format::from_name(out).ok_or_else(|| AdapterError::Format {
            name: name.into(),
            output: out.clone(),
        })?;
    }
    if let Some(p) = &c.prompt {
        a.prompt = match (p.as_str(), p.strip_prefix("flag:")) {
            ("arg", _) => PromptVia::Arg,
            ("stdin", _) => PromptVia::Stdin,
            (_, Some(flag)) if !flag.is_empty() => PromptVia::Flag(flag.to_string()),
            _ => {
                return Err(AdapterError::Prompt {
                    name: name.into(),
                    prompt: p.clone(),
                });
            }
        };
    }
    Ok(a)
}

fn builtin(name: &str) -> Option<Adapter> {
    let (prompt, format) = match name {
        "claude" => (PromptVia::Stdin, Format::Claude),
        "codex" => (PromptVia::Stdin, Format::Codex),
        "gemini" => (PromptVia::Flag("-p".into()), Format::Gemini),
        // Qwen Code's stream-json follows Claude Code's (system/assistant/user/result lines).
        "qwen" => (PromptVia::Flag("-p".into()), Format::Claude),
        "opencode" => (PromptVia::Arg, Format::Opencode),
        _ => return None,
    };
    Some(Adapter {
        name: name.into(),
        command: name.into(),
        args: Vec::new(),
        prompt,
        format,
        model: None,
        env: Vec::new(),
        builtin: true,
    })
}

/// Returns `text` quoted for `sh`.
pub fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

impl Adapter {
    /// Returns how to run this CLI for `call`.
    pub fn invocation(&self, call: &Call<'_>) -> Invocation {
        let mut inv = Invocation::default();
        let mut args: Vec<String> = Vec::new();
        if self.builtin {
            self.builtin_args(call, &mut args, &mut inv);
        }
        args.extend(self.args.iter().cloned());
        if let Some(m) = &self.model {
            args.extend(["--model".to_string(), m.clone()]);
        }
        let mut line = quote(&self.command);
        for a in &args {
            line.push(' ');
            line.push_str(&quote(a));
        }
        let file = quote(&call.prompt_file.to_string_lossy());
        match &self.prompt {
            PromptVia::Arg => line.push_str(&format!(" \"$(cat {file})\"")),
            PromptVia::Flag(flag) => line.push_str(&format!(" {} \"$(cat {file})\"", quote(flag))),
            PromptVia::Stdin => line.push_str(&format!(" < {file}")),
        }
        // Telemetry and update checks off; the CLI's own settings stay the user's.
        for (k, v) in [
            ("DISABLE_TELEMETRY", "1"),
            ("DISABLE_AUTOUPDATER", "1"),
            ("DISABLE_ERROR_REPORTING", "1"),
            ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
            ("GEMINI_TELEMETRY_ENABLED", "false"),
            ("QWEN_TELEMETRY_ENABLED", "false"),
            ("OPENCODE_DISABLE_AUTOUPDATE", "1"),
            ("OPENCODE_DISABLE_SHARE", "1"),
            ("NO_UPDATE_NOTIFIER", "1"),
            ("NO_COLOR", "1"),
        ] {
            inv.env.push((k.to_string(), v.to_string()));
        }
        inv.env.extend(self.env.iter().cloned());
        inv.command = line;
        inv
    }

    /// The built-in adapter's own flags, MCP registration and state directories.
    fn builtin_args(&self, call: &Call<'_>, args: &mut Vec<String>, inv: &mut Invocation) {
        let (program, mcp_args) = (&call.mcp.0.to_string_lossy().into_owned(), &call.mcp.1);
        let servers = json!({"orchestra": {"command": program, "args": mcp_args}});
        let tmp = call.tmp;
        let mut push = |items: &[&str]| args.extend(items.iter().map(|s| s.to_string()));
        match self.name.as_str() {
            "claude" => {
                let cfg = tmp.join("claude-mcp.json");
                inv.files
                    .push((cfg.clone(), json!({"mcpServers": servers}).to_string()));
                // Its state (sessions, settings it writes) in the private directory, so a
                // fix round in the same directory can resume the session.
                inv.env.push((
                    "CLAUDE_CONFIG_DIR".into(),
                    tmp.join("claude").to_string_lossy().into_owned(),
                ));
                push(&["-p", "--output-format", "stream-json", "--verbose"]);
                push(&[
                    "--mcp-config",
                    &cfg.to_string_lossy(),
                    "--strict-mcp-config",
                ]);
                push(&["--permission-mode", "acceptEdits"]);
                push(&[
                    "--allowedTools",
                    "Bash,Read,Edit,MultiEdit,Write,Glob,Grep,LS,mcp__orchestra",
                ]);
                if let Some(id) = call.resume {
                    push(&["--resume", id]);
                }
            }
            "codex" => {
                inv.env.push((
                    "CODEX_HOME".into(),
                    tmp.join("codex").to_string_lossy().into_owned(),
                ));
                push(&["exec"]);
                if let Some(id) = call.resume {
                    push(&["resume", id]);
                }
                push(&["--json", "--skip-git-repo-check"]);
                if call.confined {
                    // Our sandbox confines it; its own cannot nest inside ours.
                    push(&["--dangerously-bypass-approvals-and-sandbox"]);
                } else {
                    push(&["--sandbox", "workspace-write"]);
                }
                let quoted: Vec<String> = mcp_args.iter().map(|a| json!(a).to_string()).collect();
                push(&[
                    "-c",
                    &format!("mcp_servers.orchestra.command={}", json!(program)),
                ]);
                push(&[
                    "-c",
                    &format!("mcp_servers.orchestra.args=[{}]", quoted.join(",")),
                ]);
                push(&["-"]);
            }
            "gemini" | "qwen" => {
                let file = tmp.join(format!("{}-settings.json", self.name));
                let mut server = servers.clone();
                server["orchestra"]["trust"] = json!(true);
                // The worktree is the engine's, trusted; headless Gemini CLI needs its auth
                // method chosen (an API key: the sandbox hides a login under the home).
                let mut settings = json!({
                    "mcpServers": server,
                    "telemetry": {"enabled": false},
                    "security": {"folderTrust": {"enabled": false}}
                });
                if self.name == "gemini" {
                    settings["security"]["auth"] = json!({"selectedType": "gemini-api-key"});
                }
                inv.files.push((file.clone(), settings.to_string()));
                let var = if self.name == "gemini" {
                    "GEMINI_CLI_SYSTEM_SETTINGS_PATH"
                } else {
                    "QWEN_CODE_SYSTEM_SETTINGS_PATH"
                };
                inv.env
                    .push((var.into(), file.to_string_lossy().into_owned()));
                push(&["--output-format", "stream-json", "--approval-mode", "yolo"]);
                if let Some(id) = call.resume {
                    push(&["--resume", id]);
                }
            }
            "opencode" => {
                let file = tmp.join("opencode.json");
                let mut command = vec![program.clone()];
                command.extend(mcp_args.iter().cloned());
                let config = json!({
                    "$schema": "https://opencode.ai/config.json",
                    "mcp": {"orchestra": {"type": "local", "command": command, "enabled": true}},
                    "permission": {"edit": "allow", "bash": "allow", "webfetch": "allow"},
                    "autoupdate": false,
                    "share": "disabled"
                });
                inv.files.push((file.clone(), config.to_string()));
                inv.env.push((
                    "OPENCODE_CONFIG".into(),
                    file.to_string_lossy().into_owned(),
                ));
                push(&["run", "--format", "json"]);
                if let Some(id) = call.resume {
                    push(&["--session", id]);
                }
            }
            _ => {}
        }
    }

    /// True when a fix round can continue this CLI's session.
    pub fn resumes(&self) -> bool {
        self.builtin
    }

    /// Returns what to do about an authentication failure this CLI reported in `text`, or
    /// `None` when `text` shows none.
    pub fn auth_hint(&self, text: &str) -> Option<String> {
        let lower = text.to_ascii_lowercase();
        let signs = [
            "authentication_failed",
            "invalid api key",
            "invalid x-api-key",
            "authentication_error",
            "please run /login",
            "not logged in",
            "401 unauthorized",
            "status 401",
            "unauthorized",
            "api key not valid",
            "missing api key",
            "no api key",
            "please set an auth method",
            "auth method",
            "login required",
        ];
        if !signs.iter().any(|s| lower.contains(s)) {
            return None;
        }
        let fix = match self.name.as_str() {
            "claude" => {
                "set ANTHROPIC_API_KEY, or CLAUDE_CODE_OAUTH_TOKEN from `claude setup-token` (a login under your home is not readable inside the sandbox)"
            }
            "codex" => {
                "set OPENAI_API_KEY (or CODEX_API_KEY); `codex login` keeps its login under ~/.codex, which the sandbox does not let it read"
            }
            "gemini" => "set GEMINI_API_KEY (or GOOGLE_API_KEY with GOOGLE_GENAI_USE_VERTEXAI)",
            "qwen" => {
                "set OPENAI_API_KEY with OPENAI_BASE_URL and OPENAI_MODEL, or DASHSCOPE_API_KEY"
            }
            "opencode" => {
                "set the provider's key variable (e.g. ANTHROPIC_API_KEY or OPENAI_API_KEY); `opencode auth login` stores it under your home"
            }
            _ => "give the CLI its key in an environment variable named *_API_KEY",
        };
        Some(format!("{} could not authenticate: {fix}", self.name))
    }
}
