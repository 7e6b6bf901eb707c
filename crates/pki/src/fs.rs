//! Writing key material: atomic replace, explicit modes.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

use crate::PkiError;

/// Mode of private keys and kubeconfigs (owner read/write only).
pub const PRIVATE_FILE_MODE: u32 = 0o600;
/// Mode of certificates and public keys (world-readable, as kubeadm writes them).
pub const PUBLIC_FILE_MODE: u32 = 0o644;
/// Mode of the TLS directory (owner only).
pub const PRIVATE_DIR_MODE: u32 = 0o700;

/// Creates `dir` (and its parents) if needed and sets its mode to 0700.
pub fn ensure_private_dir(dir: &Path) -> Result<(), PkiError> {
    let existed = dir.is_dir();
    fs::create_dir_all(dir).map_err(|e| PkiError::io("create directory", dir, e))?;
    let mode = fs::metadata(dir).map_err(|e| PkiError::io("inspect", dir, e))?.permissions().mode() & 0o777;
    if mode != PRIVATE_DIR_MODE {
        fs::set_permissions(dir, fs::Permissions::from_mode(PRIVATE_DIR_MODE))
            .map_err(|e| PkiError::io("set mode 0700 on", dir, e))?;
        if existed {
            tracing::warn!(component = "pki", path = %dir.display(), old_mode = format!("{mode:o}"), "TLS directory was accessible to other users; restricted it to mode 0700");
        }
    }
    Ok(())
}

/// Writes `contents` to `path` atomically (temporary file in the same
/// directory, fsync, rename) with the given mode; the parent directory must exist.
pub(crate) fn write_atomic(path: &Path, contents: &[u8], mode: u32) -> Result<(), PkiError> {
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    let file_name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = dir.join(format!(".{file_name}.tmp-{}", std::process::id()));
    let result = (|| {
        let _ = fs::remove_file(&tmp);
        let mut f = OpenOptions::new().write(true).create_new(true).mode(mode).open(&tmp)?;
        // The mode given to open() is filtered by the umask; set it exactly.
        f.set_permissions(fs::Permissions::from_mode(mode))?;
        f.write_all(contents)?;
        f.sync_all()?;
        fs::rename(&tmp, path)?;
        if let Ok(d) = fs::File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    result.map_err(|e| {
        let _ = fs::remove_file(&tmp);
        PkiError::io("write", path, e)
    })
}

/// Reads a file that may be absent: `Ok(None)` when it does not exist.
pub(crate) fn read_optional(path: &Path) -> Result<Option<String>, PkiError> {
    match fs::read_to_string(path) {
        Ok(s) => Ok(Some(s)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(PkiError::io("read", path, e)),
    }
}

/// Makes sure an existing private file is not readable by group or others
/// (e.g. after a restore from a backup); never widens a mode.
pub(crate) fn restrict_private_file(path: &Path) -> Result<(), PkiError> {
    let mode = fs::metadata(path).map_err(|e| PkiError::io("inspect", path, e))?.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        fs::set_permissions(path, fs::Permissions::from_mode(PRIVATE_FILE_MODE))
            .map_err(|e| PkiError::io("set mode 0600 on", path, e))?;
        tracing::warn!(component = "pki", path = %path.display(), old_mode = format!("{mode:o}"), "private key was readable by other users; restricted it to mode 0600");
    }
    Ok(())
}

/// Writes a file that holds secrets (mode 0600), creating its parent
/// directories if needed, and leaves it alone when it already holds exactly
/// `contents`. Returns whether the file was (re)written.
///
/// Used for kubeconfigs, including `--write-kubeconfig` copies outside the
/// data dir.
pub fn write_private_file(path: &Path, contents: &[u8]) -> Result<bool, PkiError> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent).map_err(|e| PkiError::io("create directory", parent, e))?;
    }
    if let Ok(existing) = fs::read(path) {
        if existing == contents {
            restrict_private_file(path)?;
            return Ok(false);
        }
    }
    write_atomic(path, contents, PRIVATE_FILE_MODE)?;
    Ok(true)
}
