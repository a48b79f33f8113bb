//! The lookaheads the protocols derive from the model's declared links and the LP mapping.

use crate::executor::links::Links;
use crate::model::{LpId, Time};

/// Per-worker minimum outgoing lookahead and the worker-to-worker link lookahead matrix.
pub(super) fn worker_lookaheads(links: &Links, owner: &[u32], w: usize) -> (Vec<Time>, Vec<Time>) {
    let mut worker_la = vec![Time::INFINITY; w];
    let mut link_la = vec![Time::INFINITY; w * w];
    let n = owner.len();
    // Workers that own at least one LP (a full-mesh LP links to every one of them).
    let mut has_lp = vec![false; w];
    for &o in owner {
        has_lp[o as usize] = true;
    }
    for lp in 0..n {
        let v = owner[lp] as usize;
        match links.of(lp as LpId) {
            None => {
                if n > 1 {
                    for x in 0..w {
                        if x != v && has_lp[x] {
                            let l = &mut link_la[v * w + x];
                            *l = l.min(links.lookahead);
                        }
                    }
                }
            }
            Some(ls) => {
                for &(d, la) in ls {
                    let x = owner[d as usize] as usize;
                    if x != v {
                        let l = &mut link_la[v * w + x];
                        *l = l.min(la);
                    }
                }
            }
        }
    }
    for v in 0..w {
        worker_la[v] = (0..w)
            .filter(|&x| x != v)
            .map(|x| link_la[v * w + x])
            .fold(Time::INFINITY, f64::min);
    }
    (worker_la, link_la)
}

/// Load balancing: a link between a dedicated LP and a shared LP, or from a shared LP to any
/// other LP, crosses between execution units (a shared LP may run on any worker, at any point
/// of a round). Lowers `worker_la[v]` by worker `v`'s dedicated-to-shared links and returns the
/// smallest lookahead of a link out of a shared LP (`+inf` when none).
pub(super) fn balance_lookaheads(
    links: &Links,
    owner: &[u32],
    set_of: &[u32],
    worker_la: &mut [Time],
) -> Time {
    use crate::partition::DEDICATED;
    let n = owner.len();
    let any_shared = set_of.iter().any(|&s| s != DEDICATED);
    let mut shared_la = Time::INFINITY;
    for lp in 0..n {
        let shared = set_of[lp] != DEDICATED;
        let v = owner[lp] as usize;
        match links.of(lp as LpId) {
            None => {
                if shared && n > 1 {
                    shared_la = shared_la.min(links.lookahead);
                } else if !shared && any_shared {
                    worker_la[v] = worker_la[v].min(links.lookahead);
                }
            }
            Some(ls) => {
                for &(d, la) in ls {
                    if d as usize == lp {
                        continue;
                    }
                    if shared {
                        shared_la = shared_la.min(la);
                    } else if set_of[d as usize] != DEDICATED {
                        worker_la[v] = worker_la[v].min(la);
                    }
                }
            }
        }
    }
    shared_la
}

