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
//! Variables named otherwise (a profile's `api_key_env` may name anything) stay in the
//! environment; name the variable `…_API_KEY` to keep it out.

use std::sync::OnceLock;

static STASH: OnceLock<Vec<(String, String)>> = OnceLock::new();

/// Returns true if and only if a variable named `name` is taken out of the environment.
pub fn is_secret_name(name: &str) -> bool {
    name.ends_with("_API_KEY") && name.len() > "_API_KEY".len()
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
        // Without a store, the environment answers.
        assert_eq!(var("PATH"), std::env::var("PATH").ok());
    }
}
