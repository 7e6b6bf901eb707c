//! The runtime foundation against the real thing: rkube's managed containerd
//! (Debian's containerd 1.6 with runc) in a temporary data dir, the CRI v1
//! client, and the locally built pause and busybox images running a
//! container. Needs root and the packages scripts/test.sh installs
//! (containerd, runc, containernetworking-plugins, busybox-static).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rkube_kubelet::containerd::{
    teardown_host_state, ContainerRuntime, ManagedContainerd, RuntimePaths, Snapshotter, StartOptions,
};
use rkube_kubelet::cri::v1;
use rkube_kubelet::{host, images};

/// Kills containerd, its shims and containers and unmounts everything under
/// the data dir when the test ends, whether it passed or panicked.
struct Cleanup {
    paths: RuntimePaths,
    containerd: Option<ManagedContainerd>,
    cgroup_root: String,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        // Dropping the handle leaves containerd running; teardown_host_state stops it.
        drop(self.containerd.take());
        teardown_host_state(&self.paths);
        let left = host::remove_cgroup_tree(&self.cgroup_root);
        if !left.is_empty() && !std::thread::panicking() {
            panic!("cgroups left behind: {left:?}");
        }
    }
}

fn mounts_under(dir: &Path) -> Vec<String> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    info.lines()
        .filter_map(|l| l.split(' ').nth(4))
        .filter(|m| Path::new(m).starts_with(dir))
        .map(String::from)
        .collect()
}

fn prerequisites() {
    if let Err(e) = host::check_runtime_binaries() {
        panic!("{e}. Run the tests through scripts/test.sh, which installs the packages they need.");
    }
    assert!(
        Path::new(images::HOST_BUSYBOX).exists(),
        "{} is missing: install busybox-static (scripts/test.sh installs it)",
        images::HOST_BUSYBOX
    );
    // SAFETY: geteuid has no preconditions.
    assert_eq!(unsafe { libc_geteuid() }, 0, "the containerd tests run as root (as CI does)");
}

extern "C" {
    #[link_name = "geteuid"]
    fn libc_geteuid() -> u32;
    #[link_name = "kill"]
    fn libc_kill(pid: i32, sig: i32) -> i32;
}

/// With the snapshotter detected for this host (overlayfs unless the data
/// dir's filesystem can't carry it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn managed_containerd_runs_a_busybox_container() {
    run_busybox_pod(StartOptions::default()).await;
}

/// With the native snapshotter, the fallback for overlay-on-overlay hosts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn managed_containerd_runs_a_busybox_container_native_snapshotter() {
    run_busybox_pod(StartOptions { snapshotter: Some(Snapshotter::Native), ..Default::default() }).await;
}

