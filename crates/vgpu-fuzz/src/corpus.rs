//! The seeds of each target, read from the repository: `examples/*.field`;
//! the PTX modules of `ptx-cases/` and of vgpu-ptx's tests (large modules cut
//! into one seed per entry, with the module's header); every `case.json` with
//! the files its folder needs; and generated `.npy` files.

use std::path::{Path, PathBuf};

use crate::{FuzzError, Target};

/// A file a case.json seed needs, relative to the case sandbox's root.
#[derive(Debug, Clone)]
pub struct CaseFile {
    /// Path relative to the sandbox root (`c7/x.bin`, `kernels.ptx`).
    pub path: PathBuf,
    /// Its contents.
    pub bytes: Vec<u8>,
}

/// The seeds of one target.
#[derive(Debug, Clone)]
pub struct Corpus {
    /// The target the seeds are for.
    pub target: Target,
    /// The seed inputs, sorted by their source's path.
    pub seeds: Vec<Vec<u8>>,
    /// case-json only: the folder of seed `i` in the sandbox (`c{i}`), and
    /// the files every seed's case refers to.
    pub case_files: Vec<CaseFile>,
}

/// Modules larger than this are cut into one seed per entry.
const WHOLE_MODULE_BYTES: usize = 16 * 1024;

/// The repository root this crate was built in (`crates/vgpu-fuzz/../..`).
pub fn default_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Whether `dir` is a VGPU repository root (it holds `examples/` and this
/// crate's manifest).
pub fn is_root(dir: &Path) -> bool {
    dir.join("crates/vgpu-fuzz/Cargo.toml").is_file() && dir.join("examples").is_dir()
}

/// The nearest repository root at or above `start`.
pub fn root_above(start: &Path) -> Option<PathBuf> {
    start
        .ancestors()
        .find(|d| is_root(d))
        .map(Path::to_path_buf)
}

/// The repository to read seeds from and save findings in, for a binary that
/// may run on another machine than the one it was built on: the nearest root
/// at or above the current directory, else above the executable (a binary
/// left in the repository's `target/release/`), else the one this crate was
/// built in when it still exists.
///
/// # Errors
/// [`FuzzError::NoRoot`] when none is found (pass `--root`).
pub fn find_root() -> Result<PathBuf, FuzzError> {
    let cwd = std::env::current_dir().ok();
    let exe = std::env::current_exe().ok();
    cwd.as_deref()
        .and_then(root_above)
        .or_else(|| exe.as_deref().and_then(root_above))
        .or_else(|| Some(default_root()).filter(|d| is_root(d)))
        .ok_or_else(|| FuzzError::NoRoot {
            cwd: cwd.map_or_else(|| "?".into(), |p| p.display().to_string()),
        })
}

fn walk(dir: &Path, keep: &dyn Fn(&Path) -> bool, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.filter_map(|e| e.ok()) {
        let p = e.path();
        if p.is_dir() {
            walk(&p, keep, out);
        } else if keep(&p) {
            out.push(p);
        }
    }
}

fn read(p: &Path) -> Result<Vec<u8>, FuzzError> {
    std::fs::read(p).map_err(|source| FuzzError::Io {
        path: p.display().to_string(),
        source,
    })
}

/// Cuts a PTX module into its header (everything before the first function)
/// followed by each `.entry` in turn.
pub fn ptx_entries(text: &str) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    let is_fn = |l: &str| {
        let t = l.trim_start();
        [".visible", ".entry", ".weak", ".func", ".extern"]
            .iter()
            .any(|p| t.starts_with(p))
    };
    let first = lines.iter().position(|l| is_fn(l)).unwrap_or(lines.len());
    let header = lines[..first].join("\n");
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if l.contains(".entry") && is_fn(l) {
            let end = lines[i..]
                .iter()
                .position(|l| l.trim_end() == "}")
                .map_or(lines.len(), |e| i + e + 1);
            out.push(format!("{header}\n{}\n", lines[i..end].join("\n")));
        }
    }
    out
}

