-- The run store: runs, their packets, and the append-only event journal they are projected from.
CREATE TABLE IF NOT EXISTS runs (
    id            TEXT PRIMARY KEY,
    objective     TEXT NOT NULL,
    base          TEXT NOT NULL,
    plan_toml     TEXT NOT NULL,
    plan_path     TEXT NOT NULL,
    worker_cmd    TEXT,
    max_parallel  INTEGER NOT NULL,
    timeout_secs  INTEGER NOT NULL,
    worktree_root TEXT NOT NULL,
    state         TEXT NOT NULL,
    pid           INTEGER,
    created_ms    INTEGER NOT NULL,
    updated_ms    INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS packets (
    run_id      TEXT NOT NULL REFERENCES runs(id),
    id          TEXT NOT NULL,
    idx         INTEGER NOT NULL,
    title       TEXT NOT NULL,
    role        TEXT NOT NULL,
    state       TEXT NOT NULL,
    phase       TEXT,
    branch      TEXT NOT NULL,
    worktree    TEXT NOT NULL,
    attempt     INTEGER NOT NULL DEFAULT 0,
    start_commit TEXT,
    commit_id   TEXT,
    reason      TEXT,
    pgid        INTEGER,
    removed     INTEGER NOT NULL DEFAULT 0,
    backup      TEXT,
    updated_ms  INTEGER NOT NULL,
    PRIMARY KEY (run_id, id)
);
-- One journal for both kinds of run: `journal` says whose event a row is, the engine's
-- (`run`, `agent`, and the packets of a `start` run) or a `start` run's workflow.
CREATE TABLE IF NOT EXISTS events (
    seq       INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id    TEXT NOT NULL,
    packet_id TEXT,
    ts_ms     INTEGER NOT NULL,
    type      TEXT NOT NULL,
    payload   TEXT NOT NULL,
    journal   TEXT NOT NULL DEFAULT 'engine'
);
CREATE INDEX IF NOT EXISTS events_by_run ON events(run_id, seq);
-- The run's events of some kinds (`Store::events_of_kinds`), read per packet by the engine and
-- the merge: without it every such read scans all of the run's events, a cost per packet that
-- grows with the run.
CREATE INDEX IF NOT EXISTS events_by_kind ON events(run_id, type, seq);
-- What the agents did, per packet and role: projected from the agent_* events.
CREATE TABLE IF NOT EXISTS agent_usage (
    run_id        TEXT NOT NULL,
    packet_id     TEXT NOT NULL,
    role          TEXT NOT NULL,
    state         TEXT NOT NULL DEFAULT 'initializing',
    reason        TEXT,
    model         TEXT,
    model_calls   INTEGER NOT NULL DEFAULT 0,
    input_tokens  INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    cost_nanos    INTEGER,
    tool_calls    INTEGER NOT NULL DEFAULT 0,
    tool_errors   INTEGER NOT NULL DEFAULT 0,
    retries       INTEGER NOT NULL DEFAULT 0,
    fallbacks     INTEGER NOT NULL DEFAULT 0,
    updated_ms    INTEGER NOT NULL,
    PRIMARY KEY (run_id, packet_id, role)
);
-- The `start` workflow's finished model turns, replayed on resume by request key (its events
-- are in `events`, keyed by run id alone: planning precedes the engine's run).
CREATE TABLE IF NOT EXISTS workflow_turns (
    run_id        TEXT NOT NULL,
    key           TEXT NOT NULL,
    ts_ms         INTEGER NOT NULL,
    role          TEXT NOT NULL,
    model         TEXT NOT NULL,
    input_tokens  INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    ms            INTEGER NOT NULL,
    response      TEXT NOT NULL,
    PRIMARY KEY (run_id, key)
);
-- What agents learned, kept across runs for the planners and agents of later runs.
CREATE TABLE IF NOT EXISTS learnings (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    text       TEXT NOT NULL UNIQUE,
    run_id     TEXT NOT NULL,
    packet_id  TEXT NOT NULL,
    created_ms INTEGER NOT NULL
);
-- What agents learned in packets that have not landed: moved to `learnings` when the packet
-- succeeds, dropped when it fails or the merge sends it back.
CREATE TABLE IF NOT EXISTS pending_learnings (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    text       TEXT NOT NULL,
    run_id     TEXT NOT NULL,
    packet_id  TEXT NOT NULL,
    created_ms INTEGER NOT NULL,
    UNIQUE (run_id, packet_id, text)
);
-- The settings kept with a run so that a resume behaves like its first start (the agent CLI
-- and the executor it was made with), one JSON record per run.
CREATE TABLE IF NOT EXISTS run_settings (
    run_id  TEXT PRIMARY KEY,
    payload TEXT NOT NULL
);
