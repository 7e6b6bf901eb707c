//! `--datastore-endpoint` parsing and opening the chosen backend.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::{Result, SharedStore, StoreError};

/// Where cluster state lives, as given by `--datastore-endpoint`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DatastoreEndpoint {
    /// `sqlite:///absolute/path/state.db`: the embedded store in one file.
    Sqlite(PathBuf),
    /// `etcd://host:port[,host:port…]`: an etcd v3 cluster (plain HTTP
    /// client URLs, as etcd listens on loopback or a private network).
    Etcd(Vec<String>),
}

impl DatastoreEndpoint {
    /// The default: `<data_dir>/server/db/state.db`.
    pub fn default_for(data_dir: &Path) -> Self {
        DatastoreEndpoint::Sqlite(data_dir.join("server").join("db").join("state.db"))
    }

    /// Parses `sqlite:///path` or `etcd://h:p[,h:p…]`; anything else is an
    /// error that names the accepted forms.
    pub fn parse(s: &str) -> std::result::Result<Self, String> {
        if let Some(path) = s.strip_prefix("sqlite://") {
            if path.is_empty() || !path.starts_with('/') {
                return Err(format!(
                    "invalid datastore endpoint {s:?}: sqlite needs an absolute path, e.g. sqlite:///var/lib/rkube/server/db/state.db"
                ));
            }
            return Ok(DatastoreEndpoint::Sqlite(PathBuf::from(path)));
        }
        if let Some(hosts) = s.strip_prefix("etcd://") {
            let endpoints: Vec<String> =
                hosts.split(',').map(str::trim).filter(|h| !h.is_empty()).map(|h| format!("http://{h}")).collect();
            if endpoints.is_empty() || hosts.split(',').any(|h| !h.contains(':')) {
                return Err(format!(
                    "invalid datastore endpoint {s:?}: etcd needs host:port pairs, e.g. etcd://127.0.0.1:2379,10.0.0.2:2379"
                ));
            }
            return Ok(DatastoreEndpoint::Etcd(endpoints));
        }
        Err(format!("invalid datastore endpoint {s:?}: use sqlite:///path/state.db or etcd://host:port[,host:port...]"))
    }
}

impl std::fmt::Display for DatastoreEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DatastoreEndpoint::Sqlite(p) => write!(f, "sqlite://{}", p.display()),
            DatastoreEndpoint::Etcd(eps) => {
                let hosts: Vec<&str> = eps.iter().map(|e| e.trim_start_matches("http://")).collect();
                write!(f, "etcd://{}", hosts.join(","))
            }
        }
    }
}

/// Opens the backend an endpoint names, creating the SQLite file (and its
/// directory) if needed, or connecting to etcd.
pub async fn open(endpoint: &DatastoreEndpoint) -> Result<SharedStore> {
    match endpoint {
        DatastoreEndpoint::Sqlite(path) => {
            let store = crate::sqlite::SqliteStore::open(path).await?;
            Ok(Arc::new(store))
        }
        DatastoreEndpoint::Etcd(endpoints) => {
            let store = crate::etcd::EtcdStore::connect(endpoints).await?;
            Ok(Arc::new(store))
        }
    }
}

impl From<std::io::Error> for StoreError {
    fn from(e: std::io::Error) -> Self {
        StoreError::Unavailable(e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_two_endpoint_forms() {
        assert_eq!(
            DatastoreEndpoint::parse("sqlite:///var/lib/rkube/server/db/state.db").unwrap(),
            DatastoreEndpoint::Sqlite("/var/lib/rkube/server/db/state.db".into())
        );
        assert_eq!(
            DatastoreEndpoint::parse("etcd://127.0.0.1:2379,10.0.0.2:2379").unwrap(),
            DatastoreEndpoint::Etcd(vec!["http://127.0.0.1:2379".into(), "http://10.0.0.2:2379".into()])
        );
    }

    #[test]
    fn refuses_unknown_or_incomplete_endpoints() {
        assert!(DatastoreEndpoint::parse("postgres://x").unwrap_err().contains("use sqlite://"));
        assert!(DatastoreEndpoint::parse("sqlite://relative.db").is_err());
        assert!(DatastoreEndpoint::parse("etcd://").is_err());
        assert!(DatastoreEndpoint::parse("etcd://hostonly").is_err());
    }

    #[test]
    fn default_lives_under_the_data_dir() {
        let e = DatastoreEndpoint::default_for(Path::new("/var/lib/rkube"));
        assert_eq!(e.to_string(), "sqlite:///var/lib/rkube/server/db/state.db");
    }
}
