//! Running `nft`: applying and checking scripts through `nft -f -`.

use std::io::Write;
use std::process::{Command, Stdio};

use crate::NetpolError;

fn run(args: &[&str], script: &str, action: &str) -> Result<(), NetpolError> {
    let err = |detail: String| NetpolError::Nft { action: action.into(), detail };
    let mut child = Command::new("nft")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| err(format!("cannot run nft: {e}")))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(script.as_bytes()).map_err(|e| err(format!("writing the script to nft: {e}")))?;
    }
    let out = child.wait_with_output().map_err(|e| err(format!("waiting for nft: {e}")))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(err(format!("{} ({})", String::from_utf8_lossy(&out.stderr).trim(), out.status)))
    }
}

/// Applies `script` atomically (`nft -f -`: one transaction, all or nothing).
/// Errors: [`NetpolError::Nft`] with nft's message.
pub fn apply(script: &str) -> Result<(), NetpolError> {
    run(&["-f", "-"], script, "apply")
}

/// Checks `script` without applying it (`nft -c -f -`).
/// Errors: [`NetpolError::Nft`] with nft's message.
pub fn check(script: &str) -> Result<(), NetpolError> {
    run(&["-c", "-f", "-"], script, "check")
}
