//! Pure logic over Kubernetes API objects, with no I/O: the resource
//! registry, typed API errors and their `Status` form, and (as the API
//! server item grows) metadata rules, defaulting, validation, selectors,
//! patches and Table printing.

pub mod errors;
pub mod registry;
pub mod version;

pub use errors::{ApiError, GroupResource, StatusCause};
