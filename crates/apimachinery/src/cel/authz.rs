//! Kubernetes' CEL authorizer library (upstream `library/authz.go`, with
//! the 1.31+ selectors): the `authorizer` variable of
//! ValidatingAdmissionPolicy and webhook matchConditions, and
//! `authorizer.requestResource`.
//!
//! * `authorizer.path(p).check(verb)`;
//! * `authorizer.group(g).resource(r)` with `.subresource(s)`,
//!   `.namespace(ns)`, `.name(n)`, `.fieldSelector(s)`,
//!   `.labelSelector(s)`, then `.check(verb)` (API version `*`);
//! * `authorizer.serviceAccount(ns, name)`: the same checks for that
//!   service account as the principal;
//! * a Decision's `allowed()`, `reason()`, `errored()`, `error()`.
//!
//! Errors are upstream's: `path must not be empty`, `resource must not be
//! empty`, `Invalid service account name`, `Invalid service account
//! namespace`. The server supplies the decisions through [`Authorizer`].

use std::sync::Arc;

use cel::common::types::STRING_TYPE;
use cel::objects::Opaque;
use cel::{DeclarationError, Env, ExecutionError, Value};

use super::values::{err, opaque, opaque_arg, opaque_type, overload, str_arg};
use crate::validation::names::is_dns1123_subdomain;

const AUTHORIZER: &str = "kubernetes.authorization.Authorizer";
const PATH_CHECK: &str = "kubernetes.authorization.PathCheck";
const GROUP_CHECK: &str = "kubernetes.authorization.GroupCheck";
const RESOURCE_CHECK: &str = "kubernetes.authorization.ResourceCheck";
const DECISION: &str = "kubernetes.authorization.Decision";

/// What an expression asks the authorizer (upstream's
/// `authorizer.AttributesRecord` as the library fills it).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Check {
    /// `Some((namespace, name))` after `serviceAccount(ns, name)`: the
    /// principal is that service account; `None`: the requesting user.
    pub service_account: Option<(String, String)>,
    /// The verb (an API verb, or an HTTP verb for paths).
    pub verb: String,
    /// `Some` for a non-resource check (`authorizer.path`).
    pub path: Option<String>,
    /// The API group.
    pub group: String,
    /// The resource.
    pub resource: String,
    /// The subresource.
    pub subresource: String,
    /// The namespace (empty: cluster scope).
    pub namespace: String,
    /// The object name (empty: all).
    pub name: String,
    /// A raw field selector.
    pub field_selector: String,
    /// A raw label selector.
    pub label_selector: String,
}

/// The authorizer's answer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Decision {
    /// The decision was Allow (not Deny or NoOpinion).
    pub allowed: bool,
    /// The reason given.
    pub reason: String,
    /// The authorizer's error, if it failed.
    pub error: Option<String>,
}

/// Decides [`Check`]s synchronously (the server's RBAC and Node indexes
/// are in memory).
pub trait Authorizer: Send + Sync {
    /// The decision on `check`.
    fn check(&self, check: &Check) -> Decision;
}

/// The request's resource, for `authorizer.requestResource`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestResource {
    /// The API group.
    pub group: String,
    /// The resource.
    pub resource: String,
    /// The subresource.
    pub subresource: String,
    /// The namespace.
    pub namespace: String,
    /// The object name.
    pub name: String,
}

/// The values bound for `authorizer` and `authorizer.requestResource`.
#[derive(Clone)]
pub struct Binding {
    /// The authorizer the checks go to.
    pub authorizer: Arc<dyn Authorizer>,
    /// The request's resource.
    pub request_resource: RequestResource,
}

impl Binding {
    /// `(name, value)` of the variables to bind.
    pub(crate) fn variables(&self) -> [(&'static str, Value); 2] {
        let root = AuthorizerVal { authz: self.authorizer.clone(), service_account: None };
        let r = &self.request_resource;
        let rc = ResourceCheck {
            root: root.clone(),
            check: Check {
                group: r.group.clone(),
                resource: r.resource.clone(),
                subresource: r.subresource.clone(),
                namespace: r.namespace.clone(),
                name: r.name.clone(),
                ..Default::default()
            },
        };
        [("authorizer", opaque(root)), ("authorizer.requestResource", opaque(rc))]
    }
}

/// `authorizer` (or a service account's).
#[derive(Clone)]
struct AuthorizerVal {
    authz: Arc<dyn Authorizer>,
    service_account: Option<(String, String)>,
}

impl std::fmt::Debug for AuthorizerVal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Authorizer({:?})", self.service_account)
    }
}

impl PartialEq for AuthorizerVal {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.authz, &other.authz) && self.service_account == other.service_account
    }
}
impl Eq for AuthorizerVal {}

impl AuthorizerVal {
    fn decide(&self, mut check: Check) -> Value {
        check.service_account = self.service_account.clone();
        opaque(self.authz.check(&check))
    }
}

/// `authorizer.path(p)`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct PathCheck {
    root: AuthorizerVal,
    path: String,
}

