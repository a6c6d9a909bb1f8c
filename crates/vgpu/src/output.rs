//! Output files written whole or not at all. A run's files are first written
//! under temporary names beside their final ones and renamed together when every
//! one of them is complete; a failure, a panic or Ctrl-C (with
//! [`remove_pending_on_interrupt`]) removes the temporary files, so no partial
//! output file is ever left under a name the user asked for.

use crate::Error;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Temporary files of every [`OutputSet`] of the process not yet renamed or
/// removed: what the Ctrl-C handler deletes.
static PENDING: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn pending() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    PENDING
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Installs a Ctrl-C (SIGINT/SIGTERM) handler that removes the temporary files
/// of outputs being written and exits with status 130. Call once, early in
/// `main`; a second call is a no-op.
pub fn remove_pending_on_interrupt() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // Failing to install (another handler exists) leaves the default
        // behaviour; outputs are still never partial under their final names.
        let _ = ctrlc::set_handler(|| {
            for p in pending().drain(..) {
                let _ = std::fs::remove_file(p);
            }
            eprintln!("interrupted: no output written");
            std::process::exit(130);
        });
    });
}

/// A set of output files committed together.
#[derive(Debug, Default)]
pub struct OutputSet {
    files: Vec<(PathBuf, PathBuf)>,
}

impl OutputSet {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Writes `path`'s content through `write`, which receives the temporary
    /// path to write to. Nothing appears under `path` until [`OutputSet::commit`].
    pub fn write(
        &mut self,
        path: &Path,
        write: impl FnOnce(&Path) -> Result<(), String>,
    ) -> Result<(), Error> {
        let name = path.file_name().ok_or_else(|| Error::Io {
            path: path.display().to_string(),
            source: std::io::Error::other("not a file name"),
        })?;
        let tmp = path.with_file_name(format!(
            ".{}.vgpu-partial-{}",
            name.to_string_lossy(),
            std::process::id()
        ));
        pending().push(tmp.clone());
        self.files.push((tmp.clone(), path.to_path_buf()));
        write(&tmp).map_err(|e| Error::Io {
            path: path.display().to_string(),
            source: std::io::Error::other(e),
        })
    }

    /// Renames every file to its final name. The renames happen only when each
    /// final name can take a file (it is not a directory), so a set is renamed
    /// whole or, with a clear error, not at all; the temporaries are removed.
    pub fn commit(mut self) -> Result<(), Error> {
        if let Some((_, path)) = self.files.iter().find(|(_, p)| p.is_dir()) {
            return Err(Error::Io {
                path: path.display().to_string(),
                source: std::io::Error::other("is a directory; nothing was written"),
            });
        }
        for (tmp, path) in std::mem::take(&mut self.files) {
            pending().retain(|p| p != &tmp);
            std::fs::rename(&tmp, &path).map_err(|e| {
                let _ = std::fs::remove_file(&tmp);
                Error::Io {
                    path: path.display().to_string(),
                    source: e,
                }
            })?;
        }
        Ok(())
    }
}

impl Drop for OutputSet {
    /// Removes the temporary files of a set that was not committed.
    fn drop(&mut self) {
        for (tmp, _) in self.files.drain(..) {
            pending().retain(|p| p != &tmp);
            let _ = std::fs::remove_file(&tmp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An empty folder of this test run (a folder an earlier run with the
    /// same process id left is emptied first).
    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("vgpu-output-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn files_appear_only_on_commit() {
        let d = dir("commit");
        let (a, b) = (d.join("a.npy"), d.join("b.npy"));
        let mut set = OutputSet::new();
        set.write(&a, |t| std::fs::write(t, b"A").map_err(|e| e.to_string()))
            .unwrap();
        set.write(&b, |t| std::fs::write(t, b"B").map_err(|e| e.to_string()))
            .unwrap();
        assert!(!a.exists() && !b.exists());
        set.commit().unwrap();
        assert_eq!(std::fs::read(&a).unwrap(), b"A");
        assert_eq!(std::fs::read(&b).unwrap(), b"B");
        assert_eq!(
            std::fs::read_dir(&d).unwrap().count(),
            2,
            "no temporary left"
        );
    }

    #[test]
    fn a_failure_leaves_nothing_and_keeps_the_old_file() {
        let d = dir("fail");
        let a = d.join("a.npy");
        std::fs::write(&a, b"old").unwrap();
        {
            let mut set = OutputSet::new();
            set.write(&a, |t| {
                std::fs::write(t, b"half").map_err(|e| e.to_string())
            })
            .unwrap();
            let e = set
                .write(&d.join("b.npy"), |_| Err("disk full".into()))
                .unwrap_err();
            assert!(e.to_string().contains("disk full"), "{e}");
        }
        assert_eq!(std::fs::read(&a).unwrap(), b"old");
        assert_eq!(
            std::fs::read_dir(&d).unwrap().count(),
            1,
            "no temporary left"
        );
        assert!(pending().iter().all(|p| !p.starts_with(&d)));
    }
}
