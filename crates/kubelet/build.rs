//! Builds the pause program (pause/pause.rs) as a statically linked binary
//! into OUT_DIR, for the pause image `rkube images build-local` makes: the
//! image holds nothing but `/pause`, so the binary may not need a libc.
//! glibc's static libraries come with libc6-dev.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=pause/pause.rs");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let target = std::env::var("TARGET").expect("TARGET");
    let dest = out.join("rkube-pause");
    let status = Command::new(&rustc)
        .args(["--edition", "2021", "--crate-name", "rkube_pause", "--target", &target])
        .args(["-C", "target-feature=+crt-static", "-C", "opt-level=s", "-C", "panic=abort"])
        .args(["-C", "strip=symbols", "-C", "debuginfo=0"])
        .env("CARGO_PKG_VERSION", std::env::var("CARGO_PKG_VERSION").unwrap_or_default())
        .arg("-o")
        .arg(&dest)
        .arg("pause/pause.rs")
        .status()
        .unwrap_or_else(|e| panic!("cannot run {rustc} to build the static pause binary: {e}"));
    if !status.success() {
        panic!(
            "building the static pause binary failed ({status}); static linking needs glibc's static \
             libraries (Debian package libc6-dev)"
        );
    }
}
