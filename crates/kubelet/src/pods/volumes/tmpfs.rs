//! Memory-backed volume directories: mounting a tmpfs (upstream's emptyDir
//! `medium: Memory`, and the secret/projected/downwardAPI wrappers), finding
//! mounts under a pod directory in `/proc/self/mountinfo`, and unmounting
//! them on teardown.

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// True if `dir` is a mount point (its device differs from its parent's).
pub fn is_mount_point(dir: &Path) -> bool {
    let (Ok(me), Some(Ok(parent))) = (std::fs::metadata(dir), dir.parent().map(std::fs::metadata)) else {
        return false;
    };
    me.dev() != parent.dev()
}

fn cstr(p: &Path) -> io::Result<CString> {
    CString::new(p.as_os_str().as_bytes()).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))
}

/// Mounts a tmpfs on `dir` (an existing directory) unless one is there;
/// `size_bytes` becomes the `size=` option as upstream (none: the kernel's
/// default of half the RAM). Returns true if it mounted.
pub fn ensure_tmpfs(dir: &Path, size_bytes: Option<u64>) -> io::Result<bool> {
    if is_mount_point(dir) {
        return Ok(false);
    }
    let target = cstr(dir)?;
    let source = CString::new("tmpfs").expect("static");
    let data = CString::new(size_bytes.map(|s| format!("size={s}")).unwrap_or_default()).expect("no NUL");
    // SAFETY: every pointer is a valid NUL-terminated string that outlives the call.
    let rc = unsafe {
        libc::mount(source.as_ptr(), target.as_ptr(), source.as_ptr(), 0, data.as_ptr() as *const libc::c_void)
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(true)
}

/// Decodes the octal escapes (`\040` for a space) of a mountinfo path.
fn unescape(field: &str) -> PathBuf {
    let b = field.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 < b.len() && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c)) {
            out.push((b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0'));
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    PathBuf::from(<std::ffi::OsString as std::os::unix::ffi::OsStringExt>::from_vec(out))
}

/// Every mount point at or below `dir` (per `/proc/self/mountinfo`), deepest
/// first, so they can be unmounted in order.
pub fn mounts_under(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let info = std::fs::read_to_string("/proc/self/mountinfo")?;
    let mut out: Vec<PathBuf> =
        info.lines().filter_map(|l| l.split(' ').nth(4)).map(unescape).filter(|p| p.starts_with(dir)).collect();
    out.sort_by_key(|p| std::cmp::Reverse(p.components().count()));
    out.dedup();
    Ok(out)
}

/// Unmounts `dir`: a plain unmount first, a lazy one (`MNT_DETACH`) if busy.
pub fn unmount(dir: &Path) -> io::Result<()> {
    let target = cstr(dir)?;
    // SAFETY: `target` is a valid NUL-terminated path.
    if unsafe { libc::umount2(target.as_ptr(), 0) } == 0 {
        return Ok(());
    }
    // SAFETY: as above.
    if unsafe { libc::umount2(target.as_ptr(), libc::MNT_DETACH) } == 0 {
        return Ok(());
    }
    let err = io::Error::last_os_error();
    if err.raw_os_error() == Some(libc::EINVAL) && !is_mount_point(dir) {
        return Ok(()); // not mounted (any more)
    }
    Err(err)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_root() -> bool {
        // SAFETY: geteuid has no preconditions.
        unsafe { libc::geteuid() == 0 }
    }

    #[test]
    fn mountinfo_escapes_decode() {
        assert_eq!(unescape("/a\\040b/c"), PathBuf::from("/a b/c"));
        assert_eq!(unescape("/plain"), PathBuf::from("/plain"));
    }

    #[test]
    fn tmpfs_mounts_with_size_and_unmounts() {
        if !is_root() {
            eprintln!("SKIPPED tmpfs_mounts_with_size_and_unmounts: mounting a tmpfs needs root");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let vol = dir.path().join("vol");
        std::fs::create_dir(&vol).unwrap();
        assert!(ensure_tmpfs(&vol, Some(1 << 20)).unwrap());
        assert!(!ensure_tmpfs(&vol, Some(1 << 20)).unwrap(), "idempotent");
        assert!(is_mount_point(&vol));
        assert_eq!(mounts_under(dir.path()).unwrap(), vec![vol.clone()]);
        // SAFETY: statfs on a valid path into a zeroed struct.
        let mut st: libc::statfs = unsafe { std::mem::zeroed() };
        let c = cstr(&vol).unwrap();
        assert_eq!(unsafe { libc::statfs(c.as_ptr(), &mut st) }, 0);
        assert_eq!(st.f_type as i64, libc::TMPFS_MAGIC);
        assert_eq!(st.f_blocks as u64 * st.f_bsize as u64, 1 << 20);
        unmount(&vol).unwrap();
        assert!(!is_mount_point(&vol));
        assert!(mounts_under(dir.path()).unwrap().is_empty());
    }
}
