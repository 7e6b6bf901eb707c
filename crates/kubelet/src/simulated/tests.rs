//! The simulated runtime's CRI semantics through a real tonic client on its socket.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use super::*;
use crate::cri::v1;

async fn served(dir: &Path) -> Served {
    serve(Arc::new(SimulatedRuntime::new(dir)), &socket_path(dir)).await.unwrap()
}

fn sandbox_config(name: &str, log_dir: &Path) -> v1::PodSandboxConfig {
    v1::PodSandboxConfig {
        metadata: Some(v1::PodSandboxMetadata {
            name: name.into(),
            namespace: "default".into(),
            uid: format!("uid-{name}"),
            attempt: 0,
        }),
        log_directory: log_dir.to_string_lossy().into_owned(),
        labels: HashMap::from([("app".to_string(), name.to_string())]),
        ..Default::default()
    }
}

fn container_config(name: &str, image: &str) -> v1::ContainerConfig {
    v1::ContainerConfig {
        metadata: Some(v1::ContainerMetadata { name: name.into(), attempt: 0 }),
        image: Some(v1::ImageSpec { image: image.into(), ..Default::default() }),
        labels: HashMap::from([("io.kubernetes.container.name".to_string(), name.to_string())]),
        log_path: format!("{name}/0.log"),
        ..Default::default()
    }
}

fn state_filter(state: v1::ContainerState) -> Option<v1::ContainerStateValue> {
    Some(v1::ContainerStateValue { state: state as i32 })
}

