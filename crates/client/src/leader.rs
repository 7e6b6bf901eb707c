//! Leader election over a coordination.k8s.io Lease (upstream
//! client-go `leaderelection` with a `LeaseLock`): among several servers,
//! the one holding `kube-system/<component>` (kube-controller-manager,
//! kube-scheduler) runs the loops. Upstream defaults: lease 15 s, renew
//! deadline 10 s, retry every 2 s; on a clean stop the holder releases the
//! lease.

use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::{Api, ObjectMeta, PostParams};

use crate::errors::{is_conflict, is_not_found};

/// Namespace of the components' leases.
pub const LEASE_NAMESPACE: &str = "kube-system";

/// Timing of the election.
#[derive(Clone, Copy, Debug)]
pub struct Timing {
    /// How long a lease is valid after its last renewal (`--leader-elect-lease-duration`).
    pub lease_duration: Duration,
    /// How long the leader keeps trying to renew before giving up (`--leader-elect-renew-deadline`).
    pub renew_deadline: Duration,
    /// Between attempts (`--leader-elect-retry-period`).
    pub retry_period: Duration,
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }
}

/// A candidate identity as upstream's: `<hostname>_<random UUID>`.
pub fn default_identity() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").map(|h| h.trim().to_string()).unwrap_or_default();
    format!("{}_{}", if host.is_empty() { "rkube" } else { &host }, uuid::Uuid::new_v4())
}

/// One candidate.
pub struct LeaderElector {
    api: Api<Lease>,
    /// The lease's name, which is also the component name in logs
    /// (`kube-controller-manager`, `kube-scheduler`).
    component: &'static str,
    identity: String,
    timing: Timing,
}

/// Whether a lease held by someone else may be taken over at `now`:
/// no holder, or its last renewal plus its duration has passed.
pub fn is_expired(spec: &LeaseSpec, now: jiff::Timestamp) -> bool {
    let holder = spec.holder_identity.as_deref().unwrap_or("");
    if holder.is_empty() {
        return true;
    }
    let Some(renewed) = spec.renew_time.as_ref().or(spec.acquire_time.as_ref()) else { return true };
    let duration = jiff::SignedDuration::from_secs(spec.lease_duration_seconds.unwrap_or(15).max(1) as i64);
    renewed.0 + duration <= now
}

impl LeaderElector {
    /// A candidate named `identity` (upstream: `<hostname>_<uuid>`) for the
    /// lease `kube-system/<component>`.
    pub fn new(client: kube::Client, component: &'static str, identity: String, timing: Timing) -> Self {
        LeaderElector { api: Api::namespaced(client, LEASE_NAMESPACE), component, identity, timing }
    }

    /// The candidate's identity.
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// Tries until this candidate holds the lease.
    pub async fn acquire(&self) {
        let mut logged = false;
        loop {
            match self.try_acquire_or_renew().await {
                Ok(true) => {
                    tracing::info!(component = self.component, identity = %self.identity, lease = %format!("{LEASE_NAMESPACE}/{}", self.component), "became leader");
                    return;
                }
                Ok(false) if !logged => {
                    tracing::info!(component = self.component, identity = %self.identity, "another candidate is leader; waiting");
                    logged = true;
                }
                Ok(false) => {}
                Err(e) => tracing::debug!(component = self.component, error = %e, "cannot acquire the lease yet"),
            }
            tokio::time::sleep(self.timing.retry_period).await;
        }
    }

    /// Renews the lease every retry period; returns when a renewal has not
    /// succeeded within the renew deadline (leadership lost).
    pub async fn hold(&self) {
        let mut last_ok = Instant::now();
        loop {
            tokio::time::sleep(self.timing.retry_period).await;
            match self.try_acquire_or_renew().await {
                Ok(true) => last_ok = Instant::now(),
                Ok(false) => {
                    tracing::warn!(component = self.component, identity = %self.identity, "lost the lease to another candidate");
                    return;
                }
                Err(e) => {
                    if last_ok.elapsed() >= self.timing.renew_deadline {
                        tracing::warn!(component = self.component, error = %e, "failed to renew the lease within the deadline; leadership lost");
                        return;
                    }
                }
            }
        }
    }

    /// Gives the lease up (holder cleared, duration 1 s) so that another
    /// manager takes over at once.
    pub async fn release(&self) {
        let Ok(mut lease) = self.api.get(self.component).await else { return };
        let spec = lease.spec.get_or_insert_with(Default::default);
        if spec.holder_identity.as_deref() != Some(self.identity.as_str()) {
            return;
        }
        spec.holder_identity = None;
        spec.lease_duration_seconds = Some(1);
        spec.renew_time = Some(MicroTime(jiff::Timestamp::now()));
        if self.api.replace(self.component, &PostParams::default(), &lease).await.is_ok() {
            tracing::info!(component = self.component, identity = %self.identity, "released the lease");
        }
    }

    async fn try_acquire_or_renew(&self) -> Result<bool, kube::Error> {
        let now = jiff::Timestamp::now();
        let seconds = self.timing.lease_duration.as_secs() as i32;
        let mut lease = match self.api.get(self.component).await {
            Ok(l) => l,
            Err(e) if is_not_found(&e) => {
                let lease = Lease {
                    metadata: ObjectMeta {
                        name: Some(self.component.into()),
                        namespace: Some(LEASE_NAMESPACE.into()),
                        ..Default::default()
                    },
                    spec: Some(LeaseSpec {
                        holder_identity: Some(self.identity.clone()),
                        lease_duration_seconds: Some(seconds),
                        acquire_time: Some(MicroTime(now)),
                        renew_time: Some(MicroTime(now)),
                        lease_transitions: Some(0),
                        ..Default::default()
                    }),
                };
                return match self.api.create(&PostParams::default(), &lease).await {
                    Ok(_) => Ok(true),
                    Err(e) if is_conflict(&e) => Ok(false),
                    Err(e) => Err(e),
                };
            }
            Err(e) => return Err(e),
        };
        let spec = lease.spec.get_or_insert_with(Default::default);
        let mine = spec.holder_identity.as_deref() == Some(self.identity.as_str());
        if !mine && !is_expired(spec, now) {
            return Ok(false);
        }
        if !mine {
            spec.acquire_time = Some(MicroTime(now));
            spec.lease_transitions = Some(spec.lease_transitions.unwrap_or(0) + 1);
            spec.holder_identity = Some(self.identity.clone());
        }
        spec.lease_duration_seconds = Some(seconds);
        spec.renew_time = Some(MicroTime(now));
        // The resourceVersion in `lease` makes this a compare-and-swap.
        match self.api.replace(self.component, &PostParams::default(), &lease).await {
            Ok(_) => Ok(true),
            Err(e) if is_conflict(&e) => Ok(false),
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_expires_after_its_duration_since_the_last_renewal() {
        let now: jiff::Timestamp = "2026-01-01T00:00:30Z".parse().unwrap();
        let spec = |holder: Option<&str>, renewed: &str| LeaseSpec {
            holder_identity: holder.map(str::to_string),
            lease_duration_seconds: Some(15),
            renew_time: Some(MicroTime(renewed.parse().unwrap())),
            ..Default::default()
        };
        assert!(!is_expired(&spec(Some("a"), "2026-01-01T00:00:20Z"), now));
        assert!(is_expired(&spec(Some("a"), "2026-01-01T00:00:10Z"), now));
        assert!(is_expired(&spec(None, "2026-01-01T00:00:29Z"), now));
    }
}
