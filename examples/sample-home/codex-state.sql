-- Codex CLI state database (state_5.sqlite): the threads table after the 0001
-- migration plus the columns later migrations add. The demo builds the .sqlite
-- file from this text with Python's sqlite3; {{HOME}} becomes the demo home.
CREATE TABLE threads (
    id TEXT PRIMARY KEY,
    rollout_path TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    source TEXT NOT NULL,
    model_provider TEXT NOT NULL,
    cwd TEXT NOT NULL,
    title TEXT NOT NULL,
    sandbox_policy TEXT NOT NULL,
    approval_mode TEXT NOT NULL,
    tokens_used INTEGER NOT NULL DEFAULT 0,
    archived INTEGER NOT NULL DEFAULT 0,
    archived_at INTEGER,
    git_sha TEXT,
    git_branch TEXT,
    git_origin_url TEXT
);
CREATE INDEX idx_threads_created_at ON threads(created_at DESC, id DESC);
CREATE INDEX idx_threads_updated_at ON threads(updated_at DESC, id DESC);
ALTER TABLE threads ADD COLUMN has_user_event INTEGER NOT NULL DEFAULT 0;
ALTER TABLE threads ADD COLUMN cli_version TEXT NOT NULL DEFAULT '';
ALTER TABLE threads ADD COLUMN first_user_message TEXT NOT NULL DEFAULT '';
ALTER TABLE threads ADD COLUMN created_at_ms INTEGER;
ALTER TABLE threads ADD COLUMN updated_at_ms INTEGER;
CREATE TRIGGER threads_created_at_ms_after_insert AFTER INSERT ON threads
WHEN NEW.created_at_ms IS NULL
BEGIN UPDATE threads SET created_at_ms = NEW.created_at * 1000 WHERE id = NEW.id; END;
CREATE TRIGGER threads_updated_at_ms_after_insert AFTER INSERT ON threads
WHEN NEW.updated_at_ms IS NULL
BEGIN UPDATE threads SET updated_at_ms = NEW.updated_at * 1000 WHERE id = NEW.id; END;
CREATE TABLE thread_dynamic_tools (thread_id TEXT NOT NULL, position INTEGER NOT NULL);
CREATE TABLE backfill_state (id INTEGER PRIMARY KEY, status TEXT NOT NULL);

-- 2026-11-30T14:20:05Z .. 14:20:41Z
INSERT INTO threads (
    id, rollout_path, created_at, updated_at, source, model_provider, cwd, title,
    sandbox_policy, approval_mode, tokens_used, archived, git_sha, git_branch,
    git_origin_url, has_user_event, cli_version, first_user_message
) VALUES (
    '019ad3c4-7e21-7b90-8c3d-5f6a7b8c9d0e',
    '{{HOME}}/.codex/sessions/2026/11/30/rollout-2026-11-30T14-20-05-019ad3c4-7e21-7b90-8c3d-5f6a7b8c9d0e.jsonl',
    1796048405, 1796048441, 'cli', 'openai', '/home/demo/webshop',
    'add an index on orders.created_at and check the migration applies cleanly',
    'workspace-write', 'on-request', 10934, 0,
    '4f1c2d9e8b7a6f5e4d3c2b1a0f9e8d7c6b5a4f3e', 'main', 'git@example.org:demo/webshop.git',
    1, '0.63.0', 'add an index on orders.created_at and check the migration applies cleanly'
);
