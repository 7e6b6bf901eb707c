//! The images `rkube images build-local` makes from what is on the machine:
//! the pod sandbox image from rkube's static pause program, and busybox from
//! the Debian busybox-static binary.

use std::path::Path;

use serde_json::json;

use super::oci::OciImage;
use super::tar::TarBuilder;

/// The statically linked pause program (pause/pause.rs, built by build.rs).
pub const PAUSE_BINARY: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/rkube-pause"));

/// Where Debian's busybox-static package installs busybox.
pub const HOST_BUSYBOX: &str = "/bin/busybox";

/// The search path busybox's and pause's upstream images set.
const DEFAULT_PATH: &str = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// Why a local image could not be built.
#[derive(Debug, thiserror::Error)]
pub enum LocalImageError {
    /// The busybox binary is missing or unreadable.
    #[error("cannot read {path}: {source}; install the Debian package busybox-static (scripts/install.sh does)")]
    BusyboxMissing { path: String, source: std::io::Error },
    /// The busybox binary needs a dynamic loader the image would not have.
    #[error(
        "{path} is dynamically linked, so it cannot run alone in an image; install the Debian package \
         busybox-static (it replaces the package busybox)"
    )]
    BusyboxDynamic { path: String },
    /// Running busybox to learn its version or applets failed.
    #[error("cannot run {path} {args}: {message}")]
    BusyboxRun { path: String, args: &'static str, message: String },
}

/// `registry.k8s.io/pause:3.10`: `/pause` only, Entrypoint `["/pause"]`, user
/// 65535:65535, as the upstream image.
pub fn pause_image() -> OciImage {
    let mut layer = TarBuilder::new();
    layer.file("pause", 0o755, PAUSE_BINARY);
    OciImage {
        reference: crate::PAUSE_IMAGE.to_string(),
        runtime_config: json!({
            "User": "65535:65535",
            "Env": [DEFAULT_PATH],
            "Entrypoint": ["/pause"],
            "WorkingDir": "/",
        }),
        layers: vec![layer.finish()],
        history: vec!["rkube images build-local: /pause (rkube-pause, static)".into()],
    }
}

/// `docker.io/library/busybox:<version>` from the busybox binary at `path`:
/// `/bin/busybox`, a `/bin/<applet>` symlink for every applet
/// `busybox --list` names, minimal `/etc/passwd` and `/etc/group`, `/tmp`,
/// `/root`; Cmd `["sh"]` as the upstream image. The version is the
/// binary's own (e.g. `1.35.0`).
pub fn busybox_image(path: &Path) -> Result<OciImage, LocalImageError> {
    let p = path.display().to_string();
    let binary = std::fs::read(path).map_err(|source| LocalImageError::BusyboxMissing { path: p.clone(), source })?;
    if has_interpreter(&binary) {
        return Err(LocalImageError::BusyboxDynamic { path: p });
    }
    let version = busybox_version(path)?;
    let applets = run_busybox(path, "--list")?;

    let mut layer = TarBuilder::new();
    layer.dir("bin", 0o755);
    layer.file("bin/busybox", 0o755, &binary);
    for applet in applets.lines().map(str::trim).filter(|a| !a.is_empty() && *a != "busybox" && !a.contains('/')) {
        layer.symlink(&format!("bin/{applet}"), "busybox");
    }
    layer.dir("etc", 0o755);
    layer.file("etc/passwd", 0o644, b"root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/home:/bin/false\n");
    layer.file("etc/group", 0o644, b"root:x:0:\nnobody:x:65534:\n");
    layer.dir("home", 0o755);
    layer.dir("root", 0o700);
    layer.dir("tmp", 0o1777);
    layer.dir("usr", 0o755);
    layer.dir("usr/sbin", 0o755);
    layer.dir("var", 0o755);
    Ok(OciImage {
        reference: format!("docker.io/library/busybox:{version}"),
        runtime_config: json!({ "Env": [DEFAULT_PATH], "Cmd": ["sh"] }),
        layers: vec![layer.finish()],
        history: vec![format!("rkube images build-local: busybox {version} from {p}")],
    })
}

/// The version busybox prints in its banner (`BusyBox v1.35.0 (Debian …)` → `1.35.0`).
pub fn busybox_version(path: &Path) -> Result<String, LocalImageError> {
    let banner = run_busybox(path, "--help")?;
    parse_busybox_version(&banner).ok_or_else(|| LocalImageError::BusyboxRun {
        path: path.display().to_string(),
        args: "--help",
        message: format!("no version in its banner {:?}", banner.lines().next().unwrap_or("")),
    })
}

fn parse_busybox_version(banner: &str) -> Option<String> {
    let v = banner.split_whitespace().find_map(|w| w.strip_prefix('v'))?;
    v.chars().next().filter(char::is_ascii_digit)?;
    Some(v.trim_end_matches(|c: char| !c.is_ascii_alphanumeric()).to_string())
}

