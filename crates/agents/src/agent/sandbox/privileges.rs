//! The launcher gives up every privilege before it runs the command: all capabilities
//! (bounding, permitted, effective, inheritable, ambient), root's implicit ones at the next
//! `exec` (securebits), and any gain through set-user-id or file capabilities
//! (`no_new_privs`).
//!
//! Without this a command run as root keeps `CAP_SYS_PTRACE`, `CAP_DAC_OVERRIDE` and the rest
//! inside the Landlock domain: it can read the engine's `/proc/<pid>/environ` (Landlock's
//! ptrace scoping yields to `CAP_SYS_PTRACE`), raise its own limits, or open raw sockets.

use super::SandboxError;

/// `_LINUX_CAPABILITY_VERSION_3`: two 32-bit words per set.
const CAPABILITY_VERSION_3: u32 = 0x2008_0522;

/// `SECBIT_NOROOT`, `SECBIT_NO_SETUID_FIXUP`, `SECBIT_NO_CAP_AMBIENT_RAISE`, each with its
/// lock bit: uid 0 gets no capabilities at `exec`, and none of this can be undone.
const SECUREBITS: libc::c_ulong = 0b1100_1111;

/// The capability that allows changing the bounding set and the securebits.
const CAP_SETPCAP: u32 = 8;

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// Drops every capability of this process and sets `no_new_privs`; fails when a capability is
/// left in any set afterwards.
pub(super) fn drop_all() -> Result<(), SandboxError> {
    let err = |what: &str| {
        SandboxError::Privileges(format!("{what}: {}", std::io::Error::last_os_error()))
    };
    // SAFETY: each prctl below changes only this process's own credentials or flags.
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return Err(err("cannot set no_new_privs"));
        }
        if libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        ) != 0
        {
            return Err(err("cannot clear the ambient capabilities"));
        }
    }
    let last = last_capability();
    if has_effective(CAP_SETPCAP)? {
        for cap in 0..=last {
            // SAFETY: as above.
            if unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap as libc::c_ulong, 0, 0, 0) } != 0 {
                return Err(err("cannot drop a bounding capability"));
            }
        }
        // SAFETY: as above.
        if unsafe { libc::prctl(libc::PR_SET_SECUREBITS, SECUREBITS, 0, 0, 0) } != 0 {
            return Err(err("cannot lock the securebits"));
        }
    }
    let header = CapHeader {
        version: CAPABILITY_VERSION_3,
        pid: 0,
    };
    let data = [CapData::default(); 2];
    // SAFETY: capset reads one header and two data words, both valid for the call.
    if unsafe { libc::syscall(libc::SYS_capset, &header, data.as_ptr()) } != 0 {
        return Err(err("cannot clear the capability sets"));
    }
    let left = current()?;
    if left
        .iter()
        .any(|d| d.effective | d.permitted | d.inheritable != 0)
    {
        return Err(SandboxError::Privileges(
            "capabilities remain after dropping them".into(),
        ));
    }
    // SAFETY: a read-only query.
    if unsafe { libc::getuid() } == 0
        && (0..=last).any(|c| unsafe { libc::prctl(libc::PR_CAPBSET_READ, c, 0, 0, 0) } > 0)
    {
        return Err(SandboxError::Privileges(
            "root kept a bounding capability".into(),
        ));
    }
    Ok(())
}

/// Returns the highest capability number the kernel knows.
fn last_capability() -> libc::c_ulong {
    std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
        .ok()
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or(63)
}

/// Returns this process's capability sets.
fn current() -> Result<[CapData; 2], SandboxError> {
    let header = CapHeader {
        version: CAPABILITY_VERSION_3,
        pid: 0,
    };
    let mut data = [CapData::default(); 2];
    // SAFETY: capget writes two data words into `data`, which has room for them.
    if unsafe { libc::syscall(libc::SYS_capget, &header, data.as_mut_ptr()) } != 0 {
        return Err(SandboxError::Privileges(format!(
            "cannot read the capabilities: {}",
            std::io::Error::last_os_error()
        )));
    }
    Ok(data)
}

/// Returns true if and only if capability `cap` is in the effective set.
fn has_effective(cap: u32) -> Result<bool, SandboxError> {
    let data = current()?;
    let word = data[(cap / 32) as usize].effective;
    Ok(word & (1 << (cap % 32)) != 0)
}
