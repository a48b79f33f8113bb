//! What may cross a process boundary, checked by the type system.
//!
//! A value that another process reads out of shared memory (a ring record, a shared-heap item)
//! must mean the same thing there: no address of this process's memory may hide inside it.
//! [`ShmSafe`] marks such types. It is implemented for plain data (integers, floats, `bool`,
//! `char`, `()`), arrays, tuples and `Option` of them, and for [`BPtr`](super::BPtr) (a heap
//! number and an offset, valid in every process); not for `Box`, `Vec`, `String`, `Rc`, `Arc` or
//! references. A user's struct gets it with [`impl_shm_safe!`](crate::impl_shm_safe), which
//! checks every field.
//!
//! ```compile_fail
//! use chronon::shm::ShmSafe;
//! fn cross<T: ShmSafe>(_: T) {}
//! cross(vec![1u8, 2, 3]); // error: `Vec<u8>` cannot cross a process boundary
//! ```
//!
//! ```compile_fail
//! struct Job { hops: u32, route: Vec<u32> }
//! chronon::impl_shm_safe!(Job { hops, route }); // error: `Vec<u32>` ... not `ShmSafe`
//! ```
//!
//! ```
//! #[derive(Clone, Copy)]
//! struct Job { hops: u32, weight: [f64; 4] }
//! chronon::impl_shm_safe!(Job { hops, weight });
//! fn cross<T: chronon::shm::ShmSafe>(_: T) {}
//! cross(Job { hops: 1, weight: [0.0; 4] });
//! ```

/// A type whose values may be moved into shared memory and read by another process: it holds
/// no pointer into one process's address space.
///
/// # Safety
/// Implement it only for types every field of which is `ShmSafe` (plain data, arrays,
/// [`BPtr`](super::BPtr)); [`impl_shm_safe!`](crate::impl_shm_safe) checks that for you. A
/// type with a `Box`, `Vec`, `String`, reference, raw pointer, `Rc`/`Arc` or function pointer
/// inside is not `ShmSafe`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot cross a process boundary: it may hold a pointer into one process's memory",
    label = "not `ShmSafe`",
    note = "only plain data, arrays and tuples of it, and `BPtr`s into a shared heap may travel between processes",
    note = "put variable-size data (a `Vec`, a `String`) in a shared-heap item and send its `BPtr`; mark your own struct with `chronon::impl_shm_safe!`"
)]
pub unsafe trait ShmSafe: Send + Sync + 'static {
    /// The copy transport (`--payload copy`): `self` is a byte copy of a value that still
    /// exists; replace every [`BPtr`](super::BPtr) inside by a reference to a fresh byte copy of
    /// its item in this thread's shared heap (the old reference is *forgotten*, not released:
    /// the byte copy holds no count of its own). Plain data has nothing to do (the default);
    /// [`impl_shm_safe!`](crate::impl_shm_safe) visits every field. A hand-written impl for a
    /// type with `BPtr`s inside must visit them, or the copy transport shares their items
    /// (zero copy) instead of copying them.
    ///
    /// # Safety
    /// Only for a byte copy of a live value whose `BPtr`s' counts the caller does not release
    /// through this copy. Implement it (visiting every field that may hold a `BPtr`) for an
    /// enum or a hand-written impl; never call it outside the copy transport.
    unsafe fn fixup_copy(&mut self) {}
}

macro_rules! plain {
    ($($t:ty),* $(,)?) => { $(
        // Safety: plain data, no pointers.
        unsafe impl ShmSafe for $t {}
    )* };
}
plain!(
    u8,
    u16,
    u32,
    u64,
    u128,
    usize,
    i8,
    i16,
    i32,
    i64,
    i128,
    isize,
    f32,
    f64,
    bool,
    char,
    ()
);

// Safety: an array of pointer-free values holds no pointer.
unsafe impl<T: ShmSafe, const N: usize> ShmSafe for [T; N] {
    unsafe fn fixup_copy(&mut self) {
        for v in self {
            // Safety: forwarded from the caller.
            unsafe { v.fixup_copy() };
        }
    }
}
// Safety: an option of a pointer-free value holds no pointer.
unsafe impl<T: ShmSafe> ShmSafe for Option<T> {
    unsafe fn fixup_copy(&mut self) {
        if let Some(v) = self {
            // Safety: forwarded from the caller.
            unsafe { v.fixup_copy() };
        }
    }
}

macro_rules! tuples {
    ($(($($n:ident),+)),* $(,)?) => { $(
        // Safety: every element is `ShmSafe`.
        unsafe impl<$($n: ShmSafe),+> ShmSafe for ($($n,)+) {
            #[allow(non_snake_case)]
            unsafe fn fixup_copy(&mut self) {
                let ($($n,)+) = self;
                // Safety: forwarded from the caller.
                $( unsafe { $n.fixup_copy() }; )+
            }
        }
    )* };
}
tuples!(
    (A),
    (A, B),
    (A, B, C),
    (A, B, C, D),
    (A, B, C, D, E),
    (A, B, C, D, E, F)
);

