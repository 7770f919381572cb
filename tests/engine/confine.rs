//! Confined file access: a corpus of escape attempts that must all be refused without changing
//! anything, run against a main worktree and a linked one, plus the legitimate operations that
//! must keep working.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};

use git_orchestra::confine::{ConfineError, ConfinedRoot, EntryKind};

use crate::support::{TestRepo, git};

/// One operation of the API, with paths that may hold `{OUT}`, `{ROOT}` and `{COMMON}`.
#[derive(Debug, Clone, Copy)]
enum Op {
    Read(&'static str),
    ReadString(&'static str),
    Write(&'static str),
    CreateNew(&'static str),
    CreateDirAll(&'static str),
    Rename(&'static str, &'static str),
    Remove(&'static str),
    List(&'static str),
}

/// An escape attempt and words its refusal must contain.
struct Case {
    op: Op,
    expect: &'static str,
}

const fn case(op: Op, expect: &'static str) -> Case {
    Case { op, expect }
}

/// The escape corpus. Every entry must be refused, and refused without any change on disk.
fn corpus() -> Vec<Case> {
    use Op::*;
    vec![
        // `..` in all its spellings.
        case(Read("../outside/secret.txt"), "leaves the worktree"),
        case(Read(".."), "leaves the worktree"),
        case(Write("../outside/secret.txt"), "leaves the worktree"),
        case(Write("a/../../outside/x.txt"), "leaves the worktree"),
        case(Write("./../outside/x.txt"), "leaves the worktree"),
        case(Write("a/b/../../../outside/x.txt"), "leaves the worktree"),
        case(Write("sub/../../outside/secret.txt"), "leaves the worktree"),
        case(
            CreateNew("sub/../../outside/new.txt"),
            "leaves the worktree",
        ),
        case(Remove("../outside/secret.txt"), "leaves the worktree"),
        case(CreateDirAll("../outside/newdir"), "leaves the worktree"),
        case(List("../outside"), "leaves the worktree"),
        // Absolute and foreign path forms.
        case(Read("{OUT}/secret.txt"), "absolute"),
        case(Write("{OUT}/secret.txt"), "absolute"),
        case(Write("{ROOT}/ok.txt"), "absolute"),
        case(Remove("{OUT}/secret.txt"), "absolute"),
        case(CreateDirAll("{OUT}/newdir"), "absolute"),
        case(Write("C:\\outside\\x.txt"), "Windows"),
        case(Write("\\\\server\\share\\x.txt"), "Windows"),
        case(Write("..\\outside\\secret.txt"), "backslash"),
        case(Read("~/secret.txt"), "`~`"),
        case(Write(""), "empty"),
        case(Write("ok.txt\0../../outside/secret.txt"), "NUL"),
        // Symlinks to files and directories outside, relative and absolute.
        case(Read("link_out_rel"), "pointing outside"),
        case(Read("link_out_abs"), "pointing outside"),
        case(ReadString("sub/up_link"), "pointing outside"),
        case(Write("link_out_rel"), "pointing outside"),
        case(Write("link_out_abs"), "pointing outside"),
        case(CreateNew("link_out_rel"), "pointing outside"),
        case(Read("dirlink_out/inner.txt"), "pointing outside"),
        case(List("dirlink_out"), "pointing outside"),
        case(Write("dirlink_out/new.txt"), "pointing outside"),
        case(Write("dirlink_out_abs/new.txt"), "pointing outside"),
        case(Write("dirlink_out/inner.txt"), "pointing outside"),
        case(CreateDirAll("dirlink_out/x/y"), "pointing outside"),
        case(CreateDirAll("dirlink_out_abs/newdir"), "pointing outside"),
        case(Remove("dirlink_out/inner.txt"), "pointing outside"),
        // Chains, loops and dangling links.
        case(Read("chain1"), "pointing outside"),
        case(Write("chain1"), "symlink"),
        case(Read("loop_a"), "loop"),
        case(Write("loop_a"), "symlink"),
        case(Write("dangling_out"), "pointing outside"),
        case(CreateNew("dangling_out"), "pointing outside"),
        case(Write("dangling_out_abs"), "pointing outside"),
        // Symlinks inside the root: never written through, never into git metadata.
        case(Write("inside_dirlink/new.txt"), "use `sub/new.txt` instead"),
        case(Read("git_link/config"), "git metadata"),
        case(Read("git_link"), "git metadata"),
        case(Write("git_link/config"), "git metadata"),
        case(Remove("git_link/HEAD"), "git metadata"),
        case(Read("common_link/config"), "symlink"),
        case(Write("common_link/config"), "symlink"),
        // Hard links.
        case(Read("hard_out"), "hard links"),
        case(Write("hard_out"), "hard links"),
        case(Write("hard_in"), "hard links"),
        // Git metadata, however it is spelled.
        case(Read(".git/config"), "git metadata"),
        case(List(".git"), "git metadata"),
        case(Write(".git/config"), "git metadata"),
        case(Write(".GIT/config"), "git metadata"),
        case(Write(".Git/HEAD"), "git metadata"),
        case(Write(".git./config"), "git metadata"),
        case(Write(".GIT /config"), "git metadata"),
        case(Write("git~1/config"), "git metadata"),
        case(Write(".g\u{200c}it/config"), "git metadata"),
        case(Write(".git::$INDEX_ALLOCATION/config"), "git metadata"),
        case(Write(".git"), "git metadata"),
        case(Remove(".git"), "git metadata"),
        case(Remove(".git/HEAD"), "git metadata"),
        case(CreateNew("sub/.git"), "git metadata"),
        case(CreateDirAll("sub/.git/hooks"), "git metadata"),
        case(Write("sub/.Git/config"), "git metadata"),
        // Renames, at both ends.
        case(Rename("ok.txt", ".git/hooks/pre-commit"), "git metadata"),
        case(Rename("ok.txt", ".GIT"), "git metadata"),
        case(Rename(".git", "notgit"), "git metadata"),
        case(Rename(".git/config", "config"), "git metadata"),
        case(Rename("nested", "moved"), "contains git metadata"),
        case(
            Rename("ok.txt", "../outside/stolen.txt"),
            "leaves the worktree",
        ),
        case(Rename("ok.txt", "{OUT}/stolen.txt"), "absolute"),
        case(
            Rename("../outside/secret.txt", "stolen.txt"),
            "leaves the worktree",
        ),
        case(Rename("ok.txt", "link_out_rel"), "already exists"),
        case(
            Rename("ok.txt", "dirlink_out/stolen.txt"),
            "pointing outside",
        ),
        case(
            Rename("dirlink_out/inner.txt", "stolen.txt"),
            "pointing outside",
        ),
        case(Rename(".", "elsewhere"), "worktree root itself"),
    ]
}

/// A worktree with escape fixtures in it and a directory of secrets beside it.
struct World {
    _repo: TestRepo,
    /// Holds the repository, any linked worktree and `outside/`; snapshotted whole.
    base: PathBuf,
    root: PathBuf,
    outside: PathBuf,
    common: PathBuf,
    confined: ConfinedRoot,
}

impl World {
    fn main() -> World {
        let repo = TestRepo::with_files(&[("ok.txt", "ok\n"), ("sub/inner.txt", "inner\n")]);
        let root = repo.path.canonicalize().unwrap();
        World::build(repo, root)
    }

    fn linked() -> World {
        let repo = TestRepo::with_files(&[("ok.txt", "ok\n"), ("sub/inner.txt", "inner\n")]);
        let linked = repo.tmp.path().join("linked");
        repo.git(&[
            "worktree",
            "add",
            "-q",
            "-b",
            "side",
            linked.to_str().unwrap(),
        ]);
        let root = linked.canonicalize().unwrap();
        assert!(
            root.join(".git").is_file(),
            "a linked worktree has a .git file"
        );
        World::build(repo, root)
    }

    fn build(repo: TestRepo, root: PathBuf) -> World {
        let base = repo.tmp.path().canonicalize().unwrap();
        let outside = base.join("outside");
        std::fs::create_dir_all(outside.join("outdir")).unwrap();
        std::fs::write(outside.join("secret.txt"), "SECRET\n").unwrap();
        std::fs::write(outside.join("outdir/inner.txt"), "outside inner\n").unwrap();
        std::fs::write(outside.join("hard_secret.txt"), "HARD SECRET\n").unwrap();
        let common = PathBuf::from(git(
            &root,
            &["rev-parse", "--path-format=absolute", "--git-common-dir"],
        ))
        .canonicalize()
        .unwrap();

        let l = |target: &str, link: &str| symlink(target, root.join(link)).unwrap();
        let abs = |p: &Path| p.to_str().unwrap().to_string();
        l("../outside/secret.txt", "link_out_rel");
        l(&abs(&outside.join("secret.txt")), "link_out_abs");
        l("../../outside/secret.txt", "sub/up_link");
        l("../outside/outdir", "dirlink_out");
        l(&abs(&outside.join("outdir")), "dirlink_out_abs");
        l("chain2", "chain1");
        l("../outside/secret.txt", "chain2");
        l("loop_b", "loop_a");
        l("loop_a", "loop_b");
        l("../outside/not_there.txt", "dangling_out");
        l(&abs(&outside.join("abs_not_there.txt")), "dangling_out_abs");
        l(".git", "git_link");
        l(&abs(&common), "common_link");
        l("ok.txt", "inside_link");
        l("sub", "inside_dirlink");
        std::fs::hard_link(outside.join("hard_secret.txt"), root.join("hard_out")).unwrap();
        std::fs::write(root.join("hard_in"), "twice\n").unwrap();
        std::fs::hard_link(root.join("hard_in"), root.join("hard_in_too")).unwrap();
        std::fs::create_dir_all(root.join("nested/inner_repo/.git")).unwrap();
        std::fs::write(
            root.join("nested/inner_repo/.git/HEAD"),
            "ref: refs/heads/x\n",
        )
        .unwrap();

        let confined = ConfinedRoot::open(&root).unwrap();
        World {
            _repo: repo,
            base,
            root,
            outside,
            common,
            confined,
        }
    }

    fn expand(&self, path: &str) -> String {
        path.replace("{OUT}", self.outside.to_str().unwrap())
            .replace("{ROOT}", self.root.to_str().unwrap())
            .replace("{COMMON}", self.common.to_str().unwrap())
    }

    /// Runs `op` and returns its error, or `None` when it succeeded.
    fn run(&self, op: Op) -> Option<ConfineError> {
        let c = &self.confined;
        let x = |p: &str| self.expand(p);
        match op {
            Op::Read(p) => c.read(&x(p)).err(),
            Op::ReadString(p) => c.read_to_string(&x(p)).err(),
            Op::Write(p) => c.write(&x(p), b"PWNED\n").err(),
            Op::CreateNew(p) => c.create_new(&x(p), b"PWNED\n").err(),
            Op::CreateDirAll(p) => c.create_dir_all(&x(p)).err(),
            Op::Rename(a, b) => c.rename(&x(a), &x(b)).err(),
            Op::Remove(p) => c.remove_file(&x(p)).err(),
            Op::List(p) => c.list_dir(&x(p)).err(),
        }
    }
}

/// What one entry on disk looks like, symlinks not followed.
#[derive(Debug, PartialEq, Eq)]
enum Snap {
    File(Vec<u8>, u32),
    Dir,
    Link(PathBuf),
}

/// Returns every entry beneath `dir` with its contents, for before/after comparison.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Snap> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let snap = if meta.is_symlink() {
                Snap::Link(std::fs::read_link(&path).unwrap())
            } else if meta.is_dir() {
                stack.push(path.clone());
                Snap::Dir
            } else {
                Snap::File(std::fs::read(&path).unwrap(), meta.permissions().mode())
            };
            out.insert(path, snap);
        }
    }
    out
}

/// Runs the corpus in `world`, asserting each case is refused with its words and changes nothing.
fn assert_corpus_denied(world: &World) {
    let cases = corpus();
    let mut failures = Vec::new();
    for case in &cases {
        let before = snapshot(&world.base);
        let outcome = world.run(case.op);
        let after = snapshot(&world.base);
        match outcome {
            None => failures.push(format!("{:?}: was allowed", case.op)),
            Some(err) => {
                let msg = err.to_string();
                println!("{:?}\n    -> {msg}", case.op);
                if !msg.contains(case.expect) {
                    failures.push(format!("{:?}: `{msg}` lacks `{}`", case.op, case.expect));
                }
                if err.is_infrastructure() {
                    failures.push(format!("{:?}: `{msg}` is not a refusal", case.op));
                }
            }
        }
        if before != after {
            let changed: Vec<_> = before
                .keys()
                .chain(after.keys())
                .filter(|k| before.get(*k) != after.get(*k))
                .collect();
            failures.push(format!("{:?}: changed the disk: {changed:?}", case.op));
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert_eq!(
        std::fs::read_to_string(world.outside.join("secret.txt")).unwrap(),
        "SECRET\n"
    );
    assert!(!world.outside.join("not_there.txt").exists());
    assert!(!world.outside.join("abs_not_there.txt").exists());
}

#[test]
fn the_corpus_holds_at_least_forty_escape_attempts() {
    assert!(corpus().len() >= 40, "only {} cases", corpus().len());
}

#[test]
fn every_escape_attempt_is_denied_in_a_main_worktree() {
    let world = World::main();
    assert!(world.root.join(".git").is_dir());
    assert_corpus_denied(&world);
}

#[test]
fn every_escape_attempt_is_denied_in_a_linked_worktree() {
    let world = World::linked();
    assert!(
        !world.common.starts_with(&world.root),
        "common dir lies outside"
    );
    assert_eq!(world.confined.common_dir(), Some(world.common.as_path()));
    assert_corpus_denied(&world);
}

/// Runs the legitimate operations an agent needs, which must all succeed. Each step works on
/// what the steps before it left.
fn assert_legitimate_operations_work(world: &World) {
    assert_writes_and_moves_work(world);
    assert_unusual_names_work(world);
    assert_reads_and_listings_work(world);
    assert_removals_work(world);
}

/// Writes, replaces, creates and renames files and directories.
fn assert_writes_and_moves_work(world: &World) {
    let c = &world.confined;
    let root = &world.root;

    c.write("new/deep/file.txt", b"hello\n").unwrap();
    assert_eq!(c.read_to_string("new/deep/file.txt").unwrap(), "hello\n");
    assert_eq!(
        std::fs::read(root.join("new/deep/file.txt")).unwrap(),
        b"hello\n"
    );

    // Replacing keeps the file's permissions and leaves no temporary file behind.
    std::fs::write(root.join("run.sh"), "old\n").unwrap();
    std::fs::set_permissions(root.join("run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    c.write("run.sh", b"#!/bin/sh\necho new\n").unwrap();
    assert_eq!(
        std::fs::read_to_string(root.join("run.sh")).unwrap(),
        "#!/bin/sh\necho new\n"
    );
    let mode = std::fs::metadata(root.join("run.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o755);
    assert!(c.metadata("run.sh").unwrap().executable);

    c.create_new("fresh.txt", b"one\n").unwrap();
    let again = c.create_new("fresh.txt", b"two\n").unwrap_err();
    assert!(
        matches!(again, ConfineError::AlreadyExists { .. }),
        "{again}"
    );
    assert_eq!(c.read_to_string("fresh.txt").unwrap(), "one\n");

    c.rename("fresh.txt", "moved/into/fresh.txt").unwrap();
    assert!(!c.exists("fresh.txt").unwrap());
    assert!(c.exists("moved/into/fresh.txt").unwrap());
    c.rename("moved", "moved_dir").unwrap();
    assert_eq!(
        c.read_to_string("moved_dir/into/fresh.txt").unwrap(),
        "one\n"
    );
    let into_itself = c.rename("moved_dir", "moved_dir/inner").unwrap_err();
    assert!(
        matches!(into_itself, ConfineError::MoveIntoItself { .. }),
        "{into_itself}"
    );
}

/// Writes files and creates directories whose names look special but stay inside.
fn assert_unusual_names_work(world: &World) {
    let c = &world.confined;
    let root = &world.root;

    for (path, text) in [
        (".gitignore", "target/\n"),
        (".gitmodules", ""),
        (".github/workflows/ci.yml", "on: push\n"),
        ("git/notes.txt", "a dir named git\n"),
        ("docs/my file with spaces.md", "spaces\n"),
        ("ünïcödé/文件.txt", "unicode\n"),
        ("./~tilde.txt", "a leading tilde, written with ./\n"),
        ("sub/../after-dotdot.txt", "dotdot inside\n"),
        ("C:foo", "a colon name, not a drive\n"),
    ] {
        c.write(path, text.as_bytes())
            .unwrap_or_else(|e| panic!("{path}: {e}"));
        assert_eq!(c.read_to_string(path).unwrap(), text, "{path}");
    }
    assert!(root.join("after-dotdot.txt").is_file());
    assert!(root.join("~tilde.txt").is_file());

    c.create_dir_all("a/b/c").unwrap();
    c.create_dir_all("a/b/c").unwrap();
    c.create_dir_all(".").unwrap();
    assert_eq!(c.metadata("a/b").unwrap().kind, EntryKind::Dir);
}

/// Reads through inside links, lists directories and checks what exists.
fn assert_reads_and_listings_work(world: &World) {
    let c = &world.confined;
    let root = &world.root;

    // Symlinks that stay inside may be read through; the link itself is described as a link.
    assert_eq!(c.read_to_string("inside_link").unwrap(), "ok\n");
    assert_eq!(
        c.read_to_string("inside_dirlink/inner.txt").unwrap(),
        "inner\n"
    );
    let info = c.metadata("inside_link").unwrap();
    assert_eq!(info.kind, EntryKind::Symlink);
    assert_eq!(info.symlink_target.as_deref(), Some("ok.txt"));
    assert_eq!(c.list_dir("inside_dirlink").unwrap().len(), 2);

    let listing = c.list_dir(".").unwrap();
    let names: Vec<_> = listing.iter().map(|e| e.name.as_str()).collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted);
    let git_entry = listing.iter().find(|e| e.name == ".git").unwrap();
    let expected = if root.join(".git").is_dir() {
        EntryKind::Dir
    } else {
        EntryKind::File
    };
    assert_eq!(git_entry.kind, expected);
    let ok = listing.iter().find(|e| e.name == "ok.txt").unwrap();
    assert_eq!((ok.kind, ok.size), (EntryKind::File, 3));
    assert_eq!(
        listing
            .iter()
            .find(|e| e.name == "link_out_rel")
            .unwrap()
            .kind,
        EntryKind::Symlink
    );

    assert!(c.exists(".git").unwrap());
    assert!(
        c.exists("dangling_out").unwrap(),
        "a dangling link is an entry"
    );
    assert!(!c.exists("missing/deeper.txt").unwrap());
    assert!(!c.exists("ok.txt/below-a-file").unwrap());
    assert_eq!(c.metadata(".").unwrap().kind, EntryKind::Dir);
}

/// Removes files and links (never a link's target), moves a link as a link, and leaves no
/// temporary file behind and the repository intact.
fn assert_removals_work(world: &World) {
    let c = &world.confined;
    let root = &world.root;

    // Removing a symlink removes the link, never its target; a hard link's name may go too.
    c.remove_file("link_out_rel").unwrap();
    assert!(!root.join("link_out_rel").exists());
    assert_eq!(
        std::fs::read_to_string(world.outside.join("secret.txt")).unwrap(),
        "SECRET\n"
    );
    c.remove_file("hard_out").unwrap();
    assert_eq!(
        std::fs::read_to_string(world.outside.join("hard_secret.txt")).unwrap(),
        "HARD SECRET\n"
    );
    // A symlink is moved as a link.
    c.rename("dirlink_out", "renamed_link").unwrap();
    assert!(
        std::fs::symlink_metadata(root.join("renamed_link"))
            .unwrap()
            .is_symlink()
    );
    assert_eq!(
        std::fs::read_link(root.join("renamed_link")).unwrap(),
        Path::new("../outside/outdir")
    );

    c.remove_file("new/deep/file.txt").unwrap();
    assert!(matches!(
        c.read("new/deep/file.txt"),
        Err(ConfineError::NotFound { .. })
    ));
    assert!(matches!(
        c.remove_file("a/b"),
        Err(ConfineError::IsADirectory { .. })
    ));
    assert!(matches!(
        c.read("a"),
        Err(ConfineError::IsADirectory { .. })
    ));

    let leftovers: Vec<_> = snapshot(&world.base)
        .into_keys()
        .filter(|p| p.to_string_lossy().contains(".orchestra-tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    // The repository itself is intact.
    assert_eq!(git(root, &["rev-parse", "--is-inside-work-tree"]), "true");
}

#[test]
fn legitimate_operations_work_in_a_main_worktree() {
    assert_legitimate_operations_work(&World::main());
}

#[test]
fn legitimate_operations_work_in_a_linked_worktree() {
    assert_legitimate_operations_work(&World::linked());
}

#[test]
fn a_git_dir_kept_inside_the_worktree_under_another_name_is_protected() {
    crate::support::hermetic();
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("wt");
    let meta = root.join("meta");
    git(
        tmp.path(),
        &[
            "init",
            "-q",
            "--separate-git-dir",
            meta.to_str().unwrap(),
            root.to_str().unwrap(),
        ],
    );
    let c = ConfinedRoot::open(&root).unwrap();
    assert_eq!(c.git_dir(), Some(meta.canonicalize().unwrap().as_path()));
    let config = std::fs::read(meta.join("config")).unwrap();
    for err in [
        c.write("meta/config", b"[core]\n").unwrap_err(),
        c.read("meta/config").unwrap_err(),
        c.create_new("meta/hooks/pre-commit", b"#!/bin/sh\n")
            .unwrap_err(),
        c.rename("meta", "elsewhere").unwrap_err(),
        c.list_dir("meta").unwrap_err(),
    ] {
        assert!(err.to_string().contains("git metadata"), "{err}");
    }
    assert_eq!(std::fs::read(meta.join("config")).unwrap(), config);
    assert!(!meta.join("hooks/pre-commit").exists());
    c.write("src/lib.rs", b"// fine\n").unwrap();
}

#[test]
fn a_pipe_is_refused_rather_than_read() {
    let world = World::main();
    let fifo = world.root.join("pipe");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    let err = world.confined.read("pipe").unwrap_err();
    assert!(matches!(err, ConfineError::NotAFile { .. }), "{err}");
    let err = world.confined.write("pipe", b"x").unwrap_err();
    assert!(matches!(err, ConfineError::NotAFile { .. }), "{err}");
}

#[test]
fn opening_a_git_directory_as_a_root_is_refused() {
    let world = World::main();
    let err = ConfinedRoot::open(&world.root.join(".git")).unwrap_err();
    assert!(
        matches!(err, ConfineError::RootIsGitMetadata { .. }),
        "{err}"
    );
    let err = ConfinedRoot::open(&world.root.join("missing")).unwrap_err();
    assert!(
        err.to_string().contains("cannot open the worktree root"),
        "{err}"
    );
}
