//! PHOLD in three phases on a 2-D mesh (seed 003, §3.2).
//!
//! `width × height` objects (default 45 × 45 = 2025) sit on a mesh; each starts with
//! `jobs_per_object` jobs. Handling a job sends it to a uniformly chosen mesh neighbour (4-way;
//! the mesh wraps around into a torus when `wrap` is set) after `lookahead + Exp(mean −
//! lookahead)`. Virtual time is cut into three phases of `phase_length` each — A, B and C —
//! whose handlers compute for `work_a_us`, `work_b_us` and `work_c_us` microseconds of CPU work
//! (30, 150 and 300 in the seed): a loop that never calls the engine ([`crate::phold::work_us`]),
//! as the seed's phases are plain application code, so under `--preempt` only a tick that
//! preempts by interrupt can switch such an event off the CPU. After the third phase the run stays in phase C, so run it
//! with `--end` = 3 × `phase_length`.
//!
//! The model records committed events per phase (`phase_a_events`, …). Per-phase wall time and
//! efficiency (committed / processed) are executor figures: an executor that reports them per
//! virtual-time interval supplies the rest of the seed's Figure 6 and Table I.

use chronon::{Ctx, LpId, LpRng, Model, ModelStats, ReverseCtx, ReverseFn, SizeHint};

use crate::phold::work_us;

/// The three-phase PHOLD's parameters.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct PholdPhases {
    /// Mesh columns.
    pub width: u32,
    /// Mesh rows.
    pub height: u32,
    /// Whether the mesh wraps around (a torus).
    pub wrap: bool,
    /// Jobs each object starts with.
    pub jobs_per_object: u32,
    /// Minimum delay of every hop (the lookahead).
    pub lookahead: f64,
    /// Mean delay of every hop, lookahead included.
    pub mean: f64,
    /// Virtual duration of each phase.
    pub phase_length: f64,
    /// Busy work per event in phase A, in microseconds.
    pub work_a_us: f64,
    /// Busy work per event in phase B, in microseconds.
    pub work_b_us: f64,
    /// Busy work per event in phase C, in microseconds.
    pub work_c_us: f64,
}

impl Default for PholdPhases {
    /// The seed's configuration: 45 × 45 objects, 5 jobs each, 30 / 150 / 300 µs phases.
    fn default() -> Self {
        PholdPhases {
            width: 45,
            height: 45,
            wrap: false,
            jobs_per_object: 5,
            lookahead: 0.1,
            mean: 1.0,
            phase_length: 10.0,
            work_a_us: 30.0,
            work_b_us: 150.0,
            work_c_us: 300.0,
        }
    }
}

impl PholdPhases {
    /// The number of LPs: one per object.
    pub fn lps(&self) -> u32 {
        self.width.saturating_mul(self.height)
    }

    /// Checks the parameters; the error names the parameter and what is allowed.
    pub fn validate(&self) -> Result<(), String> {
        if self.width == 0 || self.height == 0 {
            return Err(format!(
                "width × height is {} × {}; both must be at least 1",
                self.width, self.height
            ));
        }
        if self.width.checked_mul(self.height).is_none() {
            return Err("width × height overflows; it must be below 2^32".into());
        }
        if self.width * self.height < 2 {
            return Err("width × height is 1; the mesh needs at least 2 objects".into());
        }
        crate::check::nonneg("lookahead", self.lookahead)?;
        crate::check::positive("mean", self.mean)?;
        if self.lookahead > self.mean {
            return Err(format!(
                "lookahead {} is greater than mean {}; it must be <= mean",
                self.lookahead, self.mean
            ));
        }
        crate::check::positive("phase-length", self.phase_length)?;
        crate::check::nonneg("work-a-us", self.work_a_us)?;
        crate::check::nonneg("work-b-us", self.work_b_us)?;
        crate::check::nonneg("work-c-us", self.work_c_us)?;
        Ok(())
    }

    /// The phase (0, 1 or 2) of time `t`.
    pub fn phase(&self, t: f64) -> usize {
        ((t / self.phase_length) as usize).min(2)
    }

    /// The mesh neighbours of object `lp` (2 to 4 of them; 4 on a torus of side >= 3).
    pub fn neighbours(&self, lp: LpId) -> Vec<LpId> {
        let (near, n) = self.near(lp);
        near[..n].to_vec()
    }

