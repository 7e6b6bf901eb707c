//! Pure logic over Kubernetes API objects, with no I/O: the resource
//! registry, typed API errors and their `Status` form, and (as the API
//! server item grows) metadata rules, defaulting, validation, selectors,
//! patches and Table printing.

pub mod apply;
mod builtin_kinds;
pub mod cel;
pub mod duration;
pub mod errors;
pub mod meta;
pub mod openapi;
pub mod patch;
pub mod printers;
pub mod protobuf;
pub mod quantity;
pub mod quota;
pub mod registry;
pub mod selector;
pub mod strategy;
pub mod typed;
pub mod validation;
pub mod version;

pub use errors::{ApiError, GroupResource, StatusCause};
