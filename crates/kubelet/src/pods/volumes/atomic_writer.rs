//! The atomic writer of API-data volumes (configMap, secret, downwardAPI,
//! projected), as upstream's `pkg/volume/util/atomic_writer.go`:
//!
//! ```text
//! <volume>/..2026_11_30_00_13_29.1234567   files of one version (0755)
//! <volume>/..data -> ..2026_11_30_00_13_29.1234567
//! <volume>/<key>  -> ..data/<key>             one link per top-level path
//! ```
//!
//! A new version is written into a fresh timestamped directory and published
//! by renaming a `..data_tmp` symlink over `..data`, so a reader in the
//! container sees either the old or the new set of files, never a mix.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path};

/// The symlink to the current version's directory.
pub const DATA_DIR_NAME: &str = "..data";
const NEW_DATA_DIR_NAME: &str = "..data_tmp";
/// Upstream's limits on a projected path and one of its segments.
const MAX_PATH_LENGTH: usize = 4096;
const MAX_FILE_NAME_LENGTH: usize = 255;

/// One file of a payload: its bytes and permission bits (e.g. `0o644`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileProjection {
    /// The file's content.
    pub data: Vec<u8>,
    /// Permission bits (`0o644`); set exactly, regardless of the umask.
    pub mode: u32,
}

/// Relative path inside the volume → file.
pub type Payload = BTreeMap<String, FileProjection>;

/// Checks a payload path as upstream's `validatePath`; the error is upstream's
/// message (`invalid path: must not contain '..': a/../b`).
pub fn validate_path(target: &str) -> Result<(), String> {
    if target.len() > MAX_PATH_LENGTH {
        return Err(format!("invalid path: must be less than or equal to {MAX_PATH_LENGTH} characters"));
    }
    if Path::new(target).is_absolute() {
        return Err(format!("invalid path: must be relative path: {target}"));
    }
    let items: Vec<&str> = target.split('/').collect();
    if items.iter().any(|i| i.len() > MAX_FILE_NAME_LENGTH) {
        return Err(format!("invalid path: filenames must be less than or equal to {MAX_FILE_NAME_LENGTH} characters"));
    }
    if items.first().is_some_and(|i| i.starts_with("..")) {
        return Err(format!("invalid path: must not start with '..': {target}"));
    }
    if items.contains(&"..") {
        return Err(format!("invalid path: must not contain '..': {target}"));
    }
    if target.is_empty() || items.iter().all(|i| i.is_empty() || *i == ".") {
        return Err(format!("invalid path: {target:?} does not name a file"));
    }
    Ok(())
}

