//! Durable storage in SQLite (WAL). One writer thread commits writes in revision order; writes
//! that arrive while a commit is running are grouped into the next transaction, so concurrent
//! clients share the cost of a commit. A write is acknowledged only after its commit.
//!
//! `synchronous=NORMAL` in WAL mode makes a committed transaction survive the process being
//! killed (the WAL is written before the commit returns); only an operating-system crash or
//! power loss can lose the last commits, which is the trade-off a development server wants.

use std::os::unix::fs::OpenOptionsExt as _;
use std::{
    path::Path,
    sync::{Arc, Mutex, mpsc},
    thread::JoinHandle,
};

use rusqlite::{Connection, params};
use tokio::sync::{oneshot, watch};

use super::StoreError;

/// Most writes grouped into one transaction.
const MAX_BATCH: usize = 1024;

/// One stored row, as loaded at startup.
pub(super) struct Row {
    pub resource: String,
    pub key: String,
    pub revision: u64,
    pub json: String,
}

/// One write to make durable: an upsert (`json` set) or a delete.
pub(super) struct Write {
    pub revision: u64,
    pub resource: Arc<str>,
    pub key: String,
    pub json: Option<Arc<str>>,
}

struct Job {
    write: Write,
    ack: oneshot::Sender<Result<(), String>>,
}

/// The file whose lock marks a data directory as in use; it holds the owner's process id.
const LOCK_FILE: &str = "lock";

/// Takes the data directory's lock, so that a second server on the same directory gets a clear
/// message naming the first instead of SQLite's "database is locked". The operating system
/// releases the lock when the process ends, however it ends, so a crash leaves nothing to clean.
fn lock(dir: &Path) -> Result<std::fs::File, StoreError> {
    use std::io::{Read, Seek, Write};
    let path = dir.join(LOCK_FILE);
    let io = |source| StoreError::Lock { path: path.display().to_string(), source };
    let mut file =
        std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(false).open(&path).map_err(io)?;
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            let mut owner = String::new();
            let _ = file.read_to_string(&mut owner);
            let owner = owner.trim();
            return Err(StoreError::InUse {
                dir: dir.display().to_string(),
                owner: if owner.is_empty() {
                    "another process".to_string()
                } else {
                    format!("another bosun (pid {owner})")
                },
            });
        }
        Err(std::fs::TryLockError::Error(source)) => return Err(io(source)),
    }
    file.set_len(0).map_err(io)?;
    file.rewind().map_err(io)?;
    write!(file, "{}", std::process::id()).map_err(io)?;
    Ok(file)
}

/// Opens (creating if needed) `<dir>/store.db` and loads its revision and objects; the returned
/// lock file must be kept open as long as the database is used.
pub(super) fn open(dir: &Path) -> Result<(u64, Vec<Row>, Connection, std::fs::File), StoreError> {
    let path = dir.join("store.db");
    let fail = |source| StoreError::Open { path: path.display().to_string(), source };
    std::fs::create_dir_all(dir).map_err(|source| StoreError::CreateDir { path: dir.display().to_string(), source })?;
    let lock = lock(dir)?;
    // The database holds Secrets: only its owner may read it. SQLite gives the -wal and -shm
    // files the database's mode, so creating it 0600 covers them too.
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(&path)
        .map_err(|source| StoreError::CreateFile { path: path.display().to_string(), source })?;
    let connection = Connection::open(&path).map_err(fail)?;
    connection
        .execute_batch(
            "PRAGMA journal_mode = WAL;
             PRAGMA synchronous = NORMAL;
             PRAGMA locking_mode = EXCLUSIVE;
             CREATE TABLE IF NOT EXISTS objects (
                 resource TEXT NOT NULL,
                 key TEXT NOT NULL,
                 revision INTEGER NOT NULL,
                 json TEXT NOT NULL,
                 PRIMARY KEY (resource, key)
             ) WITHOUT ROWID;
             CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
             INSERT OR IGNORE INTO meta (name, value) VALUES ('revision', 0);
             UPDATE meta SET value = value WHERE name = 'revision';",
        )
        .map_err(fail)?;
    let stored_revision: i64 =
        connection.query_row("SELECT value FROM meta WHERE name = 'revision'", [], |r| r.get(0)).map_err(fail)?;
    let mut rows = Vec::new();
    {
        let mut statement = connection.prepare("SELECT resource, key, revision, json FROM objects").map_err(fail)?;
        let mapped = statement
            .query_map([], |r| {
                Ok(Row { resource: r.get(0)?, key: r.get(1)?, revision: r.get::<_, i64>(2)? as u64, json: r.get(3)? })
            })
            .map_err(fail)?;
        for row in mapped {
            rows.push(row.map_err(fail)?);
        }
    }
    let revision = rows.iter().map(|r| r.revision).max().unwrap_or(0).max(stored_revision as u64);
    Ok((revision, rows, connection, lock))
}

