//! Image garbage collection (upstream's `pkg/kubelet/images/image_gc_manager.go`).
//!
//! Every `--image-gc-period` (5 min; upstream's fixed ImageGCPeriod) the
//! image filesystem's usage is checked; above `--image-gc-high-threshold`
//! percent (85), unused images — no CRI container (of any state) refers
//! to them, not pinned by the runtime, never the pause image, first seen
//! at least [`MIN_AGE`] ago — are removed least recently used first until
//! usage would be below `--image-gc-low-threshold` (80). When not enough
//! can be freed a Warning `FreeDiskSpaceFailed` event goes on the Node,
//! and `ImageGCFailed` when a collection fails twice in a row, as upstream.
//!
//! Times (first seen, last used) are kept in memory: after a restart every
//! image starts fresh. Container GC beyond the pod workers' is not needed:
//! the workers keep two instances per container and the pod manager removes
//! the containers and sandboxes of pods the API no longer has.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ObjectReference;
use tokio::sync::watch;

use crate::cri::{v1 as cri, CriClient};

const COMPONENT: &str = "kubelet";
/// Upstream's default imageMinimumGCAge (`--minimum-image-ttl-duration`).
pub const MIN_AGE: Duration = Duration::from_secs(120);

/// Image GC settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImageGcConfig {
    /// `--image-gc-high-threshold` (percent; 100 disables GC).
    pub high_percent: u8,
    /// `--image-gc-low-threshold` (percent).
    pub low_percent: u8,
    /// `--image-gc-period`.
    pub period: Duration,
    /// `--minimum-image-ttl-duration`: images first seen more recently are kept.
    pub min_age: Duration,
}

impl Default for ImageGcConfig {
    fn default() -> Self {
        ImageGcConfig { high_percent: 85, low_percent: 80, period: Duration::from_secs(300), min_age: MIN_AGE }
    }
}

impl ImageGcConfig {
    /// Upstream's validation: both in [0, 100], low ≤ high.
    pub fn validate(&self) -> Result<(), String> {
        if self.high_percent > 100 {
            return Err(format!("--image-gc-high-threshold ({}) must be between 0 and 100", self.high_percent));
        }
        if self.low_percent > 100 {
            return Err(format!("--image-gc-low-threshold ({}) must be between 0 and 100", self.low_percent));
        }
        if self.low_percent > self.high_percent {
            return Err(format!(
                "--image-gc-low-threshold ({}) must be less than or equal to --image-gc-high-threshold ({})",
                self.low_percent, self.high_percent
            ));
        }
        Ok(())
    }

    /// Bytes to free given the filesystem's capacity and available bytes
    /// (0: usage is at or below the high threshold).
    pub fn amount_to_free(&self, capacity: u64, available: u64) -> u64 {
        if capacity == 0 || self.high_percent >= 100 {
            return 0;
        }
        let usage_percent = 100 - (available as u128 * 100 / capacity as u128) as u64;
        if usage_percent < self.high_percent as u64 {
            return 0;
        }
        let target_available = capacity as u128 * (100 - self.low_percent as u128) / 100;
        (target_available as u64).saturating_sub(available)
    }
}

/// What GC remembers of one image.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImageRecord {
    /// When GC first saw the image.
    pub first_detected: Instant,
    /// When a container last used it (first_detected if never seen in use).
    pub last_used: Instant,
    /// Size in bytes.
    pub size: u64,
}

/// The images GC tracks, by image ID.
#[derive(Debug, Default)]
pub struct ImageTracker {
    records: BTreeMap<String, ImageRecord>,
}

impl ImageTracker {
    /// Refreshes the records from the runtime's images and the IDs in use
    /// at `now`; forgets images that are gone.
    pub fn detect(&mut self, images: &[cri::Image], in_use: &BTreeSet<String>, now: Instant) {
        self.records.retain(|id, _| images.iter().any(|i| &i.id == id));
        for i in images {
            let r = self.records.entry(i.id.clone()).or_insert(ImageRecord {
                first_detected: now,
                last_used: now,
                size: i.size,
            });
            r.size = i.size;
            if in_use.contains(&i.id) {
                r.last_used = now;
            }
        }
    }

