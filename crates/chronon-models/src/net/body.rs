//! What a packet carries: its body, shared by every event that holds the packet (the copies of
//! a multicast emission, the event of each hop as a packet is forwarded), counted by the scheme
//! the network was built with ([`Refcount`], seed 001 §3.3).
//!
//! With [`Refcount::Heap`] (the default) a body is a [`BPtr`] into the engine's shared heap,
//! which any process of a multi-process run can read. With any other scheme it is a
//! [`chronon::refcount::Shared`] with that scheme, which only this process can read: a node
//! that forwards such a packet to a node held by another process (`Ctx::same_process`) copies
//! the body into the shared heap first ([`Body::for_process_of`]), so a process-local body
//! never crosses a process boundary and every scheme runs under `--procs` and MPI too.

use chronon::refcount::{
    Buffered, BufferedDeferred, Cas, LockAdd, Locked, PerThread, Scheme, Shared, XAdd,
};
use chronon::shm::{BPtr, Bytes, ShmSafe};
use chronon::Ctx;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::NetModel;

/// How the bodies that several events share are counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub enum Refcount {
    /// A `BPtr` into the engine's shared heap (an atomic count in the item's header), readable
    /// by every process of a multi-process run.
    #[default]
    Heap,
    /// `refcount::Locked`: a mutex around the count.
    Locked,
    /// `refcount::LockAdd`: `lock add`.
    LockAdd,
    /// `refcount::XAdd`: `lock xadd`.
    Xadd,
    /// `refcount::Cas`: a compare-exchange loop.
    Cas,
    /// `refcount::PerThread`: a count per thread.
    PerThread,
    /// `refcount::Buffered`: per-thread buffers, applied by the thread that fills one.
    Buffered,
    /// `refcount::BufferedDeferred`: per-thread buffers, applied by a dedicated thread.
    BufferedThread,
}

impl Refcount {
    /// Every scheme, in the order of [`Refcount::name`]'s list.
    pub const ALL: [Refcount; 8] = [
        Refcount::Heap,
        Refcount::Locked,
        Refcount::LockAdd,
        Refcount::Xadd,
        Refcount::Cas,
        Refcount::PerThread,
        Refcount::Buffered,
        Refcount::BufferedThread,
    ];

    /// The scheme's name (the `--refcount` value; the refcount schemes' own `Scheme::NAME`).
    pub fn name(self) -> &'static str {
        match self {
            Refcount::Heap => "heap",
            Refcount::Locked => Locked::NAME,
            Refcount::LockAdd => LockAdd::NAME,
            Refcount::Xadd => XAdd::NAME,
            Refcount::Cas => Cas::NAME,
            Refcount::PerThread => PerThread::NAME,
            Refcount::Buffered => Buffered::NAME,
            Refcount::BufferedThread => BufferedDeferred::NAME,
        }
    }

    /// Makes this thread's buffered counts stop holding back the other threads' frees until
    /// it counts again (`BufferedScheme::leave`); nothing for the other schemes.
    pub(super) fn leave(self) {
        match self {
            Refcount::Buffered => Buffered::leave(),
            Refcount::BufferedThread => BufferedDeferred::leave(),
            _ => {}
        }
    }
}

impl std::str::FromStr for Refcount {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Refcount::ALL
            .into_iter()
            .find(|r| r.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Refcount::ALL.iter().map(|r| r.name()).collect();
                format!("unknown refcount '{s}' (allowed: {})", names.join(", "))
            })
    }
}

/// Written as its name, in every format (read back through `FromStr`).
impl Serialize for Refcount {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl TryFrom<String> for Refcount {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        s.parse()
    }
}

/// The body of a packet in the engine's shared heap (one item per emission, plus one for its
/// bytes: a nested `BPtr`, which the copy transport copies too).
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct Payload {
    /// The emission's number at its source (the body's bytes are its low byte).
    pub seq: u64,
    /// The application data: `packet_bytes` bytes.
    pub body: BPtr<Bytes>,
    /// Whether it is a multicast body (else a unicast packet's, with `carry_data`).
    pub multicast: bool,
}

chronon::impl_item_serde!(Payload);

chronon::impl_shm_safe!(Payload {
    seq,
    body,
    multicast
});

/// The body of a packet in this process's memory (a [`Shared`] item).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LocalPayload {
    /// The emission's number at its source (the body's bytes are its low byte).
    pub seq: u64,
    /// The application data.
    pub bytes: Box<[u8]>,
    /// Whether it is a multicast body.
    pub multicast: bool,
}