#[tokio::test]
async fn network_becomes_ready_with_a_pod_cidr_and_sandboxes_get_ips_from_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = served(dir.path()).await;
    let cri = s.client().clone();
    let v = cri.version().await.unwrap();
    assert_eq!((v.runtime_name.as_str(), v.runtime_api_version.as_str()), (RUNTIME_NAME, "v1"));

    let conds = cri.status(false).await.unwrap().status.unwrap().conditions;
    let cond = |t: &str| conds.iter().find(|c| c.r#type == t).unwrap().clone();
    assert!(cond("RuntimeReady").status);
    assert!(!cond("NetworkReady").status);
    assert_eq!(cond("NetworkReady").reason, "NetworkPluginNotReady");
    let err = cri.run_pod_sandbox(sandbox_config("a", dir.path()), "").await.unwrap_err();
    assert!(err.to_string().contains("cni plugin not initialized"), "{err}");

    // The agent writes its conflist for the Node's podCIDR; the runtime reads it.
    let cni = crate::agent::cni::CniPaths::new(dir.path());
    cni.write("10.244.7.0/24").unwrap();
    let conds = cri.status(false).await.unwrap().status.unwrap().conditions;
    assert!(conds.iter().all(|c| c.status), "{conds:?}");

    let a = cri.run_pod_sandbox(sandbox_config("a", dir.path()), "").await.unwrap();
    let b = cri.run_pod_sandbox(sandbox_config("b", dir.path()), "").await.unwrap();
    let ip = |id: String| {
        let cri = cri.clone();
        async move { cri.pod_sandbox_status(&id, false).await.unwrap().status.unwrap().network.unwrap().ip }
    };
    assert_eq!(ip(a.clone()).await, "10.244.7.2");
    assert_eq!(ip(b.clone()).await, "10.244.7.3");

    // The same metadata again is refused while the first exists (name reservation).
    let dup = cri.run_pod_sandbox(sandbox_config("a", dir.path()), "").await.unwrap_err();
    assert_eq!(dup.code(), tonic::Code::AlreadyExists, "{dup}");

    // Host-network sandboxes get no IP of the pod network.
    let mut host = sandbox_config("h", dir.path());
    host.linux = Some(v1::LinuxPodSandboxConfig {
        security_context: Some(v1::LinuxSandboxSecurityContext {
            namespace_options: Some(v1::NamespaceOption {
                network: v1::NamespaceMode::Node as i32,
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    });
    let h = cri.run_pod_sandbox(host, "").await.unwrap();
    assert_eq!(ip(h).await, "");

    // Filters: state and labels; stop keeps the sandbox NotReady until removed.
    cri.stop_pod_sandbox(&a).await.unwrap();
    cri.stop_pod_sandbox(&a).await.unwrap();
    let ready = v1::PodSandboxFilter {
        state: Some(v1::PodSandboxStateValue { state: v1::PodSandboxState::SandboxReady as i32 }),
        ..Default::default()
    };
    let ids: Vec<String> = cri.list_pod_sandbox(Some(ready)).await.unwrap().into_iter().map(|s| s.id).collect();
    assert!(!ids.contains(&a) && ids.contains(&b), "{ids:?}");
    let by_label = v1::PodSandboxFilter {
        label_selector: HashMap::from([("app".to_string(), "a".to_string())]),
        ..Default::default()
    };
    let items = cri.list_pod_sandbox(Some(by_label)).await.unwrap();
    assert_eq!(items.len(), 1);
    assert_eq!(items[0].state, v1::PodSandboxState::SandboxNotready as i32);
    let by_prefix = v1::PodSandboxFilter { id: b[..12].to_string(), ..Default::default() };
    assert_eq!(cri.list_pod_sandbox(Some(by_prefix)).await.unwrap()[0].id, b);

    cri.remove_pod_sandbox(&a).await.unwrap();
    cri.remove_pod_sandbox(&a).await.unwrap();
    assert!(cri.pod_sandbox_status(&a, false).await.unwrap_err().is_not_found());
    s.stop().await;
}

#[tokio::test]
async fn containers_go_created_running_exited_with_status_logs_and_filters() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = served(dir.path()).await;
    s.runtime().set_pod_cidr("10.1.0.0/16").unwrap();
    let cri = s.client().clone();
    let logs = dir.path().join("pods").join("default_web_uid");
    let sb_config = sandbox_config("web", &logs);
    let sb = cri.run_pod_sandbox(sb_config.clone(), "").await.unwrap();

    // An image must be pulled first, as with containerd.
    let err = cri.create_container(&sb, container_config("app", "busybox:1.36"), sb_config.clone()).await.unwrap_err();
    assert!(err.is_not_found(), "{err}");
    let image_id = cri.pull_image("busybox:1.36", None, None).await.unwrap();
    assert_eq!(image_id, images::fake_digest("docker.io/library/busybox:1.36"));

    let app = cri.create_container(&sb, container_config("app", "busybox:1.36"), sb_config.clone()).await.unwrap();
    let side = cri.create_container(&sb, container_config("side", "busybox:1.36"), sb_config.clone()).await.unwrap();
    let st = cri.container_status(&app, false).await.unwrap();
    assert_eq!(st.state, v1::ContainerState::ContainerCreated as i32);
    assert!(st.created_at > 0 && st.started_at == 0);
    assert_eq!(st.image.unwrap().image, "docker.io/library/busybox:1.36");
    assert_eq!(st.image_ref, format!("docker.io/library/busybox@{image_id}"));
    assert_eq!(st.log_path, logs.join("app/0.log").to_string_lossy());

    cri.start_container(&app).await.unwrap();
    let again = cri.start_container(&app).await.unwrap_err();
    assert!(again.to_string().contains("CONTAINER_RUNNING"), "{again}");
    let st = cri.container_status(&app[..10], false).await.unwrap();
    assert_eq!(st.state, v1::ContainerState::ContainerRunning as i32);
    assert!(st.started_at >= st.created_at);

    // The log line parses as CRI format and says it is simulated.
    let text = std::fs::read_to_string(logs.join("app/0.log")).unwrap();
    let rec = crate::logs::format::parse_cri_line(text.trim_end_matches('\n').as_bytes()).unwrap();
    assert_eq!(
        String::from_utf8_lossy(rec.message),
        "[simulated] container app started by the rkube simulated runtime"
    );
    let age = jiff::Timestamp::now().duration_since(rec.time);
    assert!(age >= jiff::SignedDuration::ZERO && age.as_secs() < 60, "{}", rec.time_text);

    let out = cri.exec_sync(&app, vec!["cat".into(), "/etc/hostname".into()], Duration::from_secs(1)).await.unwrap();
    assert_eq!((out.exit_code, out.stdout.as_slice()), (0, b"[simulated] exec cat /etc/hostname\n".as_slice()));
    let exec = cri.exec(v1::ExecRequest { container_id: app.clone(), ..Default::default() }).await.unwrap_err();
    assert_eq!(exec.code(), tonic::Code::Unimplemented);
    assert!(exec.to_string().contains("simulated runtime"), "{exec}");

    // Filters: state, label, sandbox id, id.
    let running =
        v1::ContainerFilter { state: state_filter(v1::ContainerState::ContainerRunning), ..Default::default() };
    let ids: Vec<String> = cri.list_containers(Some(running)).await.unwrap().into_iter().map(|c| c.id).collect();
    assert_eq!(ids, vec![app.clone()]);
    let by_label = v1::ContainerFilter {
        label_selector: HashMap::from([("io.kubernetes.container.name".to_string(), "side".to_string())]),
        pod_sandbox_id: sb.clone(),
        ..Default::default()
    };
    let list = cri.list_containers(Some(by_label)).await.unwrap();
    assert_eq!((list.len(), list[0].id.as_str(), list[0].pod_sandbox_id.as_str()), (1, side.as_str(), sb.as_str()));
    let other_sb = v1::ContainerFilter { pod_sandbox_id: "nope".into(), ..Default::default() };
    assert!(cri.list_containers(Some(other_sb)).await.unwrap().is_empty());
    let by_id = v1::ContainerFilter { id: side.clone(), ..Default::default() };
    assert_eq!(cri.list_containers(Some(by_id)).await.unwrap().len(), 1);
    assert_eq!(cri.list_containers(None).await.unwrap().len(), 2);

    let stats = cri.list_container_stats(None).await.unwrap();
    assert_eq!(stats.len(), 1, "only running containers have stats");
    assert_eq!(stats[0].memory.as_ref().unwrap().working_set_bytes.as_ref().unwrap().value, 0);

    // A graceful stop exits 0; a kill (timeout 0) exits 137; a created one stays created.
    cri.stop_container(&app, 30).await.unwrap();
    let st = cri.container_status(&app, false).await.unwrap();
    assert_eq!(
        (st.state, st.exit_code, st.reason.as_str()),
        (v1::ContainerState::ContainerExited as i32, 0, "Completed")
    );
    assert!(st.finished_at >= st.started_at);
    cri.stop_container(&side, 0).await.unwrap();
    assert_eq!(cri.container_status(&side, false).await.unwrap().state, v1::ContainerState::ContainerCreated as i32);
    let again = cri.exec_sync(&app, vec!["true".into()], Duration::ZERO).await.unwrap_err();
    assert!(again.to_string().contains("CONTAINER_EXITED"), "{again}");

    let attempt1 = v1::ContainerConfig {
        metadata: Some(v1::ContainerMetadata { name: "app".into(), attempt: 1 }),
        log_path: "app/1.log".into(),
        ..container_config("app", "docker.io/library/busybox:1.36")
    };
    let app1 = cri.create_container(&sb, attempt1, sb_config.clone()).await.unwrap();
    cri.start_container(&app1).await.unwrap();
    cri.stop_container(&app1, 0).await.unwrap();
    let st = cri.container_status(&app1, false).await.unwrap();
    assert_eq!((st.exit_code, st.reason.as_str()), (137, "Error"));

    cri.remove_container(&app).await.unwrap();
    cri.remove_container(&app).await.unwrap();
    assert!(cri.container_status(&app, false).await.unwrap_err().is_not_found());
    assert!(cri.stop_container(&app, 0).await.unwrap_err().is_not_found());

    // Removing the sandbox removes its containers.
    cri.remove_pod_sandbox(&sb).await.unwrap();
    assert!(cri.list_containers(None).await.unwrap().is_empty());
    assert_eq!(s.runtime().counts(), (0, 0));
    s.stop().await;
}

#[tokio::test]
async fn images_pull_instantly_and_are_listed_by_reference_and_digest() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = served(dir.path()).await;
    let cri = s.client().clone();
    // The pause image is there from the start.
    assert!(cri.image_status(crate::PAUSE_IMAGE).await.unwrap().is_some());
    assert!(cri.image_status("nginx:1.27").await.unwrap().is_none());
    let id = cri.pull_image("nginx:1.27", None, None).await.unwrap();
    let img = cri.image_status("docker.io/library/nginx:1.27").await.unwrap().unwrap();
    assert_eq!(img.id, id);
    assert_eq!(img.repo_tags, vec!["docker.io/library/nginx:1.27".to_string()]);
    assert_eq!(img.repo_digests, vec![format!("docker.io/library/nginx@{id}")]);
    assert_eq!(img.size, images::SIMULATED_IMAGE_SIZE);
    assert_eq!(cri.list_images(None).await.unwrap().len(), 2);
    assert_eq!(cri.list_images(Some("nginx:1.27")).await.unwrap().len(), 1);
    cri.remove_image(&id).await.unwrap();
    cri.remove_image(&id).await.unwrap();
    assert_eq!(cri.list_images(None).await.unwrap().len(), 1);
    s.stop().await;
    assert!(!socket_path(dir.path()).exists());
}
