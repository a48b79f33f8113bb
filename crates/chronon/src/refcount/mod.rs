//! Thread-safe reference counting (seed 001 §3.3): one counted handle, [`Shared<T, S>`], with
//! the seed's counting schemes behind it.
//!
//! A payload that several events share (a packet broadcast to many LPs) is allocated once and
//! handed out as clones of one [`Shared`]; the last clone to go frees it. Events move between
//! worker threads, so the count must be thread-safe, and the seed measured several ways of
//! making it so. Each is a [`Scheme`]:
//!
//! | scheme | seed | a clone / a drop costs |
//! |---|---|---|
//! | [`Locked`] | §3.3.1 | a mutex lock and unlock |
//! | [`LockAdd`] | §3.3.2 | one `lock add` / `lock sub` (no old value read back) |
//! | [`XAdd`] (default) | §3.3.2 *exchange-and-add* | one `lock xadd` (the old value is checked) |
//! | [`Cas`] | §3.3.2 *compare-and-exchange* | a compare-exchange loop; the last drop only reads |
//! | [`PerThread`] | §3.3.3 (the smart-pointer way) | a count private to the thread; the shared count changes only when a thread starts or stops holding the value |
//! | [`Buffered`] | §3.3.4, immediate application | a push into a per-thread buffer; full buffers are applied by the thread that fills them |
//! | [`BufferedDeferred`] | §3.3.4, dedicated thread | the same, applied by a dedicated thread |
//!
//! `chronon bench refcount` measures them in the layout of the seed's Tables 3–8 (see
//! docs/experiments.md, 001-refcount); the default, [`XAdd`], is the fastest there in a model run on this
//! machine. The protocols, their invariants and proof sketches are in this folder's README.
//!
//! ```
//! use chronon::refcount::{Shared, Buffered};
//!
//! let packet = Shared::<_>::new([7u8; 64]); // the default scheme
//! let copies: Vec<_> = (0..4).map(|_| packet.clone()).collect();
//! assert_eq!(copies[3][0], 7);
//!
//! let buffered = Shared::<_, Buffered>::new(String::from("sent to many"));
//! let copy = buffered.clone();
//! assert_eq!(&*copy, "sent to many");
//! ```

mod buffered;
mod counters;
mod per_thread;

#[cfg(all(test, chronon_loom))]
mod loom_tests;
#[cfg(all(test, not(chronon_loom)))]
mod tests;

use std::fmt;
use std::marker::PhantomData;
use std::ops::Deref;
use std::ptr::NonNull;

pub use buffered::{set_buffer_capacity, Buffered, BufferedDeferred, BufferedScheme};
pub use counters::{Cas, LockAdd, Locked, XAdd};
pub use per_thread::PerThread;

/// The scheme [`Shared`] uses when none is named.
pub type DefaultScheme = XAdd;

/// A type-erased pointer to a shared allocation and the function that frees it: what a scheme
/// needs to free an item it no longer knows the type of (the buffered schemes keep these in
/// their buffers).
#[derive(Clone, Copy, Debug)]
pub struct Raw {
    ptr: NonNull<u8>,
    free: unsafe fn(NonNull<u8>),
}

// Safety: a `Raw` is only an address and a function pointer; whoever calls `free` must own
// the last reference (the schemes guarantee that), and `Shared<T>` requires `T: Send + Sync`.
unsafe impl Send for Raw {}

impl Raw {
    /// The allocation's header (the header is the first field of a `#[repr(C)]` item).
    pub fn header<S: Scheme>(self) -> *const S::Header {
        self.ptr.as_ptr().cast::<S::Header>()
    }

    /// Frees the item: drops its value and returns its memory.
    ///
    /// # Safety
    /// The caller owns the last reference to the item, and calls this once.
    pub unsafe fn free(self) {
        // Safety: as the caller promises.
        unsafe { (self.free)(self.ptr) }
    }
}

