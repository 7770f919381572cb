//! Attacks by a hostile external worker (`--worker-cmd`) on what the engine then does with its
//! work: the engine's own git, the scope check, the history that reaches the branch. Each test
//! runs a real plan with a worker script and asserts the attack is held.

use crate::support::*;

#[test]
fn the_worker_command_gets_the_api_keys_the_engine_keeps_from_validation_commands() {
    let repo = TestRepo::new();
    let marks = repo.scratch().join("marks");
    std::fs::create_dir_all(&marks).unwrap();
    let worker = format!(
        "printf '%s' \"$SOME_TOOL_API_KEY\" > {m}/worker; echo x > out.txt",
        m = marks.display()
    );
    let plan = repo.write_plan(
        "plan.toml",
        &format!(
            "objective = \"Keys\"\n\n{}",
            packet(
                "p1",
                "\"out.txt\"",
                "",
                &format!(
                    "\"printf '%s' \\\"$SOME_TOOL_API_KEY\\\" > {}/validation\"",
                    marks.display()
                )
            )
        ),
    );
    let root = repo.scratch().join("wt");
    let out = orchestra_with_env(
        &repo.path,
        &[
            "run",
            plan.to_str().unwrap(),
            "--worker-cmd",
            &worker,
            "--worktree-root",
            root.to_str().unwrap(),
        ],
        &[("SOME_TOOL_API_KEY", "k-123")],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        std::fs::read_to_string(marks.join("worker")).unwrap(),
        "k-123"
    );
    assert_eq!(
        std::fs::read_to_string(marks.join("validation")).unwrap(),
        ""
    );
}
