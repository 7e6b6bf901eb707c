//! The `exec` handler (upstream's `pkg/probe/exec` over CRI ExecSync): the
//! command (with `$(VAR)` expanded from the container's static env only) runs
//! in the container; exit code 0 is success, anything else a failure whose
//! message is the combined stdout+stderr (10 KiB at most); a runtime deadline
//! is a failure `command "…" timed out`; any other runtime error is an error
//! (the result is thrown away).

use std::collections::HashMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::EnvVar;

use super::results::{go_quote, Outcome, MAX_OUTPUT};
use crate::cri::{v1, CriClient, CriError};

/// Runs `command` in container `container_id` through CRI ExecSync with `timeout`.
pub async fn probe_exec(cri: &CriClient, container_id: &str, command: Vec<String>, timeout: Duration) -> Outcome {
    let joined = command.join(" ");
    interpret(cri.exec_sync(container_id, command, timeout).await, &joined)
}

/// The outcome of an ExecSync answer for the command `cmd` (joined by spaces).
pub(super) fn interpret(r: Result<v1::ExecSyncResponse, CriError>, cmd: &str) -> Outcome {
    match r {
        Ok(resp) => {
            let mut out = resp.stdout;
            out.extend_from_slice(&resp.stderr);
            out.truncate(MAX_OUTPUT);
            let out = String::from_utf8_lossy(&out).into_owned();
            if resp.exit_code == 0 {
                Outcome::Success(out)
            } else {
                Outcome::Failure(out)
            }
        }
        Err(e) if e.code() == tonic::Code::DeadlineExceeded => {
            Outcome::Failure(format!("command {} timed out", go_quote(cmd)))
        }
        Err(CriError::Call { code, message, .. }) => {
            Outcome::Error(format!("rpc error: code = {code:?} desc = {message}"))
        }
        Err(e) => Outcome::Error(e.to_string()),
    }
}

/// Expands `$(VAR)` in `command` from the container's env entries that have
/// a literal value (upstream's `ExpandContainerCommandOnlyStatic`): `$$` is a
/// literal `$`, an unknown `$(VAR)` stays as written.
pub fn expand_command(command: &[String], env: &[EnvVar]) -> Vec<String> {
    let vars: HashMap<&str, &str> = env
        .iter()
        .filter(|e| e.value_from.is_none())
        .map(|e| (e.name.as_str(), e.value.as_deref().unwrap_or("")))
        .collect();
    command.iter().map(|arg| expand(arg, &vars)).collect()
}

fn expand(s: &str, vars: &HashMap<&str, &str>) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(r) = after.strip_prefix('$') {
            out.push('$');
            rest = r;
        } else if let Some(r) = after.strip_prefix('(') {
            match r.find(')') {
                Some(end) => {
                    let name = &r[..end];
                    match vars.get(name) {
                        Some(v) => out.push_str(v),
                        None => {
                            out.push_str("$(");
                            out.push_str(name);
                            out.push(')');
                        }
                    }
                    rest = &r[end + 1..];
                }
                None => {
                    out.push_str("$(");
                    rest = r;
                }
            }
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resp(code: i32, stdout: &str, stderr: &str) -> Result<v1::ExecSyncResponse, CriError> {
        Ok(v1::ExecSyncResponse { stdout: stdout.into(), stderr: stderr.into(), exit_code: code })
    }

    fn call_error(code: tonic::Code, message: &str) -> Result<v1::ExecSyncResponse, CriError> {
        Err(CriError::Call {
            call: "ExecSync",
            socket: "/run/containerd.sock".into(),
            code,
            message: message.into(),
            hint: "",
        })
    }

    #[test]
    fn exec_exit_codes_and_output() {
        assert_eq!(interpret(resp(0, "ok", ""), "true"), Outcome::Success("ok".into()));
        assert_eq!(interpret(resp(1, "out\n", "err\n"), "false"), Outcome::Failure("out\nerr\n".into()));
        let big = "x".repeat(20 * 1024);
        assert_eq!(interpret(resp(2, &big, ""), "cat"), Outcome::Failure("x".repeat(10 * 1024)));
    }

    #[test]
    fn exec_deadline_is_timeout_failure_other_errors_are_errors() {
        assert_eq!(
            interpret(call_error(tonic::Code::DeadlineExceeded, "timeout 1s exceeded"), "sleep 10"),
            Outcome::Failure("command \"sleep 10\" timed out".into())
        );
        assert_eq!(
            interpret(call_error(tonic::Code::NotFound, "container not found"), "true"),
            Outcome::Error("rpc error: code = NotFound desc = container not found".into())
        );
    }

    #[test]
    fn exec_command_expands_static_env_only() {
        let env = vec![
            EnvVar { name: "A".into(), value: Some("1".into()), value_from: None },
            EnvVar {
                name: "B".into(),
                value: None,
                value_from: Some(k8s_openapi::api::core::v1::EnvVarSource::default()),
            },
        ];
        let cmd: Vec<String> =
            ["sh", "-c", "test $(A) = 1 && echo $(B) $$(A) $(C) $"].iter().map(|s| s.to_string()).collect();
        assert_eq!(expand_command(&cmd, &env)[2], "test 1 = 1 && echo $(B) $(A) $(C) $");
    }
}
