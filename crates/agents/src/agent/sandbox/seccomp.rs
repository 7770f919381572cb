//! A seccomp filter for the command: what Landlock does not cover.
//!
//! Landlock (ABI ≤ 7) confines TCP only: a command without the network could still send UDP
//! (DNS tunnels, any datagram), talk to local daemons over pathname UNIX sockets (a Docker or
//! SSH agent socket, D-Bus), or open netlink, packet and other sockets. Without the network
//! this filter lets `socket(2)` create only TCP sockets (`AF_INET`/`AF_INET6`, `SOCK_STREAM`,
//! protocol 0 or TCP — Landlock then decides `connect` and `bind`); every other family and
//! type fails with `EPERM`, `AF_UNIX` included. `socketpair(2)` stays allowed: its two ends
//! reach nothing outside the process tree, and runtimes (Python's asyncio, libuv) need it.
//! `sendto`/`sendmsg` with `MSG_FASTOPEN`, which connects without `connect(2)`, fail too.
//!
//! Always, network or not: `io_uring` (its operations create and connect sockets without the
//! system calls above; `ENOSYS`, so runtimes fall back to plain calls), `ptrace` and
//! `process_vm_*` (no reading other processes), the kernel keyrings (`keyctl`, `add_key`,
//! `request_key`: a session keyring may hold credentials), `bpf`, `perf_event_open` and
//! `userfaultfd` fail with `EPERM`. A system call made through another architecture's table
//! (x32, i386 compatibility) kills the process: the filter reads only the native numbers.

use super::SandboxError;

// Classic BPF, as the kernel's `linux/filter.h` and `linux/seccomp.h` define it.
/// `BPF_LD | BPF_W | BPF_ABS` (the first two are 0).
const BPF_LD_W_ABS: u16 = 0x20;
const BPF_JMP_JEQ_K: u16 = 0x05 | 0x10;
const BPF_JMP_JGE_K: u16 = 0x05 | 0x30;
const BPF_JMP_JSET_K: u16 = 0x05 | 0x40;
const BPF_ALU_AND_K: u16 = 0x04 | 0x50;
const BPF_RET_K: u16 = 0x06;
const RET_ALLOW: u32 = 0x7fff_0000;
const RET_ERRNO: u32 = 0x0005_0000;
const RET_KILL_PROCESS: u32 = 0x8000_0000;
const SECCOMP_MODE_FILTER: libc::c_ulong = 2;
const MSG_FASTOPEN: u32 = 0x2000_0000;
const SOCK_TYPE_MASK: u32 = 0xf;

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xc000_003e;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xc000_00b7;

/// Offsets in `struct seccomp_data`: the call number, the architecture, and the low 32 bits
/// of argument `n` (both supported architectures are little-endian).
const NR: u32 = 0;
const ARCH: u32 = 4;
const fn arg(n: u32) -> u32 {
    16 + 8 * n
}

