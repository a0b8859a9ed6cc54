//! Triggers: what starts a run. [`FileTrigger`] watches package directories and reports which
//! changed, for `bosun dev`: through the operating system's file events (inotify, kqueue,
//! ReadDirectoryChanges), or by polling where those are unavailable (some network and container
//! file systems, exhausted inotify watches). Paths the run itself writes (the API server's data
//! directory, the kubeconfig) and hidden entries (`.git`, `.bosun`; the renderers skip them too)
//! never trigger a run, so a package directory that holds the data directory does not re-apply
//! itself forever.

use std::{
    path::{Path, PathBuf},
    time::Duration,
};

use notify::{EventKind, PollWatcher, RecursiveMode, Watcher};
use tokio::sync::mpsc;

/// How long the files must stay unchanged before a change is reported: editors write a file
/// in several steps (truncate, write, rename), and one save should give one run.
const QUIET: Duration = Duration::from_millis(250);

/// How often the polling fallback looks at the files.
const POLL: Duration = Duration::from_millis(700);

/// A directory could not be watched.
#[derive(Debug, thiserror::Error)]
#[error("cannot watch {dir}: {source}")]
pub struct TriggerError {
    /// The directory.
    pub(crate) dir: String,
    /// Why.
    #[source]
    pub(crate) source: notify::Error,
}

/// Watches directories for changes that matter to their packages.
pub struct FileTrigger {
    changes: mpsc::UnboundedReceiver<usize>,
    polling: bool,
    // Dropping the watcher stops it.
    _watcher: Box<dyn Watcher + Send>,
}

impl std::fmt::Debug for FileTrigger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileTrigger").field("polling", &self.polling).finish_non_exhaustive()
    }
}

/// Whether a change of `path` inside the watched `dir` matters: not under an ignored path, and
/// no hidden component below `dir`.
pub(crate) fn is_relevant(path: &Path, dir: &Path, ignored: &[PathBuf]) -> bool {
    if ignored.iter().any(|ignored| path.starts_with(ignored)) {
        return false;
    }
    let inside = path.strip_prefix(dir).unwrap_or(path);
    !inside.components().any(|c| c.as_os_str().to_string_lossy().starts_with('.'))
}

impl FileTrigger {
    /// Starts watching `dirs` (recursively), ignoring changes under `ignored`.
    ///
    /// # Errors
    /// A directory can be watched neither by file events nor by polling (it does not exist).
    pub fn watch(dirs: &[PathBuf], ignored: &[PathBuf]) -> Result<FileTrigger, TriggerError> {
        let dirs: Vec<PathBuf> = dirs.iter().map(|d| d.canonicalize().unwrap_or_else(|_| d.clone())).collect();
        // Ignored paths may not exist yet (the kubeconfig): resolve their parent instead.
        let ignored: Vec<PathBuf> = ignored.iter().map(|p| resolve(p)).collect();
        let (sender, changes) = mpsc::unbounded_channel();
        let handler = {
            let dirs = dirs.clone();
            move |event: notify::Result<notify::Event>| {
                let Ok(event) = event else { return };
                if matches!(event.kind, EventKind::Access(_)) {
                    return;
                }
                for path in &event.paths {
                    if let Some(index) = dirs.iter().position(|d| path.starts_with(d))
                        && is_relevant(path, &dirs[index], &ignored)
                    {
                        let _ = sender.send(index);
                    }
                }
            }
        };
        let native = notify::recommended_watcher(handler.clone()).and_then(|mut watcher| {
            for dir in &dirs {
                watcher.watch(dir, RecursiveMode::Recursive)?;
            }
            Ok(watcher)
        });
        if let Ok(watcher) = native {
            return Ok(FileTrigger { changes, polling: false, _watcher: Box::new(watcher) });
        }
        let config = notify::Config::default().with_poll_interval(POLL);
        let mut watcher =
            PollWatcher::new(handler, config).map_err(|source| TriggerError { dir: display(&dirs), source })?;
        for dir in &dirs {
            watcher
                .watch(dir, RecursiveMode::Recursive)
                .map_err(|source| TriggerError { dir: dir.display().to_string(), source })?;
        }
        Ok(FileTrigger { changes, polling: true, _watcher: Box::new(watcher) })
    }

    /// Whether the trigger polls (file events were unavailable).
    pub fn polling(&self) -> bool {
        self.polling
    }

    /// Waits for the next change and returns the indices of the directories that changed, once
    /// the files have been quiet for a moment. `None` when the watcher stopped.
    pub async fn changed(&mut self) -> Option<Vec<usize>> {
        let mut changed = vec![self.changes.recv().await?];
        while let Ok(Some(index)) = tokio::time::timeout(QUIET, self.changes.recv()).await {
            changed.push(index);
        }
        changed.sort_unstable();
        changed.dedup();
        Some(changed)
    }
}

fn resolve(path: &Path) -> PathBuf {
    if let Ok(resolved) = path.canonicalize() {
        return resolved;
    }
    match (path.parent().and_then(|p| p.canonicalize().ok()), path.file_name()) {
        (Some(parent), Some(name)) => parent.join(name),
        _ => std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()),
    }
}

fn display(dirs: &[PathBuf]) -> String {
    dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_visible_files_outside_ignored_paths_matter() {
        let dir = Path::new("/srv/pkg");
        let ignored = [PathBuf::from("/srv/pkg/state"), PathBuf::from("/srv/pkg/kubeconfig")];
        let cases = [
            ("/srv/pkg/deployment.yaml", true),
            ("/srv/pkg/base/kustomization.yaml", true),
            ("/srv/pkg/state/store.db-wal", false),
            ("/srv/pkg/kubeconfig", false),
            ("/srv/pkg/.bosun/apiserver/store.db", false),
            ("/srv/pkg/.git/index", false),
            ("/srv/pkg/base/.deployment.yaml.swp", false),
        ];
        for (path, expected) in cases {
            assert_eq!(is_relevant(Path::new(path), dir, &ignored), expected, "{path}");
        }
    }

    #[tokio::test]
    async fn a_change_is_reported_once_for_its_directory_and_ignored_paths_are_not() {
        let first = tempfile::tempdir().expect("tempdir");
        let second = tempfile::tempdir().expect("tempdir");
        let state = first.path().join("state");
        std::fs::create_dir(&state).expect("mkdir");
        let mut trigger = FileTrigger::watch(
            &[first.path().to_path_buf(), second.path().to_path_buf()],
            std::slice::from_ref(&state),
        )
        .expect("watch");
        // Writes the trigger must ignore, then one it must report: the first report is the
        // second directory alone.
        std::fs::write(state.join("store.db"), "x").expect("write");
        std::fs::write(first.path().join(".hidden"), "x").expect("write");
        std::fs::write(second.path().join("cm.yaml"), "a: 1").expect("write");
        let changed = tokio::time::timeout(Duration::from_secs(30), trigger.changed()).await.expect("a change");
        assert_eq!(changed, Some(vec![1]));
    }
}
