//! Container logs on the node: reading the CRI-format files the runtime
//! writes ([`reader`], the kubelet's `/containerLogs` as upstream's
//! `kuberuntime` `ReadLogs`) and rotating them ([`rotation`], upstream's
//! `ContainerLogManager`: older rotated files gzip-compressed, the newest
//! kept plain).
//!
//! The CRI log format (upstream `cri-client/pkg/logs`): one record per
//! line, `<RFC3339Nano time> <stdout|stderr> <tags> <message>\n`, where the
//! first `:`-separated tag is `F` (the message ends a line) or `P` (a
//! partial line the runtime split; the next record of the stream continues
//! it). [`symlink`] keeps upstream's `/var/log/containers` links.

pub mod format;
pub mod reader;
pub mod rotation;
pub mod symlink;

pub use format::{parse_cri_line, LogRecord, LogStream};
pub use reader::{read_logs, LogError, LogOptions, RunningCheck};
pub use rotation::{rotate_container_log, run_log_rotation, LogRotationPolicy};
pub use symlink::{container_log_symlink_name, create_container_log_symlink, remove_dangling_symlinks};