impl Corpus {
    /// Reads the seeds of `target` from the repository at `root`.
    pub fn load(target: Target, root: &Path) -> Result<Corpus, FuzzError> {
        let mut c = Corpus {
            target,
            seeds: Vec::new(),
            case_files: Vec::new(),
        };
        match target {
            Target::Field => {
                let mut files = Vec::new();
                walk(
                    &root.join("examples"),
                    &|p| p.extension().is_some_and(|e| e == "field"),
                    &mut files,
                );
                files.sort();
                for f in files {
                    c.seeds.push(read(&f)?);
                }
            }
            Target::Ptx => {
                let mut files = Vec::new();
                let is_ptx = |p: &Path| p.extension().is_some_and(|e| e == "ptx");
                walk(&root.join("ptx-cases"), &is_ptx, &mut files);
                walk(&root.join("crates/vgpu-ptx/tests"), &is_ptx, &mut files);
                files.sort();
                for f in files {
                    let b = read(&f)?;
                    let text = String::from_utf8_lossy(&b).into_owned();
                    let entries = ptx_entries(&text);
                    if entries.len() > 1 || b.len() > WHOLE_MODULE_BYTES {
                        c.seeds.extend(entries.into_iter().map(String::into_bytes));
                    }
                    if b.len() <= WHOLE_MODULE_BYTES {
                        c.seeds.push(b);
                    }
                }
            }
            Target::CaseJson => c.load_cases(root)?,
            Target::Npy => c.seeds = crate::npy::seeds(),
        }
        if c.seeds.is_empty() {
            return Err(FuzzError::NoSeeds {
                target: target.name(),
                root: root.display().to_string(),
            });
        }
        Ok(c)
    }

    /// Every case.json becomes seed `i`, its folder `c{i}` in the sandbox
    /// holding copies of its `.bin` files; the modules it names go where the
    /// case expects them (`../name.ptx` at the sandbox root).
    fn load_cases(&mut self, root: &Path) -> Result<(), FuzzError> {
        let mut files = Vec::new();
        let is_case = |p: &Path| p.file_name().is_some_and(|n| n == "case.json");
        walk(&root.join("ptx-cases"), &is_case, &mut files);
        walk(
            &root.join("crates/vgpu-ptx/tests/cases"),
            &is_case,
            &mut files,
        );
        files.sort();
        let mut modules = std::collections::BTreeSet::new();
        for (i, f) in files.iter().enumerate() {
            let dir = f.parent().unwrap_or(Path::new("."));
            let sub = PathBuf::from(format!("c{i}"));
            let mut names = Vec::new();
            for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                let p = e.path();
                if p.is_file() {
                    names.push(p);
                }
            }
            names.sort();
            for p in names {
                let name = p.file_name().unwrap_or_default();
                if p.extension().is_some_and(|e| e == "bin" || e == "ptx") {
                    self.case_files.push(CaseFile {
                        path: sub.join(name),
                        bytes: read(&p)?,
                    });
                }
            }
            // The module of `"ptx": "../name.ptx"`, once, at the root.
            let text = read(f)?;
            if let Some(parent) = dir.parent() {
                for e in std::fs::read_dir(parent).into_iter().flatten().flatten() {
                    let p = e.path();
                    let name = p
                        .file_name()
                        .unwrap_or_default()
                        .to_string_lossy()
                        .into_owned();
                    if p.extension().is_some_and(|e| e == "ptx")
                        && String::from_utf8_lossy(&text).contains(&format!("../{name}"))
                        && modules.insert(name.clone())
                    {
                        self.case_files.push(CaseFile {
                            path: PathBuf::from(&name),
                            bytes: read(&p)?,
                        });
                    }
                }
            }
            self.seeds.push(text);
        }
        Ok(())
    }
}
