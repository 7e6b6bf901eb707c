//! The official Python `kubernetes` client (pinned in scripts/test.sh)
//! drives the real server: tests/python/client_test.py runs ConfigMap
//! create/read/list/patch/replace/delete, a watch in a thread that sees
//! ADDED/MODIFIED/DELETED, and Deployment create/list/delete.
//!
//! The interpreter comes from RKUBE_TEST_PYTHON, which scripts/test.sh sets
//! to its venv; without it this test fails rather than skipping.

mod support;

use std::path::Path;
use std::process::Command;

use support::TestServer;

#[test]
fn python_client_crud_and_watch() {
    let python = std::env::var_os("RKUBE_TEST_PYTHON").unwrap_or_else(|| {
        panic!(
            "RKUBE_TEST_PYTHON is not set: run the suite with scripts/test.sh, which installs the Python \
             `kubernetes` client into a venv and points RKUBE_TEST_PYTHON at its interpreter"
        )
    });
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/client_test.py");
    let server = TestServer::start();
    let out = Command::new(&python)
        .arg(&script)
        .env("RKUBE_TEST_KUBECONFIG", server.kubeconfig())
        .env("PYTHONUNBUFFERED", "1")
        .env_remove("KUBECONFIG")
        .output()
        .unwrap_or_else(|e| panic!("run {python:?} {script:?}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("python client: all ok"),
        "{script:?} failed with {}\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}\n--- rkube stderr ---\n{}",
        out.status,
        server.logs()
    );
}
