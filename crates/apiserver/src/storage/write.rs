//! Create and update (upstream's `Store.Create`, `Store.Update` with
//! `rest.BeforeCreate` / `rest.BeforeUpdate` and `GuaranteedUpdate`).

use rkube_apimachinery::apply::{self, fieldset::Schema, managed::ManagerId};
use rkube_apimachinery::strategy::Namespace as NamespaceStrategy;
use rkube_apimachinery::validation::{validate_object_meta, validate_object_meta_update, ErrorList, FieldError, Path};
use rkube_apimachinery::{meta, validation, ApiError, StatusCause};
use rkube_store::StoreError;
use serde_json::{json, Value};

use super::errors::OPTIMISTIC_LOCK_MSG;
use super::{parse_resource_version, ResourceStore};
use crate::admission::AdmitWrite;

/// How many times an update re-reads and retries after losing a race.
const MAX_UPDATE_ATTEMPTS: usize = 16;

/// Options every write takes.
#[derive(Clone, Default)]
pub struct WriteOptions {
    /// `dryRun=All`: validate and answer as if written, store nothing.
    pub dry_run: bool,
    /// The request's admission ([`crate::admission`]); `None` for the
    /// server's own writes, which are not admitted.
    pub admission: Option<std::sync::Arc<dyn AdmitWrite>>,
    /// The apiVersion the client wrote through when it differs from the
    /// stored one (`events.k8s.io/v1` for Events): the kind's
    /// version-dependent validation applies. Empty otherwise.
    pub request_api_version: String,
}

impl WriteOptions {
    /// Options of a write that is not admitted (the server's own writes).
    pub fn internal(dry_run: bool) -> WriteOptions {
        WriteOptions { dry_run, admission: None, request_api_version: String::new() }
    }
}

impl std::fmt::Debug for WriteOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteOptions")
            .field("dry_run", &self.dry_run)
            .field("admission", &self.admission.is_some())
            .field("request_api_version", &self.request_api_version)
            .finish()
    }
}

/// How a write maintains `metadata.managedFields`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Tracking {
    /// Not at all: the object keeps what the caller put there (internal
    /// writers).
    #[default]
    None,
    /// A create, update or patch by this manager (operation `Update`):
    /// see [`apply::track_update`].
    Update(ManagerId),
    /// Server-side apply: the caller's closure computed them already.
    Apply,
}

/// Which part of an object an update may change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpdateKind {
    /// The main resource: everything but the status (for kinds with a
    /// status subresource).
    Main,
    /// `/status`: only the status.
    Status,
    /// Namespaces' `/finalize`: only `spec.finalizers`.
    Finalize,
    /// The server's own subresource writes (pods' `binding`,
    /// `ephemeralcontainers`): the object as the caller built it, without
    /// the kind's update preparation and validation (the caller applies
    /// the subresource's rules); metadata rules still hold.
    Internal,
}

impl ResourceStore {
    /// Creates `obj` in `namespace` (upstream `Store.Create`): generated
    /// name, uid, creationTimestamp, generation, defaulting, the kind's
    /// create preparation and validation, then create-if-absent.
    pub async fn create(&self, namespace: &str, obj: Value, opts: &WriteOptions) -> Result<Value, ApiError> {
        self.create_tracked(namespace, obj, opts, &Tracking::None).await
    }

    /// [`Self::create`], maintaining `metadata.managedFields` as `tracking`
    /// says (after defaulting, so defaulted fields belong to the creator as
    /// upstream).
    pub async fn create_tracked(
        &self,
        namespace: &str,
        mut obj: Value,
        opts: &WriteOptions,
        tracking: &Tracking,
    ) -> Result<Value, ApiError> {
        self.before_create(namespace, &mut obj, opts).await?;
        self.track(None, &mut obj, tracking);
        let name = meta::name(&obj).to_string();
        let key = self.keys.object(namespace, &name);
        if let Some(hooks) = self.hooks() {
            hooks.before_write(&mut obj, None, opts.dry_run).await?;
        }
        let result = self.create_prepared(&key, &name, &obj, opts).await;
        if let Some(hooks) = self.hooks() {
            match &result {
                Ok(created) if !opts.dry_run => hooks.committed(Some(created), None).await,
                _ => hooks.abort(&obj, None, opts.dry_run).await,
            }
        }
        result
    }

