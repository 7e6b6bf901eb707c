//! Making a container's image present before it is created (upstream's
//! kubelet image manager): imagePullPolicy Always/IfNotPresent/Never, the
//! Pulling/Pulled/Failed/BackOff events with upstream's messages, and
//! ErrImagePull → ImagePullBackOff with a per-pod, per-image back-off.

use std::time::Instant;

use k8s_openapi::api::core::v1::{Container, ObjectReference, Pod};
use rkube_client::events::{NORMAL, WARNING};

use crate::cri::v1;

use super::backoff::Backoff;
use super::context::NodeContext;
use super::status::Waiting;

/// The effective pull policy: the field, else upstream's defaulting
/// (`Always` for `:latest` or an untagged reference without digest).
pub fn pull_policy(c: &Container) -> String {
    if let Some(p) = c.image_pull_policy.as_deref().filter(|p| !p.is_empty()) {
        return p.to_string();
    }
    let image = c.image.as_deref().unwrap_or("");
    let last = image.rsplit('/').next().unwrap_or(image);
    if image.contains('@') {
        return "IfNotPresent".into();
    }
    match last.split_once(':') {
        Some((_, "latest")) | None => "Always".into(),
        Some(_) => "IfNotPresent".into(),
    }
}

/// Go's `time.Duration` for a pull (`1.234s`, `850ms`).
fn go_duration(d: std::time::Duration) -> String {
    if d.as_millis() < 1000 {
        format!("{}ms", d.as_millis())
    } else {
        format!("{:.3}s", d.as_secs_f64())
    }
}

/// Ensures `c`'s image is present. Err: (waiting reason, message, retry
/// after) — `ErrImageNeverPull`, `ErrImagePull` or `ImagePullBackOff`.
pub async fn ensure(
    ctx: &NodeContext,
    pod: &Pod,
    c: &Container,
    r: &ObjectReference,
    pulls: &mut Backoff,
    sandbox_config: &v1::PodSandboxConfig,
    waiting: Option<&Waiting>,
) -> Result<(), (String, String, std::time::Duration)> {
    let image = c.image.clone().unwrap_or_default();
    let policy = pull_policy(c);
    let present = matches!(ctx.cri.image_status(&image).await, Ok(Some(_)));
    if policy != "Always" && present {
        ctx.recorder.event_on(
            r.clone(),
            NORMAL,
            "Pulled",
            format!("Container image \"{image}\" already present on machine"),
        );
        return Ok(());
    }
    if policy == "Never" {
        let message = format!("Container image \"{image}\" is not present with pull policy of Never");
        ctx.recorder.event_on(r.clone(), WARNING, "ErrImageNeverPull", message.clone());
        return Err(("ErrImageNeverPull".into(), message, super::backoff::INITIAL));
    }
    let key = format!("{}_{}", pod.metadata.uid.as_deref().unwrap_or(""), image);
    let now = Instant::now();
    let remaining = pulls.remaining(&key, now);
    if !remaining.is_zero() {
        let message = format!("Back-off pulling image \"{image}\"");
        if waiting.map(|w| w.reason.as_str()) != Some("ImagePullBackOff") {
            ctx.recorder.event_on(r.clone(), NORMAL, "BackOff", message.clone());
        }
        return Err(("ImagePullBackOff".into(), message, remaining));
    }
    ctx.recorder.event_on(r.clone(), NORMAL, "Pulling", format!("Pulling image \"{image}\""));
    let started = Instant::now();
    let auth = pull_auth(ctx, pod, &image).await;
    match ctx.cri.pull_image(&image, auth, Some(sandbox_config.clone())).await {
        Ok(_) => {
            let took = go_duration(started.elapsed());
            let size = match ctx.cri.image_status(&image).await {
                Ok(Some(i)) => i.size,
                _ => 0,
            };
            ctx.recorder.event_on(
                r.clone(),
                NORMAL,
                "Pulled",
                format!("Successfully pulled image \"{image}\" in {took} ({took} including waiting). Image size: {size} bytes."),
            );
            pulls.reset(&key);
            Ok(())
        }
        Err(e) => {
            let message = format!("Failed to pull image \"{image}\": {e}");
            ctx.recorder.event_on(r.clone(), WARNING, "Failed", message.clone());
            ctx.recorder.event_on(r.clone(), WARNING, "Failed", "Error: ErrImagePull".into());
            let wait = pulls.next(&key, now);
            Err(("ErrImagePull".into(), message, wait))
        }
    }
}

