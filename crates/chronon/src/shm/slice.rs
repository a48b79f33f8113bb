//! Items of a runtime size: [`Slice<T>`] (and [`Bytes`] = `Slice<u8>`), a length header
//! followed by the elements in the same shared-heap item, so a `BPtr<Bytes>` carries a
//! variable-size payload (SimpleSim's message, a multicast body, a list of requests) in 8 bytes.

use std::marker::PhantomData;
use std::mem::{align_of, size_of};

use super::{BPtr, Heap, HeapError, ShmSafe};

/// The header of a shared-heap item that holds `len` values of `T` right after it. Reach the
/// values through [`BPtr::as_slice`]; the header alone is what `Deref` gives.
#[repr(C, align(8))]
#[derive(Debug)]
pub struct Slice<T> {
    len: u32,
    /// 0: the elements were never written (an untouched payload, which must not be read).
    touched: u32,
    _t: PhantomData<T>,
}

/// A shared-heap byte array of a runtime length.
pub type Bytes = Slice<u8>;

// Safety: the header is plain data and the elements are `ShmSafe + Copy` values (`Copy`
// excludes `BPtr`s, so a byte copy of the item is a valid independent value).
unsafe impl<T: ShmSafe + Copy> ShmSafe for Slice<T> {}

const HEADER: usize = size_of::<Slice<u8>>();
const _: () = assert!(HEADER == 8);

impl<T> Slice<T> {
    /// The number of elements.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// Whether it holds no element.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether the elements were written (false for [`Heap::alloc_untouched`]).
    pub fn is_touched(&self) -> bool {
        self.touched != 0
    }
}

fn layout<T>(len: usize) -> Result<usize, HeapError> {
    assert!(
        align_of::<T>() <= 8,
        "Slice elements may be at most 8-aligned"
    );
    len.checked_mul(size_of::<T>())
        .and_then(|b| b.checked_add(HEADER))
        .filter(|&b| b <= u32::MAX as usize)
        .ok_or(HeapError::TooLarge {
            size: usize::MAX,
            align: 8,
            largest: 0,
        })
}

impl Heap {
    fn alloc_slice_raw<T: ShmSafe + Copy>(
        &mut self,
        len: usize,
        touched: bool,
    ) -> Result<(u32, u32, *mut T), HeapError> {
        let size = layout::<T>(len)?;
        let (heap, off, data) = self.alloc_raw(size, 8)?;
        // Safety: `data` is a fresh item of `size` bytes, ITEM_ALIGN aligned, ours alone.
        unsafe {
            data.cast::<Slice<T>>().write(Slice {
                len: len as u32,
                touched: u32::from(touched),
                _t: PhantomData,
            });
            Ok((heap, off, data.add(HEADER).cast::<T>()))
        }
    }

    /// A new item holding a copy of `src`.
    pub fn alloc_slice<T: ShmSafe + Copy>(
        &mut self,
        src: &[T],
    ) -> Result<BPtr<Slice<T>>, HeapError> {
        let (heap, off, data) = self.alloc_slice_raw::<T>(src.len(), true)?;
        // Safety: `data` has room for `src.len()` elements (`layout`), 8-aligned, fresh.
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
    /// [`BPtr::as_slice`] refuses to read it. The copy transport still copies its `len`
    /// elements' bytes.
    pub fn alloc_untouched<T: ShmSafe + Copy>(
        &mut self,
        len: usize,
    ) -> Result<BPtr<Slice<T>>, HeapError> {
        let (heap, off, _) = self.alloc_slice_raw::<T>(len, false)?;
        Ok(BPtr::from_parts(heap, off))
    }
}

impl<T: ShmSafe + Copy> BPtr<Slice<T>> {
    /// The elements. Panics for an untouched item ([`Heap::alloc_untouched`]), whose bytes
    /// were never written.
    pub fn as_slice(&self) -> &[T] {
        let hdr: &Slice<T> = self;
        assert!(
            hdr.is_touched(),
            "an untouched shared-heap payload has no readable contents"
        );
        // Safety: the item holds `len` initialized elements right after the header (written
        // by `alloc_slice`/`alloc_bytes_with`, or byte-copied from such an item), immutable
        // while shared; the pointer comes from the item's base, whose provenance covers them.
        unsafe {
            std::slice::from_raw_parts(self.data_ptr().add(HEADER).cast::<T>(), hdr.len())
        }
    }
}
