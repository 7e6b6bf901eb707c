//! Host prerequisites and detection for the managed containerd: the binaries
//! it needs, the cgroup driver, and whether overlayfs works on the data dir's
//! filesystem.

use std::path::{Path, PathBuf};

/// A missing host prerequisite, naming the Debian package that provides it.
#[derive(Debug, thiserror::Error)]
#[error(
    "{binary} not found on PATH: the node agent runs pods through containerd and runc; install the \
     Debian package {package} (scripts/install.sh installs everything rkube needs)"
)]
pub struct MissingBinary {
    /// The executable looked for (e.g. `containerd`).
    pub binary: &'static str,
    /// The Debian package that provides it.
    pub package: &'static str,
}

/// The executables the managed containerd needs and their Debian packages.
pub const REQUIRED_BINARIES: &[(&str, &str)] =
    &[("containerd", "containerd"), ("containerd-shim-runc-v2", "containerd"), ("ctr", "containerd"), ("runc", "runc")];

/// Where the Debian containernetworking-plugins package puts the CNI plugins.
pub const CNI_BIN_DIR: &str = "/usr/lib/cni";

/// The first executable named `name` on `$PATH` (plus /usr/sbin and /sbin,
/// where Debian puts runc, which a non-login root shell may lack).
pub fn find_executable(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin", "/usr/bin", "/bin"].into_iter().map(PathBuf::from))
        .map(|dir| dir.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata().map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0).unwrap_or(false)
}

/// Checks that containerd, its runc shim, ctr and runc are installed.
pub fn check_runtime_binaries() -> Result<(), MissingBinary> {
    for &(binary, package) in REQUIRED_BINARIES {
        if find_executable(binary).is_none() {
            return Err(MissingBinary { binary, package });
        }
    }
    Ok(())
}

/// The cgroup driver of the kubelet and the runtime, as upstream's
/// `cgroupDriver` (`systemd` or `cgroupfs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CgroupDriver {
    /// systemd manages the cgroup tree: cgroups are created as systemd slices and scopes.
    Systemd,
    /// cgroups are created directly in the cgroup filesystem.
    Cgroupfs,
}

impl CgroupDriver {
    /// The upstream name, `systemd` or `cgroupfs`.
    pub fn as_str(self) -> &'static str {
        match self {
            CgroupDriver::Systemd => "systemd",
            CgroupDriver::Cgroupfs => "cgroupfs",
        }
    }
}

/// Whether /sys/fs/cgroup is the unified cgroup v2 hierarchy.
pub fn cgroup_v2() -> bool {
    const CGROUP2_SUPER_MAGIC: i64 = 0x6367_7270;
    statfs_type(Path::new("/sys/fs/cgroup")) == Some(CGROUP2_SUPER_MAGIC)
}

/// Whether systemd is PID 1 (sd_booted's test plus /proc/1/comm).
pub fn systemd_is_init() -> bool {
    Path::new("/run/systemd/system").is_dir()
        && std::fs::read_to_string("/proc/1/comm").map(|c| c.trim() == "systemd").unwrap_or(false)
}

/// The cgroup driver to use: systemd when the host has cgroup v2 and systemd
/// as PID 1 (what kubeadm and upstream recommend there), cgroupfs otherwise
/// (cgroup v1 hosts, containers, hosts without systemd).
pub fn detect_cgroup_driver() -> CgroupDriver {
    if cgroup_v2() && systemd_is_init() {
        CgroupDriver::Systemd
    } else {
        CgroupDriver::Cgroupfs
    }
}

/// Whether this process may lower OOM score adjustments (CAP_SYS_RESOURCE
/// in its effective set). Without it (e.g. rkube itself inside a container)
/// runc cannot give the pod sandbox upstream's -998 and every sandbox fails,
/// so the runtime must be told to restrict scores to its own.
pub fn can_lower_oom_score_adj() -> bool {
    const CAP_SYS_RESOURCE: u32 = 24;
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        .is_some_and(|caps| caps & (1 << CAP_SYS_RESOURCE) != 0)
}

/// Removes the cgroup `path` (cgroupfs form, e.g. `/rkube-test/pod1`) and
/// every cgroup below it, deepest first, in the v2 hierarchy or in each v1
/// hierarchy under /sys/fs/cgroup. Only empty cgroups can be removed: kill
/// their processes first. Returns the cgroups that could not be removed.
pub fn remove_cgroup_tree(path: &str) -> Vec<PathBuf> {
    let rel = path.trim_start_matches('/');
    if rel.is_empty() || rel.split('/').any(|c| c == "..") {
        return Vec::new();
    }
    let roots: Vec<PathBuf> = if cgroup_v2() {
        vec![PathBuf::from("/sys/fs/cgroup")]
    } else {
        std::fs::read_dir("/sys/fs/cgroup").map(|rd| rd.flatten().map(|e| e.path()).collect()).unwrap_or_default()
    };
    let mut failed = Vec::new();
    for root in roots {
        remove_dirs_deepest_first(&root.join(rel), &mut failed);
    }
    failed
}

