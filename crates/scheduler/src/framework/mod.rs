//! The scheduling framework (upstream `pkg/scheduler/framework`): the
//! plugin interface, the cluster view plugins read, and the runtime that
//! runs a profile's plugins.

pub mod interface;
pub mod parallel;
pub mod runtime;
pub mod types;

pub use interface::*;
pub use types::*;
