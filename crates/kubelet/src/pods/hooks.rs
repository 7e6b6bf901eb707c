//! Container lifecycle hooks (upstream's `lifecycle.handlerRunner`):
//! postStart and preStop handlers — exec through CRI ExecSync, httpGet to
//! the pod, and sleep.

use std::time::Duration;

use k8s_openapi::api::core::v1::{LifecycleHandler, Pod};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::context::NodeContext;
use super::prober::http::{probe_http, HttpTarget};
use super::prober::results::Outcome;

/// How long an exec or httpGet hook may take before it is abandoned (the
/// caller bounds preStop by the grace period).
const HOOK_TIMEOUT: Duration = Duration::from_secs(30);

/// Runs `hook` for container `container_id` of `pod`. Err: upstream's
/// failure message (the caller puts it in FailedPostStartHook /
/// FailedPreStopHook events).
pub async fn run(ctx: &NodeContext, pod: &Pod, container_id: &str, hook: &LifecycleHandler) -> Result<(), String> {
    if let Some(exec) = &hook.exec {
        let cmd = exec.command.clone().unwrap_or_default();
        let resp = ctx.cri.exec_sync(container_id, cmd.clone(), HOOK_TIMEOUT).await.map_err(|e| e.to_string())?;
        if resp.exit_code != 0 {
            let mut out = String::from_utf8_lossy(&resp.stdout).into_owned();
            out.push_str(&String::from_utf8_lossy(&resp.stderr));
            return Err(format!("command '{}' exited with {}: {out}", cmd.join(" "), resp.exit_code));
        }
        return Ok(());
    }
    if let Some(get) = &hook.http_get {
        let host = get
            .host
            .clone()
            .filter(|h| !h.is_empty())
            .or_else(|| pod.status.as_ref().and_then(|s| s.pod_ip.clone()))
            .ok_or("the pod has no IP for the httpGet hook")?;
        let port = resolve_port(pod, &get.port)?;
        let target = HttpTarget {
            scheme: get.scheme.clone().unwrap_or_else(|| "HTTP".into()).to_ascii_lowercase(),
            host,
            port,
            path: get.path.clone().unwrap_or_default(),
            headers: get.http_headers.iter().flatten().map(|h| (h.name.clone(), h.value.clone())).collect(),
        };
        return match probe_http(&target, HOOK_TIMEOUT).await {
            Outcome::Success(_) | Outcome::Warning(_) => Ok(()),
            Outcome::Failure(m) | Outcome::Error(m) => Err(m),
        };
    }
    if let Some(sleep) = &hook.sleep {
        tokio::time::sleep(Duration::from_secs(sleep.seconds.max(0) as u64)).await;
        return Ok(());
    }
    Err("the lifecycle hook has no handler (exec, httpGet or sleep)".into())
}

/// A port number, or a named containerPort of any container of the pod.
fn resolve_port(pod: &Pod, port: &IntOrString) -> Result<u16, String> {
    match port {
        IntOrString::Int(n) => u16::try_from(*n).map_err(|_| format!("invalid port {n}")),
        IntOrString::String(name) => pod
            .spec
            .iter()
            .flat_map(|s| s.containers.iter())
            .flat_map(|c| c.ports.iter().flatten())
            .find(|p| p.name.as_deref() == Some(name.as_str()))
            .and_then(|p| u16::try_from(p.container_port).ok())
            .ok_or_else(|| format!("couldn't find port: {name}")),
    }
}