/// `authorizer.group(g)`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct GroupCheck {
    root: AuthorizerVal,
    group: String,
}

/// A resource check being built.
#[derive(Clone, Debug, PartialEq, Eq)]
struct ResourceCheck {
    root: AuthorizerVal,
    check: Check,
}

macro_rules! opaque_named {
    ($($t:ty => $name:expr),*) => {
        $(impl Opaque for $t {
            fn runtime_type_name(&self) -> &str {
                $name
            }
        })*
    };
}
opaque_named!(AuthorizerVal => AUTHORIZER, PathCheck => PATH_CHECK, GroupCheck => GROUP_CHECK,
    ResourceCheck => RESOURCE_CHECK, Decision => DECISION);

fn root(a: &[Value]) -> Result<&AuthorizerVal, ExecutionError> {
    opaque_arg::<AuthorizerVal>(a, 0)
}

fn rc(a: &[Value]) -> Result<ResourceCheck, ExecutionError> {
    opaque_arg::<ResourceCheck>(a, 0).cloned()
}

fn decision(a: &[Value]) -> Result<&Decision, ExecutionError> {
    opaque_arg::<Decision>(a, 0)
}

/// Sets one field of a resource check from the string argument.
fn with(a: &[Value], set: fn(&mut Check, String)) -> Result<Value, ExecutionError> {
    let mut r = rc(a)?;
    set(&mut r.check, str_arg(a, 1)?.to_string());
    Ok(opaque(r))
}

overload!(path, |a| {
    let p = str_arg(a, 1)?;
    if p.trim().is_empty() {
        return Err(err("path must not be empty"));
    }
    Ok(opaque(PathCheck { root: root(a)?.clone(), path: p.to_string() }))
});
overload!(group, |a| Ok(opaque(GroupCheck { root: root(a)?.clone(), group: str_arg(a, 1)?.to_string() })));
overload!(service_account, |a| {
    let (namespace, name) = (str_arg(a, 1)?, str_arg(a, 2)?);
    if !is_dns1123_subdomain(name).is_empty() {
        return Err(err("Invalid service account name"));
    }
    if !crate::validation::names::is_dns1123_label(namespace).is_empty() {
        return Err(err("Invalid service account namespace"));
    }
    let r = root(a)?;
    Ok(opaque(AuthorizerVal {
        authz: r.authz.clone(),
        service_account: Some((namespace.to_string(), name.to_string())),
    }))
});
overload!(resource, |a| {
    let g = opaque_arg::<GroupCheck>(a, 0)?;
    let resource = str_arg(a, 1)?;
    if resource.trim().is_empty() {
        return Err(err("resource must not be empty"));
    }
    let check = Check { group: g.group.clone(), resource: resource.to_string(), ..Default::default() };
    Ok(opaque(ResourceCheck { root: g.root.clone(), check }))
});
overload!(subresource, |a| with(a, |c, v| c.subresource = v));
overload!(namespace, |a| with(a, |c, v| c.namespace = v));
overload!(name, |a| with(a, |c, v| c.name = v));
overload!(field_selector, |a| with(a, |c, v| c.field_selector = v));
overload!(label_selector, |a| with(a, |c, v| c.label_selector = v));
overload!(path_check, |a| {
    let p = opaque_arg::<PathCheck>(a, 0)?;
    let check = Check { path: Some(p.path.clone()), verb: str_arg(a, 1)?.to_string(), ..Default::default() };
    Ok(p.root.decide(check))
});
overload!(resource_check, |a| {
    let r = rc(a)?;
    let check = Check { verb: str_arg(a, 1)?.to_string(), ..r.check };
    Ok(r.root.decide(check))
});
overload!(allowed, |a| Ok(Value::Bool(decision(a)?.allowed)));
overload!(reason, |a| Ok(Value::String(Arc::new(decision(a)?.reason.clone()))));
overload!(errored, |a| Ok(Value::Bool(decision(a)?.error.is_some())));
overload!(error, |a| Ok(Value::String(Arc::new(decision(a)?.error.clone().unwrap_or_default()))));

