//! Safe events: which events commit as they run, with no record (README.md, "Safe events").
//!
//! An event that no straggler and no anti-message can ever reach needs no record: nothing will
//! undo it. Such an event commits at once (its commit hook, counter deltas and digest), as under
//! the sequential executor. Its LP's uncommitted records are older, so nothing can undo them
//! either: they commit first, oldest first, so that each LP still commits in its order (unless
//! one of them failed: then the event keeps a record, and the failure waits for GVT as usual).
//! Two rules find such events; both need reverse state saving, because copy state saving may
//! coast over an event after restoring an older checkpoint, which needs the event's record.
//!
//! - **One worker** (`Always`): a lone worker processes every event in key order and is the
//!   only sender, so nothing it receives sorts before what it has run. Every event is safe.
//! - **Threads, lookahead `L > 0`** (`Lookahead`): with `g` a GVT the worker read *before* its
//!   latest mailbox drain, an event before `g + L` is safe. Proof sketch: a straggler for the
//!   worker's LPs is either (a) in its mailbox at the drain, hence in its pending set, and then
//!   the worker runs it first (it runs its pending set in key order); or (b) pushed after the
//!   drain. A push after the drain comes after the publication of `g`, so after the sender's
//!   report in `g`'s round; threads flush every event's sends before the loop reaches a report,
//!   so the sending event was pending at or after that report (or arrived or was rolled back
//!   since), and its time is at least `g`; the send is at least `L` later: at least `g + L`.
//!   Local sends are at least `L` after the event that makes them. An anti-message cancels an
//!   event sent by an event that rolls back, which is at least `g` (nothing below GVT rolls
//!   back), so the cancelled event is at least `g + L`. Processes and MPI ranks batch sends
//!   past a report (rings that may be full, the rank's driver), so the rule is off there.

use super::options::Saving;
use super::options::TimeWarpConfig;
use crate::model::Time;

/// Which events of a run commit as they run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum SafeRule {
    /// None: every event keeps a record until GVT passes it.
    Off,
    /// Those before GVT + the lookahead (threads in one process).
    Lookahead(Time),
    /// All of them (the run has one worker).
    Always,
}

impl SafeRule {
    /// The rule for a run of `workers` workers in all, `net`: across processes or ranks.
    pub(super) fn choose(
        opts: &TimeWarpConfig,
        saving: Saving,
        workers: usize,
        net: bool,
        lookahead: Time,
    ) -> Self {
        if !opts.safe_commit || saving != Saving::Reverse || opts.preempt || opts.check_reverse {
            SafeRule::Off
        } else if workers == 1 {
            SafeRule::Always
        } else if !net && lookahead > 0.0 {
            SafeRule::Lookahead(lookahead)
        } else {
            SafeRule::Off
        }
    }

    /// Whether a fresher GVT makes more events safe (the bound follows GVT), so that a worker
    /// that ran past its bound should start a round early (worker.rs, `EARLY_ROUND`).
    #[inline]
    pub(super) fn follows_gvt(self) -> bool {
        matches!(self, SafeRule::Lookahead(_))
    }

    /// The bound a worker may use once it has drained its mailbox, given the published GVT
    /// (read only under `Lookahead`), which it must read before the drain: events before the
    /// bound are safe.
    #[inline]
    pub(super) fn bound(self, gvt: impl FnOnce() -> Time) -> Time {
        match self {
            SafeRule::Off => Time::NEG_INFINITY,
            SafeRule::Lookahead(l) => gvt() + l,
            SafeRule::Always => Time::INFINITY,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rule_needs_reverse_saving_and_threads() {
        let on = TimeWarpConfig::default();
        let r = Saving::Reverse;
        assert_eq!(SafeRule::choose(&on, r, 1, false, 0.0), SafeRule::Always);
        assert_eq!(SafeRule::choose(&on, r, 1, true, 0.0), SafeRule::Always);
        assert_eq!(
            SafeRule::choose(&on, r, 2, false, 0.5),
            SafeRule::Lookahead(0.5)
        );
        assert_eq!(SafeRule::choose(&on, r, 2, false, 0.0), SafeRule::Off);
        assert_eq!(SafeRule::choose(&on, r, 2, true, 0.5), SafeRule::Off);
        assert_eq!(
            SafeRule::choose(&on, Saving::Copy, 1, false, 0.5),
            SafeRule::Off
        );
        let off = TimeWarpConfig::default().safe_commit(false);
        assert_eq!(SafeRule::choose(&off, r, 1, false, 0.5), SafeRule::Off);
        let pre = TimeWarpConfig::default().preempt(true);
        assert_eq!(SafeRule::choose(&pre, r, 2, false, 0.5), SafeRule::Off);
    }

    #[test]
    fn only_the_lookahead_rule_follows_gvt() {
        assert!(SafeRule::Lookahead(0.5).follows_gvt());
        assert!(!SafeRule::Off.follows_gvt());
        assert!(!SafeRule::Always.follows_gvt());
    }

    #[test]
    fn bounds() {
        assert_eq!(SafeRule::Lookahead(0.25).bound(|| 2.0), 2.25);
        assert_eq!(SafeRule::Off.bound(|| 2.0), Time::NEG_INFINITY);
        assert_eq!(SafeRule::Always.bound(|| 2.0), Time::INFINITY);
    }
}
