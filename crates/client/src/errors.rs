//! Reading API errors: client-go's `apierrors.IsNotFound`, `IsConflict`, ….

/// The status code of an API error, if the API answered.
pub fn api_code(e: &kube::Error) -> Option<u16> {
    match e {
        kube::Error::Api(status) => Some(status.code),
        _ => None,
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
