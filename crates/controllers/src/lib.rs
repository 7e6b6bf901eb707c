//! rkube's controller manager (upstream kube-controller-manager): control
//! loops that are ordinary API clients, each reaching the API server as
//! its own kube-system ServiceAccount (upstream's
//! `--use-service-account-credentials`), plus the node-join client library.
//!
//! Every controller has the shape of DESIGN.md: kube-runtime's
//! `Controller` (informers → rate-limited queue → `reconcile(key)` →
//! requeue or back off), one controller per module, logging with
//! `component` = its name. Only one manager among several servers runs
//! them, elected through the Lease `kube-system/kube-controller-manager`.
//! This crate never touches storage: it depends on the `kube` client only.
//!
//! Transport: loopback HTTPS to the local API server, verified against the
//! cluster CA ([`client`]). Identities: the manager is
//! `system:kube-controller-manager` (a client certificate); its informers
//! and reads use that identity, as upstream's shared informers do, while
//! every write goes through the controller's own ServiceAccount client
//! ([`credentials`]), so RBAC's `system:controller:<name>` roles decide
//! what each controller may change — except [`serviceaccounttoken`],
//! which upstream runs with the manager's own credentials.
//!
//! Node join: [`bootstraptoken`] (tokens, their Secrets, the join token
//! format and the `cluster-info` JWS), [`join`] (the joining side),
//! [`joinpolicy`] (the RBAC objects and `cluster-info` a cluster needs for
//! it) and [`csr`] (CSR content rules and signing).

#![warn(missing_docs)]

pub use rkube_client::{client, events, leader, pem};

pub mod bootstraptoken;
pub mod credentials;
pub mod expectations;
pub mod history;
pub mod csr;
pub mod join;
pub mod known;
pub mod joinpolicy;
pub mod manager;
pub mod runtime;

pub mod bootstrapsigner;
pub mod clusterroleaggregation;
pub mod csrapproving;
pub mod csrsigning;
pub mod daemonset;
pub mod deployment;
pub mod disruption;
pub mod cronjob;
pub mod endpointslice;
pub mod endpoints;
pub mod endpointslicemirroring;
pub mod job;
pub mod garbagecollector;
pub mod horizontalpodautoscaler;
pub mod namespace;
pub mod nodeipam;
pub mod nodelifecycle;
pub mod persistentvolume;
pub mod podgc;
pub mod pvcprotection;
pub mod pvprotection;
pub mod replicaset;
pub mod resourcequota;
pub mod rootcacertpublisher;
pub mod serviceaccount;
pub mod servicelb;
pub mod serviceaccounttoken;
pub mod statefulset;
pub mod tainteviction;
pub mod tokencleaner;
pub mod ttlafterfinished;

pub use manager::{run, ControllerSelection, ManagerConfig, Settings, DEFAULT_CONTROLLERS};
