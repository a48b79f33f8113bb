//! The conservative family over each transport: the run on threads (`threads.rs`), a part over
//! worker processes (`shm.rs`) and over MPI ranks (`mpi.rs`). The only files of the family that
//! name a concrete transport.

/// `$run::<M, Q, _>(args)` with `Q` the run's pending set.
macro_rules! with_queue {
    ($cfg:expr, $run:ident :: <$m:ty>, $($arg:expr),* $(,)?) => {
        match $cfg.queue {
            crate::queue::QueueKind::Heap => {
                $run::<$m, crate::queue::HeapQueue<crate::event::Event<<$m as crate::model::Model>::Event>>, _>($($arg),*)
            }
            crate::queue::QueueKind::Ladder => {
                $run::<$m, crate::queue::LadderQueue<crate::event::Event<<$m as crate::model::Model>::Event>>, _>($($arg),*)
            }
        }
    };
}

#[cfg(feature = "mpi")]
mod mpi;
#[cfg(all(target_os = "linux", not(chronon_loom)))]
mod shm;
pub(super) mod threads;
