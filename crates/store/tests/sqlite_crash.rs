//! Crash safety of the embedded store: every write the store acknowledged
//! survives `kill -9` of the process in the middle of a write storm.
//!
//! The test re-executes its own binary (`std::env::current_exe()`) running
//! only the `crash_child_writer` test, which does nothing unless
//! `RKUBE_STORE_CRASH_CHILD_DB` names a database. In the child, 32 writers
//! create keys and compare-and-swap a counter key each, printing
//! `ACK <key> <revision> <value>` to stdout (flushed per line) only after the
//! store acknowledged the write. The parent reads those lines for about two
//! seconds, SIGKILLs the child mid-write, reopens the file and checks every
//! acknowledged write and the revision sequence.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::StreamExt;
use rkube_store::sqlite::SqliteStore;
use rkube_store::{RangeRequest, Store, WatchEvent, WatchOptions};

const CHILD_ENV: &str = "RKUBE_STORE_CRASH_CHILD_DB";
const WRITERS: usize = 32;
/// The child stops on its own after this long, should the parent be gone.
const CHILD_LIFETIME: Duration = Duration::from_secs(60);

fn created_value(key: &str) -> String {
    format!("value-of-{key}-{}", "x".repeat(64))
}

/// Child mode: write until killed. A no-op in a normal test run.
#[test]
fn crash_child_writer() {
    let Ok(path) = std::env::var(CHILD_ENV) else {
        return;
    };
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async move {
        let store = Arc::new(SqliteStore::open(Path::new(&path)).await.expect("child: open the store"));
        let deadline = Instant::now() + CHILD_LIFETIME;
        let mut tasks = Vec::new();
        for t in 0..WRITERS {
            let store = store.clone();
            tasks.push(tokio::spawn(async move {
                let counter = format!("/crash/counter/{t:02}");
                let mut counter_rev = 0;
                for i in 0.. {
                    if Instant::now() > deadline {
                        return;
                    }
                    let key = format!("/crash/keys/{t:02}/{i:08}");
                    let kv = store.create(&key, Bytes::from(created_value(&key)), None).await.expect("child: create");
                    ack(&key, kv.mod_revision, &created_value(&key));
                    let value = format!("{t}:{i}");
                    let kv = if counter_rev == 0 {
                        store.create(&counter, Bytes::from(value.clone()), None).await
                    } else {
                        store.update(&counter, Bytes::from(value.clone()), counter_rev, None).await
                    }
                    .expect("child: counter write");
                    counter_rev = kv.mod_revision;
                    ack(&counter, kv.mod_revision, &value);
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
    });
}

/// Prints one acknowledgement line, flushed before returning.
fn ack(key: &str, revision: i64, value: &str) {
    let mut out = std::io::stdout().lock();
    writeln!(out, "ACK {key} {revision} {value}").unwrap();
    out.flush().unwrap();
}

/// Kills (SIGKILL) and reaps the child when dropped, even if the test panics.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

struct Ack {
    key: String,
    revision: i64,
    value: String,
}

fn parse_ack(line: &str) -> Option<Ack> {
    let mut parts = line.strip_prefix("ACK ")?.splitn(3, ' ');
    let key = parts.next()?.to_string();
    let revision = parts.next()?.parse().ok()?;
    let value = parts.next()?.to_string();
    Some(Ack { key, revision, value })
}

#[test]
fn acknowledged_writes_survive_kill_9() {
    if std::env::var_os(CHILD_ENV).is_some() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let child = Command::new(std::env::current_exe().unwrap())
        .args(["crash_child_writer", "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, &path)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn the child writer");
    let mut child = KillOnDrop(child);

    let stdout = child.0.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            match line {
                Ok(line) => {
                    if tx.send(line).is_err() {
                        return;
                    }
                }
                Err(_) => return,
            }
        }
    });

    // Wait for the first acknowledgement, then let the writers run ~2 s.
    let mut lines = Vec::new();
    let first = rx.recv_timeout(Duration::from_secs(60)).expect("the child acknowledged no write within 60 s");
    lines.push(first);
    let kill_at = Instant::now() + Duration::from_secs(2);
    while let Some(left) = kill_at.checked_duration_since(Instant::now()) {
        match rx.recv_timeout(left) {
            Ok(line) => lines.push(line),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => break,
            Err(e) => panic!("the child stopped writing early: {e}"),
        }
    }
    // While the child holds the file, another process cannot open it: two
    // servers on one data dir would diverge (revision counters, watchers).
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let refused = rt.block_on(SqliteStore::open(&path)).err().expect("a second process must not open a store in use");
    assert!(refused.to_string().contains("in use by another process"), "{refused}");
    drop(rt);

    // SIGKILL in the middle of the write storm.
    child.0.kill().expect("kill -9 the child");
    let status = child.0.wait().unwrap();
    assert!(!status.success(), "the child must have been killed, not exited: {status}");
    // Whatever the child flushed before dying is still in the pipe.
    reader.join().unwrap();
    lines.extend(rx.try_iter());

    // A line cut by the kill is not a complete acknowledgement; drop it.
    let acks: Vec<Ack> = lines.iter().filter_map(|l| parse_ack(l)).collect();
    assert!(acks.len() >= 100, "only {} writes were acknowledged before the kill; the test proves little", acks.len());

    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async move {
        let store = SqliteStore::open(&path).await.expect("reopen the store after kill -9");
        let current = store.current_revision().await.unwrap();

        let mut revisions = HashSet::new();
        let mut last_counter: HashMap<String, &Ack> = HashMap::new();
        let mut created = 0;
        for a in &acks {
            assert!(revisions.insert(a.revision), "revision {} acknowledged twice", a.revision);
            assert!(
                a.revision <= current,
                "acknowledged revision {} is above the recovered revision {current}",
                a.revision
            );
            if a.key.starts_with("/crash/counter/") {
                let entry = last_counter.entry(a.key.clone()).or_insert(a);
                if a.revision > entry.revision {
                    *entry = a;
                }
                continue;
            }
            created += 1;
            let kv = store
                .get(&a.key, None)
                .await
                .unwrap()
                .kv
                .unwrap_or_else(|| panic!("acknowledged key {} was lost", a.key));
            assert_eq!(kv.mod_revision, a.revision, "{}", a.key);
            assert_eq!(kv.value, Bytes::from(a.value.clone()), "{}", a.key);
        }
        for (key, a) in &last_counter {
            let kv =
                store.get(key, None).await.unwrap().kv.unwrap_or_else(|| panic!("acknowledged key {key} was lost"));
            // A later write may have committed without its ack being printed.
            assert!(
                kv.mod_revision >= a.revision,
                "{key}: recovered revision {} is older than acknowledged {}",
                kv.mod_revision,
                a.revision
            );
            if kv.mod_revision == a.revision {
                assert_eq!(kv.value, Bytes::from(a.value.clone()), "{key}");
            }
        }
        let keys = store.range(RangeRequest { prefix: "/crash/keys/".into(), ..Default::default() }).await.unwrap();
        assert!(keys.count as usize >= created);

        // The revision sequence is gapless: replaying all history yields
        // exactly one event per revision 1..=current.
        let mut w = store.watch("/", 1, WatchOptions::default()).await.unwrap();
        let mut seen = BTreeMap::new();
        for expected in 1..=current {
            let ev = tokio::time::timeout(Duration::from_secs(10), w.events.next())
                .await
                .expect("history replay stalled")
                .expect("history replay ended")
                .expect("history replay failed");
            assert_eq!(ev.revision(), expected, "revision sequence has a gap or is out of order");
            assert!(matches!(ev, WatchEvent::Put { .. }));
            seen.insert(ev.revision(), ());
        }
        assert_eq!(seen.len() as i64, current);

        // Writes continue the sequence.
        let next = store.create("/crash/after", Bytes::from_static(b"ok"), None).await.unwrap();
        assert_eq!(next.mod_revision, current + 1);
        eprintln!("kill -9 after {} acknowledged writes; recovered revision {current}", acks.len());
    });
}
