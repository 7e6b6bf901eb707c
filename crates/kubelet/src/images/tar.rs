//! A minimal, deterministic ustar writer for image layers and OCI layout
//! archives: directories, regular files and symlinks, owned by root, mtime 0.

/// An in-memory tar archive being built.
#[derive(Default)]
pub struct TarBuilder {
    out: Vec<u8>,
}

impl TarBuilder {
    /// An empty archive.
    pub fn new() -> TarBuilder {
        TarBuilder::default()
    }

    /// A directory entry (`path` without a trailing slash).
    pub fn dir(&mut self, path: &str, mode: u32) {
        self.entry(&format!("{path}/"), mode, b'5', "", &[]);
    }

    /// A regular file.
    pub fn file(&mut self, path: &str, mode: u32, data: &[u8]) {
        self.entry(path, mode, b'0', "", data);
    }

    /// A symbolic link to `target` (at most 100 bytes).
    pub fn symlink(&mut self, path: &str, target: &str) {
        self.entry(path, 0o777, b'2', target, &[]);
    }

    /// The archive with its two terminating zero blocks.
    pub fn finish(mut self) -> Vec<u8> {
        self.out.extend_from_slice(&[0u8; 1024]);
        self.out
    }

    fn entry(&mut self, path: &str, mode: u32, kind: u8, link: &str, data: &[u8]) {
        let mut h = [0u8; 512];
        let (prefix, name) = split_name(path);
        h[..name.len()].copy_from_slice(name.as_bytes());
        octal(&mut h[100..108], mode as u64);
        octal(&mut h[108..116], 0); // uid
        octal(&mut h[116..124], 0); // gid
        octal(&mut h[124..136], data.len() as u64);
        octal(&mut h[136..148], 0); // mtime
        h[156] = kind;
        assert!(link.len() <= 100, "tar: link target too long: {link}");
        h[157..157 + link.len()].copy_from_slice(link.as_bytes());
        h[257..263].copy_from_slice(b"ustar\0");
        h[263..265].copy_from_slice(b"00");
        h[265..269].copy_from_slice(b"root");
        h[297..301].copy_from_slice(b"root");
        h[345..345 + prefix.len()].copy_from_slice(prefix.as_bytes());
        // The checksum is computed with its own field as spaces.
        h[148..156].copy_from_slice(b"        ");
        let sum: u32 = h.iter().map(|b| *b as u32).sum();
        let cks = format!("{sum:06o}\0 ");
        h[148..156].copy_from_slice(cks.as_bytes());
        self.out.extend_from_slice(&h);
        self.out.extend_from_slice(data);
        let pad = (512 - data.len() % 512) % 512;
        self.out.extend(std::iter::repeat_n(0u8, pad));
    }
}

/// ustar's name (100 bytes) and prefix (155 bytes) split at a slash.
fn split_name(path: &str) -> (&str, &str) {
    if path.len() <= 100 {
        return ("", path);
    }
    let cut = path[..path.len().min(156)]
        .rmatch_indices('/')
        .map(|(i, _)| i)
        .find(|&i| path.len() - i - 1 <= 100 && i <= 155)
        .unwrap_or_else(|| panic!("tar: path too long: {path}"));
    (&path[..cut], &path[cut + 1..])
}

/// A zero-padded octal number filling `field` but its final NUL.
fn octal(field: &mut [u8], v: u64) {
    let s = format!("{v:0width$o}\0", width = field.len() - 1);
    field.copy_from_slice(s.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gnu_tar_reads_it_back() {
        let mut t = TarBuilder::new();
        t.dir("bin", 0o755);
        t.file("bin/busybox", 0o755, b"hello");
        t.symlink("bin/sh", "busybox");
        let long = format!("{}/file", "d".repeat(120));
        t.file(&long, 0o644, b"x");
        let dir = tempfile::tempdir().unwrap();
        let archive = dir.path().join("a.tar");
        std::fs::write(&archive, t.finish()).unwrap();
        let out = std::process::Command::new("tar").arg("-tvf").arg(&archive).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let listing = String::from_utf8_lossy(&out.stdout);
        assert!(listing.contains("-rwxr-xr-x root/root         5 1970-01-01 00:00 bin/busybox"), "{listing}");
        assert!(listing.contains("bin/sh -> busybox"), "{listing}");
        assert!(listing.contains(&long), "{listing}");
    }
}
