//! `rkube-pause`: the process that holds a pod sandbox's namespaces, as
//! upstream's `pause` (kubernetes/build/pause): it sleeps until a signal,
//! exits 0 on SIGTERM or SIGINT, and reaps zombie children on SIGCHLD (it is
//! PID 1 of the pod's PID namespace when the pod shares one). `-v` prints the
//! version. No dependencies beyond std and glibc, so build.rs can link it
//! statically for the pause image, which has no libc.

use std::io::Write;

const SIGINT: i32 = 2;
const SIGTERM: i32 = 15;
const SIGCHLD: i32 = 17;
const WNOHANG: i32 = 1;

extern "C" {
    fn signal(signum: i32, handler: extern "C" fn(i32)) -> usize;
    fn pause() -> i32;
    fn waitpid(pid: i32, status: *mut i32, options: i32) -> i32;
    fn getpid() -> i32;
    fn write(fd: i32, buf: *const u8, count: usize) -> isize;
    fn _exit(status: i32) -> !;
}

/// SIGTERM/SIGINT: say so on stderr (async-signal-safe write) and exit 0.
extern "C" fn on_shutdown(_signum: i32) {
    let msg = b"Shutting down, got signal\n";
    // SAFETY: write(2) and _exit(2) are async-signal-safe.
    unsafe {
        write(2, msg.as_ptr(), msg.len());
        _exit(0);
    }
}

/// SIGCHLD: reap every exited child so none stays a zombie.
extern "C" fn on_child(_signum: i32) {
    // SAFETY: waitpid(2) is async-signal-safe; a null status is allowed.
    while unsafe { waitpid(-1, std::ptr::null_mut(), WNOHANG) } > 0 {}
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "-v") {
        println!("rkube-pause {}", env!("CARGO_PKG_VERSION"));
        return;
    }
    // SAFETY: plain libc calls with handlers that only use async-signal-safe functions.
    unsafe {
        if getpid() != 1 {
            let _ = writeln!(std::io::stderr(), "Warning: pause should be the first process");
        }
        signal(SIGINT, on_shutdown);
        signal(SIGTERM, on_shutdown);
        signal(SIGCHLD, on_child);
        loop {
            pause();
        }
    }
}
