//! The machine as placement sees it: the CPUs this process may use, ordered NUMA node by node
//! and, inside a node, first hardware thread of every core before the second ones; the CPU
//! model. Read from /proc/cpuinfo and /sys/devices/system/{node,cpu} (Linux); elsewhere empty.

use std::path::Path;

/// The machine a run ran on.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
#[non_exhaustive]
pub struct Machine {
    /// CPUs this process may use.
    pub cores: usize,
    /// NUMA nodes with at least one of those CPUs (1 where the OS does not say).
    pub numa_nodes: usize,
    /// The CPU model (/proc/cpuinfo's first "model name"; empty where unknown).
    pub cpu_model: String,
    /// The CPUs in placement order: node by node, and inside a node the first hardware thread
    /// of each core before its siblings. Worker `w` goes to `order[w]`.
    pub order: Vec<usize>,
}

impl Machine {
    /// The machine this process runs on.
    pub fn detect() -> Machine {
        let allowed = super::affinity::allowed_cpus();
        let root = Path::new("/sys/devices/system");
        let nodes = read_nodes(&root.join("node"));
        let smt_rank = |cpu: usize| {
            let p = root.join(format!("cpu/cpu{cpu}/topology/thread_siblings_list"));
            std::fs::read_to_string(p)
                .ok()
                .and_then(|s| parse_list(s.trim()))
                .and_then(|sib| sib.iter().position(|&c| c == cpu))
                .unwrap_or(0)
        };
        let cpu_model = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|t| {
                t.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split_once(':'))
                    .map(|(_, m)| m.trim().to_string())
            })
            .unwrap_or_default();
        Machine::from_parts(&allowed, &nodes, smt_rank, cpu_model)
    }

    /// The machine from its parts: the allowed CPUs, each node's CPUs, each CPU's position
    /// among its core's hardware threads.
    pub(super) fn from_parts(
        allowed: &[usize],
        nodes: &[Vec<usize>],
        smt_rank: impl Fn(usize) -> usize,
        cpu_model: String,
    ) -> Machine {
        let node_of = |cpu: usize| nodes.iter().position(|n| n.contains(&cpu)).unwrap_or(0);
        let mut order: Vec<usize> = allowed.to_vec();
        order.sort_by_key(|&c| (node_of(c), smt_rank(c), c));
        let mut used: Vec<usize> = order.iter().map(|&c| node_of(c)).collect();
        used.dedup();
        Machine {
            cores: order.len(),
            numa_nodes: used.len().max(1),
            cpu_model,
            order,
        }
    }
}

/// Each NUMA node's CPUs (`nodeN/cpulist`), in node order; empty where there is no such
/// directory.
fn read_nodes(dir: &Path) -> Vec<Vec<usize>> {
    let mut nodes: Vec<(usize, Vec<usize>)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let n: usize = name.strip_prefix("node")?.parse().ok()?;
            let list = std::fs::read_to_string(e.path().join("cpulist")).ok()?;
            Some((n, parse_list(list.trim())?))
        })
        .collect();
    nodes.sort();
    nodes.into_iter().map(|(_, c)| c).collect()
}

/// A kernel CPU list ("0-3,8,10-11"; "" is empty).
pub(super) fn parse_list(s: &str) -> Option<Vec<usize>> {
    let mut out = Vec::new();
    for part in s.split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => out.extend(a.parse::<usize>().ok()?..=b.parse::<usize>().ok()?),
            None => out.push(part.parse().ok()?),
        }
    }
    Some(out)
}
