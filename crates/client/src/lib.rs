//! What every rkube component that talks to the API server shares — the
//! controller manager, the scheduler, and later the kubelet, kube-proxy
//! and DNS (DESIGN.md: they are API clients only, never storage users):
//!
//! - [`client`]: kube-rs clients over HTTPS verified against the cluster
//!   CA, one per identity (client certificate or a replaceable bearer token);
//! - [`leader`]: leader election over a coordination.k8s.io Lease, as
//!   client-go's `leaderelection` with a `LeaseLock`;
//! - [`errors`]: reading API errors (404, 409, …) the way controllers test them;
//! - [`events`]: core/v1 Events as upstream controllers record them;
//! - [`pem`]: the PEM helpers both need.

#![warn(missing_docs)]

pub mod client;
pub mod errors;
pub mod events;
pub mod leader;
pub mod pem;