    async fn create_prepared(
        &self,
        key: &str,
        name: &str,
        obj: &Value,
        opts: &WriteOptions,
    ) -> Result<Value, ApiError> {
        if opts.dry_run {
            let existing = self.store.get(key, None).await.map_err(|e| self.store_error(e, name))?;
            if existing.kv.is_some() {
                return Err(ApiError::AlreadyExists { resource: self.resource.clone(), name: name.to_string() });
            }
            return Ok(obj.clone());
        }
        let ttl = self.ttl.get().copied();
        let kv = self.store.create(key, self.encode(obj)?, ttl).await.map_err(|e| self.store_error(e, name))?;
        // What was stored, at its revision, without decoding it again.
        Ok(with_resource_version(obj.clone(), kv.mod_revision))
    }

    /// `rest.BeforeCreate` plus the kind's defaulting and validation, with
    /// the admission phases around the validation.
    async fn before_create(&self, namespace: &str, obj: &mut Value, opts: &WriteOptions) -> Result<(), ApiError> {
        let admission = opts.admission.as_deref();
        if !meta::resource_version(obj).is_empty() {
            return Err(ApiError::Internal("resourceVersion should not be set on objects to be created".into()));
        }
        let namespaced = self.info.namespaced();
        meta::set(obj, "namespace", if namespaced { json!(namespace) } else { Value::Null });
        meta::set(obj, "deletionTimestamp", Value::Null);
        meta::set(obj, "deletionGracePeriodSeconds", Value::Null);
        if meta::name(obj).is_empty() && !meta::generate_name(obj).is_empty() {
            let name = validation::generate_name(meta::generate_name(obj));
            meta::set(obj, "name", json!(name));
        }
        self.strategy.default(obj);
        if let Some(admission) = admission {
            admission.mutate(obj, None).await?;
            // Mutations may not move the object elsewhere (upstream checks
            // namespace and name again after admission).
            meta::set(obj, "namespace", if namespaced { json!(namespace) } else { Value::Null });
        }
        // The uid comes first, as upstream's `FillObjectMetaSystemFields`:
        // Jobs build their generated selector from it in PrepareForCreate.
        meta::set(obj, "uid", json!(meta::new_uid()));
        self.strategy.prepare_for_create(obj);
        meta::set(obj, "creationTimestamp", json!(meta::now()));
        meta::set(obj, "generation", if self.strategy.tracks_generation() { json!(1) } else { Value::Null });
        let mut errs = validate_object_meta(
            &obj["metadata"],
            namespaced,
            &self.strategy.name_validation(),
            &Path::new("metadata"),
        )
        .to_causes();
        errs.extend(self.strategy.validate_create(obj));
        if !opts.request_api_version.is_empty() {
            errs.extend(self.strategy.validate_for_request_version(obj, None, &opts.request_api_version));
        }
        self.invalid_if_any(obj, errs)?;
        match admission {
            Some(admission) => admission.validate(obj, None).await,
            None => Ok(()),
        }
    }

    fn invalid_if_any(&self, obj: &Value, causes: Vec<StatusCause>) -> Result<(), ApiError> {
        if causes.is_empty() {
            return Ok(());
        }
        Err(ApiError::Invalid {
            group: self.info.group.to_string(),
            kind: self.info.kind.to_string(),
            name: meta::name(obj).to_string(),
            causes,
        })
    }

    /// Updates `name` (upstream `Store.Update` over `GuaranteedUpdate`):
    /// `try_update` gets the stored object (`None` if absent) and returns
    /// the requested one — the PUT body, or the patch applied to the stored
    /// object. Optimistic concurrency on `metadata.resourceVersion` (409
    /// Conflict), unconditional update when it is empty and the kind allows
    /// it, create-on-update where the kind allows it, the kind's update
    /// preparation and validation, a write only when something changed,
    /// and removal when the update empties the finalizers of an object
    /// being deleted. Returns the object and whether it was created.
    pub async fn update<F>(
        &self,
        namespace: &str,
        name: &str,
        kind: UpdateKind,
        opts: &WriteOptions,
        try_update: F,
    ) -> Result<(Value, bool), ApiError>
    where
        F: FnMut(Option<&Value>) -> Result<Value, ApiError>,
    {
        self.update_tracked(namespace, name, kind, opts, &Tracking::None, try_update).await
    }

