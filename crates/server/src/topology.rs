//! Throwaway topologies: a primary and streaming standbys started from the same
//! binaries ([`Topology`]), each on its own port and socket directory, pinned like the
//! primary, synchronous (`ANY 1` of them) or asynchronous, its primary restarted in
//! place, stopped together; and the multi-host connection string that finds whichever
//! of them accepts writes.

use std::time::{Duration, Instant};

use pgsurge_wire::quote_conninfo;

use crate::builder::ClusterBuilder;
use crate::cluster::Cluster;
use crate::error::{Result, ServerError};

/// The most standbys a topology may have: each takes a WAL sender of the primary
/// (PostgreSQL's default `max_wal_senders` is 10, and a base backup streaming its WAL
/// holds two while it runs).
pub const MAX_REPLICAS: usize = 8;

/// A primary and its standbys. Dropping it stops them all (unless started detached).
#[derive(Debug)]
pub struct Topology {
    primary: Cluster,
    replicas: Vec<Cluster>,
    sync: bool,
}

/// The `application_name` of standby `i` (0-based): `replica1`, `replica2`…
pub fn replica_name(i: usize) -> String {
    format!("replica{}", i + 1)
}

/// Checks a topology's shape before anything starts: the count of standbys, their
/// ports (consecutive above a given primary port), and the memory their shared buffers
/// would take together.
pub fn check_topology(builder: &ClusterBuilder, replicas: usize) -> Result<()> {
    if replicas > MAX_REPLICAS {
        return Err(ServerError::Invalid(format!(
            "{replicas} replicas asked for; at most {MAX_REPLICAS} (each takes one of the primary's WAL senders)"
        )));
    }
    if let Some(p) = builder.requested_port() {
        if usize::from(p) + replicas > usize::from(u16::MAX) {
            return Err(ServerError::Invalid(format!(
                "{replicas} replicas on the ports after {p} would go past port {}",
                u16::MAX
            )));
        }
    }
    if replicas == 0 {
        return Ok(());
    }
    // A value this check cannot read is left to the server, whose error names it.
    let Some(shared_kb) = builder
        .setting_value("shared_buffers")
        .map_or(Some(128 * 1024), memory_kb)
    else {
        return Ok(());
    };
    if let Some(avail_kb) = mem_available_kb() {
        let need = shared_kb.saturating_mul(replicas as u64 + 1);
        if need > avail_kb {
            return Err(ServerError::Invalid(format!(
                "a primary and {replicas} replicas with shared_buffers of {} MB each need {} MB; \
                 this machine has {} MB available",
                shared_kb / 1024,
                need / 1024,
                avail_kb / 1024
            )));
        }
    }
    Ok(())
}

/// A memory setting in kB (`128MB`, `1GB`, `512kB`, or a count of 8 kB pages).
fn memory_kb(v: &str) -> Option<u64> {
    let v = v.trim();
    let split = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let (n, unit) = v.split_at(split);
    let n: u64 = n.parse().ok()?;
    let factor = match unit.trim() {
        "" => 8,
        "kB" => 1,
        "MB" => 1024,
        "GB" => 1024 * 1024,
        "TB" => 1024 * 1024 * 1024,
        _ => return None,
    };
    n.checked_mul(factor)
}

/// `MemAvailable` of `/proc/meminfo`, in kB.
fn mem_available_kb() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
}

impl Topology {
    /// Starts the primary of `builder`, then `replicas` standbys streaming from it,
    /// and waits until each streams (and, with `sync`, until the primary's commits
    /// wait for one of them). On failure whatever started is stopped.
    pub fn start(builder: ClusterBuilder, replicas: usize, sync: bool) -> Result<Topology> {
        Topology::start_with(builder, replicas, sync, false)
    }

    /// [`Topology::start`], each standby streaming through a [`LinkRelay`] of its own
    /// when `relayed` (its delay set by [`Cluster::set_link_delay`]).
    ///
    /// [`LinkRelay`]: crate::LinkRelay
    pub fn start_with(
        builder: ClusterBuilder,
        replicas: usize,
        sync: bool,
        relayed: bool,
    ) -> Result<Topology> {
        check_topology(&builder, replicas)?;
        let primary = builder.clone().start()?;
        let mut topo = Topology {
            primary,
            replicas: Vec::with_capacity(replicas),
            sync,
        };
        for i in 0..replicas {
            let b = builder.for_standby(&topo.primary, &replica_name(i), (i + 1) as u16, relayed);
            match b.start() {
                Ok(c) => topo.replicas.push(c),
                Err(e) => {
                    topo.stop();
                    return Err(e);
                }
            }
        }
        if let Err(e) = topo.settle() {
            topo.stop();
            return Err(e);
        }
        Ok(topo)
    }

