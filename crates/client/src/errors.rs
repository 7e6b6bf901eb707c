//! Reading API errors: client-go's `apierrors.IsNotFound`, `IsConflict`, ….

/// The status code of an API error, if the API answered.
pub fn api_code(e: &kube::Error) -> Option<u16> {
    match e {
        kube::Error::Api(status) => Some(status.code),
        _ => None,
    }
}

/// What to show a user for `e`: the `Status` message when the API
/// answered (not the whole `Status`), else the transport error.
pub fn message(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(status) => status.message.clone(),
        other => other.to_string(),
    }
}

/// Whether `e` is a 404.
pub fn is_not_found(e: &kube::Error) -> bool {
    api_code(e) == Some(404)
}

/// Whether `e` is a 409 (AlreadyExists or Conflict).
pub fn is_conflict(e: &kube::Error) -> bool {
    api_code(e) == Some(409)
}