/// The registry host of an image reference, as the docker credential
/// lookup keys it (`docker.io` for Docker Hub short names).
pub fn registry_of(image: &str) -> &str {
    match image.split_once('/') {
        Some((first, _)) if first.contains('.') || first.contains(':') || first == "localhost" => first,
        _ => "docker.io",
    }
}

/// The credentials of the pod's `imagePullSecrets` for `image`'s registry
/// (`kubernetes.io/dockerconfigjson` or `kubernetes.io/dockercfg`
/// secrets), as upstream's keyring matches them; None when none applies.
async fn pull_auth(ctx: &NodeContext, pod: &Pod, image: &str) -> Option<v1::AuthConfig> {
    let names: Vec<String> = pod
        .spec
        .as_ref()?
        .image_pull_secrets
        .iter()
        .flatten()
        .map(|r| r.name.clone())
        .filter(|n| !n.is_empty())
        .collect();
    let ns = pod.metadata.namespace.clone().unwrap_or_default();
    let api: kube::Api<k8s_openapi::api::core::v1::Secret> = kube::Api::namespaced(ctx.client.clone(), &ns);
    for name in names {
        let Ok(secret) = api.get(&name).await else { continue };
        let data = secret.data.unwrap_or_default();
        let auths = if let Some(b) = data.get(".dockerconfigjson") {
            serde_json::from_slice::<serde_json::Value>(&b.0).ok().map(|v| v["auths"].clone())
        } else {
            data.get(".dockercfg").and_then(|b| serde_json::from_slice::<serde_json::Value>(&b.0).ok())
        };
        if let Some(found) = auths.and_then(|a| auth_for(&a, image)) {
            return Some(found);
        }
    }
    None
}

/// The entry of a docker config `auths` map for `image`'s registry.
pub fn auth_for(auths: &serde_json::Value, image: &str) -> Option<v1::AuthConfig> {
    let registry = registry_of(image);
    let matches = |key: &str| {
        let host = key.trim_start_matches("https://").trim_start_matches("http://");
        let host = host.split('/').next().unwrap_or(host);
        host == registry || (registry == "docker.io" && matches!(host, "index.docker.io" | "registry-1.docker.io"))
    };
    let (key, entry) = auths.as_object()?.iter().find(|(k, _)| matches(k))?;
    let field = |f: &str| entry.get(f).and_then(|v| v.as_str()).unwrap_or_default().to_string();
    Some(v1::AuthConfig {
        username: field("username"),
        password: field("password"),
        auth: field("auth"),
        server_address: key.clone(),
        identity_token: field("identitytoken"),
        registry_token: field("registrytoken"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(image: &str, policy: Option<&str>) -> Container {
        Container { image: Some(image.into()), image_pull_policy: policy.map(String::from), ..Default::default() }
    }

    #[test]
    fn pull_secrets_match_the_images_registry() {
        let auths = serde_json::json!({
            "https://index.docker.io/v1/": {"auth": "aHViOnB3"},
            "reg.example.com:5000": {"username": "u", "password": "p"}
        });
        assert_eq!(registry_of("busybox:1"), "docker.io");
        assert_eq!(registry_of("library/busybox"), "docker.io");
        assert_eq!(registry_of("reg.example.com:5000/app:1"), "reg.example.com:5000");
        assert_eq!(auth_for(&auths, "busybox:1").unwrap().auth, "aHViOnB3");
        let a = auth_for(&auths, "reg.example.com:5000/app:1").unwrap();
        assert_eq!((a.username.as_str(), a.password.as_str()), ("u", "p"));
        assert!(auth_for(&auths, "quay.io/x/y:1").is_none());
    }

    #[test]
    fn pull_policy_defaults_as_upstream() {
        assert_eq!(pull_policy(&c("busybox", None)), "Always");
        assert_eq!(pull_policy(&c("busybox:latest", None)), "Always");
        assert_eq!(pull_policy(&c("docker.io/library/busybox:1.36.1", None)), "IfNotPresent");
        assert_eq!(pull_policy(&c("localhost:5000/app", None)), "Always");
        assert_eq!(pull_policy(&c("app@sha256:abc", None)), "IfNotPresent");
        assert_eq!(pull_policy(&c("busybox:latest", Some("Never"))), "Never");
    }
}
