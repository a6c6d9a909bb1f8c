//! MPI-IO for the collective write of an MPI ensemble (the `mpi` feature):
//! the one place VGPU calls MPI's C file functions (`MPI_File_open`,
//! `MPI_File_write_at_all`, `MPI_File_close`, through `mpi::ffi`, which rsmpi
//! re-exports from mpi-sys; rsmpi has no safe wrapper for them). Every call is
//! collective over the world, its return code checked and turned into
//! [`MpiIoError`] (MPI's own message); files use MPI's default error handler
//! for files, `MPI_ERRORS_RETURN`, so a failure returns rather than aborts.

use crate::mpi_world::World;
use mpi::ffi;
use mpi::raw::AsRaw;
use std::ffi::{c_char, c_int, CString};
use std::path::Path;

/// Bytes per `MPI_File_write_at_all` call (its count is a C `int`).
const CHUNK: usize = 1 << 30;

/// A failed MPI-IO call: the operation, the file, MPI's error code and message.
#[derive(Debug, thiserror::Error)]
#[error("MPI-IO {op} of {path}: {message} (MPI error code {code})")]
pub struct MpiIoError {
    /// `MPI_File_open`, `MPI_File_write_at_all`, `MPI_File_close`.
    pub op: &'static str,
    /// The file.
    pub path: String,
    /// MPI's error code.
    pub code: i32,
    /// `MPI_Error_string` of the code (or why the call was not made).
    pub message: String,
}

/// MPI's message for an error code.
fn error_string(code: c_int) -> String {
    let mut buf = vec![0u8; 1024];
    let mut len: c_int = 0;
    // SAFETY: the buffer holds MPI_MAX_ERROR_STRING (256 in OpenMPI, at most
    // 1024 in the implementations we know) bytes; MPI writes at most that and
    // the length.
    let rc = unsafe { ffi::MPI_Error_string(code, buf.as_mut_ptr() as *mut c_char, &mut len) };
    if rc != 0 {
        return format!("error {code}");
    }
    buf.truncate(len.clamp(0, 1024) as usize);
    String::from_utf8_lossy(&buf).into_owned()
}

/// A file opened for writing by every rank of a [`World`] (collectively).
#[derive(Debug)]
pub struct MpiFile {
    fh: ffi::MPI_File,
    path: String,
    closed: bool,
}

impl MpiFile {
    fn check(&self, op: &'static str, rc: c_int) -> Result<(), MpiIoError> {
        check(op, &self.path, rc)
    }

    /// Opens `path` (which exists: rank 0 created it with its header) for
    /// writing on every rank of `world`. Collective: every rank calls it.
    ///
    /// # Errors
    /// [`MpiIoError`] with MPI's message; a path with a NUL byte.
    pub fn open_write(world: &World, path: &Path) -> Result<MpiFile, MpiIoError> {
        let shown = path.display().to_string();
        let c = CString::new(path.as_os_str().to_string_lossy().as_bytes()).map_err(|_| {
            MpiIoError {
                op: "MPI_File_open",
                path: shown.clone(),
                code: -1,
                message: "the path holds a NUL byte".into(),
            }
        })?;
        let comm = world.communicator();
        let mut fh: ffi::MPI_File = unsafe { ffi::RSMPI_FILE_NULL };
        // SAFETY: `comm` is the world's live communicator, `c` a NUL-terminated
        // path that outlives the call, `fh` a valid out-pointer; the mode is
        // write-only on an existing file.
        let rc = unsafe {
            ffi::MPI_File_open(
                comm.as_raw(),
                c.as_ptr(),
                ffi::MPI_MODE_WRONLY as c_int,
                ffi::RSMPI_INFO_NULL,
                &mut fh,
            )
        };
        check("MPI_File_open", &shown, rc)?;
        Ok(MpiFile {
            fh,
            path: shown,
            closed: false,
        })
    }

    /// Writes `bytes` at byte `offset` of the file, collectively: every rank
    /// calls it (with its own bytes, possibly none), making `rounds` calls of
    /// at most 2^30 bytes each; `rounds` must be the same on every rank
    /// ([`rounds`]). Every round is made even after one failed here (so no
    /// other rank waits); the first failure is returned.
    ///
    /// # Errors
    /// [`MpiIoError`] with MPI's message, or an offset beyond `MPI_Offset`.
    pub fn write_at_all(
        &mut self,
        offset: u64,
        bytes: &[u8],
        rounds: usize,
    ) -> Result<(), MpiIoError> {
        let mut first: Result<(), MpiIoError> = Ok(());
        for r in 0..rounds {
            let lo = r.saturating_mul(CHUNK).min(bytes.len());
            let hi = r.saturating_add(1).saturating_mul(CHUNK).min(bytes.len());
            let at = offset
                .checked_add(lo as u64)
                .and_then(|x| ffi::MPI_Offset::try_from(x).ok());
            // An offset beyond MPI_Offset: this rank still takes part, with
            // nothing to write.
            let (at, chunk) = match at {
                Some(at) => (at, &bytes[lo..hi]),
                None => {
                    if first.is_ok() {
                        first = Err(MpiIoError {
                            op: "MPI_File_write_at_all",
                            path: self.path.clone(),
                            code: -1,
                            message: format!("offset {offset} + {lo} exceeds MPI_Offset"),
                        });
                    }
                    (0, &bytes[..0])
                }
            };
            // SAFETY: `fh` is open; `chunk` is valid for its length (at most
            // 2^30 bytes, a C int) of MPI_UINT8_T; the status is ignored.
            let rc = unsafe {
                ffi::MPI_File_write_at_all(
                    self.fh,
                    at,
                    chunk.as_ptr() as *const std::ffi::c_void,
                    chunk.len() as c_int,
                    ffi::RSMPI_UINT8_T,
                    ffi::RSMPI_STATUS_IGNORE,
                )
            };
            if first.is_ok() {
                first = self.check("MPI_File_write_at_all", rc);
            }
        }
        first
    }

    /// Closes the file (collective; flushes what was written).
    ///
    /// # Errors
    /// [`MpiIoError`] with MPI's message.
    pub fn close(mut self) -> Result<(), MpiIoError> {
        self.closed = true;
        // SAFETY: `fh` is open and closed once (MPI sets it to MPI_FILE_NULL).
        let rc = unsafe { ffi::MPI_File_close(&mut self.fh) };
        self.check("MPI_File_close", rc)
    }
}

impl Drop for MpiFile {
    fn drop(&mut self) {
        if !self.closed {
            // Collective: reached on every rank alike (a failed write is
            // reported by every rank's all-ok check before the handles drop).
            // SAFETY: `fh` is open and closed once.
            unsafe {
                ffi::MPI_File_close(&mut self.fh);
            }
        }
    }
}

/// The calls of [`MpiFile::write_at_all`] every rank makes for `len` bytes
/// here: the most any rank needs (a collective, so every rank agrees).
pub fn rounds(world: &World, len: usize) -> usize {
    let mine = len.div_ceil(CHUNK) as u64;
    world.all_gather(mine).into_iter().max().unwrap_or(0) as usize
}

fn check(op: &'static str, path: &str, rc: c_int) -> Result<(), MpiIoError> {
    if rc == 0 {
        return Ok(());
    }
    Err(MpiIoError {
        op,
        path: path.into(),
        code: rc,
        message: error_string(rc),
    })
}
