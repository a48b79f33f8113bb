//! The per-process table of heap bases (the seed's `HeapCluster`, seed 000 §3.3.3): heap number
//! -> where that heap's segment is mapped *in this process*. A [`BPtr`](super::BPtr) holds only
//! (heap number, offset), so its dereference needs this table; it is process-wide because a
//! `BPtr` dereferences with no context, exactly like the seed's global array.
//!
//! A heap is entered by its owner when it creates the segment (`register`) and by any other
//! process either explicitly ([`attach`]) or lazily on first dereference, through the
//! directory ([`set_directory`]): a table in its own shared segment where each owner announces
//! (pid, descriptor) of each heap segment it creates, so growth needs no message to anyone.
//! Segments entered here stay mapped until the process exits (a `BPtr` may be dereferenced at
//! any time), which also makes the base pointers immutable once set.

use std::io;
use std::sync::atomic::{AtomicPtr, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use super::Segment;

/// Heaps per owning process (its first segment and the ones it grows).
pub const SEGMENTS_PER_OWNER: u32 = 16;
/// Owning processes (heap numbers are `owner * SEGMENTS_PER_OWNER + k`).
pub const MAX_OWNERS: u32 = 256;
/// Heap numbers.
pub const MAX_HEAPS: usize = (SEGMENTS_PER_OWNER * MAX_OWNERS) as usize;

#[allow(clippy::declare_interior_mutable_const)]
const NULL: AtomicPtr<u8> = AtomicPtr::new(std::ptr::null_mut());
static BASES: [AtomicPtr<u8>; MAX_HEAPS] = [NULL; MAX_HEAPS];
static SEGMENTS: Mutex<Vec<(u32, Arc<Segment>)>> = Mutex::new(Vec::new());
static DIRECTORY: OnceLock<Directory> = OnceLock::new();

/// Where heap segments are announced: one entry per heap number, in shared memory.
#[derive(Debug)]
pub struct Directory {
    seg: Arc<Segment>,
}

/// One heap's announcement: `ready` is set last.
#[repr(C)]
struct Entry {
    pid: AtomicU32,
    fd: AtomicU32,
    ready: AtomicU32,
}

impl Directory {
    /// A new, empty directory segment (pass its descriptor to every process).
    pub fn create() -> io::Result<Directory> {
        let seg = Segment::create(MAX_HEAPS * std::mem::size_of::<Entry>())?;
        Ok(Directory { seg: Arc::new(seg) })
    }

    /// A directory segment created by another process.
    ///
    /// # Safety
    /// `seg` must be a segment made by [`Directory::create`]: heaps are mapped from what it
    /// announces and dereferenced without further checks.
    pub unsafe fn attach(seg: Segment) -> io::Result<Directory> {
        if seg.len() < MAX_HEAPS * std::mem::size_of::<Entry>() {
            return Err(io::Error::other("not a heap directory (too small)"));
        }
        Ok(Directory { seg: Arc::new(seg) })
    }

    /// The segment (to hand its descriptor to a child).
    pub fn segment(&self) -> &Segment {
        &self.seg
    }

    fn entry(&self, heap: u32) -> &Entry {
        assert!(
            (heap as usize) < MAX_HEAPS,
            "heap number {heap} out of range"
        );
        // Safety: the segment holds MAX_HEAPS entries of three u32 atomics (checked in
        // `attach`, made so in `create`); zero bytes are a valid (not ready) entry; it stays
        // mapped while `self` lives.
        unsafe { &*self.seg.base().cast::<Entry>().as_ptr().add(heap as usize) }
    }

    fn announce(&self, heap: u32, pid: u32, fd: i32) {
        let e = self.entry(heap);
        e.pid.store(pid, Ordering::SeqCst);
        e.fd.store(fd as u32, Ordering::SeqCst);
        e.ready.store(1, Ordering::SeqCst);
    }

    fn lookup(&self, heap: u32) -> Option<(u32, i32)> {
        let e = self.entry(heap);
        (e.ready.load(Ordering::SeqCst) == 1).then(|| {
            (
                e.pid.load(Ordering::SeqCst),
                e.fd.load(Ordering::SeqCst) as i32,
            )
        })
    }
}

/// Makes `dir` this process's directory (once per process; a later call hands `dir` back).
pub fn set_directory(dir: Directory) -> Result<&'static Directory, Directory> {
    DIRECTORY.set(dir)?;
    Ok(DIRECTORY.get().expect("just set"))
}

