//! Components inside `rkube server` (controller manager, scheduler) start
//! only once the API server they talk to answers `/readyz`, as upstream's
//! components wait for a healthy API server before their informers sync.

use std::future::Future;
use std::time::Duration;

use rkube_apiserver::health::{Endpoint, Health};

/// Waits until `/readyz` passes (checked every 250 ms); false when
/// `stopped` completes first (the server is shutting down).
pub async fn wait_until_ready<F: Future<Output = ()> + Unpin>(health: &Health, stopped: &mut F) -> bool {
    loop {
        if health.evaluate(Endpoint::Readyz, &[]).await.passed() {
            return true;
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(250)) => {}
            _ = &mut *stopped => return false,
        }
    }
}