/// Registers the library on `env`.
pub fn register(env: &mut Env) -> Result<(), DeclarationError> {
    let t = opaque_type;
    let s = || STRING_TYPE;
    env.add_member_overload("path", "authorizer_path", t(AUTHORIZER), vec![s()], path)?;
    env.add_member_overload("group", "authorizer_group", t(AUTHORIZER), vec![s()], group)?;
    env.add_member_overload(
        "serviceAccount",
        "authorizer_serviceaccount",
        t(AUTHORIZER),
        vec![s(), s()],
        service_account,
    )?;
    env.add_member_overload("resource", "groupcheck_resource", t(GROUP_CHECK), vec![s()], resource)?;
    env.add_member_overload("subresource", "resourcecheck_subresource", t(RESOURCE_CHECK), vec![s()], subresource)?;
    env.add_member_overload("namespace", "resourcecheck_namespace", t(RESOURCE_CHECK), vec![s()], namespace)?;
    env.add_member_overload("name", "resourcecheck_name", t(RESOURCE_CHECK), vec![s()], name)?;
    env.add_member_overload("fieldSelector", "authorizer_fieldselector", t(RESOURCE_CHECK), vec![s()], field_selector)?;
    env.add_member_overload("labelSelector", "authorizer_labelselector", t(RESOURCE_CHECK), vec![s()], label_selector)?;
    env.add_member_overload("check", "pathcheck_check", t(PATH_CHECK), vec![s()], path_check)?;
    env.add_member_overload("check", "resourcecheck_check", t(RESOURCE_CHECK), vec![s()], resource_check)?;
    env.add_member_overload("allowed", "decision_allowed", t(DECISION), vec![], allowed)?;
    env.add_member_overload("reason", "decision_reason", t(DECISION), vec![], reason)?;
    env.add_member_overload("errored", "decision_errored", t(DECISION), vec![], errored)?;
    env.add_member_overload("error", "decision_error", t(DECISION), vec![], error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cel::{Expression, Outcome};
    use std::sync::Mutex;

    /// Allows `alice` to create deployments in `default`, and
    /// `system:serviceaccount:ns1:robot` to get `/healthz`; records checks.
    #[derive(Default)]
    struct Fake(Mutex<Vec<Check>>);

    impl Authorizer for Fake {
        fn check(&self, c: &Check) -> Decision {
            self.0.lock().unwrap().push(c.clone());
            let allowed = match (&c.service_account, c.path.as_deref()) {
                (None, None) => {
                    c.group == "apps" && c.resource == "deployments" && c.namespace == "default" && c.verb == "create"
                }
                (Some((ns, n)), Some("/healthz")) => ns == "ns1" && n == "robot" && c.verb == "get",
                _ => false,
            };
            Decision { allowed, reason: if allowed { "ok".into() } else { String::new() }, error: None }
        }
    }

    fn run(src: &str, fake: &Arc<Fake>) -> Result<Outcome, String> {
        let binding = Binding {
            authorizer: fake.clone(),
            request_resource: RequestResource {
                group: "apps".into(),
                resource: "deployments".into(),
                namespace: "default".into(),
                name: "web".into(),
                ..Default::default()
            },
        };
        Expression::compile(src).unwrap().eval_with(&[], Some(&binding))
    }

    #[test]
    fn resource_and_path_checks_reach_the_authorizer() {
        let fake = Arc::new(Fake::default());
        let src = "authorizer.group('apps').resource('deployments').namespace('default').check('create').allowed()";
        assert_eq!(run(src, &fake), Ok(Outcome::Bool(true)));
        let src = "authorizer.group('apps').resource('deployments').namespace('other').check('create').allowed()";
        assert_eq!(run(src, &fake), Ok(Outcome::Bool(false)));
        assert_eq!(run("authorizer.requestResource.check('create').allowed()", &fake), Ok(Outcome::Bool(true)));
        assert_eq!(run("authorizer.requestResource.check('delete').allowed()", &fake), Ok(Outcome::Bool(false)));
        let sa = "authorizer.serviceAccount('ns1', 'robot').path('/healthz').check('get')";
        assert_eq!(run(&format!("{sa}.allowed()"), &fake), Ok(Outcome::Bool(true)));
        assert_eq!(run(&format!("{sa}.reason()"), &fake), Ok(Outcome::String("ok".into())));
        assert_eq!(run(&format!("{sa}.errored()"), &fake), Ok(Outcome::Bool(false)));
        assert_eq!(run(&format!("{sa}.error()"), &fake), Ok(Outcome::String(String::new())));
        assert_eq!(run("authorizer.path('/healthz').check('get').allowed()", &fake), Ok(Outcome::Bool(false)));
        let src = "authorizer.group('').resource('pods').subresource('log').name('p').fieldSelector('a=b')\
                   .labelSelector('x=y').check('get').allowed()";
        assert_eq!(run(src, &fake), Ok(Outcome::Bool(false)));
        let last = fake.0.lock().unwrap().last().cloned().unwrap();
        assert_eq!(
            last,
            Check {
                verb: "get".into(),
                resource: "pods".into(),
                subresource: "log".into(),
                name: "p".into(),
                field_selector: "a=b".into(),
                label_selector: "x=y".into(),
                ..Default::default()
            }
        );
    }

    #[test]
    fn invalid_arguments_fail_with_upstream_messages() {
        let fake = Arc::new(Fake::default());
        assert_eq!(run("authorizer.path(' ').check('get')", &fake), Err("path must not be empty".into()));
        assert_eq!(
            run("authorizer.group('').resource('').check('get')", &fake),
            Err("resource must not be empty".into())
        );
        assert_eq!(
            run("authorizer.serviceAccount('ns', 'Bad_Name')", &fake),
            Err("Invalid service account name".into())
        );
        assert_eq!(
            run("authorizer.serviceAccount('Bad.NS', 'ok')", &fake),
            Err("Invalid service account namespace".into())
        );
        assert!(fake.0.lock().unwrap().is_empty());
    }
}