/// Enters a segment this process created for heap `heap` and announces it in the directory
/// (if there is one). Fails if the heap number is taken in this process. `seg` must be a heap
/// segment made for `heap`.
pub(crate) fn register(heap: u32, seg: Segment) -> io::Result<Arc<Segment>> {
    // Safety: the caller (`Heap::grow`) made `seg` for heap `heap`.
    let seg = unsafe { attach(heap, seg) }?;
    if let Some(dir) = DIRECTORY.get() {
        use std::os::fd::AsRawFd;
        dir.announce(heap, std::process::id(), seg.fd().as_raw_fd());
    }
    Ok(seg)
}

/// Enters another process's heap segment under heap number `heap`.
///
/// # Safety
/// `seg` must be the segment its owner created for heap `heap` (a `BPtr` into `heap` is
/// dereferenced in it without further checks).
pub unsafe fn attach(heap: u32, seg: Segment) -> io::Result<Arc<Segment>> {
    if heap as usize >= MAX_HEAPS {
        return Err(io::Error::other(format!("heap number {heap} out of range")));
    }
    // A handler can reach here (its first `BPtr` into another process's heap): no tick may
    // switch it off the CPU while it holds the lock, or the next context on its thread to
    // need a heap waits for it forever.
    let _p = crate::preempt::interrupt::Platform::enter();
    let mut segs = SEGMENTS.lock().unwrap_or_else(|e| e.into_inner());
    if !BASES[heap as usize].load(Ordering::SeqCst).is_null() {
        return Err(io::Error::other(format!(
            "heap {heap} is already mapped in this process"
        )));
    }
    let seg = Arc::new(seg);
    segs.push((heap, seg.clone()));
    // Ordering: Release pairs with the Acquire load in `base`: a thread that sees the pointer
    // sees the mapping's entry above (the memory itself is the kernel's, valid at once).
    BASES[heap as usize].store(seg.base().as_ptr(), Ordering::Release);
    Ok(seg)
}

/// Whether heap `heap` is mapped in this process.
pub(crate) fn is_mapped(heap: u32) -> bool {
    (heap as usize) < MAX_HEAPS && !BASES[heap as usize].load(Ordering::SeqCst).is_null()
}

/// Forgets heap `heap` in this process (its owner released it: every item came back, so no
/// `BPtr` into it exists); the number may be registered again.
pub(crate) fn unregister(heap: u32) {
    let _p = crate::preempt::interrupt::Platform::enter();
    let mut segs = SEGMENTS.lock().unwrap_or_else(|e| e.into_inner());
    BASES[heap as usize].store(std::ptr::null_mut(), Ordering::SeqCst);
    segs.retain(|(h, _)| *h != heap);
}

/// The base of heap `heap` in this process, mapping it through the directory on first use.
/// Panics if the heap is unknown here (a `BPtr` from a process that never announced it).
#[inline]
pub(crate) fn base(heap: u32) -> *mut u8 {
    // Ordering: Acquire pairs with the Release store in `attach`.
    let p = BASES[heap as usize].load(Ordering::Acquire);
    if !p.is_null() {
        return p;
    }
    base_slow(heap)
}

#[cold]
fn base_slow(heap: u32) -> *mut u8 {
    // Platform code called from a handler: the directory's lock, the mapping, `attach`.
    let _p = crate::preempt::interrupt::Platform::enter();
    let found = DIRECTORY.get().and_then(|d| d.lookup(heap));
    let Some((pid, fd)) = found else {
        panic!(
            "BPtr into heap {heap}, which this process has not mapped and no directory announces"
        );
    };
    let seg = Segment::open_remote(pid, fd)
        .unwrap_or_else(|e| panic!("cannot map heap {heap} of process {pid}: {e}"));
    // Safety: the directory names the segment the owner registered for `heap`.
    match unsafe { attach(heap, seg) } {
        Ok(s) => s.base().as_ptr(),
        // Another thread mapped it first: use theirs (ours is dropped, unmapped).
        Err(_) => BASES[heap as usize].load(Ordering::Acquire),
    }
}
