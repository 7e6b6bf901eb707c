//! rkube's kube-scheduler: an API client (DESIGN.md: never storage) that
//! watches pods without a node, runs them through the scheduling
//! framework's extension points with upstream's default plugins, and
//! records its choice through `pods/binding`.
//!
//! - [`framework`]: the plugin interface (extension points, `Status`,
//!   `CycleState`) and the per-cycle view of the cluster (`NodeInfo`,
//!   `Snapshot`), as upstream's `pkg/scheduler/framework`;
//! - [`plugins`]: one module per default plugin, with upstream names,
//!   semantics and weights.

#![warn(missing_docs)]

pub mod framework;
pub mod plugins;
