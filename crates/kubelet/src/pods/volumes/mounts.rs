//! A container's CRI mounts from its `volumeMounts`, as upstream's kubelet
//! `makeMounts`: `subPath` / `subPathExpr` (expanded with the container's
//! environment), read-only volumes, mount propagation, and the termination
//! message file.

use std::collections::BTreeSet;
use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

use k8s_openapi::api::core::v1::{Container, VolumeMount};

use super::{PodVolumes, VolumeError};
use crate::cri::v1::{Mount, MountPropagation};

/// Expands `$(VAR)` in a `subPathExpr` from `env` only, as upstream's
/// `ExpandContainerVolumeMounts`: `$$` is a literal `$`; a variable that is
/// unset or empty is an error `missing value for A, B`.
pub fn expand_subpath_expr(expr: &str, env: &[(String, String)]) -> Result<String, String> {
    let lookup = |k: &str| env.iter().rev().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    let mut missing = BTreeSet::new();
    let mut out = String::new();
    let mut rest = expr;
    while let Some(pos) = rest.find('$') {
        out.push_str(&rest[..pos]);
        let after = &rest[pos + 1..];
        if let Some(r) = after.strip_prefix('$') {
            out.push('$');
            rest = r;
        } else if let Some(body) = after.strip_prefix('(') {
            match body.find(')') {
                Some(end) => {
                    let name = &body[..end];
                    match lookup(name) {
                        Some(v) if !v.is_empty() => out.push_str(v),
                        _ => {
                            missing.insert(name.to_string());
                        }
                    }
                    rest = &body[end + 1..];
                }
                None => {
                    out.push_str("$(");
                    rest = body;
                }
            }
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    if !missing.is_empty() {
        return Err(format!("missing value for {}", missing.into_iter().collect::<Vec<_>>().join(", ")));
    }
    Ok(out)
}

/// Rejects an absolute `subPath` or one with a `..` element, with upstream's
/// messages.
pub fn validate_subpath(sub: &str) -> Result<(), String> {
    if Path::new(sub).is_absolute() {
        return Err(format!("error SubPath `{sub}` must not be an absolute path"));
    }
    if sub.split('/').any(|p| p == "..") {
        return Err(format!("unable to provision SubPath `{sub}`: must not contain '..'"));
    }
    Ok(())
}

/// `<volume>/<sub>`, created as a directory with the volume root's mode when
/// missing (as upstream, so the group of an fsGroup volume can write it);
/// errors if an existing path resolves (through symlinks) outside the volume.
pub fn prepare_subpath(volume: &Path, sub: &str) -> Result<PathBuf, String> {
    let host = volume.join(sub);
    if fs::symlink_metadata(&host).is_err() {
        let perm = fs::metadata(volume).map_err(|e| e.to_string())?.permissions().mode() & 0o7777;
        let mut cur = volume.to_path_buf();
        for c in Path::new(sub).components() {
            let Component::Normal(part) = c else { continue };
            cur.push(part);
            if fs::symlink_metadata(&cur).is_err() {
                fs::DirBuilder::new().mode(perm).create(&cur).map_err(|e| e.to_string())?;
                fs::set_permissions(&cur, fs::Permissions::from_mode(perm)).map_err(|e| e.to_string())?;
            }
        }
    }
    let root = fs::canonicalize(volume).map_err(|e| e.to_string())?;
    let resolved = fs::canonicalize(&host).map_err(|e| e.to_string())?;
    if !resolved.starts_with(&root) {
        return Err(format!("subpath {:?} not within volume path {:?}", resolved.display(), root.display()));
    }
    Ok(host)
}

fn propagation(mode: Option<&str>) -> Result<i32, String> {
    Ok(match mode {
        None | Some("None") => MountPropagation::PropagationPrivate,
        Some("HostToContainer") => MountPropagation::PropagationHostToContainer,
        Some("Bidirectional") => MountPropagation::PropagationBidirectional,
        Some(other) => return Err(format!("invalid MountPropagation mode: {other:?}")),
    } as i32)
}

fn one_mount(
    mount: &VolumeMount,
    container: &Container,
    vols: &PodVolumes,
    env: &[(String, String)],
) -> Result<Mount, String> {
    let vol = vols
        .volumes
        .get(&mount.name)
        .ok_or_else(|| format!("cannot find volume {:?} to mount into container {:?}", mount.name, container.name))?;
    let mut host_path = vol.host_path.clone();
    let sub = match (mount.sub_path_expr.as_deref().filter(|s| !s.is_empty()), mount.sub_path.as_deref()) {
        (Some(expr), _) => Some(expand_subpath_expr(expr, env)?),
        (None, Some(s)) if !s.is_empty() => Some(s.to_string()),
        _ => None,
    };
    if let Some(sub) = sub {
        validate_subpath(&sub)?;
        host_path = prepare_subpath(&host_path, &sub).map_err(|e| {
            tracing::warn!(component = "kubelet", error = %e, volume = %mount.name, container = %container.name,
                "failed to prepare subPath");
            format!(
                "failed to create subPath directory for volumeMount {:?} of container {:?}",
                mount.name, container.name
            )
        })?;
    }
    let readonly = mount.read_only.unwrap_or(false) || vol.read_only;
    let recursive_read_only = match mount.recursive_read_only.as_deref() {
        None | Some("Disabled") | Some("IfPossible") => false,
        // containerd 1.6 has no recursive read-only mounts (upstream checks the
        // runtime handler's features and fails the same way).
        Some("Enabled") => {
            return Err(format!(
                "volume {:?} requested recursive read-only mode, but it is not supported by the container runtime",
                mount.name
            ))
        }
        Some(other) => return Err(format!("unknown recursive read-only mode {other:?}")),
    };
    Ok(Mount {
        container_path: mount.mount_path.clone(),
        host_path: host_path.to_string_lossy().into_owned(),
        readonly,
        selinux_relabel: false,
        propagation: propagation(mount.mount_propagation.as_deref())?,
        recursive_read_only,
        ..Default::default()
    })
}

/// The CRI mounts of `container`'s volumeMounts, then (if the container has a
/// `terminationMessagePath`) its termination message file created under
/// `pods_dir`. Errors name the container (upstream `makeMounts` messages).
pub fn make_mounts(
    pods_dir: &Path,
    pod_uid: &str,
    container: &Container,
    vols: &PodVolumes,
    env: &[(String, String)],
) -> Result<Vec<Mount>, VolumeError> {
    let mut out = Vec::new();
    for m in container.volume_mounts.iter().flatten() {
        out.push(
            one_mount(m, container, vols, env)
                .map_err(|message| VolumeError::Mounts { container: container.name.clone(), message })?,
        );
    }
    let tmp = container.termination_message_path.as_deref().unwrap_or("/dev/termination-log");
    if !tmp.is_empty() {
        let file = termination_log(pods_dir, pod_uid, &container.name).map_err(|e| VolumeError::Mounts {
            container: container.name.clone(),
            message: format!("failed to create the termination message file: {e}"),
        })?;
        out.push(Mount {
            container_path: tmp.to_string(),
            host_path: file.to_string_lossy().into_owned(),
            ..Default::default()
        });
    }
    Ok(out)
}

/// Creates a fresh termination message file
/// `<pods dir>/<uid>/containers/<container>/<8 hex digits>` (mode 0666, as
/// upstream: a new random name per container instance).
pub fn termination_log(pods_dir: &Path, pod_uid: &str, container: &str) -> io::Result<PathBuf> {
    let dir = pods_dir.join(pod_uid).join("containers").join(container);
    fs::DirBuilder::new().recursive(true).mode(0o750).create(&dir)?;
    loop {
        let path = dir.join(format!("{:08x}", super::atomic_writer::random_u32()));
        match fs::OpenOptions::new().write(true).create_new(true).mode(0o666).open(&path) {
            Ok(_) => {
                fs::set_permissions(&path, fs::Permissions::from_mode(0o666))?;
                return Ok(path);
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pods::volumes::VolumeInfo;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
    }

    #[test]
    fn subpath_expr_expands_from_env_only() {
        let e = env(&[("POD_NAME", "web-0"), ("EMPTY", "")]);
        assert_eq!(expand_subpath_expr("logs/$(POD_NAME)", &e).unwrap(), "logs/web-0");
        assert_eq!(expand_subpath_expr("$$(POD_NAME)", &e).unwrap(), "$(POD_NAME)");
        assert_eq!(expand_subpath_expr("a$b$(", &e).unwrap(), "a$b$(");
        assert_eq!(expand_subpath_expr("$(B)/$(A)/$(EMPTY)", &e).unwrap_err(), "missing value for A, B, EMPTY");
    }

    #[test]
    fn subpath_validation_rejects_absolute_and_backsteps() {
        assert_eq!(validate_subpath("/etc").unwrap_err(), "error SubPath `/etc` must not be an absolute path");
        assert_eq!(
            validate_subpath("a/../../x").unwrap_err(),
            "unable to provision SubPath `a/../../x`: must not contain '..'"
        );
        validate_subpath("a/..b/c").unwrap();
    }

    #[test]
    fn subpath_is_created_with_volume_mode_and_may_not_escape() {
        let dir = tempfile::tempdir().unwrap();
        let vol = dir.path().join("vol");
        fs::create_dir(&vol).unwrap();
        fs::set_permissions(&vol, fs::Permissions::from_mode(0o2770)).unwrap();
        let p = prepare_subpath(&vol, "a/b").unwrap();
        assert_eq!(p, vol.join("a/b"));
        assert!(p.is_dir());
        assert_eq!(fs::metadata(&p).unwrap().permissions().mode() & 0o7777, 0o2770);
        std::os::unix::fs::symlink(dir.path(), vol.join("out")).unwrap();
        assert!(prepare_subpath(&vol, "out").unwrap_err().contains("not within volume path"));
    }

    #[test]
    fn container_mounts_subpath_readonly_propagation_and_termination_log() {
        let dir = tempfile::tempdir().unwrap();
        let vol = dir.path().join("data");
        fs::create_dir(&vol).unwrap();
        let mut vols = PodVolumes::default();
        vols.volumes
            .insert("data".into(), VolumeInfo { host_path: vol.clone(), plugin: "empty-dir", read_only: false });
        vols.volumes.insert("cfg".into(), VolumeInfo { host_path: vol.clone(), plugin: "configmap", read_only: true });
        let vm =
            |name: &str, path: &str| VolumeMount { name: name.into(), mount_path: path.into(), ..Default::default() };
        let c = Container {
            name: "app".into(),
            volume_mounts: Some(vec![
                VolumeMount { sub_path_expr: Some("$(POD)".into()), ..vm("data", "/data") },
                VolumeMount {
                    read_only: Some(true),
                    mount_propagation: Some("HostToContainer".into()),
                    ..vm("data", "/ro")
                },
                vm("cfg", "/etc/cfg"),
            ]),
            termination_message_path: Some("/dev/termination-log".into()),
            ..Default::default()
        };
        let m = make_mounts(dir.path(), "uid1", &c, &vols, &env(&[("POD", "p0")])).unwrap();
        assert_eq!(m.len(), 4);
        assert_eq!(m[0].host_path, vol.join("p0").to_string_lossy());
        assert!(vol.join("p0").is_dir());
        assert!(!m[0].readonly);
        assert_eq!(m[0].propagation, MountPropagation::PropagationPrivate as i32);
        assert!(m[1].readonly);
        assert_eq!(m[1].propagation, MountPropagation::PropagationHostToContainer as i32);
        assert!(m[2].readonly, "API-data volumes are always read-only");
        assert_eq!(m[3].container_path, "/dev/termination-log");
        let log = PathBuf::from(&m[3].host_path);
        assert!(log.starts_with(dir.path().join("uid1/containers/app")));
        assert_eq!(log.file_name().unwrap().len(), 8);
        assert_eq!(fs::metadata(&log).unwrap().permissions().mode() & 0o777, 0o666);

        let bad = Container { volume_mounts: Some(vec![vm("nope", "/x")]), ..c.clone() };
        assert_eq!(
            make_mounts(dir.path(), "uid1", &bad, &vols, &[]).unwrap_err().to_string(),
            "cannot find volume \"nope\" to mount into container \"app\""
        );
        let missing = Container {
            volume_mounts: Some(vec![VolumeMount { sub_path_expr: Some("$(X)".into()), ..vm("data", "/d") }]),
            ..c
        };
        assert_eq!(
            make_mounts(dir.path(), "uid1", &missing, &vols, &[]).unwrap_err().to_string(),
            "missing value for X"
        );
    }
}
