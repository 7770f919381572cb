//! API keys handed to the process in its environment, taken out of it at start.
//!
//! A key left in the environment reaches every process the engine starts (git, setup and
//! validation commands) and stays readable in `/proc/<pid>/environ` for as long as the engine
//! runs. So the binary, first thing, moves every variable named like an API key (`*_API_KEY`)
//! into this process-wide store, removes it from the environment and overwrites its bytes in
//! the block the kernel shows as `/proc/self/environ`. Profiles read keys through [`var`];
//! the external worker command gets them back explicitly ([`stashed`]), since the agent CLI it
//! usually is needs its own key.
//!
//! Besides `*_API_KEY`, names that join a model provider's name with `KEY`, `TOKEN` or
//! `SECRET` (`MY_ANTHROPIC_TOKEN`, `OPENAI_SECRET`) are taken. A variable a profile's
//! `api_key_env` names otherwise stays in the environment (it is known only once the
//! configuration is read, when other threads may run), but is [`withhold`]en: every command
//! the engine starts — git, worker, setup and validation commands — runs without it.

use std::sync::{Mutex, OnceLock};

static STASH: OnceLock<Vec<(String, String)>> = OnceLock::new();

/// The variable holding the token `packet exec` fetches and pushes with (a CI runner's
/// repository token): taken out of the environment like a key, but never given to a worker.
pub const REMOTE_TOKEN_VAR: &str = "ORCHESTRA_REMOTE_TOKEN";

static REMOTE_TOKEN: OnceLock<Option<String>> = OnceLock::new();

/// Names of variables kept from every command the engine starts.
static WITHHELD: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Model providers whose name in a variable holding a key, token or secret marks it a key.
const PROVIDERS: &[&str] = &[
    "ANTHROPIC",
    "OPENAI",
    "GEMINI",
    "GOOGLE_AI",
    "OPENROUTER",
    "MISTRAL",
    "GROQ",
    "DEEPSEEK",
    "XAI",
    "COHERE",
    "TOGETHER",
    "FIREWORKS",
    "HUGGINGFACE",
    "DASHSCOPE",
    "CLAUDE",
    "AZURE_OPENAI",
];

/// Returns true if and only if a variable named `name` is taken out of the environment.
pub fn is_secret_name(name: &str) -> bool {
    if name.ends_with("_API_KEY") && name.len() > "_API_KEY".len() {
        return true;
    }
    let words: Vec<&str> = name.split('_').collect();
    let has = |w: &str| words.contains(&w);
    names_provider(name) && (has("KEY") || has("TOKEN") || has("SECRET"))
}

/// Returns true if and only if the variable `name` names a model provider among its
/// underscore-separated words (`ANTHROPIC_BASE_URL`, `MY_OPENAI_ORG`).
pub fn names_provider(name: &str) -> bool {
    let words: Vec<&str> = name.split('_').collect();
    PROVIDERS.iter().any(|p| {
        let parts: Vec<&str> = p.split('_').collect();
        words
            .windows(parts.len())
            .any(|win| win == parts.as_slice())
    })
}

/// Keeps the variables `names` (a profile's `api_key_env`) from every command the engine
/// starts from now on.
pub fn withhold<'a>(names: impl IntoIterator<Item = &'a str>) {
    if let Ok(mut w) = WITHHELD.lock() {
        for name in names {
            if !w.iter().any(|n| n == name) {
                w.push(name.to_string());
            }
        }
    }
}

/// Returns the names of variables a started command must not inherit: those taken out of
/// the environment (in case a library put one back) and those [`withhold`] named.
pub fn withheld() -> Vec<String> {
    let mut out: Vec<String> = stashed().iter().map(|(n, _)| n.clone()).collect();
    out.push(REMOTE_TOKEN_VAR.to_string());
    if let Ok(w) = WITHHELD.lock() {
        out.extend(w.iter().cloned());
    }
    out
}