macro_rules! bodies {
    ($($variant:ident: $scheme:ty),* $(,)?) => {
        /// A packet's body: one item, shared by every event that carries the packet; cloning a
        /// body counts a reference with the network's scheme ([`Refcount`]).
        #[derive(Clone, Debug)]
        pub enum Body {
            /// In the engine's shared heap ([`Refcount::Heap`]).
            Heap(BPtr<Payload>),
            $(
                #[doc = concat!("In this process, counted by `refcount::", stringify!($scheme), "`.")]
                $variant(Shared<LocalPayload, $scheme>),
            )*
        }

        impl Body {
            /// A body in this process's memory counted by `scheme`; `None` for
            /// [`Refcount::Heap`] (see [`Body::new`]).
            pub fn local(scheme: Refcount, payload: LocalPayload) -> Option<Body> {
                match scheme {
                    Refcount::Heap => None,
                    $( Refcount::$variant => Some(Body::$variant(Shared::new(payload))), )*
                }
            }

            /// The scheme counting this body.
            pub fn scheme(&self) -> Refcount {
                match self {
                    Body::Heap(_) => Refcount::Heap,
                    $( Body::$variant(_) => Refcount::$variant, )*
                }
            }

            /// The emission number, the data and whether it is a multicast body.
            pub fn view(&self) -> (u64, &[u8], bool) {
                match self {
                    Body::Heap(p) => (p.seq, p.body.as_slice(), p.multicast),
                    $( Body::$variant(p) => (p.seq, &p.bytes, p.multicast), )*
                }
            }

            /// Whether two bodies are one item (a clone of the other).
            pub fn ptr_eq(a: &Body, b: &Body) -> bool {
                match (a, b) {
                    (Body::Heap(x), Body::Heap(y)) => std::ptr::eq(&**x, &**y),
                    $( (Body::$variant(x), Body::$variant(y)) => Shared::ptr_eq(x, y), )*
                    _ => false,
                }
            }

            /// The payload of a body in this process's memory (`None`: in the shared heap).
            fn local_payload(&self) -> Option<&LocalPayload> {
                match self {
                    Body::Heap(_) => None,
                    $( Body::$variant(p) => Some(p), )*
                }
            }

            /// A reference of its own for a byte copy of this body (see `fixup_copy` below).
            fn recount(&mut self) {
                match self {
                    // Safety: forwarded from `fixup_copy`'s contract (a byte copy of a live
                    // body, whose count it does not release).
                    Body::Heap(p) => unsafe { p.fixup_copy() },
                    $( Body::$variant(p) => {
                        let own = p.clone();
                        // Safety: `*p` is a byte copy that holds no count of its own: it is
                        // overwritten, never dropped.
                        unsafe { std::ptr::write(p, own) }
                    } )*
                }
            }
        }
    };
}

bodies!(
    Locked: Locked,
    LockAdd: LockAdd,
    Xadd: XAdd,
    Cas: Cas,
    PerThread: PerThread,
    Buffered: Buffered,
    BufferedThread: BufferedDeferred,
);

impl Body {
    /// A new body of `bytes` bytes, each the low byte of `seq`, counted by `scheme`.
    pub fn new<M: chronon::Model>(
        scheme: Refcount,
        seq: u64,
        bytes: u32,
        multicast: bool,
        ctx: &mut Ctx<'_, M>,
    ) -> Body {
        let fill = (seq & 0xff) as u8;
        if scheme == Refcount::Heap {
            return Body::Heap(heap_payload(seq, bytes as usize, multicast, ctx, |b| {
                b.fill(fill)
            }));
        }
        let local = LocalPayload {
            seq,
            bytes: vec![fill; bytes as usize].into_boxed_slice(),
            multicast,
        };
        Body::local(scheme, local).expect("a scheme other than heap keeps bodies in this process")
    }

    /// This body, or a shared-heap copy of it when it lives in this process's memory and
    /// `dst` is held by another process.
    pub fn for_process_of<M: chronon::Model>(self, dst: u32, ctx: &mut Ctx<'_, M>) -> Body {
        if matches!(self, Body::Heap(_)) || ctx.same_process(dst) {
            return self;
        }
        let (seq, bytes, multicast) = self.view();
        Body::Heap(heap_payload(seq, bytes.len(), multicast, ctx, |b| {
            b.copy_from_slice(bytes)
        }))
    }
}

/// A shared-heap body of `len` bytes written by `write`.
fn heap_payload<M: chronon::Model>(
    seq: u64,
    len: usize,
    multicast: bool,
    ctx: &mut Ctx<'_, M>,
    write: impl FnOnce(&mut [u8]),
) -> BPtr<Payload> {
    let body = ctx.alloc_bytes_with(len, write);
    ctx.alloc_shared(Payload {
        seq,
        body,
        multicast,
    })
}

// Safety: `Heap` holds a `BPtr` (`ShmSafe`, visited by `fixup_copy`). The other variants hold
// an address in this process's memory and are read only in this process: a node sends a
// packet to a node of another process only after `Body::for_process_of` (every send of
// `NetModel::on_event` to another node), which replaces such a body by a `Heap` copy; every
// other send (a source's emissions, `init`'s and `on_event`'s) goes to the sending node itself,
// in its own process; and an event never moves to a process other than its destination's (no
// load balancing across processes: refused before such a run starts). Such a body may still
// pass through shared memory (a ring between two threads of one process) but is read only in
// this process. The copy transport's byte copy takes a reference of its own (`recount`).
unsafe impl ShmSafe for Body {
    unsafe fn fixup_copy(&mut self) {
        self.recount();
    }
}

/// How a body is written by serde (MPI, checkpoints): a shared-heap item by its own serde, a
/// process-local one by value with its scheme, read back as a new item of that scheme.
#[derive(Serialize)]
enum WireRef<'a> {
    Heap(&'a BPtr<Payload>),
    Local(Refcount, &'a LocalPayload),
}

#[derive(Deserialize)]
enum Wire {
    Heap(BPtr<Payload>),
    Local(Refcount, LocalPayload),
}

impl Serialize for Body {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let wire = match self {
            Body::Heap(p) => WireRef::Heap(p),
            other => match other.local_payload() {
                Some(p) => WireRef::Local(other.scheme(), p),
                None => return Err(serde::ser::Error::custom("a body with no payload")),
            },
        };
        wire.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Body {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Wire::deserialize(d)? {
            Wire::Heap(p) => Ok(Body::Heap(p)),
            Wire::Local(scheme, payload) => Body::local(scheme, payload)
                .ok_or_else(|| serde::de::Error::custom("a process-local body names no scheme")),
        }
    }
}

impl NetModel {
    /// The scheme that counts this network's packet bodies.
    pub fn refcount(&self) -> Refcount {
        self.refcount
    }
}
