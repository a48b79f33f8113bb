//! Null messages: the check, before the run, that no link between workers has lookahead 0,
//! and the error that names what is wrong — a cycle of zero-lookahead links between LPs when
//! there is one (every hop a declared link, or a full-mesh LP's link at the model's lookahead
//! 0), else a cycle among the workers, else one such link.
//!
//! Why the worker level: a worker's output channel carries `min(earliest pending, InClock) +
//! lookahead`, so with zero lookahead on `v -> w` and on `w -> v` each channel waits for the
//! other even when no single LP path closes the loop (the links may meet different LPs of a
//! worker); the error then says so and names the links.

use std::collections::VecDeque;

use crate::error::{Setting, SimError};
use crate::executor::links::Links;
use crate::model::{LpId, Time};

/// Breadth-first searches tried before settling for the worker-level description.
const MAX_SEARCHES: usize = 256;

/// Rejects zero-lookahead links between workers, naming a cycle of them if there is one.
pub(super) fn check_links(
    links: &Links,
    owner: &[u32],
    link_la: &[Time],
    w: usize,
) -> Result<(), SimError> {
    let zero = |v: usize, x: usize| v != x && link_la[v * w + x] == 0.0;
    if !(0..w).any(|v| (0..w).any(|x| zero(v, x))) {
        return Ok(());
    }
    let worker = |lp: LpId| owner[lp as usize];
    let hop = |a: LpId, b: LpId| {
        let (v, x) = (worker(a), worker(b));
        if v == x {
            format!("LP {a} -> LP {b}")
        } else {
            format!("LP {a} -> LP {b} (worker {v} -> {x})")
        }
    };
    if let Some(cycle) = lp_cycle(links, owner) {
        let hops: Vec<String> = cycle.windows(2).map(|p| hop(p[0], p[1])).collect();
        return Err(SimError::config(Setting::Executor, format!(
            "$executor null-message cannot run a cycle of zero-lookahead links: {}; give these links a positive lookahead, or use $executor window or lockstep",
            hops.join(", ")
        )));
    }
    if let Some(cycle) = worker_cycle(w, &zero) {
        let hops: Vec<String> = cycle
            .windows(2)
            .map(|p| {
                let (a, b) = example(links, owner, p[0], p[1]);
                hop(a, b)
            })
            .collect();
        return Err(SimError::config(Setting::Executor, format!(
            "$executor null-message cannot run workers joined in a cycle by zero-lookahead links: {} (each worker's clock waits for the next one's); give these links a positive lookahead, map their LPs to one worker, or use $executor window or lockstep",
            hops.join(", ")
        )));
    }
    let (v, x) = (0..w)
        .flat_map(|v| (0..w).map(move |x| (v, x)))
        .find(|&(v, x)| zero(v, x))
        .expect("a zero link exists");
    let (a, b) = example(links, owner, v, x);
    Err(SimError::config(Setting::Executor, format!(
        "$executor null-message needs a positive lookahead on links between workers; LP {a} -> LP {b} (worker {v} -> {x}) has lookahead 0 (use $executor window or lockstep, or map both LPs to one worker)"
    )))
}

/// The zero-lookahead links out of `a`: its declared ones, or every other LP for a full-mesh
/// LP when the model's lookahead is 0.
fn zero_out(links: &Links, lps: usize, a: LpId) -> Box<dyn Iterator<Item = LpId> + '_> {
    match links.of(a) {
        Some(ls) => Box::new(ls.iter().filter(|l| l.1 == 0.0).map(|l| l.0)),
        None if links.lookahead == 0.0 => Box::new((0..lps as LpId).filter(move |&b| b != a)),
        None => Box::new(std::iter::empty()),
    }
}

/// A cycle of zero-lookahead LP links that crosses between workers, as the LPs along it
/// (first = last), if one is found: for a zero link `a -> b` between workers, a shortest
/// zero path from `b` back to `a`.
fn lp_cycle(links: &Links, owner: &[u32]) -> Option<Vec<LpId>> {
    let n = owner.len();
    let mut prev = vec![LpId::MAX; n];
    let mut seen = vec![0usize; n];
    let mut searches = 0;
    for a in 0..n as LpId {
        // A full-mesh LP is a candidate only once (its links all look alike).
        let starts: Vec<LpId> = match links.of(a) {
            Some(_) => zero_out(links, n, a)
                .filter(|&b| owner[b as usize] != owner[a as usize])
                .collect(),
            None => zero_out(links, n, a)
                .find(|&b| owner[b as usize] != owner[a as usize])
                .into_iter()
                .collect(),
        };
        for b in starts {
            searches += 1;
            if searches > MAX_SEARCHES {
                return None;
            }
            // Breadth-first from b; `seen[x] == searches` marks this search's visits.
            let mut queue = VecDeque::from([b]);
            seen[b as usize] = searches;
            while let Some(x) = queue.pop_front() {
                if x == a {
                    let mut path = vec![a];
                    let mut y = a;
                    while y != b {
                        y = prev[y as usize];
                        path.push(y);
                    }
                    path.push(a);
                    path.reverse();
                    return Some(path);
                }
                for y in zero_out(links, n, x) {
                    if seen[y as usize] != searches {
                        seen[y as usize] = searches;
                        prev[y as usize] = x;
                        queue.push_back(y);
                    }
                }
            }
        }
    }
    None
}