    /// The images that may be removed, least recently used first (then
    /// oldest first seen): not in use, not pinned, not the pause image,
    /// and seen at least `min_age` ago.
    pub fn candidates(
        &self,
        images: &[cri::Image],
        in_use: &BTreeSet<String>,
        pause_image: &str,
        min_age: Duration,
        now: Instant,
    ) -> Vec<(String, ImageRecord)> {
        let mut out: Vec<(String, ImageRecord)> = images
            .iter()
            .filter(|i| !in_use.contains(&i.id) && !i.pinned && !i.repo_tags.iter().any(|t| t == pause_image))
            .filter_map(|i| self.records.get(&i.id).map(|r| (i.id.clone(), *r)))
            .filter(|(_, r)| now.duration_since(r.first_detected) >= min_age)
            .collect();
        out.sort_by_key(|(_, r)| (r.last_used, r.first_detected));
        out
    }
}

/// The image IDs (and the image refs) CRI containers refer to.
pub fn images_in_use(containers: &[cri::Container], images: &[cri::Image]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for c in containers {
        let spec = c.image.as_ref().map(|i| i.image.as_str()).unwrap_or_default();
        for i in images {
            let named = |s: &str| {
                !s.is_empty()
                    && (i.id == s || i.repo_tags.iter().any(|t| t == s) || i.repo_digests.iter().any(|d| d == s))
            };
            if named(&c.image_ref) || named(spec) {
                out.insert(i.id.clone());
            }
        }
    }
    out
}

/// Upstream's FreeDiskSpaceFailed message.
pub fn free_failed_message(to_free: u64, freed: u64) -> String {
    format!(
        "Failed to garbage collect required amount of images. \
         Attempted to free {to_free} bytes, but only found {freed} bytes eligible to free."
    )
}

/// The image GC loop's inputs (cloned into the eviction manager for its disk reclaim).
#[derive(Clone)]
pub struct ImageGc {
    /// The runtime.
    pub cri: CriClient,
    /// Records the node events.
    pub recorder: rkube_client::events::Recorder,
    /// The Node the events are about.
    pub node_ref: ObjectReference,
    /// The runtime's root (imagefs).
    pub imagefs: PathBuf,
    /// The sandbox image, never removed.
    pub pause_image: String,
    /// Thresholds and period.
    pub config: ImageGcConfig,
    /// First-seen and last-used times, shared with the eviction manager's reclaim.
    pub tracker: Arc<tokio::sync::Mutex<ImageTracker>>,
}

impl ImageGc {
    /// Collects at once (which starts the image records), then every period until stopped.
    pub async fn run(self, mut stop: watch::Receiver<bool>) {
        let mut previous_failed = false;
        let mut first = true;
        loop {
            if !std::mem::take(&mut first) {
                tokio::select! {
                    _ = tokio::time::sleep(self.config.period) => {}
                    _ = stop.wait_for(|s| *s) => return,
                }
            }
            match self.collect().await {
                Ok(()) => previous_failed = false,
                Err(e) => {
                    tracing::warn!(component = COMPONENT, "image garbage collection failed: {e}");
                    if previous_failed {
                        self.recorder.event_on(
                            self.node_ref.clone(),
                            rkube_client::events::WARNING,
                            "ImageGCFailed",
                            e,
                        );
                    }
                    previous_failed = true;
                }
            }
        }
    }

    async fn collect(&self) -> Result<(), String> {
        let fs = super::eviction::fs_stats(&self.imagefs)
            .ok_or_else(|| format!("failed to get imageFs info: cannot statfs {}", self.imagefs.display()))?;
        let to_free = self.config.amount_to_free(fs.capacity_bytes, fs.available_bytes);
        if to_free == 0 {
            // Still refresh first-seen and last-used times.
            return self.free_space(0).await.map(|_| ());
        }
        tracing::info!(
            component = COMPONENT,
            bytes = to_free,
            "disk usage on image filesystem is over the high threshold, trying to free bytes"
        );
        let freed = self.free_space(to_free).await?;
        if freed < to_free {
            let msg = free_failed_message(to_free, freed);
            self.recorder.event_on(
                self.node_ref.clone(),
                rkube_client::events::WARNING,
                "FreeDiskSpaceFailed",
                msg.clone(),
            );
            return Err(msg);
        }
        Ok(())
    }

