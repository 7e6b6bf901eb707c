//! What the agent reads about its machine for the Node's capacity and
//! nodeInfo (upstream takes these from cAdvisor and the host files below),
//! and the swap check of upstream's container manager.

use std::path::Path;

/// The machine facts a Node status reports.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MachineInfo {
    /// Logical CPUs this process may run on (`sched_getaffinity`, as Go's `runtime.NumCPU`).
    pub cpus: u64,
    /// `MemTotal` of /proc/meminfo, in bytes.
    pub memory_bytes: u64,
    /// Size of the data dir's filesystem in bytes (the kubelet's nodefs).
    pub ephemeral_storage_bytes: u64,
    /// /etc/machine-id.
    pub machine_id: String,
    /// /sys/class/dmi/id/product_uuid when readable (root only), else empty.
    pub system_uuid: String,
    /// /proc/sys/kernel/random/boot_id.
    pub boot_id: String,
    /// `uname -r`.
    pub kernel_version: String,
    /// PRETTY_NAME of /etc/os-release.
    pub os_image: String,
}

impl MachineInfo {
    /// Reads everything; a fact that cannot be read is left empty (or 0).
    pub fn detect(data_dir: &Path) -> MachineInfo {
        let read = |p: &str| std::fs::read_to_string(p).map(|s| s.trim().to_string()).unwrap_or_default();
        MachineInfo {
            cpus: cpu_count(),
            memory_bytes: mem_total(&std::fs::read_to_string("/proc/meminfo").unwrap_or_default()),
            ephemeral_storage_bytes: filesystem_size(data_dir),
            machine_id: read("/etc/machine-id"),
            system_uuid: read("/sys/class/dmi/id/product_uuid"),
            boot_id: read("/proc/sys/kernel/random/boot_id"),
            kernel_version: kernel_release(),
            os_image: pretty_name(&std::fs::read_to_string("/etc/os-release").unwrap_or_default()),
        }
    }
}

fn cpu_count() -> u64 {
    std::thread::available_parallelism().map(|n| n.get() as u64).unwrap_or(1)
}

/// `MemTotal` of a /proc/meminfo text, in bytes (the file says kB, meaning KiB).
pub fn mem_total(meminfo: &str) -> u64 {
    meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kib| kib * 1024)
}

/// PRETTY_NAME of an os-release text, unquoted ("Linux" when absent, as upstream's fallback).
pub fn pretty_name(os_release: &str) -> String {
    os_release
        .lines()
        .find_map(|l| l.strip_prefix("PRETTY_NAME="))
        .map(|v| v.trim().trim_matches('"').trim_matches('\'').to_string())
        .unwrap_or_else(|| "Linux".to_string())
}

fn kernel_release() -> String {
    // SAFETY: uname fills the zeroed struct; its fields are NUL-terminated.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    if unsafe { libc::uname(&mut u) } != 0 {
        return String::new();
    }
    let bytes: Vec<u8> = u.release.iter().take_while(|c| **c != 0).map(|c| *c as u8).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Total size in bytes of the filesystem holding `path` (0 if unknown).
pub fn filesystem_size(path: &Path) -> u64 {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else { return 0 };
    let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: c is a valid C string and s a properly sized out-parameter.
    if unsafe { libc::statvfs(c.as_ptr(), &mut s) } != 0 {
        return 0;
    }
    #[allow(clippy::unnecessary_cast)]
    (s.f_blocks as u64).saturating_mul(s.f_frsize as u64)
}

/// The active swap devices listed by a /proc/swaps text (its lines after the header).
pub fn swap_devices(proc_swaps: &str) -> Vec<String> {
    proc_swaps.lines().skip(1).map(str::trim).filter(|l| !l.is_empty()).map(str::to_string).collect()
}

/// Go's `GOARCH` name of this machine (what `kubernetes.io/arch` and
/// nodeInfo.architecture carry).
pub fn go_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "arm" => "arm",
        "x86" => "386",
        "powerpc64" => "ppc64le",
        "s390x" => "s390x",
        "riscv64" => "riscv64",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_host_files() {
        assert_eq!(mem_total("MemTotal:       16314144 kB\nMemFree: 1 kB\n"), 16314144 * 1024);
        assert_eq!(mem_total(""), 0);
        assert_eq!(
            pretty_name("NAME=x\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n"),
            "Debian GNU/Linux 12 (bookworm)"
        );
        assert_eq!(pretty_name(""), "Linux");
        let header = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n";
        assert!(swap_devices(header).is_empty());
        assert_eq!(swap_devices(&format!("{header}/swapfile file 1048572 0 -2\n")), ["/swapfile file 1048572 0 -2"]);
    }

    #[test]
    fn detects_this_machine() {
        let m = MachineInfo::detect(Path::new("/"));
        assert!(m.cpus >= 1 && m.memory_bytes > 0 && m.ephemeral_storage_bytes > 0);
        assert!(!m.kernel_version.is_empty() && !m.boot_id.is_empty());
    }
}