fn run_busybox(path: &Path, args: &'static str) -> Result<String, LocalImageError> {
    let err = |message: String| LocalImageError::BusyboxRun { path: path.display().to_string(), args, message };
    let out = std::process::Command::new(path).args(args.split(' ')).output().map_err(|e| err(e.to_string()))?;
    // `--help` exits 0 on Debian's build but 1 on some; the banner is what matters.
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    if text.trim().is_empty() {
        return Err(err(format!("no output ({})", out.status)));
    }
    Ok(text)
}

/// Whether an ELF file has a PT_INTERP program header (needs a dynamic loader).
fn has_interpreter(elf: &[u8]) -> bool {
    const PT_INTERP: u32 = 3;
    if elf.len() < 64 || &elf[..4] != b"\x7fELF" || elf[4] != 2 || elf[5] != 1 {
        // Not a 64-bit little-endian ELF: don't guess.
        return false;
    }
    let u16_at = |o: usize| u16::from_le_bytes([elf[o], elf[o + 1]]) as usize;
    let phoff = u64::from_le_bytes(elf[32..40].try_into().unwrap()) as usize;
    let (phentsize, phnum) = (u16_at(54), u16_at(56));
    (0..phnum).any(|i| {
        let o = phoff + i * phentsize;
        elf.get(o..o + 4).is_some_and(|t| u32::from_le_bytes(t.try_into().unwrap()) == PT_INTERP)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pause_binary_is_static() {
        assert_eq!(&PAUSE_BINARY[..4], b"\x7fELF");
        assert!(!has_interpreter(PAUSE_BINARY), "rkube-pause must not need a dynamic loader");
        // A dynamically linked binary is recognised as such.
        let sh = std::fs::read("/proc/self/exe").unwrap();
        assert!(has_interpreter(&sh));
    }

    fn pause_on_disk(dir: &Path) -> std::path::PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let path = dir.join("pause");
        std::fs::write(&path, PAUSE_BINARY).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    /// Upstream's pause exits 0 on SIGTERM and SIGINT and says why on stderr.
    #[test]
    fn pause_exits_0_on_term_and_int() {
        let dir = tempfile::tempdir().unwrap();
        let pause = pause_on_disk(dir.path());
        let v = std::process::Command::new(&pause).arg("-v").output().unwrap();
        assert!(v.status.success() && String::from_utf8_lossy(&v.stdout).starts_with("rkube-pause "));
        for signal in [libc::SIGTERM, libc::SIGINT] {
            let child = std::process::Command::new(&pause).stderr(std::process::Stdio::piped()).spawn().unwrap();
            std::thread::sleep(std::time::Duration::from_millis(200));
            // SAFETY: signalling our own child.
            unsafe { libc::kill(child.id() as i32, signal) };
            let out = child.wait_with_output().unwrap();
            assert_eq!(out.status.code(), Some(0), "signal {signal}: {out:?}");
            assert!(String::from_utf8_lossy(&out.stderr).contains("Shutting down, got signal"));
        }
    }

    /// As PID 1 of a PID namespace, pause reaps the orphans that die there.
    #[test]
    fn pause_reaps_orphans_as_pid_1() {
        if unsafe { libc::geteuid() } != 0 {
            panic!("this test needs root (for a PID namespace), as CI runs it");
        }
        let dir = tempfile::tempdir().unwrap();
        let pause = pause_on_disk(dir.path());
        let mut ns = std::process::Command::new("unshare")
            .args(["--pid", "--fork", "--kill-child"])
            .arg(&pause)
            .spawn()
            .unwrap();
        // The pause process is unshare's child.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let pause_pid = loop {
            if let Some(pid) = children_of(ns.id() as i32).first() {
                break *pid;
            }
            assert!(std::time::Instant::now() < deadline, "pause did not start");
            std::thread::sleep(std::time::Duration::from_millis(50));
        };
        // An orphan in the namespace (its shell parent exits at once) that exits after 200 ms.
        let st = std::process::Command::new("nsenter")
            .args(["--target", &pause_pid.to_string(), "--pid", "--", "/bin/sh", "-c", "sleep 0.2 & exit 0"])
            .status()
            .unwrap();
        assert!(st.success());
        std::thread::sleep(std::time::Duration::from_millis(1200));
        let zombies: Vec<i32> = children_of(pause_pid).into_iter().filter(|c| state_of(*c) == Some('Z')).collect();
        let _ = ns.kill();
        let _ = ns.wait();
        assert!(zombies.is_empty(), "pause left zombies {zombies:?}");
    }

    fn children_of(parent: i32) -> Vec<i32> {
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
            .filter(|pid| {
                std::fs::read_to_string(format!("/proc/{pid}/stat")).ok().and_then(|s| {
                    let rest = s.rsplit_once(')')?.1.to_string();
                    rest.split_whitespace().nth(1)?.parse::<i32>().ok()
                }) == Some(parent)
            })
            .collect()
    }

    fn state_of(pid: i32) -> Option<char> {
        let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        s.rsplit_once(')')?.1.trim_start().chars().next()
    }

    #[test]
    fn busybox_banner_version() {
        let banner = "BusyBox v1.35.0 (Debian 1:1.35.0-4+deb12u1+b1) multi-call binary.\n";
        assert_eq!(parse_busybox_version(banner).as_deref(), Some("1.35.0"));
        assert_eq!(parse_busybox_version("no version here"), None);
    }
}