/// Implements [`ShmSafe`](crate::shm::ShmSafe) for a struct or an enum after checking, at
/// compile time, that *every* field is `ShmSafe` (the lists must be complete: they are matched
/// as exhaustive patterns, so a field or a variant left out does not compile). Non-generic
/// structs with named fields; non-generic enums whose variants are units, tuples or records
/// (name a tuple variant's fields with any identifiers).
///
/// ```
/// struct Packet { id: u64, size: u32, data: chronon::shm::BPtr<[u8; 256]> }
/// chronon::impl_shm_safe!(Packet { id, size, data });
///
/// enum Msg { Arrive(u32, f64), Depart { id: u32 }, Tick, Carry(Packet) }
/// chronon::impl_shm_safe!(enum Msg { Arrive(station, at), Depart { id }, Tick, Carry(p) });
/// ```
///
/// A variant left out is an error:
///
/// ```compile_fail
/// enum Msg { Arrive(u32), Tick }
/// chronon::impl_shm_safe!(enum Msg { Arrive(station) });
/// ```
///
/// and so is a field that could not cross a process boundary:
///
/// ```compile_fail
/// enum Msg { Route(Vec<u32>), Tick }
/// chronon::impl_shm_safe!(enum Msg { Route(hops), Tick });
/// ```
#[macro_export]
macro_rules! impl_shm_safe {
    (enum $name:ident {
        $( $variant:ident $( ( $($tf:ident),* $(,)? ) )? $( { $($sf:ident),* $(,)? } )? ),* $(,)?
    }) => {
        // A check made by the compiler, never called: every field of every variant is
        // `ShmSafe`.
        #[allow(unused_variables)]
        const _: fn(&$name) = |v: &$name| {
            fn is_shm_safe<T: $crate::shm::ShmSafe>(_: &T) {}
            match v {
                $(
                    $name::$variant $( ( $($tf),* ) )? $( { $($sf),* } )? => {
                        $( $( is_shm_safe($tf); )* )?
                        $( $( is_shm_safe($sf); )* )?
                    }
                )*
            }
        };
        // Safety: every field of every variant was just checked to be `ShmSafe` (the match
        // above is exhaustive, so no variant or field was left out), and a discriminant is
        // plain data.
        unsafe impl $crate::shm::ShmSafe for $name {
            #[allow(unused_variables)]
            unsafe fn fixup_copy(&mut self) {
                match self {
                    $(
                        $name::$variant $( ( $($tf),* ) )? $( { $($sf),* } )? => {
                            // Safety: forwarded from the caller, field by field.
                            $( $( unsafe { $crate::shm::ShmSafe::fixup_copy($tf) }; )* )?
                            $( $( unsafe { $crate::shm::ShmSafe::fixup_copy($sf) }; )* )?
                        }
                    )*
                }
            }
        }
    };
    ($name:ident { $($field:ident),* $(,)? }) => {
        // A check made by the compiler, never called: every field is `ShmSafe`.
        const _: fn(&$name) = |v: &$name| {
            fn is_shm_safe<T: $crate::shm::ShmSafe>(_: &T) {}
            let $name { $($field),* } = v;
            $( is_shm_safe($field); )*
        };
        // Safety: every field was just checked to be `ShmSafe`, and the pattern above is
        // exhaustive, so no field was left out.
        unsafe impl $crate::shm::ShmSafe for $name {
            unsafe fn fixup_copy(&mut self) {
                let $name { $($field),* } = self;
                // Safety: forwarded from the caller, field by field.
                $( unsafe { $crate::shm::ShmSafe::fixup_copy($field) }; )*
            }
        }
    };
}

// Safety: an event is its key fields, destination and tag (plain data) and its payload, which
// is `ShmSafe`.
unsafe impl<P: ShmSafe> ShmSafe for crate::event::Event<P> {
    unsafe fn fixup_copy(&mut self) {
        // Safety: forwarded from the caller.
        unsafe { self.payload.fixup_copy() };
    }
}

/// The copy transport's copy of `value`: a byte copy whose `BPtr`s point to fresh copies of
/// their items in this thread's heap; `value` is dropped (releasing its references).
// Only the copy transport calls it (compiled out under loom).
#[cfg_attr(any(chronon_loom, not(target_os = "linux")), allow(dead_code))]
pub(crate) fn deep_copy<T: ShmSafe>(value: T) -> T {
    // Safety: a byte copy of a live value; its `BPtr`s are replaced (not released) by
    // `fixup_copy`, and the original is dropped normally once the copy is independent.
    // If a copy fails (a panic), the partial copy is leaked, never released twice.
    let mut copy = std::mem::ManuallyDrop::new(unsafe { std::ptr::read(&value) });
    // Safety: as above.
    unsafe { copy.fixup_copy() };
    drop(value);
    std::mem::ManuallyDrop::into_inner(copy)
}
