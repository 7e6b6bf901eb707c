//! hostPath volumes: the `type` check of upstream's hostpath plugin
//! (`checkType`), creating `DirectoryOrCreate` (0755) and `FileOrCreate`
//! (0644) paths, with upstream's error messages.

use std::fs;
use std::io::ErrorKind;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// The file type names upstream's host utilities report (`GetFileType`).
fn file_type(path: &Path) -> std::io::Result<&'static str> {
    let ft = fs::metadata(path)?.file_type();
    Ok(if ft.is_dir() {
        "Directory"
    } else if ft.is_socket() {
        "Socket"
    } else if ft.is_char_device() {
        "CharDevice"
    } else if ft.is_block_device() {
        "BlockDevice"
    } else {
        "File"
    })
}

/// Checks (and for the `…OrCreate` types creates) `path` for a hostPath
/// `type`: `""` checks nothing; `Directory`, `File`, `Socket`, `CharDevice`,
/// `BlockDevice` must exist with that type. Errors are upstream's messages,
/// e.g. `hostPath type check failed: /x is not a directory, it's a File`.
pub fn check_type(path: &Path, path_type: &str) -> Result<(), String> {
    let p = path.display();
    let exists = fs::metadata(path).is_ok();
    let (expected, description) = match path_type {
        "" => return Ok(()),
        "DirectoryOrCreate" if !exists => {
            return match fs::DirBuilder::new().recursive(true).mode(0o755).create(path) {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == ErrorKind::AlreadyExists => Ok(()),
                Err(e) => Err(format!("mkdir {p}: {e}")),
            };
        }
        "FileOrCreate" if !exists => {
            // Like upstream, the parent directory must exist.
            return match fs::OpenOptions::new().write(true).create(true).truncate(false).mode(0o644).open(path) {
                Ok(_) => Ok(()),
                Err(e) if e.kind() == ErrorKind::AlreadyExists => Ok(()),
                Err(e) => Err(format!("open {p}: {e}")),
            };
        }
        "DirectoryOrCreate" | "Directory" => ("Directory", "directory"),
        "FileOrCreate" | "File" => ("File", "file"),
        "Socket" => ("Socket", "socket file"),
        "CharDevice" => ("CharDevice", "character device"),
        "BlockDevice" => ("BlockDevice", "block device"),
        other => return Err(format!("{other} is an invalid volume type")),
    };
    if !exists {
        return Err(format!("hostPath {p} doesn't exist"));
    }
    match file_type(path) {
        Ok(actual) if actual == expected => Ok(()),
        Ok(actual) => Err(format!("hostPath type check failed: {p} is not a {description}, it's a {actual}")),
        Err(e) => {
            Err(format!("hostPath type check failed, {p} is not a {description}, unable to determine its type: {e}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(p: &Path) -> u32 {
        fs::metadata(p).unwrap().permissions().mode() & 0o7777
    }

    #[test]
    fn host_path_or_create_types_create_with_upstream_modes() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("a/b");
        check_type(&d, "DirectoryOrCreate").unwrap();
        assert!(d.is_dir());
        // umask may only remove bits from 0755.
        assert_eq!(mode(&d) & !0o755, 0);
        let f = dir.path().join("f");
        check_type(&f, "FileOrCreate").unwrap();
        assert!(f.is_file());
        assert_eq!(mode(&f) & !0o644, 0);
        // Existing paths of the right type pass again.
        check_type(&d, "DirectoryOrCreate").unwrap();
        check_type(&f, "FileOrCreate").unwrap();
        check_type(&d, "Directory").unwrap();
        check_type(&f, "File").unwrap();
        // FileOrCreate does not create missing parents.
        assert!(check_type(&dir.path().join("missing/f"), "FileOrCreate").is_err());
    }

    #[test]
    fn host_path_type_mismatches_use_upstream_messages() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("f");
        fs::write(&f, "").unwrap();
        let d = dir.path();
        assert_eq!(
            check_type(&f, "Directory").unwrap_err(),
            format!("hostPath type check failed: {} is not a directory, it's a File", f.display())
        );
        assert_eq!(
            check_type(&f, "DirectoryOrCreate").unwrap_err(),
            format!("hostPath type check failed: {} is not a directory, it's a File", f.display())
        );
        assert_eq!(
            check_type(d, "FileOrCreate").unwrap_err(),
            format!("hostPath type check failed: {} is not a file, it's a Directory", d.display())
        );
        assert_eq!(
            check_type(&f, "Socket").unwrap_err(),
            format!("hostPath type check failed: {} is not a socket file, it's a File", f.display())
        );
        let missing = d.join("nope");
        assert_eq!(check_type(&missing, "File").unwrap_err(), format!("hostPath {} doesn't exist", missing.display()));
        assert_eq!(
            check_type(&missing, "Directory").unwrap_err(),
            format!("hostPath {} doesn't exist", missing.display())
        );
        check_type(&missing, "").unwrap();
        check_type(Path::new("/dev/null"), "CharDevice").unwrap();
        assert!(check_type(Path::new("/dev/null"), "BlockDevice").unwrap_err().contains("is not a block device"));
        let sock = d.join("s.sock");
        let _l = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        check_type(&sock, "Socket").unwrap();
        assert_eq!(check_type(&f, "Weird").unwrap_err(), "Weird is an invalid volume type");
    }
}
