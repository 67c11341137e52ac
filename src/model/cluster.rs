//! Servers and their internal topology.
//!
//! A server's GPUs hang under PCIe switches, which hang under CPU sockets. GPU indices on a server
//! run from 0 in socket order, then switch order: with `topology = [[2, 2], [2, 2]]` GPUs 0–1 sit
//! under switch 0 of socket 0, GPUs 2–3 under switch 1 of socket 0, GPUs 4–7 under socket 1.

use serde::{Deserialize, Serialize};

use crate::id::GpuType;

/// One machine of the cluster.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Server {
    /// A name for reports (`node-07`); indices, not names, identify servers in a [`crate::Schedule`].
    pub name: String,
    /// GPU type, lower case (`v100`, `a100`, `t4`, ...). All GPUs of a server share one type.
    pub gpu_type: GpuType,
    /// GPUs per PCIe switch, per CPU socket: `topology[socket][switch]` = number of GPUs.
    pub topology: Vec<Vec<u32>>,
    /// CPU cores available to jobs.
    pub cpu_cores: f64,
    /// Memory available to jobs, GiB.
    pub memory_gib: f64,
    /// NIC bandwidth, Gbit/s (used to weigh which servers' links are shared; see the perf model).
    pub nic_gbps: f64,
    /// Whether the GPUs reach each other over NVLink (DGX-1, Azure NDv2): peer-to-peer traffic
    /// between GPUs under different sockets then never crosses the socket link, so no
    /// placement on the server is cross-socket ([`Server::gpu_slots`]). `false` (PCIe only)
    /// when a file does not say.
    #[serde(default)]
    pub nvlink: bool,
}

/// Where one GPU of a server sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GpuSlot {
    /// CPU socket index on the server, as far as GPU traffic is concerned: 0 for every GPU of
    /// an NVLink server (see [`Server::gpu_slots`]).
    pub socket: u32,
    /// PCIe switch index on the server (global over sockets, so that it identifies the switch).
    pub switch: u32,
}

/// What a server offers besides its GPUs: CPU cores and memory for jobs, and its NIC.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HostResources {
    /// CPU cores available to jobs.
    pub cpu_cores: f64,
    /// Memory available to jobs, GiB.
    pub memory_gib: f64,
    /// NIC bandwidth, Gbit/s.
    pub nic_gbps: f64,
}

impl HostResources {
    /// `cpu_cores` cores and `memory_gib` GiB for jobs, a NIC of `nic_gbps` Gbit/s.
    pub const fn new(cpu_cores: f64, memory_gib: f64, nic_gbps: f64) -> Self {
        HostResources {
            cpu_cores,
            memory_gib,
            nic_gbps,
        }
    }
}

impl Server {
    /// A server of `sockets` sockets, each with `switches` PCIe switches of `gpus_per_switch`
    /// GPUs (`layout = [sockets, switches, gpus_per_switch]`), and `host`'s cores, memory and
    /// NIC.
    ///
    /// ```
    /// use coda::model::{HostResources, Server};
    /// let host = HostResources { cpu_cores: 40.0, memory_gib: 512.0, nic_gbps: 100.0 };
    /// let s = Server::uniform("node-1", "v100", [2, 2, 2], host);
    /// assert_eq!(s.num_gpus(), 8);
    /// ```
    pub fn uniform(
        name: impl Into<String>,
        gpu_type: impl Into<GpuType>,
        layout: [u32; 3],
        host: HostResources,
    ) -> Self {
        let [sockets, switches, gpus_per_switch] = layout;
        Server {
            name: name.into(),
            gpu_type: gpu_type.into(),
            topology: vec![vec![gpus_per_switch; switches as usize]; sockets as usize],
            cpu_cores: host.cpu_cores,
            memory_gib: host.memory_gib,
            nic_gbps: host.nic_gbps,
            nvlink: false,
        }
    }

    /// The same server with its GPUs joined by NVLink (see [`Server::nvlink`]).
    pub fn with_nvlink(self) -> Self {
        Server {
            nvlink: true,
            ..self
        }
    }

    /// Total GPUs on the server.
    pub fn num_gpus(&self) -> u32 {
        // Saturating: an absurd topology reads as "too many", never wraps to a small count
        // (`ClusterSnapshot::check` rejects it with its field).
        self.topology
            .iter()
            .flatten()
            .fold(0u32, |n, &g| n.saturating_add(g))
    }

    /// Socket and switch of every GPU, indexed by GPU index. The socket is the GPU's
    /// peer-to-peer domain: on an NVLink server every GPU is in socket 0, because transfers
    /// between its GPUs never cross the socket link — the only thing sockets are read for.
    pub fn gpu_slots(&self) -> Vec<GpuSlot> {
        let mut slots = Vec::with_capacity(self.num_gpus() as usize);
        let mut switch = 0u32;
        for (socket, switches) in self.topology.iter().enumerate() {
            for &gpus in switches {
                for _ in 0..gpus {
                    slots.push(GpuSlot {
                        socket: if self.nvlink { 0 } else { socket as u32 },
                        switch,
                    });
                }
                switch += 1;
            }
        }
        slots
    }
}

/// The machines a scheduler may use.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cluster {
    /// Servers, identified by their index in this list.
    pub servers: Vec<Server>,
}

impl Cluster {
    /// `n` identical servers named `node-000`, `node-001`, ...
    pub fn homogeneous(n: usize, template: &Server) -> Self {
        Cluster {
            servers: (0..n)
                .map(|i| Server {
                    name: format!("node-{i:03}"),
                    ..template.clone()
                })
                .collect(),
        }
    }

    /// Total GPUs in the cluster.
    pub fn num_gpus(&self) -> u64 {
        self.servers.iter().map(|s| u64::from(s.num_gpus())).sum()
    }

    /// Precomputed socket/switch of every GPU of every server (`[server][gpu]`).
    pub fn slot_table(&self) -> Vec<Vec<GpuSlot>> {
        self.servers.iter().map(Server::gpu_slots).collect()
    }
}

impl std::ops::Index<crate::id::ServerIdx> for Vec<Server> {
    type Output = Server;
    fn index(&self, i: crate::id::ServerIdx) -> &Server {
        &self[i.0]
    }
}

impl std::ops::IndexMut<crate::id::ServerIdx> for Vec<Server> {
    fn index_mut(&mut self, i: crate::id::ServerIdx) -> &mut Server {
        &mut self[i.0]
    }
}
