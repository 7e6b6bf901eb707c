//! The pod lifecycle on a node (upstream's kubelet pod workers and
//! kuberuntime manager): pods bound to this node are run through CRI —
//! sandbox, init and sidecar containers, app containers, restarts with
//! CrashLoopBackOff, graceful termination — and their status is written
//! back through the `pods/status` subresource.

pub mod labels;
pub mod env;
pub mod volumes;
pub mod prober;
pub mod dns;
pub mod resources;
pub mod admission;
pub mod backoff;
pub mod container;
pub mod context;
pub mod etc_hosts;
pub mod hooks;
pub mod images;
pub mod logs_links;
pub mod manager;
pub mod sandbox;
pub mod snapshot;
pub mod static_pods;
pub mod status;
pub mod worker;
