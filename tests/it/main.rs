//! Integration tests, one binary (link once).

mod api;
mod baselines;
mod bound;
mod cli;
mod common;
mod cpumem;
mod distil;
mod errors;
mod fidelity;
mod fuzz;
mod generate;
mod gym;
mod ilp;
mod layout;
mod learn;
mod learned;
mod learned_tiers;
mod lookahead;
mod perf;
mod pricing;
mod report;
mod rl;
mod robustness;
mod sim;
mod trace;
mod validate;