fn commit(connection: &mut Connection, batch: &[Job]) -> rusqlite::Result<()> {
    let transaction = connection.transaction()?;
    {
        let mut upsert = transaction.prepare_cached(
            "INSERT INTO objects (resource, key, revision, json) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (resource, key) DO UPDATE SET revision = excluded.revision, json = excluded.json",
        )?;
        let mut delete = transaction.prepare_cached("DELETE FROM objects WHERE resource = ?1 AND key = ?2")?;
        for job in batch {
            let write = &job.write;
            match &write.json {
                Some(json) => {
                    upsert.execute(params![&*write.resource, write.key, write.revision as i64, &**json])?;
                }
                None => {
                    delete.execute(params![&*write.resource, write.key])?;
                }
            }
        }
        if let Some(last) = batch.last() {
            transaction
                .execute("UPDATE meta SET value = ?1 WHERE name = 'revision'", params![last.write.revision as i64])?;
        }
    }
    transaction.commit()
}

/// What a user should look at when SQLite cannot write.
fn hint(error: &rusqlite::Error) -> &'static str {
    use rusqlite::ErrorCode::{CannotOpen, DiskFull, ReadOnly, SystemIoFailure};
    match error.sqlite_error_code() {
        Some(DiskFull | SystemIoFailure | ReadOnly | CannotOpen) => {
            " (is the disk full, or the data directory read-only?)"
        }
        _ => "",
    }
}

/// The writer thread and the queue to it.
pub(super) struct Persister {
    sender: Mutex<Option<mpsc::Sender<Job>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Persister {
    /// Starts the writer; after each commit it publishes the committed revision to `visible`.
    /// The writer keeps the data directory's `lock` until it stops.
    ///
    /// A failed commit (disk full, a read-only or vanished file, an I/O error) stops all
    /// writing: SQLite has rolled the transaction back, and committing later writes would
    /// leave a gap in the revisions. Every later write gets the same error, and `visible`
    /// stays at the last committed revision, so no watcher sees what was not stored.
    pub(super) fn start(
        path: &Path,
        mut connection: Connection,
        lock: std::fs::File,
        visible: Arc<watch::Sender<u64>>,
    ) -> Self {
        let (sender, receiver) = mpsc::channel::<Job>();
        let path = path.display().to_string();
        let thread = std::thread::Builder::new()
            .name("bosun-store-writer".into())
            .spawn(move || {
                let _lock = lock;
                let mut failure: Option<String> = None;
                while let Ok(first) = receiver.recv() {
                    let mut batch = vec![first];
                    while batch.len() < MAX_BATCH {
                        match receiver.try_recv() {
                            Ok(job) => batch.push(job),
                            Err(_) => break,
                        }
                    }
                    let result = match &failure {
                        Some(error) => Err(error.clone()),
                        None => commit(&mut connection, &batch).map_err(|error| {
                            let error = format!(
                                "cannot write {path}: {error}{}; the server refuses writes until it is restarted (reads still work)",
                                hint(&error)
                            );
                            tracing::error!(%error, "storage commit failed");
                            failure = Some(error.clone());
                            error
                        }),
                    };
                    if let (Ok(()), Some(last)) = (&result, batch.last()) {
                        visible.send_replace(last.write.revision);
                    }
                    for job in batch {
                        let _ = job.ack.send(result.clone());
                    }
                }
            })
            .ok();
        Self { sender: Mutex::new(Some(sender)), thread: Mutex::new(thread) }
    }

    /// Queues a write; the receiver completes when it is committed.
    pub(super) fn submit(&self, write: Write) -> oneshot::Receiver<Result<(), String>> {
        let (ack, done) = oneshot::channel();
        let sender = self.sender.lock().unwrap_or_else(|e| e.into_inner());
        match sender.as_ref() {
            Some(sender) => {
                if let Err(mpsc::SendError(job)) = sender.send(Job { write, ack }) {
                    let _ = job.ack.send(Err("the storage writer stopped".into()));
                }
            }
            None => {
                let _ = ack.send(Err("the store is closed".into()));
            }
        }
        done
    }

    /// Commits what is queued and stops the writer.
    pub(super) fn close(&self) {
        self.sender.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(thread) = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = thread.join();
        }
    }
}
