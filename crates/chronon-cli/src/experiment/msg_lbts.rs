//! A message-based LBTS for the `000-gsu` experiment: what a distributed simulator computes
//! when it has no shared registers (seed 000 §3.1, "exchanging messages between simulator
//! instances"). The workers form a binary tree; in one computation each worker sends its
//! contribution — the time of its minimum outstanding event and its counts of messages sent and
//! received — up the tree (a parent waits for its children, combines, and sends on), the root
//! decides, and the outcome comes back down. The outcome is an LBTS only when the sums of sent
//! and received messages agree (no message in transit, as in Mattern's algorithm); otherwise
//! the caller must compute again.
//!
//! Plain `std::sync::mpsc` channels, so a waiting worker parks (no spinning). The channels
//! stand in for a network or a shared-memory message queue; the cost measured is the
//! exchange itself: 2 ⌈log₂ N⌉ message latencies and the wake-ups of parked threads.

use std::sync::mpsc::{channel, Receiver, Sender};
use std::time::Duration;

/// How long a worker of the benchmark waits for a child's or its parent's message before it
/// gives up: a worker that stopped early (an error) never sends, and its partners must not wait
/// for ever.
pub(crate) const PATIENCE: Duration = Duration::from_secs(30);

/// What one worker contributes to an LBTS computation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Contribution {
    /// The time of its minimum outstanding event (`+inf`: none).
    pub moe: f64,
    /// Messages it has sent so far.
    pub sent: u64,
    /// Messages it has received so far.
    pub received: u64,
}

impl Contribution {
    fn combine(self, o: Contribution) -> Contribution {
        Contribution {
            moe: self.moe.min(o.moe),
            sent: self.sent + o.sent,
            received: self.received + o.received,
        }
    }
}

/// What every worker learns from one computation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Outcome {
    /// The minimum of every worker's MOE.
    pub min_moe: f64,
    /// Messages sent and not yet received, over all workers (0: `min_moe` is the LBTS).
    pub in_transit: i64,
}

impl Outcome {
    /// The LBTS, when no message was in transit at the cut.
    pub(crate) fn lbts(&self) -> Option<f64> {
        (self.in_transit == 0).then_some(self.min_moe)
    }
}

/// One worker's end of the tree.
#[derive(Debug)]
pub(crate) struct Node {
    children: usize,
    patience: Duration,
    from_children: Receiver<Contribution>,
    to_parent: Option<Sender<Contribution>>,
    from_parent: Option<Receiver<Outcome>>,
    to_children: Vec<Sender<Outcome>>,
}

/// The nodes of a binary tree over `n` workers (worker w's parent is (w − 1) / 2), one per
/// worker thread; a worker waits at most `patience` for each message.
pub(crate) fn tree(n: usize, patience: Duration) -> Vec<Node> {
    let ups: Vec<(Sender<Contribution>, Receiver<Contribution>)> =
        (0..n).map(|_| channel()).collect();
    // The channel down to worker w (none for the root): its sender goes to w's parent.
    let mut down_tx: Vec<Option<Sender<Outcome>>> = Vec::with_capacity(n);
    let mut down_rx: Vec<Option<Receiver<Outcome>>> = Vec::with_capacity(n);
    for w in 0..n {
        if w == 0 {
            down_tx.push(None);
            down_rx.push(None);
        } else {
            let (tx, rx) = channel();
            down_tx.push(Some(tx));
            down_rx.push(Some(rx));
        }
    }
    let to_parent: Vec<Option<Sender<Contribution>>> = (0..n)
        .map(|w| (w > 0).then(|| ups[(w - 1) / 2].0.clone()))
        .collect();
    let mut nodes = Vec::with_capacity(n);
    for (w, (_, from_children)) in ups.into_iter().enumerate() {
        let kids: Vec<usize> = [2 * w + 1, 2 * w + 2]
            .into_iter()
            .filter(|&c| c < n)
            .collect();
        nodes.push(Node {
            children: kids.len(),
            patience,
            from_children,
            to_parent: to_parent[w].clone(),
            from_parent: down_rx[w].take(),
            to_children: kids.iter().filter_map(|&c| down_tx[c].clone()).collect(),
        });
    }
    nodes
}

impl Node {
    /// One LBTS computation: this worker's contribution goes up, the outcome comes back.
    /// Every worker of the tree must call it once per computation. `None` if a message it
    /// waits for does not come within the tree's patience (a worker stopped calling) or its partner
    /// is gone.
    pub(crate) fn compute(&self, mine: Contribution) -> Option<Outcome> {
        let mut acc = mine;
        for _ in 0..self.children {
            acc = acc.combine(self.from_children.recv_timeout(self.patience).ok()?);
        }
        let outcome = match (&self.to_parent, &self.from_parent) {
            (Some(up), Some(down)) => {
                up.send(acc).ok()?;
                down.recv_timeout(self.patience).ok()?
            }
            _ => Outcome {
                min_moe: acc.moe,
                in_transit: acc.sent as i64 - acc.received as i64,
            },
        };
        for c in &self.to_children {
            c.send(outcome).ok()?;
        }
        Some(outcome)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_worker_gets_the_minimum_and_the_transient_count() {
        for n in [1, 2, 3, 5, 8] {
            let handles: Vec<_> = tree(n, PATIENCE)
                .into_iter()
                .enumerate()
                .map(|(w, node)| {
                    std::thread::spawn(move || {
                        (0..50u64)
                            .map(|r| {
                                // Worker w's MOE at round r: 100 r + w + 1, so the minimum is
                                // worker 0's; in odd rounds worker n-1 has one message in
                                // flight (counted as sent, not yet received anywhere).
                                let c = Contribution {
                                    moe: (100 * r + w as u64 + 1) as f64,
                                    sent: 10 + u64::from(r % 2 == 1 && w == n - 1),
                                    received: 10,
                                };
                                node.compute(c).unwrap()
                            })
                            .collect::<Vec<Outcome>>()
                    })
                })
                .collect();
            for h in handles {
                for (r, o) in h.join().unwrap().into_iter().enumerate() {
                    assert_eq!(o.min_moe, (100 * r + 1) as f64, "n={n} round {r}");
                    if r % 2 == 1 {
                        assert_eq!(o.lbts(), None, "a message in transit: no LBTS");
                        assert_eq!(o.in_transit, 1);
                    } else {
                        assert_eq!(o.lbts(), Some((100 * r + 1) as f64));
                    }
                }
            }
        }
    }

    #[test]
    fn a_worker_that_stops_does_not_leave_the_others_waiting() {
        let mut nodes = tree(3, Duration::from_millis(100));
        drop(nodes.pop()); // worker 2, a child of the root, never takes part
        let c = Contribution {
            moe: 1.0,
            sent: 0,
            received: 0,
        };
        let one = nodes.pop().unwrap();
        let h = std::thread::spawn(move || one.compute(c));
        let root = nodes.pop().unwrap();
        // The root hears from worker 1, waits for worker 2 in vain, and gives up; worker 1 then
        // finds its parent gone.
        assert_eq!(root.compute(c), None);
        drop(root);
        assert_eq!(h.join().unwrap(), None);
    }
}