/// Moves every variable named like an API key out of the environment into the store, once.
///
/// # Safety
///
/// Must be called while the process has a single thread (first thing in `main`): it changes
/// the environment, which other threads could be reading through libc at the same time.
pub unsafe fn take_from_environment() {
    let mut taken = Vec::new();
    for (name, value) in std::env::vars_os() {
        let (Some(name), Some(value)) = (name.to_str(), value.to_str()) else {
            continue;
        };
        if !is_secret_name(name) {
            continue;
        }
        taken.push((name.to_string(), value.to_string()));
    }
    for (name, _) in &taken {
        // SAFETY: the caller guarantees a single thread (see above).
        unsafe { forget(name) };
    }
    let _ = STASH.set(taken);
    let token = std::env::var(REMOTE_TOKEN_VAR)
        .ok()
        .filter(|t| !t.trim().is_empty());
    // SAFETY: as above.
    unsafe { forget(REMOTE_TOKEN_VAR) };
    let _ = REMOTE_TOKEN.set(token);
}

/// Returns the token `packet exec` fetches and pushes with ([`REMOTE_TOKEN_VAR`]), if the
/// process was given one.
pub fn remote_token() -> Option<&'static str> {
    REMOTE_TOKEN.get().and_then(Option::as_deref)
}

/// Removes `name` from the environment and zeroes the bytes of its value where libc had them
/// (for the initial environment, the block `/proc/self/environ` shows).
///
/// # Safety
///
/// As [`take_from_environment`]: single-threaded only.
unsafe fn forget(name: &str) {
    let Ok(c_name) = std::ffi::CString::new(name) else {
        return;
    };
    // SAFETY: getenv returns a pointer into the environment or null; the caller guarantees
    // that no other thread changes the environment meanwhile.
    let value = unsafe { libc::getenv(c_name.as_ptr()) };
    let len = if value.is_null() {
        0
    } else {
        // SAFETY: a non-null getenv result is a NUL-terminated string.
        unsafe { libc::strlen(value) }
    };
    // SAFETY: single-threaded (the caller's guarantee); this unlinks the entry from `environ`
    // without freeing the string it pointed at.
    unsafe { std::env::remove_var(name) };
    if len > 0 {
        // SAFETY: `value` points at `len` writable bytes (the environment strings live in
        // writable memory) that nothing references any more: the entry is gone from `environ`.
        unsafe { std::ptr::write_bytes(value, 0, len) };
    }
}

/// Marks this process non-dumpable: its `/proc/<pid>/environ`, `mem` and `maps` then open only
/// for a process holding `CAP_SYS_PTRACE` (which sandboxed commands never have), not for every
/// process of the same user, and a crash writes no core file holding its memory.
pub fn make_undumpable() {
    // SAFETY: prctl with PR_SET_DUMPABLE only changes this process's flag.
    #[cfg(target_os = "linux")]
    unsafe {
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
    }
}

/// Returns the value of `name`: the stored key when it was taken from the environment,
/// otherwise the environment's value.
pub fn var(name: &str) -> Option<String> {
    STASH
        .get()
        .and_then(|s| s.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone()))
        .or_else(|| std::env::var(name).ok())
}

/// Returns the values of every key the engine knows of — those taken out of the environment
/// and those of the variables [`withhold`] named — for scrubbing what it keeps of a command's
/// output.
pub fn values() -> Vec<String> {
    let mut out: Vec<String> = stashed().iter().map(|(_, v)| v.clone()).collect();
    out.extend(remote_token().map(str::to_string));
    if let Ok(w) = WITHHELD.lock() {
        out.extend(w.iter().filter_map(|n| std::env::var(n).ok()));
    }
    out
}

/// Returns every variable taken out of the environment, for the command that must get it.
pub fn stashed() -> &'static [(String, String)] {
    STASH.get().map_or(&[], Vec::as_slice)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_key_names_are_taken() {
        assert!(is_secret_name("OPENAI_API_KEY"));
        assert!(is_secret_name("MY_SERVICE_API_KEY"));
        assert!(!is_secret_name("_API_KEY"));
        assert!(!is_secret_name("PATH"));
        assert!(!is_secret_name("ORCHESTRA_API_KEY_ENV"));
        assert!(is_secret_name("MY_ANTHROPIC_TOKEN"));
        assert!(is_secret_name("OPENAI_SECRET"));
        assert!(is_secret_name("AZURE_OPENAI_KEY"));
        assert!(!is_secret_name("ANTHROPIC_BASE_URL"));
        assert!(!is_secret_name("GITHUB_TOKEN"));
        assert!(!is_secret_name("MAXAI_TOKEN"));
        withhold(["SOME_PROFILE_VAR"]);
        assert!(withheld().contains(&"SOME_PROFILE_VAR".to_string()));
        // Without a store, the environment answers.
        assert_eq!(var("PATH"), std::env::var("PATH").ok());
    }
}
