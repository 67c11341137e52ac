//! The policies coda can replay, as a type (the table of what each follows is in the
//! [module docs](super)): [`PolicyKind`] names each one, parses its name, and
//! builds it ([`PolicyKind::build`], in `mod.rs` next to the policies it builds).

use std::fmt;
use std::str::FromStr;

use crate::error::Error;

/// Every policy of the simulator and the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum PolicyKind {
    /// Blox's FIFO: the submitted size in arrival order, consolidated, never preempts.
    Fifo,
    /// Shortest remaining time first at the submitted size, consolidated, preemptive (oracle remaining work).
    Srtf,
    /// Dominant resource fairness (GPUs, cores, memory) by progressive filling, preemptive.
    Drf,
    /// Tiresias: two-dimensional least-attained-service queues with starvation promotion.
    Tiresias,
    /// Optimus: workers and PS where they cut remaining time most (oracle speeds).
    Optimus,
    /// SJF-BCO: smallest GPU-time first, balanced over the least-loaded servers.
    SjfBco,
    /// Pollux-style elastic sizing on the harmonic mean of speed-ups, consolidated (oracle speeds).
    Pollux,
    /// Sia: one integer program per round over every job's (GPU type, GPU count)
    /// configurations valued by goodput, fairness power −0.5, restart-aware (HiGHS).
    Sia,
    /// The submitted size in arrival order on random servers and GPUs (seeded).
    Random,
    /// SRTF with Synergy's TUNE: each job's best-case cores and memory when they fit, else its
    /// GPU-proportional demand (Mohan et al., OSDI'22).
    SynergyTune,
    /// The integer program each round, on a window of jobs, back-filled.
    Ilp,
    /// The learned hierarchical policy (imitation weights), back-filled.
    Learned,
    /// The learned policy with its RL-refined weights.
    LearnedRl,
    /// The learned level 1 with the baselines' consolidated placement (an ablation of level 2).
    LearnedPacker,
    /// The lookahead distilled: the same candidates' proposals, one kept by a gate fitted to
    /// the lookahead's plays instead of playing them (`coda::policies::distilled`).
    Distilled,
    /// Rollout policy improvement: each round, candidate schedules (the learned policy's and
    /// the best heuristics') each played forward some rounds in a copy of the simulator, the one
    /// with the fewest job-hours (plus a bound on what is left) kept. Not in [`PolicyKind::ALL`]: it needs the simulator's
    /// settings, and is built above the simulator (`coda::lookahead`), as a replay does.
    Lookahead,
}

impl PolicyKind {
    /// Every policy built from its options alone ([`PolicyKind::build`]: all but
    /// [`PolicyKind::Lookahead`]), in the order reports list them.
    pub const ALL: [PolicyKind; 15] = [
        PolicyKind::Fifo,
        PolicyKind::Srtf,
        PolicyKind::Drf,
        PolicyKind::Tiresias,
        PolicyKind::Optimus,
        PolicyKind::SjfBco,
        PolicyKind::Pollux,
        PolicyKind::Sia,
        PolicyKind::Random,
        PolicyKind::SynergyTune,
        PolicyKind::Ilp,
        PolicyKind::Learned,
        PolicyKind::LearnedRl,
        PolicyKind::LearnedPacker,
        PolicyKind::Distilled,
    ];

    /// The ten baselines: the first ten of [`PolicyKind::ALL`].
    pub fn baselines() -> &'static [PolicyKind] {
        &PolicyKind::ALL[..10]
    }

    /// The name reports and the command line use (`sjf-bco`, `learned-rl`...).
    pub fn name(self) -> &'static str {
        match self {
            PolicyKind::Fifo => "fifo",
            PolicyKind::Srtf => "srtf",
            PolicyKind::Drf => "drf",
            PolicyKind::Tiresias => "tiresias",
            PolicyKind::Optimus => "optimus",
            PolicyKind::SjfBco => "sjf-bco",
            PolicyKind::Pollux => "pollux",
            PolicyKind::Sia => "sia",
            PolicyKind::Random => "random",
            PolicyKind::SynergyTune => "synergy-tune",
            PolicyKind::Ilp => "ilp",
            PolicyKind::Learned => "learned",
            PolicyKind::LearnedRl => "learned-rl",
            PolicyKind::LearnedPacker => "learned-packer",
            PolicyKind::Distilled => "distilled",
            PolicyKind::Lookahead => "lookahead",
        }
    }
}

impl fmt::Display for PolicyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for PolicyKind {
    type Err = Error;

    fn from_str(name: &str) -> Result<Self, Error> {
        let every = || PolicyKind::ALL.into_iter().chain([PolicyKind::Lookahead]);
        every()
            .find(|k| k.name() == name)
            .ok_or_else(|| Error::UnknownName {
                what: "policy".into(),
                name: name.into(),
                reason: format!(
                    "known: {}",
                    every().map(PolicyKind::name).collect::<Vec<_>>().join(", ")
                ),
            })
    }
}

/// Written by name (`"learned"`), as on the command line.
impl serde::Serialize for PolicyKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for PolicyKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}
