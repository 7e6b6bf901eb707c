//! The scheduling framework (upstream `pkg/scheduler/framework`): the
//! plugin interface and the cluster view plugins read.

pub mod interface;
pub mod types;

pub use interface::*;
pub use types::*;