    /// Removes unused images, least recently used first, until `to_free`
    /// bytes are freed (`u64::MAX`: every removable image, as upstream's
    /// DeleteUnusedImages on disk pressure); returns the bytes freed.
    pub async fn free_space(&self, to_free: u64) -> Result<u64, String> {
        let images = self.cri.list_images(None).await.map_err(|e| format!("failed to list images: {e}"))?;
        let containers = self.cri.list_containers(None).await.map_err(|e| format!("failed to list containers: {e}"))?;
        let in_use = images_in_use(&containers, &images);
        let now = Instant::now();
        let candidates = {
            let mut tracker = self.tracker.lock().await;
            tracker.detect(&images, &in_use, now);
            tracker.candidates(&images, &in_use, &self.pause_image, self.config.min_age, now)
        };
        let mut freed = 0u64;
        for (id, r) in candidates {
            if freed >= to_free {
                break;
            }
            match self.cri.remove_image(&id).await {
                Ok(()) => {
                    tracing::info!(component = COMPONENT, image = %id, size = r.size, "removing image to free bytes");
                    freed += r.size;
                }
                Err(e) => tracing::warn!(component = COMPONENT, image = %id, "failed to remove image: {e}"),
            }
        }
        Ok(freed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn img(id: &str, tag: &str, size: u64) -> cri::Image {
        cri::Image { id: id.into(), repo_tags: vec![tag.into()], size, ..Default::default() }
    }

    #[test]
    fn thresholds_and_amount_to_free() {
        let c = ImageGcConfig::default();
        assert!(c.validate().is_ok());
        // 90% used of 1000: free down to 80% used → 200 available.
        assert_eq!(c.amount_to_free(1000, 100), 100);
        // 84% used: under the high threshold.
        assert_eq!(c.amount_to_free(1000, 160), 0);
        assert_eq!(ImageGcConfig { high_percent: 100, ..c }.amount_to_free(1000, 0), 0);
        assert!(ImageGcConfig { high_percent: 70, ..c }.validate().unwrap_err().contains("less than or equal"));
        assert!(ImageGcConfig { high_percent: 101, ..c }.validate().is_err());
    }

    #[test]
    fn least_recently_used_unused_images_first() {
        let t0 = Instant::now();
        let images = vec![
            img("sha256:a", "example/a:1", 10),
            img("sha256:b", "example/b:1", 20),
            img("sha256:pause", "registry.k8s.io/pause:3.10", 1),
            cri::Image { pinned: true, ..img("sha256:p", "example/pinned:1", 5) },
            img("sha256:c", "example/c:1", 30),
        ];
        let mut tracker = ImageTracker::default();
        // b was in use at t0; a at t0+10s; c never.
        tracker.detect(&images, &BTreeSet::from(["sha256:a".to_string(), "sha256:b".into()]), t0);
        let t1 = t0 + Duration::from_secs(10);
        tracker.detect(&images, &BTreeSet::from(["sha256:a".to_string()]), t1);
        let t2 = t0 + Duration::from_secs(200);
        let none = BTreeSet::new();
        let ids: Vec<String> = tracker
            .candidates(&images, &none, "registry.k8s.io/pause:3.10", MIN_AGE, t2)
            .into_iter()
            .map(|c| c.0)
            .collect();
        assert_eq!(ids, ["sha256:b", "sha256:c", "sha256:a"]);
        // In use now, or too young: kept.
        let busy = BTreeSet::from(["sha256:b".to_string()]);
        let ids: Vec<String> = tracker
            .candidates(&images, &busy, "registry.k8s.io/pause:3.10", MIN_AGE, t2)
            .into_iter()
            .map(|c| c.0)
            .collect();
        assert_eq!(ids, ["sha256:c", "sha256:a"]);
        assert!(tracker.candidates(&images, &none, "x", MIN_AGE, t1).is_empty());
    }

    #[test]
    fn containers_name_their_images() {
        let images = vec![img("sha256:a", "example/a:1", 10), img("sha256:b", "example/b:1", 20)];
        let c = cri::Container {
            image: Some(cri::ImageSpec { image: "example/b:1".into(), ..Default::default() }),
            ..Default::default()
        };
        let d = cri::Container { image_ref: "sha256:a".into(), ..Default::default() };
        assert_eq!(images_in_use(std::slice::from_ref(&c), &images), BTreeSet::from(["sha256:b".to_string()]));
        assert_eq!(images_in_use(&[c, d], &images).len(), 2);
        assert_eq!(
            free_failed_message(100, 40),
            "Failed to garbage collect required amount of images. \
             Attempted to free 100 bytes, but only found 40 bytes eligible to free."
        );
    }
}