    /// [`Self::update`], maintaining `metadata.managedFields` as `tracking`
    /// says; [`Tracking::Apply`] also creates a missing object whatever the
    /// kind's create-on-update rule (upstream forces create for apply).
    pub async fn update_tracked<F>(
        &self,
        namespace: &str,
        name: &str,
        kind: UpdateKind,
        opts: &WriteOptions,
        tracking: &Tracking,
        mut try_update: F,
    ) -> Result<(Value, bool), ApiError>
    where
        F: FnMut(Option<&Value>) -> Result<Value, ApiError>,
    {
        let key = self.keys.object(namespace, name);
        for _ in 0..MAX_UPDATE_ATTEMPTS {
            let current = self.store.get(&key, None).await.map_err(|e| self.store_error(e, name))?;
            let existing = current.kv.as_ref().map(|kv| self.decode(kv)).transpose()?;
            let mut obj = try_update(existing.as_ref())?;
            let Some((old, kv)) = existing.zip(current.kv) else {
                let may_create = self.strategy.allow_create_on_update() || matches!(tracking, Tracking::Apply);
                if kind != UpdateKind::Main || !may_create {
                    return Err(self.not_found(name));
                }
                meta::set(&mut obj, "resourceVersion", Value::Null);
                match self.create_tracked(namespace, obj, opts, tracking).await {
                    Err(ApiError::AlreadyExists { .. }) => continue,
                    result => return result.map(|o| (o, true)),
                }
            };
            let requested = parse_resource_version(meta::resource_version(&obj))?;
            if requested == 0 {
                if !self.strategy.allow_unconditional_update() {
                    let cause = FieldError::invalid(
                        &Path::new("metadata").child("resourceVersion"),
                        0i64,
                        "must be specified for an update",
                    );
                    return Err(ErrorList(vec![cause]).into_invalid(self.info.group, self.info.plural, name));
                }
                meta::set(&mut obj, "resourceVersion", json!(kv.mod_revision.to_string()));
            } else if requested != kv.mod_revision {
                return Err(self.conflict(name));
            }
            if kind == UpdateKind::Main {
                self.strategy.default(&mut obj);
            }
            if let Some(admission) = &opts.admission {
                admission.mutate(&mut obj, Some(&old)).await?;
            }
            self.before_update(kind, &mut obj, &old, &opts.request_api_version)?;
            if let Some(admission) = &opts.admission {
                admission.validate(&obj, Some(&old)).await?;
            }
            self.track(Some(&old), &mut obj, tracking);
            // Nothing to write when the new object encodes to the stored
            // bytes (upstream's `bytes.Equal` in GuaranteedUpdate).
            if self.encode(&obj)? == kv.value {
                return Ok((old, false));
            }
            if let Some(hooks) = self.hooks() {
                hooks.before_write(&mut obj, Some(&old), opts.dry_run).await?;
            }
            let abort = |obj: &Value| self.abort_hooks(obj.clone(), &old, opts.dry_run);
            if self.should_delete_during_update(&obj, &old) {
                if opts.dry_run {
                    abort(&obj).await;
                    return Ok((obj, false));
                }
                return match self.store.delete(&key, Some(kv.mod_revision)).await {
                    Ok(resp) => {
                        abort(&obj).await;
                        if let Some(hooks) = self.hooks() {
                            hooks.committed(None, Some(&old)).await;
                        }
                        meta::set(&mut obj, "resourceVersion", json!(resp.revision.to_string()));
                        Ok((obj, false))
                    }
                    Err(StoreError::Conflict { .. }) => {
                        abort(&obj).await;
                        continue;
                    }
                    Err(e) => {
                        abort(&obj).await;
                        Err(self.store_error(e, name))
                    }
                };
            }
            if opts.dry_run {
                abort(&obj).await;
                return Ok((obj, false));
            }
            let ttl = self.ttl.get().copied();
            match self.store.update(&key, self.encode(&obj)?, kv.mod_revision, ttl).await {
                Ok(kv) => {
                    let updated = with_resource_version(obj, kv.mod_revision);
                    if let Some(hooks) = self.hooks() {
                        hooks.committed(Some(&updated), Some(&old)).await;
                    }
                    return Ok((updated, false));
                }
                Err(StoreError::Conflict { .. }) | Err(StoreError::NotFound { .. }) => {
                    abort(&obj).await;
                    continue;
                }
                Err(e) => {
                    abort(&obj).await;
                    return Err(self.store_error(e, name));
                }
            }
        }
        Err(self.conflict(name))
    }

    /// Tells the write hooks that the write they prepared for `obj` did
    /// not happen.
    async fn abort_hooks(&self, obj: Value, old: &Value, dry_run: bool) {
        if let Some(hooks) = self.hooks() {
            hooks.abort(&obj, Some(old), dry_run).await;
        }
    }

