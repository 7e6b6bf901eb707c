//! Running `nft` and `conntrack`, optionally inside a named network
//! namespace (`ip netns exec <ns> …`, used by tests and benchmarks; the
//! proxy itself runs in the node's namespace).

use std::io::Write;
use std::process::{Command, Stdio};

use crate::ProxyError;

/// Where commands run.
#[derive(Clone, Debug, Default)]
pub struct Runner {
    /// A named netns (`ip netns add`), or None for the current one.
    pub netns: Option<String>,
}

impl Runner {
    fn command(&self, program: &str) -> Command {
        match &self.netns {
            Some(ns) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", ns, program]);
                c
            }
            None => Command::new(program),
        }
    }

    /// `nft -f -` with `text` on stdin: one atomic transaction. Errors
    /// carry nft's message.
    pub fn nft_apply(&self, text: &str) -> Result<(), ProxyError> {
        self.nft(&["-f", "-"], text)
    }

    /// `nft -c -f -`: checks `text` without applying it.
    pub fn nft_check(&self, text: &str) -> Result<(), ProxyError> {
        self.nft(&["-c", "-f", "-"], text)
    }

    fn nft(&self, args: &[&str], input: &str) -> Result<(), ProxyError> {
        let mut child = self
            .command("nft")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| ProxyError::Nft(format!("cannot run nft: {e} (is nftables installed and in PATH?)")))?;
        let mut stdin = child.stdin.take().expect("piped stdin");
        let input = input.to_string();
        // Write on a thread: nft may report errors before reading all input.
        let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
        let out = child.wait_with_output().map_err(|e| ProxyError::Nft(format!("nft: {e}")))?;
        let _ = writer.join();
        if out.status.success() {
            Ok(())
        } else {
            let msg = String::from_utf8_lossy(&out.stderr);
            let msg: String = msg.lines().take(12).collect::<Vec<_>>().join("\n");
            Err(ProxyError::Nft(format!("nft {} failed ({}): {msg}", args.join(" "), out.status)))
        }
    }

    /// `nft delete table ip <table>` if it exists.
    pub fn delete_table(&self, table: &str) -> Result<(), ProxyError> {
        self.nft_apply(&format!("add table ip {table}\ndelete table ip {table}\n"))
    }

    /// `conntrack <args>`; "0 flow entries" (exit 1 with nothing deleted)
    /// is not an error.
    pub fn conntrack(&self, args: &[String]) -> Result<(), ProxyError> {
        let out = self
            .command("conntrack")
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .map_err(|e| ProxyError::Conntrack(format!("cannot run conntrack: {e} (install conntrack-tools)")))?;
        let err = String::from_utf8_lossy(&out.stderr);
        if out.status.success() || err.contains("0 flow entries") {
            Ok(())
        } else {
            Err(ProxyError::Conntrack(format!("conntrack {} failed: {}", args.join(" "), err.trim())))
        }
    }
}
