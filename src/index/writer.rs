//! Who writes under a corpus directory, and which builds were abandoned.
//!
//! Several processes write beside each other on one data volume: two
//! ingests of the same corpus started close together, a retried pod while
//! the one before it still terminates, the shards of one Job. PIDs do not
//! tell them apart (every container's process is PID 1), so files one
//! writer owns are named by its [`writer_id`]: the pod's UID where the
//! operator passes it (`TRELLIS_POD_UID`), else the host and the PID.
//!
//! A build holds an exclusive lock on `.build-<version>-<writer>.lock`
//! beside its directory for as long as it runs; the lock goes with the
//! process, however it ends. A build directory whose lock nobody holds was
//! left by a writer that stopped, and [`collect_abandoned`] removes it.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

use super::IndexError;

/// The environment variable that names the writer: the operator sets it
/// to the pod's UID through the downward API.
pub const POD_UID_ENV: &str = "TRELLIS_POD_UID";

/// A build directory with no lock file beside it was made by a release
/// before build locks; it is taken as abandoned once untouched this long.
const UNLOCKED_BUILD_AGE: Duration = Duration::from_secs(3600);

/// This process' name among the writers of a data volume: the pod's UID
/// in a cluster, else `<host>-<pid>`. Only `[A-Za-z0-9-]` is kept, so it
/// fits in a file name.
pub fn writer_id() -> &'static str {
    static ID: OnceLock<String> = OnceLock::new();
    ID.get_or_init(|| {
        let raw = std::env::var(POD_UID_ENV)
            .ok()
            .filter(|uid| !uid.trim().is_empty())
            .unwrap_or_else(|| {
                let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
                    .unwrap_or_default()
                    .trim()
                    .to_string();
                format!("{host}-{}", std::process::id())
            });
        raw.chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect()
    })
}

/// A version being built: `<root>/.build-<version>-<writer>/`, locked for
/// as long as this value lives. Dropping it removes what is left of the
/// directory (a build that failed, or lost the race to publish) and the
/// lock file.
pub struct BuildDir {
    dir: PathBuf,
    lock_path: PathBuf,
    _lock: File,
}

impl BuildDir {
    /// Locks and creates an empty build directory for `version`.
    pub fn create(root: &Path, version: &str) -> Result<Self, IndexError> {
        let name = format!(".build-{version}-{}", writer_id());
        let dir = root.join(&name);
        let lock_path = root.join(format!("{name}.lock"));
        // The lock first: a collector only looks at directories, and the
        // directory exists only while its lock is held.
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| IndexError::io(&lock_path, e))?;
        lock.lock().map_err(|e| IndexError::io(&lock_path, e))?;
        if dir.exists() {
            std::fs::remove_dir_all(&dir).map_err(|e| IndexError::io(&dir, e))?;
        }
        std::fs::create_dir_all(&dir).map_err(|e| IndexError::io(&dir, e))?;
        Ok(Self {
            dir,
            lock_path,
            _lock: lock,
        })
    }

    pub fn path(&self) -> &Path {
        &self.dir
    }
}

impl Drop for BuildDir {
    fn drop(&mut self) {
        if self.dir.exists() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
        let _ = std::fs::remove_file(&self.lock_path);
    }
}

/// Removes the build directories under `root` that no running writer
/// holds (and their lock files); returns what it removed.
pub fn collect_abandoned(root: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        if !name.starts_with(".build-") {
            continue;
        }
        let path = entry.path();
        let (dir, lock_path) = match name.strip_suffix(".lock") {
            Some(dir) => (root.join(dir), path.clone()),
            None if path.is_dir() => (path.clone(), root.join(format!("{name}.lock"))),
            None => continue,
        };
        if name.ends_with(".lock") && dir.exists() {
            // Seen again, and decided, as its directory.
            continue;
        }
        let abandoned = if lock_path.exists() {
            unheld(&lock_path)
        } else {
            untouched_for(&dir, UNLOCKED_BUILD_AGE)
        };
        if !abandoned {
            continue;
        }
        if dir.exists() {
            match std::fs::remove_dir_all(&dir) {
                Ok(()) => removed.push(dir.clone()),
                Err(e) => {
                    tracing::warn!(dir = %dir.display(), error = %e, "could not remove an abandoned build");
                    continue;
                }
            }
        }
        let _ = std::fs::remove_file(&lock_path);
    }
    removed
}

/// Whether no process holds the lock at `path` (taken and let go at once).
fn unheld(path: &Path) -> bool {
    let Ok(file) = OpenOptions::new().write(true).open(path) else {
        return false;
    };
    file.try_lock().is_ok()
}

fn untouched_for(path: &Path, age: Duration) -> bool {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| SystemTime::now().duration_since(t).ok())
        .is_some_and(|elapsed| elapsed >= age)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_build_is_kept_and_a_released_one_collected() {
        let root = tempfile::tempdir().unwrap();
        let build = BuildDir::create(root.path(), "v1").unwrap();
        std::fs::write(build.path().join("vectors.f32"), b"half").unwrap();
        // Another writer's build, whose process died: its lock file stays,
        // unheld.
        let dead = root.path().join(".build-v1-another-pod");
        std::fs::create_dir(&dead).unwrap();
        std::fs::write(root.path().join(".build-v1-another-pod.lock"), b"").unwrap();

        assert_eq!(collect_abandoned(root.path()), vec![dead.clone()]);
        assert!(build.path().is_dir(), "a running build is never collected");
        assert!(!root.path().join(".build-v1-another-pod.lock").exists());

        let path = build.path().to_path_buf();
        drop(build);
        assert!(!path.exists());
        assert_eq!(std::fs::read_dir(root.path()).unwrap().count(), 0);
    }

    #[test]
    fn an_unlocked_build_of_an_older_release_waits_an_hour() {
        let root = tempfile::tempdir().unwrap();
        let old = root.path().join(".build-v1-1");
        std::fs::create_dir(&old).unwrap();
        assert!(collect_abandoned(root.path()).is_empty());
        let long_ago = SystemTime::now() - UNLOCKED_BUILD_AGE - Duration::from_secs(60);
        File::open(&old).unwrap().set_modified(long_ago).unwrap();
        assert_eq!(collect_abandoned(root.path()), vec![old]);
    }

    #[test]
    fn the_writer_id_fits_a_file_name() {
        let id = writer_id();
        assert!(!id.is_empty());
        assert!(id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'));
    }
}
