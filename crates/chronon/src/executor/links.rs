//! The model's declared topology ([`Model::topology`]): per-LP links with their lookahead, the
//! check that every send keeps to them, and the lookahead figures the conservative executors
//! derive from them.

use crate::error::{guard, ModelError, Setting, SimError};
use crate::event::Event;
use crate::model::{LpId, Model, Time};

/// One LP's links: (destination, lookahead), sorted by destination.
type LinkList = Box<[(LpId, Time)]>;

/// Every LP's declared links (`None`: full mesh with the model's lookahead).
#[derive(Debug)]
pub(crate) struct Links {
    /// Per LP: its links sorted by destination, or `None` for the full mesh; empty when no LP
    /// declared links (no table of a million `None`s, 16 MB, for a model without a topology).
    per_lp: Vec<Option<LinkList>>,
    /// The model's global lookahead.
    pub lookahead: Time,
    /// Whether any LP declared links.
    pub declared: bool,
}

impl Links {
    /// Reads and validates the model's topology for `lps` LPs.
    pub(crate) fn new<M: Model>(model: &M, lps: LpId) -> Result<Self, SimError> {
        let lookahead = model.lookahead();
        let mut per_lp = Vec::new();
        let mut declared = false;
        for lp in 0..lps {
            match guard("Model::topology", Some(lp), || model.topology(lp))? {
                None if declared => per_lp.push(None),
                None => {}
                Some(mut v) => {
                    if !declared {
                        // The first LP with links: the table starts, the LPs before it mesh.
                        per_lp.reserve_exact(lps as usize);
                        per_lp.resize_with(lp as usize, || None);
                        declared = true;
                    }
                    v.retain(|&(d, _)| d != lp);
                    v.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
                    v.dedup_by_key(|x| x.0);
                    for &(d, la) in &v {
                        if d >= lps {
                            return Err(SimError::config(Setting::Model, format!(
                                "the model's topology links LP {lp} to LP {d}, but there are {lps} LPs (0..={})",
                                lps - 1
                            )));
                        }
                        if !(la >= 0.0 && la.is_finite()) {
                            return Err(SimError::config(Setting::Model, format!(
                                "the model's topology gives link LP {lp} -> LP {d} lookahead {la}; it must be finite and >= 0"
                            )));
                        }
                    }
                    per_lp.push(Some(v.into_boxed_slice()));
                }
            }
        }
        Ok(Links {
            per_lp,
            lookahead,
            declared,
        })
    }

    /// LP `lp`'s links, or `None` for the full mesh.
    pub(crate) fn of(&self, lp: LpId) -> Option<&[(LpId, Time)]> {
        self.per_lp.get(lp as usize)?.as_deref()
    }

    /// Checks what LP `src`'s handler at `now` sent against its declared links.
    #[inline]
    pub(crate) fn check<P>(
        &self,
        src: LpId,
        now: Time,
        out: &[Event<P>],
    ) -> Result<(), ModelError> {
        let Some(links) = self.of(src) else {
            return Ok(());
        };
        for e in out {
            if e.dst == src {
                continue;
            }
            match links.binary_search_by_key(&e.dst, |l| l.0) {
                Err(_) => {
                    return Err(ModelError {
                        lp: src,
                        time: now,
                        message: format!(
                            "sent an event to LP {}, which is not among its declared links (Model::topology)",
                            e.dst
                        ),
                    })
                }
                Ok(i) => {
                    let la = links[i].1;
                    if e.time < now + la {
                        return Err(ModelError {
                            lp: src,
                            time: now,
                            message: format!(
                                "sent an event to LP {} with delay {}, below that link's declared lookahead {la}",
                                e.dst,
                                e.time - now
                            ),
                        });
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Ctx;

    /// LPs from `from` on link to LP 0 with lookahead 0.5; the LPs before them mesh.
    struct From(LpId);

    impl Model for From {
        type State = ();
        type Event = ();
        fn init(&self, _ctx: &mut Ctx<'_, Self>) {}
        fn on_event(&self, _s: &mut (), _e: &(), _ctx: &mut Ctx<'_, Self>) {}
        fn lookahead(&self) -> f64 {
            0.25
        }
        fn topology(&self, lp: LpId) -> Option<Vec<(LpId, f64)>> {
            (lp >= self.0).then(|| vec![(0, 0.5)])
        }
    }

    #[test]
    fn a_model_without_links_keeps_no_table_and_the_lps_before_the_first_links_mesh() {
        let none = Links::new(&From(u32::MAX), 1000).unwrap();
        assert!(!none.declared);
        assert_eq!(none.per_lp.capacity(), 0, "no table without a topology");
        assert!((0..1000).all(|lp| none.of(lp).is_none()));

        let late = Links::new(&From(3), 6).unwrap();
        assert!(late.declared);
        for lp in 0..3 {
            assert!(late.of(lp).is_none(), "LP {lp} meshes");
        }
        for lp in 3..6 {
            assert_eq!(late.of(lp), Some(&[(0, 0.5)][..]), "LP {lp}");
        }
        // A send from a meshing LP is not checked against links; one from a linked LP is.
        let ev = |dst| {
            vec![Event::new(
                crate::event::EventKey {
                    time: 2.0,
                    seq: 0,
                    src: 4,
                },
                dst,
                (),
            )]
        };
        assert!(late.check(1, 1.0, &ev(2)).is_ok());
        assert!(late.check(4, 1.0, &ev(0)).is_ok());
        assert!(late.check(4, 1.0, &ev(2)).is_err());
    }
}