/// Where a jump goes: the next instruction or a label.
#[derive(Clone, Copy)]
enum To {
    Next,
    Label(&'static str),
}

enum Op {
    Stmt(u16, u32),
    Jump(u16, u32, To, To),
    Label(&'static str),
}

/// Returns the filter for a command with or without the network.
fn program(network: bool) -> Vec<Op> {
    use Op::{Jump, Label, Stmt};
    use To::{Label as L, Next};
    let deny = |errno: i32| Stmt(BPF_RET_K, RET_ERRNO | errno as u32);
    let mut ops = vec![
        Stmt(BPF_LD_W_ABS, ARCH),
        Jump(BPF_JMP_JEQ_K, AUDIT_ARCH, Next, L("kill")),
        Stmt(BPF_LD_W_ABS, NR),
    ];
    #[cfg(target_arch = "x86_64")]
    ops.push(Jump(BPF_JMP_JGE_K, 0x4000_0000, L("kill"), Next));
    let nosys = [
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
    ];
    let eperm = [
        libc::SYS_ptrace,
        libc::SYS_process_vm_readv,
        libc::SYS_process_vm_writev,
        libc::SYS_keyctl,
        libc::SYS_add_key,
        libc::SYS_request_key,
        libc::SYS_bpf,
        libc::SYS_perf_event_open,
        libc::SYS_userfaultfd,
    ];
    for nr in nosys {
        ops.push(Jump(BPF_JMP_JEQ_K, nr as u32, L("enosys"), Next));
    }
    for nr in eperm {
        ops.push(Jump(BPF_JMP_JEQ_K, nr as u32, L("eperm"), Next));
    }
    if !network {
        ops.extend([
            Jump(BPF_JMP_JEQ_K, libc::SYS_socket as u32, L("socket"), Next),
            Jump(BPF_JMP_JEQ_K, libc::SYS_sendto as u32, L("flags3"), Next),
            Jump(BPF_JMP_JEQ_K, libc::SYS_sendmmsg as u32, L("flags3"), Next),
            Jump(BPF_JMP_JEQ_K, libc::SYS_sendmsg as u32, L("flags2"), Next),
        ]);
    }
    ops.push(Stmt(BPF_RET_K, RET_ALLOW));
    if !network {
        ops.extend([
            // socket(domain, type, protocol): TCP over IPv4 or IPv6 only.
            Label("socket"),
            Stmt(BPF_LD_W_ABS, arg(0)),
            Jump(BPF_JMP_JEQ_K, libc::AF_INET as u32, L("type"), Next),
            Jump(BPF_JMP_JEQ_K, libc::AF_INET6 as u32, L("type"), L("eperm")),
            Label("type"),
            Stmt(BPF_LD_W_ABS, arg(1)),
            Stmt(BPF_ALU_AND_K, SOCK_TYPE_MASK),
            Jump(BPF_JMP_JEQ_K, libc::SOCK_STREAM as u32, Next, L("eperm")),
            Stmt(BPF_LD_W_ABS, arg(2)),
            Jump(BPF_JMP_JEQ_K, 0, L("allow"), Next),
            Jump(
                BPF_JMP_JEQ_K,
                libc::IPPROTO_TCP as u32,
                L("allow"),
                L("eperm"),
            ),
            // sendto/sendmmsg (flags in argument 3) and sendmsg (argument 2): no fast open.
            Label("flags3"),
            Stmt(BPF_LD_W_ABS, arg(3)),
            Jump(BPF_JMP_JSET_K, MSG_FASTOPEN, L("eperm"), L("allow")),
            Label("flags2"),
            Stmt(BPF_LD_W_ABS, arg(2)),
            Jump(BPF_JMP_JSET_K, MSG_FASTOPEN, L("eperm"), L("allow")),
        ]);
    }
    // The outcomes last: classic BPF jumps only forward.
    ops.extend([
        Label("allow"),
        Stmt(BPF_RET_K, RET_ALLOW),
        Label("kill"),
        Stmt(BPF_RET_K, RET_KILL_PROCESS),
        Label("enosys"),
        deny(libc::ENOSYS),
        Label("eperm"),
        deny(libc::EPERM),
    ]);
    ops
}

/// Returns the filter the supervised command installs on itself: no signal, queued signal or
/// pidfd may address the supervising launcher `launcher` (nor its process group, nor every
/// process at once), so the command cannot kill the process that cleans up after it.
pub(super) fn protect(launcher: libc::pid_t) -> Result<Vec<libc::sock_filter>, SandboxError> {
    use Op::{Jump, Label, Stmt};
    use To::{Label as L, Next};
    let pid = launcher as u32;
    let mut ops = vec![Stmt(BPF_LD_W_ABS, NR)];
    for nr in [
        libc::SYS_kill,
        libc::SYS_tkill,
        libc::SYS_tgkill,
        libc::SYS_rt_sigqueueinfo,
        libc::SYS_rt_tgsigqueueinfo,
        libc::SYS_pidfd_open,
    ] {
        ops.push(Jump(BPF_JMP_JEQ_K, nr as u32, L("target"), Next));
    }
    ops.extend([
        Stmt(BPF_RET_K, RET_ALLOW),
        Label("target"),
        Stmt(BPF_LD_W_ABS, arg(0)),
        Jump(BPF_JMP_JEQ_K, pid, L("eperm"), Next),
        Jump(BPF_JMP_JEQ_K, pid.wrapping_neg(), L("eperm"), Next),
        Jump(BPF_JMP_JEQ_K, u32::MAX, L("eperm"), Next),
        Stmt(BPF_RET_K, RET_ALLOW),
        Label("eperm"),
        Stmt(BPF_RET_K, RET_ERRNO | libc::EPERM as u32),
    ]);
    assemble(&ops)
}

/// Returns the program with its labels resolved to relative jumps.
fn assemble(ops: &[Op]) -> Result<Vec<libc::sock_filter>, SandboxError> {
    let mut labels = std::collections::HashMap::new();
    let mut at = 0usize;
    for op in ops {
        match op {
            Op::Label(name) => {
                labels.insert(*name, at);
            }
            _ => at += 1,
        }
    }
    let mut out = Vec::with_capacity(at);
    for op in ops {
        let here = out.len();
        let offset = |to: To| -> Result<u8, SandboxError> {
            let target = match to {
                To::Next => here + 1,
                To::Label(name) => *labels.get(name).ok_or_else(|| {
                    SandboxError::Seccomp(format!("the filter jumps to an unknown label {name}"))
                })?,
            };
            target
                .checked_sub(here + 1)
                .and_then(|d| u8::try_from(d).ok())
                .ok_or_else(|| SandboxError::Seccomp("a filter jump is out of range".into()))
        };
        match *op {
            Op::Label(_) => {}
            Op::Stmt(code, k) => out.push(libc::sock_filter {
                code,
                jt: 0,
                jf: 0,
                k,
            }),
            Op::Jump(code, k, t, f) => out.push(libc::sock_filter {
                code,
                jt: offset(t)?,
                jf: offset(f)?,
                k,
            }),
        }
    }
    Ok(out)
}

/// Installs the filter on this process (and so on everything it executes); `no_new_privs` must
/// be set already.
pub(super) fn install(network: bool) -> Result<(), SandboxError> {
    let filter = assemble(&program(network))?;
    let prog = libc::sock_fprog {
        len: u16::try_from(filter.len())
            .map_err(|_| SandboxError::Seccomp("the filter is too long".into()))?,
        filter: filter.as_ptr() as *mut libc::sock_filter,
    };
    // SAFETY: the kernel copies the program during the call; `filter` outlives it.
    let rc = unsafe {
        libc::prctl(
            libc::PR_SET_SECCOMP,
            SECCOMP_MODE_FILTER,
            &prog as *const libc::sock_fprog,
            0,
            0,
        )
    };
    if rc != 0 {
        return Err(SandboxError::Seccomp(format!(
            "cannot install the filter: {}",
            std::io::Error::last_os_error()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_protecting_filter_assembles() {
        assert!(protect(4242).unwrap().len() < 24);
    }

    #[test]
    fn both_programs_assemble_with_every_jump_forward() {
        for network in [false, true] {
            let filter = assemble(&program(network)).unwrap();
            assert!(filter.len() < 64, "{}", filter.len());
            let last = filter.last().unwrap();
            assert_eq!(last.code, BPF_RET_K);
            assert_eq!(last.k, RET_ERRNO | libc::EPERM as u32);
        }
    }
}
