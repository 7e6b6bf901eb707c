//! Helpers shared by the store's integration tests.
#![allow(dead_code)]

pub mod etcd;
