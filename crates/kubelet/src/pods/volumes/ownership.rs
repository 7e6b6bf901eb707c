//! `fsGroup` ownership of a volume, as upstream's `SetVolumeOwnership`:
//! every file and directory (not following symlinks) gets the group, group
//! read (and write unless the volume is read-only) permission, and
//! directories also group execute and setgid, so new files inherit the group.
//! `fsGroupChangePolicy: OnRootMismatch` is treated as `Always` (the walk runs
//! only when a volume is created or its content rewritten).

use std::fs;
use std::io;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

/// Applies `gid` to everything under `root` (including `root`).
pub fn set_volume_ownership(root: &Path, gid: u32, read_only: bool) -> io::Result<()> {
    let meta = fs::symlink_metadata(root)?;
    std::os::unix::fs::lchown(root, None, Some(gid))?;
    if meta.file_type().is_symlink() {
        return Ok(());
    }
    let mut mask = if read_only { 0o440 } else { 0o660 };
    if meta.is_dir() {
        mask |= 0o110 | libc::S_ISGID;
    }
    let mode = meta.mode() & 0o7777;
    if mode | mask != mode {
        fs::set_permissions(root, fs::Permissions::from_mode(mode | mask))?;
    }
    if meta.is_dir() {
        for entry in fs::read_dir(root)? {
            set_volume_ownership(&entry?.path(), gid, read_only)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fs_group_sets_group_setgid_and_group_bits() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("d");
        fs::create_dir(&sub).unwrap();
        fs::set_permissions(&sub, fs::Permissions::from_mode(0o700)).unwrap();
        let f = sub.join("f");
        fs::write(&f, "x").unwrap();
        fs::set_permissions(&f, fs::Permissions::from_mode(0o400)).unwrap();
        std::os::unix::fs::symlink("d/f", dir.path().join("link")).unwrap();
        // Our own group works without root; another group needs root.
        // SAFETY: getegid/geteuid have no preconditions.
        let gid = if unsafe { libc::geteuid() } == 0 { 4321 } else { unsafe { libc::getegid() } };
        set_volume_ownership(dir.path(), gid, true).unwrap();
        let m = |p: &Path| fs::symlink_metadata(p).unwrap();
        assert_eq!(m(&f).gid(), gid);
        assert_eq!(m(&f).mode() & 0o7777, 0o440);
        assert_eq!(m(&sub).mode() & 0o7777, 0o2750);
        assert_eq!(m(&dir.path().join("link")).gid(), gid);
        set_volume_ownership(dir.path(), gid, false).unwrap();
        assert_eq!(m(&f).mode() & 0o7777, 0o660);
    }
}
