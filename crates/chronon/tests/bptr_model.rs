//! A model whose events carry shared-heap payloads (`BPtr`s, nested, forwarded and fresh),
//! shared by the `bptr_*` test binaries (included with `#[path]`).

use chronon::shm::{BPtr, Bytes};
use chronon::{Ctx, LpId, Model, ModelStats};

/// Parcels travel between LPs; each carries a body of bytes and a header with a nested body.
pub struct Courier {
    /// An LP that leaks one payload (`mem::forget`) at its first event, for the leak check.
    pub leak_at: Option<LpId>,
}

pub struct Meta {
    pub id: u64,
    pub inner: BPtr<[u64; 4]>,
}
chronon::impl_shm_safe!(Meta { id, inner });

pub struct Parcel {
    pub hops: u32,
    pub body: BPtr<Bytes>,
    pub meta: BPtr<Meta>,
}
chronon::impl_shm_safe!(Parcel { hops, body, meta });

fn fresh(ctx: &mut Ctx<'_, Courier>, id: u64) -> Parcel {
    let len = 16 + (id % 200) as usize;
    let body = ctx.alloc_bytes_with(len, |b| {
        for (i, x) in b.iter_mut().enumerate() {
            *x = (id as u8).wrapping_add(i as u8);
        }
    });
    let inner = ctx.alloc_shared([id, id * 2, id * 3, id * 4]);
    let meta = ctx.alloc_shared(Meta { id, inner });
    Parcel {
        hops: 0,
        body,
        meta,
    }
}

/// (events, payload sum, bad payloads, leaked)
pub type St = (u64, u64, u64, bool);

impl Model for Courier {
    type State = St;
    type Event = Parcel;

    fn init(&self, ctx: &mut Ctx<'_, Self>) -> St {
        for k in 0..2 {
            let id = u64::from(ctx.me()) * 10 + k;
            let p = fresh(ctx, id);
            let delay = 1.0 + ctx.rng().exponential_mean(1.0);
            ctx.send(ctx.me(), delay, p);
        }
        (0, 0, 0, false)
    }

    fn on_event(&self, st: &mut St, p: &Parcel, ctx: &mut Ctx<'_, Self>) {
        st.0 += 1;
        let id = p.meta.id;
        let body = p.body.as_slice();
        let ok = body.len() == 16 + (id % 200) as usize
            && body
                .iter()
                .enumerate()
                .all(|(i, &x)| x == (id as u8).wrapping_add(i as u8))
            && *p.meta.inner == [id, id * 2, id * 3, id * 4];
        st.2 += u64::from(!ok);
        st.1 =
            st.1.wrapping_add(body.iter().map(|&b| u64::from(b)).sum::<u64>());
        if self.leak_at == Some(ctx.me()) && !st.3 {
            st.3 = true;
            std::mem::forget(p.body.clone());
        }
        let next = (ctx.me() + 1 + ctx.rng().below(3) as LpId) % ctx.lps();
        let delay = 1.0 + ctx.rng().exponential_mean(1.0);
        // Every third hop a fresh parcel, else the same items forwarded (shared, not copied).
        let out = if p.hops % 3 == 2 {
            fresh(ctx, id + 1000)
        } else {
            Parcel {
                hops: p.hops + 1,
                body: p.body.clone(),
                meta: p.meta.clone(),
            }
        };
        ctx.send(next, delay, out);
    }

    fn lookahead(&self) -> f64 {
        1.0
    }

    fn finish(&self, _lp: LpId, st: &St, stats: &mut ModelStats) {
        stats.add("events", st.0 as f64);
        stats.add("payload_sum", st.1 as f64);
        stats.add("bad_payloads", st.2 as f64);
    }
}