/// A cycle among the workers over zero-lookahead worker links (first = last), if any.
fn worker_cycle(w: usize, zero: &dyn Fn(usize, usize) -> bool) -> Option<Vec<usize>> {
    fn dfs(
        v: usize,
        w: usize,
        zero: &dyn Fn(usize, usize) -> bool,
        state: &mut [u8],
        stack: &mut Vec<usize>,
    ) -> Option<Vec<usize>> {
        state[v] = 1;
        stack.push(v);
        for x in 0..w {
            if !zero(v, x) {
                continue;
            }
            if state[x] == 1 {
                let i = stack.iter().position(|&s| s == x).unwrap_or(0);
                let mut c = stack[i..].to_vec();
                c.push(x);
                return Some(c);
            }
            if state[x] == 0 {
                if let Some(c) = dfs(x, w, zero, state, stack) {
                    return Some(c);
                }
            }
        }
        stack.pop();
        state[v] = 2;
        None
    }
    let mut state = vec![0u8; w];
    let mut stack = Vec::new();
    (0..w).find_map(|v| {
        if state[v] == 0 {
            dfs(v, w, zero, &mut state, &mut stack)
        } else {
            None
        }
    })
}

/// A zero-lookahead LP link from worker `v` to worker `x` (one exists when `link_la` says so).
fn example(links: &Links, owner: &[u32], v: usize, x: usize) -> (LpId, LpId) {
    let n = owner.len();
    (0..n as LpId)
        .filter(|&a| owner[a as usize] as usize == v)
        .find_map(|a| {
            zero_out(links, n, a)
                .find(|&b| owner[b as usize] as usize == x)
                .map(|b| (a, b))
        })
        .expect("a zero-lookahead link joins the two workers")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Ctx, Model};

    /// LP i links to `self.0[i]`: (destination, lookahead).
    struct Graph(Vec<Vec<(LpId, f64)>>);

    impl Model for Graph {
        type State = ();
        type Event = ();
        fn init(&self, _ctx: &mut Ctx<'_, Self>) {}
        fn on_event(&self, _s: &mut (), _e: &(), _ctx: &mut Ctx<'_, Self>) {}
        fn topology(&self, lp: LpId) -> Option<Vec<(LpId, f64)>> {
            Some(self.0[lp as usize].clone())
        }
    }

    fn error(g: Vec<Vec<(LpId, f64)>>, owner: &[u32], w: usize) -> String {
        let links = Links::new(&Graph(g), owner.len() as LpId).unwrap();
        let (_, link_la) = super::super::lookahead::worker_lookaheads(&links, owner, w);
        check_links(&links, owner, &link_la, w)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn the_named_cycle_is_made_of_declared_zero_links() {
        // 0 -> 1 -> 2 -> 0 at zero; workers {0}, {1, 2}.
        let g = vec![vec![(1, 0.0)], vec![(2, 0.0)], vec![(0, 0.0)]];
        let e = error(g, &[0, 1, 1], 2);
        assert!(
            e.contains("LP 0 -> LP 1 (worker 0 -> 1), LP 1 -> LP 2, LP 2 -> LP 0 (worker 1 -> 0)"),
            "{e}"
        );
    }

    #[test]
    fn workers_in_a_cycle_without_an_lp_cycle_are_named_as_such() {
        // 0 -> 1 at zero (worker 0 -> 1), 2 -> 3 at zero (worker 1 -> 0); no LP cycle.
        let g = vec![vec![(1, 0.0)], vec![], vec![(3, 0.0)], vec![]];
        let e = error(g, &[0, 1, 1, 0], 2);
        assert!(e.contains("workers joined in a cycle"), "{e}");
        assert!(
            e.contains("LP 0 -> LP 1 (worker 0 -> 1), LP 2 -> LP 3 (worker 1 -> 0)"),
            "{e}"
        );
    }

    #[test]
    fn a_zero_chain_names_one_link() {
        let g = vec![vec![(1, 0.0)], vec![(0, 1.0)]];
        let e = error(g, &[0, 1], 2);
        assert!(
            e.contains("LP 0 -> LP 1 (worker 0 -> 1) has lookahead 0"),
            "{e}"
        );
    }
}
