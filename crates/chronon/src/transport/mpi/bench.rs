//! A measurement hook (`chronon bench lbts-once --method mpi`, experiment 000-gsu): the LBTS
//! reduction of the conservative executors over ranks alone, with no run around it. Each
//! computation is one [`RankComm::all_gather`] of a record the size of the barrier's (one
//! worker per rank: its MOE, bound, MOM, TMC and receive count, the earliest key and count it
//! sent to every worker, the abort word), then the minimum MOE and the sent = received check
//! that the barrier makes.

use std::time::Instant;

use mpi::topology::SimpleCommunicator;

use super::comm::RankComm;
use super::net::{LOCAL_WORDS, RANK_WORDS, SENT_WORDS};

/// Computes the LBTS `rounds` times over every rank of the world (collective: every rank
/// calls it with the same `rounds`); this rank's seconds for all of them. An error if a
/// reduction gives the wrong minimum or a sent/received mismatch (a broken gather).
pub fn lbts_gather_secs(_mpi: &super::Mpi, rounds: u64) -> Result<f64, String> {
    let comm = RankComm::new(&SimpleCommunicator::world());
    let (rank, ranks) = (comm.rank(), comm.size());
    let words = LOCAL_WORDS + SENT_WORDS * ranks + RANK_WORDS;
    let mut mine = vec![0u64; words];
    // Every rank starts together.
    comm.all_gather_quiet(&[0]);
    let t0 = Instant::now();
    let mut bad = None;
    for r in 0..rounds {
        // This rank's MOE at computation r (rank 0's the least), its receive count, and one
        // event sent to every worker per computation.
        mine[0] = ((r * ranks as u64 + rank as u64 + 1) as f64).to_bits();
        mine[LOCAL_WORDS - 1] = r * ranks as u64;
        for x in 0..ranks {
            mine[LOCAL_WORDS + SENT_WORDS * x] = f64::INFINITY.to_bits();
            mine[LOCAL_WORDS + SENT_WORDS * x + SENT_WORDS - 1] = r;
        }
        let all = comm.all_gather(&mine, &mut |_, _| {});
        let at = |q: usize, i: usize| all[q * words + i];
        let lbts = (0..ranks)
            .map(|q| f64::from_bits(at(q, 0)))
            .fold(f64::INFINITY, f64::min);
        let sent: u64 = (0..ranks)
            .map(|q| at(q, LOCAL_WORDS + SENT_WORDS * rank + SENT_WORDS - 1))
            .sum();
        if lbts != (r * ranks as u64 + 1) as f64 || sent != at(rank, LOCAL_WORDS - 1) {
            bad.get_or_insert(r);
        }
    }
    let secs = t0.elapsed().as_secs_f64();
    comm.drain();
    match bad {
        Some(r) => Err(format!("LBTS reduction {r} gave a wrong result")),
        None => Ok(secs),
    }
}
