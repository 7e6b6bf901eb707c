//! `rkube images` against rkube's managed containerd (the real containerd
//! 1.6 of Debian, started in a temporary data dir): `build-local` with no
//! runtime running (the agent imports at start), `import` of a multi-tag
//! docker archive keeping every tag, and the errors users see. Needs root
//! and the packages scripts/test.sh installs.

use std::path::Path;
use std::process::{Command, Output};

use rkube_kubelet::containerd::{teardown_host_state, ManagedContainerd, RuntimePaths, StartOptions};
use rkube_kubelet::{host, images};

const RKUBE: &str = env!("CARGO_BIN_EXE_rkube");

/// Kills containerd and whatever it left, even when the test panics.
struct Cleanup {
    paths: RuntimePaths,
    containerd: Option<ManagedContainerd>,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        drop(self.containerd.take());
        teardown_host_state(&self.paths);
    }
}

fn rkube(args: &[&str]) -> Output {
    Command::new(RKUBE).args(args).env_remove("RKUBE_DATA_DIR").output().expect("run rkube")
}

/// A `docker save` archive of a one-layer image tagged with every name in `tags`.
fn docker_archive(dir: &Path, tags: &[&str]) -> std::path::PathBuf {
    let src = dir.join("docker-archive");
    std::fs::create_dir_all(src.join("layer/files")).unwrap();
    std::fs::write(src.join("layer/files/hello.txt"), "hello\n").unwrap();
    let layer = src.join("layer/layer.tar");
    let st =
        Command::new("tar").arg("-cf").arg(&layer).arg("-C").arg(src.join("layer/files")).arg(".").status().unwrap();
    assert!(st.success());
    std::fs::remove_dir_all(src.join("layer/files")).unwrap();
    let diff_id = images::digest(&std::fs::read(&layer).unwrap());
    let config = serde_json::json!({
        "architecture": images_arch(),
        "os": "linux",
        "config": {"Cmd": ["cat", "/hello.txt"]},
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
    });
    let config_bytes = serde_json::to_vec(&config).unwrap();
    let config_name = format!("{}.json", images::digest(&config_bytes).trim_start_matches("sha256:"));
    std::fs::write(src.join(&config_name), &config_bytes).unwrap();
    let manifest = serde_json::json!([{"Config": config_name, "RepoTags": tags, "Layers": ["layer/layer.tar"]}]);
    std::fs::write(src.join("manifest.json"), serde_json::to_vec(&manifest).unwrap()).unwrap();
    let archive = dir.join("multi.tar");
    let st = Command::new("tar").arg("-cf").arg(&archive).arg("-C").arg(&src).arg(".").status().unwrap();
    assert!(st.success());
    archive
}

fn images_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn images_build_local_and_import_keep_every_tag() {
    if let Err(e) = host::check_runtime_binaries() {
        panic!("{e}. Run the tests through scripts/test.sh, which installs the packages they need.");
    }
    assert!(Path::new(images::HOST_BUSYBOX).exists(), "install busybox-static (scripts/test.sh does)");
    let data_dir = tempfile::Builder::new().prefix("rkube-images-").tempdir().unwrap();
    let dd = data_dir.path().to_str().unwrap();
    let paths = RuntimePaths::new(data_dir.path());
    let mut guard = Cleanup { paths: paths.clone(), containerd: None };

    // Nothing running yet: build-local leaves the archives for the agent.
    let out = rkube(&["images", "build-local", "--data-dir", dd]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("containerd is not running"), "{stdout}");
    let version = images::busybox_version(Path::new(images::HOST_BUSYBOX)).unwrap();
    let busybox = format!("docker.io/library/busybox:{version}");
    assert!(paths.images_dir.join(images::archive_name(&busybox)).is_file());

    // Importing with no runtime says what is wrong and where archives can go instead.
    let out = rkube(&["images", "import", "--data-dir", dd, "/nonexistent.tar"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("cannot connect to the container runtime"), "{stderr}");
    assert!(stderr.contains(&paths.images_dir.display().to_string()), "{stderr}");

    // The agent's containerd imports the images dir when it starts.
    guard.containerd = Some(ManagedContainerd::start(data_dir.path(), StartOptions::default()).await.unwrap());
    let cri = guard.containerd.as_ref().unwrap().client().clone();
    assert!(cri.image_status(&busybox).await.unwrap().is_some());
    assert!(cri.image_status(rkube_kubelet::PAUSE_IMAGE).await.unwrap().is_some());

    // A docker archive with two tags keeps both, as `docker load` would.
    let archive = docker_archive(data_dir.path(), &["multi:one", "example.com/team/multi:two"]);
    let out = rkube(&["images", "import", "--data-dir", dd, archive.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let one = cri.image_status("docker.io/library/multi:one").await.unwrap().expect("multi:one imported");
    let two = cri.image_status("example.com/team/multi:two").await.unwrap().expect("multi:two imported");
    assert_eq!(one.id, two.id, "both tags name one image");
    assert!(one.repo_tags.contains(&"docker.io/library/multi:one".to_string()), "{:?}", one.repo_tags);

    // --container-runtime-endpoint reaches the same runtime; a missing file is named.
    let endpoint = format!("unix://{}", paths.socket.display());
    let out = rkube(&["images", "import", "--container-runtime-endpoint", &endpoint, "/nonexistent.tar"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("cannot read image archive /nonexistent.tar"), "{stderr}");

    // build-local with the runtime up imports directly.
    cri.remove_image(&busybox).await.unwrap();
    let out = rkube(&["images", "build-local", "--data-dir", dd]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains(&format!("imported {busybox}")), "{stdout}");
    assert!(cri.image_status(&busybox).await.unwrap().is_some());

    guard.containerd.as_mut().unwrap().stop().await;
}