/// A way of counting the references to a shared item.
///
/// # Safety
/// An implementation frees an item (calls [`Raw::free`]) exactly once, after every handle's
/// `drop_ref` has been called and never before: no handle may observe freed memory.
pub unsafe trait Scheme: Sized + Send + Sync + 'static {
    /// The name used in benchmark tables.
    const NAME: &'static str;
    /// Stored at the start of every item.
    type Header: Send + Sync;
    /// Stored in every handle beside the item's address.
    type Local: Send + Sync;

    /// The header of a new item with one reference.
    fn new_header() -> Self::Header;
    /// The local part of an item's first handle.
    fn first_local(header: &Self::Header) -> Self::Local;
    /// Counts one more reference, made from the handle whose local part is `local`, and returns
    /// the new handle's local part.
    ///
    /// # Safety
    /// `header` belongs to a live item and `local` to a live handle of it.
    unsafe fn clone_ref(header: &Self::Header, local: &Self::Local, raw: Raw) -> Self::Local;
    /// Drops one reference; frees the item through `raw` when it was the last.
    ///
    /// # Safety
    /// `raw` is the item of the handle being dropped, `local` its local part, called once per
    /// handle.
    unsafe fn drop_ref(local: &mut Self::Local, raw: Raw);

    /// Applies whatever this thread has recorded but not applied yet, and returns once it is
    /// applied. Nothing to do for schemes that count immediately (the default); the buffered
    /// schemes push this thread's buffers ([`BufferedScheme::flush`]).
    fn flush() {}
}

#[repr(C)]
struct Item<T, S: Scheme> {
    header: S::Header,
    value: T,
}

/// A counted handle to a value shared by several events, threads or LPs (seed 001 §3.3).
///
/// Cloning counts a reference; dropping the last clone frees the value. The scheme `S` decides
/// how references are counted (see the [module docs](self)); every scheme frees the value
/// exactly once. Unlike `std::sync::Arc`, the counting scheme is a parameter, so the seed's
/// variants can be compared on the same model.
pub struct Shared<T: Send + Sync + 'static, S: Scheme = DefaultScheme> {
    item: NonNull<Item<T, S>>,
    local: S::Local,
    _owns: PhantomData<Item<T, S>>,
}

// Safety: a `Shared` gives out `&T` only, from any thread, so it is `Send` and `Sync` when
// `T` is both (as `Arc<T>`); the schemes' headers and locals are `Send + Sync`.
unsafe impl<T: Send + Sync, S: Scheme> Send for Shared<T, S> {}
// Safety: as for `Send`.
unsafe impl<T: Send + Sync, S: Scheme> Sync for Shared<T, S> {}

/// Drops an item allocated by `Shared::new`.
///
/// # Safety
/// `ptr` came from `Box::<Item<T, S>>::into_raw`, and no reference to it remains.
unsafe fn free_item<T: Send + Sync + 'static, S: Scheme>(ptr: NonNull<u8>) {
    // Safety: as the caller promises.
    drop(unsafe { Box::from_raw(ptr.as_ptr().cast::<Item<T, S>>()) });
}

impl<T: Send + Sync + 'static, S: Scheme> Shared<T, S> {
    /// Allocates `value` with one reference: this handle.
    pub fn new(value: T) -> Self {
        // Platform mode, as in `clone`.
        let _p = crate::preempt::interrupt::Platform::enter();
        let item = Box::new(Item::<T, S> {
            header: S::new_header(),
            value,
        });
        let local = S::first_local(&item.header);
        Shared {
            item: NonNull::from(Box::leak(item)),
            local,
            _owns: PhantomData,
        }
    }

    /// Whether two handles share one value.
    pub fn ptr_eq(a: &Self, b: &Self) -> bool {
        a.item == b.item
    }

    fn raw(&self) -> Raw {
        Raw {
            ptr: self.item.cast(),
            free: free_item::<T, S>,
        }
    }
}

impl<T: Send + Sync + 'static, S: Scheme> Deref for Shared<T, S> {
    type Target = T;

    fn deref(&self) -> &T {
        // Safety: this handle's reference keeps the item alive (the scheme's contract).
        unsafe { &self.item.as_ref().value }
    }
}

impl<T: Send + Sync + 'static, S: Scheme> Clone for Shared<T, S> {
    fn clone(&self) -> Self {
        // Platform mode: a scheme may hold a lock or a thread's buffers meanwhile, which no
        // tick may leave held by a suspended event (preempt/README.md, "Ticks that preempt").
        let _p = crate::preempt::interrupt::Platform::enter();
        // Safety: this handle keeps the item alive while the reference is counted.
        let local = unsafe { S::clone_ref(&self.item.as_ref().header, &self.local, self.raw()) };
        Shared {
            item: self.item,
            local,
            _owns: PhantomData,
        }
    }
}

impl<T: Send + Sync + 'static, S: Scheme> Drop for Shared<T, S> {
    fn drop(&mut self) {
        // Platform mode, as in `clone`.
        let _p = crate::preempt::interrupt::Platform::enter();
        let raw = self.raw();
        // Safety: called once, for this handle.
        unsafe { S::drop_ref(&mut self.local, raw) }
    }
}

impl<T: Send + Sync + fmt::Debug + 'static, S: Scheme> fmt::Debug for Shared<T, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Shared").field(&**self).finish()
    }
}