/// Lock-step: the LPs whose events may cause, at their own time, an event on another worker.
/// LP `x` is *crossing* when a path of zero-lookahead links leads from it, through LPs of its
/// own worker, to an LP of another worker (`lockstep.rs`: such events run in global key order
/// unless no other worker can have anything at their time). Empty with one worker.
pub(super) fn crossing_lps(links: &Links, owner: &[u32], w: usize) -> Vec<bool> {
    let n = owner.len();
    let mut crossing = vec![false; n];
    if w < 2 {
        return crossing;
    }
    let mut has_lp = vec![false; w];
    for &o in owner {
        has_lp[o as usize] = true;
    }
    let others = |v: u32| (0..w).any(|x| x != v as usize && has_lp[x]);
    // Zero-lookahead links inside a worker, reversed: `into[b]` lists the LPs `a` of b's
    // worker with a zero link a -> b (a full-mesh LP at global lookahead 0 is crossing itself
    // as soon as another worker owns an LP, so it needs no reverse edges).
    let mut into: Vec<Vec<LpId>> = vec![Vec::new(); n];
    let mut stack = Vec::new();
    for a in 0..n {
        let v = owner[a];
        match links.of(a as LpId) {
            None => {
                if links.lookahead == 0.0 && others(v) {
                    crossing[a] = true;
                    stack.push(a as LpId);
                }
            }
            Some(ls) => {
                for &(b, la) in ls {
                    if la != 0.0 {
                        continue;
                    }
                    if owner[b as usize] != v {
                        if !crossing[a] {
                            crossing[a] = true;
                            stack.push(a as LpId);
                        }
                    } else {
                        into[b as usize].push(a as LpId);
                    }
                }
            }
        }
    }
    // Full-mesh LPs with lookahead 0 also reach every LP of their own worker at zero delay.
    if links.lookahead == 0.0 {
        for a in 0..n {
            if links.of(a as LpId).is_none() {
                for b in 0..n {
                    if b != a && owner[b] == owner[a] {
                        into[b].push(a as LpId);
                    }
                }
            }
        }
    }
    while let Some(b) = stack.pop() {
        for &a in &into[b as usize] {
            if !crossing[a as usize] {
                crossing[a as usize] = true;
                stack.push(a);
            }
        }
    }
    crossing
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Ctx, Model};
    use crate::partition::DEDICATED;

    /// Three LPs: 0 → 1 with lookahead 0.1, 1 → 2 with 0.5, 2 → 0 with 2.0.
    struct Chain;

    impl Model for Chain {
        type State = ();
        type Event = ();
        fn init(&self, _ctx: &mut Ctx<'_, Self>) {}
        fn on_event(&self, _s: &mut (), _e: &(), _ctx: &mut Ctx<'_, Self>) {}
        fn lookahead(&self) -> f64 {
            0.1
        }
        fn topology(&self, lp: LpId) -> Option<Vec<(LpId, f64)>> {
            Some(vec![[(1, 0.1), (2, 0.5), (0, 2.0)][lp as usize]])
        }
    }

    #[test]
    fn links_touching_shared_lps_count_as_links_between_workers() {
        let links = Links::new(&Chain, 3).unwrap();
        // Everything on worker 0: no link between workers.
        let owner = vec![0, 0, 0];
        let (mut la, _) = worker_lookaheads(&links, &owner, 1);
        assert_eq!(la, vec![f64::INFINITY]);
        // LP 1 shared: 0 → 1 (dedicated to shared) lowers worker 0's lookahead, and 1 → 2
        // (out of a shared LP) is the shared lookahead.
        let shared = balance_lookaheads(&links, &owner, &[DEDICATED, 0, DEDICATED], &mut la);
        assert_eq!((la[0], shared), (0.1, 0.5));
        // LP 2 shared instead: 1 → 2 (0.5) and 2 → 0 (2.0).
        let (mut la, _) = worker_lookaheads(&links, &owner, 1);
        let shared = balance_lookaheads(&links, &owner, &[DEDICATED, DEDICATED, 0], &mut la);
        assert_eq!((la[0], shared), (0.5, 2.0));
    }

    #[test]
    fn crossing_lps_follow_zero_paths_inside_a_worker() {
        /// 0 -> 1 -> 2 -> 3 at lookahead 0, 3 -> 0 at 1.0; LP 4 only sends to 0 at 0.
        struct Zero;
        impl Model for Zero {
            type State = ();
            type Event = ();
            fn init(&self, _ctx: &mut Ctx<'_, Self>) {}
            fn on_event(&self, _s: &mut (), _e: &(), _ctx: &mut Ctx<'_, Self>) {}
            fn topology(&self, lp: LpId) -> Option<Vec<(LpId, f64)>> {
                Some(vec![
                    [(1, 0.0), (2, 0.0), (3, 0.0), (0, 1.0), (0, 0.0)][lp as usize],
                ])
            }
        }
        let links = Links::new(&Zero, 5).unwrap();
        // Workers {0, 1}, {2, 3, 4}: 1 -> 2 crosses, so 0 and 1 are crossing; 2 and 3 reach
        // worker 0 only over 3 -> 0 (lookahead 1); 4 -> 0 crosses at 0.
        assert_eq!(
            crossing_lps(&links, &[0, 0, 1, 1, 1], 2),
            vec![true, true, false, false, true]
        );
        // One worker: nothing crosses.
        assert_eq!(crossing_lps(&links, &[0; 5], 1), vec![false; 5]);
    }
}