    /// The neighbours without allocating: an array and how many of it are used.
    fn near(&self, lp: LpId) -> ([LpId; 4], usize) {
        let (w, h) = (self.width, self.height);
        let (x, y) = (lp % w, lp / w);
        let mut out = [0; 4];
        let mut n = 0;
        let mut push = |nx: u32, ny: u32| {
            let id = ny * w + nx;
            if id != lp && !out[..n].contains(&id) {
                out[n] = id;
                n += 1;
            }
        };
        if x > 0 {
            push(x - 1, y);
        } else if self.wrap {
            push(w - 1, y);
        }
        if x + 1 < w {
            push(x + 1, y);
        } else if self.wrap {
            push(0, y);
        }
        if y > 0 {
            push(x, y - 1);
        } else if self.wrap {
            push(x, h - 1);
        }
        if y + 1 < h {
            push(x, y + 1);
        } else if self.wrap {
            push(x, 0);
        }
        (out, n)
    }

    fn delay(&self, rng: &mut LpRng) -> f64 {
        self.lookahead + rng.exponential_mean(self.mean - self.lookahead)
    }
}

/// One mesh object.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct MeshObject {
    /// Events handled in each phase.
    pub events: [u64; 3],
    /// Jobs that arrived from an object that is not a mesh neighbour (always 0).
    pub non_neighbour: u64,
}

/// A job hop; it names the object it came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Hop {
    /// The sender (the object itself for the initial jobs).
    pub from: LpId,
}

impl Model for PholdPhases {
    fn lp_count(&self) -> Option<chronon::LpId> {
        Some(self.lps())
    }

    type State = MeshObject;
    type Event = Hop;

    fn init(&self, ctx: &mut Ctx<'_, Self>) -> MeshObject {
        let me = ctx.me();
        for _ in 0..self.jobs_per_object {
            let d = self.delay(ctx.rng());
            ctx.send(me, d, Hop { from: me });
        }
        MeshObject::default()
    }

    fn on_event(&self, obj: &mut MeshObject, hop: &Hop, ctx: &mut Ctx<'_, Self>) {
        let me = ctx.me();
        let phase = self.phase(ctx.now());
        obj.events[phase] += 1;
        let (near, n) = self.near(me);
        let near = &near[..n];
        if hop.from != me && !near.contains(&hop.from) {
            obj.non_neighbour += 1;
        }
        let dst = near[ctx.rng().below(n as u64) as usize];
        let d = self.delay(ctx.rng());
        ctx.send(dst, d, Hop { from: me });
        work_us([self.work_a_us, self.work_b_us, self.work_c_us][phase]);
    }

    /// Each object keeps `jobs_per_object` jobs pending.
    fn size_hint(&self) -> SizeHint {
        SizeHint::pending(u64::from(self.jobs_per_object))
    }

    fn lookahead(&self) -> f64 {
        self.lookahead
    }

    /// An object sends only to its mesh neighbours, each at least `lookahead` ahead.
    fn topology(&self, lp: LpId) -> Option<Vec<(LpId, f64)>> {
        Some(
            self.neighbours(lp)
                .into_iter()
                .map(|d| (d, self.lookahead))
                .collect(),
        )
    }

    fn reverse_handler(&self) -> Option<ReverseFn<Self>> {
        Some(Self::undo)
    }

    fn finish(&self, _lp: LpId, obj: &MeshObject, stats: &mut ModelStats) {
        stats.add("phase_a_events", obj.events[0] as f64);
        stats.add("phase_b_events", obj.events[1] as f64);
        stats.add("phase_c_events", obj.events[2] as f64);
        stats.add("non_neighbour_hops", obj.non_neighbour as f64);
        stats.set("phase_length", self.phase_length);
    }
}

impl PholdPhases {
    /// The reverse handler ([`Model::reverse_handler`]): undoes `on_event`.
    fn undo(&self, obj: &mut MeshObject, hop: &Hop, ctx: &ReverseCtx) {
        obj.events[self.phase(ctx.now)] -= 1;
        let (near, n) = self.near(ctx.me);
        if hop.from != ctx.me && !near[..n].contains(&hop.from) {
            obj.non_neighbour -= 1;
        }
    }
}

// Plain data: may cross a process boundary (`--procs`).
#[cfg(target_os = "linux")]
chronon::impl_shm_safe!(Hop { from });
