//! `BPtr<T>`: a reference-counted pointer into a shared heap that means the same thing in every
//! process (seed 000 §3.3.3, "Smart Pointers").

use std::fmt;
use std::marker::PhantomData;
use std::mem::size_of;
use std::ops::Deref;
use std::sync::atomic::{fence, Ordering};

use super::heap::{self, ItemHeader};
use super::{registry, Heap, HeapError, ShmSafe};

/// A counted reference to a `T` in some process's shared heap: (heap number, offset), 8 bytes.
/// It dereferences to `&T` in every process that mapped the heap (the base differs per
/// process; it is looked up in this process's table, mapping the heap on first use). Cloning
/// and dropping change the item's count with atomics in shared memory, from any process; the
/// last drop makes the item dormant with this thread's simulation time ([`heap::set_time`])
/// as its time-to-zero, and the owner reuses it only once GVT has passed that time.
///
/// In a single-process run it is an ordinary shared pointer into this process's heap.
pub struct BPtr<T: ShmSafe> {
    heap: u32,
    off: u32,
    _item: PhantomData<T>,
}

// Safety: a `BPtr` is (heap number, offset), which means the same item in every process that
// maps the heap; it holds no address of this process.
unsafe impl<T: ShmSafe> ShmSafe for BPtr<T> {
    /// The copy transport: a fresh item in this thread's heap with a byte copy of the item's
    /// `used` bytes, whose own `BPtr`s are copied in turn; `self` is overwritten, not dropped.
    unsafe fn fixup_copy(&mut self) {
        let (heap, off) = (self.heap, self.off);
        // Safety: `self` is a byte copy of a live `BPtr`, so the item is live and mapped.
        let copied = super::local::with_thread_heap(|h| unsafe { h.copy_item(heap, off) })
            .and_then(|r| r)
            .unwrap_or_else(|e| panic!("copy transport: {e}"));
        let mut fresh = std::mem::ManuallyDrop::new(BPtr::<T>::from_parts(copied.0, copied.1));
        // Safety: the fresh item is ours alone (count 1, not shared yet) and holds a byte copy
        // of a live `T`, whose nested `BPtr`s must now get their own copies.
        unsafe { (*fresh.item().1.cast_mut()).fixup_copy() };
        // Safety: overwrites the byte copy without releasing it (it held no count).
        unsafe { std::ptr::write(self, std::mem::ManuallyDrop::take(&mut fresh)) };
    }
}

const _: () = assert!(size_of::<BPtr<[u8; 1000]>>() == 8);

impl<T: ShmSafe> BPtr<T> {
    /// Moves `value` into `heap` (this process's own) and returns the first reference.
    pub fn new_in(heap: &mut Heap, value: T) -> Result<BPtr<T>, HeapError> {
        heap.alloc(value)
    }

    /// Moves `value` into this thread's shared heap (the one `Ctx::alloc_shared` uses).
    pub fn new(value: T) -> Result<BPtr<T>, HeapError> {
        super::local::with_thread_heap(|h| h.alloc(value)).and_then(|r| r)
    }

    pub(crate) fn from_parts(heap: u32, off: u32) -> Self {
        BPtr {
            heap,
            off,
            _item: PhantomData,
        }
    }

    /// The heap number and the offset of the item in it.
    pub fn parts(&self) -> (u32, u32) {
        (self.heap, self.off)
    }

    fn item(&self) -> (&ItemHeader, *const T) {
        let base = registry::base(self.heap);
        // Safety: a live `BPtr` keeps its item's count above zero, so the item holds an
        // initialized `T` that nobody writes (items are immutable once shared) and the
        // segment stays mapped for the life of the process (registry.rs).
        unsafe {
            let h = &*base.add(self.off as usize).cast::<ItemHeader>();
            (h, base.add(h.data as usize).cast::<T>())
        }
    }

    /// The address of the item's data in this process.
    pub(crate) fn data_ptr(&self) -> *const u8 {
        self.item().1.cast()
    }

    /// The item's header fields `used` and `flags`.
    pub(crate) fn used_flags(&self) -> (u32, u32) {
        let h = self.item().0;
        (h.used, h.flags)
    }

    /// The item's current reference count over all processes (a snapshot).
    pub fn ref_count(this: &Self) -> u32 {
        this.item().0.refs.load(Ordering::SeqCst)
    }

    /// Drops this reference as if at simulation time `now` (instead of the thread's time).
    pub fn release_at(self, now: f64) {
        let this = std::mem::ManuallyDrop::new(self);
        // Safety: `this` is never used again.
        unsafe { release(&this, now) };
    }
}

/// Drops one reference; if it was the last, drops the value and returns the item.
///
/// # Safety
/// `p` is not used afterwards.
unsafe fn release<T: ShmSafe>(p: &BPtr<T>, now: f64) {
    let (item, value) = p.item();
    // Ordering: Release, so this process's uses of the item happen before the last drop's
    // Acquire fence below (as in `Arc`).
    if item.refs.fetch_sub(1, Ordering::Release) != 1 {
        return;
    }
    // Ordering: Acquire pairs with every other dropper's Release decrement.
    fence(Ordering::Acquire);
    // Safety: the count is zero: this is the only reference left, so we own the value; it is
    // dropped once (nested `BPtr`s inside are released the same way, at the same time).
    unsafe {
        std::ptr::drop_in_place(value.cast_mut());
        heap::give_back(p.heap, p.off, now);
    }
}

impl<T: ShmSafe> Drop for BPtr<T> {
    fn drop(&mut self) {
        // Platform mode: a last drop gives the block back to this thread's heap.
        let _p = crate::preempt::interrupt::Platform::enter();
        // Safety: `self` is being dropped.
        unsafe { release(self, heap::time()) };
    }
}

impl<T: ShmSafe> Clone for BPtr<T> {
    fn clone(&self) -> Self {
        // Ordering: Relaxed: a new reference can only be made from an existing one, which
        // keeps the item alive; the clone reaches other processes through a publishing send
        // (as for `Arc::clone`).
        let old = self.item().0.refs.fetch_add(1, Ordering::Relaxed);
        assert!(old < u32::MAX / 2, "BPtr reference count overflow");
        BPtr::from_parts(self.heap, self.off)
    }
}

impl<T: ShmSafe> Deref for BPtr<T> {
    type Target = T;
    fn deref(&self) -> &T {
        // Safety: see `item`: initialized, immutable while shared, mapped for good.
        unsafe { &*self.item().1 }
    }
}

impl<T: ShmSafe + fmt::Debug> fmt::Debug for BPtr<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BPtr")
            .field("heap", &self.heap)
            .field("off", &self.off)
            .field("value", &**self)
            .finish()
    }
}

impl<T: ShmSafe + PartialEq> PartialEq for BPtr<T> {
    /// Compares the values (not the items).
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl<T: ShmSafe + Copy + PartialEq> PartialEq for BPtr<super::Slice<T>> {
    /// Compares the elements (untouched items: their lengths, and both untouched).
    fn eq(&self, other: &Self) -> bool {
        match (self.is_touched(), other.is_touched()) {
            (true, true) => self.as_slice() == other.as_slice(),
            (a, b) => a == b && self.len() == other.len(),
        }
    }
}
