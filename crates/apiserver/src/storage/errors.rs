//! The one place where storage errors become API errors, with upstream's
//! words (`k8s.io/apiserver/pkg/storage/errors` and the etcd3 store).

use rkube_apimachinery::{ApiError, GroupResource};
use rkube_store::StoreError;

/// Upstream's `OptimisticLockErrorMsg`.
pub const OPTIMISTIC_LOCK_MSG: &str =
    "the object has been modified; please apply your changes to the latest version and try again";

/// The API error for a failed store operation on `resource` named `name`.
///
/// - `NotFound` → 404 `<resource> "<name>" not found`;
/// - `AlreadyExists` → 409 `<resource> "<name>" already exists`;
/// - `Conflict` → 409 `Operation cannot be fulfilled on ...: the object has been modified; ...`;
/// - `Compacted` → 410 Expired `too old resource version: <requested> (<compacted>)`;
/// - `FutureRevision` → 504 Timeout `Too large resource version: <requested>, current: <current>`;
/// - `ValueTooLarge` → 413 `etcdserver: request is too large` (what etcd answers);
/// - `Unavailable` → 503 ServiceUnavailable with the backend's reason;
/// - `Internal` → 500 InternalError (e.g. a value that does not decrypt).
pub fn from_store(err: StoreError, resource: &GroupResource, name: &str) -> ApiError {
    match err {
        StoreError::NotFound { .. } => ApiError::NotFound { resource: resource.clone(), name: name.to_string() },
        StoreError::AlreadyExists { .. } => {
            ApiError::AlreadyExists { resource: resource.clone(), name: name.to_string() }
        }
        StoreError::Conflict { .. } => ApiError::Conflict {
            resource: resource.clone(),
            name: name.to_string(),
            message: OPTIMISTIC_LOCK_MSG.into(),
            causes: vec![],
        },
        StoreError::Compacted { requested, compacted } => {
            ApiError::Expired(format!("too old resource version: {requested} ({compacted})"))
        }
        StoreError::FutureRevision { requested, current } => ApiError::ResourceVersionTooLarge { requested, current },
        StoreError::ValueTooLarge { .. } => ApiError::RequestEntityTooLarge("etcdserver: request is too large".into()),
        StoreError::Unavailable(why) => ApiError::ServiceUnavailable(format!("storage is unavailable: {why}")),
        StoreError::Internal(why) => ApiError::Internal(why),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_errors_map_to_upstream_statuses() {
        let gr = GroupResource::new("", "configmaps");
        let e = from_store(StoreError::Compacted { requested: 3, compacted: 9 }, &gr, "x");
        assert_eq!((e.code(), e.to_string()), (410, "too old resource version: 3 (9)".to_string()));
        let e = from_store(StoreError::AlreadyExists { key: "k".into() }, &gr, "x");
        assert_eq!((e.code(), e.to_string()), (409, "configmaps \"x\" already exists".to_string()));
        let e = from_store(StoreError::Unavailable("down".into()), &gr, "x");
        assert_eq!(e.code(), 503);
    }
}