/// Normalizes `a//b/./c` to `a/b/c` (upstream cleans payload paths).
fn clean(path: &str) -> String {
    Path::new(path)
        .components()
        .filter_map(|c| match c {
            Component::Normal(s) => Some(s.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("/")
}

fn top_level(path: &str) -> &str {
    path.split('/').next().unwrap_or(path)
}

/// Writes `payload` into `target_dir` (which must exist) atomically.
/// Returns `Ok(true)` when a new version was published, `Ok(false)` when the
/// current version already holds exactly this content (only missing
/// user-visible links are recreated), as upstream compares file bytes, not
/// modes. Errors are upstream-style messages.
pub fn write(target_dir: &Path, payload: &Payload) -> Result<bool, String> {
    let mut clean_payload: BTreeMap<String, &FileProjection> = BTreeMap::new();
    for (path, file) in payload {
        validate_path(path)?;
        clean_payload.insert(clean(path), file);
    }
    let old_ts = fs::read_link(target_dir.join(DATA_DIR_NAME)).ok().map(|p| p.to_string_lossy().into_owned());
    let io_err = |what: &str, e: io::Error| format!("error {what} in {}: {e}", target_dir.display());

    let should_write = match &old_ts {
        None => true,
        Some(ts) => {
            payload_differs(&target_dir.join(ts), &clean_payload).map_err(|e| io_err("comparing payload", e))?
        }
    };
    if !should_write {
        create_user_visible_links(target_dir, &clean_payload).map_err(|e| io_err("creating user-visible files", e))?;
        return Ok(false);
    }

    let ts_name = new_timestamp_dir(target_dir).map_err(|e| io_err("creating new data directory", e))?;
    let ts_dir = target_dir.join(&ts_name);
    for (path, file) in &clean_payload {
        write_file(&ts_dir.join(path), file).map_err(|e| io_err(&format!("writing file {path}"), e))?;
    }
    // Publish: a fresh `..data_tmp` link renamed over `..data` (rename is atomic).
    let tmp_link = target_dir.join(NEW_DATA_DIR_NAME);
    let _ = fs::remove_file(&tmp_link);
    std::os::unix::fs::symlink(&ts_name, &tmp_link).map_err(|e| io_err("creating data link", e))?;
    fs::rename(&tmp_link, target_dir.join(DATA_DIR_NAME)).map_err(|e| io_err("renaming data link", e))?;
    create_user_visible_links(target_dir, &clean_payload).map_err(|e| io_err("creating user-visible files", e))?;
    remove_stale(target_dir, &ts_name, &clean_payload).map_err(|e| io_err("removing old files", e))?;
    Ok(true)
}

/// True if any payload file is missing or has other bytes in `ts_dir`, or
/// `ts_dir` holds a file the payload no longer has.
fn payload_differs(ts_dir: &Path, payload: &BTreeMap<String, &FileProjection>) -> io::Result<bool> {
    for (path, file) in payload {
        match fs::read(ts_dir.join(path)) {
            Ok(bytes) if bytes == file.data => {}
            Ok(_) => return Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(true),
            Err(e) => return Err(e),
        }
    }
    let mut existing = BTreeSet::new();
    if ts_dir.is_dir() {
        walk_files(ts_dir, "", &mut existing)?;
    } else {
        return Ok(true);
    }
    Ok(existing.iter().any(|p| !payload.contains_key(p)))
}

fn walk_files(dir: &Path, prefix: &str, out: &mut BTreeSet<String>) -> io::Result<()> {
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let rel = if prefix.is_empty() { name } else { format!("{prefix}/{name}") };
        if entry.file_type()?.is_dir() {
            walk_files(&entry.path(), &rel, out)?;
        } else {
            out.insert(rel);
        }
    }
    Ok(())
}

/// `..<UTC yyyy_mm_dd_HH_MM_SS>.<random>` as upstream (`os.MkdirTemp` with a
/// timestamp prefix), mode 0755.
fn new_timestamp_dir(target_dir: &Path) -> io::Result<String> {
    let prefix = jiff::Timestamp::now().strftime("..%Y_%m_%d_%H_%M_%S.").to_string();
    loop {
        let name = format!("{prefix}{}", random_u32());
        let path = target_dir.join(&name);
        match fs::create_dir(&path) {
            Ok(()) => {
                fs::set_permissions(&path, fs::Permissions::from_mode(0o755))?;
                return Ok(name);
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
}

pub(crate) fn random_u32() -> u32 {
    use ring::rand::SecureRandom;
    let mut b = [0u8; 4];
    let _ = ring::rand::SystemRandom::new().fill(&mut b);
    u32::from_le_bytes(b)
}

fn write_file(path: &Path, file: &FileProjection) -> io::Result<()> {
    if let Some(parent) = path.parent() {
        create_dirs(parent)?;
    }
    let mut f = fs::OpenOptions::new().write(true).create_new(true).mode(file.mode & 0o7777).open(path)?;
    f.write_all(&file.data)?;
    // Set the mode again: the open mode was masked by the umask.
    fs::set_permissions(path, fs::Permissions::from_mode(file.mode & 0o7777))
}

fn create_dirs(dir: &Path) -> io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    if let Some(parent) = dir.parent() {
        create_dirs(parent)?;
    }
    match fs::create_dir(dir) {
        Ok(()) => fs::set_permissions(dir, fs::Permissions::from_mode(0o755)),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

/// One `<top>` → `..data/<top>` link per top-level payload path.
fn create_user_visible_links(target_dir: &Path, payload: &BTreeMap<String, &FileProjection>) -> io::Result<()> {
    let tops: BTreeSet<&str> = payload.keys().map(|p| top_level(p)).collect();
    for top in tops {
        let visible = target_dir.join(top);
        if fs::symlink_metadata(&visible).is_err() {
            std::os::unix::fs::symlink(Path::new(DATA_DIR_NAME).join(top), &visible)?;
        }
    }
    Ok(())
}

/// Removes the previous timestamped directories and the user-visible links
/// of paths the new payload no longer has.
fn remove_stale(target_dir: &Path, current_ts: &str, payload: &BTreeMap<String, &FileProjection>) -> io::Result<()> {
    let tops: BTreeSet<&str> = payload.keys().map(|p| top_level(p)).collect();
    for entry in fs::read_dir(target_dir)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let ftype = entry.file_type()?;
        if name.starts_with("..") {
            let is_ts_dir =
                ftype.is_dir() && name != current_ts && name.len() > 2 && name.as_bytes()[2].is_ascii_digit();
            if is_ts_dir {
                fs::remove_dir_all(entry.path())?;
            }
            continue;
        }
        if ftype.is_symlink() && !tops.contains(name.as_str()) {
            let points_into_data = fs::read_link(entry.path()).map(|t| t.starts_with(DATA_DIR_NAME)).unwrap_or(false);
            if points_into_data {
                fs::remove_file(entry.path())?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(data: &str, mode: u32) -> FileProjection {
        FileProjection { data: data.as_bytes().to_vec(), mode }
    }

    fn mode_of(p: &Path) -> u32 {
        fs::metadata(p).unwrap().permissions().mode() & 0o7777
    }

    #[test]
    fn atomic_writer_writes_links_and_swaps_content_on_update() {
        let dir = tempfile::tempdir().unwrap();
        let mut payload = Payload::new();
        payload.insert("game.properties".into(), file("lives=3", 0o644));
        payload.insert("sub/dir/key".into(), file("v", 0o400));
        assert!(write(dir.path(), &payload).unwrap());
        let first_ts = fs::read_link(dir.path().join("..data")).unwrap();
        assert!(first_ts.to_string_lossy().starts_with(".."));
        assert_eq!(fs::read_link(dir.path().join("game.properties")).unwrap(), Path::new("..data/game.properties"));
        assert_eq!(fs::read_link(dir.path().join("sub")).unwrap(), Path::new("..data/sub"));
        assert_eq!(fs::read_to_string(dir.path().join("game.properties")).unwrap(), "lives=3");
        assert_eq!(fs::read_to_string(dir.path().join("sub/dir/key")).unwrap(), "v");
        assert_eq!(mode_of(&dir.path().join("sub/dir/key")), 0o400);
        assert_eq!(mode_of(&dir.path().join("game.properties")), 0o644);
        assert_eq!(mode_of(&dir.path().join(&first_ts)), 0o755);

        // Same content: nothing is rewritten.
        assert!(!write(dir.path(), &payload).unwrap());
        assert_eq!(fs::read_link(dir.path().join("..data")).unwrap(), first_ts);

        // Changed content: a new version replaces the old directory.
        payload.insert("game.properties".into(), file("lives=4", 0o644));
        assert!(write(dir.path(), &payload).unwrap());
        let second_ts = fs::read_link(dir.path().join("..data")).unwrap();
        assert_ne!(first_ts, second_ts);
        assert!(!dir.path().join(&first_ts).exists(), "old version removed");
        assert_eq!(fs::read_to_string(dir.path().join("game.properties")).unwrap(), "lives=4");
    }

    #[test]
    fn atomic_writer_removed_keys_vanish() {
        let dir = tempfile::tempdir().unwrap();
        let mut payload = Payload::new();
        payload.insert("a".into(), file("1", 0o644));
        payload.insert("b".into(), file("2", 0o644));
        write(dir.path(), &payload).unwrap();
        payload.remove("b");
        assert!(write(dir.path(), &payload).unwrap(), "a removed key is a change");
        assert!(fs::symlink_metadata(dir.path().join("b")).is_err(), "link of removed key gone");
        assert_eq!(fs::read_to_string(dir.path().join("a")).unwrap(), "1");
        let names: Vec<String> =
            fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        assert_eq!(names.iter().filter(|n| n.starts_with("..2")).count(), 1, "{names:?}");
        // An empty payload (optional source missing) leaves an empty volume.
        assert!(write(dir.path(), &Payload::new()).unwrap());
        assert!(fs::symlink_metadata(dir.path().join("a")).is_err());
    }

    #[test]
    fn atomic_writer_recreates_a_deleted_user_link() {
        let dir = tempfile::tempdir().unwrap();
        let mut payload = Payload::new();
        payload.insert("a".into(), file("1", 0o644));
        write(dir.path(), &payload).unwrap();
        fs::remove_file(dir.path().join("a")).unwrap();
        assert!(!write(dir.path(), &payload).unwrap());
        assert_eq!(fs::read_to_string(dir.path().join("a")).unwrap(), "1");
    }

    #[test]
    fn atomic_writer_rejects_bad_paths_with_upstream_messages() {
        assert_eq!(validate_path("/etc/x").unwrap_err(), "invalid path: must be relative path: /etc/x");
        assert_eq!(validate_path("..a").unwrap_err(), "invalid path: must not start with '..': ..a");
        assert_eq!(validate_path("a/../b").unwrap_err(), "invalid path: must not contain '..': a/../b");
        assert!(validate_path(&"x".repeat(256)).unwrap_err().contains("255"));
        assert!(validate_path("a/b.c").is_ok());
        let dir = tempfile::tempdir().unwrap();
        let mut payload = Payload::new();
        payload.insert("../escape".into(), file("x", 0o644));
        assert!(write(dir.path(), &payload).is_err());
        assert!(!dir.path().join("..data").exists());
    }
}
