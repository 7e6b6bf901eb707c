//! VolumeManager tests that need no API server: emptyDir (disk and memory),
//! hostPath, node allocatable, unsupported sources, teardown.

use super::*;
use k8s_openapi::api::core::v1::{
    ClusterTrustBundleProjection, EmptyDirVolumeSource, HostPathVolumeSource, NFSVolumeSource, PodSecurityContext,
    PodSpec, ResourceRequirements, VolumeProjection,
};
use std::os::unix::fs::MetadataExt;

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// A client for an address nothing listens on: these tests never reach the API.
fn manager(dir: &Path) -> VolumeManager {
    let config = kube::Config::new("http://127.0.0.1:9".parse().unwrap());
    let client = kube::Client::try_from(config).unwrap();
    let m = VolumeManager::new(dir, client, "node-1");
    m.set_node_allocatable(Allocatable {
        cpu_millis: 2000.0,
        memory_bytes: 1073741824.0,
        ephemeral_storage_bytes: 0.0,
    });
    m
}

fn pod(volumes: Vec<Volume>) -> Pod {
    let mut p = Pod::default();
    p.metadata.name = Some("p".into());
    p.metadata.namespace = Some("default".into());
    p.metadata.uid = Some("0b9a7c1e-uid".into());
    p.spec = Some(PodSpec { volumes: Some(volumes), containers: vec![Container::default()], ..Default::default() });
    p
}

fn vol(name: &str) -> Volume {
    Volume { name: name.into(), ..Default::default() }
}

#[tokio::test]
async fn empty_dir_on_disk_is_a_0777_dir_under_the_pods_dir() {
    let dir = tempfile::tempdir().unwrap();
    let m = manager(dir.path());
    let p = pod(vec![Volume { empty_dir: Some(EmptyDirVolumeSource::default()), ..vol("cache") }]);
    let v = m.setup(&p).await.unwrap();
    let path = dir.path().join("agent/pods/0b9a7c1e-uid/volumes/kubernetes.io~empty-dir/cache");
    assert_eq!(v.volumes["cache"], VolumeInfo { host_path: path.clone(), plugin: PLUGIN_EMPTY_DIR, read_only: false });
    assert_eq!(fs::metadata(&path).unwrap().mode() & 0o7777, 0o777);
    fs::write(path.join("keep"), "x").unwrap();
    m.setup(&p).await.unwrap();
    assert!(path.join("keep").exists(), "setup is idempotent and keeps data");
    m.teardown("0b9a7c1e-uid").await.unwrap();
    assert!(!dir.path().join("agent/pods/0b9a7c1e-uid").exists());
    m.teardown("0b9a7c1e-uid").await.unwrap();
}

#[tokio::test]
async fn empty_dir_unknown_medium_fails_with_failed_mount_message() {
    let dir = tempfile::tempdir().unwrap();
    let m = manager(dir.path());
    let ed = EmptyDirVolumeSource { medium: Some("HugePages".into()), ..Default::default() };
    let err = m.setup(&pod(vec![Volume { empty_dir: Some(ed), ..vol("h") }])).await.unwrap_err();
    assert_eq!(err.to_string(), "MountVolume.SetUp failed for volume \"h\" : unknown storage medium \"HugePages\"");
}

