//! The one lookup from a GPU to its PCIe switch and CPU socket, built once per cluster.
//!
//! Every layer that asks "which switch is this GPU under?" (footprints, the formulation's switch
//! variables, the codec, the occupancy index) reads it here, in O(1), instead of searching.

use std::sync::Arc;

use super::cluster::{Cluster, GpuSlot};

/// A PCIe switch of the cluster, numbered over all servers (server order, then the server's own
/// switch order; switches without a GPU are left out). The formulation's switch variables are
/// indexed by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SwitchId(pub usize);

/// One PCIe switch: where it sits and the GPUs under it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PcieSwitch {
    /// Server index.
    pub server: usize,
    /// CPU socket on that server.
    pub socket: u32,
    /// The switch's index on its server ([`GpuSlot::switch`]).
    pub local: u32,
    /// GPU indices on the server under this switch, ascending.
    pub gpus: Vec<u32>,
}

/// Socket and switch of every GPU of a cluster, and its PCIe switches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Topology {
    /// Shared: every packer and occupancy index of the round reads the same table.
    slots: Arc<Vec<Vec<GpuSlot>>>,
    /// The rest shared too: a policy keeps its replay's topology and clones it every round.
    switches: Arc<Vec<PcieSwitch>>,
    /// `[server][gpu]` → (switch id, position of the GPU under that switch).
    switch_of: Arc<Vec<Vec<(SwitchId, usize)>>>,
    /// `[server]` → its switch ids.
    on_server: Arc<Vec<Vec<SwitchId>>>,
}

impl Topology {
    /// The topology of `cluster`.
    pub fn of(cluster: &Cluster) -> Self {
        let slots = cluster.slot_table();
        let mut switches: Vec<PcieSwitch> = Vec::new();
        let mut switch_of = Vec::with_capacity(slots.len());
        let mut on_server = Vec::with_capacity(slots.len());
        for (server, gpus) in slots.iter().enumerate() {
            let local_switches = gpus
                .iter()
                .map(|g| g.switch as usize + 1)
                .max()
                .unwrap_or(0);
            let first = switches.len();
            let mut ids = Vec::new();
            let mut local_to_id = vec![None; local_switches];
            for (gpu, slot) in gpus.iter().enumerate() {
                let id = *local_to_id[slot.switch as usize].get_or_insert_with(|| {
                    ids.push(SwitchId(switches.len()));
                    switches.push(PcieSwitch {
                        server,
                        socket: slot.socket,
                        local: slot.switch,
                        gpus: Vec::new(),
                    });
                    switches.len() - 1
                });
                switches[id].gpus.push(gpu as u32);
            }
            // GPUs are numbered in switch order, so ids come out in local switch order.
            debug_assert!(
                switches[first..]
                    .windows(2)
                    .all(|w| w[0].local < w[1].local)
            );
            switch_of.push(
                gpus.iter()
                    .enumerate()
                    .map(|(gpu, slot)| {
                        let id = local_to_id[slot.switch as usize].expect("set above");
                        let pos = switches[id]
                            .gpus
                            .iter()
                            .position(|&g| g as usize == gpu)
                            .expect("pushed above");
                        (SwitchId(id), pos)
                    })
                    .collect(),
            );
            on_server.push(ids);
        }
        Topology {
            slots: Arc::new(slots),
            switches: Arc::new(switches),
            switch_of: Arc::new(switch_of),
            on_server: Arc::new(on_server),
        }
    }

    /// Socket and switch of every GPU, `[server][gpu]` (what [`Cluster::slot_table`] returns).
    pub fn slots(&self) -> &[Vec<GpuSlot>] {
        &self.slots
    }

    /// The slot table, shared (no copy): what a [`crate::perf::Occupancy`] or a packer of this
    /// round starts from instead of recomputing it.
    pub(crate) fn shared_slots(&self) -> Arc<Vec<Vec<GpuSlot>>> {
        Arc::clone(&self.slots)
    }

    /// Number of servers.
    pub fn servers(&self) -> usize {
        self.slots.len()
    }

    /// Every PCIe switch, indexed by [`SwitchId`].
    pub fn switches(&self) -> &[PcieSwitch] {
        &self.switches
    }

    /// The switch with this id.
    pub fn switch(&self, id: SwitchId) -> &PcieSwitch {
        &self.switches[id.0]
    }

    /// The switches of a server, in its own switch order.
    pub fn switches_on(&self, server: usize) -> &[SwitchId] {
        &self.on_server[server]
    }

    /// The switch a GPU sits under and its position among that switch's GPUs; `None` for a GPU
    /// or server outside the cluster.
    pub fn switch_of(&self, server: usize, gpu: u32) -> Option<(SwitchId, usize)> {
        self.switch_of.get(server)?.get(gpu as usize).copied()
    }

    /// The sockets of a server that hold at least one GPU, ascending.
    pub fn sockets_on(&self, server: usize) -> Vec<u32> {
        let mut s: Vec<u32> = self.on_server[server]
            .iter()
            .map(|&b| self.switches[b.0].socket)
            .collect();
        s.dedup();
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Server;

    #[test]
    fn every_gpu_maps_to_its_switch_and_back() {
        let mut odd = Server::uniform(
            "a",
            "v100",
            [2, 2, 2],
            crate::model::HostResources::new(8.0, 64.0, 10.0),
        );
        odd.topology = vec![vec![1, 0, 3], vec![2]];
        let cluster = Cluster {
            servers: vec![
                Server::uniform(
                    "b",
                    "v100",
                    [2, 2, 2],
                    crate::model::HostResources::new(8.0, 64.0, 10.0),
                ),
                odd,
            ],
        };
        let t = Topology::of(&cluster);
        // 4 switches on the first server, 3 non-empty ones on the second.
        assert_eq!(t.switches().len(), 7);
        assert_eq!(t.switches_on(1).len(), 3);
        assert_eq!(t.sockets_on(1), vec![0, 1]);
        for (s, gpus) in t.slots().iter().enumerate() {
            for (g, slot) in gpus.iter().enumerate() {
                let (b, pos) = t.switch_of(s, g as u32).unwrap();
                let sw = t.switch(b);
                assert_eq!(
                    (sw.server, sw.socket, sw.local),
                    (s, slot.socket, slot.switch)
                );
                assert_eq!(sw.gpus[pos], g as u32);
            }
        }
        assert_eq!(t.switch_of(1, 6), None);
        assert_eq!(t.switch_of(2, 0), None);
    }
}
