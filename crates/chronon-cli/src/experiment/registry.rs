//! Every experiment `chronon experiment` knows. To add one: write its plan, extract and render
//! functions (see `seed001.rs` for the shape) and add an entry here.

use super::{
    gsu, ours, refcount, run_metrics, scaling, seed000, seed001, seed002, seed003, store_alloc,
    ticks, Experiment, Ready,
};

const fn ready(
    plan: fn(&super::Settings) -> Result<Vec<super::Point>, crate::Failure>,
    render: fn(&super::Settings, &super::Results) -> Result<super::Rendered, crate::Failure>,
) -> Ready {
    Ready {
        plan,
        extract: run_metrics,
        render,
    }
}

pub(crate) const EXPERIMENTS: &[Experiment] = &[
    Experiment {
        name: "000-gsu",
        seed: "000",
        what: "§3.1: GSU LBTS cost vs message-based LBTS",
        needs: "threads; MPI: feature mpi",
        partial: "",
        reps: 3,
        ready: Ready {
            plan: gsu::plan,
            extract: gsu::extract,
            render: gsu::render,
        },
    },
    Experiment {
        name: "000-fig7",
        seed: "000",
        what: "Fig. 7: SimpleSim payload sweep",
        needs: "processes; MPI: feature mpi",
        partial: "Boost version",
        reps: 3,
        ready: Ready {
            plan: seed000::fig7_plan,
            extract: seed000::extract,
            render: seed000::fig7_render,
        },
    },
    Experiment {
        name: "000-fig8",
        seed: "000",
        what: "Fig. 8: SimpleSim process sweep",
        needs: "2-8 processes; MPI: feature mpi",
        partial: "Boost version",
        reps: 3,
        ready: Ready {
            plan: seed000::fig8_plan,
            extract: seed000::extract,
            render: seed000::fig8_render,
        },
    },
    Experiment {
        name: "000-fig9",
        seed: "000",
        what: "Fig. 9: star-of-stars network process sweep",
        needs: "2-8 processes; MPI: feature mpi",
        partial: "Boost version",
        reps: 3,
        ready: Ready {
            plan: seed000::fig9_plan,
            extract: seed000::extract,
            render: seed000::fig9_render,
        },
    },
    Experiment {
        name: "001-barriers",
        seed: "001",
        what: "Tables 1-2: barrier wait() cost",
        needs: "threads",
        partial: "",
        reps: 3,
        ready: Ready {
            plan: seed001::barriers_plan,
            extract: seed001::barriers_extract,
            render: seed001::barriers_render,
        },
    },
    Experiment {
        name: "001-refcount",
        seed: "001",
        what: "Tables 3-8: thread-safe reference counting",
        needs: "threads",
        partial: "",
        reps: 3,
        ready: Ready {
            plan: refcount::plan,
            extract: refcount::extract,
            render: refcount::render,
        },
    },
    Experiment {
        name: "001-balance",
        seed: "001",
        what: "Tables 9-10: dedicated/shared partition sets",
        needs: "threads",
        partial: "",
        reps: 3,
        ready: ready(seed001::balance_plan, seed001::balance_render),
    },
    Experiment {
        name: "001-campus",
        seed: "001",
        what: "§1.3: campus ring speedup",
        needs: "threads",
        partial: "",
        reps: 3,
        ready: ready(seed001::campus_plan, seed001::campus_render),
    },
    Experiment {
        name: "002-graph1",
        seed: "002",
        what: "Graph 1: speedup vs event-handling time",
        needs: "threads",
        partial: "",
        reps: 3,
        ready: ready(seed002::graph1_plan, seed002::graph1_render),
    },
    Experiment {
        name: "002-graph2",
        seed: "002",
        what: "Graph 2: speedup vs threads (lock-step)",
        needs: "threads",
        partial: "",
        reps: 3,
        ready: ready(seed002::graph2_plan, seed002::graph2_render),
    },
    Experiment {
        name: "003-fig5",
        seed: "003",
        what: "Fig. 5: tick overhead vs period",
        needs: "threads",
        partial: "",
        reps: 3,
        ready: Ready {
            plan: ticks::plan,
            extract: ticks::extract,
            render: ticks::render,
        },
    },
    Experiment {
        name: "003-phold-phases",
        seed: "003",
        what: "Fig. 6 / Table I: PHOLD phases",
        needs: "threads",
        partial: "",
        reps: 3,
        ready: ready(seed003::phases_plan, seed003::phases_render),
    },
    Experiment {
        name: "003-datastore",
        seed: "003",
        what: "Fig. 7-8 / Table II: data store",
        needs: "threads",
        partial: "",
        reps: 3,
        ready: Ready {
            plan: seed003::datastore_plan,
            extract: store_alloc::extract,
            render: seed003::datastore_render,
        },
    },
    Experiment {
        name: "003-pcs",
        seed: "003",
        what: "Fig. 9-11 / Table III: PCS",
        needs: "threads",
        partial: "",
        reps: 3,
        ready: ready(seed003::pcs_plan, seed003::pcs_render),
    },
    Experiment {
        name: "ours-phold",
        seed: "ours",
        what: "PHOLD std/big/huge: executors vs bare heap",
        needs: "threads",
        partial: "",
        reps: 1,
        ready: ready(ours::executors_plan, ours::executors_render),
    },
    Experiment {
        name: "ours-scaling",
        seed: "ours",
        what: "PHOLD scaling: every executor, threads, splits",
        needs: "threads; processes (--splits)",
        partial: "",
        reps: 3,
        ready: Ready {
            plan: scaling::plan,
            extract: scaling::extract,
            render: scaling::render,
        },
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_every_ready_plan_is_nonempty() {
        let s = crate::experiment::Settings {
            quick: true,
            threads: None,
            reps: 1,
            cores: 2,
            configs: None,
            splits: Vec::new(),
        };
        for (i, e) in EXPERIMENTS.iter().enumerate() {
            assert!(
                EXPERIMENTS[..i].iter().all(|o| o.name != e.name),
                "{} twice",
                e.name
            );
            let points = (e.ready.plan)(&s).unwrap();
            assert!(!points.is_empty(), "{}", e.name);
        }
    }
}