    /// Makes commits wait for a standby when synchronous, then waits for every standby
    /// to stream.
    fn settle(&self) -> Result<()> {
        if self.sync && !self.replicas.is_empty() {
            let names: Vec<String> = (0..self.replicas.len()).map(replica_name).collect();
            self.primary.psql(
                "postgres",
                &format!(
                    "ALTER SYSTEM SET synchronous_standby_names = 'ANY 1 ({})'",
                    names.join(", ")
                ),
            )?;
            self.primary.psql("postgres", "SELECT pg_reload_conf()")?;
        }
        let want = self.replicas.len();
        let sql = if self.sync {
            "SELECT count(*) FROM pg_stat_replication \
             WHERE state = 'streaming' AND sync_state IN ('sync', 'quorum')"
        } else {
            "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'"
        };
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let n: usize = self
                .primary
                .psql("postgres", sql)?
                .trim()
                .parse()
                .unwrap_or(0);
            if n >= want {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(ServerError::Invalid(format!(
                    "only {n} of {want} replicas streaming after 120 s; see {}",
                    self.replicas
                        .iter()
                        .map(|r| r.log_file().display().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Restarts the primary in place ([`Cluster::restart`]) and waits until its
    /// standbys stream from it again (with `sync`, until its commits wait for one).
    pub fn restart_primary(&self) -> Result<()> {
        self.primary.restart()?;
        self.settle()
    }

    /// The primary.
    pub fn primary(&self) -> &Cluster {
        &self.primary
    }

    /// The standbys, in order (`replica1` first).
    pub fn replicas(&self) -> &[Cluster] {
        &self.replicas
    }

    /// Whether commits wait for a standby.
    pub fn is_sync(&self) -> bool {
        self.sync
    }

    /// A multi-host connection string over the servers' Unix sockets, primary first,
    /// with `target_session_attrs=read-write`: a connection reaches whichever server
    /// accepts writes, before and after a failover.
    pub fn conninfo(&self, dbname: &str) -> String {
        let servers: Vec<&Cluster> = std::iter::once(&self.primary)
            .chain(self.replicas.iter())
            .collect();
        multi_host_conninfo(
            &servers
                .iter()
                .map(|c| (c.socket_dir().to_string_lossy().into_owned(), c.port()))
                .collect::<Vec<_>>(),
            self.primary.superuser(),
            dbname,
        )
    }

    /// Stops every server, the primary first.
    pub fn stop(&self) {
        self.primary.stop();
        for r in &self.replicas {
            r.stop();
        }
    }

    /// The primary and the standbys, for a caller that keeps them apart (a detached
    /// `pgsurge server start`).
    pub fn into_parts(self) -> (Cluster, Vec<Cluster>) {
        (self.primary, self.replicas)
    }
}

/// `host=H1,H2 port=P1,P2 user=U dbname=D target_session_attrs=read-write`.
pub fn multi_host_conninfo(servers: &[(String, u16)], user: &str, dbname: &str) -> String {
    let hosts: Vec<&str> = servers.iter().map(|(h, _)| h.as_str()).collect();
    let ports: Vec<String> = servers.iter().map(|(_, p)| p.to_string()).collect();
    let mut s = format!(
        "host={} port={} user={} dbname={}",
        quote_conninfo(&hosts.join(",")),
        ports.join(","),
        quote_conninfo(user),
        quote_conninfo(dbname)
    );
    if servers.len() > 1 {
        s.push_str(" target_session_attrs=read-write");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_sizes_read_as_postgres_writes_them() {
        assert_eq!(memory_kb("128MB"), Some(128 * 1024));
        assert_eq!(memory_kb("1GB"), Some(1024 * 1024));
        assert_eq!(memory_kb("512kB"), Some(512));
        assert_eq!(memory_kb("16384"), Some(16384 * 8));
        assert_eq!(memory_kb("lots"), None);
        assert_eq!(memory_kb("12 parsecs"), None);
    }

    #[test]
    fn too_many_replicas_are_refused_before_anything_starts() {
        let e = check_topology(&ClusterBuilder::new(), MAX_REPLICAS + 1).unwrap_err();
        assert!(e.to_string().contains("at most 8"), "{e}");
        let e = check_topology(&ClusterBuilder::new().port(65534), 3).unwrap_err();
        assert!(e.to_string().contains("past port 65535"), "{e}");
        let e = check_topology(
            &ClusterBuilder::new().setting("shared_buffers", "100000GB"),
            1,
        )
        .unwrap_err();
        assert!(e.to_string().contains("available"), "{e}");
        check_topology(&ClusterBuilder::new(), 2).unwrap();
    }

    #[test]
    fn a_setting_the_check_cannot_read_is_left_to_the_server() {
        let odd = ClusterBuilder::new().setting("shared_buffers", "banana");
        check_topology(&odd, 0).unwrap();
        check_topology(&odd, 1).unwrap();
        let huge = ClusterBuilder::new().setting("shared_buffers", "100000GB");
        check_topology(&huge, 0).unwrap();
    }

    #[test]
    fn the_multi_host_string_lists_every_server_and_asks_for_a_writer() {
        let s = multi_host_conninfo(
            &[("/tmp/a".into(), 5432), ("/tmp/b".into(), 5433)],
            "postgres",
            "db",
        );
        assert_eq!(
            s,
            "host=/tmp/a,/tmp/b port=5432,5433 user=postgres dbname=db target_session_attrs=read-write"
        );
    }
}