async fn run_busybox_pod(opts: StartOptions) {
    let _ = tracing_subscriber::fmt().with_test_writer().with_env_filter("info").try_init();
    prerequisites();
    let data_dir = tempfile::Builder::new().prefix("rkube-kubelet-").tempdir().unwrap();
    let paths = RuntimePaths::new(data_dir.path());
    // With cgroupfs the pod's cgroups go under a parent named after the data
    // dir, so the test removes exactly what it created. With the systemd
    // driver containerd puts them in transient scopes systemd removes itself.
    let systemd = host::detect_cgroup_driver() == host::CgroupDriver::Systemd;
    let cgroup_root =
        if systemd { String::new() } else { format!("/{}", data_dir.path().file_name().unwrap().to_string_lossy()) };
    let mut guard = Cleanup { paths: paths.clone(), containerd: None, cgroup_root: cgroup_root.clone() };

    let started = Instant::now();
    let forced = opts.snapshotter;
    let containerd = ManagedContainerd::start(data_dir.path(), opts).await.unwrap();
    if let Some(s) = forced {
        assert_eq!(containerd.config().snapshotter, s);
    }
    eprintln!(
        "containerd ready in {:?} (snapshotter {}, cgroup driver {})",
        started.elapsed(),
        containerd.config().snapshotter.as_str(),
        containerd.config().cgroup_driver.as_str()
    );
    let cri = containerd.client().clone();
    guard.containerd = Some(containerd);
    assert!(std::fs::read_to_string(&paths.config).unwrap().contains("sandbox_image = \"registry.k8s.io/pause:3.10\""));

    let version = cri.version().await.unwrap();
    assert_eq!(version.runtime_name, "containerd");
    assert_eq!(version.runtime_api_version, "v1");
    let conditions = cri.status(false).await.unwrap().status.unwrap().conditions;
    let runtime_ready = conditions.iter().find(|c| c.r#type == "RuntimeReady").unwrap();
    assert!(runtime_ready.status, "RuntimeReady: {runtime_ready:?}");
    // No CNI config yet (the agent writes it for its podCIDR): the network is not ready.
    let network_ready = conditions.iter().find(|c| c.r#type == "NetworkReady").unwrap();
    assert!(!network_ready.status, "NetworkReady: {network_ready:?}");
    assert_eq!(network_ready.reason, "NetworkPluginNotReady");

    // A failed call says which call failed on which socket, and the runtime's reason.
    let err = cri.pull_image("127.0.0.1:1/rkube/absent:1", None, None).await.unwrap_err();
    let msg = err.to_string();
    assert!(msg.starts_with(&format!("CRI PullImage on unix://{} failed:", paths.socket.display())), "{msg}");
    assert!(msg.contains("127.0.0.1:1/rkube/absent:1"), "{msg}");

    // The pause image is provided at start, before anything is imported.
    assert!(cri.image_status(rkube_kubelet::PAUSE_IMAGE).await.unwrap().is_some());

    // `rkube images build-local`: both images, as archives, imported.
    let built = images::build_local(&paths.images_dir, Path::new(images::HOST_BUSYBOX)).unwrap();
    for (_, archive) in &built {
        images::import_archive(cri.socket(), Some(guard.containerd.as_ref().unwrap().config().snapshotter), archive)
            .await
            .unwrap();
    }
    let busybox =
        format!("docker.io/library/busybox:{}", images::busybox_version(Path::new(images::HOST_BUSYBOX)).unwrap());
    let tags: Vec<String> = cri.list_images(None).await.unwrap().into_iter().flat_map(|i| i.repo_tags).collect();
    assert!(tags.contains(&rkube_kubelet::PAUSE_IMAGE.to_string()), "{tags:?}");
    assert!(tags.contains(&busybox), "{tags:?}");

    // A host-network pod (no CNI needed) with one busybox container.
    let log_dir = data_dir.path().join("pods").join("default_hello_uid-1");
    std::fs::create_dir_all(&log_dir).unwrap();
    let host_network = v1::NamespaceOption { network: v1::NamespaceMode::Node as i32, ..Default::default() };
    let sandbox_config = v1::PodSandboxConfig {
        metadata: Some(v1::PodSandboxMetadata {
            name: "hello".into(),
            uid: "uid-1".into(),
            namespace: "default".into(),
            attempt: 0,
        }),
        // Host network means the host's UTS namespace: runc refuses to set a hostname there.
        hostname: String::new(),
        log_directory: log_dir.to_string_lossy().into_owned(),
        linux: Some(v1::LinuxPodSandboxConfig {
            cgroup_parent: if systemd { String::new() } else { format!("{cgroup_root}/poduid-1") },
            security_context: Some(v1::LinuxSandboxSecurityContext {
                namespace_options: Some(host_network.clone()),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    };
    let sandbox = cri.run_pod_sandbox(sandbox_config.clone(), "").await.unwrap();
    let container_config = v1::ContainerConfig {
        metadata: Some(v1::ContainerMetadata { name: "busybox".into(), attempt: 0 }),
        image: Some(v1::ImageSpec { image: busybox.clone(), ..Default::default() }),
        command: vec!["sh".into()],
        args: vec!["-c".into(), "echo hello; sleep 1".into()],
        log_path: "busybox/0.log".into(),
        linux: Some(v1::LinuxContainerConfig {
            security_context: Some(v1::LinuxContainerSecurityContext {
                namespace_options: Some(host_network),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    };
    let container = cri.create_container(&sandbox, container_config, sandbox_config).await.unwrap();
    cri.start_container(&container).await.unwrap();

    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        let s = cri.container_status(&container, false).await.unwrap();
        if s.state == v1::ContainerState::ContainerExited as i32 {
            break s;
        }
        assert!(Instant::now() < deadline, "the container did not exit within 30 s: {s:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(status.exit_code, 0, "{status:?}");
    // It ran `sleep 1`, so at least a second passed between start and finish.
    assert!(status.finished_at - status.started_at >= 1_000_000_000, "{status:?}");
    // The CRI log format: `<RFC 3339 time> stdout F hello`.
    let log: PathBuf = log_dir.join("busybox/0.log");
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.lines().any(|l| l.split(' ').skip(1).collect::<Vec<_>>() == ["stdout", "F", "hello"]), "{text:?}");

    // Remove everything through CRI; nothing of the pod stays mounted.
    cri.stop_pod_sandbox(&sandbox).await.unwrap();
    cri.remove_pod_sandbox(&sandbox).await.unwrap();
    assert!(cri.list_containers(None).await.unwrap().is_empty());
    assert!(cri.list_pod_sandbox(None).await.unwrap().is_empty());
    let err = cri.container_status(&container, false).await.unwrap_err();
    assert!(err.is_not_found(), "{err}");
    cri.remove_image(&busybox).await.unwrap();
    assert!(cri.image_status(&busybox).await.unwrap().is_none());

    let mut containerd = guard.containerd.take().unwrap();
    containerd.stop().await;
    let leftover = mounts_under(data_dir.path());
    assert!(leftover.is_empty(), "mounts left after removing the pod and stopping containerd: {leftover:?}");
    drop(containerd);
    drop(guard);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn managed_containerd_is_restarted_after_it_dies() {
    let _ = tracing_subscriber::fmt().with_test_writer().with_env_filter("info").try_init();
    prerequisites();
    let data_dir = tempfile::Builder::new().prefix("rkube-kubelet-").tempdir().unwrap();
    let mut guard = Cleanup { paths: RuntimePaths::new(data_dir.path()), containerd: None, cgroup_root: String::new() };
    guard.containerd = Some(ManagedContainerd::start(data_dir.path(), StartOptions::default()).await.unwrap());
    let first = guard.containerd.as_ref().unwrap().pid().unwrap();
    // SAFETY: killing the containerd this test started.
    assert_eq!(unsafe { libc_kill(first as i32, 9) }, 0);

    // The supervisor restarts it after its 1 s back-off and the CRI answers again.
    let deadline = Instant::now() + Duration::from_secs(20);
    let second = loop {
        let managed = guard.containerd.as_ref().unwrap();
        if let Some(pid) = managed.pid().filter(|p| *p != first) {
            let socket = managed.paths().socket.clone();
            if let Ok(cri) = rkube_kubelet::cri::CriClient::connect(&socket).await {
                if cri.version().await.is_ok() {
                    break pid;
                }
            }
        }
        assert!(Instant::now() < deadline, "containerd was not restarted within 20 s");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_ne!(first, second);
    let log = std::fs::read_to_string(&guard.paths.log).unwrap();
    assert!(
        log.matches("containerd successfully booted").count() >= 2,
        "both runs log to {}",
        guard.paths.log.display()
    );

    // Another agent given this socket as --container-runtime-endpoint talks to it without a process of its own.
    let other = tempfile::Builder::new().prefix("rkube-kubelet-").tempdir().unwrap();
    let endpoint = format!("unix://{}", guard.paths.socket.display());
    let mut external = ContainerRuntime::start(other.path(), Some(&endpoint), StartOptions::default()).await.unwrap();
    assert!(matches!(external, ContainerRuntime::External(_)));
    assert_eq!(external.client().version().await.unwrap().runtime_name, "containerd");
    assert!(!RuntimePaths::new(other.path()).config.exists(), "no containerd config for an external runtime");
    external.stop().await;
    assert_eq!(guard.containerd.as_ref().unwrap().pid(), Some(second), "stopping an external runtime stops nothing");

    // A containerd an earlier (stopped or killed) rkube left running for this
    // data dir, with the config rkube writes now, is adopted at start: the
    // same process, no restart.
    let config = guard.containerd.as_ref().unwrap().paths().config.clone();
    let socket = guard.paths.socket.clone();
    guard.containerd.as_mut().unwrap().stop().await;
    let mut leftover = std::process::Command::new("containerd")
        .arg("--config")
        .arg(&config)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(cri) = rkube_kubelet::cri::CriClient::connect(&socket).await {
            if cri.version().await.is_ok() {
                break;
            }
        }
        assert!(Instant::now() < deadline, "the stand-in leftover containerd did not start");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    guard.containerd = Some(ManagedContainerd::start(data_dir.path(), StartOptions::default()).await.unwrap());
    let adopted = guard.containerd.as_mut().unwrap();
    assert!(adopted.adopted());
    assert_eq!(adopted.pid(), Some(leftover.id()));
    assert_eq!(adopted.client().version().await.unwrap().runtime_name, "containerd");
    // detach() (the agent's SIGTERM path) leaves it running.
    adopted.detach().await;
    assert!(leftover.try_wait().unwrap().is_none(), "detach leaves containerd running");
    assert_eq!(rkube_kubelet::containerd::managed_containerd_pids(&guard.paths), vec![leftover.id() as i32]);

    // One running with another config than rkube writes now is replaced.
    let mut changed = std::fs::read_to_string(&config).unwrap();
    changed.push_str("# changed by hand\n");
    std::fs::write(&config, changed).unwrap();
    guard.containerd = Some(ManagedContainerd::start(data_dir.path(), StartOptions::default()).await.unwrap());
    let third = guard.containerd.as_ref().unwrap().pid().unwrap();
    assert!(!guard.containerd.as_ref().unwrap().adopted());
    assert_ne!(third, leftover.id());
    assert!(leftover.try_wait().unwrap().is_some(), "the leftover containerd was stopped");
    assert!(!std::fs::read_to_string(&config).unwrap().contains("changed by hand"), "the config is rewritten");
    assert_eq!(guard.containerd.as_ref().unwrap().client().version().await.unwrap().runtime_name, "containerd");

    // stop() ends it for good: TERM, and no restart.
    guard.containerd.as_mut().unwrap().stop().await;
    assert!(guard.containerd.as_ref().unwrap().pid().is_none());
    assert!(!Path::new(&format!("/proc/{third}")).exists() || is_zombie_or_gone(third));
}

fn is_zombie_or_gone(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| s.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')))
        .unwrap_or(true)
}
