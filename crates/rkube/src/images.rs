//! `rkube images`: images on the node without a registry.
//!
//! - `rkube images import FILE...` imports OCI image-layout or `docker save`
//!   archives into containerd's `k8s.io` namespace (every tag kept), through
//!   containerd's `ctr images import --all-platforms`.
//! - `rkube images build-local` builds `registry.k8s.io/pause:3.10` (rkube's
//!   static pause program) and `docker.io/library/busybox:<host version>`
//!   (Debian's busybox-static) as OCI archives in `<data-dir>/agent/images/`
//!   and imports them if the runtime is running; if not, the agent imports
//!   everything in that directory when it starts its containerd.
//!
//! The runtime is the managed containerd of `--data-dir`, or the CRI socket
//! `--container-runtime-endpoint` names.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use rkube_kubelet::containerd::{configured_snapshotter, RuntimePaths, Snapshotter};
use rkube_kubelet::cri::CriClient;
use rkube_kubelet::images;

use crate::cli::{ImagesBuildLocalArgs, ImagesCommand, ImagesImportArgs, RuntimeEndpointArgs};

/// Runs an `rkube images` subcommand; errors go to stderr with exit status 1.
pub fn run(cmd: ImagesCommand) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = match cmd {
        ImagesCommand::Import(args) => runtime.block_on(import(args)),
        ImagesCommand::BuildLocal(args) => runtime.block_on(build_local(args)),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("error: {msg}");
            ExitCode::FAILURE
        }
    }
}

/// The runtime's socket and, for the managed containerd, its snapshotter.
fn target(args: &RuntimeEndpointArgs) -> (PathBuf, Option<Snapshotter>) {
    match &args.container_runtime_endpoint {
        Some(endpoint) => (rkube_kubelet::cri::socket_path(endpoint), None),
        None => {
            let paths = RuntimePaths::new(&args.data_dir);
            (paths.socket, configured_snapshotter(&paths.config))
        }
    }
}

/// Connects and checks that the runtime answers.
async fn connect(socket: &Path) -> Result<CriClient, String> {
    let client = CriClient::connect(socket).await.map_err(|e| e.to_string())?;
    client.version().await.map_err(|e| e.to_string())?;
    Ok(client)
}

async fn import(args: ImagesImportArgs) -> Result<(), String> {
    let (socket, snapshotter) = target(&args.runtime);
    let client = connect(&socket).await.map_err(|e| {
        format!(
            "{e}\nThe archives can also be copied into {}: the agent imports them when it starts containerd.",
            RuntimePaths::new(&args.runtime.data_dir).images_dir.display()
        )
    })?;
    for file in &args.files {
        let out = images::import_archive(client.socket(), snapshotter, file).await.map_err(|e| e.to_string())?;
        print!("{out}");
    }
    Ok(())
}

async fn build_local(args: ImagesBuildLocalArgs) -> Result<(), String> {
    let (socket, snapshotter) = target(&args.runtime);
    let dir = RuntimePaths::new(&args.runtime.data_dir).images_dir;
    let built = images::build_local(&dir, &args.busybox).map_err(|e| e.to_string())?;
    for (reference, archive) in &built {
        println!("built {reference} ({})", archive.display());
    }
    match connect(&socket).await {
        Ok(client) => {
            for (reference, archive) in &built {
                images::import_archive(client.socket(), snapshotter, archive).await.map_err(|e| e.to_string())?;
                println!("imported {reference}");
            }
        }
        Err(e) => {
            tracing::debug!(component = "rkube", "runtime not reachable: {e}");
            println!(
                "containerd is not running at unix://{}; the agent imports {} when it starts",
                socket.display(),
                dir.display()
            );
        }
    }
    Ok(())
}
