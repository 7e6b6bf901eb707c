//! Auditing (`--audit-policy-file`, `--audit-log-path`), as upstream's
//! `k8s.io/apiserver/pkg/audit`, `pkg/endpoints/filters/audit.go` and the
//! log backend `plugin/pkg/audit/log`:
//!
//! - [`policy`]: the audit.k8s.io/v1 `Policy` and its rule matching;
//! - [`event`]: the audit.k8s.io/v1 `Event` as written;
//! - [`log`]: the JSON-lines log backend (file or standard output, with
//!   rotation);
//! - [`filter`]: two middlewares. [`filter::init`], outermost as
//!   upstream's `WithAuditInit`, gives every request an audit ID (the
//!   `Audit-Id` response header; a client's own `Audit-ID` header is kept)
//!   and audits requests whose authentication failed (401: one
//!   `ResponseStarted` event without a user, as upstream's
//!   `WithFailedAuthenticationAudit`). [`filter::audit`], right after
//!   authentication and before impersonation as upstream's `WithAudit`,
//!   asks the policy for the level and writes the stages
//!   `RequestReceived`, `ResponseStarted` (long-running requests),
//!   `ResponseComplete` or `Panic`, each unless the policy omits it; a
//!   refused impersonation is audited there with its 403.
//!
//! Later layers add to a request's event through the [`AuditContext`]
//! request extension: [`AuditContext::annotate`] (e.g. the authorizer's
//! `authorization.k8s.io/decision` and `authorization.k8s.io/reason`) and
//! [`AuditContext::set_impersonated_user`]; code without the request at
//! hand (admission plugins) uses [`annotate_current`], which reaches the
//! context of the request the task serves.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

pub mod event;
pub mod filter;
pub mod log;
pub mod policy;

pub use filter::{audit, init};
pub use log::{LogBackend, LogOptions};
pub use policy::{Level, Policy, Stage};

use crate::authn::UserInfo;

/// The audit ID response header (upstream's `Audit-ID`; HTTP/2 sends it
/// lower-case).
pub const AUDIT_ID_HEADER: &str = "Audit-Id";

/// Upstream's annotation keys of the authorization decision.
pub const DECISION_ANNOTATION: &str = "authorization.k8s.io/decision";
/// See [`DECISION_ANNOTATION`].
pub const REASON_ANNOTATION: &str = "authorization.k8s.io/reason";

/// The policy and the backend events go to.
#[derive(Debug)]
pub struct Auditor {
    /// The policy.
    pub policy: Policy,
    backend: LogBackend,
}

impl Auditor {
    /// An auditor writing events `policy` selects to `backend`.
    pub fn new(policy: Policy, backend: LogBackend) -> Auditor {
        Auditor { policy, backend }
    }

    /// Loads `--audit-policy-file` and opens `--audit-log-path`; the
    /// error says which file and what is wrong.
    pub fn from_files(policy_file: &std::path::Path, log: LogOptions) -> Result<Auditor, String> {
        let policy = Policy::load(policy_file)?;
        let backend = LogBackend::open(log)?;
        Ok(Auditor::new(policy, backend))
    }

    fn write(&self, event: &event::Event) {
        match serde_json::to_string(event) {
            Ok(line) => self.backend.write(line),
            Err(e) => tracing::error!(component = crate::COMPONENT, error = %e, "cannot encode an audit event"),
        }
    }
}

/// What later layers add to a request's audit event; a request extension
/// (cheap to clone, shared).
#[derive(Clone, Debug, Default)]
pub struct AuditContext {
    inner: Arc<Mutex<Additions>>,
    /// The request's audit ID.
    pub audit_id: Arc<str>,
}

#[derive(Debug, Default)]
struct Additions {
    annotations: BTreeMap<String, String>,
    impersonated: Option<UserInfo>,
    /// Whether the request got past authentication into the audit layer
    /// (else [`filter::init`] audits the failed authentication).
    entered: bool,
}

impl AuditContext {
    /// Adds an annotation to the request's event (the first value of a
    /// key wins, as upstream's `AddAuditAnnotation`).
    pub fn annotate(&self, key: impl Into<String>, value: impl Into<String>) {
        let mut a = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        a.annotations.entry(key.into()).or_insert_with(|| value.into());
    }

    /// Records the user the request impersonates.
    pub fn set_impersonated_user(&self, user: &UserInfo) {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).impersonated = Some(user.clone());
    }

    fn enter(&self) {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).entered = true;
    }

    fn entered(&self) -> bool {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).entered
    }

    fn take(&self) -> (BTreeMap<String, String>, Option<UserInfo>) {
        let a = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        (a.annotations.clone(), a.impersonated.clone())
    }
}

tokio::task_local! {
    /// The audit context of the request the current task serves.
    static CURRENT: AuditContext;
}

/// Runs `fut` with `ctx` as the current request's audit context.
pub(crate) async fn with_current<F: std::future::Future>(ctx: AuditContext, fut: F) -> F::Output {
    CURRENT.scope(ctx, fut).await
}

/// Adds an annotation to the audit event of the request the current task
/// serves, if it is audited (for code that has no request at hand, e.g.
/// admission plugins through `RequestAdmission::annotate`).
pub fn annotate_current(key: &str, value: &str) {
    let _ = CURRENT.try_with(|c| c.annotate(key, value));
}

/// Adds an annotation to the audit event of the request with these
/// extensions, if it is audited (convenience for other filters).
pub fn annotate(extensions: &axum::http::Extensions, key: &str, value: &str) {
    if let Some(ctx) = extensions.get::<AuditContext>() {
        ctx.annotate(key, value);
    }
}