    /// Maintains managedFields for a [`Tracking::Update`] write.
    fn track(&self, old: Option<&Value>, obj: &mut Value, tracking: &Tracking) {
        if let Tracking::Update(id) = tracking {
            let gvk = self.info.gvk();
            let opts = apply::TrackOptions {
                schema: Schema::for_kind(gvk.group, gvk.version, gvk.kind),
                ignore_status: id.subresource.is_empty() && self.info.subresource("status").is_some(),
            };
            apply::track_update(old, obj, id, opts, &meta::now());
        }
    }

    pub(super) fn conflict(&self, name: &str) -> ApiError {
        ApiError::Conflict {
            resource: self.resource.clone(),
            name: name.to_string(),
            message: OPTIMISTIC_LOCK_MSG.into(),
            causes: vec![],
        }
    }

    /// `rest.BeforeUpdate`: what the update may change, generation,
    /// the metadata fields that only the server sets, validation.
    fn before_update(
        &self,
        kind: UpdateKind,
        obj: &mut Value,
        old: &Value,
        request_api_version: &str,
    ) -> Result<(), ApiError> {
        if self.info.namespaced() {
            meta::set(obj, "namespace", json!(meta::namespace(old)));
        }
        match kind {
            // Defaulted by the caller, before mutating admission.
            UpdateKind::Main => self.strategy.prepare_for_update(obj, old),
            UpdateKind::Status => self.strategy.prepare_for_status_update(obj, old),
            UpdateKind::Finalize => NamespaceStrategy.prepare_for_finalize(obj, old),
            UpdateKind::Internal => {}
        }
        let old_meta = &old["metadata"];
        for field in ["creationTimestamp", "deletionTimestamp"] {
            meta::set(obj, field, old_meta.get(field).cloned().unwrap_or(Value::Null));
        }
        if meta::uid(obj).is_empty() {
            meta::set(obj, "uid", json!(meta::uid(old)));
        }
        if obj.pointer("/metadata/deletionGracePeriodSeconds").is_none_or(Value::is_null) {
            let grace = old_meta.get("deletionGracePeriodSeconds").cloned().unwrap_or(Value::Null);
            meta::set(obj, "deletionGracePeriodSeconds", grace);
        }
        let old_generation = old_meta.get("generation").cloned().unwrap_or(Value::Null);
        meta::set(obj, "generation", old_generation.clone());
        if self.strategy.tracks_generation() && spec_changed(obj, old) {
            meta::set(obj, "generation", json!(old_generation.as_i64().unwrap_or(0) + 1));
        }
        let path = Path::new("metadata");
        let names = self.strategy.name_validation();
        let mut errs = validate_object_meta(&obj["metadata"], self.info.namespaced(), &names, &path);
        errs.extend(validate_object_meta_update(&obj["metadata"], old_meta, &path));
        let mut causes = errs.to_causes();
        if kind != UpdateKind::Internal {
            causes.extend(self.strategy.validate_update(obj, old));
            if !request_api_version.is_empty() {
                causes.extend(self.strategy.validate_for_request_version(obj, Some(old), request_api_version));
            }
        }
        self.invalid_if_any(obj, causes)
    }

    /// Upstream's `ShouldDeleteDuringUpdate`: the update removed the last
    /// finalizer of an object whose deletion was requested without a grace
    /// period still running.
    fn should_delete_during_update(&self, obj: &Value, old: &Value) -> bool {
        meta::finalizers(obj).is_empty()
            && meta::deletion_timestamp(old).is_some()
            && old.pointer("/metadata/deletionGracePeriodSeconds").and_then(Value::as_i64).unwrap_or(0) == 0
            && !self.strategy.holds_deletion(obj)
    }
}

/// Whether anything but `metadata` and `status` differs (the generic rule
/// for bumping `metadata.generation`).
fn spec_changed(new: &Value, old: &Value) -> bool {
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(m) = v.as_object_mut() {
            m.remove("metadata");
            m.remove("status");
        }
        v
    };
    strip(new) != strip(old)
}

/// `obj` with `metadata.resourceVersion` set to `revision`: what decoding
/// its stored form at that revision gives.
fn with_resource_version(mut obj: Value, revision: i64) -> Value {
    meta::set(&mut obj, "resourceVersion", Value::String(revision.to_string()));
    obj
}
