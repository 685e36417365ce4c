//! `[pinning]` at run time: the load generator's thread is pinned for the whole
//! campaign (the client threads, samplers and generator processes it starts inherit
//! it), each throwaway server is started on its own CPUs, and both lists go into the
//! manifest. A server with no list of its own gets every online CPU, so that it never
//! inherits the client's.

use pgsurge_affinity::CpuList;
use serde_json::{json, Value};

use crate::error::{CampaignError, Result};
use crate::spec::PinningSection;

/// The campaign's CPU lists, parsed and checked.
#[derive(Debug, Clone, Default)]
pub struct Pinning {
    /// The throwaway servers' CPUs.
    pub server: Option<CpuList>,
    /// The load generator's CPUs.
    pub client: Option<CpuList>,
}

impl Pinning {
    /// Parses and checks `[pinning]` (against the CPUs online now).
    pub fn of(section: &PinningSection) -> Result<Pinning> {
        let parse = |key: &str, text: &Option<String>| -> Result<Option<CpuList>> {
            text.as_deref()
                .map(|t| {
                    let l = CpuList::parse(t)?;
                    l.check_online()?;
                    Ok(l)
                })
                .transpose()
                .map_err(|e: pgsurge_affinity::CpuListError| {
                    CampaignError::Other(format!("{key}: {e}"))
                })
        };
        Ok(Pinning {
            server: parse("pinning.server", &section.server)?,
            client: parse("pinning.client", &section.client)?,
        })
    }

    /// The CPUs to start a throwaway server on: its own list, else every online CPU
    /// when the client is pinned (a server started by a pinned thread would inherit
    /// the client's CPUs), else none (left as it is).
    pub fn server_cpus(&self) -> Option<CpuList> {
        match (&self.server, &self.client) {
            (Some(s), _) => Some(s.clone()),
            (None, Some(_)) => pgsurge_affinity::online().ok(),
            (None, None) => None,
        }
    }

    /// The `pinning` entry of a target's manifest.
    pub fn manifest(&self) -> Value {
        json!({
            "server": self.server.as_ref().map(|l| l.to_string()),
            "client": self.client.as_ref().map(|l| l.to_string()),
        })
    }

    /// What makes the pinning doubtful: server and client sharing CPUs.
    pub fn warnings(&self) -> Vec<String> {
        match (&self.server, &self.client) {
            (Some(s), Some(c)) if s.overlaps(c) => vec![format!(
                "pinning: the server's CPUs ({s}) and the client's ({c}) overlap: they \
                 compete for the shared CPUs, as if unpinned"
            )],
            _ => Vec::new(),
        }
    }
}

/// Pins the calling thread to the client's CPUs until dropped.
pub struct ClientPin {
    before: Option<CpuList>,
}

impl ClientPin {
    /// Pins the calling thread (and what it starts from now on) to `client`, if any.
    pub fn apply(pinning: &Pinning) -> Result<ClientPin> {
        let Some(client) = &pinning.client else {
            return Ok(ClientPin { before: None });
        };
        let before = pgsurge_affinity::current().ok();
        client
            .pin_current_thread()
            .map_err(|e| CampaignError::Other(format!("pinning.client {client}: {e}")))?;
        Ok(ClientPin { before })
    }
}

impl Drop for ClientPin {
    fn drop(&mut self) {
        if let Some(before) = &self.before {
            let _ = before.pin_current_thread();
        }
    }
}