fn remove_dirs_deepest_first(dir: &Path, failed: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            remove_dirs_deepest_first(&entry.path(), failed);
        }
    }
    if std::fs::remove_dir(dir).is_err() {
        failed.push(dir.to_path_buf());
    }
}

fn statfs_type(path: &Path) -> Option<i64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    let mut buf: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: c is a valid C string and buf a properly sized out-parameter.
    if unsafe { libc::statfs(c.as_ptr(), &mut buf) } != 0 {
        return None;
    }
    #[allow(clippy::unnecessary_cast)]
    Some(buf.f_type as i64)
}

/// Whether an overlay filesystem can be mounted with its upper and work
/// directories under `dir` (the snapshotter's filesystem). False on
/// filesystems overlayfs cannot use as upper layer (overlay on overlay, most
/// network filesystems), without the overlay module, or without the
/// privilege to mount. `dir` must exist; a scratch directory inside it is
/// created and removed.
pub fn overlayfs_supported(dir: &Path) -> bool {
    const OVERLAYFS_SUPER_MAGIC: i64 = 0x794c_7630;
    // Overlay upon overlay fails at mount (or worse, at copy-up) on most kernels.
    if statfs_type(dir) == Some(OVERLAYFS_SUPER_MAGIC) {
        return false;
    }
    let scratch = dir.join(format!(".overlay-check-{}", std::process::id()));
    let result = try_overlay_mount(&scratch);
    let _ = std::fs::remove_dir_all(&scratch);
    match result {
        Ok(()) => true,
        Err(e) => {
            tracing::info!(component = "kubelet", dir = %dir.display(), "overlayfs is not usable here: {e}");
            false
        }
    }
}

fn try_overlay_mount(scratch: &Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let (lower, upper, work, merged) =
        (scratch.join("lower"), scratch.join("upper"), scratch.join("work"), scratch.join("merged"));
    for d in [&lower, &upper, &work, &merged] {
        std::fs::create_dir_all(d)?;
    }
    let opts = format!("lowerdir={},upperdir={},workdir={}", lower.display(), upper.display(), work.display());
    let target = std::ffi::CString::new(merged.as_os_str().as_bytes())?;
    let opts = std::ffi::CString::new(opts)?;
    // SAFETY: all pointers are valid NUL-terminated strings for the duration of the calls.
    let rc = unsafe { libc::mount(c"overlay".as_ptr(), target.as_ptr(), c"overlay".as_ptr(), 0, opts.as_ptr().cast()) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // Write through the mount: some upper filesystems mount but fail at copy-up.
    let probe = std::fs::write(merged.join("probe"), b"x");
    // SAFETY: target is a valid C string.
    unsafe { libc::umount2(target.as_ptr(), libc::MNT_DETACH) };
    probe
}

#[cfg(test)]
mod tests {
    use super::*;

    /// overlayfs works on a plain filesystem but not on top of overlayfs
    /// (where containerd must fall back to the native snapshotter).
    #[test]
    fn overlay_on_overlay_is_detected() {
        assert_eq!(unsafe { libc::geteuid() }, 0, "mounting needs root, as CI runs the tests");
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path();
        if statfs_type(base) == Some(0x794c_7630) {
            // The temp dir itself is on overlayfs (a container): that is the negative case.
            assert!(!overlayfs_supported(base));
            return;
        }
        assert!(overlayfs_supported(base), "overlayfs should work on {}", base.display());
        // Nothing of the probe is left behind.
        assert_eq!(std::fs::read_dir(base).unwrap().count(), 0);
        let (lower, upper, work, merged) = (base.join("l"), base.join("u"), base.join("w"), base.join("m"));
        for d in [&lower, &upper, &work, &merged] {
            std::fs::create_dir(d).unwrap();
        }
        let opts = format!("lowerdir={},upperdir={},workdir={}", lower.display(), upper.display(), work.display());
        let target = std::ffi::CString::new(merged.to_str().unwrap()).unwrap();
        let opts = std::ffi::CString::new(opts).unwrap();
        let rc =
            unsafe { libc::mount(c"overlay".as_ptr(), target.as_ptr(), c"overlay".as_ptr(), 0, opts.as_ptr().cast()) };
        assert_eq!(rc, 0, "{}", std::io::Error::last_os_error());
        let on_overlay = overlayfs_supported(&merged);
        unsafe { libc::umount2(target.as_ptr(), libc::MNT_DETACH) };
        assert!(!on_overlay);
    }

    #[test]
    fn missing_binary_names_the_package() {
        let e = MissingBinary { binary: "runc", package: "runc" };
        assert!(e.to_string().contains("install the Debian package runc"));
    }
}
