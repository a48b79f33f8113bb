//! Items of a runtime size: [`Slice<T>`] (and [`Bytes`] = `Slice<u8>`): `len` values of `T` in
//! one shared-heap item, so a `BPtr<Bytes>` carries a variable-size payload (SimpleSim's
//! message, a packet's data, a list of requests) in 8 bytes. The length and whether the values
//! were written live in the item's header (`used`, `flags`), not in the data: a payload the
//! model never touches is never touched by the heap either.

use std::marker::PhantomData;
use std::mem::{align_of, size_of};

use super::{BPtr, Heap, HeapError, ShmSafe, ITEM_ALIGN};

/// The type of a shared-heap item that holds a runtime number of `T`s. It has no fields of
/// its own: reach the values through [`BPtr::as_slice`] and the length through [`BPtr::len`].
#[derive(Debug)]
pub struct Slice<T> {
    _t: PhantomData<T>,
}

/// A shared-heap byte array of a runtime length.
pub type Bytes = Slice<u8>;

// Safety: the elements are `ShmSafe + Copy` values (`Copy` excludes `BPtr`s, so a byte copy
// of the item is a valid independent value); the type itself holds nothing.
unsafe impl<T: ShmSafe + Copy> ShmSafe for Slice<T> {}

/// `flags` bit: the elements were written.
const TOUCHED: u32 = 1;

fn bytes_for<T>(len: usize) -> Result<usize, HeapError> {
    assert!(size_of::<T>() > 0, "Slice elements must have a size");
    assert!(
        align_of::<T>() <= ITEM_ALIGN,
        "Slice elements may be at most 32-aligned"
    );
    len.checked_mul(size_of::<T>())
        .filter(|&b| b <= u32::MAX as usize)
        .ok_or(HeapError::TooLarge {
            size: usize::MAX,
            align: align_of::<T>(),
            largest: 0,
        })
}

impl Heap {
    fn alloc_slice_raw<T: ShmSafe + Copy>(
        &mut self,
        len: usize,
        touched: bool,
    ) -> Result<(u32, u32, *mut T), HeapError> {
        let size = bytes_for::<T>(len)?;
        let (heap, off, data) = self.alloc_raw(size, align_of::<T>())?;
        self.set_flags(heap, off, if touched { TOUCHED } else { 0 });
        Ok((heap, off, data.cast::<T>()))
    }

    /// A new item holding a copy of `src`.
    pub fn alloc_slice<T: ShmSafe + Copy>(
        &mut self,
        src: &[T],
    ) -> Result<BPtr<Slice<T>>, HeapError> {
        let (heap, off, data) = self.alloc_slice_raw::<T>(src.len(), true)?;
        // Safety: `data` has room for `src.len()` elements, aligned, in a fresh item.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), data, src.len()) };
        Ok(BPtr::from_parts(heap, off))
    }

    /// A new item of `len` bytes, zeroed, then written by `fill`.
    pub fn alloc_bytes_with(
        &mut self,
        len: usize,
        fill: impl FnOnce(&mut [u8]),
    ) -> Result<BPtr<Bytes>, HeapError> {
        let (heap, off, data) = self.alloc_slice_raw::<u8>(len, true)?;
        // Safety: `data` has room for `len` bytes in a fresh item that only we reach.
        let bytes = unsafe {
            data.write_bytes(0, len);
            std::slice::from_raw_parts_mut(data, len)
        };
        fill(bytes);
        Ok(BPtr::from_parts(heap, off))
    }

    /// A new item with room for `len` elements that are never written (the seed's
    /// "uninitialized memory" payload): its memory is reserved and travels, but
    /// [`BPtr::as_slice`] refuses to read it. The copy transport still copies its bytes.
    pub fn alloc_untouched<T: ShmSafe + Copy>(
        &mut self,
        len: usize,
    ) -> Result<BPtr<Slice<T>>, HeapError> {
        let (heap, off, _) = self.alloc_slice_raw::<T>(len, false)?;
        Ok(BPtr::from_parts(heap, off))
    }
}

impl<T: ShmSafe + Copy> BPtr<Slice<T>> {
    /// The number of elements.
    pub fn len(&self) -> usize {
        self.used_flags().0 as usize / size_of::<T>()
    }

    /// Whether it holds no element.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the elements were written (false for [`Heap::alloc_untouched`]).
    pub fn is_touched(&self) -> bool {
        self.used_flags().1 & TOUCHED != 0
    }

    /// The elements. Panics for an untouched item ([`Heap::alloc_untouched`]), whose bytes
    /// were never written.
    pub fn as_slice(&self) -> &[T] {
        assert!(
            self.is_touched(),
            "an untouched shared-heap payload has no readable contents"
        );
        // Safety: the item holds `len` initialized elements (written by `alloc_slice` or
        // `alloc_bytes_with`, or byte-copied from such an item, flags included), aligned,
        // immutable while shared; the pointer comes from the item's base, whose provenance
        // covers them.
        unsafe { std::slice::from_raw_parts(self.data_ptr().cast::<T>(), self.len()) }
    }
}