#[tokio::test]
async fn memory_empty_dir_is_a_sized_tmpfs_and_teardown_unmounts_it() {
    if !is_root() {
        eprintln!("SKIPPED memory_empty_dir_is_a_sized_tmpfs_and_teardown_unmounts_it: needs root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let m = manager(dir.path());
    let ed = EmptyDirVolumeSource { medium: Some("Memory".into()), size_limit: Some(Quantity("2Mi".into())) };
    let mut p = pod(vec![Volume { empty_dir: Some(ed), ..vol("shm") }]);
    p.spec.as_mut().unwrap().security_context = Some(PodSecurityContext { fs_group: Some(2000), ..Default::default() });
    let v = m.setup(&p).await.unwrap();
    let path = &v.volumes["shm"].host_path;
    assert!(tmpfs::is_mount_point(path));
    assert_eq!(tmpfs::mounts_under(&m.pod_dir("0b9a7c1e-uid")).unwrap(), vec![path.clone()]);
    let md = fs::metadata(path).unwrap();
    assert_eq!(md.gid(), 2000);
    assert_ne!(md.mode() & libc::S_ISGID, 0, "fsGroup sets setgid on the volume root");
    m.setup(&p).await.unwrap();
    assert_eq!(tmpfs::mounts_under(&m.pod_dir("0b9a7c1e-uid")).unwrap().len(), 1, "mounted once");
    // A fresh manager (as after a restart) tears it down from mountinfo.
    let m2 = manager(dir.path());
    m2.teardown("0b9a7c1e-uid").await.unwrap();
    assert!(tmpfs::mounts_under(&m.pod_dir("0b9a7c1e-uid")).unwrap().is_empty());
    assert!(!m.pod_dir("0b9a7c1e-uid").exists());
}

#[tokio::test]
async fn memory_size_is_the_smallest_of_allocatable_pod_limit_and_size_limit() {
    let dir = tempfile::tempdir().unwrap();
    let m = manager(dir.path());
    let mut p = pod(vec![]);
    assert_eq!(m.memory_size(&p, None).await, Some(1073741824), "node allocatable");
    assert_eq!(m.memory_size(&p, Some(&Quantity("64Mi".into()))).await, Some(64 << 20));
    assert_eq!(m.memory_size(&p, Some(&Quantity("4Gi".into()))).await, Some(1073741824), "larger sizeLimit ignored");
    p.spec.as_mut().unwrap().containers[0].resources = Some(ResourceRequirements {
        limits: Some([("memory".to_string(), Quantity("128Mi".into()))].into()),
        ..Default::default()
    });
    assert_eq!(m.memory_size(&p, None).await, Some(128 << 20), "pod limit");
    assert_eq!(m.memory_size(&p, Some(&Quantity("32Mi".into()))).await, Some(32 << 20));
}

#[tokio::test]
async fn host_path_volume_checks_type_and_uses_the_host_path() {
    let dir = tempfile::tempdir().unwrap();
    let m = manager(dir.path());
    let target = dir.path().join("made/here");
    let hp = HostPathVolumeSource { path: target.to_string_lossy().into(), type_: Some("DirectoryOrCreate".into()) };
    let v = m.setup(&pod(vec![Volume { host_path: Some(hp), ..vol("h") }])).await.unwrap();
    assert_eq!(v.volumes["h"].host_path, target);
    assert!(target.is_dir());
    let f = dir.path().join("file");
    fs::write(&f, "").unwrap();
    let hp = HostPathVolumeSource { path: f.to_string_lossy().into(), type_: Some("Directory".into()) };
    let err = m.setup(&pod(vec![Volume { host_path: Some(hp), ..vol("h") }])).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("MountVolume.SetUp failed for volume \"h\" : hostPath type check failed: {} is not a directory, it's a File", f.display())
    );
}

#[tokio::test]
async fn unsupported_sources_are_refused_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let m = manager(dir.path());
    let nfs =
        Volume { nfs: Some(NFSVolumeSource { server: "s".into(), path: "/".into(), read_only: None }), ..vol("n") };
    let ctb = Volume {
        projected: Some(ProjectedVolumeSource {
            sources: Some(vec![VolumeProjection {
                cluster_trust_bundle: Some(ClusterTrustBundleProjection {
                    path: "ca.crt".into(),
                    ..Default::default()
                }),
                ..Default::default()
            }]),
            default_mode: None,
        }),
        ..vol("ctb")
    };
    let err = m.setup(&pod(vec![nfs, ctb])).await.unwrap_err();
    let VolumeError::SetUp { volume, message, others } = err else { panic!("{err}") };
    assert_eq!(volume, "n");
    assert!(message.contains("not supported"), "{message}");
    assert_eq!(others.len(), 1);
    assert!(others[0].starts_with("MountVolume.SetUp failed for volume \"ctb\" : clusterTrustBundle"), "{others:?}");
}

#[test]
fn pod_memory_limit_needs_every_container_limit() {
    let mut p = pod(vec![]);
    assert_eq!(pod_memory_limit(&p), None);
    let lim = |q: &str| {
        Some(ResourceRequirements {
            limits: Some([("memory".to_string(), Quantity(q.into()))].into()),
            ..Default::default()
        })
    };
    let spec = p.spec.as_mut().unwrap();
    spec.containers = vec![
        Container { resources: lim("100"), ..Default::default() },
        Container { resources: lim("50"), ..Default::default() },
    ];
    spec.init_containers = Some(vec![Container { resources: lim("400"), ..Default::default() }]);
    assert_eq!(pod_memory_limit(&p), Some(400.0));
    p.spec.as_mut().unwrap().init_containers.as_mut().unwrap()[0].resources = lim("10");
    assert_eq!(pod_memory_limit(&p), Some(150.0));
}

/// The worker spawns these futures on tokio: they must be `Send`.
#[test]
fn setup_and_teardown_futures_are_send() {
    fn assert_send<T: Send>(_: &T) {}
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let _guard = rt.enter();
    let dir = tempfile::tempdir().unwrap();
    let m = manager(dir.path());
    let p = pod(vec![]);
    let setup = m.setup(&p);
    assert_send(&setup);
    let teardown = m.teardown("x");
    assert_send(&teardown);
    fn assert_sync<T: Send + Sync>() {}
    assert_sync::<VolumeManager>();
}
